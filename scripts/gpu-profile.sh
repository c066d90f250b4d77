#!/usr/bin/env bash
# Runs ON the GPU machine (like scripts/gpu-run.sh, with build-gpu carried): where the GPU step's
# time goes, layer by layer (bench/layer_profile device=0, detail=1), for the benchmark networks
# and the estimator's GPU cases.  Logs go to $OUT (they come back with the run).
#   VT_GPU_PROFILE="resnet18 cnn-small ..."  picks the cases (default: all below)
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu-env.sh
prof="$build/bench/layer_profile device=0 calib=cls-n,128,64 detail=1"
declare -A cases=(
    [resnet18]="arch=resnet18 classes=1000 imgsz=224 batch=128 steps=5"
    [resnet18_fp32]="arch=resnet18 classes=1000 imgsz=224 batch=128 steps=5 precision=fp32"
    [cnn-small]="arch=cnn-small channels=1 imgsz=28 batch=256 steps=10"
    [cls-m_128]="arch=cls-m imgsz=128 batch=64 steps=5"
    [cls-n_224]="arch=cls-n imgsz=224 batch=128 steps=5"
)
for c in ${VT_GPU_PROFILE:-resnet18 cnn-small cls-m_128 cls-n_224 resnet18_fp32}; do
    echo "=== $c"
    # shellcheck disable=SC2086
    timeout -k 5 90 $prof ${cases[$c]} >"$logs/profile_$c.log" 2>&1
    echo "rc=$?"
    grep -v '^ *[0-9]' "$logs/profile_$c.log" | tail -n 30
done
