/* wgmma.c - Hopper's warpgroup matrix multiply in the emulator, from the
 * PTX ISA's chapter 9.7.15 ("Asynchronous Warpgroup Level Matrix
 * Multiply-Accumulate"): wgmma.mma_async (9.7.15.5.2), its register
 * fragments (9.7.15.5.1.1), shared-memory layouts and matrix descriptor
 * (9.7.15.5.1.2), wgmma.fence, wgmma.commit_group and wgmma.wait_group;
 * also shared pointers as integers (what a descriptor's start address is).
 * The asm strings are lower/ptx_wgmma.h's, matched exactly.
 *
 * The model. Each op is a collective of a warpgroup (warps 4k..4k+3, all
 * 128 threads at the instruction). wgmma.mma_async computes its result at
 * issue (each output's K products exact, summed in double, rounded once,
 * as mma.c does) but does not give it to the threads: their D registers
 * get markers, values naming the pending result, which moves (extractvalue,
 * phis, vector shuffles) carry and any other use reports ("accumulator read
 * before wgmma.wait_group"). Another wgmma of the same shape may take them
 * as its accumulator (the ISA orders those), and the wgmma.wait_group that
 * completes their group turns every marker in the warpgroup's frames into
 * its value. While a wgmma is pending, the shared bytes it reads may not be
 * written (a race). wgmma.fence snapshots the warpgroup's registers: a wgmma
 * whose A registers or accumulator inputs differ from the snapshot (and are
 * not a previous wgmma's result moved) was not fenced after they were
 * written, which the ISA requires. The check is on values: an input
 * holding what some register of the thread held at the fence was moved
 * there (phis), not computed, and a value some register held is not seen
 * as a write. In SSA form a pending
 * register cannot be overwritten, so only reads are checked. */
#include "emu/emu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/ptx_wgmma.h"
#include "support/support.h"

enum {
    WG_THREADS = 4 * EMU_WARP,
    WG_MAX_PENDING = 1024, /* wgmma.mma_async in flight in a warpgroup: a runaway guard */
    WG_MAX_SITES = 64,     /* static wgmma instructions whose last results are remembered */
    WG_MARK = 0x5EED,      /* a marker's top 16 bits; then the entry (16 bits), then the register */
    WG_CHUNK = 16          /* the pending-read map's granule: a core-matrix row */
};

/* ---- shared pointers as integers ----------------------------------------------
 * On the GPU a shared-window address is a byte offset in the CTA's shared
 * memory (cvta.to.shared; what a matrix descriptor encodes, 9.7.15.5.1.2.2),
 * so ptrtoint of an addrspace(3) pointer gives the offset and inttoptr
 * tags it back; other address spaces keep the emulator's tagged values. */
uint64_t emu_shared_cast(uint16_t op, uint64_t v, ek to) {
    if (op == LLVMPtrToInt) return mask_bits(v >> REGION_SHIFT == REGION_SHARED ? v & OFFSET_MASK : v, ek_bits[to]);
    if (v >> REGION_SHIFT == REGION_SHARED || v >> 32) return v; /* tagged already, or not an offset: fails at use */
    return make_ptr(REGION_SHARED, v);
}

/* ---- the form, packed into emu_inst.imm ------------------------------------------ */

static int64_t pack_form(const ptx_wgmma_form *f) {
    return (int64_t)f->n | (int64_t)f->a << 9 | (int64_t)f->b << 12 | (int64_t)f->a_regs << 15 |
           (int64_t)(f->scale_a < 0) << 16 | (int64_t)(f->scale_b < 0) << 17 | (int64_t)f->trans_a << 18 |
           (int64_t)f->trans_b << 19;
}

static ptx_wgmma_form unpack_form(int64_t v) {
    return (ptx_wgmma_form){.n = (unsigned)(v & 511),
                            .a = (ptx_wgmma_elem)(v >> 9 & 7),
                            .b = (ptx_wgmma_elem)(v >> 12 & 7),
                            .a_regs = v >> 15 & 1,
                            .scale_a = v >> 16 & 1 ? -1 : 1,
                            .scale_b = v >> 17 & 1 ? -1 : 1,
                            .trans_a = (int)(v >> 18 & 1),
                            .trans_b = (int)(v >> 19 & 1)};
}

/* The shape the ISA's ordering exception is about (N and types). */
static int64_t shape_key(int64_t packed) { return packed & 0x7fff; }

/* ---- translation -------------------------------------------------------------------- */

static bool parse_elem(const char **p, ptx_wgmma_elem *e, const char **name) {
    static const char *const names[] = {"f16", "bf16", "tf32", "s8", "u8"};
    for (int i = 0; i < 5; i++) {
        size_t n = strlen(names[i]);
        if (!strncmp(*p, names[i], n) && ((*p)[n] == '.' || (*p)[n] == ' ')) {
            *e = (ptx_wgmma_elem)i, *p += n;
            return true;
        }
    }
    *name = *p;
    return false;
}

static bool is_type(LLVMTypeRef t, LLVMTypeKind k, unsigned bits) {
    return LLVMGetTypeKind(t) == k && (k != LLVMIntegerTypeKind || LLVMGetIntTypeWidth(t) == bits);
}

/* wgmma.mma_async: parse the text into a form, rebuild it with the
 * contract's generator and compare text and constraints exactly. */
static bool xlate_mma(xlate *x, LLVMValueRef call, const char *text, const char *cons, uint32_t dst) {
    static const char prefix[] = "wgmma.mma_async.sync.aligned.m64n";
    if (strncmp(text, prefix, sizeof prefix - 1)) {
        emu_xfail(x, call, "a wgmma form that is not in lower/ptx_wgmma.h's contract (sparse, or another spelling)");
        return true;
    }
    const char *p = text + sizeof prefix - 1, *bad = NULL;
    char *end;
    unsigned long n = strtoul(p, &end, 10), k;
    if (end == p || *end != 'k') goto malformed;
    p = end + 1;
    k = strtoul(p, &end, 10);
    if (end == p || *end != '.') goto malformed;
    p = end + 1;
    if (!strncmp(p, "f16.", 4)) {
        emu_xfail(x, call, "wgmma with .f16 accumulators is not in the contract (only .f32 and .s32 D)");
        return true;
    }
    if (strncmp(p, "f32.", 4) && strncmp(p, "s32.", 4)) goto malformed;
    bool int_d = p[0] == 's';
    p += 4;
    ptx_wgmma_form f = {.n = (unsigned)n, .scale_a = 1, .scale_b = 1};
    if (!parse_elem(&p, &f.a, &bad) || *p++ != '.' || !parse_elem(&p, &f.b, &bad)) {
        if (bad) {
            emu_xfail(x, call, "wgmma on '.%.*s' inputs is not in the contract (f16, bf16, tf32, s8, u8)",
                      (int)strcspn(bad, ". "), bad);
            return true;
        }
        goto malformed;
    }
    if (*p != ' ') {
        emu_xfail(x, call, "a wgmma qualifier after the types ('%.*s') that is not in the contract (.satfinite is not)",
                  (int)strcspn(p, " "), p);
        return true;
    }
    if (int_d != ptx_wgmma_is_int(f.a) || k != ptx_wgmma_k(&f)) {
        emu_xfail(x, call, "a wgmma whose D type or K does not go with .%s inputs", ptx_wgmma_elem_name(f.a));
        return true;
    }
    /* A: "{$..}" registers or "$.." a descriptor, after D's list */
    const char *dl = strchr(p, '}');
    if (!dl || strncmp(dl, "}, ", 3)) goto malformed;
    f.a_regs = dl[3] == '{';
    /* the immediates: the integers after the last operand ($) */
    const char *last = strrchr(text, '$');
    if (!last) goto malformed;
    p = last + 1 + strspn(last + 1, "0123456789");
    int imm[4], nimm = 0;
    while (*p == ',' && nimm < 4) {
        p++;
        imm[nimm++] = (int)strtol(p, &end, 10);
        if (end == p) goto malformed;
        p = end;
    }
    bool half = f.a == PTX_WGMMA_F16 || f.a == PTX_WGMMA_BF16;
    int want = int_d ? 0 : half ? (f.a_regs ? 3 : 4) : 2;
    if (nimm != want || strcmp(p, ";")) goto malformed;
    if (!int_d) f.scale_a = imm[0], f.scale_b = imm[1];
    if (half && f.a_regs) f.trans_b = imm[2];
    if (half && !f.a_regs) f.trans_a = imm[2], f.trans_b = imm[3];
    const char *why = ptx_wgmma_form_error(&f);
    if (why) {
        emu_xfail(x, call, "a wgmma with %s (PTX ISA 9.7.15.5.2)", why);
        return true;
    }
    char want_text[PTX_WGMMA_MAX_TEXT], want_cons[PTX_WGMMA_MAX_CONS];
    if (!ptx_wgmma_asm(&f, want_text, sizeof want_text, want_cons, sizeof want_cons)) goto malformed;
    if (strcmp(text, want_text) || strcmp(cons, want_cons)) {
        emu_xfail(x, call, "a wgmma asm that is not exactly what lower/ptx_wgmma.h generates for its form: want text '%.160s...' "
                           "and constraints '%.80s...'",
                  want_text, want_cons);
        return true;
    }
    /* operand types: D (struct of R f32/i32), then R tied, A (4 x i32 or i64), B (i64), scale-d (i1) */
    unsigned r = ptx_wgmma_dregs(&f), na = f.a_regs ? 4 : 1, nargs = LLVMGetNumArgOperands(call);
    LLVMTypeRef rt = LLVMTypeOf(call);
    LLVMTypeKind dk = int_d ? LLVMIntegerTypeKind : LLVMFloatTypeKind;
    bool ok = nargs == r + na + 2 && LLVMGetTypeKind(rt) == LLVMStructTypeKind && LLVMCountStructElementTypes(rt) == r;
    for (unsigned i = 0; ok && i < r; i++)
        ok = is_type(LLVMStructGetTypeAtIndex(rt, i), dk, 32) && is_type(LLVMTypeOf(LLVMGetOperand(call, i)), dk, 32);
    for (unsigned i = 0; ok && i < na; i++)
        ok = is_type(LLVMTypeOf(LLVMGetOperand(call, r + i)), LLVMIntegerTypeKind, f.a_regs ? 32 : 64);
    ok = ok && is_type(LLVMTypeOf(LLVMGetOperand(call, r + na)), LLVMIntegerTypeKind, 64) &&
         is_type(LLVMTypeOf(LLVMGetOperand(call, r + na + 1)), LLVMIntegerTypeKind, 1);
    if (!ok) {
        emu_xfail(x, call, "a wgmma asm call whose operand types are not the contract's ({%u x %s}, %u tied, %s, i64, i1)", r,
                  int_d ? "i32" : "float", r, f.a_regs ? "4 x i32" : "i64");
        return true;
    }
    uint32_t args[PTX_WGMMA_MAX_N / 2 + 6];
    for (unsigned i = 0; i < nargs; i++) args[i] = emu_xslot(x, LLVMGetOperand(call, i));
    emu_inst *e = emu_xemit(x, EOP_WGMMA, call);
    e->dst = dst, e->imm = pack_form(&f), e->naux = nargs;
    e->aux = emu_xaux(x, args[0]);
    for (unsigned i = 1; i < nargs; i++) emu_xaux(x, args[i]);
    return true;
malformed:
    emu_xfail(x, call, "a wgmma.mma_async text the emulator cannot read as lower/ptx_wgmma.h's contract");
    return true;
}

bool emu_wgmma_xlate_asm(xlate *x, LLVMValueRef call, const char *text, size_t tl, const char *cons, size_t cl,
                         uint32_t dst) {
    if (tl < 6 || strncmp(text, "wgmma.", 6)) return false;
    char t[PTX_WGMMA_MAX_TEXT], c[8 * PTX_WGMMA_MAX_CONS];
    if (tl >= sizeof t || cl >= sizeof c) {
        emu_xfail(x, call, "a wgmma asm longer than any the contract generates");
        return true;
    }
    memcpy(t, text, tl), t[tl] = 0;
    memcpy(c, cons, cl), c[cl] = 0;
    for (int i = 0; i < PTX_WGMMA_NSYNC; i++) {
        if (strcmp(t, ptx_wgmma_sync_asms[i].text)) continue;
        eop op = i == PTX_WGMMA_FENCE ? EOP_WGFENCE : i == PTX_WGMMA_COMMIT ? EOP_WGCOMMIT : EOP_WGWAIT;
        unsigned nargs = LLVMGetNumArgOperands(call);
        if (!strcmp(c, ptx_wgmma_sync_asms[i].cons) && nargs == 0) {
            emu_inst *e = emu_xemit(x, op, call);
            e->imm = op == EOP_WGWAIT ? i - PTX_WGMMA_WAIT0 : 0;
            return true;
        }
        /* the wait passing k accumulator values through */
        char want[8 * PTX_WGMMA_MAX_CONS];
        char reg = c[0] == '=' ? c[1] : 0;
        if (op != EOP_WGWAIT || !nargs || !ptx_wgmma_wait_asm((unsigned)(i - PTX_WGMMA_WAIT0), nargs, reg, want, sizeof want) ||
            strcmp(c, want)) {
            emu_xfail(x, call, "'%s' with constraints '%.60s' that are not the contract's (lower/ptx_wgmma.h)", t, c);
            return true;
        }
        LLVMTypeRef rt = LLVMTypeOf(call);
        LLVMTypeKind k = reg == 'f' ? LLVMFloatTypeKind : LLVMIntegerTypeKind;
        bool ok = nargs == 1 ? is_type(rt, k, 32)
                             : LLVMGetTypeKind(rt) == LLVMStructTypeKind && LLVMCountStructElementTypes(rt) == nargs;
        for (unsigned j = 0; ok && j < nargs; j++)
            ok = is_type(LLVMTypeOf(LLVMGetOperand(call, j)), k, 32) &&
                 (nargs == 1 || is_type(LLVMStructGetTypeAtIndex(rt, j), k, 32));
        if (!ok) {
            emu_xfail(x, call, "a wgmma.wait_group passing values whose types are not its constraints'");
            return true;
        }
        uint32_t first = 0;
        for (unsigned j = 0; j < nargs; j++) {
            uint32_t s = emu_xslot(x, LLVMGetOperand(call, j));
            uint32_t at = emu_xaux(x, s);
            if (!j) first = at;
        }
        emu_inst *e = emu_xemit(x, EOP_WGWAIT, call);
        e->imm = i - PTX_WGMMA_WAIT0, e->dst = dst, e->aux = first, e->naux = nargs;
        return true;
    }
    if (!strncmp(t, "wgmma.mma_async", 15)) return xlate_mma(x, call, t, c, dst);
    emu_xfail(x, call, "a wgmma asm that is not in lower/ptx_wgmma.h's contract (wgmma.wait_group takes 0..7)");
    return true;
}

/* ---- execution state ------------------------------------------------------------ */

typedef struct entry {
    bool used;
    uint32_t group;  /* the warpgroup's committed count at issue: its group */
    uint32_t pc;
    int64_t form;
    uint32_t nregs;
    uint32_t fences; /* the warpgroup's fence count at issue */
    uint32_t *vals;  /* [WG_THREADS][nregs] */
    uint32_t *chunks, nchunks; /* shared 16-byte chunks it reads */
} entry;

typedef struct site {
    uint32_t pc;
    int64_t form;
    uint32_t nregs;
    uint32_t *last; /* [WG_THREADS][nregs]: its last completed result */
} site;

typedef struct wg_state {
    uint32_t fences, committed;
    uint32_t live;      /* entries in use */
    entry *e;
    uint32_t ne, cape;
    uint64_t *snap;     /* [WG_THREADS][nwords]: frames at the last wgmma.fence */
    uint64_t *held;     /* [WG_THREADS][nwords]: each frame's values at the fence, sorted (built on demand) */
    uint32_t *nheld;    /* [WG_THREADS] distinct values in each; NULL: not built since the fence */
    site sites[WG_MAX_SITES];
    uint32_t nsites;
} wg_state;

struct emu_wgmma {
    wg_state *wg;
    uint32_t nwg;
    uint16_t *pending; /* per shared 16-byte chunk: pending wgmma reads of it */
    uint64_t nchunks;
};

static void free_entry(struct emu_wgmma *s, entry *e) {
    for (uint32_t i = 0; i < e->nchunks; i++) s->pending[e->chunks[i]]--;
    free(e->vals), free(e->chunks);
    memset(e, 0, sizeof *e);
}

void emu_wgmma_cta_begin(run *r) {
    struct emu_wgmma *s = r->wgmma;
    for (uint32_t g = 0; g < s->nwg; g++) {
        wg_state *w = &s->wg[g];
        for (uint32_t i = 0; i < w->ne; i++)
            if (w->e[i].used) free_entry(s, &w->e[i]);
        w->fences = w->committed = w->live = 0;
        free(w->snap), w->snap = NULL;
        free(w->held), w->held = NULL;
        free(w->nheld), w->nheld = NULL;
        for (uint32_t i = 0; i < w->nsites; i++) free(w->sites[i].last);
        w->nsites = 0;
    }
}

void emu_wgmma_free(run *r) {
    struct emu_wgmma *s = r->wgmma;
    if (!s) return;
    emu_wgmma_cta_begin(r);
    for (uint32_t g = 0; g < s->nwg; g++) free(s->wg[g].e);
    free(s->wg), free(s->pending), free(s);
    r->wgmma = NULL;
}

static struct emu_wgmma *state(run *r) {
    if (r->wgmma) return r->wgmma;
    struct emu_wgmma *s = calloc(1, sizeof *s);
    if (!s) abort();
    s->nwg = (r->nth + WG_THREADS - 1) / WG_THREADS;
    s->nchunks = (r->shared_size + WG_CHUNK - 1) / WG_CHUNK;
    s->wg = calloc(s->nwg, sizeof *s->wg);
    s->pending = calloc(s->nchunks + 1, sizeof *s->pending);
    if (!s->wg || !s->pending) abort();
    r->wgmma = s;
    return s;
}

/* A marker: a pending result's register, in a thread's frame. */
static uint64_t marker(uint32_t e, uint32_t reg) { return (uint64_t)((uint32_t)WG_MARK << 16 | e) << 32 | reg; }
static entry *marked(wg_state *w, uint64_t v, uint32_t *reg) {
    if (v >> 48 != WG_MARK) return NULL;
    uint32_t e = (uint32_t)(v >> 32) & 0xffff;
    if (e >= w->ne || !w->e[e].used || (uint32_t)v >= w->e[e].nregs) return NULL;
    *reg = (uint32_t)v;
    return &w->e[e];
}

/* ---- the scheduler's side ---------------------------------------------------------- */

static const char *op_name(uint16_t op) {
    return op == EOP_WGMMA ? "wgmma.mma_async" : op == EOP_WGFENCE ? "wgmma.fence" : op == EOP_WGCOMMIT ? "wgmma.commit_group"
                                                                                                            : "wgmma.wait_group";
}

int emu_wgmma_ready(run *r, uint32_t w0, const emu_inst *at) {
    uint32_t g0 = w0 - w0 % WG_THREADS;
    if (g0 + WG_THREADS > r->nth)
        return emu_fail(r, &r->th[w0], at,
                         "%s in warpgroup %u, which has %u threads: the CTA's %u threads leave it short of the 128 a "
                         "warpgroup collective needs",
                         op_name(at->op), g0 / WG_THREADS, r->nth - g0, r->nth),
               -1;
    bool all = true;
    for (uint32_t i = g0; i < g0 + WG_THREADS; i++) {
        const thread *t = &r->th[i];
        if (t->state == T_DONE)
            return emu_fail(r, t, at, "divergence: the thread exited while its warpgroup waits at %s (all 128 threads "
                                       "of a warpgroup must execute it: .sync.aligned)",
                             op_name(at->op)),
                   -1;
        const emu_inst *in = &r->f->code[t->pc];
        if (t->state == T_WAIT && in == at) continue;
        all = false;
        if (t->state == T_WAIT && (in->op == EOP_BARRIER || eop_is_warpgroup(in->op)))
            return emu_fail(r, t, in, "divergence: threads of warpgroup %u wait at different instructions (warp %u at "
                                       "%s, pc %u; this one at pc %u)",
                             g0 / WG_THREADS, w0 / EMU_WARP, op_name(at->op), (unsigned)(at - r->f->code),
                             (unsigned)(in - r->f->code)),
                   -1;
    }
    return all;
}

/* ---- reading the operands -------------------------------------------------------- */

static double elem_value(const uint8_t *p, ptx_wgmma_elem e) {
    switch (e) {
    case PTX_WGMMA_F16: return tc_half_value((uint16_t)(p[0] | p[1] << 8), false);
    case PTX_WGMMA_BF16: return tc_half_value((uint16_t)(p[0] | p[1] << 8), true);
    case PTX_WGMMA_TF32: {
        uint32_t u;
        memcpy(&u, p, 4);
        return f32_of(u & 0xffffe000u); /* "truncate lower 13 bits" (9.7.15.5.2) */
    }
    case PTX_WGMMA_S8: return (int8_t)p[0];
    default: return p[0];
    }
}

/* One operand's element from a register fragment word. */
static double reg_elem(uint32_t reg, unsigned i, ptx_wgmma_elem e) {
    uint8_t b[4];
    unsigned bytes = ptx_wgmma_elem_bytes(e), per = 4 / bytes;
    uint32_t v = reg >> (8 * bytes * (i % per));
    memcpy(b, &v, 4);
    return elem_value(b, e);
}

typedef struct desc {
    uint64_t start, lbo, sbo;
    unsigned base, swizzle; /* swizzle: the ISA's field (0 none, 1 128B, 2 64B, 3 32B) */
} desc;

static unsigned swizzle_bytes(unsigned mode) { return mode == 1 ? 128 : mode == 2 ? 64 : mode == 3 ? 32 : 0; }

/* Decodes a descriptor (9.7.15.5.1.2.2) and checks what the ISA asks of it. */
static bool decode_desc(run *r, const thread *t, const emu_inst *in, uint64_t d, const char *which, bool mn_major,
                        desc *out) {
    const uint64_t defined = UINT64_C(0x3fff) | UINT64_C(0x3fff) << 16 | UINT64_C(0x3fff) << 32 | UINT64_C(7) << 49 |
                             UINT64_C(3) << 62;
    if (d & ~defined)
        return emu_fail(r, t, in, "wgmma: %s's matrix descriptor %#llx sets bits the ISA's table leaves undefined "
                                   "(14-15, 30-31, 46-48, 52-61; 9.7.15.5.1.2.2)",
                         which, (unsigned long long)d);
    *out = (desc){.start = (d & 0x3fff) << 4,
                  .lbo = (d >> 16 & 0x3fff) << 4,
                  .sbo = (d >> 32 & 0x3fff) << 4,
                  .base = (unsigned)(d >> 49 & 7),
                  .swizzle = (unsigned)(d >> 62)};
    unsigned s = swizzle_bytes(out->swizzle);
    if (!s) {
        if (out->base)
            return emu_fail(r, t, in, "wgmma: %s's descriptor has base offset %u without swizzling (the base offset "
                                       "is only for swizzled layouts, 9.7.15.5.1.2.2)",
                             which, out->base);
        return true;
    }
    /* the matrix starts in the first row of a repeating pattern, which
     * starts at a (8 * S)-byte boundary plus 128 * base offset: K-major
     * may start S/32 steps of K into the row, MN-major at its start */
    uint64_t repeat = 8 * (uint64_t)s, in_pattern = (out->start - 128 * (uint64_t)out->base) % repeat;
    if (mn_major ? in_pattern != 0 : in_pattern + 32 > s)
        return emu_fail(r, t, in,
                         "wgmma: %s's matrix starts at byte %llu of shared memory, %llu bytes into its %u-byte %uB "
                         "swizzle pattern (base offset %u: the pattern starts at a %llu-byte boundary plus %u); an "
                         "%s-major operand starts %s (9.7.15.5.1.2)",
                         which, (unsigned long long)out->start, (unsigned long long)in_pattern, (unsigned)repeat, s,
                         out->base, (unsigned long long)repeat, 128 * out->base, mn_major ? "MN" : "K",
                         mn_major ? "at the pattern's start" : "in its first row, its 32 bytes of K inside that row");
    return true;
}

/* The byte address of element (mn, k) of an operand in its canonical
 * layout (9.7.15.5.1.2.1.3, in bytes with T = 16 / element bytes):
 *   K-major, none:  ((8,m),(T,2)) : ((16, SBO), (1, LBO))
 *   K-major, S:     ((8,m),(T,2)) : ((S, SBO), (1, 16))
 *   MN-major, none: ((T,1,m),(8,k)) : ((1, -, SBO), (16, LBO))
 *   MN-major, S:    ((T,S/16,m),(8,k)) : ((1, 16, LBO), (S, SBO))
 * then swizzled: bits 4.. of the address XOR the row in the pattern
 * (bits 7.., less the base offset), log2(S/16) bits (Swizzle<b,4,3>). */
static uint64_t elem_addr(const desc *d, bool mn_major, unsigned eb, unsigned mn, unsigned k) {
    unsigned s = swizzle_bytes(d->swizzle), tn = 16 / eb;
    uint64_t off;
    if (!mn_major) {
        unsigned kc = k / tn, e = k % tn;
        off = s ? (mn % 8) * (uint64_t)s + (mn / 8) * d->sbo + kc * 16u + e * eb
                : (mn % 8) * 16u + (mn / 8) * d->sbo + kc * d->lbo + e * eb;
    } else {
        unsigned rc = mn / tn, e = mn % tn, kr = k % 8, kg = k / 8;
        if (s) {
            unsigned per = s / 16;
            off = e * eb + (rc % per) * 16u + (rc / per) * d->lbo + kr * (uint64_t)s + kg * d->sbo;
        } else {
            off = e * eb + rc * d->sbo + kr * 16u + kg * d->lbo;
        }
    }
    uint64_t a = d->start + off;
    if (s) {
        unsigned bits = d->swizzle == 1 ? 3 : d->swizzle == 2 ? 2 : 1;
        uint64_t row = ((a >> 7) - d->base) & ((1u << bits) - 1);
        a ^= row << 4;
    }
    return a;
}

typedef struct chunks {
    uint32_t *v, n, cap;
} chunks;

/* Reads operand X (rows x K; A: rows = M, B: rows = N) through its
 * descriptor into out[row * kdim + k], checking every byte. */
static bool read_smem(run *r, const thread *t, const emu_inst *in, const desc *d, bool mn_major, ptx_wgmma_elem e,
                      unsigned rows, unsigned kdim, const char *which, double *out, chunks *ch) {
    unsigned eb = ptx_wgmma_elem_bytes(e);
    for (unsigned mn = 0; mn < rows; mn++)
        for (unsigned k = 0; k < kdim; k++) {
            uint64_t a = elem_addr(d, mn_major, eb, mn, k);
            if (a + eb > r->shared_size)
                return emu_fail(r, t, in,
                                 "wgmma: %s element (%u, %u) at byte %llu, outside the CTA's %llu bytes of shared memory",
                                 which, mn, k, (unsigned long long)a, (unsigned long long)r->shared_size);
            for (unsigned b = 0; b < eb; b++) {
                const shadow *s = &r->sh[a + b];
                if (s->wep == 0 || s->wep < r->cta_epoch)
                    return emu_fail(r, t, in, "wgmma: %s element (%u, %u) reads byte %llu of shared memory, which no "
                                               "thread of this CTA wrote",
                                     which, mn, k, (unsigned long long)(a + b));
                if (s->wt == CP_IN_FLIGHT)
                    return emu_fail(r, t, in, "wgmma: %s element (%u, %u) reads byte %llu of shared memory, which a "
                                              "cp.async is still writing",
                                    which, mn, k, (unsigned long long)(a + b));
                /* ordered before the wgmma: before one of its warps' issue (all four issue it) */
                bool ordered = false;
                for (uint32_t w = 0; w < WG_THREADS && !ordered; w += EMU_WARP)
                    ordered = emu_ordered(r, t + w, s->wep, s->wmask);
                if ((s->wt < EMU_MAX_THREADS || s->wt == RACE_MANY) && !ordered)
                    return emu_fail(r, t, in,
                                     "a data race in shared memory: wgmma reads byte %llu (%s element (%u, %u)), which %s "
                                     "wrote since the last barrier",
                                     (unsigned long long)(a + b), which, mn, k,
                                     s->wt == RACE_MANY ? "several threads" : "a thread");
                /* wgmma reads through the async proxy: threads' writes need a
                 * fence.proxy.async by the writer (async.c keeps which do) */
                if (r->async && !emu_async_proxy_read(r, t, in, a + b, 1)) return false;
            }
            out[mn * kdim + k] = elem_value(r->shared + a, e);
            uint32_t c = (uint32_t)(a / WG_CHUNK);
            if (!ch->n || ch->v[ch->n - 1] != c) {
                ch->v = emu_grow(ch->v, &ch->cap, ch->n + 1, sizeof *ch->v);
                ch->v[ch->n++] = c;
            }
        }
    return true;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* ---- the fragments (9.7.15.5.1.1), with w the warp in the warpgroup, g =
 * lane / 4 and q = lane % 4:
 *   D, register i:        row 16w + g + 8 * (i / 2 % 2), column 8 * (i / 4) + 2q + i % 2
 *   A f16/bf16, elem i:   row 16w + g + 8 * (i / 2 % 2), k 2q + i % 2 + 8 * (i / 4)
 *   A tf32, elem i:       row 16w + g + 8 * (i % 2),     k q + 4 * (i / 2)
 *   A s8/u8, elem i:      row 16w + g + 8 * (i / 4 % 2), k 4q + i % 4 + 16 * (i / 8)
 * (element i of A is in register i / (4 / bytes), lowest first). */
static void d_coord(unsigned tid, unsigned i, unsigned *row, unsigned *col) {
    unsigned w = tid / EMU_WARP, lane = tid % EMU_WARP;
    *row = 16 * w + lane / 4 + 8 * (i / 2 % 2);
    *col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
}

static void a_coord(ptx_wgmma_elem e, unsigned tid, unsigned i, unsigned *row, unsigned *k) {
    unsigned w = tid / EMU_WARP, lane = tid % EMU_WARP, g = lane / 4, q = lane % 4;
    switch (e) {
    case PTX_WGMMA_TF32: *row = 16 * w + g + 8 * (i % 2), *k = q + 4 * (i / 2); return;
    case PTX_WGMMA_S8: case PTX_WGMMA_U8: *row = 16 * w + g + 8 * (i / 4 % 2), *k = 4 * q + i % 4 + 16 * (i / 8); return;
    default: *row = 16 * w + g + 8 * (i / 2 % 2), *k = 2 * q + i % 2 + 8 * (i / 4); return;
    }
}

/* Is v, a non-marker input at accumulator position i, what a wgmma of the
 * same shape left there (moved, not written)? */
static bool wgmma_result(const wg_state *w, int64_t form, unsigned lane, unsigned i, uint32_t v) {
    for (uint32_t s = 0; s < w->nsites; s++) {
        const site *st = &w->sites[s];
        if (shape_key(st->form) == shape_key(form) && i < st->nregs && st->last[lane * st->nregs + i] == v) return true;
    }
    return false;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Did some register of thread `lane` hold v at the last fence? Then v in
 * another register was moved there (a phi, a copy), not computed: moves
 * need no fence, as the markers' moves need no wait. */
static bool held_at_fence(wg_state *w, size_t words, unsigned lane, uint64_t v) {
    if (!w->nheld) {
        if (!w->held && !(w->held = malloc(sizeof *w->held * words * WG_THREADS + 1))) abort();
        if (!(w->nheld = calloc(WG_THREADS, sizeof *w->nheld))) abort();
        for (unsigned t = 0; t < WG_THREADS; t++) {
            uint64_t *h = w->held + t * words;
            memcpy(h, w->snap + t * words, words * sizeof *h);
            qsort(h, words, sizeof *h, cmp_u64);
            uint32_t u = 0;
            for (size_t i = 0; i < words; i++)
                if (!u || h[u - 1] != h[i]) h[u++] = h[i];
            w->nheld[t] = u;
        }
    }
    return bsearch(&v, w->held + lane * words, w->nheld[lane], sizeof v, cmp_u64) != NULL;
}

static bool do_mma(run *r, struct emu_wgmma *s, wg_state *w, uint32_t g0, const emu_inst *in) {
    ptx_wgmma_form f = unpack_form(in->imm);
    unsigned nr = ptx_wgmma_dregs(&f), kd = ptx_wgmma_k(&f), na = f.a_regs ? 4 : 1;
    const uint32_t *args = r->f->aux + in->aux;
    uint32_t sa = args[nr], sb = args[nr + na], sd = args[nr + na + 1];
    thread *t0 = &r->th[g0];
    if (!w->fences)
        return emu_fail(r, t0, in, "wgmma.mma_async without a wgmma.fence before it in this warpgroup (the ISA asks for "
                                    "one before the first wgmma.mma_async, and between register writes and the wgmma "
                                    "that reads them)");
    if (w->live == WG_MAX_PENDING)
        return emu_fail(r, t0, in, "more than %d wgmma.mma_async pending in a warpgroup (limit is %d)", WG_MAX_PENDING,
                         WG_MAX_PENDING);
    /* the descriptors (the same in every warp, 9.7.15.5.2) and scale-d */
    for (uint32_t i = g0 + 1; i < g0 + WG_THREADS; i++) {
        const uint64_t *R = r->th[i].r, *R0 = t0->r;
        if ((!f.a_regs && R[sa] != R0[sa]) || R[sb] != R0[sb])
            return emu_fail(r, &r->th[i], in, "wgmma: a matrix descriptor that differs from thread %u's (it must be the "
                                               "same across the warpgroup)",
                             g0);
        if ((R[sd] & 1) != (R0[sd] & 1))
            return emu_fail(r, &r->th[i], in, "wgmma: scale-d differs from thread %u's in the warpgroup", g0);
    }
    bool scale_d = t0->r[sd] & 1, fl = !ptx_wgmma_is_int(f.a);
    unsigned n = f.n;
    double *a = malloc(sizeof(double) * PTX_WGMMA_M * kd), *b = malloc(sizeof(double) * n * kd);
    uint32_t *vals = malloc(sizeof(uint32_t) * WG_THREADS * nr);
    chunks ch = {0};
    bool ok = a && b && vals;
    if (!ok) abort();
    desc da, db;
    if (!f.a_regs)
        ok = decode_desc(r, t0, in, t0->r[sa], "A", f.trans_a, &da) &&
             read_smem(r, t0, in, &da, f.trans_a, f.a, PTX_WGMMA_M, kd, "A", a, &ch);
    ok = ok && decode_desc(r, t0, in, t0->r[sb], "B", f.trans_b, &db) &&
         read_smem(r, t0, in, &db, f.trans_b, f.b, n, kd, "B", b, &ch);
    /* A from registers, the accumulator in; each input register either a
     * marker (a pending result), fenced, or a wgmma result moved */
    for (uint32_t tid = 0; ok && tid < WG_THREADS; tid++) {
        thread *t = &r->th[g0 + tid];
        const uint64_t *R = t->r, *snap = w->snap + (size_t)tid * r->f->nwords;
        for (unsigned i = 0; ok && f.a_regs && i < 4; i++) {
            uint32_t reg, sl = args[nr + i];
            if (marked(w, R[sl], &reg))
                ok = emu_fail(r, t, in, "wgmma: A register a%u is a pending wgmma accumulator (wgmma.wait_group first)", i);
            else if (R[sl] != snap[sl] && !held_at_fence(w, r->f->nwords, tid, R[sl]))
                ok = emu_fail(r, t, in, "missing wgmma.fence: A register a%u was written after the last wgmma.fence (the "
                                         "ISA asks for one between a register write and the wgmma that reads it)",
                               i);
            for (unsigned j = 0; ok && j < 4 / ptx_wgmma_elem_bytes(f.a); j++) {
                unsigned row, k, e = i * (4 / ptx_wgmma_elem_bytes(f.a)) + j;
                a_coord(f.a, tid, e, &row, &k);
                a[row * kd + k] = reg_elem((uint32_t)R[sl], j, f.a);
            }
        }
        for (unsigned i = 0; ok && i < nr; i++) {
            uint32_t reg, sl = args[i], v = 0;
            if (scale_d) {
                entry *e = marked(w, R[sl], &reg);
                if (e) {
                    if (shape_key(e->form) != shape_key(in->imm) && e->fences == w->fences)
                        ok = emu_fail(r, t, in, "missing wgmma.fence: accumulator d%u is the pending result of a wgmma of "
                                                 "another shape (pc %u); only wgmmas of one shape are ordered without one",
                                       i, e->pc);
                    v = e->vals[tid * e->nregs + reg];
                } else {
                    v = (uint32_t)R[sl];
                    if (R[sl] != snap[sl] && !wgmma_result(w, in->imm, tid, i, v) &&
                        !held_at_fence(w, r->f->nwords, tid, R[sl]))
                        ok = emu_fail(r, t, in, "missing wgmma.fence: accumulator d%u was written after the last "
                                                 "wgmma.fence (by an instruction other than a wgmma)",
                                       i);
                }
            }
            vals[tid * nr + i] = v; /* the accumulator in; D below */
        }
    }
    if (ok) { /* D = A*B (+ D): exact products, one rounding */
        double sgn = (double)(f.scale_a * f.scale_b);
        for (uint32_t tid = 0; tid < WG_THREADS; tid++)
            for (unsigned i = 0; i < nr; i++) {
                unsigned row, col;
                d_coord(tid, i, &row, &col);
                uint32_t *v = &vals[tid * nr + i];
                if (fl) {
                    double acc = scale_d ? f32_of(*v) : 0.0;
                    for (unsigned k = 0; k < kd; k++) acc += sgn * a[row * kd + k] * b[col * kd + k];
                    *v = (uint32_t)bits_f32((float)acc);
                } else {
                    int64_t acc = scale_d ? (int32_t)*v : 0;
                    for (unsigned k = 0; k < kd; k++) acc += (int64_t)a[row * kd + k] * (int64_t)b[col * kd + k];
                    *v = (uint32_t)acc; /* wraps (no .satfinite) */
                }
            }
    }
    free(a), free(b);
    if (!ok) {
        free(vals), free(ch.v);
        return false;
    }
    /* the entry: a free slot, its chunks counted as pending reads */
    uint32_t id = 0;
    while (id < w->ne && w->e[id].used) id++;
    if (id == w->ne) w->e = emu_grow(w->e, &w->cape, ++w->ne, sizeof *w->e);
    if (ch.n) qsort(ch.v, ch.n, sizeof *ch.v, cmp_u32);
    uint32_t u = 0;
    for (uint32_t i = 0; i < ch.n; i++)
        if (!u || ch.v[u - 1] != ch.v[i]) ch.v[u++] = ch.v[i];
    for (uint32_t i = 0; i < u; i++) s->pending[ch.v[i]]++;
    w->e[id] = (entry){.used = true, .group = w->committed, .pc = (uint32_t)(in - r->f->code), .form = in->imm,
                       .nregs = nr, .fences = w->fences, .vals = vals, .chunks = ch.v, .nchunks = u};
    w->live++;
    for (uint32_t tid = 0; tid < WG_THREADS; tid++) {
        thread *t = &r->th[g0 + tid];
        for (unsigned i = 0; i < nr; i++) t->r[in->dst + i] = marker(id, i);
        t->wg_live = true;
    }
    return true;
}

/* Completes the groups before `upto`: their markers become values. */
static void complete(run *r, struct emu_wgmma *s, wg_state *w, uint32_t g0, uint32_t upto) {
    bool any = false;
    for (uint32_t i = 0; i < w->ne; i++) any |= w->e[i].used && w->e[i].group < upto;
    if (!any) return;
    for (uint32_t tid = 0; tid < WG_THREADS; tid++) {
        thread *t = &r->th[g0 + tid];
        for (uint32_t k = 0; k < r->f->nwords; k++) {
            uint32_t reg;
            entry *e = marked(w, t->r[k], &reg);
            if (e && e->group < upto) t->r[k] = e->vals[tid * e->nregs + reg];
        }
    }
    for (uint32_t i = 0; i < w->ne; i++) {
        entry *e = &w->e[i];
        if (!e->used || e->group >= upto) continue;
        site *st = NULL; /* remember its result: moved copies of it need no fence */
        for (uint32_t k = 0; k < w->nsites && !st; k++)
            if (w->sites[k].pc == e->pc) st = &w->sites[k];
        if (!st && w->nsites < WG_MAX_SITES) st = &w->sites[w->nsites++], *st = (site){.pc = e->pc};
        if (st) {
            free(st->last);
            st->last = e->vals, st->form = e->form, st->nregs = e->nregs, e->vals = NULL;
        }
        free_entry(s, e);
        w->live--;
    }
    if (!w->live)
        for (uint32_t tid = 0; tid < WG_THREADS; tid++) r->th[g0 + tid].wg_live = false;
}

bool emu_wgmma_collective(run *r, uint32_t g0, const emu_inst *in) {
    struct emu_wgmma *s = state(r);
    wg_state *w = &s->wg[g0 / WG_THREADS];
    switch (in->op) {
    case EOP_WGMMA: return do_mma(r, s, w, g0, in);
    case EOP_WGFENCE: {
        size_t words = r->f->nwords;
        w->fences++;
        free(w->nheld), w->nheld = NULL; /* rebuilt from this snapshot when needed */
        if (!w->snap && !(w->snap = malloc(sizeof *w->snap * words * WG_THREADS + 1))) abort();
        for (uint32_t tid = 0; tid < WG_THREADS; tid++) memcpy(w->snap + tid * words, r->th[g0 + tid].r, words * sizeof *w->snap);
        return true;
    }
    case EOP_WGCOMMIT: w->committed++; return true;
    case EOP_WGWAIT: {
        uint32_t n = (uint32_t)in->imm;
        if (w->committed > n) complete(r, s, w, g0, w->committed - n);
        for (uint32_t tid = 0; tid < WG_THREADS; tid++) { /* the values passed through */
            thread *t = &r->th[g0 + tid];
            for (uint32_t i = 0; i < in->naux; i++) t->r[in->dst + i] = t->r[r->f->aux[in->aux + i]];
        }
        return true;
    }
    default: return emu_fail(r, &r->th[g0], in, "internal: warpgroup operation %d", in->op);
    }
}

/* ---- checks on the threads' own instructions --------------------------------------- */

static bool check_slot(run *r, thread *t, const emu_inst *in, uint32_t sl) {
    if (sl >= r->f->nwords || !r->wgmma) return true;
    wg_state *w = &r->wgmma->wg[t->tid / WG_THREADS];
    uint32_t reg;
    const entry *e = marked(w, t->r[sl], &reg);
    if (!e) return true;
    return emu_fail(r, t, in,
                     "accumulator read before wgmma.wait_group: this reads register d%u of the wgmma.mma_async at pc %u, "
                     "whose group %s",
                     reg, e->pc, e->group < w->committed ? "is still pending (wait for it first)" : "is not even committed");
}

bool emu_wgmma_check_reads(run *r, thread *t, const emu_inst *in) {
    const uint32_t *aux = r->f->aux;
    uint32_t n = in->lanes ? in->lanes : 1;
    bool ok = true;
    switch ((eop)in->op) {
    /* moves: a pending register may be renamed; phis move on the edges */
    case EOP_BR: case EOP_RET: case EOP_UNREACHABLE: case EOP_TRAP: case EOP_ELECT: case EOP_COPY: case EOP_EXTRACTVALUE: case EOP_INSERTVALUE:
    case EOP_SHUFFLE: case EOP_ALLOCA: case EOP_SREG: case EOP_NOP: case EOP_CPCOMMIT: case EOP_CPWAIT:
    case EOP_BARRIER: case EOP_WGMMA: case EOP_WGFENCE: case EOP_WGCOMMIT: case EOP_WGWAIT:
        return true;
    case EOP_EXTRACTELT: case EOP_INSERTELT: return check_slot(r, t, in, in->c); /* the index */
    case EOP_CONDBR: case EOP_SWITCH: case EOP_F2TF32: case EOP_LDMATRIX: return check_slot(r, t, in, in->a);
    case EOP_BIN: case EOP_ICMP: case EOP_FCMP:
        for (uint32_t l = 0; ok && l < n; l++) ok = check_slot(r, t, in, in->a + l) && check_slot(r, t, in, in->b + l);
        return ok;
    case EOP_FNEG: case EOP_CAST: case EOP_ASCAST:
        for (uint32_t l = 0; ok && l < n; l++) ok = check_slot(r, t, in, in->a + l);
        return ok;
    case EOP_BITCAST: /* not a move here: it keeps only the bytes of the type */
        for (int64_t l = 0; ok && l < in->imm; l++) ok = check_slot(r, t, in, in->a + (uint32_t)l);
        return ok;
    case EOP_SELECT:
        for (uint32_t l = 0; ok && l < n; l++)
            ok = check_slot(r, t, in, in->c + (in->imm > 1 ? l : 0)) && check_slot(r, t, in, in->a + l) &&
                 check_slot(r, t, in, in->b + l);
        return ok;
    case EOP_MATH:
        for (uint32_t l = 0; ok && l < n; l++)
            ok = check_slot(r, t, in, in->a + l) && (!in->b || check_slot(r, t, in, in->b + l)) &&
                 (!in->c || check_slot(r, t, in, in->c + l));
        return ok;
    case EOP_GEP:
        ok = check_slot(r, t, in, in->a);
        for (uint32_t i = 0; ok && i < in->naux; i++) ok = check_slot(r, t, in, aux[in->aux + 3 * i]);
        return ok;
    case EOP_LOAD: return check_slot(r, t, in, in->a);
    case EOP_STORE:
        ok = check_slot(r, t, in, in->a);
        for (uint32_t l = 0; ok && l < n; l++) ok = check_slot(r, t, in, in->b + l);
        return ok;
    case EOP_MMA:
        for (uint32_t i = 0; ok && i < in->naux; i++)
            for (uint32_t l = 0; ok && l < aux[in->aux + 3 * i + 1]; l++) ok = check_slot(r, t, in, aux[in->aux + 3 * i] + l);
        return ok;
    case EOP_ASSERTFAIL: return check_slot(r, t, in, in->a) && check_slot(r, t, in, in->b) && check_slot(r, t, in, in->c);
    case EOP_SHFL: return check_slot(r, t, in, in->a) && check_slot(r, t, in, in->b) && check_slot(r, t, in, in->c) &&
                          check_slot(r, t, in, (uint32_t)in->imm);
    default: /* the rest read at most a, b and c (UINT32_MAX or 0 when unused) */
        return check_slot(r, t, in, in->a) && check_slot(r, t, in, in->b) && check_slot(r, t, in, in->c);
    }
}

bool emu_wgmma_check_write(run *r, const thread *t, const emu_inst *in, uint64_t off, uint64_t size) {
    struct emu_wgmma *s = r->wgmma;
    if (!size) return true;
    for (uint64_t c = off / WG_CHUNK; c <= (off + size - 1) / WG_CHUNK && c < s->nchunks; c++) {
        if (!s->pending[c]) continue;
        for (uint32_t g = 0; g < s->nwg; g++) /* name the wgmma */
            for (uint32_t i = 0; i < s->wg[g].ne; i++) {
                const entry *e = &s->wg[g].e[i];
                if (!e->used || !bsearch(&(uint32_t){(uint32_t)c}, e->chunks, e->nchunks, sizeof *e->chunks, cmp_u32)) continue;
                return emu_fail(r, t, in,
                                 "a data race in shared memory: a write to bytes %llu..%llu, which the wgmma.mma_async at "
                                 "pc %u of warpgroup %u still reads (its group is not complete: wgmma.wait_group first)",
                                 (unsigned long long)(c * WG_CHUNK), (unsigned long long)(c * WG_CHUNK + WG_CHUNK - 1), e->pc,
                                 g);
            }
    }
    return true;
}
