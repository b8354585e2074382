/* Unit tests for backend/ptx alone: arch names, PTX emission from a small
 * hand-built LLVM module, finding ptxas, and running it (a real one when
 * installed, and fake ones written here that fail, print or write nothing,
 * so every error path runs without CUDA). The environment variables the
 * search reads are set and restored around each case. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <llvm-c/IRReader.h>

#include "backend/ptx/ptx.h"

enum { TEST_PATH_MAX = 4096 };

/* ---- environment save/restore ----------------------------------------- */
typedef struct saved_env {
    const char *name;
    char *value; /* NULL: was unset */
} saved_env;

static const char *const env_names[] = {"TILEC_PTXAS", "CUDA_HOME", "PATH", "TMPDIR"};
enum { NENV = sizeof env_names / sizeof env_names[0] };

static void env_save(saved_env *s) {
    for (int i = 0; i < NENV; i++) {
        const char *v = getenv(env_names[i]);
        s[i].name = env_names[i];
        s[i].value = v ? strdup(v) : NULL;
    }
}

static void env_restore(saved_env *s) {
    for (int i = 0; i < NENV; i++) {
        if (s[i].value) setenv(s[i].name, s[i].value, 1);
        else unsetenv(s[i].name);
        free(s[i].value);
    }
}

/* ---- scratch folders and fake tools ------------------------------------ */
static void make_tmpdir(char *buf, size_t n) {
    snprintf(buf, n, "/tmp/tilec-ptx-test-XXXXXX");
    assert_non_null(mkdtemp(buf));
}

static void write_script(const char *path, const char *body) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\n%s\n", body);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(path, 0755), 0);
}

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static void remove_tree(const char *dir) {
    char cmd[TEST_PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* No child may be left behind (no zombie, nothing still running). */
static void assert_no_children(void) {
    errno = 0;
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

/* ---- arch names ---------------------------------------------------------- */
static void test_arch_valid(void **state) {
    (void)state;
    const char *good[] = {"sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) assert_true(ptx_arch_valid(good[i]));
    const char *bad[] = {"", "sm_75", "sm_8", "sm_800", "sm_90b", "SM_80", "compute_80", "sm_80 "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) assert_false(ptx_arch_valid(bad[i]));
    assert_false(ptx_arch_valid(NULL));
}

/* ---- PTX emission -------------------------------------------------------- */
/* kernel k(float addrspace(1)* p) { *p = 1.0f; } marked as a kernel. */
static LLVMModuleRef tiny_kernel(LLVMContextRef ctx, bool broken) {
    LLVMModuleRef m = LLVMModuleCreateWithNameInContext("t", ctx);
    LLVMSetTarget(m, "nvptx64-nvidia-cuda");
    LLVMSetDataLayout(m, "e-i64:64-i128:128-v16:16-v32:32-n16:32:64");
    LLVMTypeRef pty = LLVMPointerTypeInContext(ctx, 1);
    LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), &pty, 1, false);
    LLVMValueRef fn = LLVMAddFunction(m, "k", fty);
    LLVMMetadataRef md[3] = {LLVMValueAsMetadata(fn), LLVMMDStringInContext2(ctx, "kernel", 6),
                             LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(ctx), 1, false))};
    LLVMAddNamedMetadataOperand(m, "nvvm.annotations", LLVMMetadataAsValue(ctx, LLVMMDNodeInContext2(ctx, md, 3)));
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
    LLVMBuildStore(b, LLVMConstReal(LLVMFloatTypeInContext(ctx), 1.0), LLVMGetParam(fn, 0));
    if (!broken) LLVMBuildRetVoid(b); /* broken: a block without a terminator */
    LLVMDisposeBuilder(b);
    return m;
}

static void test_emit_tiny_kernel(void **state) {
    (void)state;
    for (int opt = 0; opt <= 2; opt += 2) {
        LLVMContextRef ctx = LLVMContextCreate();
        LLVMModuleRef m = tiny_kernel(ctx, false);
        tc_diag d;
        tc_diag_init(&d);
        tc_strbuf ptx;
        tc_strbuf_init(&ptx);
        assert_true(ptx_emit(m, "sm_90", opt, &ptx, &d));
        assert_int_equal(d.nerrors, 0);
        assert_non_null(strstr(ptx.data, ".target sm_90"));
        assert_non_null(strstr(ptx.data, ".visible .entry k("));
        assert_non_null(strstr(ptx.data, "st.global.")); /* a constant goes out as its bits (u32) */
        tc_strbuf_free(&ptx);
        tc_diag_free(&d);
        LLVMDisposeModule(m);
        LLVMContextDispose(ctx);
    }
}

static void test_emit_rejects_invalid_ir(void **state) {
    (void)state;
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef m = tiny_kernel(ctx, true);
    tc_diag d;
    tc_diag_init(&d);
    tc_strbuf ptx;
    tc_strbuf_init(&ptx);
    assert_false(ptx_emit(m, "sm_80", 2, &ptx, &d));
    assert_int_equal(d.nerrors, 1);
    assert_non_null(strstr(d.out.data, "invalid LLVM IR"));
    tc_strbuf_free(&ptx);
    tc_diag_free(&d);
    LLVMDisposeModule(m);
    LLVMContextDispose(ctx);
}

/* ---- the pass pipeline --------------------------------------------------- */
static LLVMModuleRef parse_ir(LLVMContextRef ctx, const char *text) {
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(text, strlen(text), "t.ll");
    LLVMModuleRef m = NULL;
    char *err = NULL;
    if (LLVMParseIRInContext(ctx, buf, &m, &err)) fail_msg("IR: %s", err); /* takes buf */
    return m;
}

/* pred on the module text parses to. */
static bool on_module(const char *text, bool (*pred)(LLVMModuleRef)) {
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef m = parse_ir(ctx, text);
    bool r = pred(m);
    LLVMDisposeModule(m);
    LLVMContextDispose(ctx);
    return r;
}

static bool wants_slp(const char *body) {
    char text[1024];
    snprintf(text, sizeof text,
             "target triple = \"nvptx64-nvidia-cuda\"\n"
             "declare bfloat @llvm.fma.bf16(bfloat, bfloat, bfloat)\n"
             "define void @k(ptr addrspace(1) %%p, half %%h, bfloat %%b, i16 %%s, float %%f, i1 %%c) {\n"
             "%s\n  ret void\n}\n",
             body);
    return on_module(text, ptx_wants_slp);
}

/* The SLP vectorizer runs where the simplified module has 16- or 8-bit
 * arithmetic (what it pairs: add.rn.f16x2 and the like), not for f32 math
 * whose results are only converted to f16 (layernorm's, softmax's, the
 * matmul's epilogue: the same PTX without it, at a fraction of the time). */
static void test_wants_slp(void **state) {
    (void)state;
    assert_true(wants_slp("  %x = fadd half %h, %h\n  store half %x, ptr addrspace(1) %p"));
    assert_true(wants_slp("  %x = fneg bfloat %b\n  store bfloat %x, ptr addrspace(1) %p"));
    assert_true(wants_slp("  %x = call bfloat @llvm.fma.bf16(bfloat %b, bfloat %b, bfloat %b)\n"
                          "  store bfloat %x, ptr addrspace(1) %p"));
    assert_true(wants_slp("  %x = add i16 %s, 1\n  store i16 %x, ptr addrspace(1) %p"));
    assert_true(wants_slp("  %x = select i1 %c, half %h, half 0.0\n  store half %x, ptr addrspace(1) %p"));
    assert_false(wants_slp("  %x = fadd float %f, %f\n  %y = fptrunc float %x to half\n"
                           "  store half %y, ptr addrspace(1) %p"));
    assert_false(wants_slp("  %x = and i1 %c, %c\n  store i1 %x, ptr addrspace(1) %p"));
    assert_false(wants_slp("  %x = load half, ptr addrspace(1) %p\n  store half %x, ptr addrspace(1) %p"));
    assert_false(wants_slp("  %x = fadd <2 x half> <half 1.0, half 2.0>, <half 3.0, half 4.0>\n"
                           "  store <2 x half> %x, ptr addrspace(1) %p"));
}

static bool has_loop(const char *body) {
    char text[2048];
    snprintf(text, sizeof text, "target triple = \"nvptx64-nvidia-cuda\"\ndefine void @k(i1 %%c, i32 %%n) {\n%s}\n",
             body);
    return on_module(text, ptx_has_loop);
}

/* A kernel without loops takes the straight-line pipeline: the answer
 * must not depend on the order of the blocks, and a branch that joins
 * again (a diamond, a mask's two paths) is no loop. */
static void test_has_loop(void **state) {
    (void)state;
    assert_false(has_loop("entry:\n  ret void\n"));
    assert_false(has_loop("entry:\n  br i1 %c, label %a, label %b\n"
                          "a:\n  br label %j\nb:\n  br label %j\nj:\n  ret void\n"));
    /* the join placed first: a block that comes earlier is no back edge */
    assert_false(has_loop("entry:\n  br i1 %c, label %a, label %b\n"
                          "j:\n  ret void\na:\n  br label %j\nb:\n  br label %j\n"));
    assert_true(has_loop("entry:\n  br label %h\n"
                         "h:\n  %i = phi i32 [0, %entry], [%i1, %h]\n  %i1 = add i32 %i, 1\n"
                         "  %d = icmp slt i32 %i1, %n\n  br i1 %d, label %h, label %x\nx:\n  ret void\n"));
    /* the latch placed before its header */
    assert_true(has_loop("entry:\n  br label %h\n"
                         "l:\n  br label %h\n"
                         "h:\n  br i1 %c, label %l, label %x\nx:\n  ret void\n"));
    /* a loop reached only through a branch */
    assert_true(has_loop("entry:\n  br i1 %c, label %x, label %h\n"
                         "h:\n  br i1 %c, label %b, label %x\nb:\n  br label %h\nx:\n  ret void\n"));
    /* a cycle in blocks no path from the entry reaches is no loop to optimize */
    assert_false(has_loop("entry:\n  ret void\nu:\n  br label %u\n"));
}

static void test_pipeline_parts(void **state) {
    (void)state;
    const char *straight = ptx_llvm_pipeline(2, PTX_PIPELINE_STRAIGHT, false);
    assert_null(strstr(straight, "loop("));
    assert_null(strstr(straight, "licm"));
    assert_null(strstr(straight, "slp-vectorizer"));
    assert_non_null(strstr(straight, "reassociate"));
    assert_null(ptx_llvm_pipeline(2, PTX_PIPELINE_STRAIGHT_LATE, false));
    assert_non_null(strstr(ptx_llvm_pipeline(2, PTX_PIPELINE_STRAIGHT_LATE, true), "slp-vectorizer"));
    assert_string_equal(ptx_llvm_pipeline(0, PTX_PIPELINE_STRAIGHT, false), "default<O0>");
    assert_null(ptx_llvm_pipeline(0, PTX_PIPELINE_STRAIGHT_LATE, true));
    const char *slp = ptx_llvm_pipeline(2, PTX_PIPELINE_LATE, true), *plain = ptx_llvm_pipeline(2, PTX_PIPELINE_LATE, false);
    assert_non_null(strstr(slp, "slp-vectorizer"));
    assert_null(strstr(plain, "slp-vectorizer"));
    assert_null(strstr(ptx_llvm_pipeline(2, PTX_PIPELINE_SIMPLIFY, false), "slp-vectorizer"));
    assert_null(strstr(ptx_llvm_pipeline(2, PTX_PIPELINE_SIMPLIFY, false), "loop-vectorize"));
    assert_string_equal(ptx_llvm_pipeline(0, PTX_PIPELINE_SIMPLIFY, false), "default<O0>");
    assert_null(ptx_llvm_pipeline(0, PTX_PIPELINE_LATE, true));
}

/* Two f16 additions of neighbours, stored as a pair: with the SLP
 * vectorizer chosen they become one add.rn.f16x2, in a kernel without
 * loops (the straight-line pipeline's SLP step) and in a loop (O2's late
 * pipeline). */
static void emit_pairs_f16_math(bool in_loop) {
    LLVMContextRef ctx = LLVMContextCreate();
    char text[2048];
    snprintf(text, sizeof text,
             "target triple = \"nvptx64-nvidia-cuda\"\n"
             "target datalayout = \"e-i64:64-i128:128-v16:16-v32:32-n16:32:64\"\n"
             "define void @k(ptr addrspace(1) %%p, i32 %%n) {\n"
             "entry:\n  br label %%body\n"
             "body:\n"
             "  %%i = phi i32 [0, %%entry]%s\n"
             "  %%q = getelementptr <2 x half>, ptr addrspace(1) %%p, i32 %%i\n"
             "  %%v = load <2 x half>, ptr addrspace(1) %%q, align 4\n"
             "  %%a = extractelement <2 x half> %%v, i64 0\n"
             "  %%b = extractelement <2 x half> %%v, i64 1\n"
             "  %%x = fadd half %%a, %%a\n"
             "  %%y = fadd half %%b, %%b\n"
             "  %%w0 = insertelement <2 x half> poison, half %%x, i64 0\n"
             "  %%w1 = insertelement <2 x half> %%w0, half %%y, i64 1\n"
             "  store <2 x half> %%w1, ptr addrspace(1) %%q, align 4\n"
             "  %%i1 = add i32 %%i, 1\n"
             "  %%more = icmp slt i32 %%i1, %%n\n"
             "  %s\n"
             "done:\n  ret void\n}\n"
             "!nvvm.annotations = !{!0}\n!0 = !{ptr @k, !\"kernel\", i32 1}\n",
             in_loop ? ", [%i1, %body]" : "", in_loop ? "br i1 %more, label %body, label %done" : "br label %done");
    LLVMModuleRef m = parse_ir(ctx, text);
    assert_int_equal(ptx_has_loop(m), in_loop);
    tc_diag d;
    tc_diag_init(&d);
    tc_strbuf ptx;
    tc_strbuf_init(&ptx);
    assert_true(ptx_emit(m, "sm_80", 2, &ptx, &d));
    assert_non_null(strstr(ptx.data, "add.rn.f16x2"));
    assert_null(strstr(ptx.data, "add.rn.f16 "));
    tc_strbuf_free(&ptx);
    tc_diag_free(&d);
    LLVMDisposeModule(m);
    LLVMContextDispose(ctx);
}

static void test_emit_pairs_f16_math(void **state) {
    (void)state;
    emit_pairs_f16_math(false);
    emit_pairs_f16_math(true);
}

/* ---- finding ptxas ------------------------------------------------------- */
static void test_find_ptxas_search_order(void **state) {
    (void)state;
    saved_env env[NENV];
    env_save(env);
    char home[TEST_PATH_MAX], pathdir[TEST_PATH_MAX], empty[TEST_PATH_MAX], want[TEST_PATH_MAX + 32],
        got[TEST_PATH_MAX + 32];
    make_tmpdir(home, sizeof home);
    make_tmpdir(pathdir, sizeof pathdir);
    make_tmpdir(empty, sizeof empty);
    snprintf(want, sizeof want, "%s/bin", home);
    assert_int_equal(mkdir(want, 0755), 0);
    snprintf(want, sizeof want, "%s/bin/ptxas", home);
    write_script(want, "exit 0");
    char in_path[TEST_PATH_MAX + 32];
    snprintf(in_path, sizeof in_path, "%s/ptxas", pathdir);
    write_script(in_path, "exit 0");
    unsetenv("TILEC_PTXAS");

    /* CUDA_HOME comes before PATH */
    setenv("CUDA_HOME", home, 1);
    char path[3 * TEST_PATH_MAX];
    snprintf(path, sizeof path, "%s::%s", empty, pathdir); /* an empty entry is skipped */
    setenv("PATH", path, 1);
    assert_true(ptx_find_ptxas(got, sizeof got));
    assert_string_equal(got, want);

    /* a CUDA_HOME without ptxas falls through to PATH */
    setenv("CUDA_HOME", empty, 1);
    assert_true(ptx_find_ptxas(got, sizeof got));
    assert_string_equal(got, in_path);

    /* a non-executable file is not a ptxas */
    assert_int_equal(chmod(in_path, 0644), 0);
    if (ptx_find_ptxas(got, sizeof got)) assert_string_equal(got, "/usr/local/cuda/bin/ptxas");

    /* TILEC_PTXAS names exactly the one to use, or (empty) none at all */
    setenv("TILEC_PTXAS", want, 1);
    assert_true(ptx_find_ptxas(got, sizeof got));
    assert_string_equal(got, want);
    setenv("TILEC_PTXAS", "", 1);
    assert_false(ptx_find_ptxas(got, sizeof got));
    setenv("TILEC_PTXAS", in_path, 1); /* not executable */
    assert_false(ptx_find_ptxas(got, sizeof got));

    env_restore(env);
    remove_tree(home);
    remove_tree(pathdir);
    remove_tree(empty);
}

/* ---- running ptxas (fakes) ----------------------------------------------- */
typedef struct fake {
    saved_env env[NENV];
    char dir[TEST_PATH_MAX];  /* holds the fake tool */
    char tmp[TEST_PATH_MAX];  /* TMPDIR: must be empty afterwards */
    char tool[TEST_PATH_MAX + 16];
} fake;

static void fake_begin(fake *f, const char *body) {
    env_save(f->env);
    make_tmpdir(f->dir, sizeof f->dir);
    make_tmpdir(f->tmp, sizeof f->tmp);
    snprintf(f->tool, sizeof f->tool, "%s/ptxas", f->dir);
    write_script(f->tool, body);
    setenv("TILEC_PTXAS", f->tool, 1);
    setenv("TMPDIR", f->tmp, 1);
}

static void fake_end(fake *f) {
    assert_int_equal(count_entries(f->tmp), 0); /* temporary files removed */
    assert_no_children();
    env_restore(f->env);
    remove_tree(f->dir);
    remove_tree(f->tmp);
}

static const char some_ptx[] = ".version 8.0\n.target sm_80\n.address_size 64\n";

static void test_assemble_missing_ptxas(void **state) {
    (void)state;
    saved_env env[NENV];
    env_save(env);
    setenv("TILEC_PTXAS", "/nonexistent/ptxas", 1);
    tc_diag d;
    tc_diag_init(&d);
    char *cubin = (char *)1;
    size_t size = 7;
    assert_false(ptx_assemble(some_ptx, sizeof some_ptx - 1,
                              &(ptx_asm_options){.arch = "sm_80", .opt_level = 2, .threads = 1}, &cubin, &size, NULL,
                              &d));
    assert_null(cubin);
    assert_int_equal(size, 0);
    assert_non_null(strstr(d.out.data, "ptxas not found: set CUDA_HOME or put ptxas on PATH (or use --emit=ptx)"));
    tc_diag_free(&d);
    env_restore(env);
}

static void test_assemble_failure_message(void **state) {
    (void)state;
    fake f;
    fake_begin(&f, "echo \"ptxas fatal: something is wrong with $1\" >&2\nexit 255");
    tc_diag d;
    tc_diag_init(&d);
    char *cubin;
    size_t size;
    assert_false(ptx_assemble(some_ptx, sizeof some_ptx - 1,
                              &(ptx_asm_options){.arch = "sm_86", .opt_level = 2, .threads = 1}, &cubin, &size, NULL,
                              &d));
    assert_null(cubin);
    assert_non_null(strstr(d.out.data, "ptxas failed"));
    assert_non_null(strstr(d.out.data, "ptxas fatal: something is wrong with -arch=sm_86"));
    assert_int_equal(d.nerrors, 1);
    tc_diag_free(&d);
    fake_end(&f);
}

static void test_assemble_no_output(void **state) {
    (void)state;
    fake f;
    fake_begin(&f, "exit 0");
    tc_diag d;
    tc_diag_init(&d);
    char *cubin;
    size_t size;
    assert_false(ptx_assemble(some_ptx, sizeof some_ptx - 1,
                              &(ptx_asm_options){.arch = "sm_80", .opt_level = 0, .threads = 1}, &cubin, &size, NULL,
                              &d));
    assert_non_null(strstr(d.out.data, "ptxas produced no cubin"));
    tc_diag_free(&d);
    fake_end(&f);
}

/* The fake checks its arguments, copies its input to the output and
 * prints a report, so the test sees what ptxas was given and what came back. */
static void test_assemble_arguments_and_report(void **state) {
    (void)state;
    fake f;
    fake_begin(&f,
               "[ \"$1\" = -arch=sm_90a ] || exit 3\n"
               "[ \"$2\" = -O3 ] || exit 4\n"
               "[ \"$3\" = -v ] || exit 5\n"
               "[ \"$5\" = -o ] || exit 6\n"
               "cp \"$4\" \"$6\" || exit 7\n"
               "echo 'ptxas info    : Used 8 registers'");
    tc_diag d;
    tc_diag_init(&d);
    tc_strbuf info;
    tc_strbuf_init(&info);
    char *cubin;
    size_t size;
    bool ok = ptx_assemble(some_ptx, sizeof some_ptx - 1,
                           &(ptx_asm_options){.arch = "sm_90a", .opt_level = 2, .verbose = true, .threads = 1}, &cubin,
                           &size, &info, &d);
    if (!ok) fail_msg("%s", d.out.data ? d.out.data : "");
    assert_int_equal(size, sizeof some_ptx - 1);
    assert_memory_equal(cubin, some_ptx, size);
    assert_non_null(strstr(info.data, "Used 8 registers"));
    free(cubin);
    tc_strbuf_free(&info);
    tc_diag_free(&d);
    fake_end(&f);
}

/* threads other than 1 reach ptxas as --split-compile N (0: ptxas counts
 * the CPUs), after -v and before the input */
static void test_assemble_split_compile(void **state) {
    (void)state;
    static const int threads[] = {0, 3};
    for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++) {
        fake f;
        char script[256];
        snprintf(script, sizeof script,
                 "[ \"$3\" = --split-compile ] || exit 3\n"
                 "[ \"$4\" = %d ] || exit 4\n"
                 "[ \"$6\" = -o ] || exit 5\n"
                 "cp \"$5\" \"$7\" || exit 6\n",
                 threads[i]);
        fake_begin(&f, script);
        tc_diag d;
        tc_diag_init(&d);
        char *cubin;
        size_t size;
        bool ok = ptx_assemble(some_ptx, sizeof some_ptx - 1,
                               &(ptx_asm_options){.arch = "sm_80", .opt_level = 2, .threads = threads[i]}, &cubin,
                               &size, NULL, &d);
        if (!ok) fail_msg("threads %d: %s", threads[i], d.out.data ? d.out.data : "");
        free(cubin);
        tc_diag_free(&d);
        fake_end(&f);
    }
}

/* ---- merging PTX modules -------------------------------------------------- */
static const char merge_a[] = "//\n// Generated\n//\n\n.version 8.0\n.target sm_80\n.address_size 64\n\n"
                              ".extern .func __assertfail\n(\n\t.param .b64 p0\n)\n;\n"
                              ".extern .shared .align 16 .b8 tilec$dynamic_smem[];\n"
                              ".global .align 1 .b8 a_$_str[2] = {97};\n\n"
                              "\t// .globl\ta\n.visible .entry a(\n\t.param .u64 a_param_0\n)\n.maxntid 32, 1, 1\n{\n"
                              "\t.reg .b32 %r<2>;\n$L__BB0_1:\n\t{ // inline asm\n\t}\n\tret;\n\n}\n"
                              "\t.section\t.debug_loc\t{\t}\n\t.file\t1 \"dir{x}/k.tile\"\n";
static const char merge_b[] = "//\n// Generated\n//\n\n.version 8.0\n.target sm_80\n.address_size 64\n\n"
                              ".extern .func __assertfail\n(\n\t.param .b64 p0\n)\n;\n"
                              ".extern .shared .align 16 .b8 tilec$dynamic_smem[];\n"
                              ".global .align 1 .b8 b_$_str[2] = {98};\n\n"
                              "\t// .globl\tb\n.visible .entry b(\n\t.param .u64 b_param_0\n)\n.maxntid 64, 1, 1\n{\n"
                              "\t.reg .b32 %r<2>;\n$L__BB0_1:\n\tret;\n\n}\n"
                              "\t.section\t.debug_loc\t{\t}\n\t.file\t1 \"dir{x}/k.tile\"\n";

static size_t count_of(const char *s, const char *what) {
    size_t n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what)) n++;
    return n;
}

static bool merge(const char *const *parts, size_t n, tc_strbuf *out, tc_diag *d) {
    size_t lens[4];
    for (size_t i = 0; i < n; i++) lens[i] = strlen(parts[i]);
    tc_strbuf_init(out);
    tc_diag_init(d);
    return ptx_merge(parts, lens, n, out, d);
}

static void test_merge_modules(void **state) {
    (void)state;
    tc_strbuf out;
    tc_diag d;
    /* one part: as it is */
    const char *one[] = {merge_a};
    assert_true(merge(one, 1, &out, &d));
    assert_string_equal(out.data, merge_a);
    tc_strbuf_free(&out);
    tc_diag_free(&d);
    /* two: one header, both functions in order, each repeated declaration once,
     * each part's own globals kept */
    const char *two[] = {merge_a, merge_b};
    assert_true(merge(two, 2, &out, &d));
    const char *s = out.data;
    assert_int_equal(count_of(s, ".version 8.0"), 1);
    assert_int_equal(count_of(s, ".address_size 64"), 1);
    assert_int_equal(count_of(s, ".extern .func __assertfail"), 1);
    assert_int_equal(count_of(s, "tilec$dynamic_smem[]"), 1);
    assert_int_equal(count_of(s, ".file\t1"), 1);
    assert_int_equal(count_of(s, ".debug_loc"), 1);
    assert_int_equal(count_of(s, "a_$_str[2]"), 1);
    assert_int_equal(count_of(s, "b_$_str[2]"), 1);
    assert_int_equal(count_of(s, "$L__BB0_1:"), 2); /* labels are the functions' own */
    const char *a = strstr(s, ".visible .entry a("), *b = strstr(s, ".visible .entry b(");
    assert_non_null(a);
    assert_non_null(b);
    assert_true(a < b);
    assert_non_null(strstr(b, "\tret;\n\n}\n")); /* b whole, to its closing brace */
    assert_true(strstr(s, "b_$_str") < b);       /* and after its own declarations */
    assert_true(strstr(s, "b_$_str") > a);
    tc_strbuf_free(&out);
    tc_diag_free(&d);
}

static void test_merge_refuses(void **state) {
    (void)state;
    tc_strbuf out;
    tc_diag d;
    /* kernels for two targets are not one module */
    char other[sizeof merge_b];
    memcpy(other, merge_b, sizeof merge_b);
    memcpy(strstr(other, "sm_80"), "sm_86", 5);
    const char *targets[] = {merge_a, other};
    assert_false(merge(targets, 2, &out, &d));
    assert_non_null(strstr(d.out.data, "PTX modules for different targets"));
    tc_strbuf_free(&out);
    tc_diag_free(&d);
    /* a function cut short */
    char cut[sizeof merge_b];
    memcpy(cut, merge_b, sizeof merge_b);
    *strstr(cut, "\tret;\n\n}\n") = 0;
    const char *open[] = {merge_a, cut};
    assert_false(merge(open, 2, &out, &d));
    assert_non_null(strstr(d.out.data, "PTX module 1 has a statement left open"));
    tc_strbuf_free(&out);
    tc_diag_free(&d);
    /* no header at all */
    const char *none[] = {merge_a, ".visible .entry c()\n{\n}\n"};
    assert_false(merge(none, 2, &out, &d));
    tc_strbuf_free(&out);
    tc_diag_free(&d);
}

/* ---- the real ptxas, when installed -------------------------------------- */
static void test_assemble_real_ptxas(void **state) {
    (void)state;
    char tool[TEST_PATH_MAX];
    if (!ptx_find_ptxas(tool, sizeof tool)) {
        print_message("SKIPPED: ptxas not found; real assembly not checked\n");
        return;
    }
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef m = tiny_kernel(ctx, false);
    tc_diag d;
    tc_diag_init(&d);
    tc_strbuf ptx;
    tc_strbuf_init(&ptx);
    assert_true(ptx_emit(m, "sm_80", 2, &ptx, &d));
    char *cubin;
    size_t size;
    assert_true(ptx_assemble(ptx.data, ptx.len, &(ptx_asm_options){.arch = "sm_80", .opt_level = 2, .threads = 1},
                             &cubin, &size, NULL, &d));
    assert_true(size > 4 && !memcmp(cubin, "\x7f" "ELF", 4));
    free(cubin);
    /* and its complaint about bad PTX reaches the diagnostics */
    const char junk[] = "this is not ptx";
    assert_false(ptx_assemble(junk, sizeof junk - 1, &(ptx_asm_options){.arch = "sm_80", .opt_level = 2, .threads = 1},
                              &cubin, &size, NULL, &d));
    assert_non_null(strstr(d.out.data, "ptxas failed"));
    assert_no_children();
    tc_strbuf_free(&ptx);
    tc_diag_free(&d);
    LLVMDisposeModule(m);
    LLVMContextDispose(ctx);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arch_valid),
        cmocka_unit_test(test_emit_tiny_kernel),
        cmocka_unit_test(test_emit_rejects_invalid_ir),
        cmocka_unit_test(test_wants_slp),
        cmocka_unit_test(test_has_loop),
        cmocka_unit_test(test_pipeline_parts),
        cmocka_unit_test(test_emit_pairs_f16_math),
        cmocka_unit_test(test_find_ptxas_search_order),
        cmocka_unit_test(test_assemble_missing_ptxas),
        cmocka_unit_test(test_assemble_failure_message),
        cmocka_unit_test(test_assemble_no_output),
        cmocka_unit_test(test_assemble_arguments_and_report),
        cmocka_unit_test(test_assemble_real_ptxas),
        cmocka_unit_test(test_assemble_split_compile),
        cmocka_unit_test(test_merge_modules),
        cmocka_unit_test(test_merge_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
