#!/usr/bin/env bash
# valgrind memcheck over a representative subset of the integration tests (the compiled test
# binaries, run directly). Leaks that count as errors: definitely lost only; ORT's own
# process-lifetime allocations are suppressed by ort.supp (see docs/testing.md for what and why).
#
#   export ONNXRT_DIST=cpu-1.16.2-registry   # or whatever ONNXRT_* settings your builds use
#   tools/reliability/memcheck.sh [test-binary-name ...]   # default: session values errors bad_inputs env_global
#
# Logs: $CARGO_TARGET_DIR (default target/) /memcheck/<name>.log; prints a summary per binary and
# exits non-zero if any binary has memcheck errors or failing tests.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
tests=("$@")
[[ ${#tests[@]} -gt 0 ]] || tests=(session values errors bad_inputs env_global)
logs=$target/memcheck
mkdir -p "$logs"

args=()
for t in "${tests[@]}"; do args+=(--test "$t"); done
# The test binaries' paths, from cargo's JSON messages.
# MEMCHECK_FEATURES: the tests crate's features (e.g. cuda,tensorrt for the CUDA API's error paths).
[[ -z ${MEMCHECK_FEATURES:-} ]] || args+=(--features "$MEMCHECK_FEATURES")
mapfile -t binaries < <(cd "$repo" && cargo test -p onnxrt-tests "${args[@]}" --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        print(m["target"]["name"] + " " + m["executable"])')

status=0
for entry in "${binaries[@]}"; do
    name=${entry%% *}
    binary=${entry#* }
    log=$logs/$name.log
    # --test-threads=1: one test at a time keeps the stacks readable (valgrind serializes threads anyway).
    set +e
    (cd "$repo/tests" && valgrind --tool=memcheck --leak-check=full --show-leak-kinds=definite,possible \
        --errors-for-leak-kinds=definite --error-exitcode=99 --num-callers=40 \
        --suppressions="$repo/tools/reliability/ort.supp" --gen-suppressions=all \
        --log-file="$log" "$binary" --test-threads=1 >"$log.out" 2>&1)
    rc=$?
    set -e
    errors=$(grep -o 'ERROR SUMMARY: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
    definitely=$(grep -o 'definitely lost: [0-9,]* bytes in [0-9,]* blocks' "$log" | tail -1)
    possibly=$(grep -o 'possibly lost: [0-9,]* bytes in [0-9,]* blocks' "$log" | tail -1)
    suppressed=$(grep -o 'suppressed: [0-9,]* bytes in [0-9,]* blocks' "$log" | tail -1)
    tests_line=$(grep -a 'test result:' "$log.out" | tail -1)
    echo "$name: rc=$rc errors=${errors:-?} | ${definitely:-definitely lost: 0} | ${possibly:-possibly lost: 0} | ${suppressed:-suppressed: 0} | $tests_line"
    [[ $rc -eq 0 ]] || status=1
done
exit $status
