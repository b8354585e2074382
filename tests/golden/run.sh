#!/usr/bin/env bash
# Runs one golden test: every `// RUN: cmd` line of FILE, in order, with
#   %s -> FILE, %tilec -> the tilec binary, %FileCheck -> FileCheck-19,
#   %t -> a scratch file path (its folder is removed afterwards),
#   not CMD -> succeeds only if CMD exits 1, 2 or 3 (an error in the input,
#              the options or a tool; not a crash, a sanitizer report or an
#              internal compiler error, 4).
# `// REQUIRES: ptxas` skips the test (exit 77, reported as skipped by
# ctest) when ptxas cannot be found.
set -u
file=$1
: "${TILEC:?set TILEC to the tilec binary}" "${FILECHECK:?set FILECHECK}"
# Sanitizer failures must not look like ordinary error exits (status 1).
export ASAN_OPTIONS="${ASAN_OPTIONS:-exitcode=86:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-exitcode=86:print_stacktrace=1:halt_on_error=1}"

if grep -q '^// REQUIRES: ptxas' "$file"; then
  if ! { [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/ptxas" ]; } && ! command -v ptxas >/dev/null &&
     ! [ -x /usr/local/cuda/bin/ptxas ]; then
    echo "SKIPPED: $file needs ptxas, which is not installed"
    exit 77
  fi
fi

not() {
  "$@"
  local rc=$?
  if [ $rc -ge 1 ] && [ $rc -le 3 ]; then return 0; fi
  echo "expected exit status 1, 2 or 3, got $rc: $*" >&2
  return 1
}
export -f not

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
n=0
while IFS= read -r line; do
  cmd=${line#*RUN: }
  cmd=${cmd//%tilec/\"$TILEC\"}
  cmd=${cmd//%FileCheck/\"$FILECHECK\" --dump-input=fail}
  cmd=${cmd//%s/\"$file\"}
  cmd=${cmd//%t/\"$scratch/t\"}
  n=$((n + 1))
  echo "RUN: $cmd"
  if ! bash -o pipefail -c "$cmd"; then
    echo "FAILED: $file (RUN line $n)"
    exit 1
  fi
done < <(grep -E '^[[:space:]]*//[[:space:]]*RUN:' "$file")
if [ $n -eq 0 ]; then
  echo "FAILED: $file has no RUN line"
  exit 1
fi
echo "PASSED: $file"
