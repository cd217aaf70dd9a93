#!/usr/bin/env bash
# Why `serve` with batching on answered the cls model slowly on CUDA (bench-gpu.sh, 2026-12-07:
# 6 req/s at 8 clients, against 1,174 unbatched): the same model under one switch changed at a
# time, 8 clients x 200 requests each, one loadgen line per variant. After the CUDA bundle.
set -u
cd "$(dirname "$0")/../.."
source tools/gpu/common.sh
use_runtime; use_gpu_libraries
bin=.gpu-run/bench45 repo=/tmp/diag-repo
rm -rf "$repo"
warm='"warmup": {"x": [1, 3, 48, 192]}'
# 2026-12-07, first call: `on` and `nodev` (old defaults: one session, unpadded) answered in
# about 2 s a request, `off` at 890 req/s. Cause: ORT 1.30's CUDA convolutions keep a plan for
# the last input shape only, and rebuild every plan when the batch size changes. Now batched CUDA
# models pad to powers of two, each size on its CUDA graph or its own session (config.rs,
# `cuda_batch_shapes`). `old` repeats the old defaults (one short round: it is slow).
old='"batching": true, "max_batch": 16, "max_delay_us": 1000, "pad_to_power_of_two": false, "session_per_batch_size": false'
declare -A variants=(
  [off]='"batching": false'
  [on]='"batching": true, "max_batch": 16, "max_delay_us": 1000'
  [old]="$old"
  [sessions]='"batching": true, "max_batch": 16, "max_delay_us": 1000, "cuda_graphs": false'
  [heur]="$old"', "provider_options": {"cudnn_conv_algo_search": "HEURISTIC"}'
  [full]='"batching": true, "max_batch": 8, "max_delay_us": 50000, "pad_to_power_of_two": false, "session_per_batch_size": false, "hold_while_busy": false'
)
for v in "${!variants[@]}"; do
  mkdir -p "$repo/$v"; cp "$bin/"*cls*.onnx "$repo/$v/model.onnx"
  echo "{\"provider\": \"cuda\", ${variants[$v]}, $warm}" >"$repo/$v/config.json"
done
"$bin/serve" --model-repository "$repo" --listen 127.0.0.1:18200 --grpc-listen off >"$out/diag-serve.log" 2>&1 &
pid=$!
for _ in $(seq 300); do [ "$(curl -s -o /dev/null -w '%{http_code}' 127.0.0.1:18200/v2/health/ready)" = 200 ] && break; sleep 0.2; done
# Per variant: clients, requests (few where slow: `c1` is `old` at one client, a batch of one
# every time, which tells a per-run cost from a cost of changing sizes).
run() { # variant model clients requests
  echo "$1: $(timeout 60 "$bin/loadgen" --protocol v2 --addr 127.0.0.1:18200 --model "$2" --shape x=1x3x48x192 --concurrency "$3" --requests "$4" 2>&1 | tail -1)"
  curl -s 127.0.0.1:18200/metrics | grep -E "^batcher_((queue|run|gather|model|device_wait)_seconds_(sum|count)|batches_total|graph_runs_total)\{model=\"$2\"" | tr '\n' ' '; echo
}
run off off 8 200
run on on 8 96
run on-again on 8 96
run sessions sessions 8 96
run old old 8 16
# QUICK=1 (little device time left): the defaults against the old defaults only.
if [ -z "${QUICK:-}" ]; then
  run c1 old 1 4
  run full full 8 48
  run heur heur 8 48
fi
# Where a batch's time went: queue (waiting for a batch), gather, model (the ORT run), device wait.
kill "$pid"; wait "$pid" 2>/dev/null
grep -vE 'access:' "$out/diag-serve.log" | cut -c1-300 | head -20
