#!/usr/bin/env bash
# Runs ON the GPU machine (via the device tool's `run`, from the repository root, with build-gpu
# carried; prepared by scripts/gpu-check.sh).  Runs the GPU test programs directly (meson there is
# another version and cannot reuse the build folder), then the benchmarks that exist, and prints
# a summary table last.  Every step has its own timeout so one hang cannot eat the session's
# device time; logs go to $OUT (they come back with the run) or build-gpu/gpu-logs.
#
# The experimental cuDNN convolutions (VT_CUDNN=1, cuda/cudnn_conv.cu) get their own steps: the
# CUDA tests again with VT_CUDNN=1 and the ResNet-18 speed step beside the default one.  The
# machine has no system cuDNN; the script looks for libcudnn.so.9 ($VT_CUDNN_LIBRARY, the
# dynamic linker's cache, PyTorch's pip packages, /usr and /opt) and skips those steps, saying
# so, when there is none.
#
# The experimental bf16 precision (VT_CUDA_BF16=1) and CUDA graphs of the training step
# (VT_CUDA_GRAPHS=1), not yet run on a GPU, get their own steps too: the tests' tcases for them
# (test_cuda_ops's "bf16": bf16 GEMMs and convolutions against the CPU; test_cuda_train's
# "experimental": bf16 steps against fp32, the bf16 refusal, graph replays against plain
# launches bit for bit), and speed steps beside the fp32/TF32 ones.  To run only those:
#   VT_GPU_ONLY='bf16|graphs' scripts/gpu-run.sh
#
# Usage: scripts/gpu-run.sh [--dry-run]
#   --dry-run  here, without a GPU: every step's command must resolve (programs built, scripts
#              present), the test programs run (they load and skip: exit 77, test_cuda_module
#              passes), the cuDNN search runs; benchmarks are not run, but train_throughput
#              checks its arguments (device=cpu steps=0 batch=1) and Python scripts are compiled.  Prints the same table
#              with 'dry-run' rows and exits 1 when anything would fail on the GPU machine for
#              a reason visible here (a missing program, a typo in a step).  meson test runs it
#              as gpu_run_dry_run.
# Environment: VT_GPU_SANITIZE=1  also run test_cuda_ops under compute-sanitizer (memcheck);
#                                 default "auto": only when test_cuda_ops failed; 0: never
#              VT_GPU_NO_BENCH=1  skip benchmarks
#              VT_GPU_BUDGET=480  seconds for the whole script (keep under the run's timeout_s)
#              VT_GPU_BUILD=DIR   the build folder (default build-gpu)
#              VT_GPU_ONLY=REGEX  only the steps whose name matches (bash =~), e.g.
#                                 'cudnn|^test_cuda_ops$|^resnet18_224_b128_tf32$', or
#                                 'bf16|graphs' for the experimental bf16 and graphs steps 
set -uo pipefail
dry=0
case ${1:-} in
    --dry-run) dry=1 ;;
    "") ;;
    *) echo "usage: $0 [--dry-run]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
. scripts/gpu-env.sh
export CK_DEFAULT_TIMEOUT=300 VT_TEST_TMP="${TMPDIR:-/tmp}/vt-gpu-tests"
mkdir -p "$VT_TEST_TMP"
budget=${VT_GPU_BUDGET:-480}
start=$(date +%s)
# Steps that set VT_CUDNN=1 run only when cuDNN was found (cudnn_dir below).
cudnn_env="VT_CUDNN=1 VT_TEST_EXPECT_CUDNN=1"
# The experimental bf16 precision and CUDA graphs (off without these variables).
bf16_env="VT_CUDA_BF16=1"
graphs_env="VT_CUDA_GRAPHS=1"

# GPU test programs, in order of importance.  A missing one is reported, not fatal.
#   name|per-step timeout seconds|command (relative to the repo root; leading VAR=value words
#   are the step's environment)
tests=(
    "test_cuda_module|30|$build/tests/test_cuda_module"
    "test_cuda_ops|150|$build/tests/test_cuda_ops"
    "test_cuda_train|150|$build/tests/test_cuda_train"
    # the same with the experimental cuDNN convolutions (test_conv_cudnn: cuDNN vs im2col;
    # the other conv tests: cuDNN vs the CPU; test_cuda_train: training with cuDNN)
    "test_cuda_ops_cudnn|150|$cudnn_env $build/tests/test_cuda_ops"
    "test_cuda_train_cudnn|150|$cudnn_env $build/tests/test_cuda_train"
    # the experimental bf16 and graphs alone (Check's CK_RUN_CASE picks the tcase; the full runs
    # above include them too): first to run with VT_GPU_ONLY='bf16|graphs'
    "test_cuda_ops_bf16|60|CK_RUN_CASE=bf16 $bf16_env $build/tests/test_cuda_ops"
    "test_cuda_train_bf16_graphs|120|CK_RUN_CASE=experimental $bf16_env $build/tests/test_cuda_train"
    # GPU ranks over NCCL (vt train device=0,1): skipped (77) on a machine with one GPU
    "test_dist_nccl_vt|300|tests/dist_nccl_vt.sh $build/examples/vt /tmp/vt-dist-nccl"
)
# Benchmarks (bench/ may not exist yet).  Add entries as they appear; the last output line of
# each is shown in the table, so make a benchmark print its headline figure last.
benches=(
    "estimate_accuracy_gpu|100|$build/bench/estimate_accuracy 0 1.5"
    "cnn_small_b256_fp32|40|$build/bench/train_throughput device=0 batch=256 steps=50 warmup=10 precision=fp32"
    "torch_cnn_small_b256|60|python3 bench/torch_small_cnn.py --device cuda --batch 256 --steps 50 --warmup 10"
    "resnet18_224_b128_tf32|60|$build/bench/train_throughput device=0 arch=resnet18 classes=1000 channels=3 imgsz=224 batch=128 steps=20 warmup=5"
    # the same with cuDNN's convolutions; its log's "GPU convolutions:" line becomes a row
    "resnet18_224_b128_tf32_cudnn|90|$cudnn_env $build/bench/train_throughput device=0 arch=resnet18 classes=1000 channels=3 imgsz=224 batch=128 steps=20 warmup=5"
    "torch_resnet18_tf32_cl|60|python3 bench/torch_resnet18.py --channels-last --steps 20 --warmup 5"
    "torch_resnet18_tf32|60|python3 bench/torch_resnet18.py --steps 20 --warmup 5"
    # the experimental bf16 (operands of every product converted to bf16, fp32 accumulation)
    # beside TF32, and PyTorch's bf16 autocast with channels-last
    "cnn_small_b256_bf16|40|$bf16_env $build/bench/train_throughput device=0 batch=256 steps=50 warmup=10 precision=bf16"
    "resnet18_224_b128_bf16|60|$bf16_env $build/bench/train_throughput device=0 arch=resnet18 classes=1000 channels=3 imgsz=224 batch=128 steps=20 warmup=5 precision=bf16"
    "torch_resnet18_bf16_cl|60|python3 bench/torch_resnet18.py --precision bf16 --channels-last --steps 20 --warmup 5"
    # the experimental CUDA graphs of backward + update: a small CNN at batch 64 is where launch
    # gaps weigh most; the same without graphs beside it
    "cnn_small_b64_tf32|40|$build/bench/train_throughput device=0 batch=64 steps=100 warmup=10"
    "cnn_small_b64_tf32_graphs|40|$graphs_env $build/bench/train_throughput device=0 batch=64 steps=100 warmup=10"
    "resnet18_224_b128_tf32_graphs|60|$graphs_env $build/bench/train_throughput device=0 arch=resnet18 classes=1000 channels=3 imgsz=224 batch=128 steps=20 warmup=5"
    "resnet18_224_b128_fp32|60|$build/bench/train_throughput device=0 arch=resnet18 classes=1000 channels=3 imgsz=224 batch=128 steps=10 warmup=3 precision=fp32"
    "torch_resnet18_fp32|60|python3 bench/torch_resnet18.py --precision fp32 --steps 10 --warmup 3"
    "cnn_small_b64_fp32|40|$build/bench/train_throughput device=0 batch=64 steps=50 warmup=10 precision=fp32"
    "torch_cnn_small_b64|60|python3 bench/torch_small_cnn.py --device cuda --batch 64 --steps 50 --warmup 10"
    # per-layer data for the GPU cost model (issue 7: wider models under-predicted by 11-16%):
    # each GEMM layer's shape and GFLOP/s next to the calibrated estimator's prediction
    "layer_profile_cls_m_224|60|$build/bench/layer_profile device=0 arch=cls-m imgsz=224 batch=32 steps=10 calib=cls-n,128,64 detail=1"
)

# libcudnn.so.9 for the cuDNN steps: the folder it is in (added to LD_LIBRARY_PATH for them:
# cuDNN loads its sub-libraries, libcudnn_cnn.so.9 and others, from there), or "".
find_cudnn() {
    local f
    if [ -n "${VT_CUDNN_LIBRARY:-}" ] && [ -f "$VT_CUDNN_LIBRARY" ]; then
        echo "$VT_CUDNN_LIBRARY"
        return
    fi
    f=$(ldconfig -p 2>/dev/null | awk '$1 == "libcudnn.so.9" { print $NF; exit }')
    [ -n "$f" ] && [ -f "$f" ] && { echo "$f"; return; }
    # PyTorch's wheels bring cuDNN as a pip package (nvidia/cudnn/lib or nvidia/cu13/lib)
    if command -v python3 >/dev/null 2>&1; then
        f=$(timeout 20 python3 - <<'PY' 2>/dev/null
import glob, os, site, sys
roots = list(site.getsitepackages()) + [site.getusersitepackages()] + sys.path
for r in roots:
    if not r or not os.path.isdir(r):
        continue
    for pat in ("nvidia/*/lib/libcudnn.so.9", "nvidia/cudnn/lib/libcudnn.so.9",
                "torch/lib/libcudnn.so.9"):
        hits = sorted(glob.glob(os.path.join(r, pat)))
        if hits:
            print(hits[0])
            sys.exit(0)
PY
        )
        [ -n "$f" ] && { echo "$f"; return; }
    fi
    f=$(timeout 20 find /usr/local /usr/lib /opt -name libcudnn.so.9 -print -quit 2>/dev/null)
    [ -n "$f" ] && echo "$f"
}

rows=()
failed=0 # dry run: a step that would fail there

# The program a step runs: the first word after the VAR=value words; for python3, its script.
step_program() {
    local w
    for w in "$@"; do
        case $w in
            [A-Za-z_]*=*) continue ;;
            *) echo "$w"; return ;;
        esac
    done
}

resolves() { # program: an executable file, or a command on PATH
    [ -x "$1" ] || { [[ $1 != */* ]] && command -v "$1" >/dev/null 2>&1; }
}

run_step() { # name timeout command...
    local name=$1 limit=$2
    shift 2
    if [ -n "${VT_GPU_ONLY:-}" ] && ! [[ $name =~ $VT_GPU_ONLY ]]; then
        return # not selected: no row
    fi
    local envs=() cmd=()
    while [ $# -gt 0 ] && [[ $1 == [A-Za-z_]*=* ]]; do envs+=("$1"); shift; done
    cmd=("$@")
    local exe=${cmd[0]:-}
    if [ -z "$exe" ] || ! resolves "$exe"; then
        rows+=("$name|missing|-|${exe:-(no command)} not built or not found")
        [ "$dry" = 1 ] && failed=1
        return
    fi
    if [ "$exe" = python3 ] && [ ! -f "${cmd[1]:-}" ]; then
        rows+=("$name|missing|-|${cmd[1]:-(no script)} not found")
        [ "$dry" = 1 ] && failed=1
        return
    fi
    local cudnn_step=0
    case " ${envs[*]:-} " in *" VT_CUDNN=1 "*) cudnn_step=1 ;; esac
    if [ "$cudnn_step" = 1 ] && [ -z "$cudnn_dir" ]; then
        rows+=("$name|no cudnn|-|libcudnn.so.9 not found (see the cudnn_library row)")
        return
    fi
    if [ "$dry" = 1 ] && [ "${RUN_IN_DRY:-0}" != 1 ]; then
        # what can be checked without a GPU: train_throughput's arguments (it parses them all,
        # then makes the model; steps=0 batch=1 trains nothing), a Python script's syntax
        local check=""
        case $exe in
            */train_throughput) check=$(timeout 60 "${cmd[@]}" device=cpu steps=0 warmup=0 batch=1 2>&1) ;;
            python3) check=$(python3 -m py_compile "${cmd[1]}" 2>&1) ;;
        esac
        if [ $? -ne 0 ]; then
            rows+=("$name|FAIL|-|$(echo "$check" | tail -n 1 | cut -c1-90)")
            failed=1
            return
        fi
        rows+=("$name|dry-run|-|would run: ${envs[*]:+${envs[*]} }${cmd[*]}")
        return
    fi
    local left=$((budget - ($(date +%s) - start)))
    if [ "$left" -lt 20 ]; then
        rows+=("$name|no time|-|script budget ${budget}s spent")
        return
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    local t0 log="$logs/$name.log" rc status
    if [ "$cudnn_step" = 1 ]; then
        envs+=("VT_CUDNN_LIBRARY=$cudnn_lib" "LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$cudnn_dir")
    fi
    t0=$(date +%s.%N)
    echo "=== $name: ${envs[*]:+${envs[*]} }${cmd[*]} (timeout ${limit}s)"
    timeout -k 10 "$limit" env "${envs[@]}" "${cmd[@]}" >"$log" 2>&1
    rc=$?
    local secs
    secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
    case $rc in
        0) status=PASS ;;
        77) status=SKIP ;;
        124|137) status=TIMEOUT ;;
        *) status="FAIL($rc)" ;;
    esac
    # here, without a GPU, a test program must load and skip (test_cuda_module: pass)
    [ "$dry" = 1 ] && [ "$rc" != 0 ] && [ "$rc" != 77 ] && failed=1
    tail -n 25 "$log"
    local last
    last=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1 | cut -c1-90)
    rows+=("$name|$status|$secs|$last")
    # whether a graphs benchmark replayed (the trainer logs its first replay, or why not)
    case " ${envs[*]:-} " in
        *" VT_CUDA_GRAPHS=1 "*)
            if [[ $name != test_* ]]; then
                local gl
                gl=$(grep -m1 'CUDA graphs' "$log" | sed 's/.*CUDA graphs/CUDA graphs/' | cut -c1-90)
                rows+=("${name}_state|info|-|${gl:-no 'CUDA graphs' line: never replayed}")
            fi ;;
    esac
    # what ran the convolutions of a cuDNN benchmark (the trainer's log line)
    if [ "$cudnn_step" = 1 ] && [[ $name != test_* ]]; then
        local eng
        eng=$(grep -m1 'GPU convolutions:' "$log" | sed 's/.*GPU convolutions: //' | cut -c1-90)
        rows+=("${name}_engine|info|-|${eng:-no 'GPU convolutions:' line in the log}")
    fi
}

echo "=== device"
if [ "$dry" = 1 ]; then
    echo "dry run: no GPU used; build folder $build"
elif command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi --query-gpu=name,compute_cap,memory.total,memory.used,driver_version \
        --format=csv,noheader 2>&1 | tee "$logs/nvidia-smi.txt"
    # nvidia-smi answers through NVML: test_cuda_train then requires the run's GPU figures
    export VT_TEST_EXPECT_NVML=1
fi

cudnn_lib=$(find_cudnn)
cudnn_dir=${cudnn_lib:+$(dirname "$cudnn_lib")}
if [ -n "$cudnn_lib" ]; then
    rows+=("cudnn_library|found|-|$cudnn_lib")
else
    rows+=("cudnn_library|none|-|no libcudnn.so.9: the cuDNN steps are skipped")
fi
echo "=== cuDNN: ${cudnn_lib:-not found}"

for t in "${tests[@]}"; do
    IFS='|' read -r name limit cmd <<<"$t"
    # shellcheck disable=SC2086  # cmd is a command line with arguments
    RUN_IN_DRY=1 run_step "$name" "$limit" $cmd
done

# memcheck when asked, or by default when test_cuda_ops failed (its report says where).
sanitize=${VT_GPU_SANITIZE:-auto}
if [ "$sanitize" = auto ]; then
    sanitize=0
    for r in "${rows[@]}"; do case $r in test_cuda_ops"|FAIL"*) sanitize=1 ;; esac; done
fi
[ "$dry" = 1 ] && sanitize=1 # resolve its command too
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
printf '%-28s %-10s %8s  %s\n' step status seconds "last output line"
for r in "${rows[@]}"; do
    IFS='|' read -r name status secs last <<<"$r"
    printf '%-28s %-10s %8s  %s\n' "$name" "$status" "$secs" "$last"
done
if [ "$dry" = 1 ]; then
    [ "$failed" = 0 ] && echo "dry run: every step resolves" || echo "dry run: FAILED (see above)"
    exit "$failed"
fi
# Non-zero when any test failed, so the run's rc tells the story at a glance.
for r in "${rows[@]}"; do
    case $r in test_*"|FAIL"*|test_*"|TIMEOUT"*|memcheck*"|FAIL"*) exit 1 ;; esac
done
exit 0
