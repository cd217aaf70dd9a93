#!/usr/bin/env bash
# Everything the GPU machine runs, in one call (device time is scarce). Expects the last bundle part
# already unpacked (/tmp/ort-gpu) and the binaries built here in .gpu-run/ (see tools/gpu/README.md).
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
capi=/tmp/ort-gpu/onnxruntime/capi
export ONNXRT_DYLIB_PATH=$capi/libonnxruntime.so.1.30.0
export ONNXRT_TEST_MODELS=$PWD/tests/data/models
nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv | tee "$out/gpu.txt"

echo "== without the CUDA libraries on the loader path (the diagnosis a user sees) =="
.gpu-run/resnet_cuda --strict 2>&1 | tee "$out/no-cuda-path.log"

export LD_LIBRARY_PATH=$capi:/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/lib/x86_64-linux-gnu
python3 tools/gpu/export_resnet.py /tmp/resnet50.onnx /tmp/resnet50_fp16.onnx 2>&1 | tail -1

echo "== GPU tests =="
ONNXRT_GPU_RESNET=/tmp/resnet50.onnx .gpu-run/gpu --test-threads 1 --nocapture 2>&1 | tee "$out/gpu-tests.log"

echo "== example, embedded model, strict GPU =="
.gpu-run/resnet_cuda --strict 2>&1 | tee "$out/example.log"
echo "== example, ResNet-50, batch 8 =="
.gpu-run/resnet_cuda --model /tmp/resnet50.onnx --batch 8 --iterations 50 --strict 2>&1 | tee -a "$out/example.log"

echo "== benchmarks: onnxrt then Python, same runtime, same machine, one call =="
for m in resnet50 resnet50_fp16; do
  .gpu-run/gpu_bench /tmp/$m.onnx 2>&1 | tee "$out/bench-rust-$m.txt"
  PYTHONPATH=/tmp/ort-gpu python3 tools/gpu/bench_python.py /tmp/$m.onnx 2>&1 | tee "$out/bench-python-$m.txt"
done
