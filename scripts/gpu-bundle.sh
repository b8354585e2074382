#!/usr/bin/env bash
# Builds, on this machine, what scripts/gpu-check.sh runs on the GPU machine
# (which has no LLVM and cannot install it): a Release build without
# sanitizers of the programs that need only the runtime, and the kernel
# modules tilec compiles here. Everything lands in .gpu-bundle/ (ignored by
# git); pass it to the device tool as `carry`.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh"
build="$root/build-gpu"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEC_BUILD_TESTS=OFF >/dev/null
ninja -C "$build" vadd_cubin tilec_cli >/dev/null
out="$root/.gpu-bundle"
rm -rf "$out"
mkdir -p "$out"
cp "$build/samples/vadd_cubin" "$out/"
for arch in sm_80 sm_90; do
  "$build/tilec" "$root/samples/vadd.tile" --arch=$arch -o "$out/vadd.$arch.cubin"
done
git -C "$root" rev-parse --short HEAD > "$out/COMMIT" 2>/dev/null || echo '?' > "$out/COMMIT"
[ -z "$(git -C "$root" status --porcelain 2>/dev/null)" ] || sed -i 's/$/ (with uncommitted changes)/' "$out/COMMIT"
# nothing in the bundle may need LLVM: the GPU machine does not have it
if ldd "$out/vadd_cubin" | grep -qi llvm; then echo "gpu-bundle: vadd_cubin links LLVM" >&2; exit 1; fi
echo "gpu-bundle: $(du -sh "$out" | cut -f1) in $out:"
ls -la "$out"
