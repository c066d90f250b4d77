#!/usr/bin/env bash
# Install what building and testing libvisiontrain needs on Debian 12 (run as root, or with sudo
# available).  The CUDA toolkit is optional and not installed here: the CUDA backend is built
# when nvcc is found (e.g. /usr/local/cuda/bin/nvcc).
set -euo pipefail
pkgs=(meson ninja-build pkg-config gcc libc6-dev check
      libpng-dev libjpeg62-turbo-dev zlib1g-dev libyaml-dev libjson-c-dev
      libblis-serial-dev python3 python3-pip)
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update
  $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi

# pycocotools (PyPI only), which tests/coco_metrics.py compares the detection metrics with, for
# the python3 the tests run: the first on PATH, as tests/meson.build finds it.
py=$(command -v python3)
if ! "$py" -c 'import pycocotools' 2>/dev/null; then
  args=(install pycocotools)
  # A distribution's python outside a venv may be "externally managed" (PEP 668; Debian 12's
  # is): its pip then installs system-wide only when told to, with an option older pips lack.
  managed='import os, sys, sysconfig
sys.exit(sys.prefix != sys.base_prefix or not os.path.exists(
    os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'
  if "$py" -c "$managed" && "$py" -m pip help install | grep -- --break-system-packages >/dev/null; then
    args+=(--break-system-packages)
  fi
  site=$("$py" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
  pysudo=$sudo
  [ -w "$site" ] && pysudo=""
  $pysudo "$py" -m pip "${args[@]}"
  "$py" -c 'import pycocotools'
fi
