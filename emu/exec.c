/* exec.c - execution (emu_run): the CTA loop, each thread run over its frame
 * until a collective, the collectives themselves (bar.sync, shuffles, votes,
 * ldmatrix, mma.sync), cp.async groups, printf, and the checked memory
 * regions with the shared-memory race check. */
#include "emu/emu_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>

#include "emu/mma.h"
#include "support/support.h"

enum { EMU_CLOCK_EVERY = 4096, /* branches between readings of the clock, for the time limit */
       EMU_BUFFER_NAME_MAX = 160, /* "buffer B (parameter 'NAME')" */
       EMU_WHERE_MAX = 320 /* "FILE:LINE:COL: " */ };

static bool vrfail(run *r, const thread *t, const emu_inst *in, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));
static bool vrfail(run *r, const thread *t, const emu_inst *in, const char *fmt, va_list ap) {
    if (r->result != EMU_OK) return false;
    r->result = EMU_ERROR;
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    char *text = in && in->src ? LLVMPrintValueToString(in->src) : NULL;
    char who[64] = "", where[EMU_WHERE_MAX] = "";
    if (t) snprintf(who, sizeof who, ", thread %u", t->tid);
    /* the .tile position codegen attached (tilec_options.line_info), as the CPU device says it */
    unsigned line = in && in->src && LLVMIsAInstruction(in->src) ? LLVMGetDebugLocLine(in->src) : 0, len = 0;
    const char *file = line ? LLVMGetDebugLocFilename(in->src, &len) : NULL;
    if (file) snprintf(where, sizeof where, "%.*s:%u:%u: ", (int)len, file, line, LLVMGetDebugLocColumn(in->src));
    snprintf(r->err, r->err_size, "emulator: kernel '%s', CTA (%u, %u, %u)%s: %s%s%s%s", r->f->name, r->ctaid[0],
             r->ctaid[1], r->ctaid[2], who, where, msg, text ? "\n  at: " : "", text ? text + strspn(text, " ") : "");
    if (text) LLVMDisposeMessage(text);
    return false;
}

static bool rfail(run *r, const thread *t, const emu_inst *in, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool rfail(run *r, const thread *t, const emu_inst *in, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vrfail(r, t, in, fmt, ap);
    va_end(ap);
    return false;
}

bool emu_fail(run *r, const thread *t, const emu_inst *in, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vrfail(r, t, in, fmt, ap);
    va_end(ap);
    return false;
}

/* The host address of `size` bytes at tagged pointer p, checked. */
static bool race_check(run *r, thread *t, const emu_inst *in, uint64_t off, uint64_t size, access acc);

/* "buffer B" named by the kernel parameter that points into it, as the
 * runtime's errors name them: "buffer 2 (parameter 'out')". */
static const char *buffer_name(const run *r, uint32_t b, char out[EMU_BUFFER_NAME_MAX]) {
    for (uint32_t i = 0; i < r->l->nargs && i < r->f->nparams; i++)
        if (r->l->args[i].is_ptr && r->l->args[i].buffer == b && r->f->param_name[i]) {
            snprintf(out, EMU_BUFFER_NAME_MAX, "buffer %u (parameter '%s')", b, r->f->param_name[i]);
            return out;
        }
    snprintf(out, EMU_BUFFER_NAME_MAX, "buffer %u", b);
    return out;
}

static uint8_t *mem(run *r, thread *t, const emu_inst *in, uint64_t p, uint64_t size, uint64_t align, access acc) {
    bool write = acc != ACC_READ;
    uint32_t region = (uint32_t)(p >> REGION_SHIFT);
    uint64_t off = p & OFFSET_MASK, lo = 0, hi;
    uint8_t *base;
    const char *what;
    switch (region) {
    case REGION_SHARED: base = r->shared, hi = r->shared_size, what = "shared memory"; break;
    case REGION_LOCAL: base = t->local, hi = r->f->local_size, what = "local memory"; break;
    case REGION_CONST:
        if (write) return rfail(r, t, in, "a store to constant memory (%#llx)", (unsigned long long)p), NULL;
        base = r->m->consts, hi = r->m->consts_size, what = "constant memory";
        break;
    default: {
        if (region == 0 || region > r->l->nbuffers) {
            rfail(r, t, in, "an access to unmapped address %#llx%s", (unsigned long long)p,
                  p < 4096 ? " (a null pointer?)" : "");
            return NULL;
        }
        const emu_buffer *b = &r->l->buffers[region - 1];
        char name[EMU_BUFFER_NAME_MAX];
        if (!b->data) return rfail(r, t, in, "an access to freed %s", buffer_name(r, region - 1, name)), NULL;
        lo = (uintptr_t)b->data % BUFFER_BIAS_MOD;
        hi = lo + b->size;
        if (off < lo || off - lo > b->size || size > b->size - (off - lo)) {
            rfail(r, t, in, "an access of %llu bytes at byte %lld of %s, which has %zu: out of bounds",
                  (unsigned long long)size, (long long)(off - lo), buffer_name(r, region - 1, name), b->size);
            return NULL;
        }
        if (off % align) {
            rfail(r, t, in, "a misaligned access (%llu-byte alignment) at byte %lld of %s", (unsigned long long)align,
                  (long long)(off - lo), buffer_name(r, region - 1, name));
            return NULL;
        }
        return (uint8_t *)b->data + (off - lo);
    }
    }
    if (off > hi || size > hi - off) {
        rfail(r, t, in, "an access of %llu bytes at byte %llu of %s, which has %llu: out of bounds",
              (unsigned long long)size, (unsigned long long)off, what, (unsigned long long)hi);
        return NULL;
    }
    if (off % align) {
        rfail(r, t, in, "a misaligned access (%llu-byte alignment) at byte %llu of %s", (unsigned long long)align,
              (unsigned long long)off, what);
        return NULL;
    }
    if (region == REGION_SHARED && !race_check(r, t, in, off, size, acc)) return NULL;
    return base + off;
}

uint8_t *emu_mem(run *r, thread *t, const emu_inst *in, uint64_t p, uint64_t size, uint64_t align, access acc) {
    return mem(r, t, in, p, size, align, acc);
}

/* Shared memory starts each CTA undefined: reading a byte no thread of the
 * CTA wrote is an error. A byte one thread wrote may not be read or
 * written by another whose access is not ordered after the write (unless
 * it writes the same value: redundant stores of one value are harmless on
 * the GPU), nor written by one not ordered after another's read. Atomics
 * take part in no race. A race is a missing barrier, which sequential
 * execution would otherwise hide.
 *
 * Happens-before. bar.sync orders memory accesses only among the threads
 * taking part in it (PTX ISA, "bar, barrier": the accesses a participant
 * requested before the barrier are performed relative to all
 * participants). Participants are whole warps (the arrivals are counted
 * per warp), so the order is kept per warp, with vector clocks over the
 * <= 32 warps: every barrier completion (and the CTA's start) takes a new
 * stamp from r->epoch; warp w's accesses carry the stamp of its current
 * interval, vc[w][w]; vc[w][u] is the latest interval of warp u that w is
 * ordered after. At a completion, the participants' vectors are joined
 * (max) and each participant u's entry set to the new stamp, in all of
 * them: each knows every other's accesses before the barrier, and what it
 * knew. An access stamped s by warp u is ordered before warp w's next
 * iff vc[w][u] > s (for u == w: w passed a barrier since; within one warp
 * and one interval, different threads race, as between any threads with
 * no barrier between them). A barrier of all warps sets every entry to
 * its stamp: the old one-epoch rule (r->full, its stamp, is the fast
 * path: anything stamped before it is ordered before everything after).
 *
 * A byte's writes (and reads) are one record: a stamp, the mask of the
 * warps that made them, and the thread (RACE_MANY: several). An access
 * ordered after the whole record replaces it (a later access ordered after
 * this one is ordered after the record too); one that is not joins it:
 * the mask takes its warp, the stamp the larger of the two. A record
 * whose warps made their accesses in different intervals is then checked
 * against the latest of them for every warp: stricter than the truth,
 * never missing a race (only accesses of warps in different barrier
 * groups, unordered among themselves, make such a record). */
static bool race_check(run *r, thread *t, const emu_inst *in, uint64_t off, uint64_t size, access acc) {
    if (acc != ACC_READ && r->wgmma && !emu_wgmma_check_write(r, t, in, off, size)) return false;
    if (acc == ACC_ATOMIC || !t) return true;
    if (r->async && !emu_async_access(r, t, in, off, size, acc)) return false;
    uint16_t me = (uint16_t)t->tid;
    uint32_t now = emu_stamp(r, t), bit = emu_warp_bit(t);
    for (uint64_t b = off; b < off + size; b++) {
        shadow *s = &r->sh[b];
        bool thread_writer = s->wt < EMU_MAX_THREADS || s->wt == RACE_MANY;
        if (acc == ACC_WRITE) {
            if (s->wt == CP_IN_FLIGHT && s->wep >= r->cta_epoch)
                return rfail(r, t, in, "a data race in shared memory: a write to byte %llu, which a cp.async is still "
                             "writing", (unsigned long long)b);
            if (s->rt != me && !emu_ordered(r, t, s->rep, s->rmask))
                return rfail(r, t, in, "a data race in shared memory: a write to byte %llu, which %s read since the last barrier",
                             (unsigned long long)b, s->rt == RACE_MANY ? "other threads" : "another thread");
            if (thread_writer && s->wt != me && s->wep >= r->cta_epoch && !emu_ordered(r, t, s->wep, s->wmask)) {
                s->wt = RACE_MANY; /* checked against the value by the store */
                s->wmask |= bit;
                if (now > s->wep) s->wep = now;
            } else {
                s->wt = me, s->wmask = bit, s->wep = now;
            }
        } else {
            if (s->wep == 0 || s->wep < r->cta_epoch)
                return rfail(r, t, in,
                             "a read of byte %llu of shared memory, which no thread of this CTA wrote (a cp.async "
                             "writes when a wait covers it)",
                             (unsigned long long)b);
            if (s->wt == CP_IN_FLIGHT)
                return rfail(r, t, in,
                             "a read of byte %llu of shared memory, which a cp.async is still writing (no "
                             "cp.async.wait_group of its thread covers it yet)",
                             (unsigned long long)b);
            /* bulk copies (ASYNC_WRITER, mask 0): ordered by their mbarrier */
            if (thread_writer && s->wt != me && !emu_ordered(r, t, s->wep, s->wmask))
                return rfail(r, t, in, "a data race in shared memory: a read of byte %llu, which %s wrote since the last barrier",
                             (unsigned long long)b, s->wt == RACE_MANY ? "several threads" : "another thread");
            if (s->rt != me && s->rep >= r->cta_epoch && !emu_ordered(r, t, s->rep, s->rmask)) {
                s->rt = RACE_MANY;
                s->rmask |= bit;
                if (now > s->rep) s->rep = now;
            } else {
                s->rt = me, s->rmask = bit, s->rep = now;
            }
        }
    }
    return true;
}

static uint64_t load_word(const uint8_t *p, ek e) {
    uint64_t w = 0;
    memcpy(&w, p, (size_t)ek_bytes[e]);
    return e == EK_I1 ? (w & 1) : w;
}
static void store_word(uint8_t *p, uint64_t w, ek e) { memcpy(p, &w, (size_t)ek_bytes[e]); }

/* A store to shared memory over bytes another thread wrote since the last
 * barrier (race_check marked them) is a race unless it writes what is
 * there already. */
static bool same_value_store(run *r, thread *t, const emu_inst *in, uint64_t p, const uint8_t *at, const uint64_t *vals,
                             ek e, uint32_t lanes) {
    if (p >> REGION_SHIFT != REGION_SHARED) return true;
    uint64_t off = p & OFFSET_MASK;
    for (uint32_t l = 0; l < lanes; l++)
        for (int k = 0; k < ek_bytes[e]; k++) {
            uint64_t b = l * (uint64_t)ek_bytes[e] + (uint64_t)k;
            const shadow *s = &r->sh[off + b];
            uint8_t v = (uint8_t)(vals[l] >> (8 * k));
            if (s->wt == RACE_MANY && !emu_ordered(r, t, s->wep, s->wmask) && at[b] != v)
                return rfail(r, t, in, "a data race in shared memory: threads write different values to byte %llu "
                                       "between barriers",
                             (unsigned long long)(off + b));
        }
    return true;
}

/* ---- printf ---- */

static void emit_text(run *r, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (r->linelen < sizeof r->line - 1) r->line[r->linelen++] = s[i];
        if (s[i] != '\n') continue;
        if (r->l->print) {
            r->l->print(r->l->print_user, r->line, r->linelen);
        } else {
            fwrite(r->line, 1, r->linelen, stdout);
            fflush(stdout);
        }
        r->linelen = 0;
    }
}

/* A NUL-terminated string at tagged pointer p (at most max bytes). */
static bool read_cstr(run *r, thread *t, const emu_inst *in, uint64_t p, char *out, size_t max) {
    for (size_t i = 0; i + 1 < max; i++) {
        uint8_t *c = mem(r, t, in, p + i, 1, 1, ACC_READ);
        if (!c) return false;
        out[i] = (char)*c;
        if (!*c) return true;
    }
    out[max - 1] = 0;
    return true;
}

static bool do_vprintf(run *r, thread *t, const emu_inst *in) {
    char fmt[MAX_PRINTF_TEXT], out[MAX_PRINTF_TEXT];
    if (!read_cstr(r, t, in, t->r[in->a], fmt, sizeof fmt)) return false;
    uint64_t args = t->r[in->b], off = 0;
    size_t n = 0;
    for (const char *p = fmt; *p && n < sizeof out - 1;) {
        if (*p != '%') {
            out[n++] = *p++;
            continue;
        }
        if (p[1] == '%') {
            out[n++] = '%', p += 2;
            continue;
        }
        const char *start = p++;
        p += strspn(p, "-+ #0");
        p += strspn(p, "0123456789");
        if (*p == '.') p++, p += strspn(p, "0123456789");
        int longs = 0;
        while (*p == 'l' || *p == 'h' || *p == 'z' || *p == 'j' || *p == 't' || *p == 'L')
            longs += *p == 'l' || *p == 'z' || *p == 'j' || *p == 't', p++;
        char conv = *p;
        if (!conv || !strchr("diouxXcfFeEgGaAsp", conv)) return rfail(r, t, in, "printf format '%s' is not supported", fmt);
        p++;
        char spec[64];
        size_t sl = (size_t)(p - start);
        if (sl >= sizeof spec - 4) return rfail(r, t, in, "printf conversion too long in '%s'", fmt);
        bool is_float = strchr("fFeEgGaA", conv) != NULL, is_ptr = conv == 's' || conv == 'p';
        uint64_t size = is_float || is_ptr || longs ? 8 : 4;
        off = (off + size - 1) / size * size;
        uint8_t *a = mem(r, t, in, args + off, size, size, ACC_READ);
        if (!a) return false;
        off += size;
        uint64_t w = 0;
        memcpy(&w, a, size);
        /* the spec without its length modifiers, then ours */
        size_t k = 0;
        for (const char *q = start; q < p - 1; q++)
            if (!strchr("lhzjtL", *q)) spec[k++] = *q;
        int wrote;
        size_t room = sizeof out - n;
        if (is_float) {
            spec[k++] = conv, spec[k] = 0;
            wrote = snprintf(out + n, room, spec, f64_of(w));
        } else if (conv == 's') {
            char s[MAX_PRINTF_TEXT];
            if (!read_cstr(r, t, in, w, s, sizeof s)) return false;
            spec[k++] = 's', spec[k] = 0;
            wrote = snprintf(out + n, room, spec, s);
        } else if (conv == 'p') {
            spec[k++] = 'p', spec[k] = 0;
            wrote = snprintf(out + n, room, "0x%llx", (unsigned long long)w);
        } else {
            spec[k++] = 'l', spec[k++] = 'l', spec[k++] = conv, spec[k] = 0;
            bool sgn = conv == 'd' || conv == 'i';
            long long v = size == 4 ? (sgn ? (long long)(int32_t)w : (long long)(uint32_t)w) : (long long)w;
            if (conv == 'c') {
                spec[k - 3] = 'c', spec[k - 2] = 0;
                wrote = snprintf(out + n, room, spec, (int)v);
            } else {
                wrote = snprintf(out + n, room, spec, v);
            }
        }
        if (wrote > 0) n += (size_t)wrote < room ? (size_t)wrote : room - 1;
    }
    out[n] = 0;
    snprintf(r->last, sizeof r->last, "%s", out);
    r->last_tid = t->tid;
    emit_text(r, out, n);
    t->r[in->dst] = mask_bits((uint64_t)n, 32);
    return true;
}

static bool do_assertfail(run *r, thread *t, const emu_inst *in) {
    r->result = EMU_ASSERT;
    if (r->last_tid == (int64_t)t->tid && r->last[0]) {
        snprintf(r->err, r->err_size, "%s", r->last);
        return false;
    }
    char msg[512] = "?", file[512] = "?", fn[512] = "?";
    emu_result keep = r->result;
    r->result = EMU_OK; /* reading the strings may fail on its own */
    bool ok = read_cstr(r, t, in, t->r[in->a], msg, sizeof msg) && read_cstr(r, t, in, t->r[in->b], file, sizeof file) &&
              read_cstr(r, t, in, t->r[in->imm], fn, sizeof fn);
    if (!ok) return false;
    r->result = keep;
    snprintf(r->err, r->err_size, "%s:%u: %s: block [%u,%u,%u], thread [%u,0,0] Assertion `%s` failed.\n", file,
             (unsigned)t->r[in->c], fn, r->ctaid[0], r->ctaid[1], r->ctaid[2], t->tid, msg);
    return false;
}

/* ---- cp.async ---- */

/* Whether byte b of shared memory holds a value another thread wrote in
 * this barrier interval (a copy that landed, a store), which a copy of
 * this thread may only write again with the same value. */
static bool written_by_other(const run *r, const thread *t, uint64_t b) {
    const shadow *s = &r->sh[b];
    return (s->wt < EMU_MAX_THREADS || s->wt == RACE_MANY) && s->wt != (uint16_t)t->tid && s->wep >= r->cta_epoch &&
           !emu_ordered(r, t, s->wep, s->wmask);
}

static bool cp_complete(run *r, thread *t, const emu_inst *in, uint32_t before_group) {
    uint32_t keep = 0;
    for (uint32_t i = 0; i < t->ncp; i++) {
        cp_pending *c = &t->cp[i];
        if (c->group < before_group) {
            uint8_t *d = mem(r, t, in, c->dst, c->size, c->size, ACC_ATOMIC); /* bounds; the race check below */
            if (!d) return false;
            uint64_t off = c->dst & OFFSET_MASK;
            for (uint32_t b = 0; b < c->size; b++) /* landing: no longer in flight (a write of no one yet) */
                if (r->sh[off + b].wt == CP_IN_FLIGHT) r->sh[off + b].wep = 0, r->sh[off + b].wt = 0, r->sh[off + b].wmask = 0;
            /* two copies (or a copy and a store) of one interval over the
             * same bytes: harmless with one value (layouts that replicate
             * elements copy them from several threads), a race otherwise */
            for (uint32_t b = 0; b < c->size; b++)
                if (written_by_other(r, t, off + b) && d[b] != c->data[b])
                    return rfail(r, t, in,
                                 "a data race in shared memory: this thread's cp.async lands a value in byte %llu "
                                 "other than the one %s wrote there since the last barrier",
                                 (unsigned long long)(off + b),
                                 r->sh[off + b].wt == RACE_MANY ? "other threads" : "another thread");
            if (!race_check(r, t, in, off, c->size, ACC_WRITE)) return false;
            memcpy(d, c->data, c->size);
        } else {
            t->cp[keep++] = *c;
        }
    }
    t->ncp = keep;
    return true;
}

static bool do_cp_async(run *r, thread *t, const emu_inst *in) {
    uint64_t dst = t->r[in->a], src = t->r[in->b];
    uint32_t size = (uint32_t)in->imm, src_size = in->c == UINT32_MAX ? size : (uint32_t)t->r[in->c];
    if (dst >> REGION_SHIFT != REGION_SHARED) return rfail(r, t, in, "cp.async to a destination outside shared memory");
    if (src_size > size) return rfail(r, t, in, "cp.async with src-size %u over its %u bytes", src_size, size);
    if (t->ncp == CP_ASYNC_MAX_PENDING) return rfail(r, t, in, "more than %d cp.async copies pending", CP_ASYNC_MAX_PENDING);
    uint8_t *d = mem(r, t, in, dst, size, size, ACC_ATOMIC); /* its write is checked when the copy lands */
    const uint8_t *s = src_size ? mem(r, t, in, src, src_size, size, ACC_READ) : NULL;
    if (!d || (src_size && !s)) return false;
    /* a refill of bytes another thread read since the last barrier: the
     * copy may land before that read on the GPU (the barrier that should
     * separate them is missing, or comes after the copy) */
    uint64_t off = dst & OFFSET_MASK;
    for (uint32_t b = 0; b < size; b++) {
        const shadow *sh = &r->sh[off + b];
        if (sh->rt != (uint16_t)t->tid && !emu_ordered(r, t, sh->rep, sh->rmask))
            return rfail(r, t, in,
                         "a data race in shared memory: a cp.async to byte %llu, which %s read since the last barrier "
                         "(a refill needs a barrier between the reads and the copy)",
                         (unsigned long long)(off + b), sh->rt == RACE_MANY ? "other threads" : "another thread");
    }
    if (r->acct) emu_smem_record(r, t, t->pc, dst & OFFSET_MASK); /* the shared write, counted at issue */
    t->cp = emu_grow(t->cp, &t->capcp, t->ncp + 1, sizeof *t->cp);
    cp_pending *c = &t->cp[t->ncp++];
    c->dst = dst, c->size = size, c->group = t->committed;
    memset(c->data, 0, sizeof c->data); /* past src-size: zeros */
    if (src_size) memcpy(c->data, s, src_size);
    /* until a wait covers it, the destination reads as poison; but bytes
     * another thread's write of this interval holds keep it (a second copy
     * of the same value must not undo the first) */
    for (uint32_t b = 0; b < size; b++)
        if (!written_by_other(r, t, off + b)) {
            d[b] = POISON_BYTE;
            /* reads and writes refused till it lands */
            r->sh[off + b].wt = CP_IN_FLIGHT, r->sh[off + b].wep = r->epoch, r->sh[off + b].wmask = 0;
        }
    return true;
}

/* ---- barriers (bar.sync / barrier.sync) ----
 *
 * The rules, from the PTX ISA ("Parallel Synchronization and Communication
 * Instructions: bar, barrier"), as the emulator applies them:
 *  - a CTA has sixteen barriers, ids 0..15 (operand a); another id is an error;
 *  - operand b is the number of threads taking part; it must be a multiple
 *    of the warp size (here also nonzero, and at most the CTA's warps x 32).
 *    Without b (barrier0, barrier.n, barrier.sync a) every thread of the
 *    CTA takes part;
 *  - barriers work per warp: a warp's arrival is marked when its
 *    non-exited threads have all executed the barrier, and it counts as
 *    the warp size; bar.sync is the .aligned form, so the lanes of a warp
 *    execute the same barrier instruction (lanes at different barriers, or
 *    with different operands, are an error; the emulator holds
 *    barrier.sync, the non-aligned form, to the same rule);
 *  - bar.sync waits until the phase has its b arrivals (without b: the
 *    whole CTA), then the phase completes, its waiters go on, and the
 *    barrier is ready for its next phase at once; warps that arrive after
 *    the count is reached start the next phase;
 *  - the threads of one phase must all give the same count (an error
 *    otherwise);
 *  - without b, the emulator keeps its rules for __syncthreads: every
 *    thread of the CTA at the same instruction, and a thread that exited
 *    while others wait is an error (a form codegen uses where all threads
 *    reach it);
 *  - a barrier orders memory accesses among its participants only (see
 *    "Happens-before" above race_check);
 *  - when no thread can go on and threads wait at barriers none of which
 *    can complete, the kernel would hang: an error naming each barrier
 *    and how many threads wait at it.
 * bar.arrive and bar.red are not emulated (LLVM 19 has no intrinsic for
 * the first; an inline asm of either is refused when loading).
 */

/* Thread t's operands of barrier instruction `in` (an error if out of the
 * ISA's range): the id, and the threads it waits for (the CTA's warps x 32
 * without b). */
static bool barrier_operands(run *r, const thread *t, const emu_inst *in, uint32_t *id_out, uint32_t *count_out) {
    uint32_t id = in->sub & BAR_HAS_ID ? (uint32_t)t->r[in->a] : 0, full = r->nwarps * EMU_WARP, count = full;
    if (id >= BAR_IDS)
        return rfail(r, t, in, "bar.sync with barrier id %u: a CTA has barriers 0..%d", id, BAR_IDS - 1);
    if (in->sub & BAR_HAS_COUNT) {
        count = (uint32_t)t->r[in->b];
        if (count == 0 || count % EMU_WARP)
            return rfail(r, t, in, "bar.sync %u, %u: the thread count must be a nonzero multiple of the warp size (%d)", id,
                         count, EMU_WARP);
        if (count > full)
            return rfail(r, t, in, "bar.sync %u, %u: more threads than the CTA's %u (%u warps)", id, count, r->nth,
                         r->nwarps);
    }
    if (id_out) *id_out = id;
    if (count_out) *count_out = count;
    return true;
}

/* ---- one thread, until a collective or the end ---- */

static void take_edge(thread *t, const uint32_t *aux, uint32_t at, uint64_t *tmp) {
    uint32_t count = aux[at + 1], w = 0;
    const uint32_t *mv = aux + at + 2;
    for (uint32_t i = 0; i < count; i++)
        for (uint32_t k = 0; k < mv[3 * i + 2]; k++) tmp[w++] = t->r[mv[3 * i + 1] + k];
    w = 0;
    for (uint32_t i = 0; i < count; i++)
        for (uint32_t k = 0; k < mv[3 * i + 2]; k++) t->r[mv[3 * i] + k] = tmp[w++];
    t->pc = aux[at];
}

static bool run_thread(run *r, thread *t, uint64_t *tmp) {
    const emu_func *f = r->f;
    uint64_t *R = t->r;
    for (;;) {
        const emu_inst *in = &f->code[t->pc];
        if (t->wg_live && !emu_wgmma_check_reads(r, t, in)) return false;
        if (in->op >= EOP_BARRIER) {
            if (in->op == EOP_BARRIER && !barrier_operands(r, t, in, NULL, NULL)) return false;
            t->state = T_WAIT;
            return true;
        }
        switch ((eop)in->op) {
        case EOP_BR:
        case EOP_CONDBR: /* every loop takes a branch a trip: where the time limit is checked */
            if (r->deadline && ++r->ticks >= EMU_CLOCK_EVERY) {
                r->ticks = 0;
                if (tc_now_ms() > r->deadline)
                    return rfail(r, t, in, "the launch ran past its time limit of %g s (trt_set_time_limit)",
                                 r->l->time_limit_ms / 1e3);
            }
            take_edge(t, f->aux, in->op == EOP_BR || (R[in->a] & 1) ? in->aux : in->naux, tmp);
            continue;
        case EOP_SWITCH: {
            const uint32_t *tab = f->aux + in->aux;
            uint32_t target = tab[1];
            for (uint32_t i = 0; i < tab[0]; i++)
                if (mask_bits((uint64_t)tab[2 + 3 * i] | (uint64_t)tab[3 + 3 * i] << 32, ek_bits[in->ek]) == R[in->a]) {
                    target = tab[4 + 3 * i];
                    break;
                }
            take_edge(t, f->aux, target, tmp);
            continue;
        }
        case EOP_RET:
            if (t->ncp && !cp_complete(r, t, in, UINT32_MAX)) return false;
            t->state = T_DONE;
            return true;
        case EOP_UNREACHABLE: return rfail(r, t, in, "reached unreachable");
        /* PTX ISA, "trap": aborts the kernel, an error on the host; tilec
         * emits it where a bulk tensor copy's coordinate is below 0
         * (lower/cg_tma.c) */
        case EOP_TRAP: return rfail(r, t, in, "trap: the kernel stopped itself (PTX trap)");
        case EOP_BIN: {
            ek e = (ek)in->ek;
            for (uint32_t l = 0; l < in->lanes; l++)
                R[in->dst + l] = ek_is_float(e) ? emu_float_bin(in->sub, R[in->a + l], R[in->b + l], e)
                                                : emu_int_bin(in->sub, R[in->a + l], R[in->b + l], ek_bits[e]);
            break;
        }
        case EOP_FNEG:
            for (uint32_t l = 0; l < in->lanes; l++) R[in->dst + l] = R[in->a + l] ^ (UINT64_C(1) << (ek_bits[in->ek] - 1));
            break;
        case EOP_ICMP:
            for (uint32_t l = 0; l < in->lanes; l++)
                R[in->dst + l] = emu_icmp(in->sub, R[in->a + l], R[in->b + l], ek_bits[in->ek]);
            break;
        case EOP_FCMP:
            for (uint32_t l = 0; l < in->lanes; l++)
                R[in->dst + l] = emu_fcmp(in->sub, emu_fget(R[in->a + l], (ek)in->ek), emu_fget(R[in->b + l], (ek)in->ek));
            break;
        case EOP_SELECT:
            for (uint32_t w = 0; w < in->lanes; w++)
                R[in->dst + w] = (R[in->c + (in->imm > 1 ? w : 0)] & 1) ? R[in->a + w] : R[in->b + w];
            break;
        case EOP_CAST:
            for (uint32_t l = 0; l < in->lanes; l++)
                R[in->dst + l] = in->imm == 3 ? emu_shared_cast(in->sub, R[in->a + l], (ek)in->ek2)
                                              : emu_cast(in->sub, R[in->a + l], (ek)in->ek, (ek)in->ek2);
            break;
        case EOP_COPY:
            for (uint32_t w = 0; w < in->lanes; w++) R[in->dst + w] = R[in->a + w];
            break;
        case EOP_ASCAST:
            for (uint32_t l = 0; l < in->lanes; l++) {
                uint64_t p = R[in->a + l];
                uint32_t region = (uint32_t)(p >> REGION_SHIFT);
                bool ok = in->imm == 0 || p == 0 || (in->imm == 3 ? region == REGION_SHARED
                                                     : in->imm == 5 ? region == REGION_LOCAL
                                                     : in->imm == 4 ? region == REGION_CONST
                                                                    : region != REGION_SHARED && region != REGION_LOCAL);
                if (!ok) return rfail(r, t, in, "a cast of %#llx to address space %lld, where it does not point",
                                      (unsigned long long)p, (long long)in->imm);
                R[in->dst + l] = p;
            }
            break;
        case EOP_BITCAST: {
            uint8_t bytes[MAX_BITCAST_BYTES];
            int sb = ek_bytes[in->ek], db = ek_bytes[in->ek2];
            for (int64_t l = 0; l < in->imm; l++) store_word(bytes + l * sb, R[in->a + l], (ek)in->ek);
            for (uint32_t l = 0; l < in->lanes; l++) R[in->dst + l] = load_word(bytes + l * (uint32_t)db, (ek)in->ek2);
            break;
        }
        case EOP_GEP: {
            uint64_t p = R[in->a] + (uint64_t)in->imm;
            for (uint32_t i = 0; i < in->naux; i++) {
                const uint32_t *term = f->aux + in->aux + 3 * i;
                p += (uint64_t)sx(R[term[0]], ek_bits[term[2]]) * term[1];
            }
            R[in->dst] = p;
            break;
        }
        case EOP_LOAD: case EOP_STORE: {
            bool st = in->op == EOP_STORE;
            ek e = (ek)in->ek;
            uint64_t bytes = (uint64_t)in->lanes * (uint64_t)ek_bytes[e];
            uint8_t *p = mem(r, t, in, R[in->a], bytes, (uint64_t)in->imm, st ? ACC_WRITE : ACC_READ);
            if (!p) return false;
            if (st && !same_value_store(r, t, in, R[in->a], p, R + in->b, e, in->lanes)) return false;
            if (r->acct && R[in->a] >> REGION_SHIFT == REGION_SHARED) emu_smem_record(r, t, t->pc, R[in->a] & OFFSET_MASK);
            for (uint32_t l = 0; l < in->lanes; l++) {
                if (st) store_word(p + l * (uint32_t)ek_bytes[e], R[in->b + l], e);
                else R[in->dst + l] = load_word(p + l * (uint32_t)ek_bytes[e], e);
            }
            break;
        }
        case EOP_ALLOCA: R[in->dst] = make_ptr(REGION_LOCAL, (uint64_t)in->imm); break;
        case EOP_EXTRACTELT: {
            uint64_t i = R[in->c];
            R[in->dst] = i < in->lanes ? R[in->a + i] : 0; /* out of range: poison */
            break;
        }
        case EOP_INSERTELT: {
            uint64_t i = R[in->c];
            for (uint32_t l = 0; l < in->lanes; l++) R[in->dst + l] = R[in->a + l];
            if (i < in->lanes) R[in->dst + i] = R[in->b];
            break;
        }
        case EOP_SHUFFLE:
            for (uint32_t i = 0; i < in->naux; i++) {
                uint32_t m = f->aux[in->aux + i];
                R[in->dst + i] = m == UINT32_MAX ? 0 : m < in->imm ? R[in->a + m] : R[in->b + m - in->imm];
            }
            break;
        case EOP_EXTRACTVALUE:
            for (uint32_t w = 0; w < in->naux; w++) R[in->dst + w] = R[in->a + in->imm + w];
            break;
        case EOP_INSERTVALUE:
            for (uint32_t w = 0; w < in->lanes; w++) R[in->dst + w] = R[in->a + w];
            for (uint32_t w = 0; w < in->naux; w++) R[in->dst + in->imm + w] = R[in->b + w];
            break;
        case EOP_ATOMICRMW: {
            ek e = (ek)in->ek;
            uint8_t *p = mem(r, t, in, R[in->a], (uint64_t)ek_bytes[e], (uint64_t)ek_bytes[e], ACC_ATOMIC);
            if (!p) return false;
            if (r->acct && R[in->a] >> REGION_SHIFT == REGION_SHARED) emu_smem_record(r, t, t->pc, R[in->a] & OFFSET_MASK);
            uint64_t old = load_word(p, e), v = R[in->b], nv;
            int bits = ek_bits[e];
            switch (in->sub) {
            case LLVMAtomicRMWBinOpXchg: nv = v; break;
            case LLVMAtomicRMWBinOpAdd: nv = mask_bits(old + v, bits); break;
            case LLVMAtomicRMWBinOpSub: nv = mask_bits(old - v, bits); break;
            case LLVMAtomicRMWBinOpAnd: nv = old & v; break;
            case LLVMAtomicRMWBinOpOr: nv = old | v; break;
            case LLVMAtomicRMWBinOpXor: nv = old ^ v; break;
            case LLVMAtomicRMWBinOpMax: nv = sx(old, bits) > sx(v, bits) ? old : v; break;
            case LLVMAtomicRMWBinOpMin: nv = sx(old, bits) < sx(v, bits) ? old : v; break;
            case LLVMAtomicRMWBinOpUMax: nv = old > v ? old : v; break;
            case LLVMAtomicRMWBinOpUMin: nv = old < v ? old : v; break;
            case LLVMAtomicRMWBinOpFAdd: nv = emu_float_bin(LLVMFAdd, old, v, e); break;
            case LLVMAtomicRMWBinOpFSub: nv = emu_float_bin(LLVMFSub, old, v, e); break;
            case LLVMAtomicRMWBinOpFMax: nv = emu_fput(emu_fmin_ieee(emu_fget(old, e), emu_fget(v, e), false, true), e); break;
            case LLVMAtomicRMWBinOpFMin: nv = emu_fput(emu_fmin_ieee(emu_fget(old, e), emu_fget(v, e), false, false), e); break;
            default: return rfail(r, t, in, "an atomicrmw operation the emulator does not know");
            }
            store_word(p, nv, e);
            R[in->dst] = old;
            break;
        }
        case EOP_CMPXCHG: {
            ek e = (ek)in->ek;
            uint8_t *p = mem(r, t, in, R[in->a], (uint64_t)ek_bytes[e], (uint64_t)ek_bytes[e], ACC_ATOMIC);
            if (!p) return false;
            if (r->acct && R[in->a] >> REGION_SHIFT == REGION_SHARED) emu_smem_record(r, t, t->pc, R[in->a] & OFFSET_MASK);
            uint64_t old = load_word(p, e);
            if (old == R[in->b]) store_word(p, R[in->c], e);
            R[in->dst] = old;
            R[in->dst + 1] = old == R[in->b];
            break;
        }
        case EOP_SREG: {
            uint32_t v = 0;
            switch (in->sub) {
            case SREG_TID_X: v = t->tid; break;
            case SREG_NTID_X: v = r->nth; break;
            case SREG_NTID_Y: case SREG_NTID_Z: v = 1; break;
            case SREG_CTAID_X: case SREG_CTAID_Y: case SREG_CTAID_Z: v = r->ctaid[in->sub - SREG_CTAID_X]; break;
            case SREG_NCTAID_X: case SREG_NCTAID_Y: case SREG_NCTAID_Z: v = r->l->grid[in->sub - SREG_NCTAID_X]; break;
            case SREG_LANEID: v = t->tid % EMU_WARP; break;
            case SREG_WARPID: v = t->tid / EMU_WARP; break;
            case SREG_WARPSIZE: v = EMU_WARP; break;
            default: v = 0; break;
            }
            R[in->dst] = v;
            break;
        }
        case EOP_MATH:
            for (uint32_t l = 0; l < in->lanes; l++)
                R[in->dst + l] = emu_math(in, R[in->a + l], R[in->b + (in->b ? l : 0)], R[in->c + (in->c ? l : 0)]);
            break;
        case EOP_F2TF32: R[in->dst] = emu_f2tf32_rna((uint32_t)R[in->a]); break;
        case EOP_VREDUCE_BIN:
        case EOP_VREDUCE_MATH: {
            uint64_t acc = R[in->a];
            for (uint32_t l = 1; l < in->lanes; l++)
                acc = in->op == EOP_VREDUCE_BIN ? emu_int_bin(in->sub, acc, R[in->a + l], ek_bits[in->ek])
                                                : emu_math(in, acc, R[in->a + l], 0);
            R[in->dst] = acc;
            break;
        }
        case EOP_ASM_LD: {
            /* registers of imm / lanes bytes each, the first at the lowest
             * address; off, each keeps its tied value */
            const uint32_t *keep = f->aux + in->aux;
            size_t w = (size_t)in->imm / in->lanes;
            if (R[in->b] & 1) {
                uint8_t *p = mem(r, t, in, R[in->a], (uint64_t)in->imm, (uint64_t)in->imm, ACC_READ);
                if (!p) return false;
                for (uint32_t l = 0; l < in->lanes; l++) {
                    uint64_t v = 0;
                    memcpy(&v, p + l * w, w);
                    R[in->dst + l] = v;
                }
            } else {
                for (uint32_t l = 0; l < in->lanes; l++) R[in->dst + l] = R[keep[l]];
            }
            break;
        }
        case EOP_ASM_ST:
            if (R[in->b] & 1) {
                const uint32_t *val = f->aux + in->aux;
                size_t w = (size_t)in->imm / in->lanes;
                uint8_t *p = mem(r, t, in, R[in->a], (uint64_t)in->imm, (uint64_t)in->imm, ACC_WRITE);
                if (!p) return false;
                for (uint32_t l = 0; l < in->lanes; l++) memcpy(p + l * w, &R[val[l]], w);
            }
            break;
        case EOP_NOP: break;
        case EOP_VPRINTF:
            if (!do_vprintf(r, t, in)) return false;
            break;
        case EOP_ASSERTFAIL: return do_assertfail(r, t, in);
        case EOP_CPASYNC:
            if (!do_cp_async(r, t, in)) return false;
            break;
        case EOP_ASYNC: {
            int rc = emu_async_exec(r, t, in);
            if (rc < 0) return false;
            if (rc == 0) { /* a wait that failed: let the others run */
                t->state = T_PARK;
                return true;
            }
            break;
        }
        case EOP_CPCOMMIT: t->committed++; break;
        case EOP_CPWAIT:
            if (in->sub) { /* wait_all: commit, then wait for everything */
                t->committed++;
                if (!cp_complete(r, t, in, UINT32_MAX)) return false;
            } else if ((uint64_t)in->imm < t->committed &&
                       !cp_complete(r, t, in, t->committed - (uint32_t)in->imm)) {
                return false;
            }
            break;
        default: return rfail(r, t, in, "internal: operation %d", in->op);
        }
        t->pc++;
    }
}

/* ---- collectives ---- */

static bool shfl(run *r, thread *w, const emu_inst *in) {
    uint64_t out[EMU_WARP];
    for (uint32_t lane = 0; lane < EMU_WARP; lane++) {
        const uint64_t *R = w[lane].r;
        uint32_t mask = (uint32_t)R[in->a], b = (uint32_t)R[in->c] & 31, c = (uint32_t)R[in->imm];
        if (mask != 0xffffffffu) return rfail(r, &w[lane], in, "a shuffle with member mask %#x (only full warps are emulated)", mask);
        uint32_t cval = c & 31, segmask = (c >> 8) & 31;
        uint32_t max_lane = (lane & segmask) | (cval & ~segmask), min_lane = lane & segmask, j;
        bool ok;
        switch (in->sub) {
        case SHFL_UP: j = lane - b, ok = (int32_t)j >= (int32_t)max_lane; break;
        case SHFL_DOWN: j = lane + b, ok = j <= max_lane; break;
        case SHFL_BFLY: j = lane ^ b, ok = j <= max_lane; break;
        default: j = min_lane | (b & ~segmask), ok = j <= max_lane; break;
        }
        out[lane] = w[ok ? j : lane].r[in->b];
    }
    for (uint32_t lane = 0; lane < EMU_WARP; lane++) w[lane].r[in->dst] = out[lane];
    return true;
}

static bool vote(run *r, thread *w, const emu_inst *in) {
    uint32_t ballot = 0;
    for (uint32_t lane = 0; lane < EMU_WARP; lane++) {
        if ((uint32_t)w[lane].r[in->a] != 0xffffffffu) return rfail(r, &w[lane], in, "a vote with a partial member mask");
        if (w[lane].r[in->b] & 1) ballot |= 1u << lane;
    }
    uint64_t v = in->sub == VOTE_BALLOT ? ballot
                 : in->sub == VOTE_ALL  ? ballot == 0xffffffffu
                 : in->sub == VOTE_ANY  ? ballot != 0
                                        : (ballot == 0 || ballot == 0xffffffffu);
    for (uint32_t lane = 0; lane < EMU_WARP; lane++) w[lane].r[in->dst] = v;
    return true;
}

/* elect.sync _|p, 0xffffffff (PTX ISA, "elect.sync"): every lane of the
 * warp waits for the others; one leader is elected, the same one each
 * time for the same member mask (deterministic, which lane the ISA does
 * not say): here the last, so code that takes lane 0 for the leader is
 * caught. The result is 1 in the leader, 0 elsewhere. */
enum { ELECT_LEADER = EMU_WARP - 1 };
static bool elect(run *r, thread *w, const emu_inst *in) {
    (void)r, (void)in;
    for (uint32_t lane = 0; lane < EMU_WARP; lane++) w[lane].r[in->dst] = lane == ELECT_LEADER;
    return true;
}

static bool mma(run *r, thread *w, const emu_inst *in) {
    (void)r;
    uint32_t regs[EMU_WARP][EMU_MMA_MAX_REGS], out[EMU_WARP][4];
    const uint32_t *args = r->f->aux + in->aux;
    for (uint32_t lane = 0; lane < EMU_WARP; lane++)
        for (uint32_t i = 0; i < in->naux; i++) {
            const uint32_t *a = args + 3 * i;
            uint32_t v = 0, bits = (uint32_t)ek_bits[a[2]];
            for (uint32_t l = 0; l < a[1]; l++) v |= (uint32_t)mask_bits(w[lane].r[a[0] + l], (int)bits) << (l * bits);
            regs[lane][i] = v;
        }
    emu_mma_compute(in->sub, regs, out);
    for (uint32_t lane = 0; lane < EMU_WARP; lane++)
        for (uint32_t i = 0; i < 4; i++) w[lane].r[in->dst + i] = out[lane][i];
    return true;
}

static bool ldmatrix(run *r, thread *w, const emu_inst *in) {
    const uint8_t *rows[EMU_WARP] = {0};
    uint64_t offs[EMU_WARP];
    unsigned count = emu_ldmatrix_count(in->sub);
    for (uint32_t lane = 0; lane < 8 * count; lane++) {
        uint64_t p = w[lane].r[in->a];
        if (p >> REGION_SHIFT != REGION_SHARED) return rfail(r, &w[lane], in, "ldmatrix from outside shared memory");
        if (!(rows[lane] = mem(r, &w[lane], in, p, 16, 16, ACC_READ))) return false;
        offs[lane] = p & OFFSET_MASK;
    }
    if (r->acct) emu_smem_ldmatrix(r, (uint32_t)(in - r->f->code), offs, count);
    uint32_t out[EMU_WARP][4];
    emu_ldmatrix_compute(in->sub, rows, out);
    for (uint32_t lane = 0; lane < EMU_WARP; lane++)
        for (uint32_t i = 0; i < count; i++) w[lane].r[in->dst + i] = out[lane][i];
    return true;
}

/* A completed phase of barrier id: its warps go on, ordered after each
 * other (the vector clocks' join, see race_check). */
static void barrier_complete(run *r, uint32_t id) {
    cta_barrier *b = &r->bars[id];
    uint32_t join[EMU_MAX_WARPS] = {0}, stamp = ++r->epoch;
    for (uint32_t m = b->arrived; m; m &= m - 1)
        for (uint32_t u = 0; u < r->nwarps; u++) {
            uint32_t v = r->vc[__builtin_ctz(m)][u];
            if (v > join[u]) join[u] = v;
        }
    for (uint32_t m = b->arrived; m; m &= m - 1) join[__builtin_ctz(m)] = stamp;
    if (b->arrived == (r->nwarps == 32 ? UINT32_MAX : (UINT32_C(1) << r->nwarps) - 1)) r->full = stamp;
    for (uint32_t m = b->arrived; m; m &= m - 1) {
        uint32_t w = (uint32_t)__builtin_ctz(m), w0 = w * EMU_WARP, n = r->nth - w0 < EMU_WARP ? r->nth - w0 : EMU_WARP;
        memcpy(r->vc[w], join, r->nwarps * sizeof join[0]);
        for (uint32_t i = w0; i < w0 + n; i++)
            if (r->th[i].state != T_DONE) r->th[i].pc++, r->th[i].state = T_RUN;
        r->warp_bar[w] = -1;
        if (r->acct) emu_smem_sync_warp(r->acct, w, w0, n);
    }
    memset(b, 0, sizeof *b);
}

/* Marks the arrivals of warps whose live lanes all wait at one barrier,
 * completing the phases that have their count: 1 if one completed, 0 if
 * none, -1 on an error. */
static int barriers_step(run *r) {
    int done = 0;
    for (uint32_t w = 0; w < r->nwarps; w++) {
        if (r->warp_bar[w] >= 0) continue; /* arrived, waiting */
        uint32_t w0 = w * EMU_WARP, n = r->nth - w0 < EMU_WARP ? r->nth - w0 : EMU_WARP, live = 0, exited = 0;
        const thread *first = NULL;
        bool all_there = true;
        uint32_t id = 0, count = 0;
        for (uint32_t i = w0; i < w0 + n; i++) {
            const thread *t = &r->th[i];
            if (t->state == T_DONE) {
                exited++;
                continue;
            }
            live++;
            const emu_inst *in = &r->f->code[t->pc];
            if (t->state != T_WAIT || in->op != EOP_BARRIER) {
                all_there = false;
                continue;
            }
            uint32_t tid_, tcount;
            if (!barrier_operands(r, t, in, &tid_, &tcount)) return -1;
            if (!first) {
                first = t, id = tid_, count = tcount;
                continue;
            }
            const emu_inst *at = &r->f->code[first->pc];
            if (in != at)
                return rfail(r, t, in,
                             "divergence: threads wait at different barriers (lanes of warp %u: thread %u at pc %u, this "
                             "one at pc %u; bar.sync is executed by whole warps)",
                             w, first->tid, (unsigned)(at - r->f->code), (unsigned)(in - r->f->code)),
                       -1;
            if (tid_ != id || tcount != count)
                return rfail(r, t, in,
                             "divergence: lanes of warp %u execute one bar.sync with different operands (thread %u: "
                             "barrier %u, %u threads; this one: barrier %u, %u threads)",
                             w, first->tid, id, count, tid_, tcount),
                       -1;
        }
        if (!live || !all_there) continue;
        const emu_inst *in = &r->f->code[first->pc];
        bool all = !(in->sub & BAR_HAS_COUNT);
        if (all && exited) continue; /* never completes: reported when nothing else can run */
        cta_barrier *b = &r->bars[id];
        uint32_t pc = (uint32_t)(in - r->f->code);
        if (b->arrived) {
            if (b->count != count)
                return rfail(r, first, in,
                             "threads meet barrier %u with different thread counts in one phase (warp %u gives %u; "
                             "warp %d, which arrived first, %u)",
                             id, w, count, __builtin_ctz(b->arrived), b->count),
                       -1;
            if ((b->all || all) && b->pc != pc)
                return rfail(r, first, in,
                             "divergence: threads wait at different barriers (barrier %u: warp %d at pc %u, this one at "
                             "pc %u; without a thread count every thread of the CTA executes the same one)",
                             id, __builtin_ctz(b->arrived), b->pc, pc),
                       -1;
        } else {
            b->count = count, b->pc = pc, b->all = all;
        }
        b->arrived |= UINT32_C(1) << w;
        r->warp_bar[w] = (int8_t)id;
        if ((uint32_t)__builtin_popcount(b->arrived) * EMU_WARP >= b->count) {
            barrier_complete(r, id);
            done = 1;
        }
    }
    return done;
}

/* Appends "barrier I: N threads wait (W warps arrived of the C threads it
 * waits for; warps ...). " for each barrier with arrivals in its phase,
 * and with `exited`, how many threads exited. */
static void describe_barriers(const run *r, char *msg, size_t size, bool exited) {
    size_t k = strlen(msg);
    for (uint32_t id = 0; id < BAR_IDS; id++) {
        const cta_barrier *b = &r->bars[id];
        if (!b->arrived || k >= size) continue;
        uint32_t waiting = 0;
        for (uint32_t m = b->arrived; m; m &= m - 1) {
            uint32_t w0 = (uint32_t)__builtin_ctz(m) * EMU_WARP;
            for (uint32_t i = w0; i < w0 + EMU_WARP && i < r->nth; i++) waiting += r->th[i].state != T_DONE;
        }
        k += (size_t)snprintf(msg + k, size - k, "barrier %u: %u thread%s wait%s (%d warp%s arrived of the %u threads "
                              "it waits for; warps",
                              id, waiting, waiting == 1 ? "" : "s", waiting == 1 ? "s" : "", __builtin_popcount(b->arrived),
                              __builtin_popcount(b->arrived) == 1 ? "" : "s", b->count);
        for (uint32_t m = b->arrived; m && k < size; m &= m - 1)
            k += (size_t)snprintf(msg + k, size - k, " %d", __builtin_ctz(m));
        if (k < size) k += (size_t)snprintf(msg + k, size - k, "). ");
    }
    uint32_t done = 0;
    for (uint32_t i = 0; i < r->nth; i++) done += r->th[i].state == T_DONE;
    if (exited && done && k < size) snprintf(msg + k, size - k, "%u thread%s exited.", done, done == 1 ? "" : "s");
}

/* Nothing can run and no barrier completes: a thread exited under a
 * barrier without a count, or a deadlock. */
static bool barriers_stuck(run *r) {
    for (uint32_t i = 0; i < r->nth; i++) {
        const thread *t = &r->th[i];
        if (t->state != T_WAIT || r->f->code[t->pc].op != EOP_BARRIER || (r->f->code[t->pc].sub & BAR_HAS_COUNT)) continue;
        for (uint32_t j = 0; j < r->nth; j++) /* __syncthreads' rule */
            if (r->th[j].state == T_DONE)
                return rfail(r, &r->th[j], NULL, "divergence: the thread exited while others wait at a barrier");
    }
    char msg[900] = "a deadlock (the kernel would hang on the GPU): every live thread waits at a barrier and none can "
                    "complete. ";
    describe_barriers(r, msg, sizeof msg, true);
    size_t k = strlen(msg);
    if (k && msg[k - 1] == ' ') msg[k - 1] = 0;
    return rfail(r, NULL, NULL, "%s", msg);
}

void emu_describe_barriers(const run *r, char *msg, size_t size) { describe_barriers(r, msg, size, false); }

/* Runs one CTA to its end. */
static bool run_cta(run *r, uint64_t *tmp) {
    for (uint32_t i = 0; i < r->nth; i++) {
        thread *t = &r->th[i];
        t->pc = 0, t->state = T_RUN, t->ncp = 0, t->committed = 0, t->wg_live = false;
    }
    if (r->wgmma) emu_wgmma_cta_begin(r);
    if (r->shared_size) memset(r->shared, POISON_BYTE, r->shared_size);
    r->epoch++;
    r->cta_epoch = r->full = r->epoch;
    for (uint32_t w = 0; w < r->nwarps; w++) {
        for (uint32_t u = 0; u < r->nwarps; u++) r->vc[w][u] = r->cta_epoch;
        r->warp_bar[w] = -1;
    }
    memset(r->bars, 0, sizeof r->bars);
    if (r->async) emu_async_cta_begin(r);
    for (;;) {
        for (uint32_t i = 0; i < r->nth; i++)
            if (r->th[i].state == T_RUN && !run_thread(r, &r->th[i], tmp)) return false;
        if (r->async && emu_async_wake(r)) continue;
        bool progressed = false, all_done = true, warp_waiting = false, parked = false;
        for (uint32_t w0 = 0; w0 < r->nth; w0 += EMU_WARP) {
            thread *w = &r->th[w0];
            uint32_t n = r->nth - w0 < EMU_WARP ? r->nth - w0 : EMU_WARP;
            const emu_inst *at = NULL;
            bool any_warp_op = false, warp_parked = false, moved = false;
            for (uint32_t lane = 0; lane < n; lane++) {
                if (w[lane].state == T_DONE) continue;
                all_done = false;
                if (w[lane].state == T_PARK) {
                    warp_parked = parked = true;
                    continue;
                }
                moved |= w[lane].state == T_RUN; /* a warpgroup collective moved it on this round */
                const emu_inst *in = &r->f->code[w[lane].pc];
                if (in->op != EOP_BARRIER) any_warp_op = true;
            }
            /* a parked lane: its warp's collective waits; a moved one runs first */
            if (!any_warp_op || warp_parked || moved) continue;
            warp_waiting = true;
            for (uint32_t lane = 0; lane < n; lane++) {
                const emu_inst *in = w[lane].state == T_DONE ? NULL : &r->f->code[w[lane].pc];
                if (!in) return rfail(r, &w[lane], NULL, "divergence: the thread exited while lanes of its warp wait at a warp collective (%s)",
                                      "shuffle, vote, mma or ldmatrix");
                if (!at) at = in;
                if (in != at)
                    return rfail(r, &w[lane], in, "divergence: lanes of one warp wait at different collectives (lane 0 of the warp at pc %u, this one at pc %u)",
                                 (unsigned)(at - r->f->code), (unsigned)(in - r->f->code));
            }
            if (n != EMU_WARP) return rfail(r, w, at, "a warp collective in a partial warp");
            if (eop_is_warpgroup(at->op)) { /* all four warps of the warpgroup, or wait for them */
                int ready = emu_wgmma_ready(r, w0, at);
                if (ready < 0) return false;
                if (!ready) continue;
                uint32_t g0 = w0 - w0 % (4 * EMU_WARP);
                if (!emu_wgmma_collective(r, g0, at)) return false;
                for (uint32_t i = g0; i < g0 + 4 * EMU_WARP; i++) r->th[i].pc++, r->th[i].state = T_RUN;
                for (uint32_t i = g0; r->acct && i < g0 + 4 * EMU_WARP; i += EMU_WARP) emu_smem_sync_warp(r->acct, i / EMU_WARP, i, EMU_WARP);
                progressed = true;
                /* this warpgroup runs on before the others' collectives
                 * complete: warpgroups are not in step, and code that
                 * counts on another's wgmma.wait_group having happened
                 * (its slots free) without a barrier is caught */
                break;
            }
            bool ok = true;
            switch ((eop)at->op) {
            case EOP_SHFL: ok = shfl(r, w, at); break;
            case EOP_VOTE: ok = vote(r, w, at); break;
            case EOP_ELECT: ok = elect(r, w, at); break;
            case EOP_MMA: ok = mma(r, w, at); break;
            case EOP_LDMATRIX: ok = ldmatrix(r, w, at); break;
            default: break; /* bar.warp.sync */
            }
            if (!ok) return false;
            if (r->acct) emu_smem_sync_warp(r->acct, w0 / EMU_WARP, w0, n); /* the warp met: its instances are whole */
            for (uint32_t lane = 0; lane < n; lane++) w[lane].pc++, w[lane].state = T_RUN;
            progressed = true;
        }
        if (all_done) {
            if (r->acct) emu_smem_sync_all(r);
            return !r->async || emu_async_cta_end(r);
        }
        if (progressed) continue;
        int stepped = barriers_step(r);
        if (stepped < 0) return false;
        if (stepped) continue;
        if (warp_waiting)
            return rfail(r, NULL, NULL, "a warp waits without progress (a warpgroup whose warps wait at different "
                                        "collectives?)");
        if (parked) return emu_async_deadlock(r);
        return barriers_stuck(r);
    }
}

emu_result emu_run(const emu_module *m, const emu_launch *l, char *err, size_t err_size) {
    snprintf(err, err_size, "%s", "");
    const emu_func *f = emu_find_func(m, l->kernel);
    if (!f) {
        snprintf(err, err_size, "emulator: no kernel '%s' in the module", l->kernel);
        return EMU_ERROR;
    }
    if (l->nargs != f->nparams) {
        snprintf(err, err_size, "emulator: kernel '%s' takes %u arguments, %u given", f->name, f->nparams, l->nargs);
        return EMU_ERROR;
    }
    if (l->dynamic_smem > EMU_MAX_DYNAMIC_SMEM) {
        snprintf(err, err_size, "emulator: %u bytes of dynamic shared memory asked for (no GPU has more than %d)",
                 l->dynamic_smem, EMU_MAX_DYNAMIC_SMEM);
        return EMU_ERROR;
    }
    run r;
    memset(&r, 0, sizeof r);
    r.m = m, r.f = f, r.l = l, r.nth = f->threads, r.err = err, r.err_size = err_size, r.last_tid = -1;
    r.nwarps = (r.nth + EMU_WARP - 1) / EMU_WARP;
    r.shared_size = m->shared_size + l->dynamic_smem;
    r.deadline = l->time_limit_ms > 0 ? tc_now_ms() + l->time_limit_ms : 0;
    r.th = calloc(r.nth, sizeof *r.th);
    uint64_t *frames = calloc((size_t)r.nth * f->nwords + 1, sizeof *frames);
    uint64_t local_stride = (f->local_size + 15) / 16 * 16;
    uint8_t *locals = calloc(1, (size_t)(r.nth * local_stride) + 16);
    r.shared = aligned_alloc(256, (size_t)(r.shared_size + 255) / 256 * 256 + 256);
    r.sh = calloc((size_t)r.shared_size + 1, sizeof *r.sh);
    uint64_t *tmp = malloc(((size_t)f->nwords + 1) * sizeof *tmp);
    r.acct = l->smem_stats ? emu_smem_acct_new(f, r.nth, l->smem_stats) : NULL;
    r.async = emu_async_new(&r);
    if (!r.th || !frames || !locals || !r.shared || !r.sh || !tmp || (l->smem_stats && !r.acct)) {
        snprintf(err, err_size, "emulator: out of memory");
        free(r.th), free(frames), free(locals), free(r.shared), free(r.sh), free(tmp);
        emu_smem_acct_free(r.acct);
        return EMU_ERROR;
    }
    for (uint32_t i = 0; i < r.nth; i++) {
        thread *t = &r.th[i];
        t->tid = i;
        t->r = frames + (size_t)i * f->nwords;
        t->local = locals + i * local_stride;
        memcpy(t->r, f->init, f->nwords * sizeof *t->r);
        for (uint32_t p = 0; p < f->nparams; p++) {
            const emu_arg *a = &l->args[p];
            uint64_t v;
            if (a->is_ptr) {
                uint64_t bias = a->buffer < l->nbuffers ? (uintptr_t)l->buffers[a->buffer].data % BUFFER_BIAS_MOD : 0;
                v = make_ptr(a->buffer + 1, bias + a->offset);
            } else {
                v = mask_bits(a->bits, ek_bits[f->param_ek[p]]);
            }
            t->r[f->param_slot[p]] = v;
        }
    }
    for (uint32_t z = 0; z < l->grid[2] && r.result == EMU_OK; z++)
        for (uint32_t y = 0; y < l->grid[1] && r.result == EMU_OK; y++)
            for (uint32_t x = 0; x < l->grid[0] && r.result == EMU_OK; x++) {
                r.ctaid[0] = x, r.ctaid[1] = y, r.ctaid[2] = z;
                if (!run_cta(&r, tmp) && r.result == EMU_OK) r.result = EMU_ERROR;
            }
    if (r.linelen) emit_text(&r, "\n", 1); /* a last line without its newline */
    if (r.acct) emu_smem_acct_publish(r.acct, f);
    emu_smem_acct_free(r.acct);
    emu_async_free(r.async);
    emu_wgmma_free(&r);
    for (uint32_t i = 0; i < r.nth; i++) free(r.th[i].cp);
    free(r.th), free(frames), free(locals), free(r.shared), free(r.sh), free(tmp);
    return r.result;
}
