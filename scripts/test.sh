#!/usr/bin/env bash
# README's second command: build everything with AddressSanitizer and
# UndefinedBehaviorSanitizer (warnings are errors) and run the whole suite.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh"
build="$root/build-test"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DTILEC_SANITIZE=ON -DTILEC_WERROR=ON >/dev/null
ninja -C "$build"
cd "$build"
ctest --output-on-failure -j"$(nproc)" "$@"
