#!/usr/bin/env bash
# A shorter device call than run-all.sh: the GPU tests and a short fp16 benchmark pair (same
# prerequisites: last bundle part unpacked, binaries in .gpu-run/).
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
capi=/tmp/ort-gpu/onnxruntime/capi
export ONNXRT_DYLIB_PATH=$capi/libonnxruntime.so.1.30.0 ONNXRT_TEST_MODELS=$PWD/tests/data/models
export LD_LIBRARY_PATH=$capi:/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/lib/x86_64-linux-gnu
python3 tools/gpu/export_resnet.py /tmp/resnet50.onnx /tmp/resnet50_fp16.onnx 2>&1 | tail -1
ONNXRT_GPU_RESNET=/tmp/resnet50.onnx .gpu-run/gpu --test-threads 1 --nocapture 2>&1 | tee "$out/gpu-tests.log"
.gpu-run/gpu_bench /tmp/resnet50_fp16.onnx --batches 1,128 2>&1 | tee "$out/bench-rust-fp16.txt"
PYTHONPATH=/tmp/ort-gpu python3 tools/gpu/bench_python.py /tmp/resnet50_fp16.onnx --batches 1,128 2>&1 | tee "$out/bench-python-fp16.txt"
