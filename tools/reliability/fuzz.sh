#!/usr/bin/env bash
# Builds the cargo-fuzz targets (nightly, libFuzzer + AddressSanitizer) and runs each one.
#
#   cargo install cargo-fuzz        # once
#   export ONNXRT_DIST=cpu-1.16.2-registry   # or whatever ONNXRT_* settings your builds use
#   tools/reliability/fuzz.sh [model_bytes|tensor_build|archive_extract|api_sequence ...]   # default: all four
#
# Settings (environment): RUNS (executions for tensor_build and archive_extract, default 100000),
# API_RUNS (executions per api_sequence job, default 20000: each input is a sequence of up to 48
# operations, ~35 public API calls on average, see fuzz/api_sequence/mod.rs), API_JOBS (parallel
# api_sequence jobs, default 1; the reported run used API_JOBS=14 API_RUNS=4000 on 16 cores),
# MODEL_SECONDS (model_bytes runs time-bounded, default 240: ~1.7 million executions here),
# FUZZ_WORK (grown corpora and crash artifacts, default $CARGO_TARGET_DIR/fuzz-work; never the
# committed fuzz/corpus, which libFuzzer only reads).
#
# model_bytes runs in fork mode with -ignore_crashes: ONNX Runtime 1.16.2 itself crashes on some
# models (fuzz/artifacts-known, docs/upstream-ort-bugs.md), and fork mode keeps fuzzing past them; every
# crash is still written to FUZZ_WORK/model_bytes/artifacts for triage. archive_extract runs as
# `nobody` when started as root, so that a real escape could not overwrite anything that matters.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=${CARGO_TARGET_DIR:-$repo/target}
work=${FUZZ_WORK:-$out/fuzz-work}
runs=${RUNS:-100000}
api_runs=${API_RUNS:-20000}
api_jobs=${API_JOBS:-1}
model_seconds=${MODEL_SECONDS:-240}
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(model_bytes tensor_build archive_extract api_sequence)

cd "$repo/fuzz"
cargo +nightly fuzz build --target-dir "$out/fuzz"
bin=$out/fuzz/x86_64-unknown-linux-gnu/release

for t in "${targets[@]}"; do
    mkdir -p "$work/$t/corpus" "$work/$t/artifacts"
    log=$work/$t.log
    common=(-rss_limit_mb=4096 -timeout=30 -print_final_stats=1 "-artifact_prefix=$work/$t/artifacts/")
    echo "== $t (log: $log)"
    case $t in
    model_bytes)
        # The known ORT crashes still crash? (A "no longer fails" means a runtime upgrade fixed it.)
        for known in "$repo"/fuzz/artifacts-known/model_bytes-*; do
            if "$bin/model_bytes" -rss_limit_mb=4096 "$known" >/dev/null 2>&1; then
                echo "   known input $(basename "$known"): no longer fails"
            else
                echo "   known input $(basename "$known"): still crashes (or exhausts memory) inside libonnxruntime"
            fi
        done
        "$bin/model_bytes" -fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1 \
            "-max_total_time=$model_seconds" "${common[@]}" "$work/$t/corpus" corpus/model_bytes >"$log" 2>&1 || true
        ;;
    archive_extract)
        as=()
        if [[ $(id -u) -eq 0 ]]; then
            chown -R nobody:nogroup "$work/$t"
            as=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
        fi
        "${as[@]}" "$bin/$t" "-runs=$runs" "${common[@]}" "$work/$t/corpus" corpus/$t >"$log" 2>&1 || true
        ;;
    api_sequence)
        # Count-bounded like the others; the target prints its inputs and API calls at exit.
        # Leaks are checked afterwards, over the grown corpus: LSan needs full stacks to match
        # fuzz/lsan.supp (ORT 1.16.2 leaks the status a failing custom op returns), and full
        # unwinding on every malloc is ~20x slower than fuzzing itself. ASAN_OPTIONS=detect_leaks=0
        # as well as -detect_leaks=0: the flag only stops libFuzzer's per-input checks, and LSan's
        # check at process exit would otherwise report ORT's leaks with 2-frame stacks that match
        # no suppression and make libFuzzer write an empty crash-da39a3ee... (no input was running).
        jobs=()
        rm -f "$work"/fuzz-[0-9]*.log
        if [[ $api_jobs -gt 1 ]]; then
            jobs=("-jobs=$api_jobs" "-workers=$api_jobs")
        fi
        (cd "$work" && ASAN_OPTIONS=detect_leaks=0 "$bin/$t" "${jobs[@]}" "-runs=$api_runs" -detect_leaks=0 \
            "${common[@]}" "$work/$t/corpus" "$repo/fuzz/corpus/$t" >"$log" 2>&1) || true
        # With -jobs each job logs to $work/fuzz-N.log: add up their last counts.
        logs=("$log")
        [[ $api_jobs -le 1 ]] || logs=("$work"/fuzz-[0-9]*.log)
        grep -ah '^api_sequence:' "${logs[@]}" | awk '{i+=$2; c+=$4} END {printf "   %d inputs, %d public API calls\n", i, c}'
        [[ $api_jobs -le 1 ]] || cat "$work"/fuzz-[0-9]*.log >>"$log"
        # The replay runs every input (no per-input leak check, which would stop at the first
        # leak); LSan reports what is left at exit, with suppressions (needs llvm-symbolizer).
        ASAN_OPTIONS=fast_unwind_on_malloc=0:detect_leaks=1 LSAN_OPTIONS="suppressions=$repo/fuzz/lsan.supp:print_suppressions=1" \
            "$bin/$t" -runs=1 -detect_leaks=0 "$work/$t/corpus" corpus/$t >"$work/$t.leaks.log" 2>&1 &&
            echo "   leak replay of the corpus: clean" || echo "   leak replay of the corpus: see $work/$t.leaks.log"
        ;;
    *)
        "$bin/$t" "-runs=$runs" "${common[@]}" "$work/$t/corpus" corpus/$t >"$log" 2>&1 || true
        ;;
    esac
    # Executions: the last status line (#N); crashes: fork mode's counter, or a crash report.
    last=$(grep -aoE '^#[0-9]+' "$log" | tail -1 || true)
    crashes=$(grep -aoE 'oom/timeout/crash: [0-9/]+' "$log" | tail -1 || true)
    died=$(grep -acE 'ERROR: (libFuzzer|AddressSanitizer)' "$log" || true)
    echo "   executions ${last#\#}; ${crashes:-crash reports: $died}; artifacts: $(ls "$work/$t/artifacts" | wc -l)"
done
