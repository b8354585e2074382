#!/usr/bin/env bash
# The stages' include rules (docs/design.md, "What may include what"):
# each folder includes the headers of the folders listed for it below and
# no others, so no stage sees a later one (the parser sees only the AST of
# lang/, never the tile IR). include/tilec.h has no code and includes
# nothing of the project: it names the options and their limits, for the
# compiler's stages as for the library's users. A header whose opening
# comment says it is "private to" its folder is included only from that
# folder, tests/ and bench/ (which measure a stage from inside).
#
#   tests/include-order.sh ROOT
set -u
root=${1:?usage: include-order.sh ROOT}
cd "$root" || exit 2

# folder: the folders (or single headers) its sources may include
allowed() {
  case $1 in
    support) echo "support" ;;
    tileir) echo "support tileir tilec.h" ;;
    lang) echo "support tileir lang tilec.h" ;;
    parser) echo "support lang/ast.h parser grammar.h" ;;
    lower) echo "support tileir lower tilec.h" ;;
    backend/ptx) echo "support backend/ptx" ;;
    emu) echo "support emu lower/ptx_async.h lower/ptx_wgmma.h" ;; # the inline-asm contracts with codegen
    driver) echo "support tileir lang parser lower backend/ptx driver tilec.h" ;;
    runtime) echo "support tileir emu runtime tilec.h tilec_rt.h tilec_stdlib.h source_hash.h" ;;
    tools) echo "support tileir tools tilec.h" ;;
    *) return 1 ;;
  esac
}

fail=0 count=0
while IFS= read -r f; do
  dir=${f%/*}
  rules=$(allowed "$dir") || continue
  while IFS=: read -r line inc; do
    [ -n "$inc" ] || continue
    count=$((count + 1))
    ok=0
    for r in $rules; do
      case $inc in "$r" | "$r"/*) ok=1 ;; esac
    done
    if [ $ok -eq 0 ]; then
      echo "$f:$line: includes \"$inc\", which $dir/ may not (it may include: $rules)"
      fail=$((fail + 1))
    fi
  done < <(grep -n '^#include "' "$f" | sed 's/^\([0-9]*\):#include "\([^"]*\)".*/\1:\2/')
done < <(git ls-files '*.c' '*.h' '*.y' '*.re')

# private headers: only their own folder and tests/ include them
while IFS= read -r h; do
  head -3 "$h" | grep -qi 'private to' || continue
  hdir=${h%/*}
  while IFS= read -r user; do
    udir=${user%/*}
    case $udir in "$hdir" | tests | tests/* | bench) continue ;; esac
    echo "$user: includes \"$h\", which is private to $hdir/"
    fail=$((fail + 1))
  done < <(git ls-files '*.c' '*.h' '*.y' '*.re' | xargs grep -l "^#include \"$h\"")
done < <(git ls-files '*.h')

echo "include-order: $count includes checked, $fail against the rules"
[ $fail -eq 0 ] && [ $count -gt 0 ]
