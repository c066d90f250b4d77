#!/bin/sh
# GPU ranks end to end, where a host has two GPUs: `vt train ... device=0,1` starts 2 ranks
# (the NCCL engine, its id over the TCP rendezvous: no MPI needed), trains 2 epochs of cls-n,
# and must exit 0 with "2 ranks over NCCL" in its log, rank 0's run folder written once and
# the saved model loadable (`vt val`).  Exit 77 (skipped) on a host with fewer than 2 GPUs.
#
#   dist_nccl_vt.sh VT SCRATCH_DIR
set -u
vt=$1 scratch=$2
gpus=$("$vt" info 2>/dev/null | sed -n 's/^devices: cpu, \([0-9][0-9]*\) GPU.*/\1/p' | head -1)
if [ "${gpus:-0}" -lt 2 ]; then
    echo "SKIP: needs 2 GPUs (vt info: ${gpus:-none})"
    exit 77
fi
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1
"$vt" synth data="$scratch/shapes" classes=3 train=64 val=16 imgsz=32 >/dev/null || exit 1
log=$scratch/train.log
timeout 300 "$vt" train data="$scratch/shapes" model=cls-n epochs=2 batch=8 imgsz=32 \
    device=0,1 project="$scratch/runs" save="$scratch/model.vtm" >"$log" 2>&1
rc=$?
cat "$log"
fails=0
[ $rc = 0 ] || { echo "FAIL: vt train device=0,1 exited $rc"; fails=1; }
grep -q "2 ranks over NCCL" "$log" || { echo "FAIL: no '2 ranks over NCCL' in the log"; fails=1; }
n=$(find "$scratch/runs" -name results.csv | wc -l)
[ "$n" = 1 ] || { echo "FAIL: $n results.csv (rank 0 alone writes the run)"; fails=1; }
"$vt" val model="$scratch/model.vtm" data="$scratch/shapes" device=0 >/dev/null 2>&1 ||
    { echo "FAIL: the saved model does not validate"; fails=1; }
[ $fails = 0 ] && echo "dist_nccl_vt: 2 GPU ranks trained"
exit $fails
