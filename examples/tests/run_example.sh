#!/bin/sh
# Smoke-test runner for the examples (examples/meson.build).
#
#   run_example.sh VT [--model] COMMAND [ARG ...]
#
# Runs COMMAND in a fresh temporary folder holding `data/`, a tiny synthetic dataset written by
# the vt tool VT (2 classes of 16x16 images: data/train/{circle,square}, data/val/...), `det/`,
# a tiny synthetic detection dataset (3 classes, 12 + 4 images of 64x64, det/data.yaml), and
# with --model also `model.vtm`, a cls-n trained on `data` for one epoch.  The exit status is
# COMMAND's.
set -eu
vt=$1
case $vt in /*) ;; *) vt=$PWD/$vt ;; esac   # meson gives build targets relative to the build dir
shift
need_model=0
if [ "${1:-}" = --model ]; then
    need_model=1
    shift
fi
cmd=$1
shift
case $cmd in /*) ;; *) [ -e "$cmd" ] && cmd=$PWD/$cmd ;; esac
work=$(mktemp -d "${TMPDIR:-/tmp}/vt-example.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
cd "$work"
"$vt" synth data=data classes=2 train=6 val=2 imgsz=16 seed=1 >/dev/null
"$vt" synth data=det task=detect classes=3 train=12 val=4 imgsz=64 seed=1 >/dev/null
if [ "$need_model" = 1 ]; then
    "$vt" train data=data imgsz=16 epochs=1 batch=4 save=model.vtm progress=off >/dev/null
fi
echo "+ $cmd $*"
"$cmd" "$@"
