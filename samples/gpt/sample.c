/* sample - generates text from a checkpoint of the GPT sample with the
 * same kernels that trained it:
 *
 *   samples/gpt/sample gpt.ckpt --prompt "12+34=" --tokens 40 --temperature 0.8 --top-k 20
 *
 * Each new byte runs the forward pass over the last seq bytes of the text
 * (no cache of keys and values: the simplest loop that is right) and draws
 * the next one from the softmax of the last position's logits divided by
 * the temperature, among the top-k (temperature 0: the most likely). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt.h"

static uint64_t next_u64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void usage(FILE *f) {
    fprintf(f, "usage: sample CHECKPOINT [--prompt TEXT] [--tokens N] [--temperature X] [--top-k K]\n"
               "              [--seed N] [--device cpu|emu|cuda|auto]\n"
               "  defaults: an empty prompt (a newline), 200 tokens, temperature 1, top-k 0 (all), seed 1\n");
}

/* the last row of logits, as f32 */
static int last_logits(gpt_model *m, int row, float *out) {
    size_t off = (size_t)row * GPT_VOCAB;
    if (m->dt == TLS_F32) return trt_read(m->dev, m->logits, off * 4, out, GPT_VOCAB * 4) == TRT_OK;
    uint16_t h[GPT_VOCAB];
    if (trt_read(m->dev, m->logits, off * 2, h, sizeof h) != TRT_OK) return 0;
    for (int v = 0; v < GPT_VOCAB; v++) {
        uint32_t bits = (uint32_t)h[v] << 16;
        memcpy(&out[v], &bits, 4);
    }
    return 1;
}

static int draw(const float *logits, float temperature, int top_k, uint64_t *rng) {
    int best = 0;
    for (int v = 1; v < GPT_VOCAB; v++)
        if (logits[v] > logits[best]) best = v;
    if (temperature <= 0) return best;
    /* the k-th largest logit as the cut (k = 0: none) */
    float cut = -INFINITY;
    if (top_k > 0 && top_k < GPT_VOCAB) {
        float sorted[GPT_VOCAB];
        memcpy(sorted, logits, sizeof sorted);
        for (int i = 0; i < top_k; i++)
            for (int j = i + 1; j < GPT_VOCAB; j++)
                if (sorted[j] > sorted[i]) {
                    float t = sorted[i];
                    sorted[i] = sorted[j], sorted[j] = t;
                }
        cut = sorted[top_k - 1];
    }
    double p[GPT_VOCAB], sum = 0;
    for (int v = 0; v < GPT_VOCAB; v++)
        sum += p[v] = logits[v] >= cut ? exp((logits[v] - logits[best]) / temperature) : 0;
    double u = ((next_u64(rng) >> 11) + 0.5) * 0x1p-53 * sum;
    for (int v = 0; v < GPT_VOCAB; v++)
        if ((u -= p[v]) <= 0) return v;
    return best;
}

int main(int argc, char **argv) {
    const char *ckpt = NULL, *prompt = "\n", *device = "auto";
    int tokens = 200, top_k = 0;
    float temperature = 1.0f;
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (a[0] != '-') {
            ckpt = a;
            continue;
        }
        if (!v) {
            fprintf(stderr, "sample: error: %s needs a value (sample --help)\n", a);
            return 2;
        }
        i++;
        char *end = NULL;
        if (!strcmp(a, "--prompt")) prompt = v;
        else if (!strcmp(a, "--device")) device = v;
        else if (!strcmp(a, "--tokens")) tokens = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--top-k")) top_k = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--temperature")) temperature = strtof(v, &end);
        else if (!strcmp(a, "--seed")) seed = strtoull(v, &end, 10);
        else {
            fprintf(stderr, "sample: error: unknown option '%s' (sample --help)\n", a);
            return 2;
        }
        if (end && (*end || end == v || tokens < 0 || top_k < 0 || !(temperature >= 0))) {
            fprintf(stderr, "sample: error: bad value '%s' for %s\n", v, a);
            return 2;
        }
    }
    if (!ckpt) {
        usage(stderr);
        return 2;
    }
    char why[1024];
    gpt_config cfg;
    tls_dtype dt;
    const char *err = gpt_peek(ckpt, &cfg, &dt, why, sizeof why);
    if (err) {
        fprintf(stderr, "sample: error: %s\n", err);
        return 1;
    }
    cfg.batch = 1;
    static const struct { const char *name; trt_device_kind kind; } kinds[] = {
        {"auto", TRT_DEVICE_AUTO}, {"cpu", TRT_DEVICE_CPU}, {"cuda", TRT_DEVICE_CUDA}, {"emu", TRT_DEVICE_EMU}};
    trt_device *dev = NULL;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strcmp(kinds[i].name, device) && trt_open(kinds[i].kind, &dev, why, sizeof why) != TRT_OK) {
            fprintf(stderr, "sample: error: cannot open the %s device: %s\n", device, why);
            return 1;
        }
    if (!dev) {
        fprintf(stderr, "sample: error: no device named '%s' (cpu, emu, cuda or auto)\n", device);
        return 2;
    }
    gpt_model m;
    gpt_checkpoint_state s;
    trt_status st = gpt_create(&m, dev, &cfg, dt, 0);
    if (st || (err = gpt_load(&m, ckpt, &s, why, sizeof why))) {
        fprintf(stderr, "sample: error: %s\n", st ? trt_last_error(dev) : err);
        if (!st) gpt_destroy(&m);
        trt_close(dev);
        return 1;
    }
    if (!*prompt) prompt = "\n"; /* the forward needs one token at least */
    size_t plen = strlen(prompt), n = plen, cap = plen + (size_t)tokens + 1;
    unsigned char *text = malloc(cap);
    int32_t *ctx = malloc((size_t)cfg.seq * 4);
    memcpy(text, prompt, plen);
    fwrite(prompt, 1, plen, stdout);
    uint64_t rng = seed;
    for (int t = 0; t < tokens; t++) {
        int len = n < (size_t)cfg.seq ? (int)n : cfg.seq;
        for (int i = 0; i < len; i++) ctx[i] = text[n - (size_t)len + (size_t)i];
        float logits[GPT_VOCAB];
        if ((st = trt_write(dev, m.tokens, 0, ctx, (size_t)len * 4)) || (st = gpt_forward(&m, 1, len, false, false)) ||
            !last_logits(&m, len - 1, logits)) {
            fprintf(stderr, "\nsample: error: %s\n", trt_last_error(dev));
            break;
        }
        text[n++] = (unsigned char)draw(logits, temperature, top_k, &rng);
        putchar(text[n - 1]);
        fflush(stdout);
    }
    putchar('\n');
    free(text), free(ctx);
    gpt_destroy(&m);
    trt_close(dev);
    return st ? 1 : 0;
}
