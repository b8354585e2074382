/* device_emu.c - the emulator device as trt_open makes it: host memory as
 * on the CPU (device_host.c), and modules whose kernels run the NVPTX LLVM
 * IR that trt_compile generated for the GPU. The emulator (emu/) links
 * LLVM, which the runtime proper does not: trt_compile loads that code
 * with rt_emu_code (device_emu_code.c, in the compiler's library), and the
 * module runs on that table from then on. This table loads nothing, and
 * trt_load refuses prebuilt modules, which have no LLVM IR. */
#include "runtime/internal.h"

static const char *emu_name(const trt_device *d) { return "emu (NVPTX LLVM IR emulator)"; }

/* The emulator device compiles for the arch trt_emu_set_arch chose, else
 * the compiler's default. */
static const char *emu_code_arch(const trt_device *d) { return d->emu_arch[0] ? d->emu_arch : TILEC_DEFAULT_ARCH; }

static trt_status emu_check_prebuilt(trt_device *d, const char *path) {
    return rt_fail(d, TRT_ERR_INVALID_ARGUMENT,
                   "%s: the emulator device runs the LLVM IR of modules compiled with trt_compile; a prebuilt "
                   "module has none",
                   path);
}

/* The code comes after, from trt_compile (rt_emu_code). */
static trt_status emu_load_none(trt_module *m, const void *image, size_t size) { return TRT_OK; }

static void emu_unload_none(trt_module *m) {}

static trt_status emu_launch_none(trt_kernel *k, void *stream, const uint32_t grid[3], const rt_arg *args,
                                  uint32_t nargs) {
    return rt_fail(k->mod->dev, TRT_ERR_LAUNCH, "module has no emulator code");
}

const rt_device_ops rt_emu_device = {
    .kind = TRT_DEVICE_EMU,
    .code = RT_CODE_LLVM,
    .image_ext = "ll",
    .print_fn = true,
    .name = emu_name,
    .code_arch = emu_code_arch,
    RT_HOST_MEMORY_OPS,
    .check_prebuilt = emu_check_prebuilt,
    .time_limit = true, /* the launches of rt_emu_code (device_emu_code.c) stop at it */
    .load = emu_load_none,
    .unload = emu_unload_none,
    .launch = emu_launch_none,
    .tune_cost = rt_tune_standin, /* runtime/tune_cost.c: not a time */
};
