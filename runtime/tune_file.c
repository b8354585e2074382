/* tune_file.c - a trt_tuning: the tuner's winners by key, and the tuning
 * file that keeps them (docs/tuning.md has the format):
 *
 *   tilec-tuning 1
 *   # kernel source-hash arch "device" bucket settings...
 *   matmul_f16 0123456789abcdef sm_90 "cuda: NVIDIA H100 80GB HBM3 (sm_90)" M=4096,N=4096,K=4096 num_warps=8 num_stages=4 BLOCK_M=128 ...  # cost 812.4 us
 *
 * One entry a line, in key order when saved (so a re-tuned file diffs
 * line by line); comments from '#' to the end of a line, blank lines
 * allowed. Reading is strict: anything else is an error naming file:line,
 * and a file with one leaves the trt_tuning as it was. The cost comment
 * the tuner writes ("# cost X us" measured, "# cost X stand-in" not a
 * time) is kept across a load and a save; other comments are not.
 * In the runtime proper (no compiler): a program that ships a tuning file
 * reads it with the rest of the runtime. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/internal.h"
#include "runtime/tune.h"

#define TUNE_HEADER "tilec-tuning"
enum { TUNE_VERSION = 1, TUNE_HASH_DIGITS = 16 };

struct trt_tuning {
    rt_tune_entry **entries; /* each its own allocation: the defines' names point into it */
    size_t n, cap;
    char err[RT_ERR_MAX];
    char last_used[RT_TUNE_MAX_LINE];
    char last_note[RT_ERR_MAX];
};

uint64_t rt_tune_hash(const char *src, size_t len) {
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)src[i]) * 1099511628211ull;
    return h;
}

const char *rt_tune_arch(const trt_device *d) {
    const char *a = d->ops->code_arch ? d->ops->code_arch(d) : NULL;
    return a && *a ? a : "-";
}

static void set_err(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *buf, size_t size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, size, fmt, ap);
    va_end(ap);
}

trt_status trt_tuning_create(trt_tuning **out) {
    if (!out) return TRT_ERR_INVALID_ARGUMENT;
    *out = calloc(1, sizeof **out);
    return *out ? TRT_OK : TRT_ERR_OUT_OF_MEMORY;
}

static void free_entries(rt_tune_entry **e, size_t n) {
    for (size_t i = 0; i < n; i++) free(e[i]);
    free(e);
}

void trt_tuning_free(trt_tuning *t) {
    if (!t) return;
    free_entries(t->entries, t->n);
    free(t);
}

const char *trt_tuning_error(const trt_tuning *t) { return t ? t->err : "no tuning"; }
const char *trt_tuning_last_used(const trt_tuning *t) { return t ? t->last_used : ""; }
const char *trt_tuning_last_note(const trt_tuning *t) { return t ? t->last_note : ""; }
size_t trt_tuning_num_entries(const trt_tuning *t) { return t ? t->n : 0; }

/* ---- keys and entries ------------------------------------------------------ */

static bool is_ident(const char *s) {
    if (!(isalpha((unsigned char)*s) || *s == '_')) return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_')) return false;
    return true;
}

/* A bucket or arch: printable, no space, quote or '#' (which would end the field or the line). */
static bool is_word(const char *s) {
    if (!*s) return false;
    for (; *s; s++)
        if (!isgraph((unsigned char)*s) || *s == '"' || *s == '#') return false;
    return true;
}

static bool is_device_name(const char *s) {
    if (!*s) return false;
    for (; *s; s++)
        if (!isprint((unsigned char)*s) || *s == '"') return false;
    return true;
}

static int key_cmp(const rt_tune_entry *a, const rt_tune_entry *b) {
    int c;
    if ((c = strcmp(a->kernel, b->kernel))) return c;
    if (a->hash != b->hash) return a->hash < b->hash ? -1 : 1;
    if ((c = strcmp(a->arch, b->arch))) return c;
    if ((c = strcmp(a->device, b->device))) return c;
    return strcmp(a->bucket, b->bucket);
}

static int entry_ptr_cmp(const void *a, const void *b) {
    return key_cmp(*(rt_tune_entry *const *)a, *(rt_tune_entry *const *)b);
}

static rt_tune_entry **find_slot(const trt_tuning *t, const rt_tune_entry *key) {
    for (size_t i = 0; i < t->n; i++)
        if (!key_cmp(t->entries[i], key)) return &t->entries[i];
    return NULL;
}

const rt_tune_entry *rt_tuning_lookup(const trt_tuning *t, const trt_device *d, uint64_t hash, const char *kernel,
                                      const char *bucket) {
    if (!t || !d || !kernel || !bucket) return NULL;
    for (size_t i = 0; i < t->n; i++) {
        const rt_tune_entry *e = t->entries[i];
        if (e->hash == hash && !strcmp(e->kernel, kernel) && !strcmp(e->bucket, bucket) &&
            !strcmp(e->arch, rt_tune_arch(d)) && !strcmp(e->device, trt_device_name(d)))
            return e;
    }
    return NULL;
}

bool rt_tune_entry_define(const rt_tune_entry *e, const char *name, int64_t *value) {
    for (size_t i = 0; i < e->ndefines; i++)
        if (!strcmp(e->names[i], name)) {
            *value = e->defines[i].value;
            return true;
        }
    return false;
}

/* Puts e (taken) in t, replacing the entry of its key; false when full. */
static bool insert(trt_tuning *t, rt_tune_entry *e) {
    rt_tune_entry **slot = find_slot(t, e);
    if (slot) {
        free(*slot);
        *slot = e;
        return true;
    }
    if (t->n == RT_TUNE_MAX_ENTRIES) {
        set_err(t->err, sizeof t->err, "too many tuning entries (limit is %d)", RT_TUNE_MAX_ENTRIES);
        return false;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 16;
        rt_tune_entry **p = realloc(t->entries, cap * sizeof *p);
        if (!p) {
            set_err(t->err, sizeof t->err, "out of memory");
            return false;
        }
        t->entries = p, t->cap = cap;
    }
    t->entries[t->n++] = e;
    return true;
}

/* Adds a const to e; false with a message in err. */
static bool add_define(rt_tune_entry *e, const char *name, int64_t value, char *err, size_t err_size) {
    if (!is_ident(name) || strlen(name) >= TRT_TUNE_MAX_NAME) {
        set_err(err, err_size, "'%s' is not a const name (an identifier of at most %d bytes)", name,
                TRT_TUNE_MAX_NAME - 1);
        return false;
    }
    if (!strcmp(name, "num_warps") || !strcmp(name, "num_stages")) {
        set_err(err, err_size, "'%s' is a setting of the configuration, not a const", name);
        return false;
    }
    int64_t old;
    if (rt_tune_entry_define(e, name, &old)) {
        set_err(err, err_size, "const '%s' is given twice", name);
        return false;
    }
    if (e->ndefines == TRT_TUNE_MAX_DEFINES) {
        set_err(err, err_size, "too many consts (limit is %d)", TRT_TUNE_MAX_DEFINES);
        return false;
    }
    size_t i = e->ndefines++;
    snprintf(e->names[i], sizeof e->names[i], "%s", name);
    e->defines[i] = (tilec_define){.name = e->names[i], .value = value};
    return true;
}

static bool check_settings(int num_warps, int num_stages, char *err, size_t err_size) {
    if (num_warps < 0 || num_warps > TILEC_MAX_NUM_WARPS || (num_warps & (num_warps - 1))) {
        set_err(err, err_size, "num_warps %d must be 0 (the compiler's) or a power of two up to %d", num_warps,
                TILEC_MAX_NUM_WARPS);
        return false;
    }
    if (num_stages < 0 || num_stages > TILEC_MAX_NUM_STAGES) {
        set_err(err, err_size, "num_stages %d must be from 0 (the compiler's) to %d", num_stages,
                TILEC_MAX_NUM_STAGES);
        return false;
    }
    return true;
}

bool rt_tuning_put(trt_tuning *t, const trt_device *d, uint64_t hash, const char *kernel, const char *bucket,
                   const trt_tune_config *cfg, const trt_tune_outcome *won) {
    rt_tune_entry *e = calloc(1, sizeof *e);
    if (!e) {
        set_err(t->err, sizeof t->err, "out of memory");
        return false;
    }
    const char *arch = rt_tune_arch(d), *dev = trt_device_name(d);
    bool ok = true;
    if (!is_ident(kernel) || strlen(kernel) >= sizeof e->kernel)
        ok = false, set_err(t->err, sizeof t->err, "kernel '%s' is not an identifier of at most %d bytes", kernel,
                            TRT_TUNE_MAX_NAME - 1);
    else if (!is_word(bucket) || strlen(bucket) >= sizeof e->bucket)
        ok = false, set_err(t->err, sizeof t->err,
                            "bucket '%s' must be 1 to %d printable bytes without spaces, '\"' or '#'", bucket,
                            TRT_TUNE_MAX_BUCKET - 1);
    else if (!is_word(arch) || strlen(arch) >= sizeof e->arch || !is_device_name(dev) || strlen(dev) >= sizeof e->device)
        ok = false, set_err(t->err, sizeof t->err, "the device '%s' (%s) cannot be named in a tuning file", dev, arch);
    if (ok) {
        snprintf(e->kernel, sizeof e->kernel, "%s", kernel);
        snprintf(e->bucket, sizeof e->bucket, "%s", bucket);
        snprintf(e->arch, sizeof e->arch, "%s", arch);
        snprintf(e->device, sizeof e->device, "%s", dev);
        e->hash = hash;
        e->num_warps = cfg->num_warps, e->num_stages = cfg->num_stages;
        if (won) e->has_cost = true, e->timed = won->timed, e->cost = won->cost;
        ok = check_settings(cfg->num_warps, cfg->num_stages, t->err, sizeof t->err);
        for (size_t i = 0; ok && i < cfg->ndefines; i++)
            ok = add_define(e, cfg->defines[i].name ? cfg->defines[i].name : "", cfg->defines[i].value, t->err,
                            sizeof t->err);
    }
    if (!ok || !insert(t, e)) {
        free(e);
        return false;
    }
    return true;
}

/* ---- the file -------------------------------------------------------------- */

/* The entry as its file line, without the newline. */
static void format_entry(const rt_tune_entry *e, char *buf, size_t size) {
    int n = snprintf(buf, size, "%s %016" PRIx64 " %s \"%s\" %s num_warps=%d num_stages=%d", e->kernel, e->hash,
                     e->arch, e->device, e->bucket, e->num_warps, e->num_stages);
    for (size_t i = 0; i < e->ndefines && n >= 0 && (size_t)n < size; i++)
        n += snprintf(buf + n, size - (size_t)n, " %s=%" PRId64, e->names[i], e->defines[i].value);
    if (e->has_cost && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, "  # cost %.6g %s", e->cost, e->timed ? "us" : "stand-in");
}

trt_status trt_tuning_save(const trt_tuning *t, const char *path) {
    if (!t) return TRT_ERR_INVALID_ARGUMENT;
    trt_tuning *w = (trt_tuning *)t; /* its error buffer only */
    if (!path) {
        set_err(w->err, sizeof w->err, "trt_tuning_save: path is NULL");
        return TRT_ERR_INVALID_ARGUMENT;
    }
    rt_tune_entry **sorted = malloc((t->n + 1) * sizeof *sorted);
    if (!sorted) return TRT_ERR_OUT_OF_MEMORY;
    if (t->n) memcpy(sorted, t->entries, t->n * sizeof *sorted);
    qsort(sorted, t->n, sizeof *sorted, entry_ptr_cmp);
    FILE *f = fopen(path, "w");
    if (!f) {
        set_err(w->err, sizeof w->err, "%s: error: cannot write: %s", path, strerror(errno));
        free(sorted);
        return TRT_ERR_INVALID_ARGUMENT;
    }
    fprintf(f, "%s %d\n", TUNE_HEADER, TUNE_VERSION);
    fprintf(f, "# kernel source-hash arch \"device\" bucket num_warps=N num_stages=N CONST=V...  (docs/tuning.md)\n");
    char line[RT_TUNE_MAX_LINE];
    for (size_t i = 0; i < t->n; i++) {
        format_entry(sorted[i], line, sizeof line);
        fprintf(f, "%s\n", line);
    }
    free(sorted);
    if (ferror(f) | (fclose(f) != 0)) {
        set_err(w->err, sizeof w->err, "%s: error: cannot write: %s", path, strerror(errno));
        return TRT_ERR_INVALID_ARGUMENT;
    }
    return TRT_OK;
}

/* A line being read: where it is, and the next field. */
typedef struct cursor {
    char *p;
} cursor;

static void skip_space(cursor *c) {
    while (*c->p == ' ' || *c->p == '\t') c->p++;
}

/* The next space-separated field (NUL-terminated in place), "" at the end. */
static char *next_field(cursor *c) {
    skip_space(c);
    char *s = c->p;
    while (*c->p && *c->p != ' ' && *c->p != '\t') c->p++;
    if (*c->p) *c->p++ = 0;
    return s;
}

static bool parse_int(const char *s, int64_t *v) {
    if (!*s) return false;
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (*end || errno || !(isdigit((unsigned char)*s) || ((*s == '-' || *s == '+') && isdigit((unsigned char)s[1]))))
        return false;
    *v = x;
    return true;
}

/* The cost comment the saver writes, kept in e; any other comment is ignored. */
static void read_cost_comment(const char *comment, rt_tune_entry *e) {
    double cost;
    char unit[16];
    int used = 0;
    if (sscanf(comment, " cost %lf %15s %n", &cost, unit, &used) == 2 && !comment[used] &&
        (!strcmp(unit, "us") || !strcmp(unit, "stand-in")))
        e->has_cost = true, e->timed = !strcmp(unit, "us"), e->cost = cost;
}

/* One entry line (its comment cut off into `comment`, NULL: none) into
 * e; false with the message (without the location) in err. */
static bool parse_entry(char *line, const char *comment, rt_tune_entry *e, char *err, size_t es) {
    cursor c = {line};
    char *kernel = next_field(&c), *hash = next_field(&c), *arch = next_field(&c);
    if (!is_ident(kernel) || strlen(kernel) >= sizeof e->kernel) {
        set_err(err, es, "expected a kernel name (an identifier of at most %d bytes), not '%s'", TRT_TUNE_MAX_NAME - 1,
                kernel);
        return false;
    }
    snprintf(e->kernel, sizeof e->kernel, "%s", kernel);
    bool hex = strlen(hash) == TUNE_HASH_DIGITS;
    for (const char *h = hash; hex && *h; h++) hex = isdigit((unsigned char)*h) || (*h >= 'a' && *h <= 'f');
    if (!hex) {
        set_err(err, es, "expected the source hash, %d lowercase hex digits, not '%s'", TUNE_HASH_DIGITS, hash);
        return false;
    }
    e->hash = strtoull(hash, NULL, 16);
    if (!is_word(arch) || strlen(arch) >= sizeof e->arch) {
        set_err(err, es, "expected an arch ('sm_90', or '-' for the CPU device), not '%s'", arch);
        return false;
    }
    snprintf(e->arch, sizeof e->arch, "%s", arch);
    skip_space(&c);
    char *close = *c.p == '"' ? strchr(c.p + 1, '"') : NULL;
    if (!close) {
        set_err(err, es, "expected the device's name in double quotes");
        return false;
    }
    *close = 0;
    if (!is_device_name(c.p + 1) || strlen(c.p + 1) >= sizeof e->device) {
        set_err(err, es, "the device's name must be 1 to %d printable bytes", RT_TUNE_MAX_DEVICE - 1);
        return false;
    }
    snprintf(e->device, sizeof e->device, "%s", c.p + 1);
    c.p = close + 1;
    if (*c.p && *c.p != ' ' && *c.p != '\t') {
        set_err(err, es, "expected a space after the device's name");
        return false;
    }
    char *bucket = next_field(&c);
    if (!is_word(bucket) || strlen(bucket) >= sizeof e->bucket) {
        set_err(err, es, "expected a shape bucket (1 to %d bytes, no spaces), not '%s'", TRT_TUNE_MAX_BUCKET - 1,
                *bucket ? bucket : "the end of the line");
        return false;
    }
    snprintf(e->bucket, sizeof e->bucket, "%s", bucket);
    bool warps = false, stages = false;
    for (char *f; *(f = next_field(&c));) {
        char *eq = strchr(f, '=');
        int64_t v;
        if (!eq || !parse_int(eq + 1, &v)) {
            set_err(err, es, "expected NAME=INTEGER, not '%s'", f);
            return false;
        }
        *eq = 0;
        bool is_warps = !strcmp(f, "num_warps"), is_stages = !strcmp(f, "num_stages");
        if ((is_warps && warps) || (is_stages && stages)) {
            set_err(err, es, "%s is given twice", f);
            return false;
        }
        if (is_warps || is_stages) {
            if (v < INT32_MIN || v > INT32_MAX) v = -1; /* out of range, said below */
            if (is_warps) warps = true, e->num_warps = (int)v;
            else stages = true, e->num_stages = (int)v;
        } else if (!add_define(e, f, v, err, es))
            return false;
    }
    if (!warps || !stages) {
        set_err(err, es, "expected num_warps=N and num_stages=N (0: the compiler's)");
        return false;
    }
    if (!check_settings(e->num_warps, e->num_stages, err, es)) return false;
    if (comment) read_cost_comment(comment, e);
    return true;
}

/* The line's comment: cut off at the first '#' outside the device's quotes. */
static char *cut_comment(char *line) {
    bool quoted = false;
    for (char *p = line; *p; p++) {
        if (*p == '"') quoted = !quoted;
        else if (*p == '#' && !quoted) {
            *p = 0;
            return p + 1;
        }
    }
    return NULL;
}

static bool blank(const char *s) {
    for (; *s; s++)
        if (!isspace((unsigned char)*s)) return false;
    return true;
}

trt_status trt_tuning_load(trt_tuning *t, const char *path) {
    if (!t) return TRT_ERR_INVALID_ARGUMENT;
    if (!path) {
        set_err(t->err, sizeof t->err, "trt_tuning_load: path is NULL");
        return TRT_ERR_INVALID_ARGUMENT;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        set_err(t->err, sizeof t->err, "%s: error: cannot read: %s", path, strerror(errno));
        return TRT_ERR_INVALID_ARGUMENT;
    }
    trt_tuning got = {0}; /* the file's entries, added to t only if all of it reads */
    size_t *lines = NULL; /* each entry's line, for a duplicate's message */
    char line[RT_TUNE_MAX_LINE + 2], why[RT_ERR_MAX] = "";
    unsigned lineno = 0;
    bool header = false;
    trt_status st = TRT_OK;
    while (st == TRT_OK && fgets(line, sizeof line, f)) {
        lineno++;
        size_t len = strlen(line);
        if (len && line[len - 1] == '\n') line[--len] = 0;
        else if (!feof(f)) {
            set_err(why, sizeof why, "the line is longer than %d bytes", RT_TUNE_MAX_LINE);
            st = TRT_ERR_INVALID_ARGUMENT;
            break;
        }
        if (len && line[len - 1] == '\r') line[--len] = 0;
        if (!header) {
            int version, used = 0;
            if (sscanf(line, TUNE_HEADER " %d%n", &version, &used) != 1 || !blank(line + used)) {
                set_err(why, sizeof why, "expected the header line '%s %d'", TUNE_HEADER, TUNE_VERSION);
                st = TRT_ERR_INVALID_ARGUMENT;
            } else if (version != TUNE_VERSION) {
                set_err(why, sizeof why, "tuning file version %d; this tilec reads version %d", version, TUNE_VERSION);
                st = TRT_ERR_INVALID_ARGUMENT;
            }
            header = true;
            continue;
        }
        char *comment = cut_comment(line);
        if (blank(line)) continue;
        rt_tune_entry *e = calloc(1, sizeof *e);
        size_t *nl = e ? realloc(lines, (got.n + 1) * sizeof *lines) : NULL;
        if (!e || !nl) {
            free(e);
            set_err(why, sizeof why, "out of memory");
            st = TRT_ERR_OUT_OF_MEMORY;
            break;
        }
        lines = nl;
        if (!parse_entry(line, comment, e, why, sizeof why)) {
            free(e);
            st = TRT_ERR_INVALID_ARGUMENT;
            break;
        }
        rt_tune_entry **dup = find_slot(&got, e);
        if (dup) {
            set_err(why, sizeof why, "a second entry for the key of line %zu", lines[dup - got.entries]);
            free(e);
            st = TRT_ERR_INVALID_ARGUMENT;
            break;
        }
        lines[got.n] = lineno;
        if (!insert(&got, e)) {
            snprintf(why, sizeof why, "%s", got.err);
            free(e);
            st = TRT_ERR_INVALID_ARGUMENT;
        }
    }
    if (st == TRT_OK && ferror(f)) set_err(why, sizeof why, "cannot read: %s", strerror(errno)), st = TRT_ERR_INVALID_ARGUMENT;
    if (st == TRT_OK && !header) set_err(why, sizeof why, "expected the header line '%s %d'", TUNE_HEADER, TUNE_VERSION),
                                 st = TRT_ERR_INVALID_ARGUMENT, lineno = 1;
    fclose(f);
    free(lines);
    /* into t: all or nothing (t's room for the file's new keys first) */
    if (st == TRT_OK && t->n + got.n > RT_TUNE_MAX_ENTRIES)
        set_err(why, sizeof why, "too many tuning entries (limit is %d)", RT_TUNE_MAX_ENTRIES), st = TRT_ERR_INVALID_ARGUMENT;
    if (st == TRT_OK) {
        size_t cap = t->n + got.n + 1;
        rt_tune_entry **p = cap > t->cap ? realloc(t->entries, cap * sizeof *p) : t->entries;
        if (!p) st = TRT_ERR_OUT_OF_MEMORY, set_err(why, sizeof why, "out of memory");
        else {
            if (cap > t->cap) t->entries = p, t->cap = cap;
            for (size_t i = 0; i < got.n; i++) insert(t, got.entries[i]); /* room made above: cannot fail */
            free(got.entries);
            return TRT_OK;
        }
    }
    free_entries(got.entries, got.n);
    set_err(t->err, sizeof t->err, "%s:%u: error: %s", path, lineno, why);
    return st;
}

/* ---- using it -------------------------------------------------------------- */

trt_status trt_tuning_find(const trt_tuning *t, const trt_device *dev, const char *source, size_t len,
                           const char *kernel, const char *bucket, trt_tune_config *cfg) {
    if (!t || !dev || !source || !kernel || !bucket || !cfg) return TRT_ERR_INVALID_ARGUMENT;
    const rt_tune_entry *e = rt_tuning_lookup(t, dev, rt_tune_hash(source, len), kernel, bucket);
    if (!e) return TRT_ERR_NOT_FOUND;
    *cfg = (trt_tune_config){.defines = e->defines, .ndefines = e->ndefines, .num_warps = e->num_warps,
                             .num_stages = e->num_stages};
    return TRT_OK;
}

uint64_t trt_tune_source_hash(const char *source, size_t len) { return source ? rt_tune_hash(source, len) : 0; }

trt_status trt_tuning_put(trt_tuning *t, const trt_device *dev, const char *source, size_t len, const char *kernel,
                          const char *bucket, const trt_tune_config *cfg) {
    if (!t) return TRT_ERR_INVALID_ARGUMENT;
    if (!dev || !source || !kernel || !bucket || !cfg || (cfg->ndefines && !cfg->defines)) {
        set_err(t->err, sizeof t->err, "trt_tuning_put: %s is NULL",
                !dev ? "the device" : !source ? "source" : !kernel ? "kernel" : !bucket ? "bucket" : !cfg ? "cfg" : "cfg->defines");
        return TRT_ERR_INVALID_ARGUMENT;
    }
    if (cfg->ndefines > TRT_TUNE_MAX_DEFINES) {
        set_err(t->err, sizeof t->err, "trt_tuning_put: too many consts (limit is %d)", TRT_TUNE_MAX_DEFINES);
        return TRT_ERR_INVALID_ARGUMENT;
    }
    return rt_tuning_put(t, dev, rt_tune_hash(source, len), kernel, bucket, cfg, NULL) ? TRT_OK
                                                                                       : TRT_ERR_INVALID_ARGUMENT;
}

trt_status trt_use_tuning(trt_device *dev, trt_tuning *t) {
    if (!dev) return TRT_ERR_INVALID_ARGUMENT;
    if (dev->closed) return rt_fail(dev, TRT_ERR_CLOSED, "trt_use_tuning: the device was closed");
    dev->tuning = t;
    return TRT_OK;
}

void rt_tuning_used(trt_tuning *t, const rt_tune_entry *e) { format_entry(e, t->last_used, sizeof t->last_used); }

void rt_tuning_note(trt_tuning *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->last_note, sizeof t->last_note, fmt, ap);
    va_end(ap);
}

trt_status trt_tune_bucket(char *buf, size_t size, const char *const *names, const int64_t *sizes, size_t n) {
    if (!buf || !size || !names || !sizes || !n) return TRT_ERR_INVALID_ARGUMENT;
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n; i++) {
        if (!names[i] || sizes[i] < 1 || sizes[i] > INT64_MAX / 2) return TRT_ERR_INVALID_ARGUMENT;
        int64_t p = 1;
        while (p < sizes[i]) p *= 2;
        int w = snprintf(buf + at, size - at, "%s%s=%" PRId64, i ? "," : "", names[i], p);
        if (w < 0 || (size_t)w >= size - at) {
            buf[0] = 0;
            return TRT_ERR_INVALID_ARGUMENT;
        }
        at += (size_t)w;
    }
    return is_word(buf) ? TRT_OK : (buf[0] = 0, TRT_ERR_INVALID_ARGUMENT);
}
