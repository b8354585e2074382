#!/usr/bin/env bash
# Builds, on this machine, the build kit that scripts/gpu-check.sh needs on
# the GPU machine. That machine has a C compiler, CMake, ninja and the CUDA
# toolkit but no LLVM 19, re2c, lemon or cmocka, and cannot install them, so
# they travel with the call (device tool: carry [".gpu-kit"]):
#
#   lib/libLLVM.so.19.1.xz  a slim LLVM: the static NVPTX, pass and core
#                           libraries linked into one shared library that
#                           exports exactly the LLVM C functions tilec calls,
#                           under the same soname and symbol version as
#                           Debian's libLLVM, so it can stand in for it
#                           (about 9 MB compressed instead of 129 MB plus
#                           its ICU/z3/xml2 dependencies)
#   include/llvm-c/         the LLVM C API headers (and the llvm/Config they include)
#   bin/re2c, bin/lemon, share/lempar.c
#   include/cmocka.h, lib/libcmocka.so*
#
# The kit holds tools only: gpu-check.sh builds tilec itself from the
# working tree the call carries. .gpu-kit is ignored by git.
#
#   scripts/gpu-kit.sh --stamp   (re)writes .gpu-kit/COMMIT, the commit
#                                (and whether the tree differs from it) that
#                                the check's table names: the GPU machine's
#                                copy of the tree has no usable git history.
#                                A kit whose libLLVM lacks an LLVM C function
#                                that tilec now calls is made again first
#                                (else the build there fails to link).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
kit="$root/.gpu-kit"
build="$root/build"
stamp() {
  local c
  c=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')
  [ -z "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ] || c="$c+ (uncommitted changes)"
  echo "$c" >"$kit/COMMIT"
}
# The LLVM C functions tilec needs, into $1: what libtilec.so (every stage) imports.
llvm_imports() {
  [ -f "$build/build.ninja" ] || cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  ninja -C "$build" libtilec.so >/dev/null  # the path: "tilec" is the CLI
  nm -D --undefined-only "$build/libtilec.so" | awk '$2 ~ /^LLVM/ {sub(/@.*/, "", $2); print $2}' | sort -u >"$1"
}
if [ "${1:-}" = --stamp ]; then
  [ -d "$kit" ] || { echo "gpu-kit: no kit yet: run scripts/gpu-kit.sh" >&2; exit 1; }
  now=$(mktemp)
  llvm_imports "$now"
  stale=$(comm -23 "$now" "$kit/lib/SYMBOLS" 2>/dev/null || echo '(no lib/SYMBOLS)')
  rm -f "$now"
  if [ -z "$stale" ]; then stamp; exit 0; fi
  echo "gpu-kit: the kit's libLLVM lacks what tilec now calls ($(echo $stale)): making it again" >&2
fi
"$root/scripts/deps.sh"
llvm_config=$(command -v llvm-config-19 || echo /usr/lib/llvm-19/bin/llvm-config)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -rf "$kit"
mkdir -p "$kit/bin" "$kit/lib" "$kit/include" "$kit/share"

llvm_imports "$work/syms"
[ -s "$work/syms" ] || { echo "gpu-kit: found no LLVM symbols in libtilec.so" >&2; exit 1; }
version=$(nm -D --undefined-only "$build/libtilec.so" | awk '$2 ~ /^LLVM/ {sub(/^[^@]*@+/, "", $2); print $2; exit}')
{
  echo "${version:-LLVM_19.1} {"
  echo "  global:"
  sed 's/.*/    &;/' "$work/syms"
  echo "  local: *;"
  echo "};"
} >"$work/ver.map"
# shellcheck disable=SC2046
cc -shared -o "$work/libLLVM.so.19.1" -Wl,-soname,libLLVM.so.19.1 -Wl,--version-script="$work/ver.map" \
  -Wl,--gc-sections -Wl,--as-needed $(sed 's/^/-Wl,--undefined=/' "$work/syms") \
  -L"$("$llvm_config" --libdir)" $("$llvm_config" --link-static --libs nvptx passes core target analysis bitwriter irreader) \
  -lstdc++ -l:libzstd.so.1 -lz -lm -ldl -lpthread
strip "$work/libLLVM.so.19.1"
# it must export every function tilec imports, or the build there links
# and then fails at load time
missing=$(comm -23 "$work/syms" <(nm -D --defined-only "$work/libLLVM.so.19.1" | awk '{sub(/@.*/, "", $3); print $3}' | sort -u))
[ -z "$missing" ] || { echo "gpu-kit: the slim libLLVM lacks: $missing" >&2; exit 1; }
xz -T0 -6 -c "$work/libLLVM.so.19.1" >"$kit/lib/libLLVM.so.19.1.xz"
cp "$work/syms" "$kit/lib/SYMBOLS"  # what it exports: --stamp compares
cp -rL "$("$llvm_config" --includedir)/llvm-c" "$kit/include/"
mkdir -p "$kit/include/llvm"   # llvm-c/Target.h includes llvm/Config/*
cp -rL "$("$llvm_config" --includedir)/llvm/Config" "$kit/include/llvm/"

cp "$(command -v re2c)" "$(command -v lemon)" "$kit/bin/"
for t in /usr/share/lemon/lempar.c /usr/share/lemon/templates/lempar.c /usr/local/share/lemon/lempar.c; do
  [ -f "$t" ] && { cp "$t" "$kit/share/lempar.c"; break; }
done
[ -f "$kit/share/lempar.c" ] || { echo "gpu-kit: lemon's lempar.c not found" >&2; exit 1; }
cp /usr/include/cmocka.h "$kit/include/"
cp -P /usr/lib/x86_64-linux-gnu/libcmocka.so* "$kit/lib/"

{
  echo "made $(date -u +%Y-%m-%dT%H:%MZ) from commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "LLVM $("$llvm_config" --version), $(wc -l <"$work/syms") C functions; $(re2c --version); lemon $(lemon -x 2>/dev/null | head -1)"
} >"$kit/MANIFEST"
stamp
echo "gpu-kit: $(du -sh "$kit" | cut -f1) in $kit"
