#!/usr/bin/env bash
# The CPU comparison of BENCHMARKS.md side by side in one run: onnxrt-serve (batching off and on),
# Triton (the tritonserver of the nvidia-pytriton wheel, onnxruntime in its Python backend through
# tools/serve/triton_onnx.py; dynamic batcher off and on), MLServer with our onnxruntime runtime
# (tools/serve/mlserver_onnx.py; adaptive batching off and on) and a FastAPI + uvicorn +
# onnxruntime anchor (tools/serve/fastapi_oip.py), all answering
# the Open Inference Protocol's REST infer with JSON tensors, on the PP-OCR cls model of the
# rapidocr_onnxruntime wheel (input x [?,3,?,?], sent as [1,3,48,192]). One client for all:
# loadgen --protocol v2. Per server: closed loop at 8 and 64 clients (its maximum = the larger
# throughput), then open loop at the same offered rate for all (SAME_RATES, requests/s), and at
# SHARES (50 % and 80 %) of the server's own maximum. Two repeats, the second in reversed order.
# `uptime` before every run. Then perf_analyzer (the tritonclient wheel's, if it runs here) once
# against serve-off and triton-off, a second client; and the latency–throughput plot per model
# (benches serve_plot) as OUT/latency-cls.svg.
#
# Prerequisites:
#   cargo build --release -p onnxrt-serve --bin serve && cargo build --release -p onnxrt-benches --bin loadgen
#   python3 -m venv /tmp/bench29-venv && /tmp/bench29-venv/bin/pip install onnxruntime==1.16.3 \
#       mlserver fastapi uvicorn rapidocr_onnxruntime "numpy<2" "pandas<2.3" "uvloop<0.22"
#   (onnxruntime 1.16.3 is built against numpy 1; MLServer needs a pandas that works with it, and
#   its inference worker crashes at start with uvloop 0.23)
#   cargo build --release -p onnxrt-benches --bin serve_plot
#   /usr/bin/python3.11 -m venv /tmp/bench45-triton-venv && /tmp/bench45-triton-venv/bin/pip install \
#       nvidia-pytriton==0.7.0 onnxruntime==1.16.3 "numpy<2" tritonclient==2.51.0 nvidia-cuda-runtime-cu12
#   (tritonclient 2.51, the server's version, is the last wheel with perf_analyzer in its bin/; that
#   binary links libcudart.so.12 even for a CPU server, which nvidia-cuda-runtime-cu12 supplies)
#   (Debian's python3.11, apt-get install python3.11 python3.11-venv libpython3.11: Triton's Python
#   backend stub loads libpython3.11.so, which a pyenv build without --enable-shared lacks)
#
#   bash tools/serve/bench-cpu.sh [OUT]       # OUT default /tmp/bench29-out
# Knobs: VENV, TRITON_VENV, BIN (default $CARGO_TARGET_DIR/release or target/release), CLOSED_REQUESTS (1500),
# OPEN_SECONDS (8: requests of an open-loop run = rate × this), SERVERS (the order of repeat 1),
# SAME_RATES (60: whole requests/s, below the slowest server's maximum; "" for none), SHARES (50 80),
# PERF_ANALYZER (1; 0 skips it).
set -uo pipefail
# Every server in its own process group (job control), so that stopping one stops its workers too.
set -m
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/bench29-out}
venv=${VENV:-/tmp/bench29-venv}
bin=${BIN:-${CARGO_TARGET_DIR:-target}/release}
closed_requests=${CLOSED_REQUESTS:-1500}
open_seconds=${OPEN_SECONDS:-8}
servers=(${SERVERS:-serve-off serve-on triton-off triton-on mlserver-off mlserver-on fastapi})
same_rates=${SAME_RATES:-60}
shares=${SHARES:-50 80}
triton_venv=${TRITON_VENV:-/tmp/bench45-triton-venv}
perf_analyzer=$(ls "$triton_venv/bin/perf_analyzer" 2>/dev/null)
cudart=$(ls -d "$triton_venv"/lib/python3*/site-packages/nvidia/cuda_runtime/lib 2>/dev/null | head -1)
max_batch=16
max_delay_us=1000
model=$(ls "$venv"/lib/python3*/site-packages/rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx 2>/dev/null | head -1)
needs=("$bin/serve" "$bin/loadgen" "$model")
case " ${servers[*]} " in *" mlserver-"*) needs+=("$venv/bin/mlserver");; esac
case " ${servers[*]} " in *" fastapi "*) needs+=("$venv/bin/uvicorn");; esac
case " ${servers[*]} " in *" triton-"*) needs+=("$triton_venv/bin/python");; esac
for need in "${needs[@]}"; do
  [ -e "$need" ] || { echo "missing: ${need:-the cls model in $venv} (see the prerequisites at the top of $0)" >&2; exit 2; }
done
mkdir -p "$out/raw" "$out/logs"
work=$(mktemp -d /tmp/bench29-work.XXXXXX)
results="$out/results.txt"
: >"$results"
{ echo "date: $(date -u +%FT%TZ)"; echo "cpus: $(nproc)"; grep -m1 'model name' /proc/cpuinfo; echo "model: $model";
  echo "onnxruntime (python): $("$venv/bin/python" -c 'import onnxruntime; print(onnxruntime.__version__)')";
  echo "mlserver: $("$venv/bin/python" -c 'import mlserver; print(mlserver.__version__)')";
  echo "fastapi: $("$venv/bin/python" -c 'import fastapi; print(fastapi.__version__)')";
  echo "uvicorn: $("$venv/bin/python" -c 'import uvicorn; print(uvicorn.__version__)')";
  echo "pytriton: $("$triton_venv/bin/python" -c 'import importlib.metadata as m; print(m.version("nvidia-pytriton"))' 2>&1 | tail -1)";
  echo "onnxruntime (triton's python): $("$triton_venv/bin/python" -c 'import onnxruntime; print(onnxruntime.__version__)' 2>&1 | tail -1)";
  echo "onnxrt-serve: commit $(git -C "$here" rev-parse --short HEAD), release build in $bin"; } >"$out/machine.txt"
cat "$out/machine.txt"

provider=cpu
mlserver_cmd="$venv/bin/mlserver"
uvicorn_cmd="$venv/bin/uvicorn"
triton_python="$triton_venv/bin/python"
perf_libs=$cudart
raw_prefix=""
# shellcheck source=tools/serve/bench-servers.sh
. "$here/bench-servers.sh"
use_model cls "$model" x=1x3x48x192 || exit 1

for server in "${servers[@]}"; do run_server 1 "$server"; done
for ((i = ${#servers[@]} - 1; i >= 0; i--)); do run_server 2 "${servers[i]}"; done
if [ "${PERF_ANALYZER:-1}" = 1 ] && [ -n "$perf_analyzer" ]; then
  for server in serve-off triton-off; do perf_run "$server"; done
fi
rm -rf "$work"
# Triton's version, from its start-up table.
cat "$out"/logs/*triton*.log 2>/dev/null | grep -m1 -o 'server_version *| [0-9.]*' | sed 's/ *| / /; s/^/tritonserver: /' >>"$out/machine.txt"
"$venv/bin/python" "$here/bench_summary.py" "$results" | tee "$out/summary.md"
[ -x "$bin/serve_plot" ] && "$bin/serve_plot" "$results" "$out"
