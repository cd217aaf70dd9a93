#!/usr/bin/env bash
# Drives a running Open Inference Protocol server with NVIDIA's perf_analyzer, over HTTP and gRPC,
# at concurrency 1 to 8, for one model; prints throughput and latency per concurrency and keeps
# perf_analyzer's CSV reports.
#   tools/serve/perf.sh HTTP_HOST:PORT GRPC_HOST:PORT [MODEL [NAME:DIMS ...]]
# MODEL defaults to ppocr_cls with x:1,3,48,192 (a repository from make_repository.py). Free axes
# of other models' inputs are given as NAME:DIMS, the whole shape batch axis included (serve
# reports no max_batch_size, so perf_analyzer keeps the shape as the metadata gives it).
# PERF_ARGS: perf_analyzer options instead of the default windows below (e.g.
# PERF_ARGS='--measurement-interval 5000'); PERF_OUT: the report folder (default perf-out).
#
# perf_analyzer comes from clients-env.sh --perf (tritonclient 2.41.0's binary: the PyPI package
# perf-analyzer resolves to a placeholder here). Over HTTP it also asks for the model's Triton
# config, GET /v2/models/{m}/config, and stops if that is not answered; it reads max_batch_size
# (absent: 0, the shape taken whole), dynamic_batching and sequence_batching from it, so
# {"name": ..., "max_batch_size": 0} is enough. Over gRPC it ran against serve as it is.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
say() { printf '\033[1mperf.sh:\033[0m %s\n' "$*" >&2; }
if [ $# -lt 2 ]; then say "usage: perf.sh HTTP_HOST:PORT GRPC_HOST:PORT [MODEL [NAME:DIMS ...]]"; exit 2; fi
http=$1 grpc=$2
model=${3:-ppocr_cls}
shift $(( $# >= 3 ? 3 : 2 ))
shapes=("$@")
if [ "$model" = ppocr_cls ] && [ ${#shapes[@]} -eq 0 ]; then shapes=('x:1,3,48,192'); fi

python=$("$root/tools/serve/clients-env.sh" --perf)
venv=$(dirname "$(dirname "$python")")
perf_analyzer=$venv/bin/perf_analyzer
# libcudart.so.12 from the nvidia-cuda-runtime-cu12 wheel (perf_analyzer links it; no GPU needed).
cudart=$("$python" -c 'import nvidia.cuda_runtime, os; print(os.path.join(nvidia.cuda_runtime.__path__[0], "lib"))')
export LD_LIBRARY_PATH=$cudart${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

out=${PERF_OUT:-perf-out}
mkdir -p "$out"
shape_args=()
for s in ${shapes[@]+"${shapes[@]}"}; do shape_args+=(--shape "$s"); done
# Windows of 200 requests, stable within 30 % (the default 10 % is not reached on a shared two-core
# machine: 20 windows of 3 s at concurrency 1 were not enough there).
read -r -a extra <<<"${PERF_ARGS:---measurement-mode count_windows --measurement-request-count 200 --stability-percentage 30 --max-trials 10}"

status=0
for protocol in http grpc; do
  url=$http; [ "$protocol" = grpc ] && url=$grpc
  csv=$out/$model-$protocol.csv
  say "$model over $protocol ($url), concurrency 1..8"
  if ! "$perf_analyzer" -m "$model" -u "$url" -i "$protocol" ${shape_args[@]+"${shape_args[@]}"} \
       --concurrency-range 1:8:1 -f "$csv" "${extra[@]}" >"$out/$model-$protocol.log" 2>&1; then
    say "perf_analyzer failed over $protocol; the end of its output:"
    tail -n 15 "$out/$model-$protocol.log" >&2
    status=1
    continue
  fi
  "$python" - "$csv" "$protocol" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(f"{sys.argv[2]:5} {'concurrency':>11} {'infer/s':>9} {'p50 ms':>8} {'p99 ms':>8}")
for r in sorted(rows, key=lambda r: int(r["Concurrency"])):
    print(f"{'':5} {r['Concurrency']:>11} {float(r['Inferences/Second']):>9.1f} "
          f"{int(r['p50 latency']) / 1000:>8.2f} {int(r['p99 latency']) / 1000:>8.2f}")
PY
done
say "reports in $out/"
exit "$status"
