# Sourced by the scripts that run ON the GPU machine (gpu-run.sh, gpu-profile.sh), from the
# repository root: the carried build folder, the log folder ($OUT comes back with the run) and
# the bundled shared libraries the machine lacks (scripts/gpu-check.sh put them in device-libs).
# VT_GPU_BUILD names another build folder (gpu-run.sh --dry-run from a meson test does).
build=${VT_GPU_BUILD:-build-gpu}
case $build in /*) babs=$build ;; *) babs=$PWD/$build ;; esac
logs=${OUT:-$babs/gpu-logs}
mkdir -p "$logs"
export LD_LIBRARY_PATH="$babs/device-libs:$babs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The test programs link the library statically: tell them where the CUDA module is (and
# test_cuda_module where its broken ones are).
export VT_CUDA_PLUGIN="$babs/libvisiontrain-cuda.so" VT_TEST_FAKE_MODULES="$babs/tests"
