/* ptx_wgmma.h - the inline-asm contract for Hopper's warpgroup matrix
 * multiply (PTX ISA 9.7.15, "Asynchronous Warpgroup Level Matrix
 * Multiply-Accumulate"): the exact PTX text and LLVM constraint string
 * codegen emits for wgmma.mma_async, wgmma.fence, wgmma.commit_group and
 * wgmma.wait_group, defined once. LLVM 19 has no NVVM intrinsics for them.
 * The emulator (emu/wgmma.c) recognizes exactly these strings: it parses a
 * wgmma.mma_async text, rebuilds it here and compares, so any other
 * spelling, shape or type is refused by name. Header only: lower/ and emu/
 * both include it (lower/ never includes emu/).
 *
 * Operands of the wgmma.mma_async asm (ptx_wgmma_asm), in LLVM order:
 *   $0 .. $R-1     outputs: D, R = N/2 registers a thread (f32 "=f", or s32
 *                  "=r"); the asm returns them as a struct of R values
 *   $R .. $2R-1    the same registers as inputs, tied ("0" .. "R-1"): the
 *                  accumulator read when scale-d is true
 *   then A:        a 64-bit matrix descriptor ("l"), or four 32-bit
 *                  registers ("r", f16x2/bf16x2 pairs, tf32, or 4 x s8/u8,
 *                  lowest element in the low bits) holding the thread's
 *                  fragment (9.7.15.5.1.1)
 *   then B:        a 64-bit matrix descriptor ("l")
 *   then scale-d:  an i1 predicate ("b"): false, D = A*B; true, D = A*B + D
 * imm-scale-a/-b (floats) and imm-trans-a/-b (f16/bf16 only; trans-a only
 * with A in shared memory) are immediates written into the text.
 *
 * wgmma.wait_group has two forms: plain (PTX_WGMMA_SYNC_ASMS, clobbering
 * memory), and one that also passes k accumulator values through tied
 * operands (ptx_wgmma_wait_asm: "=f"x k or "=r"x k, then "0".."k-1"), so
 * LLVM cannot move their uses above the wait: uses must read the asm's
 * results. */
#ifndef TILEC_LOWER_PTX_WGMMA_H
#define TILEC_LOWER_PTX_WGMMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

/* The operand-free asms: name, PTX text, LLVM constraints. wgmma.wait_group
 * N waits until at most N committed groups are pending (N is 0..7). */
#define PTX_WGMMA_SYNC_ASMS(X)                                                  \
    X(FENCE, "wgmma.fence.sync.aligned;", "~{memory}")                          \
    X(COMMIT, "wgmma.commit_group.sync.aligned;", "~{memory}")                  \
    X(WAIT0, "wgmma.wait_group.sync.aligned 0;", "~{memory}")                   \
    X(WAIT1, "wgmma.wait_group.sync.aligned 1;", "~{memory}")                   \
    X(WAIT2, "wgmma.wait_group.sync.aligned 2;", "~{memory}")                   \
    X(WAIT3, "wgmma.wait_group.sync.aligned 3;", "~{memory}")                   \
    X(WAIT4, "wgmma.wait_group.sync.aligned 4;", "~{memory}")                   \
    X(WAIT5, "wgmma.wait_group.sync.aligned 5;", "~{memory}")                   \
    X(WAIT6, "wgmma.wait_group.sync.aligned 6;", "~{memory}")                   \
    X(WAIT7, "wgmma.wait_group.sync.aligned 7;", "~{memory}")

typedef enum ptx_wgmma_sync {
#define PTX_WGMMA_ENUM(name, text, cons) PTX_WGMMA_##name,
    PTX_WGMMA_SYNC_ASMS(PTX_WGMMA_ENUM)
#undef PTX_WGMMA_ENUM
    PTX_WGMMA_NSYNC
} ptx_wgmma_sync;

static const struct {
    const char *text, *cons;
} ptx_wgmma_sync_asms[PTX_WGMMA_NSYNC] = {
#define PTX_WGMMA_ROW(name, text, cons) {text, cons},
    PTX_WGMMA_SYNC_ASMS(PTX_WGMMA_ROW)
#undef PTX_WGMMA_ROW
};

enum {
    PTX_WGMMA_M = 64,
    PTX_WGMMA_MAX_N = 256,
    PTX_WGMMA_MAX_WAIT = 7,    /* wgmma.wait_group's largest N */
    PTX_WGMMA_MAX_TEXT = 2048, /* room for the longest text (N = 256) */
    PTX_WGMMA_MAX_CONS = 2048
};

/* The input element types this contract covers. The ISA's .f16 D, FP8
 * (.e4m3/.e5m2), .b1, .satfinite and the sparse forms are not in it. */
typedef enum ptx_wgmma_elem { PTX_WGMMA_F16, PTX_WGMMA_BF16, PTX_WGMMA_TF32, PTX_WGMMA_S8, PTX_WGMMA_U8 } ptx_wgmma_elem;

typedef struct ptx_wgmma_form {
    unsigned n;                /* N of m64nNkK */
    ptx_wgmma_elem a, b;       /* equal for floats; s8/u8 may mix */
    bool a_regs;               /* A in registers (else a descriptor) */
    int scale_a, scale_b;      /* 1 or -1 (floats; integers have none) */
    int trans_a, trans_b;      /* 0 (K-major) or 1 (MN-major): f16/bf16 only */
} ptx_wgmma_form;

static inline const char *ptx_wgmma_elem_name(ptx_wgmma_elem e) {
    static const char *const names[] = {"f16", "bf16", "tf32", "s8", "u8"};
    return names[e];
}
static inline bool ptx_wgmma_is_int(ptx_wgmma_elem e) { return e == PTX_WGMMA_S8 || e == PTX_WGMMA_U8; }
static inline unsigned ptx_wgmma_elem_bytes(ptx_wgmma_elem e) { return e == PTX_WGMMA_TF32 ? 4 : ptx_wgmma_is_int(e) ? 1 : 2; }
/* K: always 32 bytes of each row of A and column of B. */
static inline unsigned ptx_wgmma_k(const ptx_wgmma_form *f) { return 32 / ptx_wgmma_elem_bytes(f->a); }
/* D registers a thread holds: N/2 (f32 or s32). */
static inline unsigned ptx_wgmma_dregs(const ptx_wgmma_form *f) { return f->n / 2; }

/* Why form f is not valid PTX in this contract, or NULL (9.7.15.5.2's
 * syntax; 9.7.15.5.1.1's N: floats 8..256 by 8, integers 8..32 by 8 then
 * 48..256 by 16). */
static inline const char *ptx_wgmma_form_error(const ptx_wgmma_form *f) {
    bool fl = !ptx_wgmma_is_int(f->a);
    if (fl ? f->a != f->b : !ptx_wgmma_is_int(f->b)) return "A and B types that differ (only s8/u8 may mix)";
    if (f->n < 8 || f->n > PTX_WGMMA_MAX_N || f->n % 8) return "N outside 8..256 in steps of 8";
    if (!fl && f->n > 32 && f->n % 16) return "an integer N above 32 that is not a multiple of 16";
    if (fl ? (f->scale_a != 1 && f->scale_a != -1) || (f->scale_b != 1 && f->scale_b != -1)
           : f->scale_a != 1 || f->scale_b != 1)
        return "imm-scale other than 1 or -1 (integer forms have none)";
    bool half = f->a == PTX_WGMMA_F16 || f->a == PTX_WGMMA_BF16;
    if ((f->trans_a != 0 && f->trans_a != 1) || (f->trans_b != 0 && f->trans_b != 1)) return "imm-trans other than 0 or 1";
    if (!half && (f->trans_a || f->trans_b)) return "a transpose of a type other than f16/bf16";
    if (f->a_regs && f->trans_a) return "a transpose of A in registers";
    return NULL;
}

/* Appends to buf[size] at *at; false when it does not fit. */
static inline bool ptx_wgmma_put(char *buf, size_t size, size_t *at, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline bool ptx_wgmma_put(char *buf, size_t size, size_t *at, const char *fmt, ...) {
    if (*at >= size) return false;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *at, size - *at, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= size - *at) return false;
    *at += (size_t)n;
    return true;
}

/* The text and constraints of form f into text[tsize] and cons[csize];
 * false if the form is invalid (ptx_wgmma_form_error) or they do not fit. */
static inline bool ptx_wgmma_asm(const ptx_wgmma_form *f, char *text, size_t tsize, char *cons, size_t csize) {
    if (ptx_wgmma_form_error(f)) return false;
    unsigned r = ptx_wgmma_dregs(f), op = 2 * r; /* A's first operand: after D's outputs and tied inputs */
    bool fl = !ptx_wgmma_is_int(f->a), half = f->a == PTX_WGMMA_F16 || f->a == PTX_WGMMA_BF16;
    size_t at = 0, ct = 0;
    bool ok = ptx_wgmma_put(text, tsize, &at, "wgmma.mma_async.sync.aligned.m64n%uk%u.%s.%s.%s {", f->n, ptx_wgmma_k(f),
                            fl ? "f32" : "s32", ptx_wgmma_elem_name(f->a), ptx_wgmma_elem_name(f->b));
    for (unsigned i = 0; i < r; i++) ok = ok && ptx_wgmma_put(text, tsize, &at, "%s$%u", i ? ", " : "", i);
    if (f->a_regs) ok = ok && ptx_wgmma_put(text, tsize, &at, "}, {$%u, $%u, $%u, $%u}, $%u, $%u", op, op + 1, op + 2,
                                            op + 3, op + 4, op + 5);
    else ok = ok && ptx_wgmma_put(text, tsize, &at, "}, $%u, $%u, $%u", op, op + 1, op + 2);
    if (fl) ok = ok && ptx_wgmma_put(text, tsize, &at, ", %d, %d", f->scale_a, f->scale_b);
    if (half && f->a_regs) ok = ok && ptx_wgmma_put(text, tsize, &at, ", %d", f->trans_b);
    if (half && !f->a_regs) ok = ok && ptx_wgmma_put(text, tsize, &at, ", %d, %d", f->trans_a, f->trans_b);
    ok = ok && ptx_wgmma_put(text, tsize, &at, ";");
    for (unsigned i = 0; i < r; i++) ok = ok && ptx_wgmma_put(cons, csize, &ct, "%s%s", i ? "," : "", fl ? "=f" : "=r");
    for (unsigned i = 0; i < r; i++) ok = ok && ptx_wgmma_put(cons, csize, &ct, ",%u", i);
    return ok && ptx_wgmma_put(cons, csize, &ct, "%s,l,b", f->a_regs ? ",r,r,r,r" : ",l");
}

/* wgmma.wait_group.sync.aligned `wait` passing k values of constraint
 * letter `reg` ('f': f32, 'r': s32) through: their outputs are the values
 * to use after the wait. The text is PTX_WGMMA_WAIT<wait>'s. */
static inline bool ptx_wgmma_wait_asm(unsigned wait, unsigned k, char reg, char *cons, size_t csize) {
    if (wait > PTX_WGMMA_MAX_WAIT || !k || (reg != 'f' && reg != 'r')) return false;
    size_t at = 0;
    bool ok = true;
    for (unsigned i = 0; i < k; i++) ok = ok && ptx_wgmma_put(cons, csize, &at, "%s=%c", i ? "," : "", reg);
    for (unsigned i = 0; i < k; i++) ok = ok && ptx_wgmma_put(cons, csize, &at, ",%u", i);
    return ok && ptx_wgmma_put(cons, csize, &at, ",~{memory}");
}

/* A matrix descriptor (9.7.15.5.1.2.2): the start address, leading and
 * stride dimension byte offsets (bytes, multiples of 16; the start is the
 * shared-window offset ptrtoint gives), base offset, swizzle mode (0 none,
 * 1 128B, 2 64B, 3 32B). */
static inline uint64_t ptx_wgmma_desc(uint64_t start, uint64_t lbo, uint64_t sbo, unsigned base, unsigned swizzle) {
    return ((start & 0x3FFFF) >> 4) | ((lbo & 0x3FFFF) >> 4) << 16 | ((sbo & 0x3FFFF) >> 4) << 32 |
           (uint64_t)(base & 7) << 49 | (uint64_t)(swizzle & 3) << 62;
}

#endif
