#!/usr/bin/env bash
# Installs the build dependencies named in DEVELOPERS.md that are missing
# (Debian packages). Does nothing when everything is there.
set -eu
missing=()
need() { # need PACKAGE TEST-COMMAND...
  local pkg=$1; shift
  "$@" >/dev/null 2>&1 || missing+=("$pkg")
}
need llvm-19-dev    test -e /usr/lib/llvm-19/include/llvm-c/Core.h
need llvm-19-tools  command -v FileCheck-19
need re2c           command -v re2c
need lemon          command -v lemon
need libcmocka-dev  test -e /usr/include/cmocka.h
need cmake          command -v cmake
need ninja-build    command -v ninja
need gcc            command -v cc
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ! { [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/ptxas" ]; } && ! command -v ptxas >/dev/null &&
   ! [ -x /usr/local/cuda/bin/ptxas ]; then
  echo "deps: warning: the CUDA toolkit's ptxas was not found (CUDA_HOME, PATH, /usr/local/cuda);"
  echo "deps: warning: tilec will still emit PTX, but cubin output and its tests are skipped"
fi
