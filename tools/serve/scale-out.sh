#!/usr/bin/env bash
# Three `serve` instances behind HAProxy (REST and gRPC), under load from tritonclient, with one
# instance drained (SIGTERM) and one killed (SIGKILL) while the load runs:
#   tools/serve/scale-out.sh
# SERVE_BIN names a prebuilt serve binary (default: target/debug/serve, built first with cargo).
# SCALE_OUT_COUNT requests per phase (default 1000), SCALE_OUT_CLIENTS concurrent clients
# (default 8, half HTTP, half gRPC), SCALE_OUT_KEEP=1 keeps the logs, SCALE_OUT_GRPC_RETRY=1
# gives the gRPC clients a retry policy (UNAVAILABLE, 3 attempts). HAProxy comes from the distribution (apt-get) when missing.
# The model: ppocr_cls from the client environment's wheels (make_repository.py); the load and the
# checks: tools/serve/scale_out_load.py, which prints the table (phase, protocol, requests, failed,
# wrong). Exit status non-zero when a request is lost with no instance killed (the steady and the
# drain phase), on any wrong answer, or when the drained instance does not exit 0.
#
# The balancer's settings, and why (docs/serving-kserve.md, "Behind a plain load balancer"):
# - REST: HTTP mode, checks `GET /v2/health/ready` every second (2 failures: down, 2 passes: up).
# - gRPC: HTTP/2 in clear text on both sides (`proto h2`): HAProxy balances each call, not each
#   connection, and a GOAWAY from a stopping instance ends one backend connection only. Its servers
#   `track` their REST twins (same process), so they go down on the readiness check.
# - `retry-on conn-failure empty-response`, `retries 3`, `option redispatch 1`: a request that
#   meets a closed listener, or a connection the server closed (or lost) before answering a byte,
#   is sent again to another instance. Safe here: inference has no side effects. HAProxy retries
#   only a request it still holds whole, so `tune.bufsize` exceeds the largest request (a
#   ppocr_cls crop is 110 kB).
# - serve's --drain-delay-ms (when the binary has it) keeps a stopping instance serving, not ready,
#   until the checks took it out; without it SIGTERM closes the listeners at once and only the
#   retries save the requests already sent to it. SCALE_OUT_RETRY_ON=none checks the delay alone.
# - A kill: HTTP requests in flight on the dead instance are retried (empty-response); gRPC
#   calls in flight are not (HAProxy 2.6 answers them RST_STREAM REFUSED_STREAM, "not processed"),
#   so gRPC clients need a retry policy on UNAVAILABLE to lose none (SCALE_OUT_GRPC_RETRY=1).
# - No `on-marked-down shutdown-sessions`: it would cut the requests a drain lets finish.
# - `timeout server` above serve's --timeout-ms (the client sees serve's 504, not HAProxy's).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
say() { printf '\033[1mscale-out.sh:\033[0m %s\n' "$*" >&2; }
target=${CARGO_TARGET_DIR:-$root/target}
count=${SCALE_OUT_COUNT:-1000}
clients=${SCALE_OUT_CLIENTS:-8}
# What HAProxy retries (`none`: no retries; a drain must still lose nothing).
retry_on=${SCALE_OUT_RETRY_ON:-conn-failure empty-response}

if [ -n "${SERVE_BIN:-}" ]; then
  serve=$SERVE_BIN
else
  serve=$target/debug/serve
  cargo build -q -p onnxrt-serve --bin serve
fi
[ -x "$serve" ] || { say "no server binary at $serve"; exit 1; }

if ! command -v haproxy >/dev/null; then
  command -v apt-get >/dev/null || { say "no haproxy and no apt-get to install it"; exit 1; }
  say "installing haproxy"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null
fi
say "$(haproxy -v | head -n1)"

python=$(tools/serve/clients-env.sh)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/onnxrt-scale-out.XXXXXX")
pids=()
# shellcheck disable=SC2317  # called by the EXIT trap
finish() {
  local rc=$?
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  if [ "$rc" = 0 ] && [ -z "${SCALE_OUT_KEEP:-}" ]; then rm -rf "$tmp"; else say "kept $tmp (logs: serve-N.err, haproxy.log)"; fi
}
trap finish EXIT

"$python" onnxrt-serve/tests/clients/make_repository.py "$tmp/all" >&2
mkdir -p "$tmp/repository" && mv "$tmp/all/ppocr_cls" "$tmp/repository/" && rm -rf "$tmp/all"

# A drain delay longer than HAProxy's checks need to see a 503 (1 s apart, 2 failures): the
# instance stops getting requests before its listeners close, retries or not. Given when the
# binary has the flag (older ones close the listeners at once on SIGTERM).
drain_flag=()
help=$("$serve" --help)  # read whole: `grep -q` in a pipe may cut serve off (SIGPIPE, pipefail)
if grep -q -- '--drain-delay-ms' <<<"$help"; then drain_flag=(--drain-delay-ms 3000); fi
say "drain: ${drain_flag[*]:-no --drain-delay-ms in this serve}; HAProxy retry-on: $retry_on"

# Ports: each instance binds port 0 and prints what it got; HAProxy's three are picked free.
rest=() grpc=() serve_pids=()
for n in 1 2 3; do
  "$serve" --model-repository "$tmp/repository" --listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 \
    --max-connections 1024 --max-connections-per-peer 1024 "${drain_flag[@]}" >"$tmp/serve-$n.out" 2>"$tmp/serve-$n.err" &
  pids+=($!) serve_pids+=($!)
done
for n in 1 2 3; do
  pid=${serve_pids[$((n - 1))]} http="" g=""
  for _ in $(seq 1200); do  # 0.1 s apart: a debug build warming up on a loaded machine
    http=$(sed -n 's|^listening on http://\([^ ]*\).*|\1|p' "$tmp/serve-$n.out" | head -n1)
    g=$(sed -n 's|^grpc listening on \([^ ]*\).*|\1|p' "$tmp/serve-$n.out" | head -n1)
    [ -n "$http" ] && [ -n "$g" ] && break
    kill -0 "$pid" 2>/dev/null || { say "instance $n exited before listening:"; cat "$tmp/serve-$n.err" >&2; exit 1; }
    sleep 0.1
  done
  if [ -z "$http" ] || [ -z "$g" ]; then say "instance $n printed no addresses"; exit 1; fi
  rest+=("$http") grpc+=("$g")
  say "instance $n (pid $pid): rest $http, grpc $g"
done

read -r lb_rest lb_grpc lb_stats < <("$python" - <<'PY'
import socket
socks = [socket.socket() for _ in range(3)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
)
cat >"$tmp/haproxy.cfg" <<EOF
global
    maxconn 4096
    tune.bufsize 1048576

defaults
    mode http
    log stdout format raw local0 info
    option httplog
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    timeout http-keep-alive 5s
    retries 3
    option redispatch 1
    retry-on $retry_on

frontend rest
    bind 127.0.0.1:$lb_rest
    default_backend rest

backend rest
    balance roundrobin
    option httpchk
    http-check send meth GET uri /v2/health/ready
    http-check expect status 200
    default-server check inter 1s fall 2 rise 2
    server s1 ${rest[0]}
    server s2 ${rest[1]}
    server s3 ${rest[2]}

frontend grpc
    bind 127.0.0.1:$lb_grpc proto h2
    default_backend grpc

backend grpc
    balance roundrobin
    server s1 ${grpc[0]} proto h2 track rest/s1
    server s2 ${grpc[1]} proto h2 track rest/s2
    server s3 ${grpc[2]} proto h2 track rest/s3

frontend stats
    bind 127.0.0.1:$lb_stats
    stats enable
    stats uri /stats
EOF
haproxy -c -q -f "$tmp/haproxy.cfg" >&2 || { say "haproxy refuses its configuration:"; cat "$tmp/haproxy.cfg" >&2; exit 1; }
haproxy -db -f "$tmp/haproxy.cfg" >"$tmp/haproxy.log" 2>&1 &
pids+=($!)
haproxy_pid=$!
say "haproxy (pid $haproxy_pid): rest 127.0.0.1:$lb_rest, grpc 127.0.0.1:$lb_grpc, stats 127.0.0.1:$lb_stats/stats"

# Every REST server UP in HAProxy's stats (polled at most 300 times, 0.1 s apart).
up=0
for _ in $(seq 300); do
  up=$("$python" -c 'import sys, urllib.request
try:
    text = urllib.request.urlopen(sys.argv[1], timeout=5).read().decode()
except OSError:
    text = ""
print(sum(1 for f in (l.split(",") for l in text.splitlines()) if len(f) > 17 and f[0] == "rest" and f[1].startswith("s") and f[17] == "UP"))' \
    "http://127.0.0.1:$lb_stats/stats;csv")
  [ "$up" = 3 ] && break
  sleep 0.1
done
[ "$up" = 3 ] || { say "HAProxy did not see the three instances up"; cat "$tmp/haproxy.log" >&2; exit 1; }

# Instance 1 answers the reference requests alone; instance 2 is drained and 3 killed.
drained=${serve_pids[1]} killed=${serve_pids[2]}
"$python" tools/serve/scale_out_load.py --http "127.0.0.1:$lb_rest" --grpc "127.0.0.1:$lb_grpc" \
  --reference "${rest[0]}" --model ppocr_cls --count "$count" --clients "$clients" \
  --drain-pid "$drained" --kill-pid "$killed" --stats "http://127.0.0.1:$lb_stats/stats;csv" \
  ${SCALE_OUT_GRPC_RETRY:+--grpc-retry} \
  && loaded=0 || loaded=$?

# The drained instance must have finished its requests and exited 0 (at most 300 polls).
for _ in $(seq 300); do kill -0 "$drained" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$drained" 2>/dev/null; then
  say "the drained instance (pid $drained) still runs 30 s after SIGTERM"; exit 1
fi
wait "$drained" && drained_rc=0 || drained_rc=$?
wait "$killed" 2>/dev/null || true
# The drained instance's answers after SIGTERM (access lines after its "stop signal" line), and
# HAProxy's log: requests it answered with other than 200, and requests it sent again (retries).
after=$(awk '/stop signal/ { stopped = 1 } stopped && /method=/ { n++ } END { print n + 0 }' "$tmp/serve-2.err")
read -r non200 retried < <(awk '$4 ~ /^(rest|grpc)\/s[0-9]$/ { if ($6 != 200) bad++; split($11, c, "/"); if (c[5] != "0") again++ }
  END { print bad + 0, again + 0 }' "$tmp/haproxy.log")
say "the drained instance answered $after requests after SIGTERM and exited $drained_rc; HAProxy: $non200 answers other than 200, $retried requests retried"
[ "$drained_rc" = 0 ] || { say "the drained instance exited $drained_rc, not 0"; tail -n 20 "$tmp/serve-2.err" >&2; exit 1; }
exit "$loaded"
