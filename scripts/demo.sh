#!/usr/bin/env bash
# One command on a fresh Debian 12 machine: install the dependencies, build, and run the demo
# (generate a synthetic dataset, train the cls-n classifier on the CPU, print its accuracy).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
[ -f build/build.ninja ] || meson setup build
ninja -C build
build/examples/vt demo data=demo-data save=demo-model.vtm
