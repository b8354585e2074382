" Vim syntax for tilec's tile language (.tile files; docs/language.md).
" Install: copy editors/vim/syntax/tile.vim and editors/vim/ftdetect/tile.vim
" into ~/.vim/syntax/ and ~/.vim/ftdetect/ (or a plugin folder).
" tests/editor-syntax.sh checks the keyword and builtin lists against the
" compiler's (parser/lexer.re, lang/builtins.c).
if exists("b:current_syntax")
  finish
endif

syn keyword tileKeyword kernel let var const for in if else while
syn keyword tileReserved return break continue
syn keyword tileConstant true false None
syn keyword tileType i1 i8 i16 i32 i64 f16 bf16 f32 f64
syn keyword tileBuiltin program_id num_programs arange load store where minimum maximum abs sqrt floor ceil fma cdiv cast zeros full exp exp2 log log2 sin cos rsqrt sigmoid tanh sum max min expand_dims broadcast_to reshape permute trans argmax argmin erf rand randint cumsum dot atomic_add atomic_max atomic_min atomic_xchg atomic_cas assert multiple_of print
syn match tileNumber "\<[0-9][0-9_]*\>"
syn match tileNumber "\<0[xX][0-9a-fA-F_]\+\>"
syn match tileFloat "\<[0-9][0-9_]*\.[0-9_]*\([eE][-+]\?[0-9]\+\)\?\>"
syn match tileFloat "\<[0-9][0-9_]*[eE][-+]\?[0-9]\+\>"
syn region tileString start=+"+ skip=+\\.+ end=+"+ oneline
syn match tileComment "//.*$" contains=tileTodo
syn keyword tileTodo TODO FIXME XXX contained

hi def link tileKeyword Statement
hi def link tileReserved Error
hi def link tileConstant Constant
hi def link tileType Type
hi def link tileBuiltin Function
hi def link tileNumber Number
hi def link tileFloat Float
hi def link tileString String
hi def link tileComment Comment
hi def link tileTodo Todo

let b:current_syntax = "tile"
