/* data.c - the GPT sample's corpus and batches (data.h). */
#include "data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* splitmix64, as model.c's */
static uint64_t next_u64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t below(uint64_t *s, uint64_t n) { return next_u64(s) % n; }

/* "a+b=c\n" with a and b of 1 to 4 digits: the model must learn to carry,
 * and the answer is a function of the prefix, so its digits can be scored */
static size_t addition_line(uint64_t *s, char *out, size_t room) {
    static const uint64_t tens[] = {10, 100, 1000, 10000};
    uint64_t a = below(s, tens[below(s, 4)]), b = below(s, tens[below(s, 4)]);
    int n = snprintf(out, room, "%llu+%llu=%llu\n", (unsigned long long)a, (unsigned long long)b,
                     (unsigned long long)(a + b));
    return n > 0 && (size_t)n < room ? (size_t)n : 0;
}

const char *gpt_data_open(gpt_data *d, const char *path, uint64_t seed, int seq, char *why, size_t nwhy) {
    memset(d, 0, sizeof *d);
    d->rng = seed ^ 0xD1B54A32D192ED03ull;
    if (!path) {
        d->synthetic = 1;
        d->bytes = malloc(GPT_SYNTHETIC_BYTES);
        if (!d->bytes) return "out of memory for the corpus";
        uint64_t s = seed;
        while (d->n + 32 < GPT_SYNTHETIC_BYTES) d->n += addition_line(&s, (char *)d->bytes + d->n, 32);
    } else {
        FILE *f = fopen(path, "rb");
        if (!f) {
            snprintf(why, nwhy, "cannot read the data file '%s': %s", path, strerror(errno));
            return why;
        }
        size_t cap = 1 << 16;
        d->bytes = malloc(cap);
        for (size_t got; d->bytes && (got = fread(d->bytes + d->n, 1, cap - d->n, f)) > 0;) {
            d->n += got;
            if (d->n == cap) {
                unsigned char *more = realloc(d->bytes, cap * 2);
                if (!more) free(d->bytes);
                d->bytes = more, cap *= 2;
            }
        }
        int err = ferror(f);
        fclose(f);
        if (!d->bytes) return "out of memory for the data file";
        if (err) {
            snprintf(why, nwhy, "cannot read the data file '%s'", path);
            gpt_data_close(d);
            return why;
        }
    }
    d->n_train = d->n - d->n * GPT_VALID_PERCENT / 100;
    /* each part must hold one sequence and its next byte */
    if (d->n < GPT_DATA_MIN_BYTES || d->n_train < (size_t)seq + 1 || d->n - d->n_train < (size_t)seq + 1) {
        snprintf(why, nwhy, "the data file '%s' has %zu bytes: too few for sequences of %d (it needs %zu at least)",
                 path ? path : "(synthetic)", d->n, seq, (size_t)(seq + 1) * 100 / GPT_VALID_PERCENT + 1);
        gpt_data_close(d);
        return why;
    }
    return NULL;
}

void gpt_data_close(gpt_data *d) {
    free(d->bytes);
    memset(d, 0, sizeof *d);
}

void gpt_data_batch(gpt_data *d, int valid, uint64_t *valid_rng, int batch, int seq, int32_t *tokens,
                    int32_t *targets) {
    size_t lo = valid ? d->n_train : 0, n = valid ? d->n - d->n_train : d->n_train;
    uint64_t *s = valid ? valid_rng : &d->rng;
    for (int b = 0; b < batch; b++) {
        size_t at = lo + below(s, n - (size_t)seq);
        for (int t = 0; t < seq; t++) {
            tokens[b * seq + t] = d->bytes[at + t];
            targets[b * seq + t] = d->bytes[at + t + 1];
        }
    }
}

double gpt_data_answer_accuracy(const int32_t *tokens, const int32_t *targets, const float *logits, int rows,
                                int seq, int *counted) {
    int right = 0, n = 0, in_answer = 0;
    for (int i = 0; i < rows; i++) {
        if (i % seq == 0) in_answer = 0; /* a sequence that starts inside an answer has not seen its '=' */
        /* after '=' and up to the line's end, the next byte is determined */
        if (tokens[i] == '=') in_answer = 1;
        else if (tokens[i] == '\n') in_answer = 0;
        if (!in_answer) continue;
        int best = 0;
        for (int v = 1; v < 256; v++)
            if (logits[(size_t)i * 256 + (size_t)v] > logits[(size_t)i * 256 + (size_t)best]) best = v;
        right += best == targets[i];
        n++;
    }
    *counted = n;
    return n ? (double)right / n : 0;
}
