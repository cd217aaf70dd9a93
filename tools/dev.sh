#!/usr/bin/env bash
# The README's two commands, and everything they need on a fresh Debian/Ubuntu machine:
#   bash tools/dev.sh run    the main job: the resnet_cuda example (embedded model + image)
#   bash tools/dev.sh test   the whole test suite (with tritonclient against the server), then
#                            packaging (tools/downstream.sh), then the
#                            integration tests again on the newest pinned runtime
#   bash tools/dev.sh test STAGE...  only those stages of it (TEST_STAGES below: workspace,
#                            soundness, gpu-libs, downstream, newest, ...)
#   bash tools/dev.sh newest only that last pass (the stage `newest`)
#   bash tools/dev.sh lint   rustfmt and clippy, as CI runs them
# Provisioning: if you set none of ONNXRT_LIB_DIR / ONNXRT_ARCHIVE / ONNXRT_DIST, the pinned
# default (the official GPU archive, sha256 and size pinned) is used when it is cached or its URL
# answers within seconds; otherwise (the release assets are unreachable) the runtime is assembled
# from package registries (ONNXRT_DIST=cpu-1.16.2-registry), and this script says so.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf '\033[1mdev.sh:\033[0m %s\n' "$*" >&2; }

apt_updated=0
apt_install() {
  if [ "$apt_updated" = 0 ]; then apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

has_libclang() {
  ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/llvm-*/lib/libclang-[0-9]*.so* >/dev/null 2>&1 \
    || ldconfig -p | grep -Eq '\slibclang(-[0-9.]+)?\.so'
}

setup_build() {
  # bindgen uses libclang when it is there (the build falls back to the checked-in bindings
  # without it; `test` checks those against a fresh bindgen run, so it needs libclang). clang-sys
  # loads libclang.so, libclang-N.so or libclang.so.N; libclang-cpp.so is another library.
  if ! has_libclang; then
    say "installing libclang for bindgen"; apt_install libclang-dev
  fi
  command -v npm >/dev/null || { say "installing npm"; apt_install npm; }
  command -v readelf >/dev/null || apt_install binutils
  if [ -z "${ONNXRT_LIB_DIR:-}${ONNXRT_ARCHIVE:-}${ONNXRT_DIST:-}" ]; then
    # The pinned default if it is cached, or if its URL answers within seconds (a quick HEAD, so a
    # machine whose firewall drops packets does not wait out download timeouts); else the fallback.
    cargo build -q -p onnxrt-build-support --bin onnxrt-dist
    local dist_tool=target/debug/onnxrt-dist
    if "$dist_tool" pinned >/dev/null 2>&1 \
       && { ONNXRT_OFFLINE=1 "$dist_tool" fetch >/dev/null 2>&1 \
            || { timeout 30 "$dist_tool" reachable >/dev/null 2>&1 && "$dist_tool" fetch >/dev/null; }; }; then
      say "using the pinned default distribution"
    else
      say "the default distribution cannot be fetched here (its release assets are unreachable): assembling ONNX Runtime 1.16.2 from package registries"
      export ONNXRT_DIST=cpu-1.16.2-registry
    fi
  fi
  if [ "${ONNXRT_DIST:-}" = cpu-1.16.2-registry ] || [ "${ONNXRT_DIST:-}" = gpu-cuda13-1.30.0-wheel ]; then
    cargo run -q -p onnxrt-build-support --bin onnxrt-dist -- assemble "$ONNXRT_DIST" >/dev/null
  fi
}

setup_test() {
  # The conformance test reads the ONNX backend test data shipped in the onnx wheel; the
  # onnx-proto crate regenerates its messages from the .proto files the same wheel ships.
  python3 -c 'import onnx, numpy' 2>/dev/null || { say "installing onnx 1.14.1 (backend test data)"; python3 -m pip install -q onnx==1.14.1 numpy; }
}

# The newest ORT the registries supply for the CPU (vendor-manifest.toml). Everything above runs
# on the pinned 1.16.2; the integration tests (conformance included, against its own expectations
# file) run again on this one, so the crate keeps working on a current runtime.
NEWEST_DIST=cpu-1.32.0-registry
test_newest() {
  say "integration tests on the newest runtime ($NEWEST_DIST)"
  cargo run -q -p onnxrt-build-support --bin onnxrt-dist -- assemble "$NEWEST_DIST" >/dev/null
  # Same target folder: only onnxrt-sys and what depends on it rebuild. An installed runtime or a
  # local archive would take precedence over ONNXRT_DIST, so neither is passed on. Among them
  # ort_messages.rs: the texts of onnxrt::ort_messages provoked from this runtime as from 1.16.2.
  env -u ONNXRT_LIB_DIR -u ONNXRT_INCLUDE_DIR -u ONNXRT_ARCHIVE -u ONNXRT_ARCHIVE_SHA256 \
    ONNXRT_DIST="$NEWEST_DIST" ONNXRT_REQUIRE_CONFORMANCE=1 cargo test -p onnxrt-tests --no-fail-fast
  # The C API 22+ surface on a runtime that has it: the checked-in bindings against bindgen's output
  # for this distribution's headers (the newest the registries carry), the CLI's `compile` and the
  # doctor's device row, and the safe-code attacks on that surface under valgrind.
  env -u ONNXRT_LIB_DIR -u ONNXRT_INCLUDE_DIR -u ONNXRT_ARCHIVE -u ONNXRT_ARCHIVE_SHA256 \
    ONNXRT_DIST="$NEWEST_DIST" cargo test -p onnxrt-sys
  env -u ONNXRT_LIB_DIR -u ONNXRT_INCLUDE_DIR -u ONNXRT_ARCHIVE -u ONNXRT_ARCHIVE_SHA256 \
    ONNXRT_DIST="$NEWEST_DIST" cargo test -p onnxrt-cli --test compile --test doctor_devices --test doctor_devices_fake_gpu
  # A plugin execution provider on this CPU machine: the pinned WebGPU plugin bundle (the plugin and
  # Mesa's software Vulkan driver, vendor-manifest.toml), registered, chosen through the device API
  # and compared with the CPU provider. The driver's own libraries (LLVM, libdrm, xcb) and the
  # Vulkan loader come from the system's mesa-vulkan-drivers, whose older driver Dawn refuses.
  # `assemble` prints the bundle's lib folder, and on stderr the environment its device needs
  # (VK_ICD_FILENAMES at the ICD manifest it wrote for the bundle's driver), which is used here.
  local webgpu setup
  setup=$(mktemp)
  webgpu=$(cargo run -q -p onnxrt-build-support --bin onnxrt-dist -- assemble webgpu-plugin-0.4.0-registry 2>"$setup")
  webgpu=${webgpu%/lib}
  if [ ! -e /usr/lib/x86_64-linux-gnu/libvulkan.so.1 ] || ldd "$webgpu/vulkan/libvulkan_lvp.so" | grep -q 'not found'; then
    say "installing the Vulkan loader and Mesa's libraries"; apt_install libvulkan1 mesa-vulkan-drivers
  fi
  local icd
  icd=$(sed -n 's/^export VK_ICD_FILENAMES=//p' "$setup")
  grep -qx 'export ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER=1' "$setup" && [ -f "$icd" ] \
    || { cat "$setup" >&2; say "onnxrt-dist assemble printed no Vulkan ICD manifest for the plugin bundle"; return 1; }
  rm -f "$setup"
  env -u ONNXRT_LIB_DIR -u ONNXRT_INCLUDE_DIR -u ONNXRT_ARCHIVE -u ONNXRT_ARCHIVE_SHA256 \
    ONNXRT_DIST="$NEWEST_DIST" ONNXRT_TEST_WEBGPU_PLUGIN="$webgpu/lib/libonnxruntime_providers_webgpu.so" \
    ONNXRT_REQUIRE_WEBGPU_PLUGIN=1 VK_ICD_FILENAMES="$icd" ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER=1 \
    cargo test -p onnxrt-tests --test plugin_webgpu
  # The same plugin named in a served model's config.json: serve registers it, picks its device
  # and answers as the model on the CPU (onnxrt-serve/tests/providers.rs). The pinned OpenVINO
  # plugin bundle too (providers_openvino.rs): without its lib folder on LD_LIBRARY_PATH a typed
  # refusal saying so; with it, registered, and on this AMD host no device (refused, counted).
  local openvino
  openvino=$(cargo run -q -p onnxrt-build-support --bin onnxrt-dist -- assemble openvino-plugin-1.8.1-registry 2>"$setup") \
    || { cat "$setup" >&2; say "onnxrt-dist could not assemble the OpenVINO plugin bundle"; return 1; }
  rm -f "$setup"
  env -u ONNXRT_LIB_DIR -u ONNXRT_INCLUDE_DIR -u ONNXRT_ARCHIVE -u ONNXRT_ARCHIVE_SHA256 \
    ONNXRT_DIST="$NEWEST_DIST" ONNXRT_TEST_WEBGPU_PLUGIN="$webgpu/lib/libonnxruntime_providers_webgpu.so" \
    ONNXRT_REQUIRE_WEBGPU_PLUGIN=1 VK_ICD_FILENAMES="$icd" ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER=1 \
    ONNXRT_TEST_OPENVINO_PLUGIN="$openvino/libonnxruntime_providers_openvino_plugin.so" \
    cargo test -p onnxrt-serve --test providers --test providers_openvino
  command -v valgrind >/dev/null || { say "installing valgrind"; apt_install valgrind; }
  env -u ONNXRT_LIB_DIR -u ONNXRT_INCLUDE_DIR -u ONNXRT_ARCHIVE -u ONNXRT_ARCHIVE_SHA256 \
    ONNXRT_DIST="$NEWEST_DIST" bash tools/reliability/memcheck.sh device_api_soundness pinned_plugin_paths ep_devices compile_model placement_info lora_adapters allocator_stats load_cancel captured_graph shared_allocator
  # The outside audit of that surface (issue 44), its plugin attacks on the WebGPU plugin bundle.
  env -u ONNXRT_LIB_DIR -u ONNXRT_INCLUDE_DIR -u ONNXRT_ARCHIVE -u ONNXRT_ARCHIVE_SHA256 \
    ONNXRT_DIST="$NEWEST_DIST" ONNXRT_TEST_WEBGPU_PLUGIN="$webgpu/lib/libonnxruntime_providers_webgpu.so" \
    VK_ICD_FILENAMES="$icd" ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER=1 bash tools/reliability/memcheck.sh soundness_device_api
}

# The stages of `test`, in the order `bash tools/dev.sh test` runs them all;
# `bash tools/dev.sh test STAGE...` runs only those (docs/testing.md lists what each covers).
TEST_STAGES=(workspace clients scale-out fetch soundness gpu-libs cuda-api serve-cuda loading downstream newest)

test_workspace() {
  ONNXRT_REQUIRE_CONFORMANCE=1 ONNXRT_REQUIRE_ONNX_PROTO=1 cargo test --workspace --no-fail-fast
  # The batcher and the worker processes as a crate that embeds them gets them: no server.
  cargo test -p onnxrt-serve --no-default-features --features isolation --lib --test batch
}

# The inference server driven by clients nobody here wrote: tritonclient over HTTP and gRPC on
# four real pretrained models, answers bitwise equal to single runs (a pinned venv is made once).
test_clients() {
  bash tools/serve/check-clients.sh
}

# Scale-out: the KServe manifests (deploy/kserve/) against KServe's API model and
# Kubernetes' schemas, their args against `serve --help`, broken copies refused; then three serve
# instances behind HAProxy (apt-get) under tritonclient load, one drained (no request may be lost)
# and one killed. SERVE_BIN: a prebuilt serve instead of the one built here.
test_scale_out() {
  local serve=${SERVE_BIN:-${CARGO_TARGET_DIR:-target}/debug/serve}
  [ -n "${SERVE_BIN:-}" ] || cargo build -q -p onnxrt-serve --bin serve
  python3 -c 'import ensurepip' 2>/dev/null || { say "installing python3-venv"; apt_install python3-venv; }
  python3 tools/serve/validate-kserve.py --serve "$serve" --self-test \
    deploy/kserve/serving-runtime.yaml deploy/kserve/inference-service.yaml
  SERVE_BIN=$serve bash tools/serve/scale-out.sh
  # Again with no retries at the balancer: serve's --drain-delay-ms alone must make the drain lossless.
  SERVE_BIN=$serve SCALE_OUT_RETRY_ON=none bash tools/serve/scale-out.sh
}

# The CLI's provisioning commands (`onnxrt fetch`, `bundle --dist`) are behind its `fetch` feature.
test_fetch() {
  cargo test -p onnxrt-cli --features fetch --test fetch --test fetch_feature
}

# Soundness regressions (docs/soundness.md): the mistakes the compiler must refuse run
# in `cargo test` (tests/tests/compile_fail.rs); the runtime ones run under valgrind (invalid reads, uninitialised memory, freed loggers).
test_soundness() {
  command -v valgrind >/dev/null || { say "installing valgrind"; apt_install valgrind; }
  # (env_race: two threads, 20 environments between them; bounded by that count, not by time:
  # under valgrind a session takes about a second to load, far longer on a loaded machine.
  # errors: the out-of-memory and byte-size refusals around ORT's tensor allocation.)
  ONNXRT_ENV_RACE_ENVS=20 ONNXRT_ENV_RACE_THREADS=2 bash tools/reliability/memcheck.sh soundness soundness_outputs soundness_array_slices callback_soundness config_keys optional_inputs optional_env env_race preallocated_outputs value_bytes view_mut soundness_async_wakers soundness_bool_bytes soundness_element_types soundness_optional_outputs soundness_key_classes errors
}

# Provider-load diagnosis against the real CUDA 13 build of ORT 1.30 (its provider libraries
# present, CUDA absent, as on a misconfigured server): assembled from the onnxruntime-gpu wheel.
test_gpu_libs() {
  cargo run -q -p onnxrt-build-support --bin onnxrt-dist -- assemble gpu-cuda13-1.30.0-wheel >/dev/null
  ONNXRT_REQUIRE_GPU_WHEEL=1 cargo test -p onnxrt-tests --features cuda,tensorrt --test provider_load --test named_provider
}

# The CUDA-only API (device memory, streams, copies) on a machine without CUDA: typed errors,
# the refusals checked before any CUDA call, and the same under valgrind.
test_cuda_api() {
  command -v valgrind >/dev/null || { say "installing valgrind"; apt_install valgrind; }
  cargo test -p onnxrt-tests --features cuda,tensorrt --test value_bytes --test config_keys --test cuda_graph --test soundness_key_classes --test cuda_options --test soundness_cuda_ipc
  MEMCHECK_FEATURES=cuda,tensorrt bash tools/reliability/memcheck.sh value_bytes cuda_graph soundness_cuda_ipc
}

# The batcher and the server's settings built with CUDA (device buffers, CUDA graphs): on a
# machine without CUDA their refusals, fallbacks and capture bookkeeping.
# With `tensorrt` (which takes `cuda`): a model naming TensorRT reaches the runtime's typed refusal
# after its engine-cache folder is made (tests/providers.rs).
test_serve_cuda() {
  cargo test -p onnxrt-serve --features tensorrt --lib --test batch --test providers
}

# Loading without LD_LIBRARY_PATH, in both modes, as a user would run the binary.
test_loading() {
  cargo build -q --example resnet_cuda
  out=$(env -i ./target/debug/examples/resnet_cuda)
  grep -q '^ONNX Runtime 1.16' <<<"$out" || { echo "$out"; say "FAIL: default mode under env -i"; exit 1; }
  say "default mode: the example runs under env -i (no LD_LIBRARY_PATH)"
  cargo build -q --example resnet_cuda --features link --target-dir target/link
  dynamic=$(readelf -d target/link/debug/examples/resnet_cuda)
  grep -E 'RUNPATH|NEEDED.*onnxruntime' <<<"$dynamic"
  grep -q 'NEEDED.*libonnxruntime' <<<"$dynamic" && grep -q 'RUNPATH' <<<"$dynamic" || { say "FAIL: no NEEDED/RUNPATH in link mode"; exit 1; }
  out=$(env -i ./target/link/debug/examples/resnet_cuda)
  grep -q '^ONNX Runtime 1.16' <<<"$out" || { echo "$out"; say "FAIL: link mode under env -i"; exit 1; }
  say "link mode: NEEDED + RUNPATH baked in, the example runs under env -i"
}

# cargo package for every publishable crate, then the README's quick start against them.
test_downstream() {
  bash tools/downstream.sh
}

case "${1:-}" in
  run)
    setup_build
    shift
    cargo run --release --example resnet_cuda -- "$@"
    ;;
  test)
    shift
    stages=("$@")
    [ ${#stages[@]} -gt 0 ] || stages=("${TEST_STAGES[@]}")
    for stage in "${stages[@]}"; do
      [[ " ${TEST_STAGES[*]} " == *" $stage "* ]] || { echo "no test stage '$stage'; the stages: ${TEST_STAGES[*]}" >&2; exit 2; }
    done
    setup_build
    setup_test
    # The checked-in bindings must equal a fresh bindgen run (unless libclang is hidden on purpose).
    if [ -z "${LIBCLANG_PATH:-}" ]; then export ONNXRT_REQUIRE_BINDGEN=1; fi
    for stage in "${stages[@]}"; do
      say "test stage: $stage"
      "test_${stage//-/_}"
    done
    ;;
  newest)
    setup_build
    setup_test
    test_newest
    ;;
  lint)
    setup_build
    rustup component add rustfmt clippy >/dev/null 2>&1 || true
    cargo fmt --all -- --check
    cargo clippy --workspace --all-targets -- -D warnings
    cargo clippy --workspace --all-targets --features onnxrt/cuda,onnxrt/tensorrt,onnxrt-serve/cuda -- -D warnings
    # The batcher, the GPU pool and the worker processes build without the web stack: a service
    # that embeds them pulls in no axum, tonic, tokio or hyper.
    for features in none cuda isolation isolation,cuda; do
      [ "$features" = none ] && features=
      cargo clippy -p onnxrt-serve --no-default-features --features "$features" -- -D warnings
      if cargo tree -p onnxrt-serve --no-default-features --features "$features" -e normal --prefix none | grep -E '^(axum|tonic|tokio|hyper) '; then
        say "FAIL: onnxrt-serve without default features (features: ${features:-none}) depends on the web stack"; exit 1
      fi
    done
    say "lint: rustfmt and clippy clean (default, cuda+tensorrt, and onnxrt-serve without the server)"
    ;;
  *)
    echo "usage: bash tools/dev.sh run | test [STAGE...] | newest | lint (stages: ${TEST_STAGES[*]})" >&2
    exit 2
    ;;
esac
