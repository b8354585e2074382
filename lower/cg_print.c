/* cg_print.c - print and assert: vprintf and __assertfail calls, one per owned element.
 * A file of its own because it is one concern of code generation; the context and the
 * helpers the concern files share are in lower/codegen_internal.h. */
#include <stdio.h>
#include <string.h>

#include "lower/codegen_internal.h"

/* ---- print and assert ------------------------------------------------------
 * As CUDA's printf and assert compile: `vprintf(format, args)` with the
 * format a global constant and the arguments packed in a local buffer laid
 * out like a struct of C varargs (ints narrower than 32 bits widened,
 * floats as double, pointers as 64-bit integers printed 0x%llx), and
 * `__assertfail(message, file, line, function, 1)`, after which the
 * kernel traps and the driver reports CUDA_ERROR_ASSERT. ptxas knows both
 * as system calls. Each element goes once, from the thread that owns it
 * (element_owner); the lines are the interpreter's (runtime/interp.c),
 * in whatever order the threads reach them. */

static LLVMTypeRef generic_ptr(cg *c) { return LLVMPointerTypeInContext(c->ctx, 0); }

/* A NUL-terminated constant string in global memory, as a generic pointer. */
static LLVMValueRef global_string(cg *c, const char *s) {
    size_t n = strlen(s);
    LLVMValueRef init = LLVMConstStringInContext(c->ctx, s, (unsigned)n, false);
    /* named for the kernel: the driver merges kernels' PTX modules, where
     * each module's first string would be _$_str (LLVM numbers the rest) */
    size_t len = strlen(c->f->name) + sizeof ".str";
    char *name = TC_NEW_ARRAY(c->arena, char, len);
    snprintf(name, len, "%s.str", c->f->name);
    LLVMValueRef g = LLVMAddGlobalInAddressSpace(c->mod, LLVMTypeOf(init), name, NVPTX_ADDRSPACE_GLOBAL);
    LLVMSetInitializer(g, init);
    LLVMSetGlobalConstant(g, true);
    LLVMSetLinkage(g, LLVMPrivateLinkage);
    LLVMSetUnnamedAddress(g, LLVMGlobalUnnamedAddr);
    return LLVMBuildAddrSpaceCast(c->b, g, generic_ptr(c), "");
}

/* s with every '%' doubled: text inside a printf format. */
static void put_literal(tc_strbuf *out, const char *s) {
    for (; s && *s; s++) tc_strbuf_puts(out, *s == '%' ? "%%" : (char[2]){*s, 0});
}

static LLVMValueRef call_named(cg *c, const char *name, LLVMTypeRef ret, LLVMTypeRef *params, unsigned n,
                               LLVMValueRef *args) {
    LLVMTypeRef fty = LLVMFunctionType(ret, params, n, false);
    LLVMValueRef fn = LLVMGetNamedFunction(c->mod, name);
    if (!fn) fn = LLVMAddFunction(c->mod, name, fty);
    return LLVMBuildCall2(c->b, fty, fn, args, n, "");
}

/* One print or assert: its format string and argument buffer, made at
 * the first register and shared by the others (their arguments have the
 * same types), so a tile costs one buffer and one string. */
typedef struct printf_site {
    LLVMValueRef fmt, buf;
    LLVMTypeRef buf_type;
} printf_site;

/* vprintf(format, buffer of args[0..n)); the buffer is allocated in the
 * entry block so that loops reuse it. */
static void call_vprintf(cg *c, printf_site *site, const char *format, LLVMValueRef *args, unsigned n) {
    if (!site->fmt) {
        site->fmt = global_string(c, format);
        site->buf = LLVMConstNull(generic_ptr(c));
        if (n) {
            LLVMTypeRef *tys = TC_NEW_ARRAY(c->arena, LLVMTypeRef, n);
            for (unsigned i = 0; i < n; i++) tys[i] = LLVMTypeOf(args[i]);
            site->buf_type = LLVMStructTypeInContext(c->ctx, tys, n, false);
            LLVMBasicBlockRef here = LLVMGetInsertBlock(c->b);
            position_at_entry(c);
            site->buf = LLVMBuildAlloca(c->b, site->buf_type, "printf.args");
            LLVMPositionBuilderAtEnd(c->b, here);
        }
    }
    for (unsigned i = 0; i < n; i++)
        LLVMBuildStore(c->b, args[i], LLVMBuildStructGEP2(c->b, site->buf_type, site->buf, i, ""));
    LLVMTypeRef params[2] = {generic_ptr(c), generic_ptr(c)};
    LLVMValueRef call_args[2] = {site->fmt, site->buf};
    call_named(c, "vprintf", LLVMInt32TypeInContext(c->ctx), params, 2, call_args);
}

/* The program id and, for a tile, the element's index: format text
 * ("pid (%d, %d, %d) idx (%d)" for print, "program (...), idx (...)" for
 * assert, as the interpreter words them) and arguments; returns how many. */
static unsigned where_args(cg *c, const tir_type *t, uint32_t r, bool for_print, tc_strbuf *fmt, LLVMValueRef *args) {
    static const char *const ctaid[3] = {"llvm.nvvm.read.ptx.sreg.ctaid.x", "llvm.nvvm.read.ptx.sreg.ctaid.y",
                                         "llvm.nvvm.read.ptx.sreg.ctaid.z"};
    unsigned n = 0;
    tc_strbuf_puts(fmt, for_print ? "pid (%d, %d, %d)" : "program (%d, %d, %d)");
    for (int a = 0; a < 3; a++) args[n++] = sreg(c, ctaid[a]);
    if (t->rank) {
        tc_strbuf_puts(fmt, for_print ? " idx (" : ", idx (");
        for (unsigned td = 0; td < t->rank; td++) {
            tc_strbuf_puts(fmt, td ? ", %d" : "%d");
            args[n++] = tile_coord(c, t, r, td);
        }
        tc_strbuf_putc(fmt, ')');
    }
    return n;
}

/* A value as a vprintf argument, and its conversion. */
static LLVMValueRef printf_arg(cg *c, tir_elem e, LLVMValueRef v, tc_strbuf *fmt) {
    LLVMTypeRef i32 = LLVMInt32TypeInContext(c->ctx), i64 = LLVMInt64TypeInContext(c->ctx);
    switch (e) {
    case TIR_I1:
        tc_strbuf_puts(fmt, " %s");
        if (!c->str_true) c->str_true = global_string(c, "true"), c->str_false = global_string(c, "false");
        return LLVMBuildSelect(c->b, v, c->str_true, c->str_false, "");
    case TIR_I8: case TIR_I16: tc_strbuf_puts(fmt, " %d"); return LLVMBuildSExt(c->b, v, i32, "");
    case TIR_I32: tc_strbuf_puts(fmt, " %d"); return v;
    case TIR_I64: tc_strbuf_puts(fmt, " %lld"); return v;
    /* enough digits to tell any two values of the type apart */
    case TIR_F16: tc_strbuf_puts(fmt, " %.5g"); break;
    case TIR_BF16: tc_strbuf_puts(fmt, " %.4g"); break;
    case TIR_F32: tc_strbuf_puts(fmt, " %.9g"); break;
    case TIR_F64: tc_strbuf_puts(fmt, " %.17g"); return v;
    default: tc_strbuf_puts(fmt, " 0x%llx"); return LLVMBuildPtrToInt(c->b, v, i64, "");
    }
    return LLVMBuildFPExt(c->b, v, LLVMDoubleTypeInContext(c->ctx), "");
}

/* Runs emit for each register r of a tile of type t, with the predicate
 * of the thread owning its element (NULL: every thread owns its own). */
static void for_owned(cg *c, const tir_op *op, const tir_type *t,
                      void (*emit)(cg *c, const tir_op *op, uint32_t r, LLVMValueRef owner, printf_site *site)) {
    LLVMValueRef owner = element_owner(c, t);
    printf_site site = {0};
    uint32_t n = reg_count(t);
    for (uint32_t r = 0; r < n; r++) emit(c, op, r, owner, &site);
}

enum { CG_MAX_PRINTF_ARGS = 3 + TIR_MAX_RANK + TIR_MAX_OPERANDS };

static void print_element(cg *c, const tir_op *op, uint32_t r, LLVMValueRef owner, printf_site *site) {
    tir_type t = op->noperands ? op->operands[0]->type : tir_scalar(TIR_I32);
    LLVMBasicBlockRef next;
    guard_begin(c, owner, "dbg.then", "dbg.next", &next);
    tc_strbuf fmt;
    tc_strbuf_init(&fmt);
    LLVMValueRef args[CG_MAX_PRINTF_ARGS];
    unsigned n = where_args(c, &t, r, true, &fmt, args);
    if (op->attr.text[0]) {
        tc_strbuf_putc(&fmt, ' ');
        put_literal(&fmt, op->attr.text);
    }
    for (uint32_t i = 0; i < op->noperands; i++)
        args[n++] = printf_arg(c, tir_type_elem(op->operands[i]->type), reg(c, op->operands[i], r), &fmt);
    tc_strbuf_putc(&fmt, '\n');
    call_vprintf(c, site, fmt.data, args, n);
    tc_strbuf_free(&fmt);
    guard_end(c, next);
}

void gen_print(cg *c, const tir_op *op) {
    tir_type t = op->noperands ? op->operands[0]->type : tir_scalar(TIR_I32);
    for_owned(c, op, &t, print_element);
}

static void assert_element(cg *c, const tir_op *op, uint32_t r, LLVMValueRef owner, printf_site *site) {
    const tir_value *cond = op->operands[0];
    LLVMValueRef fail = LLVMBuildNot(c->b, reg(c, cond, r), "");
    if (owner) fail = LLVMBuildAnd(c->b, fail, owner, "");
    LLVMBasicBlockRef next;
    guard_begin(c, fail, "dbg.then", "dbg.next", &next);
    /* the interpreter's message, then CUDA's own */
    tc_strbuf fmt;
    tc_strbuf_init(&fmt);
    put_literal(&fmt, c->file);
    if (op->loc.line) tc_strbuf_printf(&fmt, ":%u:%u", op->loc.line, op->loc.col);
    tc_strbuf_puts(&fmt, ": assertion failed: ");
    put_literal(&fmt, op->attr.text);
    tc_strbuf_puts(&fmt, " (kernel '");
    put_literal(&fmt, c->f->name);
    tc_strbuf_puts(&fmt, "', ");
    LLVMValueRef args[CG_MAX_PRINTF_ARGS];
    unsigned n = where_args(c, &cond->type, r, false, &fmt, args);
    tc_strbuf_puts(&fmt, ")\n");
    call_vprintf(c, site, fmt.data, args, n);
    tc_strbuf_free(&fmt);
    LLVMTypeRef params[5] = {generic_ptr(c), generic_ptr(c), LLVMInt32TypeInContext(c->ctx), generic_ptr(c),
                             LLVMInt64TypeInContext(c->ctx)};
    LLVMValueRef fargs[5] = {global_string(c, op->attr.text), global_string(c, c->file), i32c(c, op->loc.line),
                             global_string(c, c->f->name), LLVMConstInt(LLVMInt64TypeInContext(c->ctx), 1, false)};
    call_named(c, "__assertfail", LLVMVoidTypeInContext(c->ctx), params, 5, fargs);
    guard_end(c, next);
}

void gen_assert(cg *c, const tir_op *op) { for_owned(c, op, &op->operands[0]->type, assert_element); }
