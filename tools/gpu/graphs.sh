#!/usr/bin/env bash
# CUDA graphs of several batch sizes in one session (`onnxrt::CudaGraphs`), on the GPU machine:
# the tests of tests/tests/gpu_graph_sizes.rs on ResNet-50 (interleaved sizes against a plain
# session, misuse, device memory of a session per size against one session, the batcher on one
# graph session with the MLP), then all of them on the MLP.
# Expects what tools/gpu/run.sh expects: the last bundle part unpacked (/tmp/ort-gpu) and the
# binary built here as .gpu-run/gpu_graph_sizes (tools/gpu/README.md, step 1, with
# `--test gpu_graph_sizes`). Under 3 minutes; the output is in $OUT (default /tmp/out) too.
#   bash tools/gpu/graphs.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# shellcheck source=tools/gpu/common.sh
. tools/gpu/common.sh
use_runtime
use_gpu_libraries
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
[ -f /tmp/resnet50.onnx ] || export_models
status=0
for model in resnet50 mlp; do
  echo "== gpu_graph_sizes on $model =="
  limit=40
  if [ "$model" = resnet50 ]; then export ONNXRT_GPU_RESNET=/tmp/resnet50.onnx limit=120; else unset ONNXRT_GPU_RESNET; fi
  start=$(date +%s)
  timeout $limit .gpu-run/gpu_graph_sizes --test-threads 1 --nocapture >"$out/gpu_graph_sizes-$model.log" 2>&1
  rc=$?
  echo "rc=$rc in $(($(date +%s) - start)) s"
  [ "$rc" = 0 ] || status=1
  grep -E "^test |test result|panicked|CudaGraphs:|device memory|graph memory lines|^model |one-session" "$out/gpu_graph_sizes-$model.log" | cut -c1-400 | tail -30
done
exit $status
