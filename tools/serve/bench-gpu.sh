#!/usr/bin/env bash
# The GPU comparison of BENCHMARKS.md in one device call: onnxrt-serve (batching off and on),
# Triton (the nvidia-pytriton wheel's tritonserver, onnxruntime-gpu in its Python backend), MLServer
# and FastAPI (tools/serve/mlserver_onnx.py, fastapi_oip.py), every one on ONNX Runtime 1.30.0's CUDA
# provider, driven by the same clients as bench-cpu.sh (tools/serve/bench-servers.sh: loadgen
# closed loop at 8 and 64 clients, open loop at SAME_RATES and at SHARES of each server's own
# maximum; perf_analyzer against serve-off and triton-off in the same start). Models: the PP-OCR
# cls model ([1,3,48,192] JSON requests) and, when MODELS names it, torchvision's ResNet-50
# ([1,3,224,224]; exported there by tools/gpu/export_resnet.py). One repeat per server; runs past
# BUDGET_S seconds are skipped (and said so), so that the call ends inside the device's 10 minutes.
#
# On the device, after the ORT bundle (.gpu-bundle/p0..p3) and the Python kit (.gpu-bundle/py0..,
# tools/gpu/python-kit.sh) are unpacked (tools/gpu/README.md, "The server comparison"):
#   export OUT && bash tools/serve/bench-gpu.sh     # results in $OUT (at most 8 files come back)
# Here, as a dry run with every server on the CPU (the kit's venv or the bench-cpu.sh venvs):
#   PROVIDER=cpu PYENV=/tmp/bench29-venv TRITON_PYTHON=/tmp/bench45-triton-venv/bin/python \
#     BIN=target/release MODELS=cls CLOSED_REQUESTS=50 OPEN_SECONDS=1 bash tools/serve/bench-gpu.sh
# Knobs: OUT (/tmp/out), PROVIDER (cuda), BIN (.gpu-run/bench45: serve, loadgen, serve_plot, the cls
# model), PYENV (/tmp/pyenv: mlserver, uvicorn, perf_analyzer), PERF_LIBS (/tmp/pykit/lib),
# TRITON_PYTHON ($PYENV/bin/python), MODELS ("cls resnet50"), SERVERS, CLOSED_REQUESTS (cls 1000,
# resnet50 200), OPEN_SECONDS (3), SAME_RATES_CLS (150), SAME_RATES_RESNET50 (20), SHARES (50 80),
# MAX_BATCH (16), MAX_DELAY_US (1000), PERF_ANALYZER (1), PERF_REQUESTS (300), PERF_TIMEOUT (60 s),
# BUDGET_S (450: no server starts later, so that the last one, perf_analyzer included, ends inside
# 10 minutes), RESNET_MODEL (/tmp/resnet50.onnx, made by tools/gpu/common.sh's export_models).
set -uo pipefail
set -m
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.." || exit 1
# The runtime's place and use_runtime, use_gpu_libraries, export_models; its $out is what comes back.
# shellcheck source=tools/gpu/common.sh
. tools/gpu/common.sh
final_out=$out
out=$(mktemp -d /tmp/bench-gpu.XXXXXX)
work=$out/work
provider=${PROVIDER:-cuda}
bin=${BIN:-.gpu-run/bench45}
pyenv=${PYENV:-/tmp/pyenv}
triton_python=${TRITON_PYTHON:-$pyenv/bin/python}
models=${MODELS:-cls resnet50}
servers=(${SERVERS:-serve-off serve-on triton-off triton-on mlserver-off mlserver-on fastapi})
open_seconds=${OPEN_SECONDS:-3}
shares=${SHARES:-50 80}
max_batch=${MAX_BATCH:-16}
max_delay_us=${MAX_DELAY_US:-1000}
budget_s=${BUDGET_S:-450}
mlserver_cmd="$pyenv/bin/mlserver"
uvicorn_cmd="$pyenv/bin/uvicorn"
perf_analyzer=$pyenv/bin/perf_analyzer
perf_libs=${PERF_LIBS:-${PYKIT_STORE:-/tmp/pykit}/lib}
raw_prefix=""
results="$out/results.txt"
mkdir -p "$out/raw" "$out/logs" "$work"
: >"$results"
PERF_REQUESTS=${PERF_REQUESTS:-300}
PERF_TIMEOUT=${PERF_TIMEOUT:-60}
export PERF_REQUESTS PERF_TIMEOUT

# Triton's Python backend stub loads the interpreter's libpython (libpython3.12.so.1.0 there).
pylib=$("$triton_python" - <<'PY' 2>/dev/null
import os, sysconfig
v = sysconfig.get_config_var
name = f"libpython{v('py_version_short')}.so.1.0"
dirs = [v("LIBDIR"), os.path.join(v("LIBDIR") or "", v("MULTIARCH") or ""), v("LIBPL")]
print(next((d for d in dirs if d and os.path.exists(os.path.join(d, name))), ""))
PY
)
if [ "$provider" = cuda ]; then
  [ -e "$capi/libonnxruntime.so.1.30.0" ] || { echo "no ORT bundle in /tmp/ort-gpu: unpack .gpu-bundle/p0..p3 first" >&2; exit 2; }
  use_runtime
  use_gpu_libraries
  LD_LIBRARY_PATH=$LD_LIBRARY_PATH${pylib:+:$pylib}
  export PYTHONPATH=/tmp/ort-gpu
  perf_analyzer_here=$perf_analyzer
else
  # The dry run: a CPU runtime for serve if ONNXRT_DYLIB_PATH is set by the caller; Triton's client
  # from the bench-cpu.sh venv, with its cudart.
  perf_analyzer_here=$(ls "$perf_analyzer" "$(dirname "$triton_python")/perf_analyzer" 2>/dev/null | head -1)
  [ -d "$perf_libs" ] || perf_libs=$(ls -d "$(dirname "$triton_python")"/../lib/python3*/site-packages/nvidia/cuda_runtime/lib 2>/dev/null | head -1)
fi
perf_analyzer=$perf_analyzer_here

# The Python kit's checks: what each server imports, and which onnxruntime it gets.
{ echo "date: $(date -u +%FT%TZ)"; echo "cpus: $(nproc)"; grep -m1 'model name' /proc/cpuinfo; echo "provider: $provider"
  nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader 2>/dev/null | sed 's/^/gpu (before any server): /'
  "$pyenv/bin/python" - <<'PY' 2>&1
import importlib.metadata as m
# (onnxruntime-gpu from /tmp/ort-gpu has no metadata: the import below says which one runs)
for package in ["numpy", "mlserver", "fastapi", "uvicorn", "nvidia-pytriton", "tritonclient"]:
    try:
        print(f"{package}: {m.version(package)}")
    except m.PackageNotFoundError:
        pass
import onnxruntime
print(f"onnxruntime imported from {onnxruntime.__file__}: {onnxruntime.__version__}, providers {onnxruntime.get_available_providers()}")
PY
  echo "libpython for Triton's stub: ${pylib:-not beside the interpreter}; ldconfig: $(ldconfig -p 2>/dev/null | grep -o '/[^ ]*libpython3[^ ]*' | tr '\n' ' ')"
  echo "onnxrt-serve: commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), binaries in $bin"; } >"$out/machine.txt"
cat "$out/machine.txt"

# after_start SERVER LOG (the hook of bench-servers.sh's start): the evidence that the server runs
# where it should: its log's provider line (serve's "model ready", ours "providers [...]"), and on
# the GPU the compute processes of its process group and the device memory in use.
after_start() {
  local server=$1 log=$2 pids="" line p
  {
    echo "== $server ($name): $(grep -m1 -o -E "provider[s]?[ =:][^,]*(,[^,]*)?" "$log" | head -1)"
    if [ "$provider" = cuda ]; then
      while IFS=, read -r p line; do
        [ -n "$p" ] || continue
        [ "$(ps -o pgid= -p "$p" 2>/dev/null | tr -d ' ')" = "$pid" ] && pids="$pids $p($line)"
      done < <(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader 2>/dev/null)
      echo "   GPU processes of its group:${pids:- none listed (nvidia-smi may not see processes here)}; device memory used: $(nvidia-smi --query-gpu=memory.used --format=csv,noheader 2>/dev/null)"
    fi
  } | tee -a "$out/gpu-check.txt"
}

# shellcheck source=tools/serve/bench-servers.sh
. "$here/bench-servers.sh"

for model_key in $models; do
  case $model_key in
    cls)
      path=$(ls "$bin/ch_ppocr_mobile_v2.0_cls_infer.onnx" "$pyenv"/lib/python3*/site-packages/rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx 2>/dev/null | head -1)
      shape=x=1x3x48x192; closed_requests=${CLOSED_REQUESTS:-1000}; same_rates=${SAME_RATES_CLS:-150}
      ;;
    resnet50)
      path=${RESNET_MODEL:-/tmp/resnet50.onnx}
      [ -f "$path" ] || [ -n "${RESNET_MODEL:-}" ] || export_models
      shape=input=1x3x224x224; closed_requests=${CLOSED_REQUESTS:-200}; same_rates=${SAME_RATES_RESNET50:-20}
      ;;
    *) echo "unknown model $model_key (cls, resnet50)" >&2; continue ;;
  esac
  [ -f "$path" ] || { echo "model $model_key: no file (${path:-cls: put it in $bin})" >&2; continue; }
  raw_prefix="$model_key-"
  use_model "$model_key" "$path" "$shape" || continue
  perf_inline=""; [ "${PERF_ANALYZER:-1}" = 1 ] && [ -x "$perf_analyzer" ] && perf_inline="serve-off triton-off"
  for server in "${servers[@]}"; do
    if [ "$SECONDS" -ge "$budget_s" ]; then
      echo "budget: ${SECONDS}s >= BUDGET_S=${budget_s}s, $server ($name) skipped" | tee -a "$out/gpu-check.txt"
      continue
    fi
    run_server 1 "$server"
  done
done

cat "$out"/logs/*triton*.log 2>/dev/null | grep -m1 -o 'server_version *| [0-9.]*' | sed 's/ *| / /; s/^/tritonserver: /' >>"$out/machine.txt"
for model_key in $models; do
  grep " model=$model_key " "$results" >"$out/results-$model_key.txt"
  [ -s "$out/results-$model_key.txt" ] || continue
  { echo "### $model_key ($provider)"; python3 "$here/bench_summary.py" "$out/results-$model_key.txt"; echo; } | tee -a "$out/summary.md"
done
cat "$out/perf_analyzer/summary.txt" 2>/dev/null | tee -a "$out/summary.md"
[ -x "$bin/serve_plot" ] && "$bin/serve_plot" "$results" "$out"
echo "== where each server ran =="; cat "$out/gpu-check.txt" 2>/dev/null
# At most 8 files come back from the device: the tables, the plots, the checks, and the rest in one archive.
rm -rf "$work"
tar -C "$out" -czf "$final_out/bench-gpu-raw.tar.gz" raw logs perf_analyzer results-*.txt 2>/dev/null
cp "$out"/results.txt "$out"/summary.md "$out"/machine.txt "$out"/latency-*.svg "$out"/gpu-check.txt "$final_out"/ 2>/dev/null
echo "== in $final_out: $(cd "$final_out" && ls | tr '\n' ' ')"
rm -rf "$out"
