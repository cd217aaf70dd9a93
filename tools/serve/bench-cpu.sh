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

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# The model folders. onnxrt-serve: NAME/model.onnx (+ config.json); MLServer: a settings.json and
# NAME/model-settings.json naming our runtime.
for batching in off on; do
  mkdir -p "$work/serve-$batching/cls" "$work/mlserver-$batching/cls"
  cp "$model" "$work/serve-$batching/cls/model.onnx"
  cp "$model" "$work/mlserver-$batching/cls/model.onnx"
done
# The warm-up shape: serve warms up on free axes of size 1, which this model's pooling refuses.
warmup='"warmup": {"x": [1, 3, 48, 192]}'
echo "{$warmup}" >"$work/serve-off/cls/config.json"
echo "{\"batching\": true, \"max_batch\": $max_batch, \"max_delay_us\": $max_delay_us, $warmup}" >"$work/serve-on/cls/config.json"
inputs='"inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 3, -1, -1]}]'
echo "{\"name\": \"cls\", \"implementation\": \"mlserver_onnx.OnnxModel\", \"parameters\": {\"uri\": \"./model.onnx\"}, $inputs}" \
  >"$work/mlserver-off/cls/model-settings.json"
echo "{\"name\": \"cls\", \"implementation\": \"mlserver_onnx.OnnxModel\", \"parameters\": {\"uri\": \"./model.onnx\"}, \"max_batch_size\": $max_batch, \"max_batch_time\": $(python3 -c "print($max_delay_us / 1e6)"), $inputs}" \
  >"$work/mlserver-on/cls/model-settings.json"

# start SERVER LOG: starts it (its own process group: set -m); sets pid and address, or returns 1.
start() {
  local server=$1 log=$2 port
  port=$(free_port)
  address=127.0.0.1:$port
  case $server in
    serve-*)
      "$bin/serve" --model-repository "$work/$server" --listen "$address" --grpc-listen 127.0.0.1:0 >"$log" 2>&1 &
      ;;
    mlserver-*)
      echo "{\"debug\": false, \"host\": \"127.0.0.1\", \"http_port\": $port, \"grpc_port\": $(free_port), \"metrics_port\": $(free_port)}" \
        >"$work/$server/settings.json"
      PYTHONPATH="$here" "$venv/bin/mlserver" start "$work/$server" >"$log" 2>&1 &
      ;;
    triton-*)
      local batching=(); [ "$server" = triton-on ] && batching=(--batching --max-batch "$max_batch" --max-delay-us "$max_delay_us")
      "$triton_venv/bin/python" "$here/triton_onnx.py" --model "cls=$model" --http-port "$port" --grpc-port "$(free_port)" \
        --metrics-port "$(free_port)" "${batching[@]}" >"$log" 2>&1 &
      ;;
    fastapi)
      MODEL="$model" MODEL_NAME=cls "$venv/bin/uvicorn" fastapi_oip:app --app-dir "$here" --host 127.0.0.1 --port "$port" \
        >"$log" 2>&1 &
      ;;
  esac
  pid=$!
  # Triton: the model's readiness (the server's comes before pytriton has bound the model).
  local ready=/v2/health/ready; [[ $server = triton-* ]] && ready=/v2/models/cls/ready
  for _ in $(seq 1200); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$address$ready")" = 200 ] && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "$server did not become ready; its log:" >&2
  tail -20 "$log" >&2
  kill -TERM -- "-$pid" 2>/dev/null
  return 1
}

stop() {
  kill -TERM -- "-$pid" 2>/dev/null
  for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL -- "-$pid" 2>/dev/null
}

# drive REPEAT SERVER RUN LOADGEN-ARGS...: one loadgen run; its whole output under raw/, its
# RESULT line in results.txt prefixed with what was run and the load before it.
drive() {
  local repeat=$1 server=$2 run=$3; shift 3
  local file="$out/raw/$repeat-$server-$run.txt" load
  load=$(uptime | sed 's/.*load average: //; s/,//g' | cut -d' ' -f1)
  { echo "uptime: $(uptime)"; echo "command: loadgen --protocol v2 --addr $address --model cls --shape x=1x3x48x192 $*"; } >"$file"
  "$bin/loadgen" --protocol v2 --addr "$address" --model cls --shape x=1x3x48x192 "$@" >>"$file" 2>&1
  line=$(grep '^RESULT' "$file" | sed 's/^RESULT //')
  echo "repeat=$repeat server=$server model=cls run=$run load1=$load $line" | tee -a "$results"
}

value() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

run_server() {
  local repeat=$1 server=$2
  echo "== repeat $repeat: $server =="
  start "$server" "$out/logs/$repeat-$server.log" || { echo "repeat=$repeat server=$server run=none error=did-not-start" >>"$results"; return; }
  drive "$repeat" "$server" closed8 --clients 8 --requests "$closed_requests" --warmup 2
  local t8; t8=$(value throughput "$line")
  drive "$repeat" "$server" closed64 --clients 64 --requests "$closed_requests" --warmup 2
  local t64; t64=$(value throughput "$line")
  local max; max=$(python3 -c "print(max(float('${t8:-0}'), float('${t64:-0}')))")
  for rate in $same_rates; do
    drive "$repeat" "$server" "same$rate" --rate "$rate" --duration-requests "$((rate * open_seconds))" --warmup 1
  done
  for share in $shares; do
    local rate count
    rate=$(python3 -c "print(round($max * $share / 100, 1))")
    count=$(python3 -c "print(max(50, int($rate * $open_seconds)))")
    if python3 -c "import sys; sys.exit(0 if $rate > 0 else 1)"; then
      drive "$repeat" "$server" "open$share" --rate "$rate" --duration-requests "$count" --warmup 1
    fi
  done
  stop
}

# perf_analyzer SERVER: Triton's own client, closed loop at 8 concurrent requests, against one
# server; its report under perf_analyzer/.
perf_run() {
  local server=$1 file="$out/perf_analyzer/$1.txt"
  start "$server" "$out/logs/perf-$server.log" || return
  { echo "uptime: $(uptime)"; echo "command: perf_analyzer -m cls -u $address -i http --shape x:1,3,48,192 --concurrency-range 8 --measurement-mode count_windows --measurement-request-count 500 -s 30"; } >"$file"
  # Batching off: x is [-1,3,-1,-1] with no batch axis, so the request shape is given whole.
  LD_LIBRARY_PATH=$cudart "$perf_analyzer" -m cls -u "$address" -i http --shape x:1,3,48,192 --concurrency-range 8 \
    --measurement-mode count_windows --measurement-request-count 500 -s 30 >>"$file" 2>&1
  echo "perf_analyzer against $server: $(grep -m1 'Throughput:' "$file" | sed 's/^ *//'); $(grep -m1 'p99 latency' "$file" | sed 's/^ *//')" | tee -a "$out/perf_analyzer/summary.txt"
  stop
}

for server in "${servers[@]}"; do run_server 1 "$server"; done
for ((i = ${#servers[@]} - 1; i >= 0; i--)); do run_server 2 "${servers[i]}"; done
if [ "${PERF_ANALYZER:-1}" = 1 ] && [ -n "$perf_analyzer" ]; then
  mkdir -p "$out/perf_analyzer"
  for server in serve-off triton-off; do perf_run "$server"; done
fi
rm -rf "$work"
# Triton's version, from its start-up table.
cat "$out"/logs/*triton*.log 2>/dev/null | grep -m1 -o 'server_version *| [0-9.]*' | sed 's/ *| / /; s/^/tritonserver: /' >>"$out/machine.txt"
"$venv/bin/python" "$here/bench_summary.py" "$results" | tee "$out/summary.md"
[ -x "$bin/serve_plot" ] && "$bin/serve_plot" "$results" "$out"
