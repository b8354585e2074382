#!/usr/bin/env bash
# Feeds every file in the bad-input corpus, and a few generated monsters, to
# tilec. Each must end with exit status 0 or 1 and a diagnostic when 1: no
# crash, no sanitizer report, no hang (each run is time-limited).
set -u
tilec=$1
dir=$2
export ASAN_OPTIONS="${ASAN_OPTIONS:-exitcode=86:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-exitcode=86:print_stacktrace=1:halt_on_error=1}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Generated inputs: too big to commit, cheap to make.
: > "$tmp/empty.tile"
printf 'kernel k(x: *f32) { let a = %s1%s; }\n' "$(printf '(%.0s' $(seq 100000))" "$(printf ')%.0s' $(seq 100000))" > "$tmp/deep-parens.tile"
printf 'kernel k(x: *f32) { let a = %s1; }\n' "$(printf -- '-%.0s' $(seq 100000))" > "$tmp/deep-unary.tile"
{ printf 'kernel k(x: *f32) { let a = 1'; head -c 1000000 /dev/zero | tr '\0' '+' ; printf '1; }\n'; } > "$tmp/long-line.tile"
{ printf 'kernel k(x: *f32) { let a = 1'; for i in $(seq 20000); do printf ' + 1'; done; printf '; }\n'; } > "$tmp/long-sum.tile"
head -c 100000 /dev/urandom > "$tmp/random.tile" 2>/dev/null || head -c 100000 /dev/zero > "$tmp/random.tile"
head -c 4096 /dev/zero > "$tmp/nuls.tile"
printf 'kernel k(x: *f32, n: i32) {\n    let o = arange(0, 1024);\n    store(x + o, 1.0, o < n);\n' > "$tmp/truncated.tile"
{ printf 'kernel k(x: *f32) {\n'; for i in $(seq 2000); do printf 'for i%d in range(4) {\n' "$i"; done; printf 'store(x, 1.0);\n'; for i in $(seq 2000); do printf '}\n'; done; printf '}\n'; } > "$tmp/deep-for.tile"
{ printf 'kernel k(x: *f32) {\n'; for i in $(seq 60); do printf 'for i%d in range(2) {\n' "$i"; done; printf 'store(x, 1.0);\n'; for i in $(seq 60); do printf '}\n'; done; printf '}\n'; } > "$tmp/nested-60-loops.tile"
{ printf 'kernel k(x: *f32, n: i32) {\nvar v = 0;\n'; for i in $(seq 100); do printf 'if v < n { while v < %d { v = v + 1;\n' "$i"; done; printf 'store(x, 1.0);\n'; for i in $(seq 100); do printf '} } else { v = v - 1; }\n'; done; printf '}\n'; } > "$tmp/nested-100-if-while.tile"
{ for i in $(seq 300); do printf 'kernel k%d(x: *f32) { let y = x * x; }\n' "$i"; done; } > "$tmp/many-errors.tile"

fail=0 count=0
for f in "$dir"/*.tile "$tmp"/*.tile; do
  [ -e "$f" ] || continue
  count=$((count + 1))
  timeout 20 "$tilec" --emit=ptx -o /dev/null "$f" > "$tmp/out" 2> "$tmp/err"
  rc=$?
  case $rc in
    0) ;;
    1) if ! grep -q 'error' "$tmp/err"; then echo "FAIL $f: exit 1 without a diagnostic"; fail=$((fail + 1)); fi ;;
    124) echo "FAIL $f: hang (timeout)"; fail=$((fail + 1)) ;;
    *) echo "FAIL $f: exit status $rc"; head -c 3000 "$tmp/err"; fail=$((fail + 1)) ;;
  esac
done
echo "bad inputs: $count run, $fail failed"
[ $fail -eq 0 ] && [ $count -gt 0 ]
