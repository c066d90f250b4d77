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

# PyPI packages the tests read the library's files with (the tensorboard test exits 77 without
# them), installed for the python3 that meson finds on PATH, i.e. the one the tests run.
# Debian's own python3 is "externally managed" (PEP 668): pip needs --break-system-packages.
py_pkgs=(tensorboard)
for p in "${py_pkgs[@]}"; do
  python3 -c "import $p" >/dev/null 2>&1 && continue
  brk=""
  python3 -m pip install --help 2>/dev/null | grep -q -- --break-system-packages && brk="--break-system-packages"
  python3 -m pip install --quiet $brk "$p"
done
