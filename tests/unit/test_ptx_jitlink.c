/* Unit tests for the in-process assembler (backend/ptx/jitlink.c) and the
 * choice between it and the ptxas process (assemble.c: ptxas where it is
 * found, else nvJitLink; TILEC_ASSEMBLER forces one).
 *
 * Without libnvJitLink the cases that need none run (the search's errors,
 * the choice, with fake ptxas programs), then the program says SKIPPED
 * and exits 77, which ctest reports as skipped. With it: a kernel
 * assembled for sm_80, sm_90 and sm_90a is a CUDA ELF holding the
 * kernel's symbol, and, where ptxas is found too, differs from ptxas's
 * cubin only as docs/design.md explains: nvJitLink compiles relocatable
 * code (ptxas -c) and links it, and says so in .note.nv.tkinfo; the ELF
 * flags (the arch) and the kernel's sections are the same. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <elf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/ptx/ptx.h"

enum { TEST_PATH_MAX = 4096 };

/* ---- environment save/restore ----------------------------------------- */
typedef struct saved_env {
    const char *name;
    char *value; /* NULL: was unset */
} saved_env;

static const char *const env_names[] = {"TILEC_ASSEMBLER", "TILEC_NVJITLINK", "TILEC_PTXAS", "CUDA_HOME", "PATH"};
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

/* ---- PTX to assemble ----------------------------------------------------- */
/* kernel k(float addrspace(1)* p) { p[tid.x] = (float)tid.x; }, through
 * LLVM's NVPTX backend as tilec's PTX is made. */
static void tiny_ptx(const char *arch, tc_strbuf *ptx) {
    LLVMContextRef ctx = LLVMContextCreate();
    LLVMModuleRef m = LLVMModuleCreateWithNameInContext("t", ctx);
    LLVMSetTarget(m, "nvptx64-nvidia-cuda");
    LLVMSetDataLayout(m, "e-i64:64-i128:128-v16:16-v32:32-n16:32:64");
    LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx), f32 = LLVMFloatTypeInContext(ctx);
    LLVMTypeRef pty = LLVMPointerTypeInContext(ctx, 1);
    LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), &pty, 1, false);
    LLVMValueRef fn = LLVMAddFunction(m, "k", fty);
    LLVMMetadataRef md[3] = {LLVMValueAsMetadata(fn), LLVMMDStringInContext2(ctx, "kernel", 6),
                             LLVMValueAsMetadata(LLVMConstInt(i32, 1, false))};
    LLVMAddNamedMetadataOperand(m, "nvvm.annotations", LLVMMetadataAsValue(ctx, LLVMMDNodeInContext2(ctx, md, 3)));
    LLVMValueRef tid = LLVMAddFunction(m, "llvm.nvvm.read.ptx.sreg.tid.x", LLVMFunctionType(i32, NULL, 0, false));
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
    LLVMValueRef t = LLVMBuildCall2(b, LLVMFunctionType(i32, NULL, 0, false), tid, NULL, 0, "t");
    LLVMValueRef at = LLVMBuildGEP2(b, f32, LLVMGetParam(fn, 0), &t, 1, "at");
    LLVMBuildStore(b, LLVMBuildUIToFP(b, t, f32, "v"), at);
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
    tc_diag d;
    tc_diag_init(&d);
    tc_strbuf_init(ptx);
    if (!ptx_emit(m, arch, 2, ptx, &d)) fail_msg("%s", d.out.data ? d.out.data : "");
    tc_diag_free(&d);
    LLVMDisposeModule(m);
    LLVMContextDispose(ctx);
}

/* ---- reading the cubin --------------------------------------------------- */
typedef struct cubin {
    const char *data;
    size_t size;
} cubin;

static const Elf64_Ehdr *ehdr(cubin c) {
    assert_true(c.size > sizeof(Elf64_Ehdr));
    const Elf64_Ehdr *h = (const Elf64_Ehdr *)c.data;
    assert_memory_equal(h->e_ident, ELFMAG, SELFMAG);
    assert_int_equal(h->e_ident[EI_CLASS], ELFCLASS64);
    assert_int_equal(h->e_machine, EM_CUDA);
    assert_true(h->e_shoff + (size_t)h->e_shnum * sizeof(Elf64_Shdr) <= c.size);
    return h;
}

static const Elf64_Shdr *section(cubin c, int i) {
    return (const Elf64_Shdr *)(c.data + ehdr(c)->e_shoff) + i;
}

static const char *section_name(cubin c, int i) {
    const Elf64_Shdr *names = section(c, ehdr(c)->e_shstrndx);
    return c.data + names->sh_offset + section(c, i)->sh_name;
}

/* The section named `name`, or NULL. */
static const Elf64_Shdr *find_section(cubin c, const char *name) {
    for (int i = 1; i < ehdr(c)->e_shnum; i++)
        if (!strcmp(section_name(c, i), name)) return section(c, i);
    return NULL;
}

/* Whether the symbol table holds a function named `name`. */
static bool has_function(cubin c, const char *name) {
    for (int i = 1; i < ehdr(c)->e_shnum; i++) {
        const Elf64_Shdr *s = section(c, i);
        if (s->sh_type != SHT_SYMTAB) continue;
        const Elf64_Shdr *strtab = section(c, (int)s->sh_link);
        const Elf64_Sym *sym = (const Elf64_Sym *)(c.data + s->sh_offset);
        for (size_t j = 0; j < s->sh_size / sizeof *sym; j++)
            if (ELF64_ST_TYPE(sym[j].st_info) == STT_FUNC && !strcmp(c.data + strtab->sh_offset + sym[j].st_name, name))
                return true;
    }
    return false;
}

/* Whether the section's bytes contain the string s. */
static bool section_has(cubin c, const char *name, const char *s) {
    const Elf64_Shdr *sec = find_section(c, name);
    assert_non_null(sec);
    size_t n = strlen(s);
    for (size_t i = 0; i + n <= sec->sh_size; i++)
        if (!memcmp(c.data + sec->sh_offset + i, s, n)) return true;
    return false;
}

/* ---- finding the library, without one ------------------------------------ */
static void test_find_errors(void **state) {
    (void)state;
    saved_env env[NENV];
    env_save(env);
    char buf[TEST_PATH_MAX + 256];
    setenv("TILEC_NVJITLINK", "", 1); /* none at all */
    assert_false(ptx_jitlink_find(buf, sizeof buf));
    assert_non_null(strstr(buf, "TILEC_NVJITLINK is empty"));
    setenv("TILEC_NVJITLINK", "/nonexistent/libnvJitLink.so.13", 1); /* exactly that one */
    assert_false(ptx_jitlink_find(buf, sizeof buf));
    assert_non_null(strstr(buf, "cannot load /nonexistent/libnvJitLink.so.13"));
    setenv("TILEC_NVJITLINK", "libm.so.6", 1); /* a library, not this one */
    assert_false(ptx_jitlink_find(buf, sizeof buf));
    assert_non_null(strstr(buf, "libm.so.6: not a usable libnvJitLink"));
    /* asking it to assemble then is an error that says why */
    tc_diag d;
    tc_diag_init(&d);
    char *bin = (char *)1;
    size_t size = 7;
    const char ptx[] = ".version 8.0\n";
    assert_false(ptx_jitlink_assemble(
        ptx, sizeof ptx - 1, &(ptx_asm_options){.arch = "sm_80", .opt_level = 2, .threads = 1}, &bin, &size, NULL, &d));
    assert_null(bin);
    assert_int_equal(size, 0);
    assert_non_null(strstr(d.out.data, "nvJitLink not available: libm.so.6: not a usable libnvJitLink"));
    tc_diag_free(&d);
    env_restore(env);
}

/* ---- the choice, with fake ptxas programs --------------------------------- */
typedef struct scratch {
    char dir[TEST_PATH_MAX];     /* CUDA_HOME: bin/ptxas */
    char fake[TEST_PATH_MAX + 32]; /* that ptxas: copies its input, so the "cubin" is the PTX */
} scratch;

static void scratch_begin(scratch *s) {
    snprintf(s->dir, sizeof s->dir, "/tmp/tilec-jitlink-test-XXXXXX");
    assert_non_null(mkdtemp(s->dir));
    char bin[TEST_PATH_MAX + 8];
    snprintf(bin, sizeof bin, "%s/bin", s->dir);
    assert_int_equal(mkdir(bin, 0755), 0);
    snprintf(s->fake, sizeof s->fake, "%s/bin/ptxas", s->dir);
    FILE *f = fopen(s->fake, "w");
    assert_non_null(f);
    fprintf(f, "#!/bin/sh\ncp \"$3\" \"$5\"\n"); /* -arch=X -OX in -o out */
    assert_int_equal(fclose(f), 0);
    assert_int_equal(chmod(s->fake, 0755), 0);
}

static void scratch_end(scratch *s) {
    unlink(s->fake);
    char bin[TEST_PATH_MAX + 8];
    snprintf(bin, sizeof bin, "%s/bin", s->dir);
    rmdir(bin);
    rmdir(s->dir);
}

static const char some_ptx[] = ".version 8.0\n.target sm_80\n.address_size 64\n";

/* What ptx_assemble gives for some_ptx: true with the bytes, or false
 * with the diagnostics in *out. */
static bool assemble(char **out, size_t *size) {
    tc_diag d;
    tc_diag_init(&d);
    bool ok = ptx_assemble(some_ptx, sizeof some_ptx - 1,
                           &(ptx_asm_options){.arch = "sm_80", .opt_level = 2, .threads = 1}, out, size, NULL, &d);
    if (!ok) {
        *out = strdup(d.out.data ? d.out.data : "");
        *size = 0;
    }
    tc_diag_free(&d);
    return ok;
}

static bool is_fake_output(const char *bin, size_t size) {
    return size == sizeof some_ptx - 1 && !memcmp(bin, some_ptx, size);
}

static void test_choice_without_nvjitlink(void **state) {
    (void)state;
    saved_env env[NENV];
    env_save(env);
    scratch s;
    scratch_begin(&s);
    char *bin;
    size_t size;
    unsetenv("TILEC_ASSEMBLER");
    unsetenv("TILEC_PTXAS");
    setenv("TILEC_NVJITLINK", "/nonexistent/libnvJitLink.so.13", 1);
    setenv("CUDA_HOME", s.dir, 1);
    /* auto: no nvJitLink, so the ptxas process (found in CUDA_HOME) */
    assert_true(assemble(&bin, &size));
    assert_true(is_fake_output(bin, size));
    free(bin);
    /* TILEC_ASSEMBLER=nvjitlink: that or an error, never ptxas */
    setenv("TILEC_ASSEMBLER", "nvjitlink", 1);
    assert_false(assemble(&bin, &size));
    assert_non_null(strstr(bin, "nvJitLink not available: cannot load /nonexistent/libnvJitLink.so.13"));
    free(bin);
    /* ptxas: that process */
    setenv("TILEC_ASSEMBLER", "ptxas", 1);
    assert_true(assemble(&bin, &size));
    assert_true(is_fake_output(bin, size));
    free(bin);
    /* anything else is an error */
    setenv("TILEC_ASSEMBLER", "nvcc", 1);
    assert_false(assemble(&bin, &size));
    assert_non_null(strstr(bin, "TILEC_ASSEMBLER must be auto, nvjitlink or ptxas, not 'nvcc'"));
    free(bin);
    /* auto and neither: ptxas's "not found", as before nvJitLink */
    setenv("TILEC_ASSEMBLER", "auto", 1);
    setenv("TILEC_PTXAS", "/nonexistent/ptxas", 1);
    assert_false(assemble(&bin, &size));
    assert_non_null(strstr(bin, "ptxas not found: set CUDA_HOME or put ptxas on PATH (or use --emit=ptx)"));
    free(bin);
    scratch_end(&s);
    env_restore(env);
}

/* ---- the choice as a table ---------------------------------------------- */
static int asked_ptxas, asked_jitlink;
static bool yes_ptxas(void) { return ++asked_ptxas, true; }
static bool no_ptxas(void) { return ++asked_ptxas, false; }
static bool yes_jitlink(void) { return ++asked_jitlink, true; }
static bool no_jitlink(void) { return ++asked_jitlink, false; }

static void test_pick_assembler(void **state) {
    (void)state;
    struct {
        const char *choice;
        bool named;
        bool (*ptxas)(void), (*jitlink)(void);
        ptx_assembler want;
        int asks_ptxas, asks_jitlink; /* whether each finder is asked (what it costs: a dlopen) */
    } cases[] = {
        {NULL, false, yes_ptxas, yes_jitlink, PTX_ASM_PTXAS, 1, 0},  /* ptxas first */
        {"auto", false, yes_ptxas, no_jitlink, PTX_ASM_PTXAS, 1, 0},
        {"", false, no_ptxas, yes_jitlink, PTX_ASM_NVJITLINK, 1, 1}, /* no ptxas: nvJitLink */
        {NULL, false, no_ptxas, no_jitlink, PTX_ASM_PTXAS, 1, 1},    /* neither: ptxas's "not found" */
        {NULL, true, no_ptxas, yes_jitlink, PTX_ASM_PTXAS, 0, 0},    /* TILEC_PTXAS: that ptxas or none */
        {"nvjitlink", true, yes_ptxas, no_jitlink, PTX_ASM_NVJITLINK, 0, 0},
        {"ptxas", false, no_ptxas, yes_jitlink, PTX_ASM_PTXAS, 0, 0},
        {"PTXAS", false, yes_ptxas, yes_jitlink, PTX_ASM_UNKNOWN, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        asked_ptxas = asked_jitlink = 0;
        assert_int_equal(ptx_pick_assembler(cases[i].choice, cases[i].named, cases[i].ptxas, cases[i].jitlink),
                         cases[i].want);
        assert_int_equal(asked_ptxas, cases[i].asks_ptxas);
        assert_int_equal(asked_jitlink, cases[i].asks_jitlink);
    }
}

/* ---- with the library ------------------------------------------------------ */
static const char *const arches[] = {"sm_80", "sm_90", "sm_90a"};

static void test_assemble_and_compare(void **state) {
    (void)state;
    saved_env env[NENV];
    env_save(env);
    unsetenv("TILEC_PTXAS");
    char ptxas[TEST_PATH_MAX];
    bool have_ptxas = ptx_find_ptxas(ptxas, sizeof ptxas);
    if (!have_ptxas) print_message("NOTE: ptxas not found; nvJitLink's cubins not compared with ptxas's\n");
    for (size_t a = 0; a < sizeof arches / sizeof arches[0]; a++) {
        tc_strbuf ptx;
        tiny_ptx(arches[a], &ptx);
        tc_diag d;
        tc_diag_init(&d);
        cubin jl, px;
        char *bin;
        if (!ptx_jitlink_assemble(ptx.data, ptx.len,
                                  &(ptx_asm_options){.arch = arches[a], .opt_level = 2, .threads = 1}, &bin, &jl.size,
                                  NULL, &d))
            fail_msg("%s: %s", arches[a], d.out.data);
        jl.data = bin;
        ehdr(jl);
        assert_true(has_function(jl, "k"));
        assert_non_null(find_section(jl, ".text.k"));
        /* the cubin says who made it: nvJitLink, with ptxas -c inside */
        assert_true(section_has(jl, ".note.nv.tkinfo", "nvJIT API"));
        assert_true(section_has(jl, ".note.nv.tkinfo", " -c"));
        if (have_ptxas) {
            if (!ptx_ptxas_assemble(ptx.data, ptx.len,
                                    &(ptx_asm_options){.arch = arches[a], .opt_level = 2, .threads = 1}, &bin, &px.size,
                                    NULL, &d))
                fail_msg("%s: %s", arches[a], d.out.data);
            px.data = bin;
            if (px.size == jl.size && !memcmp(px.data, jl.data, px.size)) {
                print_message("%s: nvJitLink's cubin is ptxas's, byte for byte\n", arches[a]);
            } else {
                /* the explained difference: the same arch (ELF flags) and
                 * sections, ptxas's note naming a whole-program ptxas */
                assert_int_equal(ehdr(px)->e_flags, ehdr(jl)->e_flags);
                assert_int_equal(ehdr(px)->e_flags, ehdr(jl)->e_flags);
                assert_true(has_function(px, "k"));
                const char *const kept[] = {".text.k", ".nv.info.k", ".nv.constant0.k", ".nv.callgraph"};
                for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) assert_non_null(find_section(px, kept[i]));
                assert_true(has_function(px, "k"));
                assert_true(section_has(px, ".note.nv.tkinfo", "ptxas"));
                assert_false(section_has(px, ".note.nv.tkinfo", "nvJIT API"));
                assert_false(section_has(px, ".note.nv.tkinfo", " -c"));
            }
            free((char *)px.data);
        }
        free((char *)jl.data);
        tc_diag_free(&d);
        tc_strbuf_free(&ptx);
    }
    env_restore(env);
}

/* With both, ptx_assemble on its own runs ptxas (the fake in CUDA_HOME
 * shows it), nvJitLink when TILEC_ASSEMBLER says so. */
static void test_choice_with_nvjitlink(void **state) {
    (void)state;
    saved_env env[NENV];
    env_save(env);
    scratch s;
    scratch_begin(&s);
    unsetenv("TILEC_ASSEMBLER");
    unsetenv("TILEC_PTXAS");
    setenv("CUDA_HOME", s.dir, 1); /* its ptxas is the fake; its lib64 has no nvJitLink */
    char *bin;
    size_t size;
    assert_true(assemble(&bin, &size));
    assert_true(is_fake_output(bin, size));
    free(bin);
    setenv("TILEC_ASSEMBLER", "nvjitlink", 1);
    assert_true(assemble(&bin, &size)); /* some_ptx has no kernel: an ELF all the same */
    assert_true(size > 4 && !memcmp(bin, ELFMAG, SELFMAG));
    free(bin);
    setenv("TILEC_PTXAS", s.fake, 1); /* nvjitlink beats TILEC_PTXAS */
    assert_true(assemble(&bin, &size));
    assert_true(size > 4 && !memcmp(bin, ELFMAG, SELFMAG));
    free(bin);
    scratch_end(&s);
    env_restore(env);
}

/* Failures read as the ptxas process's do: "ptxas failed (WHO): ...". */
static void test_errors(void **state) {
    (void)state;
    tc_diag d;
    tc_diag_init(&d);
    char *bin;
    size_t size;
    const char junk[] = "this is not ptx";
    assert_false(ptx_jitlink_assemble(junk, sizeof junk - 1,
                                      &(ptx_asm_options){.arch = "sm_80", .opt_level = 2, .threads = 1}, &bin, &size,
                                      NULL, &d));
    assert_null(bin);
    assert_non_null(strstr(d.out.data, "ptxas failed (libnvJitLink"));
    tc_diag_free(&d);
    /* PTX for sm_90 assembled for sm_80: ptxas's own words */
    tc_strbuf ptx;
    tiny_ptx("sm_90", &ptx);
    tc_diag_init(&d);
    assert_false(ptx_jitlink_assemble(
        ptx.data, ptx.len, &(ptx_asm_options){.arch = "sm_80", .opt_level = 2, .threads = 1}, &bin, &size, NULL, &d));
    assert_non_null(strstr(d.out.data, "ptxas failed (libnvJitLink"));
    assert_non_null(strstr(d.out.data, "SM version specified by .target is higher"));
    assert_int_equal(d.nerrors, 1);
    tc_diag_free(&d);
    /* an arch tilec does not know is refused before nvJitLink sees it
     * (nvJitLink 13.0 ends the process on "-arch=sm_1") */
    tc_diag_init(&d);
    assert_false(ptx_jitlink_assemble(
        ptx.data, ptx.len, &(ptx_asm_options){.arch = "sm_1", .opt_level = 2, .threads = 1}, &bin, &size, NULL, &d));
    assert_non_null(strstr(d.out.data, "nvJitLink: unknown arch 'sm_1'"));
    tc_diag_free(&d);
    tc_strbuf_free(&ptx);
}

/* -v's report reads as ptxas -v's: its lines, its indentation, without
 * the linker's summary; without verbose, no report. */
static void test_verbose_report(void **state) {
    (void)state;
    tc_strbuf ptx, info;
    tiny_ptx("sm_90a", &ptx);
    for (int verbose = 0; verbose <= 1; verbose++) {
        tc_strbuf_init(&info);
        tc_diag d;
        tc_diag_init(&d);
        char *bin;
        size_t size;
        assert_true(ptx_jitlink_assemble(
            ptx.data, ptx.len, &(ptx_asm_options){.arch = "sm_90a", .opt_level = 2, .verbose = verbose, .threads = 1},
            &bin, &size, &info, &d));
        free(bin);
        if (verbose) {
            assert_non_null(info.data);
            assert_non_null(strstr(info.data, "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"));
            assert_non_null(strstr(info.data, "ptxas info    : Function properties for k\n"
                                              "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"));
            assert_null(strstr(info.data, "ptxas         ."));
            assert_null(strstr(info.data, "\ninfo    :"));
        } else {
            assert_true(info.len == 0 || !strstr(info.data, "Function properties"));
        }
        tc_strbuf_free(&info);
        tc_diag_free(&d);
    }
    tc_strbuf_free(&ptx);
}

/* Threads assembling at once get the same bytes as one alone: nothing
 * shared between calls but the mapped library. */
typedef struct job {
    const tc_strbuf *ptx;
    char *bin;
    size_t size;
    bool ok;
} job;

static void *run_job(void *p) {
    job *j = p;
    tc_diag d;
    tc_diag_init(&d);
    j->ok = ptx_jitlink_assemble(j->ptx->data, j->ptx->len,
                                 &(ptx_asm_options){.arch = "sm_80", .opt_level = 2, .threads = 1}, &j->bin, &j->size,
                                 NULL, &d);
    tc_diag_free(&d);
    return NULL;
}

static void test_threads(void **state) {
    (void)state;
    enum { N = 4 };
    tc_strbuf ptx;
    tiny_ptx("sm_80", &ptx);
    job one = {.ptx = &ptx};
    run_job(&one);
    assert_true(one.ok);
    job jobs[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        jobs[i] = (job){.ptx = &ptx};
        assert_int_equal(pthread_create(&t[i], NULL, run_job, &jobs[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_true(jobs[i].ok);
        assert_int_equal(jobs[i].size, one.size);
        assert_memory_equal(jobs[i].bin, one.bin, one.size);
        free(jobs[i].bin);
    }
    free(one.bin);
    tc_strbuf_free(&ptx);
}

int main(void) {
    const struct CMUnitTest without[] = {
        cmocka_unit_test(test_pick_assembler),
        cmocka_unit_test(test_find_errors),
        cmocka_unit_test(test_choice_without_nvjitlink),
    };
    int failed = cmocka_run_group_tests_name("without nvJitLink", without, NULL, NULL);
    char found[TEST_PATH_MAX + 256];
    if (!ptx_jitlink_find(found, sizeof found)) {
        fprintf(stderr, "SKIPPED: %s; the in-process assembler (nvJitLink) NOT checked\n", found);
        return failed ? failed : 77; /* 77: ctest's SKIP_RETURN_CODE */
    }
    printf("with %s\n", found);
    const struct CMUnitTest with[] = {
        cmocka_unit_test(test_assemble_and_compare), cmocka_unit_test(test_choice_with_nvjitlink),
        cmocka_unit_test(test_errors),               cmocka_unit_test(test_verbose_report),
        cmocka_unit_test(test_threads),
    };
    return failed + cmocka_run_group_tests_name("with nvJitLink", with, NULL, NULL);
}
