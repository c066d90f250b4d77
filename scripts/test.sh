#!/usr/bin/env bash
# Build libvisiontrain and run the whole test suite (C Check suites, ABI check, Python tests).
# Extra arguments go to `meson setup`, e.g.  scripts/test.sh -Db_sanitize=address,undefined
# BUILDDIR selects the build folder (default: build).
set -euo pipefail
cd "$(dirname "$0")/.."
builddir=${BUILDDIR:-build}
if [ -f "$builddir/build.ninja" ]; then
  [ $# -eq 0 ] || meson configure "$builddir" "$@"
else
  meson setup "$builddir" "$@"
fi
ninja -C "$builddir"
meson test -C "$builddir" --print-errorlogs
