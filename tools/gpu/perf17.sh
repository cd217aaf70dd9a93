#!/usr/bin/env bash
# Issue 17 on the GPU machine, in one call: onnxrt (examples/gpu_bench) and Python
# (tools/gpu/bench_python.py) side by side on the same ORT build and the same ResNet-50 exports,
# printing one table at the end. Same prerequisites as run-all.sh: the last bundle part unpacked
# (/tmp/ort-gpu: the onnxruntime-gpu wheel's package, its libonnxruntime.so.1.30.0 used by both
# sides) and the binaries built here in .gpu-run/ (gpu_bench from
# `cargo build --release --features cuda --example gpu_bench`).
#
#   bash tools/gpu/perf17.sh            # results in $OUT (default /tmp/out)
#
# 1. batch-1 device-resident IoBinding, fp32, two rounds; the order flips in round 2 (onnxrt
#    first, then Python first), so a warm-GPU or clock effect shows as an order effect;
# 2. the fast path on the fp16 model (fp16 input and output): iobinding, nhwc
#    (prefer_nhwc=1), fast (prefer_nhwc=1 + CUDA graph), at batch 1 and 128, both sides;
# 3. fp32 cuda_graph at batch 1 and 128 for reference.
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
capi=/tmp/ort-gpu/onnxruntime/capi
export ONNXRT_DYLIB_PATH=$capi/libonnxruntime.so.1.30.0
export LD_LIBRARY_PATH=$capi:/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/lib/x86_64-linux-gnu
nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$out/machine.txt"
python3 tools/gpu/export_resnet.py /tmp/resnet50.onnx /tmp/resnet50_fp16.onnx 2>&1 | tail -1

rust() { .gpu-run/gpu_bench "$@"; }
py() { PYTHONPATH=/tmp/ort-gpu python3 tools/gpu/bench_python.py "$@"; }
common=(--iterations 200 --warmup 20)

echo "== 1. batch 1, device-resident IoBinding, fp32, two rounds =="
for round in 1 2; do
  args=(/tmp/resnet50.onnx --modes iobinding --batches 1 "${common[@]}")
  if [ "$round" = 1 ]; then
    rust "${args[@]}" 2>&1 | tee "$out/b1-onnxrt-r$round.txt"
    py "${args[@]}" 2>&1 | tee "$out/b1-python-r$round.txt"
  else
    py "${args[@]}" 2>&1 | tee "$out/b1-python-r$round.txt"
    rust "${args[@]}" 2>&1 | tee "$out/b1-onnxrt-r$round.txt"
  fi
done

echo "== 2. fast path, fp16 model =="
fast=(/tmp/resnet50_fp16.onnx --modes iobinding,nhwc,fast --batches 1,128 --iterations 100 --warmup 20)
rust "${fast[@]}" 2>&1 | tee "$out/fast-onnxrt.txt"
py "${fast[@]}" 2>&1 | tee "$out/fast-python.txt"

echo "== 3. fp32 CUDA graph =="
graph=(/tmp/resnet50.onnx --modes cuda_graph --batches 1,128 --iterations 100 --warmup 20)
rust "${graph[@]}" 2>&1 | tee "$out/graph-onnxrt.txt"
py "${graph[@]}" 2>&1 | tee "$out/graph-python.txt"

echo "== table: median ms (onnxrt / Python; < 1 means onnxrt is faster) =="
python3 - "$out" <<'PY' | tee "$out/table.md"
import pathlib, sys
out = pathlib.Path(sys.argv[1])

def rows(name):
    found = {}
    path = out / name
    if not path.exists():
        return found
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 5 and parts[1].isdigit():
            found[(parts[0], int(parts[1]))] = float(parts[2])
    return found

print("| model | mode | batch | onnxrt ms | Python ms | onnxrt / Python |")
print("|---|---|---:|---:|---:|---:|")
pairs = [("fp32 r1", "b1-onnxrt-r1.txt", "b1-python-r1.txt"), ("fp32 r2", "b1-onnxrt-r2.txt", "b1-python-r2.txt"),
         ("fp16", "fast-onnxrt.txt", "fast-python.txt"), ("fp32", "graph-onnxrt.txt", "graph-python.txt")]
for label, rust, python in pairs:
    r, p = rows(rust), rows(python)
    for key in sorted(set(r) | set(p), key=lambda k: (k[1], k[0])):
        a, b = r.get(key), p.get(key)
        ratio = f"{a / b:.3f}" if a and b else "-"
        fmt = lambda v: f"{v:.3f}" if v else "-"
        print(f"| {label} | {key[0]} | {key[1]} | {fmt(a)} | {fmt(b)} | {ratio} |")
PY
