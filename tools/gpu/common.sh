# shellcheck shell=bash
# What tools/gpu/run.sh and tools/gpu/graphs.sh share on the GPU machine, sourced from the
# repository root: where results go ($OUT, default /tmp/out), where the unpacked bundle's runtime
# is, and the functions that point onnxrt (and the wheel's provider libraries) at it.
out=${OUT:-/tmp/out}
mkdir -p "$out"
capi=/tmp/ort-gpu/onnxruntime/capi
export ONNXRT_TEST_MODELS=$PWD/tests/data/models

use_runtime() { export ONNXRT_DYLIB_PATH=$capi/libonnxruntime.so.1.30.0; }
# The wheel's provider libraries find cuDNN and cuBLAS only through LD_LIBRARY_PATH there.
use_gpu_libraries() { export LD_LIBRARY_PATH=$capi:/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/lib/x86_64-linux-gnu; }
# ResNet-50 fp32 and fp16 (torchvision, random weights, opset 17, dynamic batch).
export_models() { python3 tools/gpu/export_resnet.py /tmp/resnet50.onnx /tmp/resnet50_fp16.onnx 2>&1 | tail -1; }
