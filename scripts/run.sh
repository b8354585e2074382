#!/usr/bin/env bash
# README's first command: install what is missing, build tilec, compile the
# sample kernels (printing what was produced) and run the sample programs.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh"
# machine code runs only on its own GPU generation: build the samples'
# module for the GPU here, if there is one (else sm_80)
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .) || cc=""
arch=sm_${cc:-80}
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEC_BUILD_TESTS=OFF \
  -DTILEC_CUDA_ARCH="$arch" >/dev/null
ninja -C "$root/build" tilec_cli vadd_runtime vadd_cubin vadd_module >/dev/null
out="$root/build/samples"
mkdir -p "$out"
emit=cubin
if [ -n "${TILEC_PTXAS:-}" ]; then [ -x "$TILEC_PTXAS" ] || emit=ptx
elif ! { [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/ptxas" ]; } && ! command -v ptxas >/dev/null &&
     ! [ -x /usr/local/cuda/bin/ptxas ]; then
  emit=ptx # deps.sh has said why
fi
for f in "$root"/samples/*.tile; do
  name=$(basename "$f" .tile)
  "$root/build/tilec" "$f" --emit=$emit --arch="$arch" --time -o "$out/$name.$emit"
  kernels=$("$root/build/tilec" "$f" --emit=ptx -o - | sed -n 's/^\.visible \.entry \([A-Za-z0-9_]*\).*/\1/p' | tr '\n' ' ')
  printf '%-28s -> %s (%s bytes; kernels: %s)\n' "samples/$name.tile" "build/samples/$name.$emit" \
    "$(wc -c < "$out/$name.$emit")" "$kernels"
done

echo
echo "running the samples:"
"$root/build/samples/vadd_runtime" 1000003 auto
module=$(ls "$root"/build/samples/vadd.cubin "$root"/build/samples/vadd.ptx 2>/dev/null | head -1)
"$root/build/samples/vadd_cubin" "$module" 1000003 auto
