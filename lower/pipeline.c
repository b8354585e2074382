/* pipeline.c - the pass list, run in order with the verifier after each.
 *
 * A pass is one file with one entry point; this list is the whole
 * pipeline. `passes` (from --passes) replaces the list for testing one pass
 * alone on a .tir file; dumps show the IR after a named pass or all. */
#include <string.h>

#include "lower/lower.h"

const lower_pass lower_passes[] = {
    {"simplify", lower_simplify},
    {"remat_tiles", lower_remat_tiles},
    {"layout", lower_layout},
    {"remat_converts", lower_remat_converts},
    {"pipeline_loops", lower_pipeline_loops},
    {"stage_operands", lower_stage_operands},
    {"prefetch_fragments", lower_prefetch_fragments},
    {"sink_pure", lower_sink_pure},
    {"async_dots", lower_async_dots},
    {"tma_copies", lower_tma_copies},
    {"warp_specialize", lower_warp_specialize},
    {"smem_plan", lower_smem_plan},
    {NULL, NULL},
};

static const lower_pass *find_pass(const char *name, size_t len) {
    for (const lower_pass *p = lower_passes; p->name; p++)
        if (strlen(p->name) == len && !strncmp(p->name, name, len)) return p;
    return NULL;
}

bool lower_is_pass_name(const char *name) { return name && find_pass(name, strlen(name)) != NULL; }

bool lower_passes_valid(const char *passes, tc_diag *diag) {
    if (!strcmp(passes, "none")) return true;
    for (const char *s = passes; *s;) {
        size_t len = strcspn(s, ",");
        if (!find_pass(s, len)) {
            tc_error_plain(diag, "passes (--passes): no pass named '%.*s'", (int)len, s);
            return false;
        }
        s += len;
        if (*s == ',') s++;
    }
    return true;
}

static bool run_one(tir_module *m, const lower_pass *p, const lower_options *opt, tc_diag *diag) {
    if (!p->run(m, opt, diag)) return false;
    if (!tir_verify(m, p->name, diag)) return false;
    const tilec_options *o = &opt->compile;
    if (opt->dump_out && (o->dump_all || (o->dump_after && !strcmp(o->dump_after, p->name)))) {
        tc_strbuf_printf(opt->dump_out, "// -----// IR Dump After %s //----- //\n", p->name);
        tir_print_module(opt->dump_out, m, 0);
    }
    return true;
}

bool lower_run_pipeline(tir_module *m, const lower_options *opt, tc_diag *diag) {
    const char *passes = opt->compile.passes;
    if (!passes) {
        for (const lower_pass *p = lower_passes; p->name; p++)
            if (!run_one(m, p, opt, diag)) return false;
        return true;
    }
    if (!strcmp(passes, "none")) return true;
    for (const char *s = passes; *s;) {
        size_t len = strcspn(s, ",");
        const lower_pass *p = find_pass(s, len);
        if (!p) {
            tc_error_plain(diag, "passes (--passes): no pass named '%.*s'", (int)len, s);
            return false;
        }
        if (!run_one(m, p, opt, diag)) return false;
        s += len;
        if (*s == ',') s++;
    }
    return true;
}
