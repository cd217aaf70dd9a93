#!/usr/bin/env bash
# CUDA shared memory on the GPU machine, without the CUDA bundle (the tensors cross process
# boundaries on the GPU; the model itself runs on ORT's CPU library, carried in .gpu-run/shm):
#   1. onnxrt's IPC types across two processes (`cuda_ipc`), then again under compute-sanitizer;
#   2. serve's CUDA extension from another process (`cuda_shared_memory`, ONNXRT_REQUIRE_GPU=1);
#   3. stock tritonclient (check_cuda_shared_memory.py) where the Python kit is in /tmp/pyenv;
#   4. SHM_ATTACKS, a command (an outside reviewer's attacks), its lines in $OUT/attacks.txt.
# Built here: tools/gpu/README.md ("CUDA shared memory"). Prints one summary line per step.
set -u
cd "$(dirname "$0")/../.."
source tools/gpu/common.sh
kit=.gpu-run/shm
[ -f /tmp/shm-ort/libonnxruntime.so.1.16.2 ] || { mkdir -p /tmp/shm-ort && xz -dc $kit/libonnxruntime.so.1.16.2.xz >/tmp/shm-ort/libonnxruntime.so.1.16.2; }
export ONNXRT_DYLIB_PATH=/tmp/shm-ort/libonnxruntime.so.1.16.2
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/lib/x86_64-linux-gnu
export ONNXRT_SERVE_BIN=$PWD/$kit/serve ONNXRT_REQUIRE_GPU=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

echo "== cuda_ipc"
$kit/cuda_ipc --test-threads 1 2>&1 | tail -12 | tee "$out/cuda_ipc.txt"
sanitizer=$(ls /usr/local/cuda-13.0/bin/compute-sanitizer 2>/dev/null)
if [ -n "$sanitizer" ]; then
  # The tests make CUDA refuse calls on purpose (garbage, own and freed handles, a missing
  # device): those are API errors, listed apart from memory errors, which must be none.
  echo "== cuda_ipc under compute-sanitizer (memcheck)"
  "$sanitizer" --tool memcheck --target-processes all $kit/cuda_ipc --test-threads 1 >"$out/cuda_ipc_sanitizer.txt" 2>&1
  echo "compute-sanitizer rc=$?"
  grep -E 'test result|ERROR SUMMARY' "$out/cuda_ipc_sanitizer.txt"
  echo "API errors (refused on purpose):"; grep -o 'Program hit [^ ]* ([^)]*) on CUDA API call to [A-Za-z_]*' "$out/cuda_ipc_sanitizer.txt" | sort | uniq -c
  echo "memory errors:"; grep -cE 'Invalid (__global__|__shared__|__local__)|Address .* is out of bounds|Leaked' "$out/cuda_ipc_sanitizer.txt"
else
  echo "no compute-sanitizer in /usr/local/cuda-13.0/bin"
fi

echo "== serve: cuda_shared_memory"
$kit/cuda_shared_memory --test-threads 1 --nocapture 2>&1 | grep -v 'WARN onnxrt_serve' | tail -12 | tee "$out/cuda_shared_memory.txt"

echo "== tritonclient: check_cuda_shared_memory.py"
SERVE=$kit/serve bash tools/gpu/shm-tritonclient.sh

if [ -n "${SHM_ATTACKS:-}" ]; then
  echo "== attacks: $SHM_ATTACKS"
  timeout 300 bash -c "$SHM_ATTACKS" >"$out/attacks.txt" 2>&1
  echo "attacks rc=$?"; grep -E 'BROKEN|SUMMARY|exit|signal|SIGSEGV' "$out/attacks.txt" | tail -40
fi
