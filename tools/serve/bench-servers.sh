# shellcheck shell=bash disable=SC2154  # the variables below are set by the sourcing script
# The servers and clients of the side-by-side comparison, sourced by tools/serve/bench-cpu.sh and
# tools/serve/bench-gpu.sh (one copy of how each server is started, driven and stopped).
#
# The sourcing script sets, before calling anything here:
#   here out bin work results        this folder, the output folder, the Rust binaries, scratch, results.txt
#   closed_requests open_seconds same_rates shares max_batch max_delay_us   the load (bench-cpu.sh's header)
#   provider                          cpu or cuda: every server's ONNX Runtime provider
#   mlserver_cmd uvicorn_cmd triton_python perf_analyzer perf_libs   the Python servers and Triton's client
# and per model (use_model): model name path loadgen_shape perf_shape warmup_shape.
# Optional hooks: after_start SERVER LOG (bench-gpu.sh checks the GPU there); perf_inline (servers
# that perf_analyzer measures right after their loadgen runs, in the same start).

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# use_model NAME PATH LOADGEN_SHAPE: the model the next runs serve; its folders for onnxrt-serve
# (NAME/model.onnx + config.json) and MLServer (a settings.json and NAME/model-settings.json naming
# our runtime), under $work/NAME. LOADGEN_SHAPE is what every request sends, e.g. x=1x3x48x192.
use_model() {
  name=$1 model=$2 loadgen_shape=$3
  local input=${loadgen_shape%%=*} dims=${loadgen_shape#*=}
  perf_shape="$input:${dims//x/,}"
  local base="$work/$name" batching warmup inputs parameters provider_json
  # The warm-up shape: serve warms up on free axes of size 1, which the cls model's pooling refuses.
  warmup="\"warmup\": {\"$input\": [${dims//x/, }]}"
  provider_json=""; [ "$provider" = cpu ] || provider_json="\"provider\": \"$provider\", "
  for batching in off on; do
    mkdir -p "$base/serve-$batching/$name" "$base/mlserver-$batching/$name"
    cp "$model" "$base/serve-$batching/$name/model.onnx"
    cp "$model" "$base/mlserver-$batching/$name/model.onnx"
  done
  # Batching is on by default for CUDA: off is said explicitly there.
  local off_json=""; [ "$provider" = cpu ] || off_json="\"batching\": false, "
  echo "{$provider_json$off_json$warmup}" >"$base/serve-off/$name/config.json"
  echo "{$provider_json\"batching\": true, \"max_batch\": $max_batch, \"max_delay_us\": $max_delay_us, $warmup}" \
    >"$base/serve-on/$name/config.json"
  # MLServer's declaration: FP32 (both models), the request's shape with a free first axis.
  local rest=${dims#*x}
  inputs="[{\"name\": \"$input\", \"datatype\": \"FP32\", \"shape\": [-1, ${rest//x/, }]}]"
  parameters="{\"uri\": \"./model.onnx\"$([ "$provider" = cpu ] || echo ", \"extra\": {\"provider\": \"$provider\"}")}"
  echo "{\"name\": \"$name\", \"implementation\": \"mlserver_onnx.OnnxModel\", \"parameters\": $parameters, \"inputs\": $inputs}" \
    >"$base/mlserver-off/$name/model-settings.json"
  echo "{\"name\": \"$name\", \"implementation\": \"mlserver_onnx.OnnxModel\", \"parameters\": $parameters, \"max_batch_size\": $max_batch, \"max_batch_time\": $(python3 -c "print($max_delay_us / 1e6)"), \"inputs\": $inputs}" \
    >"$base/mlserver-on/$name/model-settings.json"
}

# start SERVER LOG: starts it (its own process group: set -m); sets pid and address, or returns 1.
start() {
  local server=$1 log=$2 port base="$work/$name"
  port=$(free_port)
  address=127.0.0.1:$port
  case $server in
    serve-*)
      "$bin/serve" --model-repository "$base/$server" --listen "$address" --grpc-listen 127.0.0.1:0 >"$log" 2>&1 &
      ;;
    mlserver-*)
      echo "{\"debug\": false, \"host\": \"127.0.0.1\", \"http_port\": $port, \"grpc_port\": $(free_port), \"metrics_port\": $(free_port)}" \
        >"$base/$server/settings.json"
      PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" $mlserver_cmd start "$base/$server" >"$log" 2>&1 &
      ;;
    triton-*)
      local batching=(); [ "$server" = triton-on ] && batching=(--batching --max-batch "$max_batch" --max-delay-us "$max_delay_us")
      "$triton_python" "$here/triton_onnx.py" --model "$name=$model" --provider "$provider" --http-port "$port" \
        --grpc-port "$(free_port)" --metrics-port "$(free_port)" "${batching[@]}" >"$log" 2>&1 &
      ;;
    fastapi)
      MODEL="$model" MODEL_NAME=$name PROVIDER=$provider $uvicorn_cmd fastapi_oip:app --app-dir "$here" --host 127.0.0.1 \
        --port "$port" >"$log" 2>&1 &
      ;;
  esac
  pid=$!
  # Triton: the model's readiness (the server's comes before pytriton has bound the model).
  local ready=/v2/health/ready; [[ $server = triton-* ]] && ready=/v2/models/$name/ready
  for _ in $(seq 1200); do
    if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$address$ready")" = 200 ]; then
      if declare -F after_start >/dev/null; then after_start "$server" "$log"; fi
      return 0
    fi
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
  local file="$out/raw/$raw_prefix$repeat-$server-$run.txt" load
  load=$(uptime | sed 's/.*load average: //; s/,//g' | cut -d' ' -f1)
  { echo "uptime: $(uptime)"; echo "command: loadgen --protocol v2 --addr $address --model $name --shape $loadgen_shape $*"; } >"$file"
  "$bin/loadgen" --protocol v2 --addr "$address" --model "$name" --shape "$loadgen_shape" "$@" >>"$file" 2>&1
  line=$(grep '^RESULT' "$file" | sed 's/^RESULT //')
  echo "repeat=$repeat server=$server model=$name run=$run load1=$load $line" | tee -a "$results"
}

value() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

# run_server REPEAT SERVER: closed loop at 8 and 64 clients (the larger throughput is the
# server's maximum), open loop at each of same_rates, then at each of shares of that maximum.
run_server() {
  local repeat=$1 server=$2
  echo "== repeat $repeat: $server ($name) =="
  start "$server" "$out/logs/$raw_prefix$repeat-$server.log" || {
    echo "repeat=$repeat server=$server model=$name run=none error=did-not-start" >>"$results"; return; }
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
  case " ${perf_inline:-} " in *" $server "*) perf_measure "$server" ;; esac
  stop
}

# perf_measure SERVER: Triton's own client against the running server, closed loop at 8
# concurrent requests; its report under perf_analyzer/. PERF_REQUESTS per window (500), PERF_TIMEOUT (120 s).
perf_measure() {
  local server=$1 file="$out/perf_analyzer/$raw_prefix$1.txt" count=${PERF_REQUESTS:-500}
  mkdir -p "$out/perf_analyzer"
  local args=(-m "$name" -u "$address" -i http --shape "$perf_shape" --concurrency-range 8
    --measurement-mode count_windows --measurement-request-count "$count" -s 30)
  { echo "uptime: $(uptime)"; echo "command: perf_analyzer ${args[*]}"; } >"$file"
  # Batching off: the input has no batch axis in Triton's sense, so the request shape is given whole.
  LD_LIBRARY_PATH=$perf_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} timeout "${PERF_TIMEOUT:-120}" "$perf_analyzer" "${args[@]}" >>"$file" 2>&1
  echo "perf_analyzer against $server ($name): $(grep -m1 'Throughput:' "$file" | sed 's/^ *//'); $(grep -m1 'p99 latency' "$file" | sed 's/^ *//')" \
    | tee -a "$out/perf_analyzer/summary.txt"
}

# perf_run SERVER: starts the server for perf_analyzer alone.
perf_run() {
  start "$1" "$out/logs/perf-$raw_prefix$1.log" || return
  perf_measure "$1"
  stop
}
