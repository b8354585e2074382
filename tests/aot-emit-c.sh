#!/usr/bin/env bash
# aot-emit-c.sh BUILD ROOT DEVICE [CFLAGS]: tilec --emit=c as a user runs it.
# Compiles tests/aot/kernels.tile into aot_kernels.h and aot_kernels.c
# (cubins for sm_80 and sm_90, PTX for newer GPUs), builds tests/aot/main.c
# with them against the build's libtilec_rt.so, the runtime without the
# compiler (neither it nor the program may need LLVM), and runs it on
# DEVICE (cpu or cuda; 77, skipped, when it cannot be opened). Also: the
# generated code compiles with -Wall -Wextra -Werror -pedantic as C11, and
# its header as C++ where a C++ compiler is present (its extern "C").
set -u
build=$1 root=$2 device=$3 cflags=${4:-}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
if ! "$build/tilec" "$root/tests/aot/kernels.tile" --emit=c --arch=sm_80 --arch=sm_90 -D BLOCK=256 \
     -o "$t/aot_kernels" 2>"$t/err"; then
  if grep -q ptxas "$t/err"; then echo "SKIPPED: no ptxas for the cubins: $(head -1 "$t/err")"; exit 77; fi
  echo "FAIL: tilec --emit=c:"; cat "$t/err"; exit 1
fi
grep -q 'Code for: cubin sm_80, cubin sm_90, PTX sm_90' "$t/aot_kernels.h" ||
  { echo "FAIL: the header does not list the images"; head -5 "$t/aot_kernels.h"; exit 1; }
# shellcheck disable=SC2086
if ! cc -std=c11 -Wall -Wextra -Werror -pedantic $cflags -I"$root/include" -I"$t" "$root/tests/aot/main.c" \
     "$t/aot_kernels.c" -L"$build" -ltilec_rt -Wl,-rpath,"$build" -o "$t/main" 2>"$t/cc"; then
  echo "FAIL: the generated code does not build:"; cat "$t/cc"; exit 1
fi
if ldd "$t/main" | grep -qi llvm; then echo "FAIL: the program needs LLVM:"; ldd "$t/main"; exit 1; fi
if command -v c++ >/dev/null && ! echo '#include "aot_kernels.h"
int main() { return aot_kernels_images[0].size ? 0 : 1; }' | c++ -x c++ -fsyntax-only -Wall -Werror -I"$root/include" \
     -I"$t" - 2>"$t/cxx"; then
  echo "FAIL: the generated header is not C++:"; cat "$t/cxx"; exit 1
fi
"$t/main" "$device"
