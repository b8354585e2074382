/* compile.c - libtilec's one entry point: source text in, artifact out.
 *
 * The stages run in order, each only if the one before succeeded:
 *   parse (.tile) or read IR (.tir) -> check and build tile IR -> passes
 *   -> LLVM codegen -> PTX -> cubin
 * and stop at the requested emit kind. Everything a compilation allocates
 * lives in one arena (front end, IR) or one LLVM context, both freed before
 * returning, so concurrent calls share nothing. */
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>

#include "backend/ptx/ptx.h"
#include "driver/kernel_jobs.h"
#include "lang/lang.h"
#include "lower/lower.h"
#include "parser/parser.h"
#include "tilec.h"
#include "tileir/tileir.h"

void tilec_options_init(tilec_options *opt) {
    memset(opt, 0, sizeof *opt);
    opt->emit = TILEC_EMIT_CUBIN;
    opt->opt_level = 2;
}

const char *tilec_status_name(tilec_status s) {
    switch (s) {
    case TILEC_OK: return "ok";
    case TILEC_ERR_SOURCE: return "error in source";
    case TILEC_ERR_USAGE: return "bad options";
    case TILEC_ERR_TOOL: return "tool error";
    case TILEC_ERR_INTERNAL: return "internal compiler error";
    }
    return "unknown status";
}

void tilec_output_free(tilec_output *out) {
    free(out->data);
    free(out->diagnostics);
    free(out->dumps);
    free(out->info);
    free(out->sidecar);
    memset(out, 0, sizeof *out);
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static bool is_pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

/* Options the user can get wrong, checked before any work. */
static bool check_options(const tilec_options *opt, tc_diag *diag) {
    if (opt->arch && !ptx_arch_valid(opt->arch)) {
        tc_strbuf known;
        tc_strbuf_init(&known);
        for (size_t i = 0; ptx_arch_name(i); i++)
            tc_strbuf_printf(&known, "%s%s", i == 0 ? "" : ptx_arch_name(i + 1) ? ", " : " or ", ptx_arch_name(i));
        tc_error_plain(diag, "unknown arch '%s' (--arch; expected %s)", opt->arch, known.data);
        tc_strbuf_free(&known);
    }
    if (opt->num_warps && (!is_pow2(opt->num_warps) || opt->num_warps > TILEC_MAX_NUM_WARPS))
        tc_error_plain(diag, "num_warps (--num-warps) must be a power of two from 1 to %d, not %d", TILEC_MAX_NUM_WARPS,
                       opt->num_warps);
    if (opt->warp_specialize < TILEC_WARP_SPECIALIZE_AUTO || opt->warp_specialize > TILEC_WARP_SPECIALIZE_OFF)
        tc_error_plain(diag, "warp_specialize (--warp-specialize) must be auto (0), on (1) or off (2), not %d",
                       opt->warp_specialize);
    if (opt->num_stages < 0 || opt->num_stages > TILEC_MAX_NUM_STAGES)
        tc_error_plain(diag, "num_stages (--num-stages) must be from 1 to %d, not %d", TILEC_MAX_NUM_STAGES,
                       opt->num_stages);
    if (opt->opt_level != 0 && opt->opt_level != 2)
        tc_error_plain(diag, "optimization level must be 0 or 2, not %d", opt->opt_level);
    if (opt->dump_after && !lower_is_pass_name(opt->dump_after))
        tc_error_plain(diag, "dump_after (--dump-after): no pass named '%s'", opt->dump_after);
    if (opt->ndefines > TILEC_MAX_DEFINES)
        tc_error_plain(diag, "too many defines (-D; limit is %d)", TILEC_MAX_DEFINES);
    if (opt->jobs < 0 || opt->jobs > TILEC_MAX_JOBS)
        tc_error_plain(diag, "jobs (-j) must be from 0 (one a CPU) to %d, not %d", TILEC_MAX_JOBS, opt->jobs);
    for (size_t i = 0; i < opt->ndefines && i < TILEC_MAX_DEFINES; i++) {
        if (!opt->defines || !opt->defines[i].name) {
            tc_error_plain(diag, "define %zu has no name", i);
            break;
        }
        for (size_t j = 0; j < i; j++)
            if (!strcmp(opt->defines[i].name, opt->defines[j].name)) {
                tc_error_plain(diag, "%s is given two values (-D, or a define): %lld and %lld", opt->defines[i].name,
                               (long long)opt->defines[j].value, (long long)opt->defines[i].value);
                break;
            }
    }
    if (opt->passes) lower_passes_valid(opt->passes, diag);
    if (opt->emit > TILEC_EMIT_CUBIN) tc_error_plain(diag, "unknown emit kind %d", (int)opt->emit);
    return diag->nerrors == 0;
}

/* Front end: text to tile IR, from .tile source or from .tir text. */
static tir_module *front_end(const tc_source *src, const tilec_options *opt, tc_arena *arena, tc_diag *diag) {
    if (ends_with(src->name, ".tir")) return tir_parse(arena, src, diag);

    /* the passes' and codegen's errors carry the IR's line and column of
     * this text (a .tir file's loc(...) mean the .tile it came from) */
    diag->echo = src;
    ast_module *ast = parse_module(arena, src, diag);
    if (diag->nerrors) return NULL;
    return lang_to_tir(ast, opt, arena, diag);
}

static void set_text(tilec_output *out, tc_strbuf *b) {
    out->size = b->len;
    out->data = tc_strbuf_take(b);
}

tilec_status tilec_compile(const char *filename, const char *source, size_t len, const tilec_options *opt_in,
                           tilec_output *out) {
    memset(out, 0, sizeof *out);
    tilec_options defaults;
    tilec_options_init(&defaults);
    const tilec_options *opt = opt_in ? opt_in : &defaults;

    tc_diag diag;
    tc_diag_init(&diag);
    tc_strbuf dumps, info, text;
    tc_strbuf_init(&dumps);
    tc_strbuf_init(&info);
    tc_strbuf_init(&text);
    tc_arena *arena = tc_arena_new();
    tilec_status status = TILEC_OK;
    const char *arch = opt->arch ? opt->arch : TILEC_DEFAULT_ARCH;
    tc_source src = {.name = filename ? filename : "<input>", .text = source ? source : "", .len = source ? len : 0};

    double t0 = tc_now_ms();
    if (!source && len) tc_error_plain(&diag, "the source is NULL, with a length of %zu", len);
    if (!check_options(opt, &diag) || diag.nerrors) {
        status = TILEC_ERR_USAGE;
        goto done;
    }
    if (src.len > PARSE_MAX_SOURCE) {
        tc_error_plain(&diag, "%s: file too large (%zu bytes; limit is %d)", src.name, src.len, PARSE_MAX_SOURCE);
        status = TILEC_ERR_SOURCE;
        goto done;
    }

    tir_module *m = front_end(&src, opt, arena, &diag);
    if (!m || diag.nerrors) {
        status = TILEC_ERR_SOURCE;
        goto done;
    }
    if (!m->nfuncs) { /* an empty cubin would load and then have nothing to launch */
        tc_error_plain(&diag, "%s: no kernel to compile (the file defines none)", src.name);
        status = TILEC_ERR_SOURCE;
        goto done;
    }
    if (!tir_verify(m, "the front end", &diag)) {
        /* .tir input is the user's; IR from .tile source failing is our bug */
        status = ends_with(src.name, ".tir") ? TILEC_ERR_SOURCE : TILEC_ERR_INTERNAL;
        goto done;
    }
    bool over_limit = false;
    lower_options lopt = {
        .compile = *opt, /* the whole struct, with the two choices made here: */
        .dump_out = &dumps,
        .notes = opt->verbose ? &info : NULL, /* the passes' notes, before ptxas's report */
        .over_limit = &over_limit,
        .memo = lower_memo_new(arena), /* smem_plan's move plans, for codegen */
    };
    lopt.compile.arch = arch;
    if (opt->emit != TILEC_EMIT_TIR) lopt.compile.passes = NULL; /* --passes is for testing passes on IR */
    bool from_tir = ends_with(src.name, ".tir");
    if (!lower_run_pipeline(m, &lopt, &diag)) {
        /* a pass may refuse hand-written IR; IR from .tile source must
         * pass, unless it asks for more than the target has */
        status = from_tir || over_limit ? TILEC_ERR_SOURCE : TILEC_ERR_INTERNAL;
        goto done;
    }
    out->ms_frontend = tc_now_ms() - t0;

    if (opt->emit == TILEC_EMIT_TIR) {
        tir_print_module(&text, m, opt->print_locs ? TIR_PRINT_LOCS : 0);
        set_text(out, &text);
        goto done;
    }

    double t1 = tc_now_ms();
    if (opt->sidecar) {
        /* what the runtime needs to check and run loaded kernels (the
         * smem_plan pass has set each kernel's dynamic_smem) */
        tc_strbuf side;
        tc_strbuf_init(&side);
        tc_strbuf_printf(&side,
                         "// tilec %s sidecar: the kernels' tile IR, read by trt_load\n// source: %s\n"
                         "// target: %s %s\n",
                         TILEC_VERSION, src.name,
                         opt->emit == TILEC_EMIT_PTX ? "ptx" : opt->emit == TILEC_EMIT_LLVM ? "llvm" : "cubin", arch);
        tir_print_module(&side, m, TIR_PRINT_LOCS);
        out->sidecar = tc_strbuf_take(&side);
    }
    if (opt->emit == TILEC_EMIT_LLVM) { /* one module: the user reads it whole */
        LLVMContextRef ctx = LLVMContextCreate();
        LLVMModuleRef lm = lower_codegen(m, NULL, ctx, &lopt, &diag);
        if (!lm) {
            /* IR the front end made must always lower; a .tir file may not */
            status = from_tir || over_limit ? TILEC_ERR_SOURCE : TILEC_ERR_INTERNAL;
        } else if (opt->llvm_optimized) {
            if (ptx_optimized_ir(lm, arch, opt->opt_level, &text, &diag)) set_text(out, &text);
            else status = TILEC_ERR_TOOL;
        } else {
            char *s = LLVMPrintModuleToString(lm);
            tc_strbuf_puts(&text, s);
            LLVMDisposeMessage(s);
            set_text(out, &text);
        }
        if (lm) LLVMDisposeModule(lm);
        LLVMContextDispose(ctx);
    } else {
        switch (kernel_jobs_ptx(m, &lopt, arch, &text, &diag)) {
        case KERNEL_JOBS_OK: break;
        case KERNEL_JOBS_CODEGEN: status = from_tir ? TILEC_ERR_SOURCE : TILEC_ERR_INTERNAL; break;
        case KERNEL_JOBS_LIMIT: status = TILEC_ERR_SOURCE; break;
        case KERNEL_JOBS_PTX: status = TILEC_ERR_TOOL; break;
        }
    }
    out->ms_llvm = tc_now_ms() - t1;
    if (status != TILEC_OK || opt->emit == TILEC_EMIT_LLVM) goto done;
    if (opt->emit == TILEC_EMIT_PTX) {
        set_text(out, &text);
        goto done;
    }

    double t2 = tc_now_ms();
    ptx_asm_options asm_opt = {.arch = arch,
                               .opt_level = opt->opt_level,
                               .verbose = opt->verbose,
                               /* ptxas's threads take functions: one kernel leaves the command line as it was */
                               .threads = m->nfuncs > 1 ? opt->jobs : 1};
    if (!ptx_assemble(text.data, text.len, &asm_opt, &out->data, &out->size, &info, &diag)) status = TILEC_ERR_TOOL;
    out->ms_ptxas = tc_now_ms() - t2;

done:
    if (status == TILEC_OK && diag.nerrors) status = TILEC_ERR_INTERNAL;
    if (status != TILEC_OK) {
        free(out->data);
        free(out->sidecar);
        out->data = out->sidecar = NULL;
        out->size = 0;
    }
    out->status = status;
    out->diagnostics = tc_strbuf_take(&diag.out);
    out->dumps = tc_strbuf_take(&dumps);
    out->info = tc_strbuf_take(&info);
    tc_strbuf_free(&text);
    tc_diag_free(&diag);
    tc_arena_free(arena);
    return status;
}
