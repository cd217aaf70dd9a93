#!/usr/bin/env bash
# Issue 14 on the GPU machine: where a batched run's time goes, without HTTP.
#   1. gpu_bench on ResNet-50 fp32: device-resident IoBinding, host input/output through a fresh
#      IoBinding per run (what the batcher's worker does) and plain `run`, at batch 1..128, each
#      size in its own session, then `--mixed`: the sizes in rotation in one session;
#   2. batch_bench --provider cuda: the batcher in-process against per-request runs, 1..256 callers.
# Prerequisites as for serve14.sh (bundle unpacked in /tmp/ort-gpu; gpu_bench and batch_bench
# built with ONNXRT_DIST=gpu-cuda13-1.30.0-wheel --features cuda, copied to .gpu-run/).
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
bin=${BIN:-.gpu-run}
model=${MODEL:-/tmp/resnet50.onnx}
capi=/tmp/ort-gpu/onnxruntime/capi
export ONNXRT_DYLIB_PATH=$capi/libonnxruntime.so.1.30.0
export LD_LIBRARY_PATH=$capi:/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/lib/x86_64-linux-gnu
[ -f "$model" ] || python3 tools/gpu/export_resnet.py /tmp/resnet50.onnx /tmp/resnet50_fp16.onnx 2>&1 | tail -1
if [ "${SKIP_GPU_BENCH:-0}" != 1 ]; then
  echo "== gpu_bench: per batch size, per feeding mode =="
  "$bin/gpu_bench" "$model" --modes iobinding,host_binding,run --batches ${BATCHES:-1,8,32,64,128} \
    --iterations 30 --warmup 5 --mixed 2>&1 | tee "$out/gpu_bench.txt"
fi
echo "== batch_bench: batcher in-process vs per-request runs =="
# One session for every batch size, then a session per size (BatcherBuilder::session_per_batch_size).
for extra in "" "--session-per-size"; do
  echo "-- batch_bench ${extra:-(one session)}"
  "$bin/batch_bench" --provider cuda --model "$model" --pad --max-batch 128 --workers ${WORKERS:-2} $extra \
    --concurrency ${CONCURRENCY:-1,8,64,256} --seconds ${SECONDS_PER_RUN:-3} --rounds 1 2>&1 | tee -a "$out/batch_bench.txt"
done
