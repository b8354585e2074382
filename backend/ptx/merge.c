/* merge.c - PTX modules of one target made one, so that one assembler run
 * takes kernels whose LLVM modules were built apart (on several threads).
 *
 * A PTX module is a header (.version, .target, .address_size) and then
 * top-level statements: declarations ending in ';' (.extern .shared
 * buffers, .extern .func), functions (.entry or .func, their parameter
 * list and directives up to the body's closing brace), .section blocks
 * and .file lines. The merged module has the first part's header and each
 * part's statements in the parts' order, except a statement that is not a
 * function and is written exactly as one already taken (the same extern
 * declared by each part, the same source file named by each): PTX allows
 * a symbol to be declared once, and labels ($L__BB0_1) are local to their
 * function, so nothing else needs renaming. The parts must agree on the
 * header: kernels for different targets do not make one module. */
#include <stdlib.h>
#include <string.h>

#include "backend/ptx/ptx.h"

/* One top-level statement of a part: text[begin, end), with the comment
 * and blank lines before it. */
typedef struct ptx_stmt {
    size_t begin, end;
    size_t code; /* where its first line of code starts, after those */
    bool function;
} ptx_stmt;

static bool blank_or_comment(const char *line, size_t len) {
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) i++;
    return i == len || (i + 1 < len && line[i] == '/' && line[i + 1] == '/');
}

/* Nesting of braces and parentheses after one line of code (outside
 * strings and // comments); *semi says whether its code ends with ';'. */
static int line_depth(const char *line, size_t len, int depth, bool *semi) {
    bool in_str = false;
    char last = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = line[i];
        if (in_str) {
            if (ch == '\\' && i + 1 < len)
                i++;
            else if (ch == '"')
                in_str = false;
            continue;
        }
        if (ch == '/' && i + 1 < len && line[i + 1] == '/') break;
        if (ch == '"')
            in_str = true;
        else if (ch == '{' || ch == '(')
            depth++;
        else if (ch == '}' || ch == ')')
            depth--;
        if (ch != ' ' && ch != '\t' && ch != '\r') last = ch;
    }
    *semi = last == ';';
    return depth;
}

static bool starts_with_word(const char *s, size_t len, const char *word) {
    while (len && (*s == ' ' || *s == '\t')) s++, len--;
    size_t n = strlen(word);
    return len >= n && !memcmp(s, word, n) && (len == n || s[n] == ' ' || s[n] == '\t');
}

/* The end of the header: just after the .address_size line (or the
 * .target line, where there is none), 0 when there is no .target. */
static size_t header_end(const char *t, size_t n) {
    size_t end = 0;
    for (size_t at = 0; at < n;) {
        const char *nl = memchr(t + at, '\n', n - at);
        size_t len = nl ? (size_t)(nl - (t + at)) : n - at, next = at + len + (nl != NULL);
        if (starts_with_word(t + at, len, ".target"))
            end = next;
        else if (starts_with_word(t + at, len, ".address_size"))
            return next;
        else if (end && !blank_or_comment(t + at, len))
            return end;
        at = next;
    }
    return end;
}

static bool contains(const char *s, size_t len, const char *word) {
    size_t n = strlen(word);
    for (size_t i = 0; i + n <= len; i++)
        if (!memcmp(s + i, word, n)) return true;
    return false;
}

/* Splits t[from, n) into statements (at most max; false past that, or on
 * a statement left open). */
static bool split_stmts(const char *t, size_t from, size_t n, ptx_stmt *out, size_t max, size_t *count) {
    size_t k = 0;
    int depth = 0;
    bool open = false;
    ptx_stmt cur = {.begin = from};
    for (size_t at = from; at < n;) {
        const char *nl = memchr(t + at, '\n', n - at);
        size_t len = nl ? (size_t)(nl - (t + at)) : n - at, next = at + len + (nl != NULL);
        if (!open && blank_or_comment(t + at, len)) {
            at = next;
            continue; /* before a statement: goes with it */
        }
        bool first = !open, semi = false, file_line = false;
        if (first) {
            open = true;
            cur.code = at;
            /* a definition; a declaration (".extern .func ...") is not a function here */
            cur.function = (starts_with_word(t + at, len, ".visible") || starts_with_word(t + at, len, ".entry") ||
                            starts_with_word(t + at, len, ".func") || starts_with_word(t + at, len, ".weak")) &&
                           !contains(t + at, len, ".extern");
            file_line = starts_with_word(t + at, len, ".file"); /* a line of its own, no ';' */
        }
        bool brace = memchr(t + at, '}', len) != NULL;
        depth = line_depth(t + at, len, depth, &semi);
        if (depth < 0) return false;
        at = next;
        if (depth == 0 && (semi || brace || file_line)) {
            if (k == max) return false;
            cur.end = at;
            out[k++] = cur;
            cur = (ptx_stmt){.begin = at};
            open = false;
        }
    }
    if (open) return false;
    *count = k;
    return true;
}

static bool same_text(const char *a, size_t alen, const char *b, size_t blen) {
    return alen == blen && !memcmp(a, b, alen);
}

bool ptx_merge(const char *const *parts, const size_t *lens, size_t n, tc_strbuf *out, tc_diag *diag) {
    if (n == 1) {
        tc_strbuf_putn(out, parts[0], lens[0]);
        return true;
    }
    size_t max = 0;
    for (size_t i = 0; i < n; i++) max += lens[i] / 2 + 1; /* a statement takes two bytes at least */
    ptx_stmt *all = malloc(max * sizeof *all);
    size_t *part_of = malloc(max * sizeof *part_of), total = 0;
    bool ok = all && part_of;
    size_t h0 = n ? header_end(parts[0], lens[0]) : 0;
    for (size_t i = 0; i < n && ok; i++) {
        size_t h = header_end(parts[i], lens[i]), count = 0;
        if (!h || !same_text(parts[i], h, parts[0], h0)) {
            tc_error_plain(diag, "internal error: PTX modules for different targets (or without one) cannot be merged");
            ok = false;
            break;
        }
        if (!split_stmts(parts[i], h, lens[i], all + total, max - total, &count)) {
            tc_error_plain(diag, "internal error: PTX module %zu has a statement left open (unbalanced braces)", i);
            ok = false;
            break;
        }
        for (size_t s = 0; s < count; s++) part_of[total + s] = i;
        total += count;
    }
    if (ok) {
        tc_strbuf_putn(out, parts[0], h0);
        for (size_t s = 0; s < total; s++) {
            const ptx_stmt *st = &all[s];
            const char *code = parts[part_of[s]] + st->code;
            size_t clen = st->end - st->code;
            bool seen = false;
            for (size_t e = 0; e < s && !st->function && !seen; e++)
                seen = !all[e].function &&
                       same_text(parts[part_of[e]] + all[e].code, all[e].end - all[e].code, code, clen);
            if (!seen) tc_strbuf_putn(out, parts[part_of[s]] + st->begin, st->end - st->begin);
        }
    } else if (!all || !part_of) {
        tc_error_plain(diag, "out of memory merging PTX");
    }
    free(all);
    free(part_of);
    return ok;
}
