#!/usr/bin/env bash
# `serve` with Intel's OpenVINO plugin named in a model's config.json, on the GPU machine's host
# CPU (an Intel Xeon), ORT 1.30 (the CUDA bundle unpacked: use_runtime). One model on the plugin
# (device 0) by the library's path, the same by the pinned bundle's name, and the same on `cpu`;
# one request to each over REST; the largest difference, the config endpoint, serve's provider
# lines and statistics. First without the plugin's folder on LD_LIBRARY_PATH (the typed refusal
# saying to set it), then with it. Needs .gpu-run/openvino-cpu.tar.xz and $BIN/serve (BIN default
# .gpu-run/bench45); MODEL: the PP-OCR cls model there, else tests/data/models/mlp.onnx. Where the
# host is not Intel the plugin offers no device: the pass is then that refusal, naming the count.
set -u
cd "$(dirname "$0")/../.."
source tools/gpu/common.sh
use_runtime
BIN=${BIN:-.gpu-run/bench45}
model=${MODEL:-.gpu-run/bench45/ch_ppocr_mobile_v2.0_cls_infer.onnx}
[ -f "$model" ] || model=tests/data/models/mlp.onnx
port=${PORT:-18101}
v2=http://127.0.0.1:$port/v2 base=http://127.0.0.1:$port/v2/models
fails=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

ov=/tmp/openvino/onnxruntime_ep_openvino
mkdir -p /tmp/openvino && tar xJf .gpu-run/openvino-cpu.tar.xz -C /tmp/openvino
plugin=$ov/libonnxruntime_providers_openvino_plugin.so
# The bundle by name: serve looks in onnxrt's cache, <cache>/<entry>/<bundle>/lib/<library>.
export ONNXRT_CACHE_DIR=/tmp/ov-cache
rm -rf "$ONNXRT_CACHE_DIR"; mkdir -p "$ONNXRT_CACHE_DIR/entry/onnxruntime-ep-openvino-1.8.1"
ln -s "$ov" "$ONNXRT_CACHE_DIR/entry/onnxruntime-ep-openvino-1.8.1/lib"
repo=/tmp/ov-repo
rm -rf "$repo"
for m in ov ov_named ov_fp32 cpu; do mkdir -p "$repo/$m"; cp "$model" "$repo/$m/model.onnx"; done
echo "{\"provider\": \"openvino\", \"plugin\": \"$plugin\", \"device\": 0}" >"$repo/ov/config.json"
echo '{"provider": "openvino", "plugin": "openvino-plugin-1.8.1-registry", "device": 0}' >"$repo/ov_named/config.json"
# OpenVINO's CPU device computes in bf16 by default where the CPU has AMX (the device's Xeon):
# answers within 2e-2 of the CPU provider's; "precision": "FP32" within 1e-3.
echo "{\"provider\": \"openvino\", \"plugin\": \"$plugin\", \"device\": 0, \"provider_options\": {\"precision\": \"FP32\"}}" >"$repo/ov_fp32/config.json"
echo '{"provider": "cpu"}' >"$repo/cpu/config.json"
echo "model: $model; plugin: $plugin; runtime: $ONNXRT_DYLIB_PATH; host CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"

start() { # $1: log file; the rest: VAR=VALUE for serve's environment
  local log=$1; shift
  env "$@" "$BIN/serve" --model-repository "$repo" --listen "127.0.0.1:$port" --grpc-listen off >"$log" 2>&1 &
  pid=$!
  for _ in $(seq 150); do curl -sf "$base/cpu/ready" >/dev/null && return 0; sleep 0.2; done
  fail "serve did not get the cpu model ready: $(tail -5 "$log")"
  return 1
}
stop() { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }
reason() { curl -s -X POST "$v2/repository/index" -d '{}' | python3 -c "
import json, sys
print(next((e.get('state', '') + ' ' + e.get('reason', '') for e in json.load(sys.stdin) if e['name'] == '$1'), 'absent'))"; }

echo "== 1. without the plugin's folder on LD_LIBRARY_PATH"
if start "$out/serve-openvino-1.log" -u LD_LIBRARY_PATH; then
  for m in ov ov_named; do
    r=$(reason "$m")
    echo "$m: $r" | cut -c1-700
    case $r in
      UNAVAILABLE*"could not be loaded"*LD_LIBRARY_PATH=*) pass "$m refused, naming the LD_LIBRARY_PATH to set" ;;
      *) fail "$m: expected the typed refusal naming LD_LIBRARY_PATH" ;;
    esac
  done
  stop
fi

echo "== 2. with LD_LIBRARY_PATH=$ov"
if start "$out/serve-openvino-2.log" LD_LIBRARY_PATH="$ov${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" RUST_LOG=info; then
  python3 - "$base" >"$out/serve-openvino-request.json" <<'PY'
import json, math, sys, urllib.request
meta = json.load(urllib.request.urlopen(sys.argv[1] + "/cpu"))
x = meta["inputs"][0]
# Free axes: the cls model's own input size for an image input, else 1.
fill = [1, 3, 48, 192] if len(x["shape"]) == 4 else [1] * len(x["shape"])
shape = [d if d > 0 else f for d, f in zip(x["shape"], fill)]
n = math.prod(shape)
print(json.dumps({"inputs": [{"name": x["name"], "shape": shape, "datatype": x["datatype"],
                              "data": [math.sin(i * 0.013) for i in range(n)]}]}))
PY
  for m in cpu ov ov_named ov_fp32; do
    code=$(curl -s -o "$out/serve-openvino-$m.json" -w '%{http_code}' -H 'content-type: application/json' \
      --data-binary @"$out/serve-openvino-request.json" "$base/$m/infer")
    echo "$m infer: HTTP $code $(head -c 200 "$out/serve-openvino-$m.json")"
  done
  intel=$(grep -qm1 GenuineIntel /proc/cpuinfo && echo 1 || echo 0)
  for m in ov ov_named ov_fp32; do
    r=$(reason "$m")
    echo "$m: $r" | cut -c1-700
    limit=2e-2; [ "$m" = ov_fp32 ] && limit=1e-3
    if [ "$intel" = 1 ]; then
      diff=$(python3 - "$out/serve-openvino-cpu.json" "$out/serve-openvino-$m.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
try:
    x, y = a["outputs"][0]["data"], b["outputs"][0]["data"]
    print(max(abs(p - q) for p, q in zip(x, y)) if len(x) == len(y) else "lengths %d %d" % (len(x), len(y)))
except (KeyError, IndexError, TypeError):
    print("no answer")
PY
)
      echo "$m: largest difference from cpu: $diff"
      if python3 -c "import sys; sys.exit(0 if float('$diff') < $limit else 1)" 2>/dev/null; then
        pass "$m answers as cpu (largest difference $diff, limit $limit)"
      else
        fail "$m: largest difference from cpu: $diff (limit $limit)"
      fi
      case $(curl -s "$base/$m/config") in
        *OpenVINOExecutionProvider*) pass "$m's config names OpenVINOExecutionProvider" ;;
        *) fail "$m's config does not name OpenVINOExecutionProvider" ;;
      esac
    else
      case $r in
        *"plugin offers 0 device(s)"*"Intel devices only"*) pass "$m refused on this non-Intel host, naming the device count" ;;
        *) fail "$m: expected the plugin's no-device refusal on a non-Intel host" ;;
      esac
    fi
  done
  for m in ov cpu; do
    curl -s "$base/$m/config" | python3 -c "
import json, sys
c = json.load(sys.stdin)
print('$m config:', json.dumps(c.get('optimization', c))[:600])"
  done
  [ -s "$out/serve-openvino-cpu.json" ] && grep -q '"outputs"' "$out/serve-openvino-cpu.json" \
    && pass "cpu answers" || fail "cpu did not answer"
  echo "== statistics"
  curl -s "$base/stats" | python3 -c "
import json, sys
for m in json.load(sys.stdin).get('model_stats', []):
    s = m.get('inference_stats', {})
    print(m['name'], 'success', s.get('success', {}).get('count'), 'fail', s.get('fail', {}).get('count'))"
  stop
  echo "== serve's provider lines"
  grep -ihE 'openvino|plugin|provider' "$out/serve-openvino-2.log" | cut -c1-400 | head -12
fi
echo "serve-openvino: $fails failure(s)"
[ "$fails" = 0 ] && echo "RESULT: PASS" || echo "RESULT: FAIL"
