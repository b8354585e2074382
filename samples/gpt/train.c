/* train - trains the GPT sample (gpt.h) on tilec kernels and prints its
 * progress:
 *
 *   samples/gpt/train --device cpu --config tiny --steps 200
 *   samples/gpt/train --device cuda --config small --data input.txt --steps 5000 --save gpt.ckpt
 *
 * Each step draws a batch, runs the forward and backward passes, and one
 * AdamW update (linear warmup, then cosine decay to min-lr), and prints
 * the step's loss, learning rate, gradient norm, time and tokens per
 * second; every eval-every steps, the validation loss (and, on the
 * sample's own addition corpus, the fraction of answer digits it gets
 * right). At the end: a summary, the loss curve as CSV and SVG, and a
 * checkpoint if asked for (--resume continues from one, bit for bit on
 * the CPU device). `train --help` lists the flags; docs/gpt.md explains
 * them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data.h"
#include "gpt.h"
#include "plot.h"

typedef struct opts {
    const char *device, *data, *csv, *svg, *save, *resume, *dump;
    gpt_config cfg;
    tls_dtype dt;
    int steps, warmup, eval_every, eval_batches, save_every, stop_at;
    int shape_given; /* --config or a shape flag: a checkpoint to resume must have this shape */
    int batch_given; /* --batch: a resumed run takes it, else the checkpoint's */
    int graph;       /* replay the step as a graph from the second step on */
    float lr, min_lr, weight_decay, max_norm;
    uint64_t seed;
} opts;

static void usage(FILE *f) {
    fprintf(f,
            "usage: train [options]\n"
            "  --device cpu|emu|cuda|auto   where the kernels run (default auto: the GPU if there is one)\n"
            "  --config tiny|small|gpt2     the model's size (default tiny); then any of\n"
            "  --n-layer N --n-head N --n-embd N --seq N --batch N\n"
            "  --dtype bf16|f32             bf16 matmuls and activations with f32 master weights (default),\n"
            "                               or f32 throughout\n"
            "  --steps N                    training steps (default 100)\n"
            "  --graph on|off               capture the training step as a graph at the second step and\n"
            "                               replay it (default on; the same numbers either way)\n"
            "  --lr X --min-lr X            peak and final learning rate (default 1e-3, 1e-4)\n"
            "  --warmup N                   steps of linear warmup (default steps / 10)\n"
            "  --weight-decay X             AdamW's, on matrices and embeddings (default 0.1)\n"
            "  --max-norm X                 clip the gradients' global norm (default 1; 0: none)\n"
            "  --seed N                     weights, data and batches (default 1)\n"
            "  --data FILE                  a text file to learn (bytes are tokens); default: the\n"
            "                               sample's own multi-digit addition corpus\n"
            "  --eval-every K --eval-batches N   validation loss every K steps over N batches (default 50, 4)\n"
            "  --csv FILE --svg FILE        the loss curve (default gpt-loss.csv, gpt-loss.svg; '' for none)\n"
            "  --save FILE                  a checkpoint at the end (and every --save-every K steps)\n"
            "  --stop-at N                  stop after step N as if interrupted (the schedule still ends at\n"
            "                               --steps; with --save, a checkpoint to --resume from)\n"
            "  --dump-batches FILE          each step's tokens and targets, i32 (for bench/gpt_torch_check.py)\n"
            "  --resume FILE                continue from a checkpoint (its model, step and batches) up to\n"
            "                               --steps, the run's total: the same numbers as one run\n");
}

static int parse_int(const char *s, int lo, int hi, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi) return 0;
    *out = (int)v;
    return 1;
}

static int parse_float(const char *s, float *out) {
    char *end;
    double v = strtod(s, &end);
    if (!*s || *end || !isfinite(v) || v < 0) return 0;
    *out = (float)v;
    return 1;
}

/* 0 on success; else prints why and returns 2 (1 for --help's 0 exit) */
static int parse(int argc, char **argv, opts *o) {
    *o = (opts){.device = "auto", .csv = "gpt-loss.csv", .svg = "gpt-loss.svg", .cfg = *gpt_config_named("tiny"),
                .dt = TLS_BF16, .steps = 100, .warmup = -1, .eval_every = 50, .eval_batches = 4, .lr = 1e-3f,
                .min_lr = 1e-4f, .weight_decay = 0.1f, .max_norm = 1.0f, .seed = 1, .graph = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1, n = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 1;
        }
        if (!v) {
            fprintf(stderr, "train: error: %s needs a value (train --help)\n", a);
            return 2;
        }
        i++;
        if (!strcmp(a, "--device")) o->device = v;
        else if (!strcmp(a, "--config")) {
            const gpt_config *c = gpt_config_named(v);
            if (!c) {
                fprintf(stderr, "train: error: no config named '%s' (tiny, small or gpt2)\n", v);
                return 2;
            }
            o->cfg = *c;
            o->shape_given = 1;
        } else if (!strcmp(a, "--n-layer")) ok = parse_int(v, 1, GPT_MAX_LAYERS, &o->cfg.n_layer), o->shape_given = 1;
        else if (!strcmp(a, "--n-head")) ok = parse_int(v, 1, 1024, &o->cfg.n_head), o->shape_given = 1;
        else if (!strcmp(a, "--n-embd")) ok = parse_int(v, 1, 1 << 16, &o->cfg.n_embd), o->shape_given = 1;
        else if (!strcmp(a, "--seq")) ok = parse_int(v, 1, 65536, &o->cfg.seq), o->shape_given = 1;
        else if (!strcmp(a, "--batch")) ok = parse_int(v, 1, 1 << 20, &o->cfg.batch), o->batch_given = 1;
        else if (!strcmp(a, "--dtype")) {
            ok = !strcmp(v, "bf16") || !strcmp(v, "f32");
            o->dt = strcmp(v, "f32") ? TLS_BF16 : TLS_F32;
        } else if (!strcmp(a, "--steps")) ok = parse_int(v, 0, 1 << 30, &o->steps);
        else if (!strcmp(a, "--graph")) ok = !strcmp(v, "on") || !strcmp(v, "off"), o->graph = !strcmp(v, "on");
        else if (!strcmp(a, "--warmup")) ok = parse_int(v, 0, 1 << 30, &o->warmup);
        else if (!strcmp(a, "--eval-every")) ok = parse_int(v, 1, 1 << 30, &o->eval_every);
        else if (!strcmp(a, "--eval-batches")) ok = parse_int(v, 1, 1 << 20, &o->eval_batches);
        else if (!strcmp(a, "--save-every")) ok = parse_int(v, 1, 1 << 30, &o->save_every);
        else if (!strcmp(a, "--stop-at")) ok = parse_int(v, 1, 1 << 30, &o->stop_at);
        else if (!strcmp(a, "--lr")) ok = parse_float(v, &o->lr);
        else if (!strcmp(a, "--min-lr")) ok = parse_float(v, &o->min_lr);
        else if (!strcmp(a, "--weight-decay")) ok = parse_float(v, &o->weight_decay);
        else if (!strcmp(a, "--max-norm")) ok = parse_float(v, &o->max_norm);
        else if (!strcmp(a, "--seed")) ok = parse_int(v, 0, 1 << 30, &n), o->seed = (uint64_t)n;
        else if (!strcmp(a, "--data")) o->data = v;
        else if (!strcmp(a, "--csv")) o->csv = v;
        else if (!strcmp(a, "--svg")) o->svg = v;
        else if (!strcmp(a, "--save")) o->save = v;
        else if (!strcmp(a, "--resume")) o->resume = v;
        else if (!strcmp(a, "--dump-batches")) o->dump = v;
        else {
            fprintf(stderr, "train: error: unknown option '%s' (train --help)\n", a);
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "train: error: bad value '%s' for %s (train --help)\n", v, a);
            return 2;
        }
    }
    if (o->warmup < 0) o->warmup = o->steps / 10;
    return 0;
}

static int open_device(const char *name, trt_device **dev) {
    static const struct { const char *name; trt_device_kind kind; } kinds[] = {
        {"auto", TRT_DEVICE_AUTO}, {"cpu", TRT_DEVICE_CPU}, {"cuda", TRT_DEVICE_CUDA}, {"emu", TRT_DEVICE_EMU}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strcmp(kinds[i].name, name)) {
            char why[512];
            if (trt_open(kinds[i].kind, dev, why, sizeof why) == TRT_OK) return 1;
            fprintf(stderr, "train: error: cannot open the %s device: %s\n", name, why);
            return 0;
        }
    fprintf(stderr, "train: error: no device named '%s' (cpu, emu, cuda or auto)\n", name);
    return 0;
}

/* linear warmup to lr, then cosine decay to min_lr at the last step */
static float lr_at(const opts *o, int step) {
    if (step <= o->warmup) return o->lr * (float)step / (float)(o->warmup ? o->warmup : 1);
    double t = (double)(step - o->warmup) / (double)(o->steps > o->warmup ? o->steps - o->warmup : 1);
    return o->min_lr + (float)(0.5 * (1 + cos(3.14159265358979323846 * fmin(t, 1)))) * (o->lr - o->min_lr);
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* The validation loss over n batches (the same batches every time) and,
 * on the addition corpus, the answer accuracy; NaN on error. */
static double evaluate(gpt_model *m, gpt_data *d, const opts *o, int32_t *tok, int32_t *tgt, float *logits,
                       double *accuracy) {
    uint64_t vrng = o->seed ^ 0x5851F42D4C957F2Dull;
    int B = m->cfg.batch, T = m->cfg.seq, R = B * T;
    double sum = 0;
    int right = 0, counted = 0;
    for (int i = 0; i < o->eval_batches; i++) {
        gpt_data_batch(d, 1, &vrng, B, T, tok, tgt);
        double loss;
        if (trt_write(m->dev, m->tokens, 0, tok, (size_t)R * 4) ||
            trt_write(m->dev, m->targets, 0, tgt, (size_t)R * 4) ||
            gpt_forward(m, B, T, true, false) || gpt_mean_loss(m, R, &loss))
            return NAN;
        sum += loss;
        if (d->synthetic) {
            /* the logits as f32 on the host */
            if (m->dt == TLS_F32) {
                if (trt_read(m->dev, m->logits, 0, logits, (size_t)R * GPT_VOCAB * 4)) return NAN;
            } else {
                uint16_t *h = malloc((size_t)R * GPT_VOCAB * 2);
                if (!h || trt_read(m->dev, m->logits, 0, h, (size_t)R * GPT_VOCAB * 2)) {
                    free(h);
                    return NAN;
                }
                for (size_t j = 0; j < (size_t)R * GPT_VOCAB; j++) {
                    uint32_t bits = (uint32_t)h[j] << 16;
                    memcpy(&logits[j], &bits, 4);
                }
                free(h);
            }
            int n;
            double acc = gpt_data_answer_accuracy(tok, tgt, logits, R, T, &n);
            right += (int)lround(acc * n), counted += n;
        }
    }
    *accuracy = counted ? (double)right / counted : NAN;
    return sum / o->eval_batches;
}

int main(int argc, char **argv) {
    opts o;
    int pr = parse(argc, argv, &o);
    if (pr) return pr == 1 ? 0 : 2;
    char why[1024];
    gpt_checkpoint_state state = {0};
    if (o.resume) {
        /* the checkpoint's model, unless a shape was asked for: then
         * gpt_load checks that the checkpoint has it */
        gpt_config ck;
        tls_dtype dt;
        const char *err = gpt_peek(o.resume, &ck, &dt, why, sizeof why);
        if (err) {
            fprintf(stderr, "train: error: %s\n", err);
            return 1;
        }
        o.dt = dt;
        if (o.batch_given) ck.batch = o.cfg.batch;
        if (!o.shape_given) o.cfg = ck;
    }
    const char *bad = gpt_config_check(&o.cfg);
    if (bad) {
        fprintf(stderr, "train: error: bad model configuration: %s\n", bad);
        return 2;
    }
    gpt_data data;
    const char *err = gpt_data_open(&data, o.data, o.seed, o.cfg.seq, why, sizeof why);
    if (err) {
        fprintf(stderr, "train: error: %s\n", err);
        return 1;
    }
    trt_device *dev;
    if (!open_device(o.device, &dev)) {
        gpt_data_close(&data);
        return 1;
    }
    gpt_model m;
    trt_status st = gpt_create(&m, dev, &o.cfg, o.dt, o.seed);
    if (st) {
        fprintf(stderr, "train: error: cannot build the model on %s: %s: %s\n", trt_device_name(dev),
                trt_status_name(st), trt_last_error(dev));
        trt_close(dev);
        gpt_data_close(&data);
        return 1;
    }
    if (o.resume && (err = gpt_load(&m, o.resume, &state, why, sizeof why))) {
        fprintf(stderr, "train: error: %s\n", err);
        gpt_destroy(&m), trt_close(dev), gpt_data_close(&data);
        return 1;
    }
    if (o.resume) data.rng = state.data_rng;
    int B = o.cfg.batch, T = o.cfg.seq, R = B * T;
    printf("gpt %s: %d layers, %d heads, %d wide, seq %d, batch %d, %s, %.2fM parameters, on %s%s\n", o.cfg.name,
           o.cfg.n_layer, o.cfg.n_head, o.cfg.n_embd, T, B, o.dt == TLS_F32 ? "f32" : "bf16", (double)m.p.n / 1e6,
           trt_device_name(dev), o.graph ? ", the step replayed as a graph" : "");
    printf("data: %s, %zu bytes (%zu train, %zu validation)\n", o.data ? o.data : "multi-digit addition (generated)",
           data.n, data.n_train, data.n - data.n_train);
    int32_t *tok = malloc((size_t)R * 4), *tgt = malloc((size_t)R * 4);
    float *logits = malloc((size_t)R * GPT_VOCAB * 4);
    int npoints = 0, cap_points = o.steps + 1, rc = 0;
    gpt_point *curve = malloc((size_t)cap_points * sizeof *curve);
    FILE *csv = o.csv && *o.csv ? fopen(o.csv, "w") : NULL;
    FILE *dump = o.dump ? fopen(o.dump, "wb") : NULL;
    if (o.dump && !dump) fprintf(stderr, "train: error: cannot write %s\n", o.dump), rc = 1;
    if (csv) fprintf(csv, "step,train_loss,val_loss,val_accuracy,lr,grad_norm,ms\n");
    gpt_optim opt = {.beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = o.weight_decay,
                     .max_norm = o.max_norm};
    double first_loss = NAN, last_loss = NAN, total_ms = 0, val = NAN, acc = NAN;
    int done = 0, announced = 0;
    int first = (int)state.step + 1;
    int last = o.stop_at && o.stop_at < o.steps ? o.stop_at : o.steps;
    for (int step = first; step <= last && !rc; step++) {
        double t0 = now_ms(), loss, norm;
        opt.lr = lr_at(&o, step);
        gpt_data_batch(&data, 0, NULL, B, T, tok, tgt);
        if (dump && (fwrite(tok, 4, (size_t)R, dump) != (size_t)R || fwrite(tgt, 4, (size_t)R, dump) != (size_t)R)) {
            fprintf(stderr, "train: error: cannot write %s\n", o.dump);
            rc = 1;
            break;
        }
        if ((st = trt_write(dev, m.tokens, 0, tok, (size_t)R * 4)) ||
            (st = trt_write(dev, m.targets, 0, tgt, (size_t)R * 4)) || (st = gpt_train_step(&m, &opt, step, o.graph)) ||
            (st = gpt_mean_loss(&m, R, &loss)) || (st = gpt_grad_norm(&m, &norm))) {
            fprintf(stderr, "train: error at step %d: %s: %s\n", step, trt_status_name(st), trt_last_error(dev));
            rc = 1;
            break;
        }
        double ms = now_ms() - t0;
        total_ms += ms;
        if (step == first) first_loss = loss;
        last_loss = loss;
        int eval = step % o.eval_every == 0 || step == last;
        val = acc = NAN;
        if (eval) val = evaluate(&m, &data, &o, tok, tgt, logits, &acc);
        printf("step %5d | loss %.4f | lr %.2e | norm %.3f | %8.1f ms | %9.0f tok/s", step, loss, (double)opt.lr, norm,
               ms, R / (ms / 1e3));
        if (eval) printf(" | val %.4f", val);
        if (eval && !isnan(acc)) printf(" | answers %.1f%%", 100 * acc);
        printf("\n");
        if (m.graph && !announced) {
            printf("graph: the step's %zu launches captured at step %d, replayed from then on\n",
                   trt_graph_num_launches(m.graph), step);
            announced = 1;
        }
        fflush(stdout);
        if (csv) fprintf(csv, "%d,%.9g,%.9g,%.9g,%g,%.9g,%.3f\n", step, loss, val, acc, (double)opt.lr, norm, ms);
        curve[npoints++] = (gpt_point){.step = step, .train = loss, .valid = val};
        done++;
        if (o.save && o.save_every && step % o.save_every == 0) {
            gpt_checkpoint_state s = {.step = step, .data_rng = data.rng};
            if ((err = gpt_save(&m, o.save, &s, why, sizeof why))) fprintf(stderr, "train: error: %s\n", err), rc = 1;
        }
    }
    if (!rc && done) {
        printf("done: %d steps, loss %.4f -> %.4f, validation %.4f, %.1f ms a step, %.0f tokens/s\n", done, first_loss,
               last_loss, val, total_ms / done, (double)R * done / (total_ms / 1e3));
        if (!isnan(acc)) printf("answer digits right: %.1f%%\n", 100 * acc);
    }
    if (csv) fclose(csv);
    if (dump && fclose(dump)) fprintf(stderr, "train: error: cannot write %s\n", o.dump), rc = 1;
    if (npoints && o.svg && *o.svg) {
        char title[256];
        snprintf(title, sizeof title, "tilec gpt %s (%s, seed %llu)", o.cfg.name, o.data ? o.data : "addition",
                 (unsigned long long)o.seed);
        if (!gpt_plot_svg(o.svg, title, curve, npoints)) fprintf(stderr, "train: error: cannot write %s\n", o.svg);
    }
    if (!rc && o.save) {
        gpt_checkpoint_state s = {.step = state.step + done, .data_rng = data.rng};
        if (!done) s.step = state.step;
        if ((err = gpt_save(&m, o.save, &s, why, sizeof why))) fprintf(stderr, "train: error: %s\n", err), rc = 1;
        else printf("checkpoint: %s (step %lld)\n", o.save, (long long)s.step);
    }
    free(tok), free(tgt), free(logits), free(curve);
    gpt_destroy(&m);
    trt_close(dev);
    gpt_data_close(&data);
    return rc;
}
