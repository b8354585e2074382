/* lang.h - the language stage: the checks that turn an AST (lang/ast.h,
 * which the parser builds) into tile IR (name resolution, types,
 * promotion, constant-parameter specialization). */
#ifndef TILEC_LANG_H
#define TILEC_LANG_H

#include "lang/ast.h"
#include "support/support.h"
#include "tileir/tileir.h"

/* ---- checking and lowering to tile IR ---------------------------------- */
typedef struct lang_define {
    const char *name; /* const parameter name */
    int64_t value;    /* -D NAME=VALUE; floats are not accepted in v0 */
    bool used;        /* set by lang_to_tir when some kernel took it */
} lang_define;

typedef struct lang_options {
    lang_define *defines;
    uint32_t ndefines;
    const char *only_kernel; /* NULL: every kernel in the file */
    int num_warps;           /* recorded on each tir_func */
    bool no_asserts;         /* assert(...) is checked, then left out of the IR */
    int num_stages;          /* recorded on each tir_func (0: the compiler's choice) */
} lang_options;

/* Resolves names, checks types, specializes const parameters and builds one
 * tir_func per kernel. Reports every independent error it finds; returns
 * NULL if there was any. */
tir_module *lang_to_tir(ast_module *m, const lang_options *opt, tc_arena *arena, tc_diag *diag);

#endif
