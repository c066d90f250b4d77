#!/usr/bin/env bash
# Install what building and testing libvisiontrain needs on Debian 12 (run as root, or with sudo
# available).  The CUDA toolkit is optional and not installed here: the CUDA backend is built
# when nvcc is found (e.g. /usr/local/cuda/bin/nvcc).
set -euo pipefail
pkgs=(meson ninja-build pkg-config gcc libc6-dev check
      libpng-dev libjpeg62-turbo-dev zlib1g-dev libyaml-dev libjson-c-dev
      libblis-serial-dev python3)
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update
  $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi
