#!/usr/bin/env bash
# CPU training throughput of the GUIDE's small CNN (1x28x28, 10 classes, SGD momentum 0.9):
# libvisiontrain vs Debian's PyTorch (python3-torch), side by side, interleaved, best of 2*REPS
# runs each.
#
#   bench/cpu_vs_torch.sh [BUILD_DIR=build] [REPS=3]
#
# PyTorch runs once per rep with its default thread count and once with 2 threads; its best
# run is the baseline.  OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE are left as the machine
# sets them (for both).  Prints the CPU model, the kernels our GEMM runs (VT_CPU_GEMM selects
# others, e.g. VT_CPU_GEMM=haswell bench/cpu_vs_torch.sh), and the GFLOP/s reached as a
# fraction of the machine's SGEMM ceiling (a 2048^3 product through the same kernels on 2
# threads, build/bench/gemm_shapes ceiling).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
reps=${2:-3}
py=/usr/bin/python3
tp="$build/bench/train_throughput"
[ -x "$tp" ] || { echo "build first: ninja -C $build"; exit 2; }
$py -c 'import torch' 2>/dev/null || { echo "needs Debian's python3-torch (apt-get install python3-torch)"; exit 77; }
best() { sort -g | tail -1; }
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores"
ceiling=""
if [ -x "$build/bench/gemm_shapes" ]; then
  line=$("$build/bench/gemm_shapes" ceiling 2)
  echo "$line"
  ceiling=$(echo "$line" | sed -n 's/.*: \([0-9.]*\) GFLOP\/s$/\1/p')
fi
printf '%-6s %14s %14s %8s %10s %9s\n' batch "vt img/s" "torch img/s" ratio "vt GFLOP/s" "of ceil."
for b in 64 256; do
  steps=$(( b == 64 ? 40 : 12 ))
  vt=(); th=()
  # as many runs of each side (2 per rep), alternating, so that neither gets more draws of a
  # noisy machine's best moment
  for r in $(seq "$reps"); do
    vt+=("$("$tp" batch=$b steps=$steps | awk '{print $5, $9}')")
    th+=("$($py bench/torch_small_cnn.py --batch $b --steps $steps | awk '{print $6}')")
    vt+=("$("$tp" batch=$b steps=$steps | awk '{print $5, $9}')")
    th+=("$($py bench/torch_small_cnn.py --batch $b --steps $steps --threads 2 | awk '{print $6}')")
  done
  vbest=$(printf '%s\n' "${vt[@]}" | best); t=$(printf '%s\n' "${th[@]}" | best)
  v=${vbest% *}; g=${vbest#* }
  frac="-"
  [ -n "$ceiling" ] && frac=$(printf '%.0f%%' "$(echo "100 * $g / $ceiling" | bc -l)")
  printf '%-6s %14.1f %14.1f %7.2fx %10.1f %9s\n' "$b" "$v" "$t" "$(echo "$v / $t" | bc -l)" "$g" "$frac"
done
