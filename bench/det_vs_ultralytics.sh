#!/usr/bin/env bash
# Side by side on one generated dataset: libvisiontrain (vt train) against Ultralytics (the
# peer, from PyPI), same epochs, image size, batch, optimizer and thread count, both from
# scratch with their own default augmentation.  Prints one table: trainer, model, params,
# the two final validation metrics, training wall time and img/s.
#
#   bench/det_vs_ultralytics.sh [--task detect|segment|instance] [--epochs 12] [--imgsz 128]
#       [--batch 16] [--threads $(nproc)] [--train 600] [--val 150] [--classes 4]
#       [--max-objects 8] [--seed 1] [--optimizer adamw] [--lr0 0.002] [--workers 0]
#       [--workdir /tmp/vt-vs-ultralytics] [--build build] [--peer-dir /tmp/peer-ultralytics]
#       [--peer-model yolov8n.yaml | yolo26n.yaml | yolo26n-sem.yaml | yolov8n-seg.yaml]
#       (defaults: detect yolov8n, segment yolo26n-sem, instance yolov8n-seg)
#       [--model det-n | iseg-n | ...] (ours; default det-n, seg-n, iseg-n)
#       [--synth "min_size=16 max_size=200 sizes=log"] (more vt synth options: the multi-scale set)
#       [--precision fp32 | bf16] (ours; bf16 needs a CPU with AMX or AVX512-BF16)
#
# Run it under `nice -n 19` on a shared machine.  Exit 77 (skip) when the peer cannot be set
# up; never run by meson test.  See bench/README.md ("libvisiontrain vs Ultralytics").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")

task=detect epochs=12 imgsz=128 batch=16 threads=$(nproc) ntrain=600 nval=150 classes=4
maxobj=8 seed=1 optimizer=adamw lr0=0.002 workers=0 work=/tmp/vt-vs-ultralytics
build=build peer_dir=/tmp/peer-ultralytics peer_model="" model="" synth_extra="" precision=fp32
usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case $1 in
    --task) task=$2 ;; --epochs) epochs=$2 ;; --imgsz) imgsz=$2 ;; --batch) batch=$2 ;;
    --threads) threads=$2 ;; --train) ntrain=$2 ;; --val) nval=$2 ;; --classes) classes=$2 ;;
    --max-objects) maxobj=$2 ;; --seed) seed=$2 ;; --optimizer) optimizer=$2 ;;
    --lr0) lr0=$2 ;; --workers) workers=$2 ;; --workdir) work=$2 ;; --build) build=$2 ;;
    --peer-dir) peer_dir=$2 ;; --peer-model) peer_model=$2 ;;
    --model) model=$2 ;; --synth) synth_extra=$2 ;; --precision) precision=$2 ;;
    *) usage ;;
  esac
  shift 2
done
case $task in
  detect) ours=det-n peer_task=detect; : "${peer_model:=yolov8n.yaml}" ;;
  segment) ours=seg-n peer_task=semantic; : "${peer_model:=yolo26n-sem.yaml}" ;;
  instance) ours=iseg-n peer_task=segment; : "${peer_model:=yolov8n-seg.yaml}" ;;
  *) usage ;;
esac
[ -n "$model" ] && ours=$model
case $build in /*) ;; *) build=$root/$build ;; esac
vt=$build/examples/vt
[ -x "$vt" ] || { echo "build first: meson setup $build && ninja -C $build" >&2; exit 2; }
# The library's CPU pool has one thread per online CPU (vt_cpu_count) and no option to change
# it; only the peer can be told.  Unequal counts would make the img/s columns meaningless.
if [ "$threads" != "$(nproc)" ]; then
  echo "warning: libvisiontrain computes on all $(nproc) online CPUs; only the peer gets" \
       "--threads $threads" >&2
fi

# ---- the peer: set up (idempotent), or skip ----
skip() { echo "SKIP: $*" >&2; exit 77; }
if [ ! -f "$peer_dir/env.sh" ]; then
  setup=$root/../shared/tools/peer-ultralytics.sh
  [ -f "$setup" ] || setup=/work/shared/tools/peer-ultralytics.sh
  [ -f "$setup" ] || skip "no $peer_dir/env.sh and no peer-ultralytics.sh to make it"
  [ "$(id -u)" = 0 ] || skip "setting up the peer needs root (apt-get): run $setup $peer_dir"
  bash "$setup" "$peer_dir" > "$work.peer-setup.log" 2>&1 ||
    skip "peer set-up failed, see $work.peer-setup.log"
fi
# shellcheck disable=SC1091
. "$peer_dir/env.sh" || skip "cannot source $peer_dir/env.sh"
python -c 'import torch, ultralytics' 2>/dev/null || skip "ultralytics/torch not importable in $peer_dir"
if [ "$task" = segment ]; then
  python -c 'import ultralytics.models.yolo.semantic' 2>/dev/null ||
    skip "this Ultralytics ($(python -c 'import ultralytics; print(ultralytics.__version__)')) has no semantic task"
fi

# ---- one dataset, and a copy for the peer ----
rm -rf "$work" && mkdir -p "$work"
synth_task=$task
"$vt" synth data="$work/data" task=$synth_task classes="$classes" train="$ntrain" val="$nval" \
  imgsz="$imgsz" seed="$seed" max_objects="$maxobj" $synth_extra > /dev/null
# Ultralytics writes labels/*.cache beside the labels: it gets its own copy.  For segment, the
# copy has no masks/: a masks/ folder beside data.yaml makes Ultralytics read PNG masks with its
# own id convention (classes 0..nc-1, no background id: our 0=background, k+1 masks are rejected
# as corrupt), while without it the semantic task rasterises the same polygon labels we train
# on and appends a background class (data/utils.py check_det_dataset, add_polygon_background).
mkdir -p "$work/peer-data"
cp -r "$work/data/images" "$work/data/labels" "$work/data/data.yaml" "$work/peer-data/"

cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
echo "cpu: $cpu, $(nproc) online; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "data: vt synth task=$synth_task classes=$classes train=$ntrain val=$nval imgsz=$imgsz seed=$seed max_objects=$maxobj $synth_extra"
echo "both: epochs=$epochs imgsz=$imgsz batch=$batch optimizer=$optimizer lr0=$lr0 threads=$threads, from scratch, default augmentation"
echo "ours: precision=$precision"

# ---- ours ----
# workers=0 by default: the peer forces workers=0 on a CPU, so both load in the training thread
# and both use exactly --threads compute threads.  save=0: no checkpoints (the time the peer
# spends writing its checkpoints is small at this size and is counted on its side).
# wall and CPU seconds (user + system, all threads) of the whole vt train process
read -r ours_wall ours_cpu < <(python - "$work/ours.log" "$vt" train data="$work/data" \
  model="$ours" imgsz="$imgsz" epochs="$epochs" batch="$batch" optimizer="$optimizer" \
  lr0="$lr0" workers="$workers" seed="$seed" save=0 progress=plain precision="$precision" <<'PY'
import resource, subprocess, sys, time
t = time.perf_counter()
with open(sys.argv[1], "w") as log:
    rc = subprocess.call(sys.argv[2:], stdout=log, stderr=subprocess.STDOUT)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(time.perf_counter() - t, u.ru_utime + u.ru_stime if rc == 0 else "failed")
PY
)
[ "$ours_cpu" != failed ] || { tail -20 "$work/ours.log" >&2; echo "vt train failed" >&2; exit 1; }
ours_params=$(sed -n 's/^training [^ ]* (\([0-9]*\) parameters.*/\1/p' "$work/ours.log" | head -1)
o3=0 o4=0
if [ "$task" = detect ]; then
  read -r o1 o2 < <(sed -n 's/^final validation.*  mAP50 \([0-9.]*\)  mAP50-95 \([0-9.]*\).*/\1 \2/p' "$work/ours.log")
elif [ "$task" = instance ]; then
  read -r o1 o2 o3 o4 < <(sed -n 's/^final validation.* mAP50 \([0-9.]*\)  mAP50-95 \([0-9.]*\)  mask P.* mask mAP50 \([0-9.]*\)  mask mAP50-95 \([0-9.]*\).*/\1 \2 \3 \4/p' "$work/ours.log")
else
  read -r o1 o2 < <(sed -n 's/^final validation mIoU \([0-9.]*\)  pixel accuracy \([0-9.]*\).*/\1 \2/p' "$work/ours.log")
fi
ours_best=$(sed -n 's/^done in .*; best \(.*\)$/\1/p' "$work/ours.log")

# ---- the peer ----
popt=$optimizer
[ "$popt" = adamw ] && popt=AdamW
[ "$popt" = sgd ] && popt=SGD
python "$here/ultralytics_peer.py" --data "$work/peer-data/data.yaml" --task "$peer_task" \
  --model "$peer_model" --epochs "$epochs" --imgsz "$imgsz" --batch "$batch" \
  --threads "$threads" --optimizer "$popt" --lr0 "$lr0" --seed "$seed" \
  --project "$work/peer-runs" > "$work/peer.log" 2>&1 ||
  { tail -20 "$work/peer.log" >&2; echo "the peer's training failed" >&2; exit 1; }
peer_json=$(sed -n 's/^PEER_RESULT //p' "$work/peer.log" | tail -1)
[ -n "$peer_json" ] || { echo "no PEER_RESULT in $work/peer.log" >&2; exit 1; }

# ---- the table ----
python - "$task" "$ours" "$ours_params" "$o1" "$o2" "$ours_wall" "$ours_cpu" "$ntrain" "$epochs" \
  "$peer_json" "$($vt info 2>/dev/null | sed -n 's/^libvisiontrain \([^ ,]*\).*/\1/p' | head -1)" \
  "$o3" "$o4" <<'PY'
import json, sys
task, model, params, m1, m2, wall, cpu, ntrain, epochs, pj, ver, m3, m4 = sys.argv[1:14]
n = int(ntrain) * int(epochs)
p = json.loads(pj)
seg = task == "segment"
h1, h2 = ("mIoU", "pixel acc") if seg else ("mAP50", "mAP50-95")
rows = [("libvisiontrain" + (" " + ver if ver else ""), model, int(params), float(m1), float(m2),
         float(wall), n / float(wall), float(cpu), n / float(cpu)),
        (p["trainer"], p["model"], p["params"], p["miou"] if seg else p["map50"],
         p["pixel_acc"] if seg else p["map50_95"], p["wall_s"], p["img_s"], p["cpu_s"],
         p["train_images"] * p["epochs"] / p["cpu_s"])]
if task == "instance":
    print()
    print("| trainer | model | params | box mAP50 | box mAP50-95 | mask mAP50 | mask mAP50-95 | wall (s) | img/s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {rows[0][0]} | {model} | {int(params)/1e6:.2f} M | {float(m1):.3f} | {float(m2):.3f} "
          f"| {float(m3):.3f} | {float(m4):.3f} | {float(wall):.0f} | {n / float(wall):.2f} |")
    print(f"| {p['trainer']} | {p['model']} | {p['params']/1e6:.2f} M | {p['map50']:.3f} "
          f"| {p['map50_95']:.3f} | {p['mask_map50']:.3f} | {p['mask_map50_95']:.3f} "
          f"| {p['wall_s']:.0f} | {p['img_s']:.2f} |")
    print(f"\nratio libvisiontrain / peer: img/s {n / float(wall) / p['img_s']:.2f}x, "
          f"img/CPU-s {n / float(cpu) / (p['train_images'] * p['epochs'] / p['cpu_s']):.2f}x; "
          f"mask mAP50-95 {float(m4) / max(p['mask_map50_95'], 1e-9):.2f}x")
    if p.get("last_epoch"):
        print("peer's last epoch (EMA weights) validated: " + ", ".join(
            f"{k} {v:.3f}" for k, v in zip(("mAP50", "mAP50-95", "mask mAP50", "mask mAP50-95"),
                                           p["last_epoch"])))
    sys.exit(0)
print()
print(f"| trainer | model | params | {h1} | {h2} | wall (s) | img/s | CPU (s) | img/CPU-s |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    print(f"| {r[0]} | {r[1]} | {r[2]/1e6:.2f} M | {r[3]:.3f} | {r[4]:.3f} | {r[5]:.0f} | {r[6]:.2f} "
          f"| {r[7]:.0f} | {r[8]:.2f} |")
print(f"\nratio libvisiontrain / peer: img/s {rows[0][6] / rows[1][6]:.2f}x, "
      f"img/CPU-s {rows[0][8] / rows[1][8]:.2f}x; "
      f"peer torch {p['torch']}, {p['threads']} threads, optimizer {p['optimizer']} lr0 {p['lr0']}")
if p.get("last_epoch"):
    print("peer's last epoch (EMA weights) validated: " +
          ", ".join(f"{k} {v:.3f}" for k, v in zip((h1, h2), p["last_epoch"])) +
          "; its table row is best.pt re-validated (its final_eval)")
PY
[ -n "$ours_best" ] && echo "libvisiontrain: final row = the last epoch's weights; best $ours_best"
echo "logs: $work/ours.log $work/peer.log"
