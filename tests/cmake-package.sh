#!/usr/bin/env bash
# cmake-package.sh BUILD ROOT [CFLAGS]: a user's own project built against
# tilec three ways, as docs/aot.md says: find_package(tilec) from the build
# tree (-Dtilec_DIR=BUILD, nothing installed) and from an install prefix,
# each compiling tests/aot/kernels.tile into the program with
# tilec_add_kernels(); and with pkg-config (tilec_rt.pc) and the installed
# tilec --emit=c. Each program runs tests/aot/main.c's checks on the CPU
# device and must not need LLVM. CFLAGS: the sanitizer flags of a
# sanitized build, which its libraries need from the program too.
set -u
build=$(cd "$1" && pwd) root=$(cd "$2" && pwd) cflags=${3:-}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail=0
ptx_only=""
if [ -z "$(command -v ptxas)" ] && [ ! -x "${CUDA_HOME:-/usr/local/cuda}/bin/ptxas" ] && [ ! -x /usr/local/cuda/bin/ptxas ]; then
  ptx_only=PTX_ONLY
fi
mkdir -p "$t/proj"
cp "$root/tests/aot/main.c" "$t/proj/main.c"
cp "$root/tests/aot/kernels.tile" "$t/proj/aot_kernels.tile"
cat >"$t/proj/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.20)
project(user C)
find_package(tilec REQUIRED)
add_executable(user main.c)
tilec_add_kernels(user FILES aot_kernels.tile ARCHS sm_80 sm_90 DEFINES BLOCK=256 $ptx_only)
CM
run_user() { # run_user WHAT BINARY
  if ldd "$2" | grep -qi llvm; then echo "FAIL: $1: the program needs LLVM"; fail=1; return; fi
  if out=$("$2" cpu 2>&1); then echo "$1: $out"; else echo "FAIL: $1: $out"; fail=1; fi
}
configure_build() { # configure_build WHAT DIR CMAKE-ARGS...
  local what=$1 dir=$2; shift 2
  if ! cmake -S "$t/proj" -B "$dir" -G Ninja -DCMAKE_C_FLAGS="$cflags" "$@" >"$dir.log" 2>&1 ||
     ! ninja -C "$dir" >>"$dir.log" 2>&1; then
    echo "FAIL: $what: the project does not build:"; tail -20 "$dir.log"; fail=1; return 1
  fi
}
# from the build tree, nothing installed
configure_build "build tree" "$t/b1" -Dtilec_DIR="$build" && run_user "build tree" "$t/b1/user"
# from an install prefix
cmake --install "$build" --prefix "$t/prefix" >/dev/null
configure_build "installed" "$t/b2" -DCMAKE_PREFIX_PATH="$t/prefix" && run_user "installed" "$t/b2/user"
# pkg-config, with the installed tilec
libdir=$(ls -d "$t/prefix"/lib*/ | head -1)
if command -v pkg-config >/dev/null; then
  "$t/prefix/bin/tilec" "$t/proj/aot_kernels.tile" --emit=c --arch=sm_80 -D BLOCK=256 ${ptx_only:+--ptx-only} \
    -o "$t/aot_kernels" || { echo "FAIL: the installed tilec --emit=c"; fail=1; }
  # shellcheck disable=SC2086,SC2046
  if cc $cflags -I"$t" "$t/proj/main.c" "$t/aot_kernels.c" \
       $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs tilec_rt) -Wl,-rpath,"$libdir" -o "$t/user3"; then
    run_user "pkg-config" "$t/user3"
  else
    echo "FAIL: pkg-config: the program does not build"; fail=1
  fi
else
  echo "SKIPPED: pkg-config (not installed here); the .pc files: $(ls "$libdir/pkgconfig")"
fi
exit $fail
