/* gradcheck - the GPT sample's backward pass against central differences
 * of its forward pass (a test in the suite: tests/CMakeLists.txt runs it
 * on the CPU device):
 *
 *   gradcheck [cpu|emu]
 *
 * A tiny model in f32 with exact (IEEE) matrix products, one batch of
 * random tokens: for every parameter tensor, the few elements with the
 * largest analytic gradient |g| (where a wrong backward shows most), and
 * one at random, their gradient against (L(w + e) - L(w - e)) / 2e with
 * L the mean loss summed in double on the host. The tolerance is stated
 * below; exits 1 on a mismatch, naming the tensor and element. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt.h"

/* central differences of f32 losses: the step balances truncation
 * (e^2 f''') against the losses' rounding (about 1e-7 of ln 256 per row,
 * divided by 2e); measured errors sit far below the tolerance */
static const float STEP = 1e-2f;
static const double REL_TOL = 2e-2, ABS_TOL = 1e-4;
enum { PER_TENSOR = 3, MAX_TENSORS = 4 + 12 * GPT_MAX_LAYERS };

typedef struct tensor_ref {
    const char *name;
    int layer;
    size_t at, n;
} tensor_ref;

static int tensors(const gpt_model *m, tensor_ref *t) {
    size_t C = (size_t)m->cfg.n_embd;
    int k = 0;
    t[k++] = (tensor_ref){"wte", -1, m->p.wte, GPT_VOCAB * C};
    t[k++] = (tensor_ref){"wpe", -1, m->p.wpe, (size_t)m->cfg.seq * C};
    t[k++] = (tensor_ref){"lnf_w", -1, m->p.lnf_w, C};
    t[k++] = (tensor_ref){"lnf_b", -1, m->p.lnf_b, C};
    for (int l = 0; l < m->cfg.n_layer; l++) {
        const gpt_layer_params *P = &m->p.layer[l];
        const struct { const char *name; size_t at, n; } in[] = {
            {"ln1_w", P->ln1_w, C},  {"ln1_b", P->ln1_b, C},         {"w_qkv", P->w_qkv, 3 * C * C},
            {"b_qkv", P->b_qkv, 3 * C}, {"w_proj", P->w_proj, C * C}, {"b_proj", P->b_proj, C},
            {"ln2_w", P->ln2_w, C},  {"ln2_b", P->ln2_b, C},         {"w_fc", P->w_fc, 4 * C * C},
            {"b_fc", P->b_fc, 4 * C}, {"w_fc2", P->w_fc2, 4 * C * C}, {"b_fc2", P->b_fc2, C}};
        for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) t[k++] = (tensor_ref){in[i].name, l, in[i].at, in[i].n};
    }
    return k;
}

static int loss_at(gpt_model *m, int B, int T, size_t i, float w, double *loss) {
    return trt_write(m->dev, m->master, i * 4, &w, 4) == TRT_OK && gpt_forward(m, B, T, true, false) == TRT_OK &&
           gpt_mean_loss(m, B * T, loss) == TRT_OK;
}

int main(int argc, char **argv) {
    const char *kind = argc > 1 ? argv[1] : "cpu";
    trt_device *dev;
    char why[512];
    if (trt_open(strcmp(kind, "emu") ? TRT_DEVICE_CPU : TRT_DEVICE_EMU, &dev, why, sizeof why)) {
        fprintf(stderr, "gradcheck: cannot open the %s device: %s\n", kind, why);
        return 1;
    }
    gpt_config cfg = {.name = "check", .n_layer = 2, .n_head = 2, .n_embd = 64, .seq = 8, .batch = 2};
    int B = cfg.batch, T = cfg.seq, R = B * T;
    gpt_model m;
    trt_status st = gpt_create(&m, dev, &cfg, TLS_F32, 7);
    if (st) {
        fprintf(stderr, "gradcheck: %s\n", trt_last_error(dev));
        return 1;
    }
    m.ieee = true;
    /* LayerNorm gains and biases away from 1 and 0, so that their
     * gradients are not special */
    float *w = malloc(m.p.n * 4), *g = malloc(m.p.n * 4);
    trt_read(dev, m.master, 0, w, m.p.n * 4);
    uint64_t s = 99;
    for (size_t i = m.p.n_decay; i < m.p.n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        w[i] += (float)((int)(s >> 40) % 1000) / 2000.0f; /* + [0, 0.5) */
    }
    trt_write(dev, m.master, 0, w, m.p.n * 4);
    int32_t tok[64], tgt[64];
    for (int i = 0; i < R; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        tok[i] = (int32_t)((s >> 33) % GPT_VOCAB), tgt[i] = (int32_t)((s >> 17) % GPT_VOCAB);
    }
    int fails = 0, checked = 0;
    double worst = 0;
    if (trt_write(dev, m.tokens, 0, tok, (size_t)R * 4) || trt_write(dev, m.targets, 0, tgt, (size_t)R * 4) ||
        gpt_forward(&m, B, T, true, true) || trt_read(dev, m.grads, 0, g, m.p.n * 4)) {
        fprintf(stderr, "gradcheck: %s\n", trt_last_error(dev));
        return 1;
    }
    tensor_ref t[MAX_TENSORS];
    int nt = tensors(&m, t);
    for (int k = 0; k < nt; k++) {
        size_t pick[PER_TENSOR + 1];
        int np = 0;
        /* the largest |g| ... */
        for (int p = 0; p < PER_TENSOR; p++) {
            size_t best = t[k].at;
            double bv = -1;
            for (size_t i = t[k].at; i < t[k].at + t[k].n; i++) {
                int taken = 0;
                for (int q = 0; q < np; q++) taken |= pick[q] == i;
                if (!taken && fabs(g[i]) > bv) bv = fabs(g[i]), best = i;
            }
            pick[np++] = best;
        }
        /* ... and one anywhere */
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        pick[np++] = t[k].at + (s >> 33) % t[k].n;
        for (int q = 0; q < np; q++) {
            size_t i = pick[q];
            double lp, lm, restored;
            if (!loss_at(&m, B, T, i, w[i] + STEP, &lp) || !loss_at(&m, B, T, i, w[i] - STEP, &lm) ||
                !loss_at(&m, B, T, i, w[i], &restored)) {
                fprintf(stderr, "gradcheck: %s\n", trt_last_error(dev));
                return 1;
            }
            double num = (lp - lm) / (2.0 * STEP), err = fabs(num - g[i]);
            double allowed = REL_TOL * fabs(num) + ABS_TOL;
            worst = fmax(worst, err / allowed);
            checked++;
            if (!(err <= allowed)) {
                fails++;
                char where[64];
                snprintf(where, sizeof where, t[k].layer >= 0 ? "layer %d's " : "", t[k].layer);
                fprintf(stderr, "gradcheck: %s%s[%zu]: backward %.6g, central difference %.6g\n", where, t[k].name,
                        i - t[k].at, (double)g[i], num);
            }
        }
    }
    printf("gradcheck on %s: %d gradients of %d tensors against central differences, worst error / tolerance "
           "%.3f (tolerance %.0e relative + %.0e)%s\n",
           trt_device_name(dev), checked, nt, worst, REL_TOL, ABS_TOL, fails ? ": FAILED" : "");
    free(w), free(g);
    gpt_destroy(&m);
    trt_close(dev);
    return fails ? 1 : 0;
}
