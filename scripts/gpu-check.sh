#!/usr/bin/env bash
# The GPU check, run on the GPU machine in one call:
#   bash scripts/gpu-check.sh [.gpu-bundle]
# with the bundle that scripts/gpu-bundle.sh built here carried along. It
# runs the GPU programs and checks their results against C, runs them again
# under compute-sanitizer's memcheck, and prints a summary table last.
# Today that is vadd loaded from a cubin; each new GPU program joins the
# list below.
set -u
bundle=${1:-.gpu-bundle}
if [ ! -x "$bundle/vadd_cubin" ]; then
  echo "gpu-check: no bundle at $bundle (run scripts/gpu-bundle.sh first and carry it)" >&2
  exit 2
fi
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)
arch=sm_${cc:-90}
[ -f "$bundle/vadd.$arch.cubin" ] || arch=sm_80
rows=()
fails=0
passes=0
check() { # check NAME COMMAND...: runs it, records ok / FAIL and its last line
  local name=$1; shift
  local log
  log=$("$@" 2>&1)
  local rc=$?
  local last
  last=$(printf '%s\n' "$log" | tail -1 | cut -c1-70)
  if [ $rc -eq 0 ]; then rows+=("$(printf '%-34s %-5s %s' "$name" ok "$last")"); passes=$((passes + 1))
  else rows+=("$(printf '%-34s %-5s %s' "$name" FAIL "rc=$rc: $last")"); fails=$((fails + 1)); printf '%s\n' "$log" | tail -20; fi
}
for n in 1 1000 1048576 16777217; do
  check "vadd cuda n=$n ($arch cubin)" "$bundle/vadd_cubin" "$bundle/vadd.$arch.cubin" $n cuda
done
if command -v compute-sanitizer >/dev/null; then
  check "memcheck vadd cuda n=100003" compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$bundle/vadd_cubin" "$bundle/vadd.$arch.cubin" 100003 cuda
  check "memcheck vadd cuda n=4096" compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$bundle/vadd_cubin" "$bundle/vadd.$arch.cubin" 4096 cuda
else
  rows+=("$(printf '%-34s %-5s %s' "memcheck" SKIP "compute-sanitizer not found")")
fi
echo
echo "== tilec GPU check: $(date -u +%Y-%m-%d), GPU: ${gpu:-none found}, commit: $(cat "$bundle/COMMIT" 2>/dev/null || echo '?')"
printf '%-34s %-5s %s\n' check result detail
printf '%s\n' "${rows[@]}"
echo "$passes passed, $fails failed, $((${#rows[@]} - passes - fails)) skipped"
[ $fails -eq 0 ]
