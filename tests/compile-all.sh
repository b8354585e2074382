#!/usr/bin/env bash
# Compiles every .tile file in the repository (outside tests/, whose inputs
# are meant to be odd) to a cubin for sm_80 and sm_90. Without ptxas it
# compiles to PTX instead and says loudly that cubins were not checked.
set -u
tilec=$1
root=$2
export ASAN_OPTIONS="${ASAN_OPTIONS:-exitcode=86:detect_leaks=1}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
emit=cubin
if ! "$tilec" --help >/dev/null; then echo "tilec does not run"; exit 1; fi
if ! { [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/ptxas" ]; } && ! command -v ptxas >/dev/null &&
   ! [ -x /usr/local/cuda/bin/ptxas ]; then
  echo "SKIPPED (partly): ptxas not found; checking PTX only, cubins NOT checked"
  emit=ptx
fi
fail=0 count=0
while IFS= read -r f; do
  for arch in sm_80 sm_90; do
    count=$((count + 1))
    if ! "$tilec" --emit=$emit --arch=$arch "$f" -o "$tmp/out" 2> "$tmp/err"; then
      echo "FAIL $f ($arch):"; cat "$tmp/err"; fail=$((fail + 1))
    elif [ ! -s "$tmp/out" ]; then
      echo "FAIL $f ($arch): empty output"; fail=$((fail + 1))
    else
      echo "ok   $f ($arch, $(wc -c < "$tmp/out") bytes of $emit)"
    fi
  done
done < <(cd "$root" && find . -name '*.tile' -not -path './tests/*' -not -path './build*' | sort | sed "s|^\./|$root/|")
echo "compiled $count, failed $fail"
[ $fail -eq 0 ] && [ $count -gt 0 ]
