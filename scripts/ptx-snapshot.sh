#!/usr/bin/env bash
# The code tilec generates, as a folder of files that two commits can be
# compared by: for a change meant to move code without changing what it
# does (a refactoring), the PTX of every kernel must stay byte for byte.
#
#   scripts/ptx-snapshot.sh TILEC OUTDIR
#       compiles every .tile and .tir file git tracks (stdlib, samples,
#       bench, tests) to PTX for sm_80, sm_90 and sm_90a (wgmma, the copy
#       engine; PTX_SNAPSHOT_ARCHS to choose) with TILEC, into OUTDIR:
#       NAME.ptx (what tilec printed) and NAME.err (its diagnostics and
#       exit status), for each file at its default constants and at the
#       options each of its golden RUN lines gives tilec, and the stdlib
#       at the configurations runtime/stdlib.c compiles.
#   scripts/ptx-snapshot.sh --compare BASE [BUILD]
#       builds commit BASE in a scratch worktree (Release), takes both
#       snapshots (the working tree's with BUILD/tilec, default build/) and
#       says which outputs differ; exit 1 if any PTX does. Diagnostics that
#       differ are listed apart: an error's wording may change on purpose.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)

if [ "${1:-}" = --compare ]; then
  base=${2:?usage: ptx-snapshot.sh --compare BASE [BUILD]}
  build=${3:-$root/build}
  scratch=$(mktemp -d)
  trap 'git -C "$root" worktree remove --force "$scratch/src" >/dev/null 2>&1; rm -rf "$scratch"' EXIT
  git -C "$root" worktree add --detach "$scratch/src" "$base" >/dev/null 2>&1 || { echo "no commit $base"; exit 2; }
  cmake -S "$scratch/src" -B "$scratch/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTILEC_BUILD_TESTS=OFF >/dev/null &&
    ninja -C "$scratch/build" tilec_cli >/dev/null || { echo "building $base failed"; exit 2; }
  ninja -C "$build" tilec_cli >/dev/null || { echo "building the working tree failed"; exit 2; }
  # both snapshots of the working tree's file list, so a file added since
  # BASE is compiled by both (the old compiler may reject it: that shows)
  "$0" "$scratch/build/tilec" "$scratch/base" || exit 2
  "$0" "$build/tilec" "$scratch/head" || exit 2
  n=$(find "$scratch/head" -name '*.ptx' | wc -l)
  ptx=$(diff -rq "$scratch/base" "$scratch/head" | grep '\.ptx' )
  err=$(diff -rq "$scratch/base" "$scratch/head" | grep -v '\.ptx')
  nonempty=$(find "$scratch/head" -name '*.ptx' -size +0 | wc -l)
  echo "$n compiles ($nonempty with PTX) by $base and by the working tree"
  if [ -n "$err" ]; then
    echo "diagnostics or exit status differ:"
    echo "$err" | sed "s|$scratch/||g"
    echo "$err" | head -5 | while read -r _ a _ b _; do diff "$a" "$b" | head -8; done
  fi
  if [ -n "$ptx" ]; then
    echo "PTX differs:"; echo "$ptx" | sed "s|$scratch/||g"; exit 1
  fi
  echo "PTX identical for every compile"
  exit 0
fi

tilec=$(realpath "${1:?usage: ptx-snapshot.sh TILEC OUTDIR | --compare BASE [BUILD]}")
out=${2:?usage: ptx-snapshot.sh TILEC OUTDIR}
mkdir -p "$out"
out=$(realpath "$out")

# compile FILE ARCH TAG ARGS...: one output pair
compile() {
  local f=$1 arch=$2 tag=$3; shift 3
  local name
  name=$(echo "$f" | tr / _)__${arch}__$tag
  # from the root, by its path there: diagnostics and assert messages name
  # the file as given, the same in every checkout
  (cd "$root" && "$tilec" "$f" --emit=ptx --arch="$arch" --no-sidecar -o "$out/$name.ptx" "$@" 2> "$out/$name.err")
  echo "exit $?" >> "$out/$name.err"
  [ -e "$out/$name.ptx" ] || : > "$out/$name.ptx"
}

# The options a RUN line gives tilec, less those this script sets itself.
run_options() {
  grep -E '^[[:space:]]*//[[:space:]]*RUN:.*%tilec' "$1" | while IFS= read -r line; do
    local cmd=${line#*%tilec}
    cmd=${cmd%%|*}
    case " $cmd " in *" %s "*) ;; *) continue ;; esac # another input than the file
    # shellcheck disable=SC2086
    set -- $cmd
    local keep=()
    while [ $# -gt 0 ]; do
      case $1 in
        %s | 2\>\&1 | --emit=* | --arch=* | --no-sidecar | --time | --passes=* | --print-locs | --help | --version | --dump-all | --dump-after=* | -v | --verbose) ;;
        -o | \> | 2\>) shift ;;
        \>* | 2\>* | %t*) ;;
        *) keep+=("$1") ;;
      esac
      shift
    done
    echo "${keep[*]}"
  done | sort -u
}

# The stdlib at the shapes the library compiles: matmul at each row of
# matmul_configs and each operand layout, the row kernels at ALIGN 1 and 8.
stdlib_options() {
  case $1 in
    stdlib/matmul.tile)
      for cfg in "128 128 32" "64 64 32" "32 32 32"; do
        set -- $cfg
        for lay in "0 0 0" "1 1 1" "1 0 1" "0 1 0"; do
          set -- $cfg $lay
          echo "-D BLOCK_M=$1 -D BLOCK_N=$2 -D BLOCK_K=$3 -D A_LAYOUT=$4 -D B_LAYOUT=$5 -D C_LAYOUT=$6 --num-stages=4"
        done
      done
      echo "-D EVEN=1 -D HAS_BIAS=1 -D ACTIVATION=2 --num-warps=8"
      echo "-D BLOCK_M=128 -D BLOCK_N=128 --num-warps=8 --num-stages=3" ;;
    stdlib/softmax.tile | stdlib/layernorm.tile | stdlib/rmsnorm.tile)
      for b in 1024 4096; do echo "-D BLOCK=$b -D ALIGN=1"; echo "-D BLOCK=$b -D ALIGN=8"; done ;;
  esac
}

count=0
while IFS= read -r f; do
  opts=$( { run_options "$root/$f"; stdlib_options "$f"; } | grep -v '^$' | sort -u)
  for arch in ${PTX_SNAPSHOT_ARCHS:-sm_80 sm_90 sm_90a}; do
    compile "$f" "$arch" default
    count=$((count + 1))
    while IFS= read -r o; do
      [ -n "$o" ] || continue
      # shellcheck disable=SC2086
      compile "$f" "$arch" "$(echo "$o" | tr -c 'A-Za-z0-9=_-' _)" $o
      count=$((count + 1))
    done <<< "$opts"
  done
done < <(cd "$root" && git ls-files '*.tile' '*.tir' | sort)
echo "ptx-snapshot: $count compiles into $out"
