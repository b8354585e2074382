/* stdlib_test_main.h - private to the stdlib API tests (test_stdlib_api.c,
 * test_stdlib_attention.c): their main, which opens the device its
 * argument names (cpu, cuda or emu) and runs the tests on it. On a device
 * that cannot open it exits 1 (tests/on-cuda.sh reports a missing GPU as
 * skipped). Include after cmocka.h and tilec_stdlib.h. */
#ifndef TILEC_TESTS_STDLIB_TEST_MAIN_H
#define TILEC_TESTS_STDLIB_TEST_MAIN_H

static int stdlib_test_main(int argc, char **argv, trt_device **dev, const struct CMUnitTest *tests, size_t n) {
    const char *which = argc > 1 ? argv[1] : "cpu", *emu_arch = NULL;
    trt_device_kind kind;
    if (!strcmp(which, "cpu")) kind = TRT_DEVICE_CPU;
    else if (!strcmp(which, "cuda")) kind = TRT_DEVICE_CUDA;
    else if (!strcmp(which, "emu")) kind = TRT_DEVICE_EMU;
    else if (!strncmp(which, "emu:", 4)) kind = TRT_DEVICE_EMU, emu_arch = which + 4; /* emu:sm_90a */
    else {
        fprintf(stderr, "usage: %s cpu|cuda|emu|emu:ARCH\n", argv[0]);
        return 2;
    }
    char why[512];
    if (trt_open(kind, dev, why, sizeof why) != TRT_OK) {
        fprintf(stderr, "%s: cannot open a device (%s): %s\n", argv[0], which, why);
        return 1;
    }
    if (emu_arch && trt_emu_set_arch(*dev, emu_arch) != TRT_OK) {
        fprintf(stderr, "%s: %s\n", argv[0], trt_last_error(*dev));
        trt_close(*dev);
        return 2;
    }
    printf("device: %s%s%s\n", trt_device_name(*dev), emu_arch ? ", compiling for " : "", emu_arch ? emu_arch : "");
    srand(2026);
    int failed = _cmocka_run_group_tests(which, tests, n, NULL, NULL);
    trt_close(*dev);
    return failed ? 1 : 0;
}

#endif
