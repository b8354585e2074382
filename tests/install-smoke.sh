#!/usr/bin/env bash
# Installs tilec into a scratch prefix and builds a user program against the
# installed header and libtilec.so, then runs it: what a user of the
# library does.
set -eu
build=$1
cflags=${2:-}
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
cat > "$prefix/user.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <tilec.h>
#include <tilec_stdlib.h>
/* the stdlib's entry points are exported too: gelu(1) on the CPU device */
static int stdlib_works(void) {
    trt_device *dev;
    trt_buffer b;
    float v[4] = {1, 1, 1, 1};
    if (trt_open(TRT_DEVICE_CPU, &dev, NULL, 0) != TRT_OK) return 0;
    int ok = trt_alloc(dev, sizeof v, &b) == TRT_OK && trt_write(dev, b, 0, v, sizeof v) == TRT_OK &&
             tls_gelu(dev, TLS_F32, tls_mem_of(b), tls_mem_of(b), 4, NULL) == TRT_OK &&
             trt_read(dev, b, 0, v, sizeof v) == TRT_OK && v[3] > 0.84f && v[3] < 0.85f;
    if (!ok) printf("tls_gelu: %s\n", trt_last_error(dev));
    trt_close(dev);
    return ok;
}
int main(void) {
    const char *src = "kernel k(x: *f32) { store(x + arange(0, 128), 1.0); }\n";
    tilec_options opt;
    tilec_options_init(&opt);
    opt.emit = TILEC_EMIT_PTX;
    tilec_output out;
    tilec_status st = tilec_compile("k.tile", src, strlen(src), &opt, &out);
    int ok = st == TILEC_OK && strstr(out.data, ".visible .entry k(") != NULL && stdlib_works();
    printf("%s: %s\n", ok ? "ok" : "FAILED", tilec_status_name(st));
    tilec_output_free(&out);
    return ok ? 0 : 1;
}
C
libdir=$(ls -d "$prefix"/lib*/ | head -1)
# shellcheck disable=SC2086
cc $cflags -I"$prefix/include" "$prefix/user.c" -L"$libdir" -ltilec -Wl,-rpath,"$libdir" -o "$prefix/user"
"$prefix/user"
