#!/usr/bin/env bash
# Every benchmark of BENCHMARKS.md that runs on a CPU machine, results under OUT_DIR:
#   bash benches/scripts/run-cpu.sh [OUT_DIR]          (default target/bench-results)
#
# Uses the runtime your build provisions (set ONNXRT_DIST / ONNXRT_CACHE_DIR etc. as for any
# build; BENCHMARKS.md used ONNXRT_DIST=cpu-1.16.2-registry). Needs cargo, cc, python3 (3.8 to 3.11
# for the onnxruntime 1.16.3 wheel) with venv, and hyperfine (`apt-get install hyperfine`).
# Environment knobs: SAMPLES (default 51), ORTPY_VENV (default /tmp/ortpy16),
# SKIP_ORT=1, SKIP_PYTHON=1, SKIP_PROVISION=1.
#
#   machine.txt             nproc, lscpu, memory, load, toolchain
#   cpu-inprocess.txt       cpu_bench: onnxrt vs raw C (C program's loop, Rust raw-FFI loop), one process
#   cpu-ort116.txt          the same plus the `ort` 1.16.3 crate, one process (benches/ort116)
#   cpu-raw-c-program.txt   benches/c/raw_run.c as a standalone program, timing itself
#   cpu-python.txt          Python onnxruntime 1.16.3 (its own bundled library)
#   cpu-whole-process.*     hyperfine: whole processes running N runs, onnxrt vs raw C
#   alloc-count.txt         the allocation-count test's output
#   provision-*.txt         benches/scripts/provision.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-target/bench-results}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
TARGET=${CARGO_TARGET_DIR:-target}
TARGET=$(mkdir -p "$TARGET" && cd "$TARGET" && pwd)
SAMPLES=${SAMPLES:-51}
VENV=${ORTPY_VENV:-/tmp/ortpy16}
say() { printf '\033[1mrun-cpu.sh:\033[0m %s\n' "$*" >&2; }

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "nproc: $(nproc)"
  lscpu | head -20
  free -h
  echo "load: $(cat /proc/loadavg)"
  uname -srm
  rustc -V
  cc --version | head -1
  echo "ONNXRT_DIST=${ONNXRT_DIST:-} ONNXRT_CACHE_DIR=${ONNXRT_CACHE_DIR:-}"
} >"$OUT/machine.txt"

say "building (release)"
cargo build -q --release -p onnxrt-benches -p onnxrt-build-support --bins
INCLUDE=$("$TARGET/release/onnxrt-dist" env | sed -n 's/^export ONNXRT_INCLUDE_DIR=//p')

say "in-process: onnxrt vs raw C ($SAMPLES samples per variant)"
"$TARGET/release/cpu_bench" --samples "$SAMPLES" | tee "$OUT/cpu-inprocess.txt"
LIBRARY=$(sed -n 's/^runtime: ONNX Runtime [^ ]* from //p' "$OUT/cpu-inprocess.txt")

if [ "${SKIP_ORT:-0}" != 1 ]; then
  say "in-process with the ort 1.16.3 crate"
  if (cd benches/ort116 && CARGO_TARGET_DIR="$TARGET/ort116" cargo build -q --release) 2>"$OUT/ort116-build.err"; then
    "$TARGET/ort116/release/onnxrt-bench-ort116" --samples "$SAMPLES" | tee "$OUT/cpu-ort116.txt"
  else
    say "ort 1.16.3 did not build, see $OUT/ort116-build.err"
  fi
fi

say "raw_run.c as a standalone program"
cc -O2 -DRAW_RUN_MAIN -I"$INCLUDE" benches/c/raw_run.c -o "$TARGET/raw_run" -ldl
{
  for spec in add1:benches/models/add_1.onnx add1mb:benches/models/add_1mb.onnx mlp:tests/data/models/mlp.onnx; do
    for mode in run binding; do
      "$TARGET/raw_run" "$LIBRARY" "${spec#*:}" "${spec%%:*}" "$mode" "$SAMPLES"
    done
  done
} | tee "$OUT/cpu-raw-c-program.txt"

if [ "${SKIP_PYTHON:-0}" != 1 ]; then
  say "Python onnxruntime 1.16.3 in $VENV"
  if [ ! -x "$VENV/bin/python" ]; then
    PY=$(command -v python3.11 || command -v python3.10 || command -v python3)
    "$PY" -m venv "$VENV"
  fi
  "$VENV/bin/pip" install -q onnxruntime==1.16.3 "numpy<2"
  "$VENV/bin/python" benches/scripts/bench_python.py --samples "$SAMPLES" | tee "$OUT/cpu-python.txt"
fi

say "whole processes (hyperfine): N runs of one variant per process"
{
  for spec in add1:200000 add1mb:2000 mlp:100000; do
    c=${spec%%:*} n=${spec#*:}
    hyperfine -N --warmup 2 --runs 10 --style basic --export-markdown "$OUT/cpu-whole-process-$c.md" \
      "$TARGET/release/run_loop $c c-run $n" "$TARGET/release/run_loop $c onnxrt-run $n" \
      "$TARGET/release/run_loop $c c-binding $n" "$TARGET/release/run_loop $c onnxrt-binding $n" 2>&1
  done
} | tee "$OUT/cpu-whole-process.txt"

say "allocation count"
cargo test -q --release -p onnxrt-benches --test alloc_count -- --nocapture --test-threads=1 2>&1 | tee "$OUT/alloc-count.txt"

if [ "${SKIP_PROVISION:-0}" != 1 ]; then
  say "provisioning"
  bash benches/scripts/provision.sh "$OUT"
fi
say "done: $OUT"
