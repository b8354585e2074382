#!/usr/bin/env bash
# on-cuda.sh COMMAND...: runs a program that was asked for the cuda device.
# Where no GPU can be opened it prints why and exits 77 (ctest: skipped),
# unless TILEC_TEST_REQUIRE_CUDA is set (scripts/gpu-check.sh), when that
# is a failure like any other.
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ $rc -ne 0 ] && printf '%s\n' "$out" | grep -q 'cannot open a device' &&
   [ -z "${TILEC_TEST_REQUIRE_CUDA:-}" ]; then
  echo "SKIPPED: no GPU here ($*)"
  exit 77
fi
exit $rc
