#!/usr/bin/env bash
# CPU training throughput of the GUIDE's small CNN (1x28x28, 10 classes, SGD momentum 0.9):
# libvisiontrain vs Debian's PyTorch (python3-torch), side by side, interleaved, best of 2*REPS
# runs each.
#
#   bench/cpu_vs_torch.sh [BUILD_DIR=build] [REPS=3]
#   (then, where the CPU has bf16, the same in bf16 against PyTorch's bf16 autocast, and a
#   row of ours with the other setting of Winograd under bf16 products: "bf16 im2col" with
#   VT_CPU_WINOGRAD_BF16=0 where it is on by default (AVX512_BF16), "bf16 W" with =1 where not)
#
# PyTorch runs once per rep with its default thread count and once with 2 threads; its best
# run is the baseline.  OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE are left as the machine
# sets them (for both).  Prints the CPU model, the kernels our GEMM runs (VT_CPU_GEMM selects
# others, e.g. VT_CPU_GEMM=haswell bench/cpu_vs_torch.sh), and the GFLOP/s reached as a
# fraction of the machine's SGEMM ceiling (a 2048^3 product through the same kernels on 2
# threads, build/bench/gemm_shapes ceiling).  GFLOP/s counts the direct convolutions'
# products: layers that run in Winograd do fewer, so the fraction can pass 100 %.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
reps=${2:-3}
py=/usr/bin/python3
tp="$build/bench/train_throughput"
[ -x "$tp" ] || { echo "build first: ninja -C $build"; exit 2; }
$py -c 'import torch' 2>/dev/null || { echo "needs Debian's python3-torch (apt-get install python3-torch)"; exit 77; }
best() { sort -g | tail -1; }
# the img/s figure of a torch_small_cnn.py line (its tag, "bf16 cl", shifts the columns)
imgs() { awk '{for (i = 1; i <= NF; i++) if ($i == "img/s") print $(i - 1)}'; }
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores"
ceiling=""
if [ -x "$build/bench/gemm_shapes" ]; then
  line=$("$build/bench/gemm_shapes" ceiling 2)
  echo "$line"
  ceiling=$(echo "$line" | sed -n 's/.*: \([0-9.]*\) GFLOP\/s$/\1/p')
fi
printf '%-15s %10s %14s %8s %10s %9s\n' batch "vt img/s" "torch img/s" ratio "vt GFLOP/s" "of ceil."
# fp32 rows, then (where the CPU has bf16: `vt info`'s "precision=bf16:" is not "none") bf16
# rows: ours with precision=bf16 against PyTorch's bf16 autocast, NCHW and channels-last, its
# best run the baseline; the last column of a bf16 row is its speed over our fp32 row's.
precs=fp32
# (the output captured first: under pipefail, grep -q's early exit would fail the pipe by
# SIGPIPE and look like "bf16 here")
info=$("$build/examples/vt" info 2>/dev/null || true)
grep -q 'precision=bf16: none' <<<"$info" || precs="fp32 bf16"
# the other setting of Winograd under bf16 products than this CPU's default
if grep -q 'with precision=bf16 too' <<<"$info"; then wother=0 wname="bf16 im2col"
else wother=1 wname="bf16 W"; fi
declare -A fp32_best
for prec in $precs; do
for b in 64 256; do
  steps=$(( b == 64 ? 40 : 12 ))
  vt=(); th=(); vw=()
  if [ "$prec" = bf16 ]; then tflags=(--bf16 --threads 2); tflags2=(--bf16 --channels-last --threads 2); vflags=(precision=bf16)
  else tflags=(); tflags2=(--threads 2); vflags=(); fi
  # as many runs of each side (2 per rep), alternating, so that neither gets more draws of a
  # noisy machine's best moment (bf16: PyTorch NCHW and channels-last, both at 2 threads)
  for r in $(seq "$reps"); do
    vt+=("$("$tp" batch=$b steps=$steps "${vflags[@]}" | awk '{print $5, $9}')")
    th+=("$($py bench/torch_small_cnn.py --batch $b --steps $steps "${tflags[@]}" | imgs)")
    vt+=("$("$tp" batch=$b steps=$steps "${vflags[@]}" | awk '{print $5, $9}')")
    th+=("$($py bench/torch_small_cnn.py --batch $b --steps $steps "${tflags2[@]}" | imgs)")
    # bf16: also with the other Winograd setting
    [ "$prec" = bf16 ] && for i in 1 2; do
      vw+=("$(VT_CPU_WINOGRAD_BF16=$wother "$tp" batch=$b steps=$steps "${vflags[@]}" | awk '{print $5, $9}')")
    done
  done
  vbest=$(printf '%s\n' "${vt[@]}" | best); t=$(printf '%s\n' "${th[@]}" | best)
  v=${vbest% *}; g=${vbest#* }
  frac="-"
  [ -n "$ceiling" ] && frac=$(printf '%.0f%%' "$(echo "100 * $g / $ceiling" | bc -l)")
  extra=""
  if [ "$prec" = fp32 ]; then fp32_best[$b]=$v
  else extra=$(printf '  bf16 / our fp32 %.2fx' "$(echo "$v / ${fp32_best[$b]}" | bc -l)"); fi
  printf '%-15s %10.1f %14.1f %7.2fx %10.1f %9s%s\n' "$b $prec" "$v" "$t" "$(echo "$v / $t" | bc -l)" "$g" "$frac" "$extra"
  if [ "$prec" = bf16 ]; then
    wbest=$(printf '%s\n' "${vw[@]}" | best); w=${wbest% *}
    printf '%-15s %10.1f %14.1f %7.2fx %10s %9s  bf16 / our fp32 %.2fx\n' "$b $wname" "$w" "$t" \
      "$(echo "$w / $t" | bc -l)" - - "$(echo "$w / ${fp32_best[$b]}" | bc -l)"
  fi
done
done
