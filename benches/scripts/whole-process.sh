#!/usr/bin/env bash
# Whole-process CPU time (user + sys) of two run_loop variants pinned to CPU 1, in 7 alternating
# pairs after one warm-up pair; prints each pair and the ratio B/A (its table is in BENCHMARKS.md).
#   bash benches/scripts/whole-process.sh mul1 c-trip onnxrt-trip [calls]
set -euo pipefail
cd "$(dirname "$0")/../.."
model=$1 a=$2 b=$3 n=${4:-300000}
cpu() { /usr/bin/time -f "%U %S" taskset -c 1 target/release/run_loop "$model" "$1" "$n" 2>&1 >/dev/null | tail -1 | awk '{print $1 + $2}'; }
cpu "$a" >/dev/null; cpu "$b" >/dev/null
for _ in 1 2 3 4 5 6 7; do
  x=$(cpu "$a"); y=$(cpu "$b")
  echo "$x $y $(awk -v x="$x" -v y="$y" 'BEGIN { printf "%.4f", y / x }')"
done
