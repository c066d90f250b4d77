#!/usr/bin/env bash
# Runs ON the GPU machine (via the device tool's `run`, from the repository root, with build-gpu
# carried; prepared by scripts/gpu-check.sh).  Runs the GPU test programs directly (meson there is
# another version and cannot reuse the build folder), then the benchmarks that exist, and prints
# a summary table last.  Every step has its own timeout so one hang cannot eat the session's
# device time; logs go to $OUT (they come back with the run) or build-gpu/gpu-logs.
#
# Environment: VT_GPU_SANITIZE=1  also run test_cuda_ops under compute-sanitizer (memcheck);
#                                 default "auto": only when test_cuda_ops failed; 0: never
#              VT_GPU_NO_BENCH=1  skip benchmarks
#              VT_GPU_BUDGET=480  seconds for the whole script (keep under the run's timeout_s)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu-env.sh
export CK_DEFAULT_TIMEOUT=300 VT_TEST_TMP="${TMPDIR:-/tmp}/vt-gpu-tests"
mkdir -p "$VT_TEST_TMP"
budget=${VT_GPU_BUDGET:-480}
start=$(date +%s)

# GPU test programs, in order of importance.  A missing one is reported, not fatal.
#   name|per-step timeout seconds|command (relative to the repo root)
tests=(
    "test_cuda_module|30|$build/tests/test_cuda_module"
    "test_cuda_ops|150|$build/tests/test_cuda_ops"
    "test_cuda_train|150|$build/tests/test_cuda_train"
)
# Benchmarks (bench/ may not exist yet).  Add entries as they appear; the last output line of
# each is shown in the table, so make a benchmark print its headline figure last.
benches=(
    "estimate_accuracy_gpu|100|$build/bench/estimate_accuracy 0 1.5"
    "cnn_small_b256_fp32|40|$build/bench/train_throughput device=0 batch=256 steps=50 warmup=10 precision=fp32"
    "torch_cnn_small_b256|60|python3 bench/torch_small_cnn.py --device cuda --batch 256 --steps 50 --warmup 10"
    "resnet18_224_b128_tf32|60|$build/bench/train_throughput device=0 arch=resnet18 classes=1000 channels=3 imgsz=224 batch=128 steps=20 warmup=5"
    "torch_resnet18_tf32_cl|60|python3 bench/torch_resnet18.py --channels-last --steps 20 --warmup 5"
    "torch_resnet18_tf32|60|python3 bench/torch_resnet18.py --steps 20 --warmup 5"
    "resnet18_224_b128_fp32|60|$build/bench/train_throughput device=0 arch=resnet18 classes=1000 channels=3 imgsz=224 batch=128 steps=10 warmup=3 precision=fp32"
    "torch_resnet18_fp32|60|python3 bench/torch_resnet18.py --precision fp32 --steps 10 --warmup 3"
    "cnn_small_b64_fp32|40|$build/bench/train_throughput device=0 batch=64 steps=50 warmup=10 precision=fp32"
    "torch_cnn_small_b64|60|python3 bench/torch_small_cnn.py --device cuda --batch 64 --steps 50 --warmup 10"
    # per-layer data for the GPU cost model (issue 7: wider models under-predicted by 11-16%):
    # each GEMM layer's shape and GFLOP/s next to the calibrated estimator's prediction
    "layer_profile_cls_m_224|60|$build/bench/layer_profile device=0 arch=cls-m imgsz=224 batch=32 steps=10 calib=cls-n,128,64 detail=1"
)

rows=()
run_step() { # name timeout command...
    local name=$1 limit=$2
    shift 2
    local exe=${1%% *}
    if [ ! -x "$exe" ] && ! command -v "$exe" >/dev/null 2>&1; then
        rows+=("$name|missing|-|$exe not built")
        return
    fi
    local left=$((budget - ($(date +%s) - start)))
    if [ "$left" -lt 20 ]; then
        rows+=("$name|no time|-|script budget ${budget}s spent")
        return
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    local t0 log="$logs/$name.log" rc status
    t0=$(date +%s.%N)
    echo "=== $name: $* (timeout ${limit}s)"
    timeout -k 10 "$limit" "$@" >"$log" 2>&1
    rc=$?
    local secs
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
    case $rc in
        0) status=PASS ;;
        77) status=SKIP ;;
        124|137) status=TIMEOUT ;;
        *) status="FAIL($rc)" ;;
    esac
    tail -n 25 "$log"
    local last
    last=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1 | cut -c1-90)
    rows+=("$name|$status|$secs|$last")
}

echo "=== device"
if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,compute_cap,memory.total,memory.used,driver_version \
        --format=csv,noheader 2>&1 | tee "$logs/nvidia-smi.txt"
    # nvidia-smi answers through NVML: test_cuda_train then requires the run's GPU figures
    export VT_TEST_EXPECT_NVML=1
fi

for t in "${tests[@]}"; do
    IFS='|' read -r name limit cmd <<<"$t"
    # shellcheck disable=SC2086  # cmd is a command line with arguments
    run_step "$name" "$limit" $cmd
done

# memcheck when asked, or by default when test_cuda_ops failed (its report says where).
sanitize=${VT_GPU_SANITIZE:-auto}
if [ "$sanitize" = auto ]; then
    sanitize=0
    for r in "${rows[@]}"; do case $r in test_cuda_ops"|FAIL"*) sanitize=1 ;; esac; done
fi
if [ "$sanitize" = 1 ]; then
    san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
    if [ -n "$san" ]; then
        run_step "memcheck_cuda_ops" 120 "$san" --tool memcheck --leak-check no --report-api-errors no \
            --error-exitcode 3 "$build/tests/test_cuda_ops"
    else
        rows+=("memcheck_cuda_ops|missing|-|compute-sanitizer not found")
    fi
fi

if [ "${VT_GPU_NO_BENCH:-0}" != 1 ]; then
    for t in "${benches[@]}"; do
        IFS='|' read -r name limit cmd <<<"$t"
        # shellcheck disable=SC2086
        run_step "$name" "$limit" $cmd
    done
fi

echo
echo "=== summary ($(($(date +%s) - start)) s; logs in $logs)"
printf '%-20s %-10s %8s  %s\n' step status seconds "last output line"
for r in "${rows[@]}"; do
    IFS='|' read -r name status secs last <<<"$r"
    printf '%-20s %-10s %8s  %s\n' "$name" "$status" "$secs" "$last"
done
# Non-zero when any test failed, so the run's rc tells the story at a glance.
for r in "${rows[@]}"; do
    case $r in test_*"|FAIL"*|test_*"|TIMEOUT"*|memcheck*"|FAIL"*) exit 1 ;; esac
done
exit 0
