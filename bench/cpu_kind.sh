#!/usr/bin/env bash
# The CPU checks of a processor kind in one run, each figure beside the others of the same
# hour: what the CPU is and which kernels run (`vt info`), the small CNN against PyTorch in
# fp32 and, where the CPU has bf16, in bf16 (bench/cpu_vs_torch.sh), batch norm's loops in the
# widest and the baseline build (bn_profile), the weights' packing (gemm_shapes pack), the
# Winograd tile rule against the fastest tile (bench/winograd_rule.sh) and, with bf16, the
# bf16 GEMM against fp32 (gemm_bf16), and prediction against PyTorch's ResNet-18
# (bench/predict_throughput.py); on a bf16 CPU the Winograd rule under bf16 too.  About 7
# minutes on 2 cores; with --det, det-n against
# Ultralytics too (bench/det_vs_ultralytics.sh --seed 1, and on a bf16 CPU in bf16 with the
# default and the other setting of VT_CPU_WINOGRAD_BF16; and bench/predict_vs_ultralytics.py
# in the peer's virtual environment): about 10 minutes more a run.
#
#   bench/cpu_kind.sh [--det] [BUILD_DIR=build] [OUT=cpu-kind-<host>-<date>.txt]
#
# Writes everything to OUT as well as to the terminal; never run by meson test.  Where a step
# cannot run here (no PyTorch, no BLIS), it says so and goes on.
set -uo pipefail
cd "$(dirname "$0")/.."
det=0
[ "${1:-}" = --det ] && { det=1; shift; }
build=${1:-build}
out=${2:-cpu-kind-$(hostname)-$(date -u +%Y%m%dT%H%M).txt}
vt="$build/examples/vt"
for t in "$vt" "$build/bench/bn_profile" "$build/bench/conv_profile"; do
  [ -x "$t" ] || { echo "build first: ninja -C $build" >&2; exit 2; }
done
exec > >(tee "$out") 2>&1
step() { echo; echo "== $* ($(date -u +%H:%M:%S) UTC)"; }

step "machine"
lscpu | grep -E '^(Model name|CPU family|Model|Thread|Core|Socket|L2|L3)' || true
printf 'flags:'
for f in avx2 fma avx512f avx512_bf16 amx_bf16 amx_tile; do
  grep -qw "$f" /proc/cpuinfo && printf ' %s' "$f"
done
echo
echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
"$vt" info 2>&1 | grep -i 'cpu kernels' || "$vt" info 2>&1 | head -5
bf16=0
"$vt" info 2>&1 | grep -q 'precision=bf16: none' || bf16=1

step "small CNN against PyTorch (bench/cpu_vs_torch.sh $build 2)"
bash bench/cpu_vs_torch.sh "$build" 2 || echo "(cpu_vs_torch.sh ended with $?)"

step "batch norm + activation (+ pool), widest and baseline element-wise builds"
"$build/bench/bn_profile" rounds=2

if [ -x "$build/bench/gemm_shapes" ]; then
  step "the weights' packing (gemm_shapes pack)"
  "$build/bench/gemm_shapes" pack
else
  step "gemm_shapes: not built (no BLIS)"
fi

step "the Winograd tile rule against the fastest tile (bench/winograd_rule.sh $build 2)"
bash bench/winograd_rule.sh "$build" 2 || echo "(winograd_rule.sh ended with $?)"

if [ "$bf16" = 1 ]; then
  step "the Winograd tile rule under precision=bf16 (bench/winograd_rule.sh $build 2 2 bf16)"
  bash bench/winograd_rule.sh "$build" 2 2 bf16 || echo "(winograd_rule.sh ended with $?)"
fi

if [ "$bf16" = 1 ] && [ -x "$build/bench/gemm_bf16" ]; then
  step "bf16 GEMM against fp32 (gemm_bf16)"
  "$build/bench/gemm_bf16"
fi

step "prediction, one image and 16 a call (bench/predict_throughput.py)"
py=python3
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import numpy' 2>/dev/null && py=/usr/bin/python3
VT_LIBRARY="$build/libvisiontrain.so.0" "$py" bench/predict_throughput.py --seconds 3 ||
  echo "(predict_throughput.py ended with $?)"

if [ "$det" = 1 ]; then
  step "det-n against Ultralytics, fp32"
  bash bench/det_vs_ultralytics.sh --seed 1 --build "$build" || echo "(ended with $?)"
  step "prediction against Ultralytics' predictor (bench/predict_vs_ultralytics.py)"
  (. /tmp/peer-ultralytics/env.sh &&
    VT_LIBRARY="$build/libvisiontrain.so.0" python bench/predict_vs_ultralytics.py --seconds 4) ||
    echo "(ended with $?)"
  if [ "$bf16" = 1 ]; then
    step "det-n against Ultralytics, precision=bf16"
    bash bench/det_vs_ultralytics.sh --seed 1 --build "$build" --precision bf16 ||
      echo "(ended with $?)"
    # the other setting of Winograd under bf16 than this CPU's default
    wo=1
    "$vt" info 2>&1 | grep -q 'with precision=bf16 too' && wo=0
    step "det-n against Ultralytics, precision=bf16, VT_CPU_WINOGRAD_BF16=$wo"
    VT_CPU_WINOGRAD_BF16=$wo bash bench/det_vs_ultralytics.sh --seed 1 --build "$build" \
      --precision bf16 || echo "(ended with $?)"
  fi
fi
step "done: $out"
