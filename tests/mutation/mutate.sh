#!/usr/bin/env bash
# Mutation testing: each mutant of tests/mutation/mutants.tsv (a one-token
# bug: FILE, exact text found once, its replacement) is applied in turn to
# a copy of the committed tree (git archive HEAD, in a temporary folder:
# the checkout is never edited), built (Release, ninja -j1) and tested with
# a fast subset of ctest; a mutant that no test fails survives. The copy's
# file is restored after each mutant, whatever happens.
#
#   tests/mutation/mutate.sh [-l LIST] [-R REGEX] [-E REGEX] [-m FIRST:LAST] [-k] [-w DIR]
#
#   -l LIST   the mutants (default tests/mutation/mutants.tsv)
#   -R, -E    ctest's include and exclude regexes for the subset
#             (default: the unit tests and goldens with the cpu and emu
#             device runs, without cuda and the emulator runs that take
#             minutes in Release: sm_90a, bank counts, the stdlib's emu
#             runs, attention_bwd and the stdlib device test on emu;
#             about 5 minutes on 2 cores)
#   -m A:B    only mutants A to B (1-based, as listed)
#   -k        keep the temporary folder (its path is printed)
#   -w DIR    work in DIR, a folder kept by -k: its tree is brought up to
#             HEAD file by file and its build reused (implies -k)
# Prints one line a mutant (KILLED by the first failing test or by the
# build, SURVIVED, or NOT APPLIED when its text is not found exactly once)
# and a summary; exits 1 if any mutant survived or could not be applied.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
list=$root/tests/mutation/mutants.tsv
include='^(unit/|golden/)'
exclude='(/cuda$|emu-sm_90a$|test_emu_matmul_banks|test_emu_wgmma_matmul|test_stdlib_[a-z_]+/emu$|devices_attention_bwd/emu$|devices_stdlib/emu$)'
range=""
keep=0
reuse=""
while getopts "l:R:E:m:kw:" o; do
  case $o in
    l) list=$OPTARG ;; R) include=$OPTARG ;; E) exclude=$OPTARG ;; m) range=$OPTARG ;; k) keep=1 ;; w) reuse=$OPTARG keep=1 ;;
    *) sed -n '2,20p' "$0"; exit 2 ;;
  esac
done
list=$(cd "$(dirname "$list")" && pwd)/$(basename "$list")
if [ -n "$reuse" ]; then work=$(cd "$reuse" && pwd); else work=$(mktemp -d "${TMPDIR:-/tmp}/tilec-mutate.XXXXXX"); fi
current=""  # the file the current mutant changed, restored on any exit
restore() { if [ -n "$current" ]; then cp -p "$work/orig" "$work/src/$current" && touch "$work/src/$current"; current=""; fi; }
cleanup() { restore; if [ $keep = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi; }
trap cleanup EXIT
trap 'exit 130' INT TERM

commit=$(git -C "$root" rev-parse --short HEAD)
echo "mutation run: $(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit, tests -R '$include' -E '$exclude'"
if [ -n "$reuse" ]; then
  # only the files that differ are copied (with a new time), so ninja rebuilds just what changed
  rm -rf "$work/fresh" && mkdir -p "$work/fresh" && git -C "$root" archive HEAD | tar -x -C "$work/fresh" || exit 1
  (cd "$work/fresh" && find . -type f) | while read -r f; do
    cmp -s "$work/fresh/$f" "$work/src/$f" || { mkdir -p "$(dirname "$work/src/$f")"; cp "$work/fresh/$f" "$work/src/$f"; }
  done
  rm -rf "$work/fresh"
else
  mkdir -p "$work/src"
  git -C "$root" archive HEAD | tar -x -C "$work/src" || exit 1
fi
cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$work/cmake.log" 2>&1 ||
  { cat "$work/cmake.log"; exit 1; }

run_tests() { (cd "$work/build" && ctest -R "$include" -E "$exclude" --stop-on-failure --timeout 300 -j1 >"$work/ctest.log" 2>&1); }
t0=$(date +%s)
if ! ninja -C "$work/build" -j1 >"$work/build.log" 2>&1; then tail -30 "$work/build.log"; exit 1; fi
if ! run_tests; then
  echo "the unmutated tree fails the subset:"; grep -E 'Failed|\*\*\*' "$work/ctest.log" | head; exit 1
fi
ntests=$(grep -c 'Test *#' "$work/ctest.log")
echo "baseline: built and $ntests tests passed in $(( $(date +%s) - t0 ))s"

n=0 killed=0 survived=0 skipped=0
survivors=""
while IFS=$'\t' read -r file find repl what; do
  case $file in ''|'#'*) continue ;; esac
  n=$((n + 1))
  if [ -n "$range" ]; then
    lo=${range%:*} hi=${range#*:}
    { [ $n -lt "$lo" ] || [ $n -gt "$hi" ]; } && continue
  fi
  t0=$(date +%s)
  cp -p "$work/src/$file" "$work/orig"
  if ! python3 - "$work/src/$file" "$find" "$repl" <<'PY'
import sys
path, find, repl = sys.argv[1], *(a.replace("\\n", "\n").replace("\\t", "\t") for a in sys.argv[2:])
s = open(path).read()
if s.count(find) != 1: sys.exit(1)
open(path, "w").write(s.replace(find, repl))
PY
  then
    echo "[$n] NOT APPLIED ($file: text not found exactly once): $what"; skipped=$((skipped + 1)); continue
  fi
  current=$file
  if ! ninja -C "$work/build" -j1 >"$work/build.log" 2>&1; then
    echo "[$n] KILLED by the build ($(( $(date +%s) - t0 ))s): $what"; killed=$((killed + 1))
  elif run_tests; then
    echo "[$n] SURVIVED ($(( $(date +%s) - t0 ))s): $what  [$file]"; survived=$((survived + 1)); survivors="$survivors $n"
  else
    by=$(grep -m1 -oE '[0-9]+ - [^ ]+ \((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception|Child aborted)\)' "$work/ctest.log" | sed 's/^[0-9]* - //')
    [ -n "$by" ] || by=$(grep -m1 -E '\*\*\*' "$work/ctest.log" | sed -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: //; s/ +\.+.*//')
    echo "[$n] KILLED by $by ($(( $(date +%s) - t0 ))s): $what"; killed=$((killed + 1))
  fi
  restore
done <"$list"
# the restored tree builds again, so a later run starts clean
ninja -C "$work/build" -j1 >"$work/build.log" 2>&1 || echo "warning: the restored tree does not build"
echo "summary: $((killed + survived + skipped)) mutants: $killed killed, $survived survived${survivors:+ (#${survivors# })}, $skipped not applied"
[ $survived -eq 0 ] && [ $skipped -eq 0 ]
