/* async.c - Hopper's asynchronous copies in the emulator: mbarrier objects
 * (PTX ISA, "mbarrier"), bulk and bulk tensor copies completing on them
 * ("cp.async.bulk", "cp.async.bulk.tensor"; "Tensors": tile mode, bounding
 * box, swizzling modes), bulk stores and their groups, "fence.proxy.async",
 * "setmaxnreg", and the emulator's
 * tensor map format with its encoder.
 *
 * The model. An mbarrier's state lives here, beside shared memory (its 8
 * bytes hold a picture of it for a reader: pending arrivals in bytes 0..3,
 * the tx-count's low 21 bits in bytes 4..6's low bits, the current phase's
 * parity in bit 63). A bulk load reads its source when it is issued and
 * lands (writes shared memory, then complete_tx on its mbarrier) only when
 * a thread waits on that mbarrier's phase and the phase is not complete
 * without it: the latest moment the ISA allows, so a kernel that reads
 * before waiting reads poison and is told. A failed try_wait/test_wait
 * parks the thread at that instruction until its mbarrier changes; when no
 * thread can run and some are parked, the kernel would hang on the GPU and
 * the emulator reports the deadlock. A bulk store reads shared memory and
 * writes global memory when issued; its source stays "being read" until a
 * wait_group.read covers its group. setmaxnreg moves registers between a
 * warpgroup and the CTA's pool; an .inc the pool cannot pay for parks its
 * threads the same way (the rules: above setmaxnreg, below). */
#include "emu/emu_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower/ptx_async.h"

enum {
    MBAR_BYTES = 8,
    MBAR_MAX_COUNT = (1 << 20) - 1, /* the ISA's range of the expected arrival count: 1 .. 2^20 - 1 */
    MBAR_MAX_TX = (1 << 20) - 1,    /* and of the tx-count: -(2^20 - 1) .. 2^20 - 1 */
    ASYNC_MAX_MBARS = 4096,         /* live mbarriers of a CTA: a runaway guard */
    ASYNC_MAX_INFLIGHT = 4096,      /* bulk copies in flight in a CTA: a runaway guard */
    BULK_ALIGN = 16,                /* cp.async.bulk: size, source and destination */
    TENSOR_SMEM_ALIGN = 128,        /* cp.async.bulk.tensor's shared address */
    TENSOR_MAX_BOX = 256,           /* cuTensorMapEncodeTiled: boxDim[i] <= 256 */
    TENSOR_MAX_ESTRIDE = 8,
    TENSOR_STRIDE_ALIGN = 16,
    TENSOR_COORD_ALIGN = 16, /* bytes: where a box starts along the innermost dim (below) */
    TMAP_MAGIC = 0x4d544d45, /* "EMTM" */
    WARPGROUP = 128,
    SETMAXNREG_MIN = 24,
    SETMAXNREG_MAX = 256,
    SETMAXNREG_STEP = 8,
    REGISTER_FILE = 65536, /* 32-bit registers of an SM: all a CTA's threads and its pool may hold */
    LIST_THREADS = 8 /* thread ids a deadlock message names per barrier */
};
#define TENSOR_MAX_DIM (UINT64_C(1) << 32)
#define TENSOR_MAX_STRIDE (UINT64_C(1) << 40)

/* what a shared byte is part of, beside the race check's shadow */
enum { AM_MBAR = 1, AM_LANDING = 2, AM_READING = 4, AM_UNFENCED = 8 };

typedef struct mbar {
    uint64_t off;
    uint32_t expected, pending, phases; /* phases: completed so far; parity = phases & 1 */
    int32_t tx;
    uint32_t version; /* changes with its state, and when a copy on it is issued */
    uint32_t inflight;
} mbar;

typedef struct bulk {
    uint64_t off, size; /* shared bytes written (load) or read (store) */
    uint64_t mbar;      /* load: its mbarrier's offset */
    uint8_t *data;      /* load: the bytes to land, in their final layout */
    uint32_t tid, group;
    bool store;
} bulk;

typedef struct athread {
    uint64_t park_mbar;
    uint32_t park_version, park_parity;
    uint32_t tw_pc, tw_version; /* the last test_wait that failed, and the mbarrier's version then */
    uint64_t tw_mbar;
    bool tw_failed;
    uint32_t arrivals;        /* mbarrier arrivals so far: releases its reads (rclock) */
    uint64_t unf_lo, unf_hi;  /* shared bytes it wrote that no fence.proxy.async followed */
    uint32_t committed;       /* bulk groups committed: the open group's number */
    uint32_t nregs;           /* setmaxnreg executed */
    bool park_nreg;           /* parked at a setmaxnreg.inc the pool cannot pay for yet (not at an mbarrier) */
} athread;

typedef struct nreg_rec {
    uint32_t pc, value; /* value: the count, | 0x10000 for .inc */
    bool applied;       /* the registers moved (by the warpgroup's first thread to get through) */
} nreg_rec;

struct emu_async {
    uint8_t *amap;    /* AM_* per shared byte */
    uint32_t *rclock; /* per shared byte: its last reader's arrivals when it read */
    mbar *mb;
    uint32_t nmb, capmb;
    bulk *bk;
    uint32_t nbk, capbk;
    athread *at;
    nreg_rec **wg; /* per warpgroup, the setmaxnreg its threads execute, in order */
    uint32_t *nwg, *capwg, nwgs;
    uint32_t *wg_regs; /* per warpgroup, the registers each of its threads owns */
    uint32_t pool;     /* the CTA's free registers, which setmaxnreg.dec gives and .inc takes */
};

/* The ops that need the async state: this file's, and wgmma's, which
 * reads shared memory through the async proxy (the fence check). */
static bool is_async(const emu_inst *in) { return in->op == EOP_ASYNC || eop_is_warpgroup(in->op); }

struct emu_async *emu_async_new(const run *r) {
    bool any = false;
    for (uint32_t i = 0; i < r->f->ncode && !any; i++) any = is_async(&r->f->code[i]);
    if (!any) return NULL;
    struct emu_async *a = calloc(1, sizeof *a);
    uint32_t nwg = (r->nth + WARPGROUP - 1) / WARPGROUP;
    if (!a) abort();
    a->amap = calloc(r->shared_size + 1, 1);
    a->rclock = calloc(r->shared_size + 1, sizeof *a->rclock);
    a->at = calloc(r->nth, sizeof *a->at);
    a->wg = calloc(nwg, sizeof(nreg_rec *));
    a->nwg = calloc(nwg, sizeof *a->nwg);
    a->capwg = calloc(nwg, sizeof *a->capwg);
    a->wg_regs = calloc(nwg, sizeof *a->wg_regs);
    a->nwgs = nwg;
    if (!a->amap || !a->rclock || !a->at || !a->wg || !a->nwg || !a->capwg || !a->wg_regs) abort();
    return a;
}

static void drop_bulks(struct emu_async *a) {
    for (uint32_t i = 0; i < a->nbk; i++) free(a->bk[i].data);
    a->nbk = 0;
}

void emu_async_free(struct emu_async *a) {
    if (!a) return;
    drop_bulks(a);
    for (uint32_t w = 0; a->nwg && w < a->nwgs; w++) free(a->wg[w]);
    free(a->amap), free(a->rclock), free(a->mb), free(a->bk), free(a->at), free(a->wg), free(a->nwg), free(a->capwg);
    free(a->wg_regs);
    free(a);
}

void emu_async_cta_begin(run *r) {
    struct emu_async *a = r->async;
    memset(a->amap, 0, r->shared_size);
    memset(a->rclock, 0, r->shared_size * sizeof *a->rclock);
    memset(a->at, 0, r->nth * sizeof *a->at);
    a->nmb = 0;
    drop_bulks(a);
    for (uint32_t w = 0; w < (r->nth + WARPGROUP - 1) / WARPGROUP; w++) a->nwg[w] = 0, a->wg_regs[w] = r->f->maxnreg;
    a->pool = 0;
}

/* ---- mbarrier state ---- */

static mbar *find_mbar(struct emu_async *a, uint64_t off) {
    for (uint32_t i = 0; i < a->nmb; i++)
        if (a->mb[i].off == off) return &a->mb[i];
    return NULL;
}

/* The picture of the state in the object's bytes (see the header comment). */
static void show_mbar(run *r, const mbar *m) {
    uint64_t w = (uint64_t)m->pending | (uint64_t)((uint32_t)m->tx & 0x1fffff) << 32 | (uint64_t)(m->phases & 1) << 63;
    memcpy(r->shared + m->off, &w, MBAR_BYTES);
    for (uint64_t b = m->off; b < m->off + MBAR_BYTES; b++)
        r->sh[b].wep = r->epoch, r->sh[b].wt = ASYNC_WRITER, r->sh[b].wmask = 0; /* readable by anyone, no race */
}

static void changed(run *r, mbar *m) {
    m->version++;
    show_mbar(r, m);
}

/* A phase completes when its arrivals are all in and its tx-count is back
 * to zero; the next phase starts with the expected count and no tx. */
static void maybe_complete(run *r, mbar *m) {
    if (m->pending == 0 && m->tx == 0) {
        m->phases++;
        m->pending = m->expected;
    }
    changed(r, m);
}

/* The live mbarrier at tagged shared address p (else an error naming op). */
static mbar *mbar_at(run *r, thread *t, const emu_inst *in, uint64_t p, const char *op) {
    if (p >> REGION_SHIFT != REGION_SHARED)
        return emu_fail(r, t, in, "%s on %#llx, which is not in shared memory", op, (unsigned long long)p), NULL;
    uint64_t off = p & OFFSET_MASK;
    if (off % MBAR_BYTES)
        return emu_fail(r, t, in, "%s on shared byte %llu: an mbarrier is 8-byte aligned", op, (unsigned long long)off), NULL;
    if (off + MBAR_BYTES > r->shared_size)
        return emu_fail(r, t, in, "%s on shared byte %llu, past shared memory's %llu bytes", op, (unsigned long long)off,
                        (unsigned long long)r->shared_size),
               NULL;
    mbar *m = find_mbar(r->async, off);
    if (!m)
        emu_fail(r, t, in, "%s on shared byte %llu, which holds no initialized mbarrier (mbarrier.init first)", op,
                 (unsigned long long)off);
    return m;
}

static bool add_tx(run *r, thread *t, const emu_inst *in, mbar *m, int64_t d, const char *op) {
    int64_t v = (int64_t)m->tx + d;
    if (v > MBAR_MAX_TX || v < -MBAR_MAX_TX)
        return emu_fail(r, t, in, "%s takes the tx-count of the mbarrier at shared byte %llu to %lld, outside the ISA's range "
                                  "(limit is +-%d)",
                        op, (unsigned long long)m->off, (long long)v, MBAR_MAX_TX);
    m->tx = (int32_t)v;
    return true;
}

static bool arrive(run *r, thread *t, const emu_inst *in, mbar *m, const char *op) {
    if (m->pending == 0)
        return emu_fail(r, t, in, "%s: more arrivals than the %u the mbarrier at shared byte %llu expects in its phase %u "
                                  "(its tx-count, %d, keeps the phase open)",
                        op, m->expected, (unsigned long long)m->off, m->phases, m->tx);
    m->pending--;
    r->async->at[t->tid].arrivals++;
    maybe_complete(r, m);
    return true;
}

static bool phase_done(const mbar *m, uint32_t parity) { return (m->phases & 1) != parity; }

/* ---- bulk copies ---- */

static bool land(run *r, thread *t, const emu_inst *in, uint32_t i) {
    struct emu_async *a = r->async;
    bulk c = a->bk[i];
    memmove(&a->bk[i], &a->bk[i + 1], (a->nbk - i - 1) * sizeof *a->bk);
    a->nbk--;
    memcpy(r->shared + c.off, c.data, c.size);
    free(c.data);
    for (uint64_t b = c.off; b < c.off + c.size; b++) {
        a->amap[b] &= (uint8_t)~(AM_LANDING | AM_UNFENCED);
        r->sh[b].wep = r->epoch, r->sh[b].wt = ASYNC_WRITER, r->sh[b].wmask = 0;
    }
    mbar *m = find_mbar(a, c.mbar);
    m->inflight--;
    if (!add_tx(r, t, in, m, -(int64_t)c.size, "a bulk copy's complete_tx")) return false;
    maybe_complete(r, m);
    return true;
}

/* Checks the shared bytes a bulk load will write, marks them in flight and
 * poisons them. */
static bool claim(run *r, thread *t, const emu_inst *in, uint64_t off, uint64_t size) {
    struct emu_async *a = r->async;
    for (uint64_t b = off; b < off + size; b++) {
        uint8_t f = a->amap[b];
        if (f & AM_LANDING)
            return emu_fail(r, t, in, "a race between bulk copies: two copies in flight write byte %llu of shared memory",
                            (unsigned long long)b);
        if (f & AM_MBAR)
            return emu_fail(r, t, in, "a bulk copy over byte %llu of shared memory, which holds a live mbarrier",
                            (unsigned long long)b);
        if (f & AM_READING)
            return emu_fail(r, t, in, "a bulk copy writes byte %llu of shared memory, which a bulk store is still reading",
                            (unsigned long long)b);
        const shadow *s = &r->sh[b];
        if (f & AM_UNFENCED) /* generic then async proxy on one byte: ordered only by a proxy fence */
            return emu_fail(r, t, in,
                            "a bulk copy writes byte %llu of shared memory, which %s%u wrote through the generic proxy with "
                            "no fence.proxy.async.shared::cta after it",
                            (unsigned long long)b, s->wt == RACE_MANY ? "several threads, among them thread " : "thread ",
                            s->wt == RACE_MANY ? 0u : s->wt);
        if (s->rt != t->tid && s->rt != RACE_MANY && !emu_ordered(r, t, s->rep, s->rmask) &&
            a->rclock[b] == a->at[s->rt].arrivals)
            return emu_fail(r, t, in,
                            "a data race in shared memory: a bulk copy writes byte %llu, which thread %u read and has "
                            "not released since (no mbarrier arrival, no barrier)",
                            (unsigned long long)b, s->rt);
    }
    /* the copy may land any time from now: over bytes a wgmma still reads
     * (its group not waited for) that is a race with the tensor cores */
    if (r->wgmma && !emu_wgmma_check_write(r, t, in, off, size)) return false;
    for (uint64_t b = off; b < off + size; b++) a->amap[b] |= AM_LANDING;
    memset(r->shared + off, POISON_BYTE, size);
    return true;
}

static bool issue_load(run *r, thread *t, const emu_inst *in, uint64_t off, uint64_t size, uint8_t *data, mbar *m) {
    struct emu_async *a = r->async;
    if (a->nbk == ASYNC_MAX_INFLIGHT) {
        free(data);
        return emu_fail(r, t, in, "too many bulk copies in flight (limit is %d)", ASYNC_MAX_INFLIGHT);
    }
    if (!claim(r, t, in, off, size)) {
        free(data);
        return false;
    }
    a->bk = emu_grow(a->bk, &a->capbk, a->nbk + 1, sizeof *a->bk);
    a->bk[a->nbk++] = (bulk){.off = off, .size = size, .mbar = m->off, .data = data, .tid = t->tid};
    m->inflight++;
    m->version++; /* a waiter may now land it */
    return true;
}

/* The shared destination of a copy: offset, checked. */
static bool shared_range(run *r, thread *t, const emu_inst *in, uint64_t p, uint64_t size, uint64_t align, const char *what,
                         uint64_t *off) {
    if (p >> REGION_SHIFT != REGION_SHARED)
        return emu_fail(r, t, in, "%s at %#llx, which is not in shared memory", what, (unsigned long long)p);
    *off = p & OFFSET_MASK;
    if (*off % align)
        return emu_fail(r, t, in, "%s at shared byte %llu: it must be %llu-byte aligned", what, (unsigned long long)*off,
                        (unsigned long long)align);
    if (*off > r->shared_size || size > r->shared_size - *off)
        return emu_fail(r, t, in, "%s of %llu bytes at shared byte %llu, past shared memory's %llu bytes", what,
                        (unsigned long long)size, (unsigned long long)*off, (unsigned long long)r->shared_size);
    return true;
}

static bool bulk_g2s(run *r, thread *t, const emu_inst *in, const uint64_t *op) {
    uint64_t size = (uint32_t)op[2], off;
    if (size == 0 || size % BULK_ALIGN)
        return emu_fail(r, t, in, "cp.async.bulk of %llu bytes: the size must be a nonzero multiple of %d",
                        (unsigned long long)size, BULK_ALIGN);
    if (!shared_range(r, t, in, op[0], size, BULK_ALIGN, "cp.async.bulk's destination", &off)) return false;
    mbar *m = mbar_at(r, t, in, op[3], "cp.async.bulk's mbarrier");
    if (!m) return false;
    if (op[1] >> REGION_SHIFT == REGION_SHARED || op[1] >> REGION_SHIFT == REGION_LOCAL)
        return emu_fail(r, t, in, "cp.async.bulk's source is not in global memory");
    const uint8_t *src = emu_mem(r, t, in, op[1], size, BULK_ALIGN, ACC_READ);
    if (!src) return false;
    uint8_t *data = malloc(size);
    if (!data) abort();
    memcpy(data, src, size);
    return issue_load(r, t, in, off, size, data, m);
}

/* ---- tensor maps ---- */

typedef struct tmap {
    uint32_t magic;
    uint8_t rank, elem, swizzle, reserved;
    uint64_t addr;
    uint64_t dim[EMU_TENSOR_MAX_RANK];
    uint64_t stride[EMU_TENSOR_MAX_RANK - 1];
    uint32_t box[EMU_TENSOR_MAX_RANK];
    uint32_t estride[EMU_TENSOR_MAX_RANK];
} tmap;
_Static_assert(sizeof(tmap) == EMU_TENSOR_MAP_BYTES, "the tensor map is 128 bytes");

uint64_t emu_buffer_address(const emu_buffer *buffers, uint32_t index, uint64_t offset) {
    return make_ptr(index + 1, (uintptr_t)buffers[index].data % BUFFER_BIAS_MOD + offset);
}

static unsigned swizzle_span(unsigned sw) { return sw == EMU_SWIZZLE_NONE ? 0 : 16u << sw; }

/* The checks of a map's fields (the encoder's; the copy repeats them on
 * the map it reads, which the kernel could have overwritten). */
static bool check_map(const tmap *m, char *err, size_t n) {
    if (m->rank < 1 || m->rank > EMU_TENSOR_MAX_RANK)
        return snprintf(err, n, "tensor rank %u (limit is 1..%d)", m->rank, EMU_TENSOR_MAX_RANK), false;
    if (m->elem != 1 && m->elem != 2 && m->elem != 4 && m->elem != 8)
        return snprintf(err, n, "element size %u bytes (1, 2, 4 or 8)", m->elem), false;
    if (m->addr % TENSOR_STRIDE_ALIGN)
        return snprintf(err, n, "global address %#llx is not %d-byte aligned", (unsigned long long)m->addr,
                        TENSOR_STRIDE_ALIGN),
               false;
    if (m->swizzle > EMU_SWIZZLE_128B) return snprintf(err, n, "swizzle mode %u", m->swizzle), false;
    for (unsigned i = 0; i < m->rank; i++) {
        if (m->dim[i] == 0 || m->dim[i] > TENSOR_MAX_DIM)
            return snprintf(err, n, "global dimension %u is %llu (limit is 1..2^32)", i, (unsigned long long)m->dim[i]),
                   false;
        if (i && (m->stride[i - 1] == 0 || m->stride[i - 1] % TENSOR_STRIDE_ALIGN || m->stride[i - 1] >= TENSOR_MAX_STRIDE))
            return snprintf(err, n, "global stride of dimension %u is %llu bytes (a nonzero multiple of %d below 2^40)", i,
                            (unsigned long long)m->stride[i - 1], TENSOR_STRIDE_ALIGN),
                   false;
        if (m->box[i] == 0 || m->box[i] > TENSOR_MAX_BOX)
            return snprintf(err, n, "box dimension %u is %u (limit is 1..%d)", i, m->box[i], TENSOR_MAX_BOX), false;
        if (m->estride[i] == 0 || m->estride[i] > TENSOR_MAX_ESTRIDE)
            return snprintf(err, n, "element stride %u is %u (limit is 1..%d)", i, m->estride[i], TENSOR_MAX_ESTRIDE), false;
        if (m->estride[i] != 1)
            return snprintf(err, n, "element stride %u is %u: the emulator copies element strides of 1 only", i,
                            m->estride[i]),
                   false;
    }
    uint64_t inner = (uint64_t)m->box[0] * m->elem;
    if (inner % TENSOR_STRIDE_ALIGN)
        return snprintf(err, n, "the inner box dimension is %llu bytes (a multiple of %d)", (unsigned long long)inner,
                        TENSOR_STRIDE_ALIGN),
               false;
    unsigned span = swizzle_span(m->swizzle);
    if (span && inner > span)
        return snprintf(err, n, "the inner box dimension is %llu bytes, over the swizzle span (limit is %u)",
                        (unsigned long long)inner, span),
               false;
    if (span && inner != span)
        return snprintf(err, n,
                        "the inner box dimension is %llu bytes with a %u-byte swizzle: the emulator lays out inner boxes "
                        "of exactly the span only",
                        (unsigned long long)inner, span),
               false;
    return true;
}

bool emu_tensor_map_encode(void *map, const emu_tensor_map_desc *d, char *err, size_t err_size) {
    snprintf(err, err_size, "%s", "");
    if ((uintptr_t)map % EMU_TENSOR_MAP_ALIGN)
        return snprintf(err, err_size, "emu_tensor_map_encode: the map is not %d-byte aligned", EMU_TENSOR_MAP_ALIGN), false;
    if (d->rank < 1 || d->rank > EMU_TENSOR_MAX_RANK)
        return snprintf(err, err_size, "emu_tensor_map_encode: tensor rank %u (limit is 1..%d)", d->rank, EMU_TENSOR_MAX_RANK),
               false;
    if (d->elem_bytes > 8 || (unsigned)d->swizzle > EMU_SWIZZLE_128B)
        return snprintf(err, err_size, "emu_tensor_map_encode: element size %u bytes, swizzle %d", d->elem_bytes, d->swizzle),
               false;
    tmap m = {.magic = TMAP_MAGIC, .rank = (uint8_t)d->rank, .elem = (uint8_t)d->elem_bytes, .swizzle = (uint8_t)d->swizzle,
              .addr = d->global_address};
    for (unsigned i = 0; i < d->rank; i++) {
        m.dim[i] = d->global_dim[i];
        if (i) m.stride[i - 1] = d->global_stride[i - 1];
        m.box[i] = d->box_dim[i];
        m.estride[i] = d->element_stride[i] ? d->element_stride[i] : 1;
    }
    char msg[256];
    if (!check_map(&m, msg, sizeof msg)) return snprintf(err, err_size, "emu_tensor_map_encode: %s", msg), false;
    memcpy(map, &m, sizeof m);
    return true;
}

static bool read_map(run *r, thread *t, const emu_inst *in, uint64_t p, tmap *m) {
    uint32_t region = (uint32_t)(p >> REGION_SHIFT);
    if (region == REGION_SHARED || region == REGION_LOCAL)
        return emu_fail(r, t, in, "a tensor map at %#llx: the emulator reads tensor maps from global memory",
                        (unsigned long long)p);
    const uint8_t *b = emu_mem(r, t, in, p, EMU_TENSOR_MAP_BYTES, EMU_TENSOR_MAP_ALIGN, ACC_READ);
    if (!b) return false;
    memcpy(m, b, sizeof *m);
    char msg[256];
    if (m->magic != TMAP_MAGIC) return emu_fail(r, t, in, "the tensor map at %#llx is not one emu_tensor_map_encode made", (unsigned long long)p);
    if (!check_map(m, msg, sizeof msg)) return emu_fail(r, t, in, "a bad tensor map: %s", msg);
    return true;
}

/* The box's elements, innermost first: calls fn for each run of box[0]
 * elements (one box row) with its global coordinates. */
typedef struct box_walk {
    const tmap *m;
    int64_t start[EMU_TENSOR_MAX_RANK];
    uint64_t rows, row_bytes, total;
} box_walk;

static void box_init(box_walk *w, const tmap *m, const uint64_t *coords) {
    w->m = m;
    w->rows = 1;
    for (unsigned i = 0; i < m->rank; i++) {
        w->start[i] = (int32_t)coords[i]; /* tensor coordinates are .s32 */
        if (i) w->rows *= m->box[i];
    }
    w->row_bytes = (uint64_t)m->box[0] * m->elem;
    w->total = w->rows * w->row_bytes;
}

/* A tensor copy whose box starts along the innermost dim at a byte offset
 * that is not a multiple of 16 (coordinate times element size) is an
 * illegal instruction on the GPU: seen on an H200 on 2026-11-29 (f16
 * coordinates 1, 2, 4, 12, 20, 36, 60 and 100 trapped; 0, 8, 16, 32, 40,
 * 64, 72, 96, 104, 128, 200 and 256 copied), and stated for TMA copies in
 * Triton's TMA tutorial ("the innermost coordinate must be 16-byte
 * aligned"). Other dims' coordinates are free. */
static bool coord_aligned(run *r, thread *t, const emu_inst *in, const box_walk *w, const char *what) {
    int64_t bytes = w->start[0] * (int64_t)w->m->elem;
    if (bytes % TENSOR_COORD_ALIGN == 0) return true;
    return emu_fail(r, t, in,
                    "%s: the box starts %lld elements (%lld bytes) into the innermost dim, not a multiple of %d bytes: "
                    "an illegal instruction on the GPU",
                    what, (long long)w->start[0], (long long)bytes, TENSOR_COORD_ALIGN);
}

/* Row `row` of the box: whether any of it is in bounds; *lo..*hi its
 * in-bounds elements, *src the global address of element lo. */
static bool box_row(const box_walk *w, uint64_t row, uint64_t *lo, uint64_t *hi, uint64_t *src) {
    const tmap *m = w->m;
    uint64_t addr = m->addr;
    for (unsigned i = 1; i < m->rank; i++) {
        int64_t g = w->start[i] + (int64_t)(row % m->box[i]);
        row /= m->box[i];
        if (g < 0 || (uint64_t)g >= m->dim[i]) return false;
        addr += (uint64_t)g * m->stride[i - 1];
    }
    int64_t g0 = w->start[0], l = g0 < 0 ? -g0 : 0, h = (int64_t)m->dim[0] - g0;
    if (h > (int64_t)m->box[0]) h = m->box[0];
    if (l >= h) return false;
    *lo = (uint64_t)l, *hi = (uint64_t)h;
    *src = addr + (uint64_t)(g0 + l) * m->elem;
    return true;
}

/* Where byte `lin` of the unswizzled box, placed at shared offset off, goes. */
static uint64_t swizzled(uint64_t off, uint64_t lin, unsigned sw) {
    uint64_t a = off + lin;
    unsigned span = swizzle_span(sw);
    if (!span) return a;
    return a ^ (((a >> 7) & (span / 16 - 1)) << 4);
}

static bool tensor_g2s(run *r, thread *t, const emu_inst *in, const uint64_t *op, unsigned rank) {
    tmap m;
    if (!read_map(r, t, in, op[1], &m)) return false;
    if (m.rank != rank)
        return emu_fail(r, t, in, "a %ud tensor copy with a tensor map of rank %u", rank, m.rank);
    box_walk w;
    box_init(&w, &m, op + 3);
    if (!coord_aligned(r, t, in, &w, "cp.async.bulk.tensor (global to shared)")) return false;
    uint64_t off;
    if (!shared_range(r, t, in, op[0], w.total, TENSOR_SMEM_ALIGN, "cp.async.bulk.tensor's destination", &off)) return false;
    mbar *mb = mbar_at(r, t, in, op[2], "cp.async.bulk.tensor's mbarrier");
    if (!mb) return false;
    uint8_t *data = calloc(1, w.total); /* out-of-bounds elements: zeros */
    if (!data) abort();
    for (uint64_t row = 0; row < w.rows; row++) {
        uint64_t lo, hi, src;
        if (!box_row(&w, row, &lo, &hi, &src)) continue;
        const uint8_t *s = emu_mem(r, t, in, src, (hi - lo) * m.elem, m.elem, ACC_READ);
        if (!s) {
            free(data);
            return false;
        }
        for (uint64_t b = 0; b < (hi - lo) * m.elem; b++)
            data[swizzled(off, row * w.row_bytes + lo * m.elem + b, m.swizzle) - off] = s[b];
    }
    return issue_load(r, t, in, off, w.total, data, mb);
}

/* ---- the async proxy reading shared memory; bulk stores ---- */

bool emu_async_proxy_read(run *r, const thread *t, const emu_inst *in, uint64_t off, uint64_t size) {
    struct emu_async *a = r->async;
    for (uint64_t b = off; b < off + size; b++) {
        const shadow *s = &r->sh[b];
        uint8_t f = a ? a->amap[b] : 0;
        if (f & AM_LANDING)
            return emu_fail(r, t, in, "an async-proxy read of byte %llu of shared memory, which a bulk copy is still writing",
                            (unsigned long long)b);
        if (s->wep == 0 || s->wep < r->cta_epoch)
            return emu_fail(r, t, in, "an async-proxy read of byte %llu of shared memory, which no thread of this CTA wrote",
                            (unsigned long long)b);
        if (s->wt == ASYNC_WRITER) continue;
        if (f & AM_UNFENCED)
            return emu_fail(r, t, in,
                            "an async-proxy read of byte %llu of shared memory, which %s%u wrote without a "
                            "fence.proxy.async.shared::cta after it",
                            (unsigned long long)b, s->wt == RACE_MANY ? "several threads, among them thread " : "thread ",
                            s->wt == RACE_MANY ? 0u : s->wt);
        if (s->wt == CP_IN_FLIGHT)
            return emu_fail(r, t, in, "an async-proxy read of byte %llu of shared memory, which a cp.async is still writing",
                            (unsigned long long)b);
        if (s->wt != t->tid && !emu_ordered(r, t, s->wep, s->wmask))
            return emu_fail(r, t, in,
                            "a data race in shared memory: an async-proxy read of byte %llu, which %s wrote since the last "
                            "barrier",
                            (unsigned long long)b, s->wt == RACE_MANY ? "several threads" : "another thread");
    }
    return true;
}

static bool tensor_s2g(run *r, thread *t, const emu_inst *in, const uint64_t *op, unsigned rank) {
    struct emu_async *a = r->async;
    tmap m;
    if (!read_map(r, t, in, op[0], &m)) return false;
    if (m.rank != rank)
        return emu_fail(r, t, in, "a %ud tensor store with a tensor map of rank %u", rank, m.rank);
    box_walk w;
    box_init(&w, &m, op + 2);
    if (!coord_aligned(r, t, in, &w, "cp.async.bulk.tensor (shared to global)")) return false;
    uint64_t off;
    if (!shared_range(r, t, in, op[1], w.total, TENSOR_SMEM_ALIGN, "cp.async.bulk.tensor's source", &off)) return false;
    if (!emu_async_proxy_read(r, t, in, off, w.total)) return false;
    if (a->nbk == ASYNC_MAX_INFLIGHT) return emu_fail(r, t, in, "too many bulk copies in flight (limit is %d)", ASYNC_MAX_INFLIGHT);
    for (uint64_t row = 0; row < w.rows; row++) { /* out-of-bounds elements are not written */
        uint64_t lo, hi, dst;
        if (!box_row(&w, row, &lo, &hi, &dst)) continue;
        uint8_t *d = emu_mem(r, t, in, dst, (hi - lo) * m.elem, m.elem, ACC_WRITE);
        if (!d) return false;
        for (uint64_t b = 0; b < (hi - lo) * m.elem; b++)
            d[b] = r->shared[swizzled(off, row * w.row_bytes + lo * m.elem + b, m.swizzle)];
    }
    for (uint64_t b = off; b < off + w.total; b++) a->amap[b] |= AM_READING;
    a->bk = emu_grow(a->bk, &a->capbk, a->nbk + 1, sizeof *a->bk);
    a->bk[a->nbk++] = (bulk){.off = off, .size = w.total, .tid = t->tid, .group = a->at[t->tid].committed, .store = true};
    return true;
}

/* Ends the reads of this thread's bulk stores in groups below `before`. */
static void stores_read(run *r, const thread *t, uint32_t before) {
    struct emu_async *a = r->async;
    uint32_t keep = 0;
    for (uint32_t i = 0; i < a->nbk; i++) {
        bulk *c = &a->bk[i];
        if (c->store && c->tid == t->tid && c->group < before) {
            for (uint64_t b = c->off; b < c->off + c->size; b++) a->amap[b] &= (uint8_t)~AM_READING;
            continue;
        }
        a->bk[keep++] = *c;
    }
    a->nbk = keep;
    for (uint32_t i = 0; i < a->nbk; i++) /* stores overlapping a kept one keep their marks */
        if (a->bk[i].store)
            for (uint64_t b = a->bk[i].off; b < a->bk[i].off + a->bk[i].size; b++) a->amap[b] |= AM_READING;
}

/* ---- fences ---- */

/* fence.proxy.async.shared::cta orders this thread's generic-proxy accesses
 * to shared memory before its later async-proxy ones (and, through a
 * barrier, before other threads'): its writes so far may be read by bulk
 * stores (and wgmma). */
static void fence_proxy_async(run *r, const thread *t) {
    struct emu_async *a = r->async;
    athread *at = &a->at[t->tid];
    for (uint64_t b = at->unf_lo; b < at->unf_hi; b++)
        if ((a->amap[b] & AM_UNFENCED) && (r->sh[b].wt == t->tid || r->sh[b].wt == RACE_MANY))
            a->amap[b] &= (uint8_t)~AM_UNFENCED;
    at->unf_lo = at->unf_hi = 0;
}

/* ---- setmaxnreg ----
 * The rules kept here (PTX ISA, "setmaxnreg"). The operand is a register
 * count a thread, 24..256 in steps of 8. It is .sync.aligned: all four
 * warps of a warpgroup execute the same setmaxnreg, so a warpgroup's
 * threads always own the same count. That count starts as the kernel's
 * register count at launch, which the instruction needs known at entry
 * (.maxnreg; in NVVM IR the "maxnreg" annotation): without it ptxas drops
 * setmaxnreg (C7508, it cannot tell the count at entry), so the emulator
 * refuses it. Each CTA has a pool of free registers, empty at launch.
 * .dec n gives up registers: n is at most the current count, and the
 * warpgroup's 128 x (count - n) go to the pool. .inc n asks for them: n is
 * at least the current count, 128 x (n - count) come out of the pool, and
 * the instruction blocks until the pool holds that many; if nothing will
 * ever put them there the kernel hangs, which the emulator reports as a
 * deadlock naming the waiting warpgroups. Only .dec fills the pool (the
 * ISA gives no other way: warps that exit do not hand theirs over). Here
 * the warpgroup's first thread through a setmaxnreg moves the registers
 * for the warpgroup; the others go through after it, or park with it. The
 * warpgroups' registers and the pool together never exceed an SM's 64K
 * register file (they cannot while these rules hold: checked anyway). */

/* The CTA's registers fit the register file (false: the error reported). */
static bool regs_fit(run *r, thread *t, const emu_inst *in) {
    const struct emu_async *a = r->async;
    uint64_t held = 0;
    for (uint32_t w = 0; w < a->nwgs; w++) held += (uint64_t)a->wg_regs[w] * WARPGROUP;
    if (held + a->pool <= REGISTER_FILE) return true;
    return emu_fail(r, t, in,
                    "setmaxnreg: the CTA's warpgroups own %llu registers and its pool %u, more than the register file's %d "
                    "(%u threads, maxnreg %u at launch)",
                    (unsigned long long)held, a->pool, REGISTER_FILE, r->nth, r->f->maxnreg);
}

/* 1: done; 0: the thread parks (an .inc the pool cannot pay for yet); -1: an error */
static int setmaxnreg(run *r, thread *t, const emu_inst *in, bool inc) {
    struct emu_async *a = r->async;
    uint32_t n = (uint32_t)t->r[in->a], pc = (uint32_t)(in - r->f->code);
    const char *op = inc ? "setmaxnreg.inc" : "setmaxnreg.dec";
    if (n < SETMAXNREG_MIN || n > SETMAXNREG_MAX || n % SETMAXNREG_STEP)
        return emu_fail(r, t, in, "%s.sync.aligned.u32 %u: the count must be a multiple of %d in %d..%d", op, n,
                        SETMAXNREG_STEP, SETMAXNREG_MIN, SETMAXNREG_MAX),
               -1;
    if (r->nth % WARPGROUP)
        return emu_fail(r, t, in, "%s in a CTA of %u threads: it is executed by whole warpgroups of %d", op, r->nth, WARPGROUP),
               -1;
    if (!r->f->maxnreg)
        return emu_fail(r, t, in,
                        "%s in a kernel without a maxnreg annotation: setmaxnreg needs the register count at entry "
                        "(.maxnreg), and ptxas ignores it without one (C7508: unable to determine register count at entry)",
                        op),
               -1;
    athread *at = &a->at[t->tid];
    uint32_t w = t->tid / WARPGROUP, k = at->nregs;
    nreg_rec **lists = a->wg;
    if (k == a->nwg[w]) { /* the first thread of the warpgroup to get here */
        lists[w] = emu_grow(lists[w], &a->capwg[w], k + 1, sizeof **lists);
        lists[w][k] = (nreg_rec){pc, n | (inc ? 0x10000u : 0), false};
        a->nwg[w]++;
    }
    nreg_rec *e = &lists[w][k];
    if (e->pc != pc || e->value != (n | (inc ? 0x10000u : 0)))
        return emu_fail(r, t, in,
                        "%s.sync.aligned: threads of warpgroup %u execute different setmaxnreg (this thread's %u-th is at "
                        "pc %u with %u; another's at pc %u with %u)",
                        op, w, k + 1, pc, n, e->pc, e->value & 0xffff),
               -1;
    if (!e->applied) {
        uint32_t cur = a->wg_regs[w];
        if (!regs_fit(r, t, in)) return -1;
        if (!inc && n > cur)
            return emu_fail(r, t, in,
                            "setmaxnreg.dec %u in warpgroup %u, whose threads own %u registers: .dec only lowers the count "
                            "(setmaxnreg.inc to raise it)",
                            n, w, cur),
                   -1;
        if (inc && n < cur)
            return emu_fail(r, t, in,
                            "setmaxnreg.inc %u in warpgroup %u, whose threads own %u registers: .inc only raises the count "
                            "(setmaxnreg.dec to lower it)",
                            n, w, cur),
                   -1;
        uint32_t moved = (inc ? n - cur : cur - n) * WARPGROUP;
        if (inc && a->pool < moved) { /* waits until a .dec fills the pool */
            at->park_nreg = true;
            return 0;
        }
        a->pool = inc ? a->pool - moved : a->pool + moved;
        a->wg_regs[w] = n;
        e->applied = true;
        if (!regs_fit(r, t, in)) return -1;
    }
    at->park_nreg = false;
    at->nregs++;
    return 1;
}

/* What the setmaxnreg.inc warpgroup w's threads park at asks of the pool. */
static uint32_t nreg_asks(const struct emu_async *a, uint32_t w, uint32_t k) {
    const nreg_rec *e = &a->wg[w][k];
    return e->applied ? 0 : ((e->value & 0xffff) - a->wg_regs[w]) * WARPGROUP;
}

/* ---- hooks ---- */

int emu_async_asm_kind(const char *text, size_t tl, const char *cons, size_t cl, unsigned *noperands) {
    static const struct {
        const char *text, *cons;
    } rows[] = {
#define ROW(name, t, c) {t, c},
        PTX_ASYNC_ASMS(ROW)
#undef ROW
    };
    for (int i = 0; i < PTX_ASYNC_COUNT; i++) {
        if (strlen(rows[i].text) != tl || memcmp(rows[i].text, text, tl) || strlen(rows[i].cons) != cl ||
            memcmp(rows[i].cons, cons, cl))
            continue;
        unsigned n = 0; /* input operands: constraints without '=' or '~' */
        for (const char *c = rows[i].cons; *c;) {
            if (*c != '=' && *c != '~') n++;
            c += strcspn(c, ",");
            c += *c == ',';
        }
        *noperands = n;
        return i;
    }
    return -1;
}

int emu_async_exec(run *r, thread *t, const emu_inst *in) {
    struct emu_async *a = r->async;
    if (in->sub == ASYNC_SETMAXNREG_INC || in->sub == ASYNC_SETMAXNREG_DEC)
        return setmaxnreg(r, t, in, in->sub == ASYNC_SETMAXNREG_INC);
    uint64_t op[16];
    for (uint32_t i = 0; i < in->naux && i < 16; i++) op[i] = t->r[r->f->aux[in->aux + i]];
    bool ok = true;
    switch ((ptx_async_asm)in->sub) {
    case PTX_ASYNC_MBAR_INIT: {
        if (op[0] >> REGION_SHIFT != REGION_SHARED)
            return emu_fail(r, t, in, "mbarrier.init on %#llx, which is not in shared memory", (unsigned long long)op[0]), -1;
        uint64_t off = op[0] & OFFSET_MASK;
        uint32_t count = (uint32_t)op[1];
        if (off % MBAR_BYTES || off + MBAR_BYTES > r->shared_size)
            return emu_fail(r, t, in, "mbarrier.init on shared byte %llu: an mbarrier is 8 bytes, 8-byte aligned, in shared memory",
                            (unsigned long long)off),
                   -1;
        if (count < 1 || count > MBAR_MAX_COUNT)
            return emu_fail(r, t, in, "mbarrier.init with count %u (limit is 1..%d)", count, MBAR_MAX_COUNT), -1;
        if (find_mbar(a, off))
            return emu_fail(r, t, in, "mbarrier.init of the live mbarrier at shared byte %llu (mbarrier.inval it first)",
                            (unsigned long long)off),
                   -1;
        for (uint64_t b = off; b < off + MBAR_BYTES; b++)
            if (a->amap[b] & (AM_LANDING | AM_READING))
                return emu_fail(r, t, in, "mbarrier.init over shared byte %llu, which a bulk copy in flight uses", (unsigned long long)b), -1;
        if (a->nmb == ASYNC_MAX_MBARS) return emu_fail(r, t, in, "too many live mbarriers (limit is %d)", ASYNC_MAX_MBARS), -1;
        a->mb = emu_grow(a->mb, &a->capmb, a->nmb + 1, sizeof *a->mb);
        mbar *m = &a->mb[a->nmb++];
        *m = (mbar){.off = off, .expected = count, .pending = count};
        memset(a->amap + off, AM_MBAR, MBAR_BYTES);
        changed(r, m);
        break;
    }
    case PTX_ASYNC_MBAR_INVAL: {
        mbar *m = mbar_at(r, t, in, op[0], "mbarrier.inval");
        if (!m) return -1;
        if (m->inflight)
            return emu_fail(r, t, in, "mbarrier.inval of the mbarrier at shared byte %llu with %u bulk copies in flight on it",
                            (unsigned long long)m->off, m->inflight),
                   -1;
        for (uint64_t b = m->off; b < m->off + MBAR_BYTES; b++) a->amap[b] &= (uint8_t)~AM_MBAR;
        *m = a->mb[--a->nmb];
        break;
    }
    case PTX_ASYNC_MBAR_ARRIVE: {
        mbar *m = mbar_at(r, t, in, op[0], "mbarrier.arrive");
        ok = m && arrive(r, t, in, m, "mbarrier.arrive");
        break;
    }
    case PTX_ASYNC_MBAR_ARRIVE_EXPECT_TX: {
        mbar *m = mbar_at(r, t, in, op[0], "mbarrier.arrive.expect_tx");
        ok = m && add_tx(r, t, in, m, (uint32_t)op[1], "mbarrier.arrive.expect_tx") &&
             arrive(r, t, in, m, "mbarrier.arrive.expect_tx");
        break;
    }
    case PTX_ASYNC_MBAR_EXPECT_TX: {
        mbar *m = mbar_at(r, t, in, op[0], "mbarrier.expect_tx");
        ok = m && add_tx(r, t, in, m, (uint32_t)op[1], "mbarrier.expect_tx");
        if (ok) changed(r, m);
        break;
    }
    case PTX_ASYNC_MBAR_TRY_WAIT_PARITY:
    case PTX_ASYNC_MBAR_TEST_WAIT_PARITY: {
        const char *name = in->sub == PTX_ASYNC_MBAR_TRY_WAIT_PARITY ? "mbarrier.try_wait.parity" : "mbarrier.test_wait.parity";
        mbar *m = mbar_at(r, t, in, op[0], name);
        if (!m) return -1;
        if (op[1] > 1) return emu_fail(r, t, in, "%s with phase parity %llu (0 or 1)", name, (unsigned long long)op[1]), -1;
        uint32_t parity = (uint32_t)op[1];
        /* the copies on this mbarrier land now, oldest first, until the phase completes */
        for (uint32_t i = 0; i < a->nbk && !phase_done(m, parity);) {
            if (a->bk[i].store || a->bk[i].mbar != m->off) {
                i++;
                continue;
            }
            if (!land(r, t, in, i)) return -1;
            m = find_mbar(a, op[0] & OFFSET_MASK);
        }
        if (!phase_done(m, parity)) {
            athread *at = &a->at[t->tid];
            uint32_t pc = (uint32_t)(in - r->f->code);
            if (in->sub == PTX_ASYNC_MBAR_TEST_WAIT_PARITY &&
                !(at->tw_failed && at->tw_pc == pc && at->tw_mbar == m->off && at->tw_version == m->version)) {
                /* test_wait does not wait: false, unless the thread asks again with nothing changed (a spin) */
                at->tw_failed = true, at->tw_pc = pc, at->tw_mbar = m->off, at->tw_version = m->version;
                t->r[in->dst] = 0;
                break;
            }
            at->park_mbar = m->off, at->park_version = m->version, at->park_parity = parity;
            return 0;
        }
        t->r[in->dst] = 1;
        break;
    }
    case PTX_ASYNC_BULK_G2S: ok = bulk_g2s(r, t, in, op); break;
    case PTX_ASYNC_TENSOR_G2S_1D: case PTX_ASYNC_TENSOR_G2S_2D: case PTX_ASYNC_TENSOR_G2S_3D:
    case PTX_ASYNC_TENSOR_G2S_4D: case PTX_ASYNC_TENSOR_G2S_5D:
        ok = tensor_g2s(r, t, in, op, (unsigned)(in->sub - PTX_ASYNC_TENSOR_G2S_1D + 1));
        break;
    case PTX_ASYNC_TENSOR_S2G_1D: case PTX_ASYNC_TENSOR_S2G_2D: case PTX_ASYNC_TENSOR_S2G_3D:
    case PTX_ASYNC_TENSOR_S2G_4D: case PTX_ASYNC_TENSOR_S2G_5D:
        ok = tensor_s2g(r, t, in, op, (unsigned)(in->sub - PTX_ASYNC_TENSOR_S2G_1D + 1));
        break;
    case PTX_ASYNC_BULK_COMMIT: a->at[t->tid].committed++; break;
    case PTX_ASYNC_BULK_WAIT_READ: {
        uint32_t c = a->at[t->tid].committed;
        if (op[0] < c) stores_read(r, t, c - (uint32_t)op[0]);
        break;
    }
    case PTX_ASYNC_FENCE_PROXY_ASYNC: fence_proxy_async(r, t); break;
    case PTX_ASYNC_FENCE_MBAR_INIT:
        /* orders this thread's mbarrier.init before later accesses to the
         * mbarriers by other threads of the cluster (and the async proxy);
         * the emulator runs one CTA, in order: nothing to do */
        break;
    default: return emu_fail(r, t, in, "internal: async operation %u", in->sub), -1;
    }
    return ok ? 1 : -1;
}

bool emu_async_access(run *r, thread *t, const emu_inst *in, uint64_t off, uint64_t size, access acc) {
    struct emu_async *a = r->async;
    athread *at = &a->at[t->tid];
    for (uint64_t b = off; b < off + size; b++) {
        uint8_t f = a->amap[b];
        if (acc == ACC_READ) {
            if (f & AM_LANDING)
                return emu_fail(r, t, in, "a read of byte %llu of shared memory, which a bulk copy is still writing (wait on its "
                                          "mbarrier first)",
                                (unsigned long long)b);
            a->rclock[b] = at->arrivals;
            continue;
        }
        if (f & AM_LANDING)
            return emu_fail(r, t, in, "a race with a bulk copy: a write to byte %llu of shared memory, which a bulk copy in "
                                      "flight writes",
                            (unsigned long long)b);
        if (f & AM_MBAR)
            return emu_fail(r, t, in, "a write to byte %llu of shared memory, which holds a live mbarrier (mbarrier.inval it "
                                      "first)",
                            (unsigned long long)b);
        if (f & AM_READING)
            return emu_fail(r, t, in, "a write to byte %llu of shared memory, which a bulk store is still reading "
                                      "(cp.async.bulk.wait_group.read first)",
                            (unsigned long long)b);
        a->amap[b] = f | AM_UNFENCED;
    }
    if (acc != ACC_READ) {
        if (at->unf_lo == at->unf_hi) at->unf_lo = off, at->unf_hi = off + size;
        if (off < at->unf_lo) at->unf_lo = off;
        if (off + size > at->unf_hi) at->unf_hi = off + size;
    }
    return true;
}

bool emu_async_wake(run *r) {
    struct emu_async *a = r->async;
    bool woke = false;
    for (uint32_t i = 0; i < r->nth; i++) {
        thread *t = &r->th[i];
        if (t->state != T_PARK) continue;
        if (a->at[i].park_nreg) { /* at a setmaxnreg.inc: the pool can pay now */
            if (a->pool >= nreg_asks(a, i / WARPGROUP, a->at[i].nregs)) t->state = T_RUN, woke = true;
            continue;
        }
        const mbar *m = find_mbar(a, a->at[i].park_mbar);
        if (!m || m->version != a->at[i].park_version) t->state = T_RUN, woke = true;
    }
    return woke;
}

static void list_threads(char *buf, size_t n, const uint32_t *ids, uint32_t count) {
    size_t k = strlen(buf);
    for (uint32_t i = 0; i < count && i < LIST_THREADS && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%u", i ? ", " : "", ids[i]);
    if (count > LIST_THREADS && k < n) snprintf(buf + k, n - k, " and %u more", count - LIST_THREADS);
}

bool emu_async_deadlock(run *r) {
    struct emu_async *a = r->async;
    char msg[1200] = "a deadlock (the kernel would hang on the GPU): no thread can go on. ";
    uint32_t *ids = malloc(r->nth * sizeof *ids), first = UINT32_MAX;
    if (!ids) abort();
    bool *seen = calloc(r->nth, 1);
    if (!seen) abort();
    for (uint32_t i = 0; i < r->nth; i++) { /* warpgroups at a setmaxnreg.inc the pool cannot pay for */
        if (r->th[i].state != T_PARK || !a->at[i].park_nreg || seen[i]) continue;
        if (first == UINT32_MAX) first = i;
        uint32_t w = i / WARPGROUP, n = 0, k = a->at[i].nregs;
        for (uint32_t j = i; j < (w + 1) * WARPGROUP; j++)
            if (r->th[j].state == T_PARK && a->at[j].park_nreg) ids[n++] = j, seen[j] = true;
        const nreg_rec *e = &a->wg[w][k];
        size_t len = strlen(msg);
        snprintf(msg + len, sizeof msg - len,
                 "Warpgroup %u (threads %u..%u; %u of them parked) waits at setmaxnreg.inc %u: it asks %u registers "
                 "(%d x (%u - %u)) and the CTA's pool holds %u. ",
                 w, w * WARPGROUP, w * WARPGROUP + WARPGROUP - 1, n, e->value & 0xffff, nreg_asks(a, w, k), WARPGROUP,
                 e->value & 0xffff, a->wg_regs[w], a->pool);
    }
    for (uint32_t i = 0; i < r->nth; i++) {
        if (r->th[i].state != T_PARK || seen[i]) continue;
        if (first == UINT32_MAX) first = i;
        uint64_t off = a->at[i].park_mbar;
        uint32_t par = a->at[i].park_parity, n = 0;
        for (uint32_t j = i; j < r->nth; j++)
            if (r->th[j].state == T_PARK && !seen[j] && !a->at[j].park_nreg && a->at[j].park_mbar == off &&
                a->at[j].park_parity == par)
                ids[n++] = j, seen[j] = true;
        size_t k = strlen(msg);
        snprintf(msg + k, sizeof msg - k, "Thread%s ", n > 1 ? "s" : "");
        list_threads(msg, sizeof msg, ids, n);
        const mbar *m = find_mbar(a, off);
        k = strlen(msg);
        if (m)
            snprintf(msg + k, sizeof msg - k,
                     " wait%s for the phase of parity %u of the mbarrier at shared byte %llu (phase %u in progress: %u of %u "
                     "arrivals pending, tx-count %d). ",
                     n > 1 ? "" : "s", par, (unsigned long long)off, m->phases, m->pending, m->expected, m->tx);
    }
    uint32_t n = 0, done = 0;
    for (uint32_t i = 0; i < r->nth; i++) {
        if (r->th[i].state == T_WAIT) ids[n++] = i;
        done += r->th[i].state == T_DONE;
    }
    size_t k = strlen(msg);
    if (n) {
        snprintf(msg + k, sizeof msg - k, "Waiting at a barrier or collective: thread%s ", n > 1 ? "s" : "");
        list_threads(msg, sizeof msg, ids, n);
        k = strlen(msg);
        snprintf(msg + k, sizeof msg - k, ". ");
        emu_describe_barriers(r, msg, sizeof msg);
        k = strlen(msg);
    }
    if (done) snprintf(msg + k, sizeof msg - k, "%u thread%s exited.", done, done > 1 ? "s" : "");
    thread *t = &r->th[first];
    free(ids), free(seen);
    return emu_fail(r, t, &r->f->code[t->pc], "%s", msg);
}

bool emu_async_cta_end(run *r) {
    struct emu_async *a = r->async;
    for (uint32_t i = 0; i < a->nbk; i++) {
        const bulk *c = &a->bk[i];
        if (c->store)
            return emu_fail(r, &r->th[c->tid], NULL,
                            "the CTA ended with a bulk store still reading shared bytes %llu..%llu "
                            "(cp.async.bulk.wait_group.read 0 before exiting)",
                            (unsigned long long)c->off, (unsigned long long)(c->off + c->size - 1));
        return emu_fail(r, &r->th[c->tid], NULL,
                        "the CTA ended with a bulk copy into shared bytes %llu..%llu in flight (no thread waited on its "
                        "mbarrier at shared byte %llu)",
                        (unsigned long long)c->off, (unsigned long long)(c->off + c->size - 1), (unsigned long long)c->mbar);
    }
    for (uint32_t i = 0; i < r->nth; i++) {
        uint32_t w = i / WARPGROUP;
        if (a->at[i].nregs != a->nwg[w])
            return emu_fail(r, &r->th[i], NULL,
                            "setmaxnreg is .sync.aligned: every thread of warpgroup %u executes it; this one executed %u of "
                            "its %u",
                            w, a->at[i].nregs, a->nwg[w]);
    }
    return true;
}
