#!/usr/bin/env bash
# stdlib-no-spills.sh TILEC ROOT: no stdlib kernel spills to local memory
# (nor has its wgmmas serialized by ptxas, C7510),
# as ptxas -v reports it for sm_90, at its default sizes, the row kernels
# also at the row widths the bench times (BLOCK below; ALIGN 1 and 8),
# and stdlib/matmul.tile at each tile configuration runtime/stdlib.c picks
# from, for sm_80, sm_90 and sm_90a (what an sm_90 GPU runs: wgmma), fused
# epilogues included, whose ptxas -v figures for sm_90a it prints as a
# table (scripts/gpu-check.sh shows it), and stdlib/attention.tile's
# forward at each row of attention_configs tls_attention_fwd takes on
# sm_80 and sm_90a (of attention_f32_configs, for its f32 kernel, on
# sm_80, sm_86 and sm_90), and attention_bwd.tile at each row of
# attention_bwd_configs and attention_bwd_f32_configs on sm_80, sm_86 and
# sm_90a, also tabulated. Exits 77 (skipped) without ptxas.
set -u
tilec=$1
root=$2
export ASAN_OPTIONS="${ASAN_OPTIONS:-exitcode=86:detect_leaks=1}"
if ! { [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/ptxas" ]; } && ! command -v ptxas >/dev/null &&
   ! [ -x /usr/local/cuda/bin/ptxas ]; then
  echo "SKIPPED: ptxas not found; spills NOT checked"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# tilec_each KERNELS FILE ARGS...: FILE compiled with -v once for each
# kernel named, alone (--kernel), ptxas's reports into $tmp/log and the
# sidecars into $tmp/k.cubin.tir; fails at the first compile that fails
# (its output last in the log). A row below checks some of a file's
# kernels: compiling the others would be wasted (matmul_f32_ieee's ptxas
# alone takes seconds, and attention_bwd.tile holds nine kernels).
tilec_each() {
  local kernels=$1 f=$2 k
  shift 2
  : >"$tmp/log"
  : >"$tmp/each.tir"
  for k in $kernels; do
    "$tilec" "$f" "$@" --kernel "$k" -v -o "$tmp/k.cubin" >>"$tmp/log" 2>&1 || return 1
    cat "$tmp/k.cubin.tir" >>"$tmp/each.tir"
  done
  mv "$tmp/each.tir" "$tmp/k.cubin.tir"
}
# the row kernels of a file, whose BLOCK is a row width, and those widths
row_kernels() {
  case $(basename "$1") in
    softmax.tile) echo "softmax_f32 softmax_f16 softmax_bf16 softmax_bwd_f32 softmax_bwd_f16 softmax_bwd_bf16" ;;
    layernorm.tile) echo "layernorm_f32 layernorm_f16 layernorm_bf16 layernorm_bwd_f32 layernorm_bwd_f16 layernorm_bwd_bf16" ;;
    rmsnorm.tile) echo "rmsnorm_f32 rmsnorm_f16 rmsnorm_bf16 rmsnorm_bwd_f32 rmsnorm_bwd_f16 rmsnorm_bwd_bf16" ;;
  esac
}
row_widths() {
  case $(basename "$1") in
    softmax.tile) echo "4096 16384" ;; # at 32768 softmax_bwd_* spill about 100 bytes (known, bench/RESULTS.md)
    layernorm.tile) echo "4096 8192" ;;
    rmsnorm.tile) echo "4096 8192" ;;
  esac
}
fail=0 checked=0
for f in "$root"/stdlib/*.tile; do
  [ "$(basename "$f")" = matmul.tile ] && continue # below, at its tile configurations
  runs=("default 1 all")
  # at ALIGN 1 (any shape) and 8 (the bench's shapes: runtime/stdlib.c's row_align)
  for k in $(row_kernels "$f"); do for b in $(row_widths "$f"); do runs+=("$b 1 $k" "$b 8 $k"); done; done
  for run in "${runs[@]}"; do
    read -r block align kernel <<<"$run"
    args=()
    [ "$block" = default ] || args=(-D "BLOCK=$block" -D "ALIGN=$align" --kernel "$kernel")
    if ! "$tilec" "$f" "${args[@]}" --arch=sm_90 -v -o "$tmp/k.cubin" >"$tmp/log" 2>&1; then
      echo "FAIL: $f (BLOCK $block, ALIGN $align, $kernel) does not compile:"; cat "$tmp/log"; fail=1; continue
    fi
    # "Function properties for K" then "N bytes stack frame, S bytes spill stores, L bytes spill loads"
    bad=$(awk '/Function properties for/ {k=$NF} /spill stores/ {if ($5 != 0 || $9 != 0) print k ": " $0}' "$tmp/log")
    n=$(grep -c "Function properties for" "$tmp/log")
    checked=$((checked + n))
    if [ -n "$bad" ]; then echo "FAIL: $(basename "$f") BLOCK $block ALIGN $align ($kernel) spills:"; echo "$bad"; fail=1; fi
  done
done
# stdlib/matmul.tile at each row of matmul_configs in runtime/stdlib.c (read
# from there, so that the two cannot drift apart: min_m, min_n, BLOCK_M,
# BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages, wide_warps, edge_masks,
# even_only: a row for whole tiles of row- or column-major operands only,
# checked at those layouts only), each with
# the layouts of the fast path (operands and C row-major, no masks: what
# the bench times), of both operands transposed, of row-major operands at
# a shape that needs masks (what most calls take; also with SIZES_VEC, as
# calls whose sizes are multiples of 16 bytes take it, and so with
# transposed operands and the GELU epilogue), and of the general path
# (any strides, masks); each kernel on the warps tls_matmul gives it:
# wide_warps for f32 inputs and for the general path, num_warps for the
# rest.
# matmul_f32_ieee (FMAs) takes its own table, matmul_ieee_configs, on its
# wide_warps. The fused epilogues (HAS_BIAS with ACTIVATION none, ReLU and
# GELU) at the fast path's layouts, EVEN and masked; everything for sm_80
# and sm_90, and sm_90a, which an sm_90 GPU runs: f16 and bf16 there at the
# rows of its own table, matmul_wgmma_configs (the table below prints
# sm_90a's).
# serialized WHAT: ptxas's "Potential Performance Loss: wgmma.mma_async
# instructions are serialized" (C7510: a call in the kernel, among other
# causes) undoes what wgmma is for, as a spill does: a failure
serialized() {
  local loss
  loss=$(grep "Performance Loss" "$tmp/log")
  if [ -n "$loss" ]; then echo "FAIL: $1: $loss"; fail=1; fi
}
# rows_of TABLE [FILE]: the rows of a table of runtime/FILE (stdlib.c), one
# a line, their numbers comma-separated (a row's inner braces dropped)
rows_of() { sed -n "/ $1\[\] = {/,/^};/p" "$root/runtime/${2:-stdlib.c}" | grep -o '^ *{[0-9a-z, {}]*}' | tr -d '{ }'; }
configs=$(rows_of matmul_configs | sed 's/^/mma,/')
ieee_configs=$(rows_of matmul_ieee_configs | sed 's/^/fma,/')
wgmma_configs=$(rows_of matmul_wgmma_configs | sed 's/^/wgmma,/')
[ -n "$configs" ] || { echo "FAIL: no matmul_configs rows found in runtime/stdlib.c"; fail=1; }
[ -n "$ieee_configs" ] || { echo "FAIL: no matmul_ieee_configs rows found in runtime/stdlib.c"; fail=1; }
[ -n "$wgmma_configs" ] || { echo "FAIL: no matmul_wgmma_configs rows found in runtime/stdlib.c"; fail=1; }
table=()
for cfg in $configs $ieee_configs $wgmma_configs; do
  IFS=, read -r path _ _ bm bn bk gm warps stages wide edge even_only <<<"$cfg"
  edge_masks=0; [ "$edge" = true ] && edge_masks=1
  [ -n "$even_only" ] || { echo "FAIL: matmul config row {$cfg} has no even_only"; fail=1; continue; }
  # (A B C layouts, EVEN, HAS_BIAS, ACTIVATION[, SIZES_VEC: what calls
  # whose sizes are multiples of 16 bytes take without EVEN])
  for layouts in "1 1 1 1 0 0" "2 2 1 1 0 0" "1 1 1 0 0 0" "0 0 0 0 0 0" "1 1 1 1 1 0" "1 1 1 1 1 1" "1 1 1 1 1 2" \
                 "1 1 1 0 1 0" "1 1 1 0 1 1" "1 1 1 0 1 2" "1 2 1 1 0 0" "2 1 0 1 0 0" "1 1 1 0 0 0 1" "2 2 1 0 0 0 1" \
                 "1 1 1 0 1 2 1"; do
    read -r la lb _ even _ _ _ <<<"$layouts"
    # an even_only row serves whole tiles of row- or column-major operands only
    if [ "$even_only" = true ] && { [ "$even" = 0 ] || [ "$la" = 0 ] || [ "$lb" = 0 ]; }; then continue; fi
    for arch in sm_90a sm_90 sm_80; do
      # sm_90a's own table is for f16 and bf16 there; the others serve every arch
      if [ "$path" = wgmma ] && [ "$arch" != sm_90a ]; then continue; fi
      read -r la lb lc even bias act sv <<<"$layouts"
      sv=${sv:-0}
      nw16=$warps # f16 and bf16: num_warps, or wide_warps on the general path
      if [ "$la" = 0 ] || [ "$lb" = 0 ]; then nw16=$wide; fi
      for nw in $(printf '%s\n' "$nw16" "$wide" | sort -u); do
        # the kernels this compile stands for
        kernels=""
        if [ "$path" = fma ]; then
          [ "$nw" = "$wide" ] || continue
          kernels="matmul_f32_ieee"
        else
          # on sm_90a f16 and bf16 take sm_90a's table (wgmma), f32 this one
          [ "$nw" = "$nw16" ] && { [ "$path" = wgmma ] || [ "$arch" != sm_90a ]; } && kernels="matmul_f16 matmul_bf16"
          [ "$nw" = "$wide" ] && [ "$path" = mma ] && kernels="$kernels matmul_f32"
          [ -n "$kernels" ] || continue
        fi
        args=(-D "BLOCK_M=$bm" -D "BLOCK_N=$bn" -D "BLOCK_K=$bk" -D "GROUP_M=$gm" -D "A_LAYOUT=$la" -D "B_LAYOUT=$lb"
              -D "C_LAYOUT=$lc" -D "EVEN=$even" -D "HAS_BIAS=$bias" -D "ACTIVATION=$act" -D "EDGE_MASKS=$edge_masks"
              -D "SIZES_VEC=$sv"
              --num-warps="$nw"
              --num-stages="$stages")
        what="${bm}x${bn}x${bk} w$nw s$stages layouts $la$lb$lc even $even"
        [ "$bias" = 1 ] && what="$what bias act $act"
        [ "$sv" = 1 ] && what="$what sizes_vec"
        [ "$arch" = sm_90a ] || what="$what $arch"
        if ! tilec_each "$kernels" "$root/stdlib/matmul.tile" "${args[@]}" --arch="$arch"; then
          echo "FAIL: matmul.tile ($what) does not compile:"; cat "$tmp/log"; fail=1; continue
        fi
        # ptxas knows the static shared memory only; the dynamic bytes a
        # launch gives a kernel over 48 KB are in the sidecar (dynamic_smem)
        sed -n 's/^kernel @\([A-Za-z0-9_]*\)(.*dynamic_smem(\([0-9]*\)).*/\1 \2/p' "$tmp/k.cubin.tir" >"$tmp/dyn" 2>/dev/null
        rows=$(awk -v what="$what" -v kernels=" $kernels " '
          FILENAME == ARGV[1] {dyn[$1] = $2; next}
          /Function properties for/ {k=$NF; st=0; ld=0}
          /spill stores/ {st=$5; ld=$9}
          /Used [0-9]+ registers/ {r=0; sm=0
            if (index(kernels, " " k " ") == 0) next
            for (i = 1; i <= NF; i++) { if ($i ~ /^registers/) r=$(i-1); if ($i == "smem") sm=$(i-2) }
            printf "%-16s %-32s %9s %10s %9s %12s %11s\n", k, what, r, sm, (k in dyn) ? dyn[k] : 0, st, ld}' "$tmp/dyn" "$tmp/log")
        [ "$arch" = sm_90a ] && table+=("$rows")
        bad=$(awk -v kernels=" $kernels " '/Function properties for/ {k=$NF}
          /spill stores/ {if (index(kernels, " " k " ") && ($5 != 0 || $9 != 0)) print k ": " $0}' "$tmp/log")
        checked=$((checked + $(wc -w <<<"$kernels")))
        if [ -n "$bad" ]; then echo "FAIL: matmul.tile ($what) spills:"; echo "$bad"; fail=1; fi
        serialized "matmul.tile ($what)"
      done
    done
  done
done
# stdlib/attention.tile at the row of attention_configs in runtime/stdlib_attention.c
# that tls_attention_fwd takes for each head dim on sm_80 and on sm_90a (the
# first row of the head dim whose min_sm the arch reaches; the columns:
# head_dim, min_sm, BLOCK_M, BLOCK_N, num_warps, num_stages), plain, plain
# with ALIGNED (the strides tls_attention_fwd usually sees), and with
# CAUSAL, WINDOW, VARLEN and ALIGNED all on (the most registers), f16 and
# bf16 in one compile, with --exp2-ftz as the library compiles it; then
# attention_fwd_f32 the same at the rows of attention_f32_configs (head
# dims 32, 64 and 128; also on sm_86, which has rows of its own). Each
# table's rows are checked for its own kernels only (an f16 row would
# spill f32's); their ptxas -v figures in a table of their own.
att_table=()
# table, archs, head dims, the kernels it is for (their names, then as a
# regex, last: it holds the separator)
for tab in "attention_configs|sm_80 sm_90a|32 64 128 256|attention_fwd_f16 attention_fwd_bf16|^attention_fwd_(f16|bf16)$" \
           "attention_f32_configs|sm_80 sm_86 sm_90|32 64 128|attention_fwd_f32|^attention_fwd_f32$"; do
IFS='|' read -r tname tarchs tdims tkernels tpat <<<"$tab"
att_rows=$(rows_of "$tname" stdlib_attention.c)
[ -n "$att_rows" ] || { echo "FAIL: no $tname rows found in runtime/stdlib_attention.c"; fail=1; }
for arch in $tarchs; do
  sm=${arch#sm_} sm=${sm%a} # sm_90a: 90
  for d in $tdims; do
    row=$(awk -F, -v d="$d" -v sm="$sm" '$1 == d && $2 <= sm {print; exit}' <<<"$att_rows")
    [ -n "$row" ] || { echo "FAIL: $tname has no row for head dim $d on $arch"; fail=1; continue; }
    IFS=, read -r _ _ bm bn warps stages <<<"$row"
    for flags in "0 0 0 0" "0 0 0 1" "1 1 1 1"; do
      read -r causal window varlen aligned <<<"$flags"
      what="D$d ${bm}x${bn} w$warps s$stages $arch"
      [ "$causal" = 1 ] && what="$what causal window varlen"
      [ "$aligned" = 1 ] && what="$what aligned"
      if ! tilec_each "$tkernels" "$root/stdlib/attention.tile" -D "HEAD_DIM=$d" -D "BLOCK_M=$bm" -D "BLOCK_N=$bn" \
           -D "CAUSAL=$causal" -D "WINDOW=$window" -D "VARLEN=$varlen" -D "ALIGNED=$aligned" --num-warps="$warps" \
           --num-stages="$stages" --arch="$arch" --exp2-ftz; then
        echo "FAIL: attention.tile ($what) does not compile:"; cat "$tmp/log"; fail=1; continue
      fi
      sed -n 's/^kernel @\([A-Za-z0-9_]*\)(.*dynamic_smem(\([0-9]*\)).*/\1 \2/p' "$tmp/k.cubin.tir" >"$tmp/dyn" 2>/dev/null
      att_table+=("$(awk -v what="$what" -v pat="$tpat" '
        FILENAME == ARGV[1] {dyn[$1] = $2; next}
        /Function properties for/ {k=$NF; st=0; ld=0}
        /spill stores/ {st=$5; ld=$9}
        /Used [0-9]+ registers/ {r=0; sm=0
          if (k !~ pat) next
          for (i = 1; i <= NF; i++) { if ($i ~ /^registers/) r=$(i-1); if ($i == "smem") sm=$(i-2) }
          printf "%-20s %-44s %9s %10s %9s %12s %11s\n", k, what, r, sm, (k in dyn) ? dyn[k] : 0, st, ld}' "$tmp/dyn" "$tmp/log")")
      bad=$(awk -v pat="$tpat" '/Function properties for/ {k=$NF}
        /spill stores/ {if (k ~ pat && ($5 != 0 || $9 != 0)) print k ": " $0}' "$tmp/log")
      checked=$((checked + $(awk -v pat="$tpat" '/Function properties for/ && $NF ~ pat {n++} END {print n + 0}' "$tmp/log")))
      if [ -n "$bad" ]; then echo "FAIL: attention.tile ($what) spills:"; echo "$bad"; fail=1; fi
      serialized "attention.tile ($what)"
    done
  done
done
done
# stdlib/attention_bwd.tile at the row of attention_bwd_configs in
# runtime/stdlib_attention.c that tls_attention_bwd takes for each head dim
# on sm_80, sm_86 (whose rows ask fewer stages: 99 KB of shared memory)
# and sm_90a, which an sm_90 GPU runs (the columns: head_dim, min_sm, then dK/dV's and dQ's BLOCK_M,
# BLOCK_N, num_warps, num_stages): dK/dV's kernels at dK/dV's, the
# pre-pass's and dQ's at dQ's, plain and with CAUSAL, WINDOW, VARLEN and
# ALIGNED, f16 and bf16 in one compile; then the f32 kernels at the rows
# of attention_bwd_f32_configs (head dims 32, 64 and 128), each table's
# rows checked for its own kernels; sm_90a's own rows for f16 and bf16
# (attention_bwd_wgmma_configs: dK/dV on wgmma) at sm_90a; tabulated too.
bwd_table=()
# table, head dims, the archs that take it, the storage suffixes it is for
# (a regex, last: it holds the separator)
for tab in "attention_bwd_configs|32 64 128 256|sm_80 sm_86 sm_90a|(f16|bf16)" \
           "attention_bwd_wgmma_configs|32 64 128|sm_90a|(f16|bf16)" "attention_bwd_f32_configs|32 64 128|sm_80 sm_86 sm_90a|f32"; do
IFS='|' read -r tname tdims tarchs tsuf <<<"$tab"
bwd_rows=$(rows_of "$tname" stdlib_attention.c)
[ -n "$bwd_rows" ] || { echo "FAIL: no $tname rows found in runtime/stdlib_attention.c"; fail=1; }
for arch in $tarchs; do
  sm=${arch#sm_} sm=${sm%a}
  for d in $tdims; do
    row=$(awk -F, -v d="$d" -v sm="$sm" '$1 == d && $2 <= sm {print; exit}' <<<"$bwd_rows")
    [ -n "$row" ] || { echo "FAIL: $tname has no row for head dim $d on $arch"; fail=1; continue; }
    IFS=, read -r _ _ kbm kbn kw ks qbm qbn qw qs <<<"$row"
    for pass in dkdv dq; do
      if [ "$pass" = dkdv ]; then bm=$kbm bn=$kbn warps=$kw stages=$ks kernels="dkdv"
      else bm=$qbm bn=$qbn warps=$qw stages=$qs kernels="pre dq"; fi
      for flags in "0 0 0 0" "1 1 1 1"; do
        read -r causal window varlen aligned <<<"$flags"
        what="D$d ${bm}x${bn} w$warps s$stages $arch"
        [ "$causal" = 1 ] && what="$what causal window varlen aligned"
        # the kernels of this pass in this table's storages, in the file's order
        names=""
        for sf in $(tr -d '()' <<<"$tsuf" | tr '|' ' '); do for kk in $kernels; do names="$names attention_bwd_${kk}_$sf"; done; done
        if ! tilec_each "$names" "$root/stdlib/attention_bwd.tile" -D "HEAD_DIM=$d" -D "BLOCK_M=$bm" -D "BLOCK_N=$bn" \
             -D "CAUSAL=$causal" -D "WINDOW=$window" -D "VARLEN=$varlen" -D "ALIGNED=$aligned" --num-warps="$warps" \
             --num-stages="$stages" --arch="$arch" --exp2-ftz; then
          echo "FAIL: attention_bwd.tile ($what) does not compile:"; cat "$tmp/log"; fail=1; continue
        fi
        sed -n 's/^kernel @\([A-Za-z0-9_]*\)(.*dynamic_smem(\([0-9]*\)).*/\1 \2/p' "$tmp/k.cubin.tir" >"$tmp/dyn" 2>/dev/null
        # the kernels of this pass in this table's storage: attention_bwd_<pass>_f16 and _bf16, or _f32
        pat="^attention_bwd_($(sed 's/ /|/g' <<<"$kernels"))_${tsuf}\$"
        bwd_table+=("$(awk -v what="$what" -v pat="$pat" '
          FILENAME == ARGV[1] {dyn[$1] = $2; next}
          /Function properties for/ {k=$NF; st=0; ld=0}
          /spill stores/ {st=$5; ld=$9}
          /Used [0-9]+ registers/ {r=0; sm=0
            if (k !~ pat) next
            for (i = 1; i <= NF; i++) { if ($i ~ /^registers/) r=$(i-1); if ($i == "smem") sm=$(i-2) }
            printf "%-24s %-44s %9s %10s %9s %12s %11s\n", k, what, r, sm, (k in dyn) ? dyn[k] : 0, st, ld}' \
          "$tmp/dyn" "$tmp/log")")
        bad=$(awk -v pat="$pat" '/Function properties for/ {k=$NF}
          /spill stores/ {if (k ~ pat && ($5 != 0 || $9 != 0)) print k ": " $0}' "$tmp/log")
        checked=$((checked + $(awk -v pat="$pat" '/Function properties for/ && $NF ~ pat {n++} END {print n + 0}' "$tmp/log")))
        if [ -n "$bad" ]; then echo "FAIL: attention_bwd.tile ($what) spills:"; echo "$bad"; fail=1; fi
      serialized "attention_bwd.tile ($what)"
      done
    done
  done
done
done
if [ ${#bwd_table[@]} -gt 0 ]; then
  echo "== stdlib attention backward, ptxas -v at the rows of attention_bwd_configs and attention_bwd_f32_configs (bytes)"
  printf '%-24s %-44s %9s %10s %9s %12s %11s\n' kernel configuration registers smem dyn-smem spill-stores spill-loads
  printf '%s\n' "${bwd_table[@]}"
fi
if [ ${#att_table[@]} -gt 0 ]; then
  echo "== stdlib attention forward, ptxas -v at the rows of attention_configs and attention_f32_configs (bytes)"
  printf '%-20s %-44s %9s %10s %9s %12s %11s\n' kernel configuration registers smem dyn-smem spill-stores spill-loads
  printf '%s\n' "${att_table[@]}"
fi
if [ ${#table[@]} -gt 0 ]; then
  echo "== stdlib matmul, ptxas -v for sm_90a, what an sm_90 GPU runs (bytes; layouts A B C: 1 rows contiguous, 2 columns, 0 any)"
  printf '%-16s %-32s %9s %10s %9s %12s %11s\n' kernel configuration registers smem dyn-smem spill-stores spill-loads
  printf '%s\n' "${table[@]}"
fi
echo "$checked kernel compilations checked for spills"
[ "$checked" -gt 0 ] && exit $fail
echo "FAIL: nothing was checked"; exit 1
