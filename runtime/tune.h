/* tune.h - private to runtime/: the entries of a trt_tuning (tune_file.c)
 * as the tuner (tune.c) records them and the stdlib (stdlib.c) looks them
 * up. docs/tuning.md describes the model and the file. */
#ifndef TILEC_RUNTIME_TUNE_H
#define TILEC_RUNTIME_TUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tilec_rt.h"

enum {
    RT_TUNE_MAX_DEVICE = 128, /* bytes of a device's name in a key, with its NUL */
    RT_TUNE_MAX_ARCH = 16,    /* bytes of an arch in a key ("sm_90a", "-"), with its NUL */
    RT_TUNE_MAX_LINE = 1024,  /* bytes of a tuning file's line */
    RT_TUNE_MAX_ENTRIES = 4096 /* entries of a trt_tuning */
};

/* One entry: the key, the configuration, and the winner's cost when the
 * tuner (or the file's cost comment) gave one. */
typedef struct rt_tune_entry {
    char kernel[TRT_TUNE_MAX_NAME];
    uint64_t hash; /* rt_tune_hash of the kernel's source */
    char arch[RT_TUNE_MAX_ARCH];
    char device[RT_TUNE_MAX_DEVICE];
    char bucket[TRT_TUNE_MAX_BUCKET];
    char names[TRT_TUNE_MAX_DEFINES][TRT_TUNE_MAX_NAME];
    tilec_define defines[TRT_TUNE_MAX_DEFINES]; /* names point into `names` */
    size_t ndefines;
    int num_warps, num_stages;
    bool has_cost, timed;
    double cost;
} rt_tune_entry;

/* The hash of a kernel's source in keys (64-bit FNV-1a). */
uint64_t rt_tune_hash(const char *src, size_t len);
/* The arch of a device's code in keys: the arch it compiles for, "-"
 * where it runs tile IR (the CPU device). */
const char *rt_tune_arch(const trt_device *d);
/* t's entry for the key, NULL if none. */
const rt_tune_entry *rt_tuning_lookup(const trt_tuning *t, const trt_device *d, uint64_t hash, const char *kernel,
                                      const char *bucket);
/* A const value of the entry; false if it has none of that name. */
bool rt_tune_entry_define(const rt_tune_entry *e, const char *name, int64_t *value);
/* Records a configuration (replacing the key's entry) with the cost it
 * won by (NULL: none); false with t's error set
 * (a name too long, too many consts or entries, out of memory). */
bool rt_tuning_put(trt_tuning *t, const trt_device *d, uint64_t hash, const char *kernel, const char *bucket,
                   const trt_tune_config *cfg, const trt_tune_outcome *won);
/* What the stdlib did with t: took entry e; passed one over (a note). */
void rt_tuning_used(trt_tuning *t, const rt_tune_entry *e);
void rt_tuning_note(trt_tuning *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
