#!/usr/bin/env bash
# Provisioning cost: a warm build (cache hit) and a cold provision of a ~130 MB archive served by
# a local HTTP server. Called by run-cpu.sh; runs alone too:
#   bash benches/scripts/provision.sh [OUT_DIR]
# Needs: cargo, python3, hyperfine (apt-get install hyperfine), sha256sum, a provisioned runtime
# for the warm build (the ONNXRT_* variables you build with, e.g. ONNXRT_DIST=cpu-1.16.2-registry).
#
# 1. Warm build: `cargo build -p onnxrt-sys` with nothing changed (cargo sees everything fresh),
#    then the same build with the build script forced to run again (ONNXRT_DOWNLOAD_TIMEOUT
#    alternates 60/61, a variable the script declares with rerun-if-env-changed): the cache hit
#    plus bindgen. Cargo's --timings gives the build script's own run time; `onnxrt-dist fetch`
#    times the cache lookup alone.
# 2. Cold provision: a .tgz of ~130 MB of random bytes laid out like the distribution (root
#    folder, the library, the provider libraries, include/onnxruntime_c_api.h). The 1.16.2 and
#    CUDA 13 1.30.0 archives are pinned in the manifest (a pin of our own would contradict it),
#    so the timed distribution is the still-unpinned cpu-1.32.0, given a GPU-sized archive,
#    served by `python3 -m http.server` on 127.0.0.1; `onnxrt-dist fetch` with ONNXRT_MIRROR,
#    ONNXRT_ARCHIVE_SHA256 pinned and a fresh ONNXRT_CACHE_DIR per run times download + sha256 +
#    extraction + publication. Timed with the release build of onnxrt-dist and with the debug
#    build (build scripts run their dependencies at opt-level 0 unless a profile's
#    build-override says otherwise, so the debug figure is what `cargo build` pays).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-target/bench-results}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
TARGET=${CARGO_TARGET_DIR:-target}
RUNS=${PROVISION_RUNS:-3}
say() { printf 'provision.sh: %s\n' "$*" >&2; }

say "building onnxrt-dist (release and debug)"
cargo build -q --release -p onnxrt-build-support --bin onnxrt-dist
cargo build -q -p onnxrt-build-support --bin onnxrt-dist
cargo build -q -p onnxrt-sys
DIST_REL="$TARGET/release/onnxrt-dist"
DIST_DBG="$TARGET/debug/onnxrt-dist"
INCLUDE=$("$DIST_REL" env | sed -n 's/^export ONNXRT_INCLUDE_DIR=//p')

# timed_cargo_build: `cargo build -p onnxrt-sys --timings` with the caller's environment; prints
# the whole build's wall time and onnxrt-sys's units from cargo's timing report.
timed_cargo_build() {
  local start end report
  start=$(date +%s.%N)
  cargo build -q -p onnxrt-sys --timings 2>"$OUT/cargo-build.err" || { echo "  cargo build failed: $(tail -3 "$OUT/cargo-build.err")"; return; }
  end=$(date +%s.%N)
  report=$(ls -t "$TARGET"/cargo-timings/cargo-timing-*.html | head -1)
  python3 - "$report" "$start" "$end" <<'EOF'
import json, re, sys
html = open(sys.argv[1]).read()
units = json.loads(re.search(r"const UNIT_DATA = (\[.*?\]);", html, re.S).group(1))
parts = [f"{u['name']} {u.get('target', '').strip() or 'lib'}: {u['duration']:.2f} s" for u in units if u["name"] == "onnxrt-sys"]
print(f"  whole cargo build {float(sys.argv[3]) - float(sys.argv[2]):.2f} s; " + "; ".join(parts))
EOF
}

{
  echo "## Warm build"
  echo
  echo "### cargo build -p onnxrt-sys, nothing changed"
  hyperfine -N --warmup 1 --runs 5 --style basic "cargo build -q -p onnxrt-sys" 2>&1
  echo
  echo "### onnxrt-dist fetch, cache hit (the provisioning step of the build script, release / debug build)"
  hyperfine -N --warmup 1 --runs 10 --style basic "$DIST_REL fetch" "$DIST_DBG fetch" 2>&1
  echo
  echo "### build script forced to run again (cache hit + bindgen), cargo --timings"
  for i in 1 2 3 4; do
    ONNXRT_DOWNLOAD_TIMEOUT=$((60 + i % 2)) timed_cargo_build
  done
} | tee "$OUT/provision-warm.txt"

# ---- cold provision from a local HTTP server ------------------------------------------------
WORK=$(mktemp -d /tmp/onnxrt-provision.XXXXXX)
SERVER_PID=
cleanup() { [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

# make_archive FILE ROOT LIBRARY MIB PROVIDERS...: a tgz whose library is MIB MiB of random bytes.
make_archive() {
  local file=$1 root=$2 library=$3 mib=$4
  shift 4
  mkdir -p "$WORK/tree/$root/lib" "$WORK/tree/$root/include"
  head -c $((mib * 1024 * 1024)) /dev/urandom >"$WORK/tree/$root/lib/$library"
  for provider in "$@"; do head -c 4096 /dev/urandom >"$WORK/tree/$root/lib/$provider"; done
  cp "$INCLUDE/onnxruntime_c_api.h" "$WORK/tree/$root/include/"
  tar -C "$WORK/tree" -cf - "$root" | gzip -1 >"$WORK/www/$file"
  rm -rf "${WORK:?}/tree"
}
mkdir -p "$WORK/www"
say "making the archives (random bytes)"
GPU_FILE=onnxruntime-linux-x64-1.32.0.tgz
make_archive "$GPU_FILE" onnxruntime-linux-x64-1.32.0 libonnxruntime.so.1.32.0 130 \
  libonnxruntime_providers_shared.so libonnxruntime_providers_cuda.so libonnxruntime_providers_tensorrt.so

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server "$PORT" --bind 127.0.0.1 --directory "$WORK/www" >/dev/null 2>&1 &
SERVER_PID=$!
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/" && break; sleep 0.1; done

# fetch_runs LABEL DIST BINARY: RUNS timed fetches, each into a fresh cache.
fetch_runs() {
  local label=$1 dist=$2 binary=$3 file sha size
  file=$GPU_FILE
  sha=$(sha256sum "$WORK/www/$file" | cut -d' ' -f1)
  size=$(stat -c %s "$WORK/www/$file")
  echo "### $label: $file, $((size / 1000000)) MB, ONNXRT_DIST=$dist"
  for i in $(seq "$RUNS"); do
    rm -rf "$WORK/cache"
    mkdir -p "$WORK/cache"
    local start end status=ok
    start=$(date +%s.%N)
    if ! env ONNXRT_DIST="$dist" ONNXRT_MIRROR="http://127.0.0.1:$PORT" ONNXRT_ALLOW_HTTP=1 ONNXRT_ARCHIVE_SHA256="$sha" \
      ONNXRT_CACHE_DIR="$WORK/cache" "$binary" fetch >"$WORK/fetch.out" 2>"$WORK/fetch.err"; then
      status="failed: $(tr '\n' ' ' <"$WORK/fetch.err" | cut -c1-300)"
    fi
    end=$(date +%s.%N)
    printf '  run %d: %s s (%s)\n' "$i" "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')" "$status"
  done
  echo
}

{
  echo "## Cold provision from http://127.0.0.1 (python3 -m http.server)"
  echo
  echo "### components, for reference (130 MB gpu archive)"
  f="$WORK/www/$GPU_FILE"
  hyperfine -N --warmup 1 --runs 3 --style basic "curl -s -o /dev/null http://127.0.0.1:$PORT/$(basename "$f")" "sha256sum $f" "tar -xzf $f --to-stdout" 2>&1
  echo
  fetch_runs "release onnxrt-dist" cpu-1.32.0 "$DIST_REL"
  fetch_runs "debug onnxrt-dist (opt-level 0, as in a build script)" cpu-1.32.0 "$DIST_DBG"
  echo "### the same provisioning inside cargo: cargo build -p onnxrt-sys, fresh cache, ONNXRT_DIST=cpu-1.32.0"
  gpu_sha=$(sha256sum "$WORK/www/$GPU_FILE" | cut -d' ' -f1)
  for i in $(seq "$RUNS"); do
    rm -rf "$WORK/cache"
    mkdir -p "$WORK/cache"
    ONNXRT_DIST=cpu-1.32.0 ONNXRT_MIRROR="http://127.0.0.1:$PORT" ONNXRT_ALLOW_HTTP=1 ONNXRT_ARCHIVE_SHA256="$gpu_sha" \
      ONNXRT_CACHE_DIR="$WORK/cache" ONNXRT_DOWNLOAD_TIMEOUT=$((70 + i)) timed_cargo_build
  done
  echo
} | tee "$OUT/provision-cold.txt"
# Back to the caller's runtime for whatever builds next.
cargo build -q -p onnxrt-sys
