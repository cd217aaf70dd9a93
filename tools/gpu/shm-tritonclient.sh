#!/usr/bin/env bash
# Stock tritonclient's CUDA shared-memory utilities (check_cuda_shared_memory.py, with the
# cuda-python of the Python kit in /tmp/pyenv) against `serve --cuda-shared-memory true` on the
# add model. SERVE names the binary (default .gpu-run/shm/serve); the runtime is whatever the
# caller set up (tools/gpu/shm.sh: ORT 1.16.2's CPU library; after the CUDA bundle:
# `source tools/gpu/common.sh; use_runtime; use_gpu_libraries`). Output in $OUT.
set -u
cd "$(dirname "$0")/../.."
source tools/gpu/common.sh
serve=${SERVE:-.gpu-run/shm/serve}
[ -x /tmp/pyenv/bin/python ] || { echo "no /tmp/pyenv: the tritonclient check did not run"; exit 2; }
# tritonclient 2.51 imports cuda-python 12's `cuda.cudart`: carried as wheels (cuda-bindings 12.9,
# cuda-pathfinder 1.4 or later: 1.1.0 knows no driver library, KeyError 'cuda'; nvidia-cuda-runtime-cu12,
# whose libcudart.so.12 the driver runs) in .gpu-run/cudapy.
ls .gpu-run/cudapy/*.whl >/dev/null 2>&1 && /tmp/pyenv/bin/python -m pip install -q --no-deps --no-index .gpu-run/cudapy/*.whl 2>&1 | tail -2
repo=/tmp/shm-repo && rm -rf $repo && mkdir -p $repo/add && cp tests/data/models/add_f32.onnx $repo/add/model.onnx
"$serve" --model-repository $repo --listen 127.0.0.1:18000 --grpc-listen 127.0.0.1:18001 --cuda-shared-memory true >"$out/shm-serve.log" 2>&1 &
pid=$!
for _ in $(seq 50); do curl -sf 127.0.0.1:18000/v2/health/ready >/dev/null && break; sleep 0.2; done
(cd onnxrt-serve/tests/clients && /tmp/pyenv/bin/python check_cuda_shared_memory.py --http 127.0.0.1:18000 --grpc 127.0.0.1:18001 --model add) 2>&1 | tail -30 | tee "$out/check_cuda_shared_memory.txt"
rc=${PIPESTATUS[0]}
kill $pid; wait $pid 2>/dev/null
grep -vE 'access:' "$out/shm-serve.log" | cut -c1-240 | head -8
exit "$rc"
