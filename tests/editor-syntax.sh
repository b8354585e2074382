#!/usr/bin/env bash
# editor-syntax.sh ROOT: the editor syntaxes (editors/) know every keyword
# of the lexer (parser/lexer.re) and every builtin of the language
# (lang/builtins.c, and print), and no word that is neither: a keyword or
# builtin added to the compiler fails here until the editors know it.
set -u
root=$1
fail=0
words() { tr ' |' '\n\n' | sed '/^$/d' | sort -u; }
keywords=$(grep -oE '^ +"[a-zA-Z]+"( *\| *"[a-zA-Z]+")*' "$root/parser/lexer.re" | grep -oE '[a-zA-Z]+' | words)
builtins=$( (grep -oE '^\s*\{"[a-z_0-9]+", *B_' "$root/lang/builtins.c" | grep -oE '"[a-z_0-9]+"' | tr -d '"'; echo print) | words)
types="bf16 f16 f32 f64 i1 i16 i32 i64 i8"
want_kw=$(printf '%s\n' $keywords | words)
want_all=$(printf '%s\n' $keywords $builtins $types | words)
[ -n "$keywords" ] && [ "$(printf '%s\n' "$builtins" | wc -l)" -gt 20 ] || { echo "FAIL: cannot read the compiler's lists"; exit 1; }
# vim: every word of its syn keyword lines
vim=$(sed -n 's/^syn keyword tile\(Keyword\|Reserved\|Constant\|Type\|Builtin\) //p' "$root/editors/vim/syntax/tile.vim" | words)
# TextMate: the alternatives of its \b(...)\b patterns
tm=$(grep -oE '\\\\b\([a-z0-9_|A-Z]+\)' "$root/editors/vscode/syntaxes/tile.tmLanguage.json" | sed 's/^\\\\b(//; s/)$//' | words)
for ed in vim tm; do
  got=${!ed}
  missing=$(comm -23 <(printf '%s\n' "$want_all") <(printf '%s\n' "$got"))
  extra=$(comm -13 <(printf '%s\n' "$want_all") <(printf '%s\n' "$got"))
  if [ -n "$missing$extra" ]; then
    echo "FAIL: $ed's syntax: missing [$(echo $missing)], unknown to the compiler [$(echo $extra)]"; fail=1
  fi
done
[ $fail -eq 0 ] && echo "editor syntaxes: $(printf '%s\n' "$want_all" | wc -l) words, as the compiler's ($(echo $want_kw))"
exit $fail
