#!/usr/bin/env bash
# Run the learning tests (the suites that assert a trained quality: classification accuracy,
# detection mAP, segmentation mIoU) once under every CPU GEMM path this processor runs, and
# print each test's figures per path.  The library chooses the fastest path by itself; this
# checks that a learned threshold holds on all of them, not only on the machine's default.
#
#   scripts/test-gemm-paths.sh [--frozen] [BUILD_DIR=build] [PATH ...]
#
# PATHs (default: all): auto, portable, generic, sandybridge, haswell, zen, zen2, zen3, skx
# (BLIS sub-configurations, VT_CPU_GEMM in the library); one the CPU cannot run is skipped.
# --frozen trains with a frozen optimiser (lr0=1e-8): every learning test must then FAIL,
# which shows that the thresholds are above what a broken trainer reaches.
# Exit status: 0 when every test passed (with --frozen: when every test failed), else 1.
set -uo pipefail
cd "$(dirname "$0")/.."
frozen=0
if [ "${1:-}" = --frozen ]; then frozen=1; shift; fi
build=${1:-build}
[ $# -gt 0 ] && shift
paths=("$@")
[ ${#paths[@]} -gt 0 ] || paths=(auto portable generic sandybridge haswell zen zen2 zen3 skx)
tests=(train detect_train segment_train instance_train)
vt="$build/examples/vt"
[ -x "$vt" ] || { echo "build first: scripts/test.sh (or ninja -C $build)"; exit 2; }
extra=""
[ $frozen -eq 1 ] && extra="lr0=0.00000001"
status=0
for p in "${paths[@]}"; do
  kernels=$(VT_CPU_GEMM=$p "$vt" info | sed -n 's/^cpu kernels: //p')
  case "$kernels" in
    *"not runnable here"*) echo "== $p: not runnable on this CPU, skipped"; continue ;;
  esac
  echo "== VT_CPU_GEMM=$p: $kernels"
  for t in "${tests[@]}"; do
    log=$(mktemp)
    VT_CPU_GEMM=$p VT_TEST_TRAINER_EXTRA="$extra" CK_RUN_CASE=train \
      meson test -C "$build" --no-rebuild "$t" > /dev/null 2>&1
    rc=$?
    cp "$build/meson-logs/testlog.txt" "$log"
    figures=$(grep -ho 'learned: [^(]*' "$log" | sed 's/learned: //' | tr '\n' ' ')
    if [ $rc -eq 0 ]; then verdict=pass; else verdict=FAIL; fi
    printf '   %-14s %-4s %s\n' "$t" "$verdict" "$figures"
    if [ $frozen -eq 0 ] && [ $rc -ne 0 ]; then status=1; grep -h ':F:' "$log" | sed 's/^/     /'; fi
    if [ $frozen -eq 1 ] && [ $rc -eq 0 ]; then status=1; fi
    rm -f "$log"
  done
done
exit $status
