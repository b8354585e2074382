#!/usr/bin/env bash
# emu-attention-banks.sh BUILD: flash attention's kernels read their
# staged operands without bank conflicts (issue 20): the emulator device's
# bank accounting (TILEC_EMU_SMEM_STATS, emu/emu.h) over every launch of
# the forward's and backward's device tests and of tls_attention_fwd's
# tests (the library's configurations) must show ldmatrix and cp.async at
# wavefronts == ideal, and some of each for every kernel that stages
# operands (all but the backward's pre-pass), so that a kernel which
# stopped staging its operands fails too. Plain shared loads and stores
# (layout conversions) are printed, not gated. The tests themselves check
# the numbers; a race is an emulator error, which fails them. The
# backward's and tls_attention_fwd's runs here are their only runs on the
# emulator (tests/CMakeLists.txt adds no other: under the sanitizers they
# take minutes each), so a failing one shows its output here.
set -u
build=$1
log=$(mktemp) out=$(mktemp) err=$(mktemp)
trap 'rm -f "$log" "$out" "$err"' EXIT
status=0
for t in "test_runtime_devices_attention emu" "test_runtime_devices_attention_bwd emu" "test_stdlib_attention emu"; do
  # shellcheck disable=SC2086
  if ! TILEC_EMU_SMEM_STATS=1 "$build"/tests/$t >"$out" 2>"$err"; then
    echo "FAILED: $t; its output:"
    cat "$out"
    grep -v -E '^(tilec emu: kernel |  +(ldmatrix|cp\.async|load|store) )' "$err"
    status=1
  fi
  cat "$err" >>"$log"
done
# per kernel: launches, and launches with conflicted / absent ldmatrix and cp.async
awk '
  /^tilec emu: kernel / { k = $4; gsub(/[\047,]/, "", k); launches[k]++; cur = k; next }
  /^ +(ldmatrix|cp\.async) / {
    seen[cur, $1]++
    if ($3 != $5) { bad[cur]++; print "CONFLICT: " cur ": " $0 }
    next
  }
  /^ +(load|store) / { if ($3 != $5) plain[cur " " $1 " " $6]++ }
  END {
    fail = 0
    for (k in launches) {
      printf "%-28s %3d launches", k, launches[k]
      need = (k !~ /_pre_/)
      for (i = 1; i <= 2; i++) {
        kind = i == 1 ? "ldmatrix" : "cp.async"
        printf "  %s in %d", kind, seen[k, kind]
        if (need && seen[k, kind] != launches[k]) { printf " (FAILED: want every launch)"; fail = 1 }
      }
      if (bad[k]) { printf "  %d CONFLICTED", bad[k]; fail = 1 }
      printf "\n"
    }
    for (p in plain) printf "  plain %s: %d launches (not gated)\n", p, plain[p]
    if (length(launches) == 0) { print "FAILED: no launch counted"; fail = 1 }
    exit fail
  }' "$log" || status=1
exit $status
