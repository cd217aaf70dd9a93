#!/usr/bin/env bash
# Instructions per call of each run_loop variant: (3,000-call process - 1,000-call process) / 2,000,
# so set-up cancels (its table is in BENCHMARKS.md). Needs valgrind and the release run_loop:
#   cargo build --release -p onnxrt-benches --bins && bash benches/scripts/callgrind-per-call.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
for m in ${MODELS:-mul1 sigmoid}; do
  for v in c-run onnxrt-run c-trip onnxrt-trip; do
    t=()
    for n in 1000 3000; do
      t+=("$(valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/run_loop "$m" "$v" "$n" 2>&1 |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p')")
    done
    echo "$m $v $(((t[1] - t[0]) / 2000))"
  done
done
