#!/usr/bin/env bash
# Checks the CPU backend's choice between im2col + GEMM, Winograd F(2x2, 3x3) and F(4x4, 3x3)
# (vt_backend_cpu_winograd_tile, measured on AMD Zen 3) on this machine: each shape of a list
# (the models' 3x3 stride-1 layers: maps of 4-80 px, batches 8-256) runs forward and backward
# in the three ways, taking turns, ROUNDS rounds, the fastest of each kept
# (build/bench/conv_profile tile=0|2|4).  Prints a row a shape (ms, forward + backward),
# the rule's tile, the fastest tile and the rule's time over the fastest, then a summary.
# With `bf16` (a CPU with bf16 products), the same under precision=bf16: im2col with bf16
# products, 2x2 tiles with bf16 products and 4x4 tiles with fp32 products, against the rule
# that precision=bf16 follows there (vt_cpu_wino_tile).
#
#   bench/winograd_rule.sh [BUILD_DIR=build] [ROUNDS=3] [THREADS=2] [fp32|bf16]
#
# About a minute on 2 cores.  A rule that loses more than 10 % on a shape, or several shapes,
# on a processor kind wants its thresholds (lib/backend/cpu_impl.h) measured there.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-3}
threads=${3:-2}
prec=${4:-fp32}
case $prec in fp32) bf=0 ;; bf16) bf=1 ;; *) echo "precision: fp32 or bf16" >&2; exit 2 ;; esac
cp="$build/bench/conv_profile"
[ -x "$cp" ] || { echo "build first: ninja -C $build"; exit 2; }
# n cin hw cout
shapes=(
  "8 32 80 32" "8 64 40 64" "8 96 40 96" "8 128 20 128" "8 256 20 256" "16 64 16 64"
  "16 64 18 64" "16 128 13 128" "64 32 14 64" "256 32 14 64" "16 128 11 128" "8 128 12 128"
  "8 256 10 256" "8 64 10 64" "16 128 8 128" "8 128 8 128" "16 128 7 128" "32 128 7 128"
  "64 64 7 128" "256 64 7 128" "64 128 5 128" "16 256 4 256"
  "16 96 16 96" "16 160 16 96" "16 224 8 96" "16 32 64 32" "16 64 32 64"
)
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; $threads threads, $rounds rounds, $prec"
declare -A best rule
for r in $(seq "$rounds"); do
  for s in "${shapes[@]}"; do
    read -r n c hw o <<<"$s"
    for t in 0 2 4; do
      out=$("$cp" n="$n" cin="$c" h="$hw" w="$hw" cout="$o" keep=0 reps=8 bare=0 \
            threads="$threads" tile=$t bf16=$bf)
      rule[$s]=$(sed -n "s/.*rule's tile \([0-9]*\).*/\1/p" <<<"$out")
      ms=$(awk '$1 == "forward" || $1 == "backward" {t += $2} END {printf "%.3f", t}' <<<"$out")
      k="$s/$t"
      if [ -z "${best[$k]:-}" ] || [ "$(echo "$ms < ${best[$k]}" | bc -l)" = 1 ]; then
        best[$k]=$ms
      fi
    done
  done
done
printf '%-22s %9s %9s %9s %5s %8s %9s\n' "n, cin -> cout, map" im2col "2x2" "4x4" rule fastest "rule/best"
sum_rule=0; sum_best=0; hits=0; worst=1; worst_at=""
for s in "${shapes[@]}"; do
  read -r n c hw o <<<"$s"
  i=${best[$s/0]}; f2=${best[$s/2]}; f4=${best[$s/4]}
  fast=0; b=$i
  [ "$(echo "$f2 < $b" | bc -l)" = 1 ] && { fast=2; b=$f2; }
  [ "$(echo "$f4 < $b" | bc -l)" = 1 ] && { fast=4; b=$f4; }
  rt=${rule[$s]}; rms=${best[$s/$rt]}
  ratio=$(echo "$rms / $b" | bc -l)
  [ "$rt" = "$fast" ] && hits=$((hits + 1))
  [ "$(echo "$ratio > $worst" | bc -l)" = 1 ] && { worst=$ratio; worst_at="$n, $c -> $o, ${hw}x$hw"; }
  sum_rule=$(echo "$sum_rule + $rms" | bc -l); sum_best=$(echo "$sum_best + $b" | bc -l)
  printf '%-22s %9.3f %9.3f %9.3f %5s %8s %8.2fx\n' "$n, $c -> $o, ${hw}x$hw" "$i" "$f2" "$f4" \
    "$rt" "$fast" "$ratio"
done
printf 'the rule took the fastest on %d of %d shapes; worst %.2fx the fastest (%s); all shapes: %.1f ms by the rule, %.1f the fastest (%.3fx)\n' \
  "$hits" "${#shapes[@]}" "$worst" "${worst_at:-none}" "$sum_rule" "$sum_best" "$(echo "$sum_rule / $sum_best" | bc -l)"
