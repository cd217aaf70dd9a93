#!/usr/bin/env bash
# Drives the serve binary with clients nobody here wrote: tritonclient over HTTP (JSON
# and binary tensors) and gRPC, on the four real models, answers compared bitwise with single runs
# of the onnxrt CLI (onnxrt-serve/tests/clients/check_oip.py says what is checked).
#   tools/serve/check-clients.sh [SERVE_BIN]
# SERVE_BIN defaults to target/debug/serve; then serve and the onnxrt CLI are built first
# (ONNXRT_CLI names another CLI binary). Steps: the client environment (clients-env.sh), the model
# repository in a temporary folder (make_repository.py), the server on free ports
#   serve --model-repository DIR --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0
# (both ports read from its stdout), the checker, SIGTERM, and the server must exit 0.
# Then (ONNXRT_CHECK_ROBUST=0 skips it) a second server on the same models as they come
# (no config.json): check_robust.py (every model starts, inputs that crash ONNX Runtime 1.16 cost
# one request, client errors are 400, extensions refused, memory after a 2048x2048 det request),
# then tools/serve/fuzz_oip.py with ONNXRT_FUZZ_REQUESTS (default 2000) mutated requests; the
# server must be up after them and exit 0 on SIGTERM.
# Then a third server in --model-control-mode explicit: check_control.py (load, unload, a reload
# under load with no failed request, statistics, model config), check_shared_memory.py, and
# perf_analyzer with --shared-memory system over HTTP and gRPC (ONNXRT_CHECK_PERF=0 skips it).
# Exit status: the checker's, or 1 if the server did not start or did not exit 0.
# ONNXRT_CHECK_MODELS=a,b checks only these of the four models (default: all four).
# The temporary folder is removed on success and kept (and named) on failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
say() { printf '\033[1mcheck-clients.sh:\033[0m %s\n' "$*" >&2; }
target=${CARGO_TARGET_DIR:-$root/target}

if [ $# -gt 1 ]; then say "usage: check-clients.sh [SERVE_BIN]"; exit 2; fi
if [ $# -eq 1 ]; then
  serve=$1
  [ -n "${ONNXRT_CLI:-}" ] || cargo build -q -p onnxrt-cli
else
  serve=$target/debug/serve
  cargo build -q -p onnxrt-serve --bin serve
  [ -n "${ONNXRT_CLI:-}" ] || cargo build -q -p onnxrt-cli
fi
cli=${ONNXRT_CLI:-$target/debug/onnxrt}
[ -x "$serve" ] || { say "no server binary at $serve"; exit 1; }
[ -x "$cli" ] || { say "no onnxrt CLI at $cli"; exit 1; }

python=$(tools/serve/clients-env.sh)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/onnxrt-check-clients.XXXXXX")
pid=
# shellcheck disable=SC2317  # called by the EXIT trap
finish() {
  local rc=$?
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
  if [ "$rc" = 0 ]; then rm -rf "$tmp"; else say "kept $tmp (server log: $tmp/serve.err)"; fi
}
trap finish EXIT

"$python" onnxrt-serve/tests/clients/make_repository.py "$tmp/repository" >&2
# ONNXRT_CHECK_MODELS=a,b: only these of the four (the others' folders are removed).
models=${ONNXRT_CHECK_MODELS:-ppocr_det,ppocr_rec,ppocr_cls,silero_vad}
for folder in "$tmp/repository"/*/; do
  name=$(basename "$folder")
  case ",$models," in *",$name,"*) ;; *) rm -rf "$folder"; say "left out $name (ONNXRT_CHECK_MODELS)";; esac
done
# The checker's own logic first (request building, comparison, the CLI reference path).
ONNXRT_CLI=$cli ONNXRT_REPOSITORY=$tmp/repository "$python" onnxrt-serve/tests/clients/test_check_oip.py >"$tmp/unit.log" 2>&1 \
  || { cat "$tmp/unit.log" >&2; say "the checker's unit tests failed"; exit 1; }
say "the checker's unit tests: $(grep -E "^(Ran|OK|FAILED)" "$tmp/unit.log" | tr "\n" " ")"

say "starting $serve"
"$serve" --model-repository "$tmp/repository" --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 \
  >"$tmp/serve.out" 2>"$tmp/serve.err" &
pid=$!

# Both "listening on http://HOST:PORT (...)" and "grpc listening on HOST:PORT", polled at most
# 1200 times (0.1 s apart: loading and warming four models in a debug build on a loaded machine).
http="" grpc=""
for _ in $(seq 1200); do
  http=$(sed -n 's|^listening on http://\([^ ]*\).*|\1|p' "$tmp/serve.out" | head -n1)
  grpc=$(sed -n 's|^grpc listening on \([^ ]*\).*|\1|p' "$tmp/serve.out" | head -n1)
  [ -n "$http" ] && [ -n "$grpc" ] && break
  if ! kill -0 "$pid" 2>/dev/null; then
    wait "$pid" && rc=0 || rc=$?
    pid=
    say "the server exited ($rc) before printing both addresses; its stdout and stderr:"
    cat "$tmp/serve.out" "$tmp/serve.err" >&2
    exit 1
  fi
  sleep 0.1
done
if [ -z "$http" ] || [ -z "$grpc" ]; then
  say "no 'listening on http://...' and 'grpc listening on ...' lines after 120 s; stdout:"
  cat "$tmp/serve.out" >&2
  exit 1
fi
say "server $pid: http $http, grpc $grpc"

"$python" onnxrt-serve/tests/clients/check_oip.py --http "$http" --grpc "$grpc" \
  --repository "$tmp/repository" --onnxrt "$cli" --work "$tmp/work" --models "$models" && checked=0 || checked=$?

# Not asserted (metrics are the server's own, not the protocol's): did the concurrent requests of
# the batching models meet in batches?
"$python" - "$http" >&2 <<'PY' || true
import sys, urllib.request
text = urllib.request.urlopen(f"http://{sys.argv[1]}/metrics", timeout=10).read().decode()
lines = [l for l in text.splitlines() if l.startswith(("batcher_requests_completed_total", "batcher_batches_total"))]
print("check-clients.sh: the server's batch counters: " + ("; ".join(lines) if lines else "none"))
PY

if ! kill -TERM "$pid" 2>/dev/null; then
  wait "$pid" && served=0 || served=$?
  pid=
  say "the server had already exited ($served$([ "$served" -gt 128 ] && echo ", signal $((served - 128))")) before SIGTERM; the end of its stderr:"
  tail -n 20 "$tmp/serve.err" >&2
  exit 1
fi
for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
  say "the server was still running 30 s after SIGTERM; killed"
  exit 1
fi
wait "$pid" && served=0 || served=$?
pid=
if [ "$served" != 0 ]; then
  say "the server exited $served after SIGTERM (expected 0); the end of its stderr:"
  tail -n 20 "$tmp/serve.err" >&2
  exit 1
fi
say "the server exited 0 after SIGTERM"
# An access line per request, over gRPC as over REST: every method the clients called has one.
missing=()
for rpc in ServerLive ServerReady ServerMetadata ModelReady ModelMetadata RepositoryIndex ModelInfer; do
  grep -Eq "method=\"?grpc\"? rpc=\"?$rpc\b" "$tmp/serve.err" || missing+=("$rpc")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "no access line for the gRPC call(s) ${missing[*]} in the server's log"
  exit 1
fi
say "access lines: one for each of the 7 gRPC methods called ($(grep -c 'method=.\?grpc' "$tmp/serve.err") gRPC lines)"
[ "$checked" = 0 ] || exit "$checked"

# The first day of a serving engineer: the same models as they come (no config.json), the server's defaults only: every
# model starts, inputs that crash the runtime cost one request, client errors are 400,
# extensions it lacks are refused, memory after an outsized request (check_robust.py); then
# ONNXRT_FUZZ_REQUESTS (default 2000) mutated requests, and the server must still be up.
if [ "${ONNXRT_CHECK_ROBUST:-1}" = 1 ]; then
  mkdir -p "$tmp/as-they-come"
  for folder in "$tmp/repository"/*/; do
    name=$(basename "$folder")
    mkdir -p "$tmp/as-they-come/$name" && cp "$folder/model.onnx" "$tmp/as-they-come/$name/"
  done
  say "starting $serve on the models as they come (no config.json)"
  "$serve" --model-repository "$tmp/as-they-come" --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 \
    >"$tmp/robust.out" 2>"$tmp/robust.err" &
  pid=$!
  http="" grpc=""
  for _ in $(seq 1200); do
    http=$(sed -n 's|^listening on http://\([^ ]*\).*|\1|p' "$tmp/robust.out" | head -n1)
    grpc=$(sed -n 's|^grpc listening on \([^ ]*\).*|\1|p' "$tmp/robust.out" | head -n1)
    [ -n "$http" ] && [ -n "$grpc" ] && break
    kill -0 "$pid" 2>/dev/null || { say "the server on the models as they come did not start:"; cat "$tmp/robust.err" >&2; exit 1; }
    sleep 0.1
  done
  [ -n "$http" ] && [ -n "$grpc" ] || { say "no addresses from the server on the models as they come"; exit 1; }
  "$python" onnxrt-serve/tests/clients/check_robust.py --http "$http" --grpc "$grpc" --pid "$pid" || exit 1
  "$python" tools/serve/fuzz_oip.py --http "$http" --pid "$pid" --requests "${ONNXRT_FUZZ_REQUESTS:-2000}" || exit 1
  kill -TERM "$pid"
  for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  wait "$pid" && served=0 || served=$?
  pid=
  [ "$served" = 0 ] || { say "the server on the models as they come exited $served after SIGTERM"; tail -n 20 "$tmp/robust.err" >&2; exit 1; }
  say "the server on the models as they come: checks passed, fuzzed, exited 0 after SIGTERM"
fi

# Model control (check_control.py): the models in Triton's layout (NAME/1/model.onnx) and a
# folder that is no model, served with --model-control-mode explicit; load, unload, a failed load
# and a reload under tritonclient load (HTTP and gRPC) with no failed request.
control_model=ppocr_cls
if [ ! -d "$tmp/repository/$control_model" ]; then
  for folder in "$tmp/repository"/*/; do control_model=$(basename "$folder"); break; done
fi
for folder in "$tmp/repository"/*/; do
  name=$(basename "$folder")
  mkdir -p "$tmp/control/$name/1" && cp "$folder/model.onnx" "$tmp/control/$name/1/"
  if [ -f "$folder/config.json" ]; then cp "$folder/config.json" "$tmp/control/$name/"; fi
done
mkdir -p "$tmp/control/broken/1" && echo "not an ONNX model" >"$tmp/control/broken/1/model.onnx"
say "starting $serve --model-control-mode explicit --load-model $control_model"
"$serve" --model-repository "$tmp/control" --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 \
  --model-control-mode explicit --load-model "$control_model" >"$tmp/control.out" 2>"$tmp/control.err" &
pid=$!
http="" grpc=""
for _ in $(seq 1200); do
  http=$(sed -n 's|^listening on http://\([^ ]*\).*|\1|p' "$tmp/control.out" | head -n1)
  grpc=$(sed -n 's|^grpc listening on \([^ ]*\).*|\1|p' "$tmp/control.out" | head -n1)
  [ -n "$http" ] && [ -n "$grpc" ] && break
  kill -0 "$pid" 2>/dev/null || { say "the server in explicit mode did not start:"; cat "$tmp/control.err" >&2; exit 1; }
  sleep 0.1
done
if [ -z "$http" ] || [ -z "$grpc" ]; then say "no addresses from the server in explicit mode"; exit 1; fi
"$python" onnxrt-serve/tests/clients/check_control.py --http "$http" --grpc "$grpc" \
  --repository "$tmp/control" --model "$control_model" || exit 1
"$python" onnxrt-serve/tests/clients/check_shared_memory.py --http "$http" --grpc "$grpc" --model "$control_model" || exit 1
# perf_analyzer with its tensors in system shared memory, HTTP and gRPC: its C++ HTTP client reads
# `binary_data_size` from any output that has parameters (issue 45), so every request must succeed.
if [ "$control_model" = ppocr_cls ] && [ "${ONNXRT_CHECK_PERF:-1}" = 1 ]; then
  perf_python=$(tools/serve/clients-env.sh --perf)
  perf_analyzer=$(dirname "$perf_python")/perf_analyzer
  cudart=$("$perf_python" -c 'import nvidia.cuda_runtime, os; print(os.path.join(nvidia.cuda_runtime.__path__[0], "lib"))')
  for protocol in http grpc; do
    url=$http; [ "$protocol" = grpc ] && url=$grpc
    if ! LD_LIBRARY_PATH=$cudart${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$perf_analyzer" -m ppocr_cls --shape x:1,3,48,192 \
         -u "$url" -i "$protocol" --shared-memory system --output-shared-memory-size 64 --concurrency-range 2 \
         --measurement-mode count_windows --measurement-request-count 50 --stability-percentage 100 --max-trials 3 \
         >"$tmp/perf-shm-$protocol.log" 2>&1; then
      say "perf_analyzer --shared-memory system over $protocol failed; the end of its output:"
      tail -n 15 "$tmp/perf-shm-$protocol.log" >&2
      exit 1
    fi
    say "perf_analyzer --shared-memory system over $protocol: $(grep -m1 -o 'Throughput: [^,]*' "$tmp/perf-shm-$protocol.log" || echo 'passed')"
  done
fi
kill -TERM "$pid"
for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
wait "$pid" && served=0 || served=$?
pid=
[ "$served" = 0 ] || { say "the server in explicit mode exited $served after SIGTERM"; tail -n 20 "$tmp/control.err" >&2; exit 1; }
say "model control: checks passed, exited 0 after SIGTERM"
exit 0
