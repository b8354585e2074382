/* banks.c - shared-memory bank accounting of emu.h (emu_smem_stats): each
 * warp-level access to shared memory is gathered lane by lane and costed in
 * wavefronts; a file of its own because it observes execution and changes
 * nothing in it. */
#include "emu/emu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- shared-memory bank accounting (emu.h) ---- */

enum {
    SMEM_BANKS = 32,
    SMEM_WORD = 4,           /* bytes of a bank's word */
    SMEM_WAVEFRONT = 128,    /* bytes one wavefront moves: a word from each bank */
    SMEM_MAX_ACCESS = 16,    /* bytes of the widest access a lane makes in one instruction */
    LDMATRIX_ROW_BYTES = 16, /* an 8x8 b16 matrix's row */
    LDMATRIX_ROWS = 8
};

/* The lanes of one warp-level instance being collected. */
typedef struct smem_pending {
    uint32_t reported; /* lanes that executed it */
    bool done;
    uint64_t addr[EMU_WARP]; /* shared offsets */
} smem_pending;

/* A static instruction that may access shared memory, of the running kernel. */
typedef struct smem_site_run {
    uint32_t pc;
    emu_smem_kind kind;
    uint32_t bytes;
    emu_smem_count count;
} smem_site_run;

typedef struct smem_acct {
    emu_smem_stats *out;
    uint32_t *site_of_pc; /* per pc: its site, or UINT32_MAX */
    smem_site_run *sites;
    uint32_t nsites, nwarps;
    uint32_t *occ; /* [thread][site]: executions since the thread's warp last synchronized */
    smem_pending **pend; /* [warp][site]: instances by occurrence */
    uint32_t *npend, *cappend;
} smem_acct;

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Wavefronts for one group: n (at most a warp) accesses of `bytes` (at
 * most SMEM_MAX_ACCESS) each at addr[]: the most distinct 4-byte words any
 * bank holds among those touched. */
static uint32_t group_wavefronts(const uint64_t *addr, uint32_t n, uint32_t bytes) {
    uint64_t words[EMU_WARP * (SMEM_MAX_ACCESS / SMEM_WORD + 1)]; /* + 1: an access not word-aligned */
    uint32_t nw = 0;
    for (uint32_t i = 0; i < n; i++)
        for (uint64_t w = addr[i] / SMEM_WORD; w <= (addr[i] + bytes - 1) / SMEM_WORD; w++) words[nw++] = w;
    qsort(words, nw, sizeof *words, cmp_u64);
    uint32_t per_bank[SMEM_BANKS] = {0}, most = 0;
    for (uint32_t i = 0; i < nw; i++) {
        if (i && words[i] == words[i - 1]) continue; /* a broadcast */
        uint32_t c = ++per_bank[words[i] % SMEM_BANKS];
        if (c > most) most = c;
    }
    return most;
}

/* Adds one finished plain access instance (lanes in `mask`) to its site. */
static void smem_finish(smem_site_run *site, const uint64_t *addr, uint32_t mask) {
    if (!mask) return;
    uint32_t bytes = site->bytes < SMEM_MAX_ACCESS ? site->bytes : SMEM_MAX_ACCESS;
    uint32_t chunks = site->bytes <= SMEM_MAX_ACCESS ? 1 : (site->bytes + SMEM_MAX_ACCESS - 1) / SMEM_MAX_ACCESS;
    /* lanes in a group: as many as move at most 128 bytes (w <= 4: the warp) */
    uint32_t per_group = bytes <= 4 ? EMU_WARP : bytes <= 8 ? EMU_WARP / 2 : EMU_WARP / 4;
    site->count.instances++;
    for (uint32_t c = 0; c < chunks; c++)
        for (uint32_t g = 0; g < EMU_WARP; g += per_group) {
            uint64_t a[EMU_WARP];
            uint32_t n = 0;
            for (uint32_t lane = g; lane < g + per_group; lane++)
                if (mask >> lane & 1) a[n++] = addr[lane] + (uint64_t)c * SMEM_MAX_ACCESS;
            if (!n) continue;
            site->count.wavefronts += group_wavefronts(a, n, bytes);
            site->count.ideal++;
        }
}

/* Finishes the instances warp w collected since it last synchronized. */
void emu_smem_sync_warp(smem_acct *a, uint32_t w, uint32_t first_thread, uint32_t nthreads) {
    for (uint32_t s = 0; s < a->nsites; s++) {
        size_t ws = (size_t)w * a->nsites + s;
        for (uint32_t k = 0; k < a->npend[ws]; k++) {
            smem_pending *p = &a->pend[ws][k];
            if (!p->done) smem_finish(&a->sites[s], p->addr, p->reported);
        }
        a->npend[ws] = 0;
    }
    memset(a->occ + (size_t)first_thread * a->nsites, 0, (size_t)nthreads * a->nsites * sizeof *a->occ);
}

/* Thread t's access at pc of `bytes` at shared offset off. */
void emu_smem_record(run *r, const thread *t, uint32_t pc, uint64_t off) {
    smem_acct *a = r->acct;
    uint32_t s = a->site_of_pc[pc];
    if (s == UINT32_MAX) return;
    uint32_t w = t->tid / EMU_WARP, lane = t->tid % EMU_WARP;
    uint32_t k = a->occ[(size_t)t->tid * a->nsites + s]++;
    size_t ws = (size_t)w * a->nsites + s;
    if (k >= a->npend[ws]) {
        a->pend[ws] = emu_grow(a->pend[ws], &a->cappend[ws], k + 1, sizeof *a->pend[ws]);
        for (uint32_t i = a->npend[ws]; i <= k; i++) a->pend[ws][i].reported = 0, a->pend[ws][i].done = false;
        a->npend[ws] = k + 1;
    }
    smem_pending *p = &a->pend[ws][k];
    p->addr[lane] = off;
    p->reported |= 1u << lane;
    uint32_t in_warp = r->nth - w * EMU_WARP < EMU_WARP ? r->nth - w * EMU_WARP : EMU_WARP;
    if ((uint32_t)__builtin_popcount(p->reported) == in_warp) { /* every lane: done now */
        smem_finish(&a->sites[s], p->addr, p->reported);
        p->done = true;
    }
}

void emu_smem_sync_all(run *r) {
    for (uint32_t w0 = 0; w0 < r->nth; w0 += EMU_WARP)
        emu_smem_sync_warp(r->acct, w0 / EMU_WARP, w0, r->nth - w0 < EMU_WARP ? r->nth - w0 : EMU_WARP);
}

/* ldmatrix's rows: matrix i's 8 addresses are one group of 8 x 16 bytes. */
void emu_smem_ldmatrix(run *r, uint32_t pc, const uint64_t *addr, unsigned matrices) {
    smem_acct *a = r->acct;
    uint32_t s = a->site_of_pc[pc];
    if (s == UINT32_MAX) return;
    smem_site_run *site = &a->sites[s];
    site->count.instances++;
    for (unsigned i = 0; i < matrices; i++) {
        site->count.wavefronts += group_wavefronts(addr + LDMATRIX_ROWS * i, LDMATRIX_ROWS, LDMATRIX_ROW_BYTES);
        site->count.ideal++;
    }
}

void emu_smem_acct_free(smem_acct *a) {
    if (!a) return;
    for (size_t i = 0; i < (size_t)a->nwarps * a->nsites; i++) free(a->pend[i]);
    free(a->pend), free(a->npend), free(a->cappend), free(a->occ), free(a->sites), free(a->site_of_pc);
    free(a);
}

/* The accounting's state for kernel f with nth threads: a site per
 * instruction that may touch shared memory. NULL: out of memory. */
smem_acct *emu_smem_acct_new(const emu_func *f, uint32_t nth, emu_smem_stats *out) {
    smem_acct *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->out = out;
    a->nwarps = (nth + EMU_WARP - 1) / EMU_WARP;
    a->site_of_pc = malloc(((size_t)f->ncode + 1) * sizeof *a->site_of_pc);
    a->sites = calloc((size_t)f->ncode + 1, sizeof *a->sites);
    if (!a->site_of_pc || !a->sites) return emu_smem_acct_free(a), NULL;
    for (uint32_t pc = 0; pc < f->ncode; pc++) {
        const emu_inst *in = &f->code[pc];
        emu_smem_kind kind;
        uint32_t bytes;
        switch ((eop)in->op) {
        case EOP_LOAD: case EOP_STORE:
            kind = in->op == EOP_LOAD ? EMU_SMEM_LOAD : EMU_SMEM_STORE;
            bytes = (uint32_t)in->lanes * (uint32_t)ek_bytes[in->ek];
            break;
        case EOP_ATOMICRMW: case EOP_CMPXCHG: kind = EMU_SMEM_ATOMIC, bytes = (uint32_t)ek_bytes[in->ek]; break;
        case EOP_CPASYNC: kind = EMU_SMEM_CP_ASYNC, bytes = (uint32_t)in->imm; break;
        case EOP_LDMATRIX: kind = EMU_SMEM_LDMATRIX, bytes = LDMATRIX_ROW_BYTES; break;
        default: a->site_of_pc[pc] = UINT32_MAX; continue;
        }
        a->site_of_pc[pc] = a->nsites;
        a->sites[a->nsites++] = (smem_site_run){.pc = pc, .kind = kind, .bytes = bytes ? bytes : 1};
    }
    size_t ws = (size_t)a->nwarps * a->nsites + 1;
    a->occ = calloc((size_t)nth * a->nsites + 1, sizeof *a->occ);
    a->pend = calloc(ws, sizeof *a->pend);
    a->npend = calloc(ws, sizeof *a->npend);
    a->cappend = calloc(ws, sizeof *a->cappend);
    if (!a->occ || !a->pend || !a->npend || !a->cappend) return emu_smem_acct_free(a), NULL;
    return a;
}

/* Adds the run's counts to the caller's record: its totals, and a site
 * per instruction that touched shared memory (merged with the same
 * kernel's from earlier launches). */
void emu_smem_acct_publish(const smem_acct *a, const emu_func *f) {
    emu_smem_stats *o = a->out;
    for (uint32_t s = 0; s < a->nsites; s++) {
        const smem_site_run *site = &a->sites[s];
        if (!site->count.instances) continue;
        emu_smem_count *tot = &o->total[site->kind];
        tot->instances += site->count.instances, tot->wavefronts += site->count.wavefronts;
        tot->ideal += site->count.ideal;
        emu_smem_site *to = NULL;
        for (uint32_t i = 0; i < o->nsites && !to; i++)
            if (o->sites[i].pc == site->pc && !strcmp(o->sites[i].kernel, f->name)) to = &o->sites[i];
        if (!to) {
            o->sites = emu_grow(o->sites, &o->capsites, o->nsites + 1, sizeof *o->sites);
            to = &o->sites[o->nsites++];
            char *text = LLVMPrintValueToString(f->code[site->pc].src);
            *to = (emu_smem_site){.kernel = strdup(f->name), .pc = site->pc, .kind = site->kind,
                                  .bytes = site->bytes, .text = strdup(text + strspn(text, " "))};
            LLVMDisposeMessage(text);
            if (!to->kernel || !to->text) abort();
        }
        to->count.instances += site->count.instances, to->count.wavefronts += site->count.wavefronts;
        to->count.ideal += site->count.ideal;
    }
}

void emu_smem_stats_free(emu_smem_stats *s) {
    if (!s) return;
    for (uint32_t i = 0; i < s->nsites; i++) free(s->sites[i].kernel), free(s->sites[i].text);
    free(s->sites);
    memset(s, 0, sizeof *s);
}

const char *emu_smem_kind_name(emu_smem_kind k) {
    static const char *const names[EMU_SMEM_KINDS] = {"load", "store", "cp.async", "ldmatrix", "atomic"};
    return (unsigned)k < EMU_SMEM_KINDS ? names[k] : "?";
}

static double ratio(const emu_smem_count *c) { return c->ideal ? (double)c->wavefronts / (double)c->ideal : 1.0; }

size_t emu_smem_report(const emu_smem_stats *s, unsigned top, char *buf, size_t size) {
    size_t n = 0;
#define OUT(...) (n += (size_t)snprintf(n < size ? buf + n : NULL, n < size ? size - n : 0, __VA_ARGS__))
    bool any = false;
    for (int k = 0; k < EMU_SMEM_KINDS; k++) any = any || s->total[k].instances;
    OUT("shared memory: %s\n", any ? "kind, warp-level accesses, wavefronts / ideal" : "no accesses");
    for (int k = 0; k < EMU_SMEM_KINDS; k++) {
        const emu_smem_count *c = &s->total[k];
        if (!c->instances) continue;
        OUT("  %-9s %10llu  %llu / %llu (%.2fx)\n", emu_smem_kind_name((emu_smem_kind)k),
            (unsigned long long)c->instances, (unsigned long long)c->wavefronts, (unsigned long long)c->ideal, ratio(c));
    }
    /* the `top` sites with the most excess, by selection (few sites) */
    uint64_t prev = UINT64_MAX;
    uint32_t prev_i = UINT32_MAX;
    for (unsigned shown = 0; shown < top; shown++) {
        uint32_t best = UINT32_MAX;
        uint64_t best_x = 0;
        for (uint32_t i = 0; i < s->nsites; i++) {
            const emu_smem_count *c = &s->sites[i].count;
            uint64_t x = c->wavefronts - c->ideal;
            bool after_prev = x < prev || (x == prev && i > prev_i); /* below the last one shown */
            if (x && after_prev && (best == UINT32_MAX || x > best_x)) best = i, best_x = x;
        }
        if (best == UINT32_MAX) break;
        if (!shown) OUT("conflicted instructions (excess wavefronts):\n");
        const emu_smem_site *e = &s->sites[best];
        OUT("  %llu excess, %llu / %llu (%.2fx) in %llu %s of %u bytes a lane, kernel '%s' pc %u: %s\n",
            (unsigned long long)best_x, (unsigned long long)e->count.wavefronts, (unsigned long long)e->count.ideal,
            ratio(&e->count), (unsigned long long)e->count.instances, emu_smem_kind_name(e->kind), e->bytes, e->kernel,
            e->pc, e->text);
        prev = best_x, prev_i = best;
    }
#undef OUT
    if (size) buf[n < size ? n : size - 1] = 0;
    return n;
}
