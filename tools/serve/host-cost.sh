#!/usr/bin/env bash
# What the server's host path costs per request, in CPU time, for large binary tensors: serve
# binaries given as arguments are started in turn on a model that does almost nothing (a global
# average pool of a 1x3x224x224 f32 input, 602 KB per request; one intra-op thread, so no spinning
# pool inflates the count) and driven by loadgen over REST with the binary-tensor extension. Per
# binary and mode (batching off, batching on): the server's user+system CPU microseconds per
# request over a fixed request count, and throughput. Binaries alternate, REPEATS times.
#
#   bash tools/serve/host-cost.sh /tmp/serve-base target/release/serve   # REQUESTS=6000 REPEATS=3
set -euo pipefail
cd "$(dirname "$0")/../.."
requests=${REQUESTS:-6000}
repeats=${REPEATS:-3}
loadgen=${LOADGEN:-target/release/loadgen}
work=$(mktemp -d /tmp/host-cost.XXXXXX)
trap 'rm -rf "$work"' EXIT
python3 - "$work/model.onnx" <<'PY'
import sys
import onnx
from onnx import TensorProto, helper
x = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["n", 3, 224, 224])
y = helper.make_tensor_value_info("output", TensorProto.FLOAT, ["n", 3])
nodes = [helper.make_node("GlobalAveragePool", ["input"], ["pooled"]),
         helper.make_node("Flatten", ["pooled"], ["output"], axis=1)]
graph = helper.make_graph(nodes, "host_path", [x], [y])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PY
ticks=$(getconf CLK_TCK)
for mode in direct batched; do
  repo=$work/repo-$mode
  mkdir -p "$repo/pool"
  cp "$work/model.onnx" "$repo/pool/model.onnx"
  if [ "$mode" = batched ]; then batching=true; else batching=false; fi
  echo "{\"batching\": $batching, \"threads\": 1, \"max_batch\": 8, \"warmup\": {\"input\": [1, 3, 224, 224]}}" >"$repo/pool/config.json"
done
for repeat in $(seq "$repeats"); do
  for mode in direct batched; do
    for serve in "$@"; do
      log=$work/serve.log
      RUST_LOG=warn "$serve" --model-repository "$work/repo-$mode" --listen 127.0.0.1:0 --grpc-listen off >"$log" 2>&1 &
      pid=$!
      address=""
      for _ in $(seq 300); do
        address=$(sed -n 's/^listening on http:\/\/\([^ ]*\).*/\1/p' "$log")
        [ -n "$address" ] && break
        sleep 0.1
      done
      [ -n "$address" ] || { cat "$log"; exit 1; }
      drive() { "$loadgen" --addr "$address" --protocol v2 --model pool --binary --shape input=1x3x224x224 --concurrency 4 "$@"; }
      drive --requests 500 >/dev/null
      before=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
      result=$(drive --requests "$requests" | grep '^RESULT')
      after=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
      kill -TERM "$pid"; wait "$pid" || true
      throughput=$(sed -n 's/.*throughput=\([0-9.]*\).*/\1/p' <<<"$result")
      python3 -c "import sys; print(f'HOSTCOST repeat={sys.argv[1]} mode={sys.argv[2]} serve={sys.argv[3]} cpu_us_per_request={1e6 * ($after - $before) / $ticks / $requests:.0f} throughput={sys.argv[4]}')" \
        "$repeat" "$mode" "$serve" "$throughput"
    done
  done
done
