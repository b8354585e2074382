#!/usr/bin/env bash
# gpt-sample.sh BUILD: the GPT sample's programs (samples/gpt/, docs/gpt.md)
# on the CPU device, as a user runs them:
#  - the loss falls: a small model (1 layer, 32 wide, seq 32, batch 4) on
#    the sample's addition corpus goes from ln 256 (5.55) to below 3.0,
#    training and validation, within 60 steps (it reaches about 2.6: the
#    characters' frequencies; learning to add takes longer);
#  - the loss curve is written as CSV (a row a step) and SVG;
#  - a run interrupted at step 3 (--stop-at, --save) and resumed
#    (--resume) prints the same losses, learning rates and gradient norms,
#    bit for bit, as the run that was not;
#  - the step captured as a graph and replayed (the default) gives the
#    numbers of the run with --graph off, bit for bit;
#  - sample generates from the checkpoint;
#  - each error a user can make says so and exits nonzero: a missing data
#    file, a bad configuration, a checkpoint of another shape, a file that
#    is no checkpoint, a bad flag.
set -u
build=$1
train=$build/samples/gpt/train
sample=$build/samples/gpt/sample
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail=0
small=(--device cpu --n-layer 1 --n-head 1 --n-embd 32 --seq 32 --batch 4)

# ---- the loss falls, the curve is written
if ! "$train" "${small[@]}" --steps 60 --lr 3e-3 --warmup 5 --eval-every 30 --eval-batches 2 \
     --csv "$t/loss.csv" --svg "$t/loss.svg" >"$t/out" 2>&1; then
  echo "FAIL: train exited $?"; cat "$t/out"; exit 1
fi
first=$(awk -F, 'NR == 2 {print $2}' "$t/loss.csv")
last=$(awk -F, 'END {print $2}' "$t/loss.csv")
val=$(awk -F, 'END {print $3}' "$t/loss.csv")
rows=$(($(wc -l <"$t/loss.csv") - 1))
echo "loss: $first -> $last (validation $val) in $rows steps"
awk -v f="$first" -v l="$last" -v v="$val" 'BEGIN {exit !(f > 5.3 && f < 5.8 && l < 3.0 && v < 3.0)}' ||
  { echo "FAIL: the loss did not fall from about 5.55 to below 3.0 (training and validation)"; fail=1; }
[ "$rows" -eq 60 ] || { echo "FAIL: the CSV has $rows rows, not 60"; fail=1; }
grep -q '<svg' "$t/loss.svg" && grep -q '<polyline' "$t/loss.svg" ||
  { echo "FAIL: no loss curve in the SVG"; fail=1; }
grep -q '^step    60 | loss' "$t/out" && grep -q '^done: 60 steps' "$t/out" ||
  { echo "FAIL: no progress lines or summary"; cat "$t/out"; fail=1; }

# ---- interrupted and resumed: the same numbers as one run
common=("${small[@]}" --steps 6 --eval-every 100 --svg '')
"$train" "${common[@]}" --csv "$t/whole.csv" >/dev/null 2>&1 || { echo "FAIL: the whole run"; fail=1; }
"$train" "${common[@]}" --stop-at 3 --save "$t/ck" --csv "$t/part1.csv" >/dev/null 2>&1 ||
  { echo "FAIL: the interrupted run"; fail=1; }
"$train" --device cpu --resume "$t/ck" --steps 6 --eval-every 100 --svg '' --csv "$t/part2.csv" >"$t/out" 2>&1 ||
  { echo "FAIL: the resumed run"; cat "$t/out"; fail=1; }
cut -d, -f1,2,5,6 "$t/whole.csv" | tail -n +2 >"$t/a"
{ tail -n +2 "$t/part1.csv"; tail -n +2 "$t/part2.csv"; } | cut -d, -f1,2,5,6 >"$t/b"
if cmp -s "$t/a" "$t/b" && [ "$(wc -l <"$t/a")" -eq 6 ]; then echo "resume: steps 4 to 6 match the whole run bit for bit"
else echo "FAIL: the resumed run differs from the whole run (step,loss,lr,norm):"; diff "$t/a" "$t/b"; fail=1; fi

# ---- the step replayed as a graph (the default) and run launch by launch: the same numbers
"$train" "${common[@]}" --graph off --csv "$t/eager.csv" >/dev/null 2>&1 || { echo "FAIL: the run without a graph"; fail=1; }
cut -d, -f1,2,5,6 "$t/eager.csv" | tail -n +2 >"$t/c"
if cmp -s "$t/a" "$t/c" && [ "$(wc -l <"$t/c")" -eq 6 ]; then echo "graph: steps 1 to 6 match the run without one bit for bit"
else echo "FAIL: the run without a graph differs from the one with (step,loss,lr,norm):"; diff "$t/a" "$t/c"; fail=1; fi

# ---- sample from the checkpoint
if out=$("$sample" "$t/ck" --device cpu --prompt "12+3=" --tokens 8 --temperature 0 2>&1) &&
   [ "${#out}" -ge 13 ] && [ "${out:0:5}" = "12+3=" ]; then echo "sample: '${out//$'\n'/\\n}'"
else echo "FAIL: sample: $out"; fail=1; fi

# ---- errors
expect() { # expect WHAT MESSAGE COMMAND...: nonzero exit and the message
  local what=$1 msg=$2; shift 2
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [ $rc -ne 0 ] && grep -qF -- "$msg" <<<"$out"; then echo "error: $what: ok"
  else echo "FAIL: $what: exit $rc, want nonzero and '$msg', got: $out"; fail=1; fi
}
expect "missing data file" "cannot read the data file '$t/nope.txt'" "$train" "${small[@]}" --steps 1 --data "$t/nope.txt"
printf 'tiny\n' >"$t/short.txt"
expect "data file too short" "too few for sequences of 32" "$train" "${small[@]}" --steps 1 --data "$t/short.txt"
expect "bad head dim" "the head dim (n_embd / n_head) must be 32, 64, 128 or 256" \
  "$train" --device cpu --n-embd 48 --n-head 2 --steps 1
expect "unknown config" "no config named 'huge'" "$train" --config huge
expect "bad flag" "unknown option '--nope'" "$train" --nope 1
expect "bad value" "bad value 'x' for --steps" "$train" --steps x
expect "another shape" "holds a model of another shape" \
  "$train" --device cpu --resume "$t/ck" --n-layer 2 --n-head 1 --n-embd 32 --seq 32 --steps 6
expect "not a checkpoint" "is not a tilec GPT checkpoint" "$sample" "$t/loss.csv" --device cpu
expect "missing checkpoint" "cannot read the checkpoint" "$sample" "$t/none.ckpt" --device cpu
exit $fail
