#!/usr/bin/env bash
# The GPU check: everything that needs a GPU, in one call on the GPU machine.
#
#   here:        scripts/gpu-kit.sh                  (once; makes .gpu-kit/)
#                scripts/gpu-kit.sh --stamp          (before each run: the commit)
#   GPU machine: bash scripts/gpu-check.sh [--sweep] (device tool, carry [".gpu-kit"])
#
# It builds tilec from the working tree with the kit's tools (that machine
# has a C compiler, CMake, ninja and CUDA, but no LLVM 19, re2c, lemon or
# cmocka), runs the whole test suite with a GPU required (so the CUDA halves
# of the tests run instead of reporting themselves skipped), runs the GPU
# programs again under compute-sanitizer's memcheck, times the stdlib
# kernels against PyTorch and Triton (bench/gpu_bench.py) and the GPT
# sample's training step against PyTorch eager (bench/gpt_bench.py), and prints the
# timing table and then the summary table last. The full log goes to $OUT/gpu-check.log when OUT is set.
# Exit status 0 when every row passed.
#
# Time: the device tool kills a call at 600 s, which would lose the tables.
# Every step runs under `timeout` with what is left of TILEC_GPU_CHECK_BUDGET
# seconds (default 560), so a hung kernel costs its own row, later steps are
# rows saying they were out of time, and the tables still print.
set -u
start=$(date +%s)
# --sweep: the bench's sweeps too (bench/gpu_bench.py --sweep: tile
# configurations, num_warps, attention's whole grid of shapes)
for a in "$@"; do
  case $a in
    --sweep) TILEC_BENCH_ARGS="${TILEC_BENCH_ARGS:-} --sweep" ;;
    *) echo "usage: gpu-check.sh [--sweep]" >&2; exit 2 ;;
  esac
done
budget=${TILEC_GPU_CHECK_BUDGET:-560}
left() { echo $((start + budget - $(date +%s))); }
limit() { local l; l=$(left); echo $((l > 1 ? l : 1)); } # for timeout, where 0 means none
root=$(cd "$(dirname "$0")/.." && pwd)
kit=${TILEC_GPU_KIT:-$root/.gpu-kit}
build=$root/build-gpu
logdir=${OUT:-$build}
mkdir -p "$logdir"
log=$logdir/gpu-check.log
: >"$log"
rows=()
passes=0 fails=0 skips=0
row() { # row NAME ok|FAIL|SKIP DETAIL
  rows+=("$(printf '%-44s %-5s %s' "$1" "$2" "${3:0:90}")")
  case $2 in ok) passes=$((passes + 1)) ;; FAIL) fails=$((fails + 1)) ;; *) skips=$((skips + 1)) ;; esac
}
run() { # run NAME COMMAND...: a row from its exit status and last line, within the budget
  local name=$1; shift
  echo "== $name: $*" >>"$log"
  if [ "$(left)" -le 10 ]; then row "$name" SKIP "out of time (TILEC_GPU_CHECK_BUDGET=$budget s)"; return 1; fi
  local out rc
  out=$(timeout -k 5 "$(limit)" "$@" 2>&1); rc=$?
  printf '%s\n' "$out" >>"$log"
  local last
  last=$(printf '%s\n' "$out" | grep -v '^\s*$' | tail -1)
  [ $rc -eq 124 ] && last="timed out at the budget's end; $last"
  if [ $rc -eq 0 ]; then row "$name" ok "$last"
  else row "$name" FAIL "rc=$rc: $last"; printf '%s\n' "$out" | tail -25; fi
  return $rc
}
table() {
  echo
  echo "== tilec GPU check: $(date -u +%Y-%m-%d), GPU: ${gpu:-none found}, commit: $commit"
  printf '%-44s %-5s %s\n' check result detail
  printf '%s\n' "${rows[@]}"
  echo "$passes passed, $fails failed, $skips skipped"
}

# the commit as stamped here (scripts/gpu-kit.sh --stamp): the GPU machine's
# copy of the tree has no git history to ask
commit=$(cat "$kit/COMMIT" 2>/dev/null || echo '? (no .gpu-kit/COMMIT: run scripts/gpu-kit.sh --stamp)')
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)
arch=sm_${cc:-80}
{
  echo "gpu: ${gpu:-?}"; uname -a; (ldd --version | head -1) 2>&1; cc --version 2>&1 | head -1
  cmake --version | head -1; /usr/local/cuda/bin/ptxas --version 2>&1 | tail -1; cat "$kit/MANIFEST" 2>&1
} >>"$log"

# ---- the kit and the build ---------------------------------------------------
# (without -Werror: that machine's compiler is not CI's, and a warning only
# it gives must not cost the one GPU call a session gets; CI builds -Werror)
if [ ! -f "$kit/lib/libLLVM.so.19.1.xz" ]; then
  row "kit" FAIL "no kit at $kit: run scripts/gpu-kit.sh here and carry .gpu-kit"
  table; exit 1
fi
tk=$(mktemp -d /tmp/tilec-kit.XXXX)
cp -a "$kit/." "$tk/"
xz -d "$tk/lib/libLLVM.so.19.1.xz"
export LD_LIBRARY_PATH=$tk/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$PATH:/usr/local/cuda/bin
if ! run "configure (Release, kit LLVM $(sed -n 2p "$tk/MANIFEST" | cut -d, -f1))" \
     cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
       -DTILEC_LLVM_INCLUDE_DIR="$tk/include" -DTILEC_LLVM_LIBRARY="$tk/lib/libLLVM.so.19.1" \
       -DRE2C="$tk/bin/re2c" -DLEMON="$tk/bin/lemon" -DLEMON_TEMPLATE="$tk/share/lempar.c" \
       -DCMOCKA_INCLUDE_DIR="$tk/include" -DCMOCKA_LIBRARY="$tk/lib/libcmocka.so.0" \
       -DTILEC_GOLDEN_TESTS=OFF -DTILEC_CUDA_ARCH="$arch" ||
   ! run "build" ninja -C "$build"; then
  table; exit 1
fi

# ---- the test suite, GPU required ----------------------------------------------
# (golden tests need FileCheck, which that machine lacks; they test no GPU
# code and run in CI.) A ctest summary line plus the names of what failed.
export TILEC_TEST_REQUIRE_CUDA=1
# (a test that hangs fails at 200 s instead of taking the budget: the
# slowest, attention_bwd/cuda, took 120 s on the H200 beside the rest.) Two
# tests that touch no GPU and take minutes of one core each are left to CI,
# which runs them on every change: stdlib-no-spills (ptxas -v over every
# stdlib configuration; its matmul table is printed at the end, with the
# time left) and emu-attention-banks (the emulator's bank-conflict gate).
cpu_only='^(stdlib-no-spills|emu-attention-banks)$'
ctest_out=$(cd "$build" && timeout -k 5 "$(limit)" ctest -j"$(nproc)" --timeout 200 -E "$cpu_only" --output-on-failure 2>&1)
ctest_rc=$?
[ $ctest_rc -eq 124 ] && ctest_out="$ctest_out
ctest: timed out at the budget's end"
printf '%s\n' "$ctest_out" >>"$log"
summary=$(printf '%s\n' "$ctest_out" | grep -E 'tests passed|tests failed' | tail -1)
failed=$(printf '%s\n' "$ctest_out" | sed -n 's/^.*[0-9]* - \(.*\) (.*)$/\1/p' | tr '\n' ' ')
skipped=$(printf '%s\n' "$ctest_out" | grep -c '\*\*\*Skipped\|Not Run (Disabled)\| Skipped ')
if [ $ctest_rc -eq 0 ] && [ "$skipped" -eq 0 ]; then row "ctest (all but golden and 2 CPU-only), GPU required" ok "$summary"
else row "ctest (all but golden and 2 CPU-only), GPU required" FAIL "$summary; skipped: $skipped; failed: $failed"
  printf '%s\n' "$ctest_out" | grep -B2 -A20 -E 'FAILED|Failed|ERROR' | tail -60; fi
# the device tests, one executable per concern (tests/unit/test_runtime_devices_*.c)
device_tests=()
for x in "$build"/tests/test_runtime_devices_*; do [ -x "$x" ] && device_tests+=("$(basename "$x")"); done
[ ${#device_tests[@]} -eq 0 ] && row "  unit/test_runtime_devices_*" FAIL "no test_runtime_devices_* executables built"
# the stdlib's entry points, one test_stdlib_<what> per family (test_stdlib_config runs no device)
stdlib_tests=()
for x in "$build"/tests/test_stdlib_*; do
  case $x in *test_stdlib_config) ;; *) [ -x "$x" ] && stdlib_tests+=("$(basename "$x")") ;; esac
done
for t in "${device_tests[@]/#/unit/}" unit/test_runtime_api "${stdlib_tests[@]/#/unit/}" \
         samples/vadd_runtime/cuda samples/vadd_cubin/cuda samples/attention/cuda samples/attention_bwd/cuda; do
  case $t in unit/test_runtime_devices_* | unit/test_stdlib_*) t=$t/cuda ;; esac
  line=$(printf '%s\n' "$ctest_out" | grep -E "Test +#[0-9]+: $t " | head -1)
  case $line in
    *Passed*) row "  $t" ok "$(echo "$line" | grep -o '[0-9.]* sec')" ;;
    '') row "  $t" FAIL "not in the suite" ;;
    *) row "  $t" FAIL "$(echo "$line" | sed 's/.*\.\.\.* *//')" ;;
  esac
done
# the approximate functions' error on this GPU, as the test printed it
worst=$(timeout -k 5 "$(($(limit) > 60 ? 60 : $(limit)))" "$build/tests/test_runtime_devices_math" cuda 2>&1 |
        grep -o 'worst error / tolerance: .*')
[ -n "$worst" ] && row "  transcendentals (error / tolerance)" ok "${worst#worst error / tolerance: }"

# ---- timings: stdlib kernels against PyTorch and Triton, same run ------------------
bench_table=""
if python3 -c 'import torch, triton' 2>/dev/null; then
  echo "== bench: python3 bench/gpu_bench.py" >>"$log"
  # shellcheck disable=SC2086 # TILEC_BENCH_ARGS: extra options, e.g. --sweep
  # SIGTERM at the budget's end: the bench prints what it has (-k: 15 s for that)
  bench_out=$(PYTHONUNBUFFERED=1 timeout -k 15 "$(($(limit) > 20 ? $(limit) - 15 : 1))" python3 "$root/bench/gpu_bench.py" --lib "$build/libtilec.so" \
               ${TILEC_BENCH_ARGS:-} 2>&1); brc=$?
  [ $brc -eq 124 ] && bench_out="$bench_out
bench: timed out at the budget's end"
  printf '%s\n' "$bench_out" >>"$log"
  bench_table=$(printf '%s\n' "$bench_out" | sed -n '/^== tilec matmul sweep/,/^$/p;/^== tilec sweep/,/^$/p;/^== tilec GPU bench/,$p')
  if [ $brc -eq 0 ] && [ -n "$bench_table" ]; then row "bench (bench/gpu_bench.py)" ok "table above"
  else row "bench (bench/gpu_bench.py)" FAIL "rc=$brc: $(printf '%s\n' "$bench_out" | tail -1)"; printf '%s\n' "$bench_out" | tail -20; fi
else
  row "bench" SKIP "python3 with torch and triton not found"
fi

# ---- the GPT sample: a short training run on the GPU (issue 21) ---------------------
# compiled kernels on disk (docs/runtime.md), from here on (the suite above
# runs as a user's would): the GPT runs below compile the same stdlib
# kernels in several processes; this compiles each once
export TILEC_CACHE_DIR=${TILEC_CACHE_DIR:-$build/kernel-cache}
# tokens/s and the loss, from train's summary line (docs/gpt.md)
gpt_dir=$(mktemp -d /tmp/tilec-gpt.XXXX)
if run "gpt train small, 30 steps" "$build/samples/gpt/train" --device cuda --config small --steps 30 \
     --eval-every 30 --eval-batches 2 --csv "$gpt_dir/loss.csv" --svg "$gpt_dir/loss.svg"; then
  gpt_line=$(grep '^done:' "$log" | tail -1)
fi

# the training step against PyTorch eager, same run (bench/gpt_bench.py: small and gpt2)
gpt_table=""
if python3 -c 'import torch' 2>/dev/null; then
  echo "== bench: python3 bench/gpt_bench.py" >>"$log"
  gpt_out=$(PYTHONUNBUFFERED=1 timeout -k 15 "$(limit)" python3 "$root/bench/gpt_bench.py" \
            --train "$build/samples/gpt/train" 2>&1); grc=$?
  printf '%s\n' "$gpt_out" >>"$log"
  gpt_table=$(printf '%s\n' "$gpt_out" | sed -n '/^== gpt training step/,$p')
  if [ $grc -eq 0 ] && [ -n "$gpt_table" ]; then row "gpt step vs PyTorch eager (bench/gpt_bench.py)" ok "table above"
  else row "gpt step vs PyTorch eager (bench/gpt_bench.py)" FAIL "rc=$grc: $(printf '%s\n' "$gpt_out" | tail -1)"; fi
else
  row "gpt step vs PyTorch eager" SKIP "python3 with torch not found"
fi

# ---- compute-sanitizer memcheck over the GPU programs (after the timings, with
# the time left, so that they cannot cost the tables) ------------------------
if command -v compute-sanitizer >/dev/null; then
  cs() { run "memcheck $1" compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 "${@:2}"; }
  # a deliberate device-side assert (print) and trap (tmaps) are errors to
  # the sanitizer: those two tests are left out of their files' runs
  for t in "${device_tests[@]}"; do
    case $t in
      test_runtime_devices_print) TILEC_TEST_SKIP=test_assert_failing cs "$t cuda (no failing assert)" "$build/tests/$t" cuda ;;
      test_runtime_devices_tmaps) TILEC_TEST_SKIP=test_tma_negative_coordinate cs "$t cuda (no negative coordinate)" "$build/tests/$t" cuda ;;
      *) cs "$t cuda" "$build/tests/$t" cuda ;;
    esac
  done
  cs "test_runtime_api" "$build/tests/test_runtime_api"
  cs "vadd_runtime 100003 cuda" "$build/samples/vadd_runtime" 100003 cuda
  module=$(ls "$build"/samples/vadd.cubin 2>/dev/null || ls "$build"/samples/vadd.ptx)
  cs "vadd_cubin 16777217 cuda" "$build/samples/vadd_cubin" "$module" 16777217 cuda
else
  row "memcheck" SKIP "compute-sanitizer not found"
fi

# ---- memcheck over the stdlib's entry points and samples (after the bench: ---------
# with the time left, so that they cannot cost the tables)
if command -v compute-sanitizer >/dev/null; then
  for t in "${stdlib_tests[@]}"; do cs "$t cuda" "$build/tests/$t" cuda; done
  cs "matmul 1000 768 520 cuda" "$build/samples/matmul" 1000 768 520 cuda
  cs "stdlib_layernorm 4096 4096 cuda" "$build/samples/stdlib_layernorm" 4096 4096 cuda
  cs "attention cuda" "$build/samples/attention" cuda
  cs "attention_bwd cuda" "$build/samples/attention_bwd" cuda
  cs "gpt train tiny, 3 steps" "$build/samples/gpt/train" --device cuda --config tiny --steps 3 --csv '' --svg ''
fi

# ---- the stdlib matmul's tile configurations as ptxas -v sees them (sm_90), last --
# registers, shared memory and spill bytes of each kernel at each
# configuration of runtime/stdlib.c's table, printed before the tables
# below (tests/stdlib-no-spills.sh, which fails on a spill, runs in CI; this
# is only its table)
echo "== matmul ptxas -v: tests/stdlib-no-spills.sh" >>"$log"
spill_out=$(timeout -k 5 "$(limit)" bash "$root/tests/stdlib-no-spills.sh" "$build/tilec" "$root" 2>&1)
printf '%s\n' "$spill_out" >>"$log"
matmul_ptxas=$(printf '%s\n' "$spill_out" | sed -n '/^== stdlib matmul, ptxas -v/,/kernel compilations checked/p' | sed '$d')
if [ -n "$matmul_ptxas" ]; then row "matmul ptxas -v (sm_90)" ok "table above"
else row "matmul ptxas -v (sm_90)" SKIP "$(printf '%s\n' "$spill_out" | grep -m1 'matmul' || echo 'no table')"; fi

[ -n "$matmul_ptxas" ] && printf '\n%s\n' "$matmul_ptxas"
[ -n "$bench_table" ] && printf '\n%s\n' "$bench_table"
[ -n "${gpt_line:-}" ] && printf '\n== gpt sample, small (bf16, batch 64, seq 256), 30 steps: %s\n' "$gpt_line"
[ -n "$gpt_table" ] && printf '\n%s\n' "$gpt_table"
table
[ $fails -eq 0 ]
