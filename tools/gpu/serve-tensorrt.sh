#!/usr/bin/env bash
# `serve` with TensorRT named in a model's config, on the GPU machine (after the CUDA bundle's
# last part): the bundle has ORT's TensorRT provider library but not TensorRT itself, so that
# model must be refused with the missing library named, its engine-cache folder left unmade,
# and a CUDA model beside it must answer. Binary: .gpu-run/bench45/serve_trt (`--features tensorrt`).
set -u
cd "$(dirname "$0")/../.."
source tools/gpu/common.sh
use_runtime; use_gpu_libraries
repo=/tmp/trt-repo cache=/tmp/trt-cache
rm -rf "$repo" "$cache"; mkdir -p "$repo/trt" "$repo/cuda"
cp tests/data/models/mlp.onnx "$repo/trt/model.onnx"; cp tests/data/models/mlp.onnx "$repo/cuda/model.onnx"
echo '{"provider": "tensorrt", "provider_options": {"trt_fp16_enable": true}}' >"$repo/trt/config.json"
echo '{"provider": "cuda"}' >"$repo/cuda/config.json"
.gpu-run/bench45/serve_trt --model-repository "$repo" --listen 127.0.0.1:18100 --grpc-listen off \
  --engine-cache-root "$cache" >"$out/serve-tensorrt.log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -sf 127.0.0.1:18100/v2/health/live >/dev/null && break; sleep 0.2; done
for _ in $(seq 100); do curl -s 127.0.0.1:18100/v2/models/cuda/ready -o /dev/null -w '%{http_code}' | grep -q 200 && break; sleep 0.2; done
echo "trt ready: $(curl -s -w ' %{http_code}' 127.0.0.1:18100/v2/models/trt/ready)"
echo "cuda ready: $(curl -s -w ' %{http_code}' 127.0.0.1:18100/v2/models/cuda/ready)"
python3 - <<'PY'
import json, urllib.request
base = "http://127.0.0.1:18100/v2/models/cuda"
meta = json.load(urllib.request.urlopen(base))
x = meta["inputs"][0]
shape = [d if d > 0 else 1 for d in x["shape"]]
n = 1
for d in shape:
    n *= d
body = json.dumps({"inputs": [{"name": x["name"], "shape": shape, "datatype": x["datatype"], "data": [0.5] * n}]}).encode()
answer = urllib.request.urlopen(urllib.request.Request(base + "/infer", body, {"content-type": "application/json"}))
print("cuda infer:", answer.status, answer.read()[:160].decode())
PY
echo "cache folder made: $(find "$cache" 2>/dev/null | head -5 | tr '\n' ' ')"
kill "$pid"; wait "$pid" 2>/dev/null
grep -iE 'trt|tensorrt|nvinfer|unavailable|ready' "$out/serve-tensorrt.log" | cut -c1-600 | head -12
