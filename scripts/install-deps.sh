#!/usr/bin/env bash
# Install what building and testing libvisiontrain needs on Debian 12 (run as root, or with sudo
# available).  The CUDA toolkit is optional and not installed here: the CUDA backend is built
# when nvcc is found (e.g. /usr/local/cuda/bin/nvcc).
set -euo pipefail
pkgs=(meson ninja-build pkg-config gcc libc6-dev check
      libpng-dev libjpeg62-turbo-dev zlib1g-dev libyaml-dev libjson-c-dev
      libblis-serial-dev python3 libprotobuf-c-dev protobuf-c-compiler)
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update
  $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi

# The ONNX export tests (tests/python/onnx_parity.py) run the exported files in onnxruntime,
# which Debian does not package: numpy, onnx and onnxruntime come from PyPI, for the python3
# the tests run (the first on PATH, as meson finds it).
py=$(command -v python3)
if ! "$py" -c 'import numpy, onnx, onnxruntime' 2>/dev/null; then
  if ! "$py" -m pip --version >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update
    $sudo apt-get install -y --no-install-recommends python3-pip
  fi
  pipflags=()
  # Debian's own python3 refuses pip installs (PEP 668) unless told; a CI machine is ours to change
  if "$py" -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'; then
    pipflags+=(--break-system-packages)
  fi
  $sudo "$py" -m pip install "${pipflags[@]}" numpy onnx onnxruntime
fi
