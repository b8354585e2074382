#!/usr/bin/env bash
# docs-examples.sh ROOT: an example in docs/*.md under a line
# `<!-- the text of samples/NAME.c -->` is the ```c block that follows it,
# and must be that sample's text exactly: the sample is built and run by
# ctest (samples/NAME/...), so the docs show a program that compiles and
# works.
set -u
root=$1
fail=0 checked=0
for doc in "$root"/docs/*.md; do
  while read -r sample; do
    block=$(awk -v marker="<!-- the text of $sample -->" '
      $0 == marker {found = 1; next}
      found == 1 && /^```c$/ {found = 2; next}
      found == 2 && /^```$/ {exit}
      found == 2 {print}' "$doc")
    if [ ! -f "$root/$sample" ]; then echo "FAIL: $doc shows $sample, which does not exist"; fail=1; continue; fi
    if ! diff <(printf '%s\n' "$block") "$root/$sample" >/dev/null; then
      echo "FAIL: $(basename "$doc")'s example differs from $sample:"
      diff <(printf '%s\n' "$block") "$root/$sample" | head -20
      fail=1
    fi
    checked=$((checked + 1))
  done < <(sed -n 's/^<!-- the text of \(samples\/[A-Za-z0-9_]*\.c\) -->$/\1/p' "$doc")
done
echo "$checked docs examples checked against their samples"
[ "$checked" -gt 0 ] || { echo "FAIL: no example is marked"; exit 1; }
exit $fail
