/* data.h - the GPT sample's tokens: bytes of a text file the user names,
 * or a corpus the sample makes itself (multi-digit addition, "123+4589=4712\n"),
 * split into training and validation parts, and batches drawn from them
 * by a seeded generator (the same batches on every run with the same
 * seed, on every device). */
#ifndef GPT_DATA_H
#define GPT_DATA_H

#include <stddef.h>
#include <stdint.h>

typedef struct gpt_data {
    unsigned char *bytes; /* the whole corpus */
    size_t n, n_train;    /* its length; the first n_train bytes train, the rest validate */
    int synthetic;        /* the addition corpus: task accuracy can be measured */
    uint64_t rng;         /* the batch sampler's state (a checkpoint saves it) */
} gpt_data;

enum {
    GPT_DATA_MIN_BYTES = 64,            /* a file shorter than this cannot train anything */
    GPT_SYNTHETIC_BYTES = 1 << 20,      /* the addition corpus's size */
    GPT_VALID_PERCENT = 10,             /* the last 10% validate */
};

/* Reads path (NULL: makes the addition corpus from seed). NULL on success,
 * else a message in why. */
const char *gpt_data_open(gpt_data *d, const char *path, uint64_t seed, int seq, char *why, size_t nwhy);
void gpt_data_close(gpt_data *d);

/* batch sequences of seq + 1 bytes at random offsets of the training
 * (valid = 0) or validation part: tokens the first seq, targets the last
 * seq of each (the next byte). The validation batches come from their
 * own generator, seeded by `valid_seed` (the same batches at every
 * evaluation). */
void gpt_data_batch(gpt_data *d, int valid, uint64_t *valid_rng, int batch, int seq, int32_t *tokens,
                    int32_t *targets);

/* With the addition corpus: the fraction of answer digits (and the line's
 * end) that argmax(logits) predicts right, given the true prefix: rows
 * positions of one batch (sequences of seq), logits rows x 256 f32.
 * Positions outside an answer whose '=' the sequence holds do not count;
 * *counted says how many did. */
double gpt_data_answer_accuracy(const int32_t *tokens, const int32_t *targets, const float *logits, int rows,
                                int seq, int *counted);

#endif
