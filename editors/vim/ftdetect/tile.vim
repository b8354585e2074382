" .tile files are tilec's tile language (editors/vim/syntax/tile.vim).
autocmd BufRead,BufNewFile *.tile setfiletype tile
