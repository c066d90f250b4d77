#!/usr/bin/env bash
# Prepare a GPU run (on THIS machine, which has nvcc but no GPU): configure and build build-gpu/
# with CUDA, bundle the shared libraries the GPU machine lacks, and print the one `run` call to
# make.  The GPU machine then executes scripts/gpu-run.sh from the repository root.
#
# Usage: scripts/gpu-check.sh [extra meson -D options...]
#   e.g. scripts/gpu-check.sh -Dgpu_arch=90      (only sm_90: faster build, H200 only)
# Device time is scarce (about 15 minutes a session, start-up included): everything that can
# fail here (configure, compile, link, bundling, carry size) fails here, before a device call.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-gpu

# No OpenBLAS: it alone is ~40 MiB of the 64 MiB carry, and the GPU machine needs only the CPU
# reference ops of the tests (lib/backend/gemm.c serves them).
opts=(-Dcuda=enabled -Dblas=disabled -Dbuildtype=release -Dtests=true)
# Optional parts whose folder has no meson.build yet would stop the configure.
[ -f examples/meson.build ] || opts+=(-Dexamples=false)
[ -f bench/meson.build ] || opts+=(-Dbench=false)

if [ -f "$build/build.ninja" ]; then
    meson configure "$build" "${opts[@]}" "$@" >/dev/null
else
    meson setup "$build" "${opts[@]}" "$@"
fi
ninja -C "$build" -j2

grep -q '^#define VT_HAVE_CUDA 1' "$build/vt_config.h" ||
    { echo "gpu-check: $build was configured without CUDA (no nvcc?)" >&2; exit 1; }
[ -x "$build/tests/test_cuda_ops" ] ||
    { echo "gpu-check: $build/tests/test_cuda_ops was not built (Check missing?)" >&2; exit 1; }

# Here there is no GPU, so the CUDA suite must skip (77), proving the binary and the CUDA module
# (loaded as gpu-run.sh will: gpu-env.sh's VT_CUDA_PLUGIN) load and run without a driver;
# anything else means it will not run there either.
[ -f "$build/libvisiontrain-cuda.so" ] ||
    { echo "gpu-check: $build/libvisiontrain-cuda.so (the CUDA module) was not built" >&2; exit 1; }
set +e
scratch=$(mktemp -d)
(. scripts/gpu-env.sh && VT_TEST_TMP=$scratch "$build/tests/test_cuda_module" >"$scratch.log" 2>&1)
rc=$?
rm -rf "$scratch"
if [ "$rc" -ne 0 ]; then
    cat "$scratch.log" >&2
    echo "gpu-check: $build/tests/test_cuda_module failed here (the CUDA module's loader)" >&2
    exit 1
fi
rm -f "$scratch.log"
(. scripts/gpu-env.sh && "$build/tests/test_cuda_ops" >/dev/null 2>&1)
rc=$?
set -e
if [ "$rc" -ne 77 ] && [ "$rc" -ne 0 ]; then
    echo "gpu-check: $build/tests/test_cuda_ops exited $rc here (expected 77: skipped)" >&2
    exit 1
fi

rm -rf "$build/device-libs" # a stale bundle (e.g. from a build with OpenBLAS) would ride along
../shared/tools/device-bundle.sh "$build"

# Every step of gpu-run.sh resolves (programs, arguments, scripts) with the bundle in place;
# its logs go to a scratch folder, not into the carried build.
scratch=$(mktemp -d)
if ! OUT=$scratch VT_GPU_BUILD=$build bash scripts/gpu-run.sh --dry-run >"$scratch/dry-run.txt" 2>&1; then
    sed -n '/=== summary/,$p' "$scratch/dry-run.txt" >&2
    echo "gpu-check: scripts/gpu-run.sh --dry-run failed: fix the step above first" >&2
    rm -rf "$scratch"
    exit 1
fi
grep '^cudnn_library' "$scratch/dry-run.txt" || true
rm -rf "$scratch"

# The device run starts three of the test programs (gpu-run.sh); the others each link the whole
# library (about 1 MiB apiece, 38 MiB of 58 in all) and would only fill the carry.  A later
# ninja builds them again.
find "$build/tests" -maxdepth 1 -type f -name 'test_*' ! -name '*.*' ! -name test_cuda_module \
    ! -name test_cuda_ops ! -name test_cuda_train -delete
grep -o '\$build/tests/test_[a-z_]*' scripts/gpu-run.sh | sort -u | while read -r t; do
    [ -x "${t/\$build/$build}" ] ||
        { echo "gpu-check: gpu-run.sh runs ${t/\$build/$build}, which is not kept" >&2; exit 1; }
done

# The carry limit is 64 MiB for everything named in carry.
kib=$(du -sk "$build" | cut -f1)
if [ "$kib" -gt 60000 ]; then
    echo "gpu-check: $build is $((kib / 1024)) MiB, too close to the 64 MiB carry limit" >&2
    exit 1
fi
git check-ignore -q "$build" ||
    { echo "gpu-check: $build is not ignored by git; carry needs an ignored path" >&2; exit 1; }

cat <<MSG

gpu-check: $build is ready ($((kib / 1024)) MiB to carry).  Check the device first (free):
    status
then make ONE call (the script keeps itself under ~8 minutes and prints a table last):
    run(command="bash scripts/gpu-run.sh", carry=["$build"], timeout_s=540)
and give_back right after unless you rerun at once.  Options (environment, in the command):
    VT_GPU_SANITIZE=1 bash scripts/gpu-run.sh   always runs test_cuda_ops under compute-sanitizer (default: when it fails)
    VT_GPU_NO_BENCH=1 bash scripts/gpu-run.sh   tests only
    VT_GPU_ONLY='cudnn|^test_cuda_ops\$|^resnet18_224_b128_tf32\$' bash scripts/gpu-run.sh
                                                the experimental cuDNN convolutions and their references only
    VT_GPU_ONLY='bf16|graphs|^test_cuda_module\$|^cnn_small_b64_tf32\$|^resnet18_224_b128_tf32\$' bash scripts/gpu-run.sh
                                                the experimental bf16 and CUDA graphs and their references only
The cuDNN steps (VT_CUDNN=1) need libcudnn.so.9 there (PyTorch's pip package has one; the
script finds it or skips them, saying so in the cudnn_library row).
Logs come back under the run's files_at (one file per step).
MSG
