#!/usr/bin/env bash
# Issue 14 on the GPU machine, in one call: the HTTP server (onnxrt-serve/src/bin/serve) with and without the
# dynamic batcher, driven by the load generator (onnxrt-serve/src/bin/loadgen/) with preprocessed batch-1
# tensors at 1, 8, 64 and 256 concurrent clients, next to the offline batch-128 IoBinding
# throughput of the same ResNet-50 fp32 export (examples/gpu_bench.rs), in one table.
#
# Prerequisites (tools/gpu/README.md): the last bundle part unpacked (/tmp/ort-gpu) and, in
# .gpu-run/, these release binaries built here with ONNXRT_DIST=gpu-cuda13-1.30.0-wheel:
#   cargo build --release -p onnxrt-serve --features cuda --bin serve --bin loadgen
#   cargo build --release -p onnxrt-examples --features cuda --example gpu_bench
#
#   bash tools/gpu/serve14.sh        # results in $OUT (default /tmp/out); SECONDS_PER_RUN=8
#
# The same comparison on a CPU machine (no offline row), with the embedded model:
#   BIN=target/release PROVIDER=cpu MODEL=embedded bash tools/gpu/serve14.sh
set -uo pipefail
out=${OUT:-/tmp/out}
mkdir -p "$out"
seconds=${SECONDS_PER_RUN:-8}
bin=${BIN:-.gpu-run}
provider=${PROVIDER:-cuda}
model=${MODEL:-/tmp/resnet50.onnx}
clients_list=${CLIENTS:-1 8 64 256}
# The model name in the URL.
if [ "$model" = embedded ]; then model_args=(); name=colors; else model_args=(--model "$model" --name resnet50); name=resnet50; fi
if [ "$provider" = cuda ]; then
  capi=/tmp/ort-gpu/onnxruntime/capi
  export ONNXRT_DYLIB_PATH=$capi/libonnxruntime.so.1.30.0
  export LD_LIBRARY_PATH=$capi:/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/lib/x86_64-linux-gnu
fi
{ nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv 2>/dev/null; echo "cpus: $(nproc)"; } | tee "$out/machine.txt"
: >"$out/offline.txt"
if [ "$provider" = cuda ]; then
  [ -f "$model" ] || python3 tools/gpu/export_resnet.py /tmp/resnet50.onnx /tmp/resnet50_fp16.onnx 2>&1 | tail -1
  echo "== offline: gpu_bench, device-resident IoBinding, fp32 =="
  "$bin/gpu_bench" "$model" --modes iobinding --batches 1,128 --iterations 100 --warmup 20 2>&1 | tee "$out/offline.txt"
fi

# serve_and_drive LABEL SERVE-ARGS...: starts the server, drives it at each concurrency, stops it with SIGTERM.
serve_and_drive() {
  local label=$1; shift
  local log="$out/serve-$label.log"
  "$bin/serve" "${model_args[@]}" --provider "$provider" --listen 127.0.0.1:0 "$@" >"$log" 2>&1 &
  local pid=$!
  local address=""
  for _ in $(seq 600); do
    address=$(sed -n 's/^listening on http:\/\/\([^ ]*\).*/\1/p' "$log")
    [ -n "$address" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
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

echo "== HTTP: loadgen against serve (preprocessed [1,3,224,224] f32 tensors, closed loop) =="
: >"$out/serve-results.txt"
batched=(--max-batch 128 --queue 4096 --pad-batches)
fine=1,2,4,8,16,32,48,64,80,96,112
for server in ${SERVERS:-unbatched d0-sps d2ms-sps d0}; do
  case $server in
    unbatched) serve_and_drive unbatched --no-batching ;;
    # Two batcher workers unless the entry says otherwise.
    # A session per padded batch size (BatcherBuilder::session_per_batch_size), warmed up at start.
    d0-sps) serve_and_drive batched-d0-w2-pad-sps "${batched[@]}" --batch-workers 2 --max-delay-us 0 --session-per-size ;;
    d2ms-sps) serve_and_drive batched-d2ms-w2-pad-sps "${batched[@]}" --batch-workers 2 --max-delay-us 2000 --session-per-size ;;
    # Finer padding steps (less padding at 65-127 requests), 2 or 3 workers.
    d0-sps-fine) serve_and_drive batched-d0-w2-fine-sps "${batched[@]}" --batch-workers 2 --max-delay-us 0 --session-per-size --pad-sizes "$fine" ;;
    d0-sps-fine-w3) serve_and_drive batched-d0-w3-fine-sps "${batched[@]}" --batch-workers 3 --max-delay-us 0 --session-per-size --pad-sizes "$fine" ;;
    d0-sps-fine-g4) serve_and_drive batched-d0-w2-fine-sps-g4 "${batched[@]}" --batch-workers 2 --max-delay-us 0 --session-per-size --pad-sizes "$fine" --gather-threads 4 ;;
    # One session for every size (the first measurement's configuration).
    d0) serve_and_drive batched-d0-w2-pad "${batched[@]}" --batch-workers 2 --max-delay-us 0 ;;
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
