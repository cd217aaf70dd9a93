#!/usr/bin/env bash
# Everything the GPU machine runs, in one call (device time is scarce). Expects the last bundle part
# already unpacked (/tmp/ort-gpu) and the binaries built here in .gpu-run/ (see tools/gpu/README.md).
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
capi=/tmp/ort-gpu/onnxruntime/capi
export ONNXRT_DYLIB_PATH=$capi/libonnxruntime.so.1.30.0
export ONNXRT_TEST_MODELS=$PWD/tests/data/models
nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv | tee "$out/doctor.txt"

echo "== doctor, as a user's shell has it (no LD_LIBRARY_PATH) =="
.gpu-run/onnxrt doctor --dist gpu-cuda13-1.30.0-wheel 2>&1 | tee -a "$out/doctor.txt"; echo "doctor exit ${PIPESTATUS[0]}" | tee -a "$out/doctor.txt"

export LD_LIBRARY_PATH=$capi:/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/lib/x86_64-linux-gnu
python3 tools/gpu/export_resnet.py /tmp/resnet50.onnx /tmp/resnet50_fp16.onnx 2>&1 | tail -1

echo "== GPU tests =="
ONNXRT_GPU_RESNET=/tmp/resnet50.onnx .gpu-run/gpu --test-threads 1 --nocapture 2>&1 | tee "$out/gpu-tests.log"

echo "== example and CLI, strict GPU =="
.gpu-run/resnet_cuda --model /tmp/resnet50.onnx --batch 8 --iterations 50 --strict 2>&1 | tee "$out/example.log"
python3 -c "import numpy as np; np.save('/tmp/x.npy', np.random.RandomState(0).rand(4,3,224,224).astype(np.float32))"
.gpu-run/onnxrt run /tmp/resnet50.onnx --input input=/tmp/x.npy --provider cuda --strict --repeat 20 2>&1 | tee -a "$out/example.log"

echo "== benchmarks, fp32, onnxrt and Python alternating twice (same runtime, same call) =="
for round in 1 2; do
  .gpu-run/gpu_bench /tmp/resnet50.onnx --batches 1,128 2>&1 | tee "$out/bench-rust-r$round.txt"
  PYTHONPATH=/tmp/ort-gpu python3 tools/gpu/bench_python.py /tmp/resnet50.onnx --batches 1,128 2>&1 | tee "$out/bench-python-r$round.txt"
done
