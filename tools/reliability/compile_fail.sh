#!/usr/bin/env bash
# Checks that the mistakes the type system refuses really do not compile: each file in
# compile_fail/ starts with `// expect: E0xxx` (or `// expect: ok` for the control) and is
# compiled as the main.rs of a scratch crate that depends on onnxrt (nothing is run).
#
#   source /work/env.sh   # or whatever ONNXRT_* settings your builds use
#   tools/reliability/compile_fail.sh
#
# Scratch crate and build output go under $CARGO_TARGET_DIR (default target/) /compile-fail.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
scratch=$target/compile-fail/crate
mkdir -p "$scratch/src"
cat > "$scratch/Cargo.toml" <<TOML
[package]
name = "onnxrt-compile-fail"
version = "0.0.0"
edition = "2021"
publish = false

[workspace]

[dependencies]
onnxrt = { path = "$repo/onnxrt" }
TOML
# The workspace's lock file pins the same dependency versions.
cp "$repo/Cargo.lock" "$scratch/Cargo.lock"
failures=0
for case in "$repo"/tools/reliability/compile_fail/*.rs; do
    name=$(basename "$case" .rs)
    expect=$(sed -n '1s#^// expect: ##p' "$case")
    cp "$case" "$scratch/src/main.rs"
    if output=$(cargo check --quiet --manifest-path "$scratch/Cargo.toml" --target-dir "$target/compile-fail/target" 2>&1); then
        got=ok
    else
        # `|| true`: a failure without an error code (a build script, a full disk) must reach the
        # MISMATCH report below with its output, not end the script silently under pipefail.
        got=$(grep -o 'error\[E[0-9]*\]' <<<"$output" | sort -u | tr -d 'error[]' | paste -sd, - || true)
        got=${got:-other}
    fi
    if [[ ",$got," == *",$expect,"* ]]; then
        printf '%-28s expected %-6s got %s\n' "$name" "$expect" "$got"
    else
        printf '%-28s expected %-6s got %s  <-- MISMATCH\n' "$name" "$expect" "$got"
        printf '%s\n' "$output" | head -30
        failures=$((failures + 1))
    fi
done
echo "$failures mismatches"
exit $((failures > 0))
