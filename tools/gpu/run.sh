#!/usr/bin/env bash
# The GPU machine's runs, one mode per question (tools/gpu/README.md: how to build the binaries
# here, carry them with the runtime bundle and start a mode as the last device call):
#   bash tools/gpu/run.sh all             the doctor, the GPU tests, the example and the CLI on strict
#                                         GPU placement, fp32 benchmarks onnxrt and Python twice
#   bash tools/gpu/run.sh tests           the GPU tests and a short fp16 benchmark pair
#   bash tools/gpu/run.sh perf            onnxrt against Python on the same ORT build: one table
#   bash tools/gpu/run.sh batch           where a batched run's time goes, without HTTP
#   bash tools/gpu/run.sh serve           the Open Inference Protocol server against offline batch 128
#   bash tools/gpu/run.sh serve-configs   the HTTP server unbatched and with batcher configurations
#   bash tools/gpu/run.sh call            unpack the last bundle part, the GPU tests, then $THEN
#   bash tools/gpu/run.sh devices         the device API there: CUDA through it, the OpenVINO plugin on
#                                         the Intel host CPU, zeros_cuda's ordering (fixed and old builds)
# Every mode expects the last bundle part unpacked (/tmp/ort-gpu: the onnxruntime-gpu wheel's
# package, whose libonnxruntime.so.1.30.0 both onnxrt and Python use) and the release binaries
# built here in .gpu-run/ (or $BIN). Results land in $OUT (default /tmp/out), which comes back.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
# $out, $capi, ONNXRT_TEST_MODELS, use_runtime, use_gpu_libraries, export_models.
# shellcheck source=tools/gpu/common.sh
. tools/gpu/common.sh
gpu_tests() { ONNXRT_GPU_RESNET=/tmp/resnet50.onnx .gpu-run/gpu --test-threads 1 --nocapture; }
rust_bench() { .gpu-run/gpu_bench "$@"; }
python_bench() { PYTHONPATH=/tmp/ort-gpu python3 tools/gpu/bench_python.py "$@"; }
machine() { { nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv 2>/dev/null; echo "cpus: $(nproc)"; } | tee "$out/machine.txt"; }

# Everything in one call (device time is scarce).
mode_all() {
  use_runtime
  nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv | tee "$out/doctor.txt"
  echo "== doctor, as a user's shell has it (no LD_LIBRARY_PATH) =="
  .gpu-run/onnxrt doctor --dist gpu-cuda13-1.30.0-wheel 2>&1 | tee -a "$out/doctor.txt"; echo "doctor exit ${PIPESTATUS[0]}" | tee -a "$out/doctor.txt"
  use_gpu_libraries
  export_models
  echo "== GPU tests =="
  gpu_tests 2>&1 | tee "$out/gpu-tests.log"
  echo "== example and CLI, strict GPU =="
  .gpu-run/resnet_cuda --model /tmp/resnet50.onnx --batch 8 --iterations 50 --strict 2>&1 | tee "$out/example.log"
  python3 -c "import numpy as np; np.save('/tmp/x.npy', np.random.RandomState(0).rand(4,3,224,224).astype(np.float32))"
  .gpu-run/onnxrt run /tmp/resnet50.onnx --input input=/tmp/x.npy --provider cuda --strict --repeat 20 2>&1 | tee -a "$out/example.log"
  echo "== benchmarks, fp32, onnxrt and Python alternating twice (same runtime, same call) =="
  for round in 1 2; do
    rust_bench /tmp/resnet50.onnx --batches 1,128 2>&1 | tee "$out/bench-rust-r$round.txt"
    python_bench /tmp/resnet50.onnx --batches 1,128 2>&1 | tee "$out/bench-python-r$round.txt"
  done
}

# A shorter call than `all`: the GPU tests and a short fp16 benchmark pair.
mode_tests() {
  use_runtime; use_gpu_libraries
  export_models
  gpu_tests 2>&1 | tee "$out/gpu-tests.log"
  rust_bench /tmp/resnet50_fp16.onnx --batches 1,128 2>&1 | tee "$out/bench-rust-fp16.txt"
  python_bench /tmp/resnet50_fp16.onnx --batches 1,128 2>&1 | tee "$out/bench-python-fp16.txt"
}

# One device call: unpack the last bundle part, run the GPU tests (unless TESTS=0), then the
# command in $THEN (e.g. `VARIANTS=… bash tools/gpu/run.sh serve`), each bounded by a timeout.
# The device API on the GPU machine and zeros_cuda's stream ordering (docs/soundness.md §11): the
# binaries gpu_device_api, ep_devices, plugin_openvino, ordering_fixed and ordering_old (the same
# test built with zeroing on the legacy stream, unwaited) and openvino-cpu.tar.xz (the
# onnxruntime-ep-openvino wheel's package without its GPU and NPU plugins) in .gpu-run/.
mode_devices() {
  bash .gpu-bundle/p3/unpack.sh >/dev/null 2>&1 || true
  use_runtime; use_gpu_libraries
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/machine.txt"
  grep -m1 "model name" /proc/cpuinfo | tee -a "$out/machine.txt"
  mkdir -p /tmp/openvino && tar xJf .gpu-run/openvino-cpu.tar.xz -C /tmp/openvino
  local plugin=/tmp/openvino/onnxruntime_ep_openvino/libonnxruntime_providers_openvino_plugin.so
  echo "== CUDA through the device API"
  .gpu-run/gpu_device_api --test-threads 1 --nocapture 2>&1 | tee "$out/gpu_device_api.log" | grep -vE "^\s*$" | tail -30
  echo "== ep_devices on the GPU runtime"
  .gpu-run/ep_devices --test-threads 1 2>&1 | tee "$out/ep_devices.log" | grep -E "test result|FAILED|panicked"
  echo "== the OpenVINO plugin on the host CPU"
  LD_LIBRARY_PATH=/tmp/openvino/onnxruntime_ep_openvino:$LD_LIBRARY_PATH ONNXRT_TEST_OPENVINO_PLUGIN=$plugin \
    ONNXRT_TEST_OCR_DET=$PWD/.gpu-run/ch_PP-OCRv4_det_infer.onnx ONNXRT_REQUIRE_OPENVINO_DEVICE=1 \
    .gpu-run/plugin_openvino --test-threads 1 --nocapture 2>&1 | tee "$out/plugin_openvino.log" | tail -25
  echo "== a legacy-stream zeroing against a non-blocking copy, CUDA alone"
  python3 tools/gpu/legacy_stream_race.py 2>&1 | tee "$out/legacy_stream_race.log"
  for pass in 1 2; do
    for build in old fixed; do
      echo "== zeros_cuda ordering, pass $pass, $build build"
      .gpu-run/ordering_$build --test-threads 1 --nocapture 2>&1 | tee "$out/ordering-$build-$pass.log" | grep -E "rounds|test result"
    done
  done
}

mode_call() {
  bash .gpu-bundle/p3/unpack.sh >/dev/null 2>&1 || true
  export OUT=$out
  use_runtime; use_gpu_libraries
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  [ -f /tmp/resnet50.onnx ] || python3 tools/gpu/export_resnet.py /tmp/resnet50.onnx /tmp/resnet50_fp16.onnx >"$out/export.log" 2>&1
  local start
  if [ "${TESTS:-1}" = 1 ]; then
    start=$(date +%s)
    ONNXRT_GPU_RESNET=/tmp/resnet50.onnx timeout "${TEST_TIMEOUT:-200}" .gpu-run/gpu --test-threads 1 --nocapture >"$out/gpu-tests.log" 2>&1
    echo "gpu tests rc=$? in $(($(date +%s) - start)) s"
    grep -E "^test .*(FAILED|ok)$|test result|panicked|CudaGraph:|graphs: \[" "$out/gpu-tests.log" | tail -40
  fi
  if [ -n "${THEN:-}" ]; then
    start=$(date +%s)
    timeout "${THEN_TIMEOUT:-380}" bash -c "$THEN" >"$out/then.log" 2>&1
    echo "THEN rc=$? in $(($(date +%s) - start)) s"
    grep -E "RESULT|PHASES|goal|^iobinding|^cuda_graph|images/s|^\| |graph_runs|did not start|error" "$out/then.log" | cut -c1-400 | tail -60
  fi
}

# onnxrt (benches/src/bin/gpu_bench.rs) and Python (tools/gpu/bench_python.py) side by side on the same
# ORT build and the same ResNet-50 exports, one table at the end:
# 1. batch-1 device-resident IoBinding, fp32, two rounds; the order flips in round 2 (onnxrt
#    first, then Python first), so a warm-GPU or clock effect shows as an order effect;
# 2. the fast path on the fp16 model (fp16 input and output): iobinding, nhwc
#    (prefer_nhwc=1), fast (prefer_nhwc=1 + CUDA graph), at batch 1 and 128, both sides;
# 3. fp32 cuda_graph at batch 1 and 128 for reference.
mode_perf() {
  use_runtime; use_gpu_libraries
  nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$out/machine.txt"
  export_models
  local common=(--iterations 200 --warmup 20) args fast graph
  echo "== 1. batch 1, device-resident IoBinding, fp32, two rounds =="
  for round in 1 2; do
    args=(/tmp/resnet50.onnx --modes iobinding --batches 1 "${common[@]}")
    if [ "$round" = 1 ]; then
      rust_bench "${args[@]}" 2>&1 | tee "$out/b1-onnxrt-r$round.txt"
      python_bench "${args[@]}" 2>&1 | tee "$out/b1-python-r$round.txt"
    else
      python_bench "${args[@]}" 2>&1 | tee "$out/b1-python-r$round.txt"
      rust_bench "${args[@]}" 2>&1 | tee "$out/b1-onnxrt-r$round.txt"
    fi
  done
  echo "== 2. fast path, fp16 model =="
  fast=(/tmp/resnet50_fp16.onnx --modes iobinding,nhwc,fast --batches 1,128 --iterations 100 --warmup 20)
  rust_bench "${fast[@]}" 2>&1 | tee "$out/fast-onnxrt.txt"
  python_bench "${fast[@]}" 2>&1 | tee "$out/fast-python.txt"
  echo "== 3. fp32 CUDA graph =="
  graph=(/tmp/resnet50.onnx --modes cuda_graph --batches 1,128 --iterations 100 --warmup 20)
  rust_bench "${graph[@]}" 2>&1 | tee "$out/graph-onnxrt.txt"
  python_bench "${graph[@]}" 2>&1 | tee "$out/graph-python.txt"
  echo "== table: median ms (onnxrt / Python; < 1 means onnxrt is faster) =="
  python3 - "$out" <<'PY' | tee "$out/table.md"
import pathlib, sys
out = pathlib.Path(sys.argv[1])

def rows(name):
    found = {}
    path = out / name
    if not path.exists():
        return found
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 5 and parts[1].isdigit():
            found[(parts[0], int(parts[1]))] = float(parts[2])
    return found

print("| model | mode | batch | onnxrt ms | Python ms | onnxrt / Python |")
print("|---|---|---:|---:|---:|---:|")
pairs = [("fp32 r1", "b1-onnxrt-r1.txt", "b1-python-r1.txt"), ("fp32 r2", "b1-onnxrt-r2.txt", "b1-python-r2.txt"),
         ("fp16", "fast-onnxrt.txt", "fast-python.txt"), ("fp32", "graph-onnxrt.txt", "graph-python.txt")]
for label, rust, python in pairs:
    r, p = rows(rust), rows(python)
    for key in sorted(set(r) | set(p), key=lambda k: (k[1], k[0])):
        a, b = r.get(key), p.get(key)
        ratio = f"{a / b:.3f}" if a and b else "-"
        fmt = lambda v: f"{v:.3f}" if v else "-"
        print(f"| {label} | {key[0]} | {key[1]} | {fmt(a)} | {fmt(b)} | {ratio} |")
PY
}

# Where a batched run's time goes, without HTTP (needs gpu_bench and batch_bench in $BIN):
# 1. gpu_bench on ResNet-50 fp32: device-resident IoBinding, host input/output through a fresh
#    IoBinding per run (what the batcher's worker does) and plain `run`, at batch 1..128, each
#    size in its own session, then `--mixed`: the sizes in rotation in one session
#    (SKIP_GPU_BENCH=1 skips it);
# 2. batch_bench --provider cuda: the batcher in-process against per-request runs, 1..256 callers.
mode_batch() {
  local bin=${BIN:-.gpu-run} model=${MODEL:-/tmp/resnet50.onnx}
  use_runtime; use_gpu_libraries
  [ -f "$model" ] || export_models
  if [ "${SKIP_GPU_BENCH:-0}" != 1 ]; then
    echo "== gpu_bench: per batch size, per feeding mode =="
    "$bin/gpu_bench" "$model" --modes iobinding,host_binding,run --batches "${BATCHES:-1,8,32,64,128}" \
      --iterations 30 --warmup 5 --mixed 2>&1 | tee "$out/gpu_bench.txt"
  fi
  echo "== batch_bench: batcher in-process vs per-request runs =="
  # One session for every batch size, then a session per size (BatcherBuilder::session_per_batch_size).
  for extra in "" "--session-per-size"; do
    echo "-- batch_bench ${extra:-(one session)}"
    # shellcheck disable=SC2086 # $extra is empty or one flag
    "$bin/batch_bench" --provider cuda --model "$model" --pad --max-batch 128 --workers "${WORKERS:-2}" $extra \
      --concurrency "${CONCURRENCY:-1,8,64,256}" --seconds "${SECONDS_PER_RUN:-3}" --rounds 1 2>&1 | tee -a "$out/batch_bench.txt"
  done
}

# Waits for the server started as $1 (pid) writing to $2 (log) to print its address, at most $3
# tenths of a second; prints the address, or nothing if it never came.
server_address() {
  local pid=$1 log=$2 tries=$3 address=""
  for _ in $(seq "$tries"); do
    address=$(sed -n 's/^listening on http:\/\/\([^ ]*\).*/\1/p' "$log")
    [ -n "$address" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "$address"
}

# The Open Inference Protocol server (serve --model-repository) on ResNet-50 fp32, driven over
# REST with binary tensors (loadgen --protocol v2 --binary), next to the offline batch-128
# IoBinding throughput of the same model in the same call (benches/src/bin/gpu_bench.rs). Goals: 256
# closed-loop clients >= 90 % of offline batch-128 images/s; open loop at 80 % of that offline
# rate answers every request with p99 <= 3x the batch-128 service time. Needs serve, loadgen and
# gpu_bench in $BIN; SECONDS_PER_RUN=8.
mode_serve() {
  seconds=${SECONDS_PER_RUN:-8}
  bin=${BIN:-.gpu-run}
  model=${MODEL:-/tmp/resnet50.onnx}
  use_runtime; use_gpu_libraries
  machine
  [ -f "$model" ] || export_models
  echo "== offline: gpu_bench, device-resident IoBinding, fp32 =="
  # OFFLINE_MODES adds modes after iobinding (e.g. iobinding,cuda_graph,safe_graph: the raw and the
  # safe CUDA graph side by side); the goals use iobinding's batch-128 line.
  "$bin/gpu_bench" "$model" --modes "${OFFLINE_MODES:-iobinding}" --batches 1,128 --iterations 100 --warmup 20 2>&1 | tee "$out/offline.txt"
  b128=$(awk '$1 == "iobinding" && $2 == 128 && NF == 5 { print $5 }' "$out/offline.txt" | head -1)
  b128_ms=$(awk '$1 == "iobinding" && $2 == 128 && NF == 5 { print $3 }' "$out/offline.txt" | head -1)
  # The batcher settings measured best (a session per padded size, fine steps, two workers, four
  # gather threads; batching, `hold_while_busy`, `device_inputs` and CUDA graphs are on by default
  # on CUDA), then variants of it given in VARIANTS as `label:JSON` words, each JSON merged over
  # the base config (CLIENTS_LIST for the base).
  base='{"provider": "cuda", "max_batch": 128, "queue": 4096, "max_delay_us": 0, "batch_workers": 2, "gather_threads": 4,
 "pad_sizes": [1, 2, 4, 8, 16, 32, 48, 64, 80, 96, 112, 128], "session_per_batch_size": true,
 "warmup": {"input": [1, 3, 224, 224]}}'
  : >"$out/results.txt"
  : >"$out/batches.txt"
  : >"$out/phases.txt"
  [ "${SKIP_BASE:-0}" = 1 ] || serve_variant base '{}' "${CLIENTS_LIST:-1 64 256}"
  # HOST_PATH=1 (the default; 0 to skip): the same server and batcher on a model that does almost
  # nothing on the GPU (a global average pool of the same input): the rate the HTTP and host path
  # alone can carry.
  if [ "${HOST_PATH:-1}" = 1 ]; then
    python3 - <<'MODEL'
import onnx
from onnx import TensorProto, helper
x = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["n", 3, 224, 224])
y = helper.make_tensor_value_info("output", TensorProto.FLOAT, ["n", 3])
nodes = [helper.make_node("GlobalAveragePool", ["input"], ["pooled"]),
         helper.make_node("Flatten", ["pooled"], ["output"], axis=1)]
graph = helper.make_graph(nodes, "host_path", [x], [y])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), "/tmp/host_path.onnx")
MODEL
    model=/tmp/host_path.onnx b128=$b128 serve_variant host_path '{}' "64 256"
  fi
  # By default the base settings without CUDA graphs, without the hold and without the batcher's
  # own device buffers (`device_inputs`; ORT copies the batch in the run), so one call compares
  # them; VARIANTS="" for none.
  # (The default is spelled out on its own line: inside ${VARIANTS-...} its closing brace would
  # end the expansion early and leave a stray `}` word behind the caller's variants.)
  local default_variants='no_graphs:{"cuda_graphs":false} no_hold:{"hold_while_busy":false} no_device:{"device_inputs":false}'
  for variant in ${VARIANTS-$default_variants}; do
    serve_variant "${variant%%:*}" "${variant#*:}" "${VARIANT_CLIENTS:-256}"
  done
  python3 - "$out" "${b128:-0}" "${b128_ms:-0}" <<'PY' | tee "$out/table.md"
import pathlib, sys
out, b128, b128_ms = pathlib.Path(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
print(f"offline IoBinding batch 128: {b128_ms:.2f} ms, {b128:.0f} images/s")
print("| run | images/s | % of offline b128 | p50 ms | p99 ms | errors |")
print("|---|---:|---:|---:|---:|---:|")
for line in (out / "results.txt").read_text().splitlines():
    variant, kind, _, *fields = line.split()
    kv = dict(f.split("=", 1) for f in fields if "=" in f)
    share = 100 * float(kv["throughput"]) / b128 if b128 else 0
    label = f"{variant} {kind} {kv.get('concurrency', kv.get('rate', ''))}"
    print(f"| {label} | {float(kv['throughput']):.0f} | {share:.0f}% | {kv['p50_ms']} | {kv['p99_ms']} | {kv['errors']} |")
    if kind == "closed" and kv.get("concurrency") == "256":
        print(f"{variant}: goal 1 (256 clients >= 90 % of offline b128): {'MET' if share >= 90 else 'NOT MET'} ({share:.0f} %)")
    if kind == "open80":
        ok = float(kv["p99_ms"]) <= 3 * b128_ms and kv["errors"] == "0"
        print(f"{variant}: goal 2 (open loop at 80 %: every request answered, p99 <= 3x {b128_ms:.2f} ms): {'MET' if ok else 'NOT MET'}")
PY
}

# serve_variant LABEL JSON CLIENTS: one server on a repository holding $model with the base config
# and JSON merged over it; closed-loop runs at CLIENTS, then the open loop at 80 % of offline.
serve_variant() {
  local label=$1 override=$2 clients_list=$3
  local repo
  repo=$(mktemp -d /tmp/repo-serve.XXXXXX)
  mkdir -p "$repo/resnet50"
  cp "$model" "$repo/resnet50/model.onnx"
  python3 -c 'import json, sys; c = json.loads(sys.argv[1]); c.update(json.loads(sys.argv[2])); print(json.dumps(c))' \
    "$base" "$override" >"$repo/resnet50/config.json"
  local log=$out/serve-$label.log
  RUST_LOG=warn "$bin/serve" --model-repository "$repo" --listen 127.0.0.1:0 --grpc-listen off --max-connections 4096 >"$log" 2>&1 &
  pid=$!
  address=$(server_address "$pid" "$log" 1800)
  if [ -z "$address" ]; then echo "serve ($label) did not start:"; cat "$log"; return; fi
  echo "== $label: $(cat "$repo/resnet50/config.json")"
  # Warm-up ladder (not recorded): every batch size is seen before a measurement.
  for clients in 1 8 64 256; do
    "$bin/loadgen" --addr "$address" --protocol v2 --model resnet50 --binary --shape input=1x3x224x224 \
      --concurrency "$clients" --seconds 1 --warmup 1 2>>"$out/loadgen-errors.txt" >/dev/null
  done
  for clients in $clients_list; do
    measure "$label" closed --concurrency "$clients" --seconds "$seconds" --warmup 2
  done
  if [ -n "$b128" ]; then
    local rate
    rate=$(python3 -c "print(int(0.8 * $b128))")
    measure "$label" open80 --rate "$rate" --duration-requests $((rate * seconds)) --warmup 1
  fi
  curl -s "http://$address/metrics" | grep -E '^batcher_(batches_total|graph_runs_total|batch_size_(sum|count))' | sed "s/^/$label /" | tee -a "$out/batches.txt"
  kill -TERM "$pid"; wait "$pid"; echo "serve ($label) exited with status $?"
}

# measure LABEL TAG LOADGEN-ARGS...: one recorded run against the server at $address (pid $pid):
# its RESULT line, and a PHASES line (tools/gpu/phases.py) from the server's metrics before and
# after it, the CPU seconds of both processes and the GPU's utilisation (GPU_UTIL=0: no
# nvidia-smi sampler during the run, to see whether its queries add to the tail).
measure() {
  local label=$1 tag=$2; shift 2
  local scratch ticks cpu0 cpu1 smi
  scratch=$(mktemp -d /tmp/measure-serve.XXXXXX)
  ticks=$(getconf CLK_TCK)
  curl -s "http://$address/metrics" >"$scratch/before"
  cpu0=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
  : >"$scratch/gpu"
  smi=""
  if [ "${GPU_UTIL:-1}" != 0 ]; then
    nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 200 >"$scratch/gpu" 2>/dev/null &
    smi=$!
  fi
  python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:])
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(r.ru_utime + r.ru_stime, file=open("'"$scratch"'/loadgen-cpu", "w"))' \
    "$bin/loadgen" --addr "$address" --protocol v2 --model resnet50 --binary --shape input=1x3x224x224 "$@" \
    2>>"$out/loadgen-errors.txt" | grep '^RESULT' | sed "s/^/$label $tag /" | tee -a "$out/results.txt"
  if [ -n "$smi" ]; then kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null; fi
  cpu1=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
  curl -s "http://$address/metrics" >"$scratch/after"
  python3 tools/gpu/phases.py "$scratch/before" "$scratch/after" --label "$label $tag" \
    --serve-cpu "$(python3 -c "print(($cpu1 - $cpu0) / $ticks)")" --loadgen-cpu "$(cat "$scratch/loadgen-cpu")" \
    --gpu-util "$scratch/gpu" | tee -a "$out/phases.txt"
  rm -rf "$scratch"
}

# The HTTP server (`serve --model`) with and without the dynamic batcher, driven by loadgen with
# preprocessed batch-1 tensors at CLIENTS (default 1, 8, 64 and 256) concurrent clients, next to
# the offline batch-128 IoBinding throughput of the same ResNet-50 fp32 export, in one table. One
# server per entry of SERVERS (the cases below). Needs serve, loadgen and gpu_bench in $BIN;
# SECONDS_PER_RUN=8. The same on a CPU machine (no offline row), with the embedded model:
#   BIN=target/release PROVIDER=cpu MODEL=embedded bash tools/gpu/run.sh serve-configs
mode_serve_configs() {
  seconds=${SECONDS_PER_RUN:-8}
  bin=${BIN:-.gpu-run}
  provider=${PROVIDER:-cuda}
  model=${MODEL:-/tmp/resnet50.onnx}
  clients_list=${CLIENTS:-1 8 64 256}
  # The model name in the URL.
  if [ "$model" = embedded ]; then model_args=(); name=colors; else model_args=(--model "$model" --name resnet50); name=resnet50; fi
  if [ "$provider" = cuda ]; then use_runtime; use_gpu_libraries; fi
  machine
  : >"$out/offline.txt"
  if [ "$provider" = cuda ]; then
    [ -f "$model" ] || export_models
    echo "== offline: gpu_bench, device-resident IoBinding, fp32 =="
    "$bin/gpu_bench" "$model" --modes iobinding --batches 1,128 --iterations 100 --warmup 20 2>&1 | tee "$out/offline.txt"
  fi
  echo "== HTTP: loadgen against serve (preprocessed [1,3,224,224] f32 tensors, closed loop) =="
  : >"$out/serve-results.txt"
  local batched=(--max-batch 128 --queue 4096) fine=1,2,4,8,16,32,48,64,80,96,112
  for server in ${SERVERS:-unbatched d0-sps d2ms-sps d0}; do
    case $server in
      unbatched) serve_and_drive unbatched --no-batching ;;
      # Two batcher workers unless the entry says otherwise.
      # A session per padded batch size (BatcherBuilder::session_per_batch_size), warmed up at start.
      d0-sps) serve_and_drive batched-d0-w2-pad-sps "${batched[@]}" --pad-batches --batch-workers 2 --max-delay-us 0 --session-per-size ;;
      d2ms-sps) serve_and_drive batched-d2ms-w2-pad-sps "${batched[@]}" --pad-batches --batch-workers 2 --max-delay-us 2000 --session-per-size ;;
      # Finer padding steps (less padding at 65-127 requests), 2 or 3 workers.
      d0-sps-fine) serve_and_drive batched-d0-w2-fine-sps "${batched[@]}" --batch-workers 2 --max-delay-us 0 --session-per-size --pad-sizes "$fine" ;;
      d0-sps-fine-w3) serve_and_drive batched-d0-w3-fine-sps "${batched[@]}" --batch-workers 3 --max-delay-us 0 --session-per-size --pad-sizes "$fine" ;;
      d0-sps-fine-g4) serve_and_drive batched-d0-w2-fine-sps-g4 "${batched[@]}" --batch-workers 2 --max-delay-us 0 --session-per-size --pad-sizes "$fine" --gather-threads 4 ;;
      # One session for every size (the first measurement's configuration).
      d0) serve_and_drive batched-d0-w2-pad "${batched[@]}" --pad-batches --batch-workers 2 --max-delay-us 0 ;;
    esac
  done
  echo "== table =="
  python3 - "$out" <<'PY' | tee "$out/table.md"
import pathlib, sys
out = pathlib.Path(sys.argv[1])
offline = {}
for line in (out / "offline.txt").read_text().splitlines():
    parts = line.split()
    if len(parts) == 5 and parts[1].isdigit():
        offline[int(parts[1])] = (float(parts[2]), float(parts[4]))
b128 = offline.get(128, (0, 0))[1]
if offline:
  print(f"offline IoBinding: batch 1 {offline.get(1, (0, 0))[0]:.3f} ms ({offline.get(1, (0, 0))[1]:.0f}/s); "
        f"batch 128 {offline.get(128, (0, 0))[0]:.2f} ms ({b128:.0f} images/s)")
rows = {}
for line in (out / "serve-results.txt").read_text().splitlines():
    name, _, *fields = line.split()
    kv = dict(f.split("=", 1) for f in fields)
    rows[(name, int(kv["concurrency"]))] = kv
print("| server | clients | images/s | % of offline b128 | p50 ms | p90 ms | p99 ms | errors |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for (name, clients), kv in sorted(rows.items(), key=lambda r: (r[0][1], r[0][0])):
    share = 100 * float(kv["throughput"]) / b128 if b128 else 0
    print(f"| {name} | {clients} | {float(kv['throughput']):.0f} | {share:.0f}% | {kv['p50_ms']} | {kv['p90_ms']} | {kv['p99_ms']} | {kv['errors']} |")
for name in sorted({n for n, _ in rows} - {"unbatched"}):
    top, one, base = rows.get((name, 256)), rows.get((name, 1)), rows.get(("unbatched", 1))
    if top and b128:
        share = float(top["throughput"]) / b128
        ok = share >= 0.8 and float(top["p99_ms"]) <= 30
        print(f"{name}: 256 clients {100 * share:.0f}% of offline b128, p99 {top['p99_ms']} ms -> goal (>=80%, p99<=30 ms) {'MET' if ok else 'NOT MET'}")
    if one and base:
        ratio = float(one["p50_ms"]) / float(base["p50_ms"])
        print(f"{name}: 1 client p50 {ratio:.2f}x the unbatched p50 -> goal (<=1.2x) {'MET' if ratio <= 1.2 else 'NOT MET'}")
PY
}

# serve_and_drive LABEL SERVE-ARGS...: starts the server, drives it at each concurrency, stops it with SIGTERM.
serve_and_drive() {
  local label=$1; shift
  local log="$out/serve-$label.log" pid address line
  "$bin/serve" "${model_args[@]}" --provider "$provider" --listen 127.0.0.1:0 "$@" >"$log" 2>&1 &
  pid=$!
  address=$(server_address "$pid" "$log" 600)
  if [ -z "$address" ]; then echo "serve ($label) did not start:"; cat "$log"; kill "$pid" 2>/dev/null; return; fi
  head -1 "$log"
  # Warm-up, not recorded (Triton's model warm-up): every batch size the measured runs will use
  # is seen once, so ORT's per-shape cuDNN tuning (~0.7 s per new shape for ResNet-50 on an H200)
  # does not land in a measurement.
  if [ "${WARMUP_LADDER:-1}" = 1 ]; then
    for clients in 1 2 4 8 16 32 64 128 256; do
      "$bin/loadgen" --addr "$address" --model "$name" --concurrency "$clients" --seconds 1 --warmup 1 >/dev/null 2>&1
    done
  fi
  for clients in $clients_list; do
    line=$("$bin/loadgen" --addr "$address" --model "$name" --concurrency "$clients" --seconds "$seconds" --warmup 2 2>>"$out/loadgen-errors.txt" | grep '^RESULT')
    echo "$label $line" | tee -a "$out/serve-results.txt"
  done
  curl -s "http://$address/metrics" 2>/dev/null | grep -E '^batcher_(batches_total|batch_size_(sum|count))' | sed "s/^/$label /"
  kill -TERM "$pid"
  wait "$pid"; echo "serve ($label) exited with status $?"
}

# The plugins and zeros_cuda's ordering without the CUDA bundle: ORT 1.32.0's CPU library
# (.gpu-run/libonnxruntime.so.1.32.0.xz) is enough, as none of these needs ORT's CUDA provider.
# Needs the TensorRT-RTX parts stored first (.gpu-bundle/trt0, trt1: the libraries
# libonnxruntime_providers_nv_tensorrt_rtx.so needs, tar.xz split in two; each call stores its
# part with `mkdir -p /tmp/trt && cp .gpu-bundle/trtK/part /tmp/trt/K`) and, in .gpu-run/,
# ordering_old, ordering_fixed, plugin_openvino, plugin_tensorrt_rtx, openvino-cpu.tar.xz and
# ch_PP-OCRv4_det_infer.onnx.
mode_plugins() {
  export LD_LIBRARY_PATH=/usr/local/cuda-13.0/targets/x86_64-linux/lib
  xz -dc .gpu-run/libonnxruntime.so.1.32.0.xz >/tmp/libonnxruntime.so.1.32.0
  export ONNXRT_DYLIB_PATH=/tmp/libonnxruntime.so.1.32.0
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/machine.txt"
  grep -m1 "model name" /proc/cpuinfo | tee -a "$out/machine.txt"
  for pass in 1 2; do
    for build in old fixed; do
      echo "== zeros_cuda ordering, pass $pass, $build build (the copy tests; ORT's CUDA run needs the bundle)"
      timeout 120 .gpu-run/ordering_$build --test-threads 1 --nocapture --skip an_ort_cuda_run 2>&1 \
        | tee "$out/ordering-$build-$pass.log" | grep -E "rounds|test result|panicked"
    done
  done
  echo "== the OpenVINO plugin on the host CPU"
  mkdir -p /tmp/openvino && tar xJf .gpu-run/openvino-cpu.tar.xz -C /tmp/openvino
  local ov=/tmp/openvino/onnxruntime_ep_openvino
  LD_LIBRARY_PATH=$ov:$LD_LIBRARY_PATH ONNXRT_TEST_OPENVINO_PLUGIN=$ov/libonnxruntime_providers_openvino_plugin.so \
    ONNXRT_TEST_OCR_DET=$PWD/.gpu-run/ch_PP-OCRv4_det_infer.onnx ONNXRT_REQUIRE_OPENVINO_DEVICE=1 \
    timeout 200 .gpu-run/plugin_openvino --test-threads 1 --nocapture 2>&1 | tee "$out/plugin_openvino.log" | grep -vE "^\s*$" | tail -14
  echo "== the TensorRT-RTX plugin, ORT's verbose log"
  if [ -f /tmp/trt/0 ] && [ -f /tmp/trt/1 ]; then
    cat /tmp/trt/0 /tmp/trt/1 | xz -dc | tar xf - -C /tmp
    LD_LIBRARY_PATH=/tmp/trtrtx:$LD_LIBRARY_PATH ONNXRT_TEST_TRT_RTX_PLUGIN=/tmp/trtrtx/libonnxruntime_providers_nv_tensorrt_rtx.so \
      timeout 200 .gpu-run/plugin_tensorrt_rtx --nocapture 2>&1 | tee "$out/plugin_tensorrt_rtx.log" | grep -vE "^\s*$" | tail -60
  else
    echo "TensorRT-RTX parts missing in /tmp/trt: the machine went cold between calls"
  fi
}

case "${1:-}" in
  all) mode_all ;;
  tests) mode_tests ;;
  call) mode_call ;;
  devices) mode_devices ;;
  plugins) mode_plugins ;;
  perf) mode_perf ;;
  batch) mode_batch ;;
  serve) mode_serve ;;
  serve-configs) mode_serve_configs ;;
  *)
    echo "usage: bash tools/gpu/run.sh all|tests|call|devices|plugins|perf|batch|serve|serve-configs (tools/gpu/README.md)" >&2
    exit 2
    ;;
esac
