#!/usr/bin/env bash
# Issue 29 on the GPU machine, in one call: the Open Inference Protocol server (serve
# --model-repository) on the template's ResNet-50 fp32 export, driven over REST with binary tensors
# (loadgen --protocol v2 --binary), next to the offline batch-128 IoBinding throughput of the same
# model in the same call (examples/gpu_bench.rs). Goals: 256 closed-loop clients >= 90 % of
# offline batch-128 images/s; open loop at 80 % of that offline rate answers every request with
# p99 <= 3x the batch-128 service time.
#
# Prerequisites (tools/gpu/README.md): the last bundle part unpacked (/tmp/ort-gpu) and, in
# .gpu-run/, release binaries built here with ONNXRT_DIST=gpu-cuda13-1.30.0-wheel:
#   cargo build --release -p onnxrt-serve --features cuda --bin serve --bin loadgen
#   cargo build --release -p onnxrt-examples --features cuda --example gpu_bench
#   bash tools/gpu/serve29.sh            # results in $OUT (default /tmp/out); SECONDS_PER_RUN=8
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
seconds=${SECONDS_PER_RUN:-8}
bin=${BIN:-.gpu-run}
model=${MODEL:-/tmp/resnet50.onnx}
capi=/tmp/ort-gpu/onnxruntime/capi
export ONNXRT_DYLIB_PATH=$capi/libonnxruntime.so.1.30.0
export LD_LIBRARY_PATH=$capi:/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/lib/x86_64-linux-gnu
{ nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv 2>/dev/null; echo "cpus: $(nproc)"; } | tee "$out/machine.txt"
[ -f "$model" ] || python3 tools/gpu/export_resnet.py /tmp/resnet50.onnx /tmp/resnet50_fp16.onnx 2>&1 | tail -1
echo "== offline: gpu_bench, device-resident IoBinding, fp32 =="
# OFFLINE_MODES adds modes after iobinding (e.g. iobinding,cuda_graph,safe_graph: the raw and the
# safe CUDA graph side by side); the goals use iobinding's batch-128 line.
"$bin/gpu_bench" "$model" --modes "${OFFLINE_MODES:-iobinding}" --batches 1,128 --iterations 100 --warmup 20 2>&1 | tee "$out/offline.txt"
b128=$(awk '$1 == "iobinding" && $2 == 128 && NF == 5 { print $5 }' "$out/offline.txt" | head -1)
b128_ms=$(awk '$1 == "iobinding" && $2 == 128 && NF == 5 { print $3 }' "$out/offline.txt" | head -1)

# The template's best batcher settings of issue 14 (a session per padded size, fine steps, two
# workers, four gather threads; batching and, since 2026-12-05, `hold_while_busy` and
# `device_inputs` are on by default on CUDA), then variants of it given in
# VARIANTS as `label:JSON` words, each JSON merged over the base config (CLIENTS_LIST for the base).
base='{"provider": "cuda", "max_batch": 128, "queue": 4096, "max_delay_us": 0, "batch_workers": 2, "gather_threads": 4,
 "pad_sizes": [1, 2, 4, 8, 16, 32, 48, 64, 80, 96, 112, 128], "session_per_batch_size": true,
 "warmup": {"input": [1, 3, 224, 224]}}'
: >"$out/results.txt"
: >"$out/batches.txt"
: >"$out/phases.txt"
run_variant() {
  local label=$1 override=$2 clients_list=$3
  local repo
  repo=$(mktemp -d /tmp/repo29.XXXXXX)
  mkdir -p "$repo/resnet50"
  cp "$model" "$repo/resnet50/model.onnx"
  python3 -c 'import json, sys; c = json.loads(sys.argv[1]); c.update(json.loads(sys.argv[2])); print(json.dumps(c))' \
    "$base" "$override" >"$repo/resnet50/config.json"
  local log=$out/serve-$label.log
  RUST_LOG=warn "$bin/serve" --model-repository "$repo" --listen 127.0.0.1:0 --grpc-listen off --max-connections 4096 >"$log" 2>&1 &
  local pid=$!
  local address=""
  for _ in $(seq 1800); do
    address=$(sed -n 's/^listening on http:\/\/\([^ ]*\).*/\1/p' "$log")
    [ -n "$address" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$address" ]; then echo "serve ($label) did not start:"; cat "$log"; return; fi
  echo "== $label: $(cat "$repo/resnet50/config.json")"
  drive() { "$bin/loadgen" --addr "$address" --protocol v2 --model resnet50 --binary --shape input=1x3x224x224 "$@" 2>>"$out/loadgen-errors.txt"; }
  # One recorded run: its RESULT line, and a PHASES line (tools/gpu/phases.py) from the server's
  # metrics before and after it, the CPU seconds of both processes and the GPU's utilisation.
  measure() {
    local tag=$1; shift
    local scratch ticks cpu0 cpu1 smi
    scratch=$(mktemp -d /tmp/measure29.XXXXXX)
    ticks=$(getconf CLK_TCK)
    curl -s "http://$address/metrics" >"$scratch/before"
    cpu0=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
    # GPU_UTIL=0: no sampler during the run (to see whether nvidia-smi's queries add to the tail).
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
  # Warm-up ladder (not recorded): every batch size is seen before a measurement.
  for clients in 1 8 64 256; do drive --concurrency "$clients" --seconds 1 --warmup 1 >/dev/null; done
  for clients in $clients_list; do
    measure closed --concurrency "$clients" --seconds "$seconds" --warmup 2
  done
  if [ -n "$b128" ]; then
    local rate
    rate=$(python3 -c "print(int(0.8 * $b128))")
    measure open80 --rate "$rate" --duration-requests $((rate * seconds)) --warmup 1
  fi
  curl -s "http://$address/metrics" | grep -E '^batcher_(batches_total|graph_runs_total|batch_size_(sum|count))' | sed "s/^/$label /" | tee -a "$out/batches.txt"
  kill -TERM "$pid"; wait "$pid"; echo "serve ($label) exited with status $?"
}
[ "${SKIP_BASE:-0}" = 1 ] || run_variant base '{}' "${CLIENTS_LIST:-1 64 256}"
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
  model=/tmp/host_path.onnx b128=$b128 run_variant host_path '{}' "64 256"
fi
# By default the base settings without the hold (the batcher before 2026-12-05) and without the
# batcher's own device buffers (`device_inputs`; ORT copies the batch in the run), so one call
# compares them; VARIANTS="" for none.
# (The default is spelled out on its own line: inside ${VARIANTS-...} its closing brace would
# end the expansion early and leave a stray `}` word behind the caller's variants.)
# Since 2026-12-06 the defaults include CUDA graphs per padded size (`base` has padded sizes), so
# `no_graphs` is the base without them.
default_variants='no_graphs:{"cuda_graphs":false} no_hold:{"hold_while_busy":false} no_device:{"device_inputs":false}'
for variant in ${VARIANTS-$default_variants}; do
  run_variant "${variant%%:*}" "${variant#*:}" "${VARIANT_CLIENTS:-256}"
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
