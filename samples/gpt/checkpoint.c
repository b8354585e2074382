/* checkpoint.c - the GPT sample's checkpoint files (gpt.h; docs/gpt.md
 * describes the format): a header, then the f32 master weights and
 * AdamW's two moments in the parameters' layout (gpt_params_layout), all
 * little-endian. A resumed run reads back every number that decides the
 * next step, so on the CPU device it continues bit for bit. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt.h"

static const char MAGIC[8] = "TLCGPT1";
enum { CKPT_VERSION = 1 };

typedef struct header {
    char magic[8];
    uint32_t version, dtype;
    int32_t n_layer, n_head, n_embd, seq, batch, pad;
    int64_t step;
    uint64_t data_rng, n_params;
} header;

static const char *fail(char *why, size_t n, const char *fmt, const char *path) {
    snprintf(why, n, fmt, path, strerror(errno));
    return why;
}

/* f32 values of buffer b (n of them) to or from f, through a bounded host
 * buffer */
enum { CKPT_CHUNK = 1 << 20 };

static int copy_out(gpt_model *m, trt_buffer b, size_t n, FILE *f) {
    float *tmp = malloc(CKPT_CHUNK * sizeof *tmp);
    int ok = tmp != NULL;
    for (size_t at = 0; ok && at < n; at += CKPT_CHUNK) {
        size_t k = n - at < CKPT_CHUNK ? n - at : CKPT_CHUNK;
        ok = trt_read(m->dev, b, at * 4, tmp, k * 4) == TRT_OK && fwrite(tmp, 4, k, f) == k;
    }
    free(tmp);
    return ok;
}

static int copy_in(gpt_model *m, trt_buffer b, size_t n, FILE *f) {
    float *tmp = malloc(CKPT_CHUNK * sizeof *tmp);
    int ok = tmp != NULL;
    for (size_t at = 0; ok && at < n; at += CKPT_CHUNK) {
        size_t k = n - at < CKPT_CHUNK ? n - at : CKPT_CHUNK;
        ok = fread(tmp, 4, k, f) == k && trt_write(m->dev, b, at * 4, tmp, k * 4) == TRT_OK;
    }
    free(tmp);
    return ok;
}

const char *gpt_save(gpt_model *m, const char *path, const gpt_checkpoint_state *s, char *why, size_t n) {
    /* written beside, then renamed: a crash mid-write leaves the old file */
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) return "the checkpoint's path is too long";
    FILE *f = fopen(tmp, "wb");
    if (!f) return fail(why, n, "cannot write the checkpoint '%s': %s", tmp);
    header h = {.version = CKPT_VERSION, .dtype = (uint32_t)m->dt, .n_layer = m->cfg.n_layer,
                .n_head = m->cfg.n_head, .n_embd = m->cfg.n_embd, .seq = m->cfg.seq, .batch = m->cfg.batch,
                .step = s->step, .data_rng = s->data_rng, .n_params = m->p.n};
    memcpy(h.magic, MAGIC, sizeof MAGIC);
    int ok = fwrite(&h, sizeof h, 1, f) == 1 && copy_out(m, m->master, m->p.n, f) && copy_out(m, m->m, m->p.n, f) &&
             copy_out(m, m->v, m->p.n, f);
    ok &= fclose(f) == 0;
    if (!ok || rename(tmp, path)) {
        remove(tmp);
        return fail(why, n, "cannot write the checkpoint '%s': %s", path);
    }
    return NULL;
}

static const char *read_header(const char *path, FILE *f, header *h, char *why, size_t n) {
    if (fread(h, sizeof *h, 1, f) != 1 || memcmp(h->magic, MAGIC, sizeof MAGIC)) {
        snprintf(why, n, "'%s' is not a tilec GPT checkpoint", path);
        return why;
    }
    if (h->version != CKPT_VERSION) {
        snprintf(why, n, "'%s' is a version %u checkpoint; this sample reads version %d", path, h->version,
                 CKPT_VERSION);
        return why;
    }
    return NULL;
}

const char *gpt_peek(const char *path, gpt_config *cfg, tls_dtype *dt, char *why, size_t n) {
    FILE *f = fopen(path, "rb");
    if (!f) return fail(why, n, "cannot read the checkpoint '%s': %s", path);
    header h;
    const char *err = read_header(path, f, &h, why, n);
    fclose(f);
    if (err) return err;
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->name, sizeof cfg->name, "checkpoint");
    cfg->n_layer = h.n_layer, cfg->n_head = h.n_head, cfg->n_embd = h.n_embd, cfg->seq = h.seq,
    cfg->batch = h.batch;
    *dt = (tls_dtype)h.dtype;
    const char *bad = gpt_config_check(cfg);
    if (bad || (h.dtype != TLS_F32 && h.dtype != TLS_BF16)) {
        snprintf(why, n, "'%s' holds a configuration this sample cannot build: %s", path, bad ? bad : "its dtype");
        return why;
    }
    return NULL;
}

const char *gpt_load(gpt_model *m, const char *path, gpt_checkpoint_state *s, char *why, size_t n) {
    if (!why || n < 2) return "gpt_load: no room for a message";
    FILE *f = fopen(path, "rb");
    if (!f) return fail(why, n, "cannot read the checkpoint '%s': %s", path);
    header h;
    const char *err = read_header(path, f, &h, why, n);
    if (!err && (h.n_layer != m->cfg.n_layer || h.n_head != m->cfg.n_head || h.n_embd != m->cfg.n_embd ||
                 h.seq != m->cfg.seq || h.n_params != m->p.n)) {
        snprintf(why, n,
                 "'%s' holds a model of another shape (n_layer %d, n_head %d, n_embd %d, seq %d), not this one "
                 "(%d, %d, %d, %d)",
                 path, h.n_layer, h.n_head, h.n_embd, h.seq, m->cfg.n_layer, m->cfg.n_head, m->cfg.n_embd,
                 m->cfg.seq);
        err = why;
    }
    if (!err && !(copy_in(m, m->master, m->p.n, f) && copy_in(m, m->m, m->p.n, f) && copy_in(m, m->v, m->p.n, f))) {
        snprintf(why, n, "'%s' is cut short or unreadable", path);
        err = why;
    }
    fclose(f);
    if (err) return err;
    s->step = h.step;
    s->data_rng = h.data_rng;
    /* the compute dtype's weights from the masters */
    if (m->dt != TLS_F32 && tls_convert(m->dev, TLS_F32, tls_mem_of(m->master), m->dt, tls_mem_of(m->weights),
                                        (int64_t)m->p.n, NULL) != TRT_OK) {
        snprintf(why, n, "%s", trt_last_error(m->dev));
        return why;
    }
    return NULL;
}
