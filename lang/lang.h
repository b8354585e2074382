/* lang.h - the language stage: the checks that turn an AST (lang/ast.h,
 * which the parser builds) into tile IR (name resolution, types,
 * promotion, constant-parameter specialization). */
#ifndef TILEC_LANG_H
#define TILEC_LANG_H

#include "lang/ast.h"
#include "support/support.h"
#include "tilec.h"
#include "tileir/tileir.h"

/* ---- checking and lowering to tile IR ---------------------------------- */

/* Resolves names, checks types, specializes const parameters and builds one
 * tir_func per kernel. Of the compilation's options (the one struct the
 * driver passes down; NULL: all defaults) it reads the -D values, which
 * kernel to build (`kernel`), num_warps and num_stages (recorded on each
 * tir_func) and no_asserts (assert(...) is checked, then left out of the
 * IR). A -D value that no kernel built here takes is an error. Reports
 * every independent error it finds; returns NULL if there was any. */
tir_module *lang_to_tir(ast_module *m, const tilec_options *opt, tc_arena *arena, tc_diag *diag);

#endif
