#!/usr/bin/env bash
# Install what building and testing libvisiontrain needs on Debian 12 (run as root, or with sudo
# available).  The CUDA toolkit is optional and not installed here: the CUDA backend is built
# when nvcc is found (e.g. /usr/local/cuda/bin/nvcc).
set -euo pipefail
pkgs=(meson ninja-build pkg-config gcc libc6-dev check
      libpng-dev libjpeg62-turbo-dev zlib1g-dev libyaml-dev libjson-c-dev
      libblis-serial-dev python3 python3-pip libprotobuf-c-dev protobuf-c-compiler
      libfreetype-dev fonts-dejavu-core
      openmpi-bin libopenmpi-dev)   # distributed training (-Dmpi) and its 2-rank tests
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
pkgs+=(python3-venv)   # `python3 -m venv` before `pip install ./bindings/python` (README)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update
  $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi

# PyPI packages the tests check the library's files with (each such test exits 77 without
# them): onnxruntime runs the exported ONNX files, onnx checks them, tensorboard reads the
# events files, pycocotools scores the detection metrics.  Debian packages none of onnx/onnxruntime.  Installed for the python3 that
# meson finds on PATH, i.e. the one the tests run; Debian's own python3 is "externally
# managed" (PEP 668) and needs --break-system-packages, which only a recent pip knows.
# Each entry: import name, then pip name.
py_pkgs=("numpy numpy" "onnx onnx" "onnxruntime onnxruntime" "tensorboard tensorboard"
         "pycocotools pycocotools")
want=()
for e in "${py_pkgs[@]}"; do
  set -- $e
  python3 -c "import $1" >/dev/null 2>&1 || want+=("$2")
done
if [ ${#want[@]} -gt 0 ]; then
  brk=()
  python3 -m pip install --help 2>/dev/null | grep -q -- --break-system-packages &&
    brk=(--break-system-packages)
  $sudo python3 -m pip install --quiet "${brk[@]}" "${want[@]}"
fi
