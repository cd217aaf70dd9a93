#!/usr/bin/env bash
# Outside review of issue 45 on the GPU machine: serve's CUDA shared-memory extension against
# device memory of real other processes, then the onnxrt CUDA IPC attacks.
# usage: bash probe/serve_cuda_attacks.sh SERVE_BINARY ATTACK_TEST_BINARY [MODEL_ONNX]
#   SERVE_BINARY: target/.../serve built with --features cuda
#   ATTACK_TEST_BINARY: the cuda_ipc_attacks test binary (tests/tests/cuda_ipc_attacks.rs, --features gpu-tests)
# Prints `ATTACK name: outcome` lines; `<-- BROKEN` / `BROKEN:` mark findings; ends with SUMMARY lines.
set -u
serve=${1:?serve binary}; helper=${2:?cuda_ipc_attacks test binary}
model=${3:-tests/data/models/add_f32.onnx}
here=$(cd "$(dirname "$0")" && pwd)
echo "== serve attacks (REST, bounded; ~1-2 min)"
timeout 150 python3 "$here/serve_cuda_attacks.py" "$serve" "$helper" "$model"
echo "serve attacks exit: $? (124 = hung past 150 s: BROKEN)"
echo "== onnxrt CUDA IPC attacks (test binary)"
timeout 80 "$helper" --test-threads 1 --nocapture 2>&1 | grep -E 'ATTACK|BROKEN|panicked|^test |test result|signal|SIGSEGV'
echo "attack tests exit: ${PIPESTATUS[0]} (0 = all passed; 124 = hung; 101 = a test failed: see BROKEN lines)"
