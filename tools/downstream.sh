#!/usr/bin/env bash
# Packaging, tested the way a user meets it (`cargo add onnxrt` in a new project):
#   1. `cargo package` (with verification: each crate builds from its .crate alone) for every
#      publishable crate;
#   2. a directory source standing in for the registry: the third-party crates of Cargo.lock
#      (`cargo vendor`) plus our unpacked .crate files, each with its .cargo-checksum.json;
#   3. a fresh `cargo new` app outside this workspace, whose `.cargo/config.toml` replaces
#      crates-io with that source (the only line that is not the README's), then the README's CPU
#      quick start verbatim: `cargo add onnxrt`, its `[env]` lines, its main.rs; built with
#      LIBCLANG_PATH=/nonexistent (no libclang: the checked-in bindings) and run under `env -i`;
#   4. the first build's failure without a choice says how to choose, and a docs.rs-style build
#      (DOCS_RS, offline, empty cache, no libclang) documents the crate.
# Called by `tools/dev.sh test`. Reuses target/downstream/ between runs and the runtime cache.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
say() { printf '\033[1mdownstream.sh:\033[0m %s\n' "$*" >&2; }
fail() { say "FAIL: $*"; exit 1; }

crates=(onnxrt-build-support onnxrt-sys onnxrt-preflight onnxrt onnxrt-serve onnxrt-onnx-proto onnxrt-cli)
work=$root/target/downstream
# The CI machine reaches package registries but not the release assets, so the quick start's
# official CPU archive is swapped for the registry-assembled build of the same library.
dist=${DOWNSTREAM_DIST:-cpu-1.16.2-registry}
mkdir -p "$work"

# 1. Package, with verification.
started=$SECONDS
# Cargo extracts the crates of a local (path) registry once per registry path and version, and
# reuses that copy later: a second run in the same clone would verify against the first run's
# sources. Those registries' folders are named without a host ("-HASH"): forget our crates there.
for c in "${crates[@]}"; do rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/"$c"-[0-9]*; done
args=(); for c in "${crates[@]}"; do args+=(-p "$c"); done
cargo package -q --allow-dirty "${args[@]}"
say "packaged and verified ${crates[*]} ($((SECONDS - started)) s)"

# 2. The directory source. Third-party crates are vendored again only when Cargo.lock changes.
registry=$work/registry
lock_sum=$(sha256sum Cargo.lock | cut -d' ' -f1)
if [ "$(cat "$work/vendored-lock" 2>/dev/null)" != "$lock_sum" ]; then
  rm -rf "$registry"
  cargo vendor -q --locked "$registry" >/dev/null
  echo "$lock_sum" >"$work/vendored-lock"
fi
for c in "${crates[@]}"; do
  file=$(ls target/package/"$c"-[0-9]*.crate)
  dir=$registry/$(basename "$file" .crate)
  rm -rf "$dir"
  tar xzf "$file" -C "$registry"
  printf '{"files":{},"package":"%s"}' "$(sha256sum "$file" | cut -d' ' -f1)" >"$dir/.cargo-checksum.json"
done

# 3. A new project outside the workspace, following the README.
app=$(mktemp -d /tmp/onnxrt-downstream.XXXXXX)
trap 'rm -rf "$app"' EXIT
readme_block() { # the fenced block after the marker line `<!-- quickstart:NAME -->`
  awk -v m="<!-- quickstart:$1 -->" '$0 == m {on = 1; next} on && /^```/ {if (inside) exit; inside = 1; next} inside {print}' README.md
}
main_rs=$(readme_block main.rs); config=$(readme_block config.toml)
[ -n "$main_rs" ] && [ -n "$config" ] || fail "README.md lost its quick-start blocks (quickstart:main.rs, quickstart:config.toml)"
export CARGO_TARGET_DIR=$work/target
# In the app, without libclang; the caller's ONNXRT_* must not stand in for the README's [env] lines.
in_app() {
  (cd "$app/hello" && env -u ONNXRT_DIST -u ONNXRT_LIB_DIR -u ONNXRT_ARCHIVE -u ONNXRT_OFFLINE LIBCLANG_PATH=/nonexistent "$@")
}
(cd "$app" && cargo new -q --vcs none hello)
mkdir -p "$app/hello/.cargo"
printf '[source.crates-io]\nreplace-with = "packaged"\n[source.packaged]\ndirectory = "%s"\n' "$registry" \
  >"$app/hello/.cargo/config.toml"
in_app cargo add -q onnxrt
printf '%s\n' "$main_rs" >"$app/hello/src/main.rs"
cp tests/data/models/add_f32.onnx "$app/hello/"

# 4a. Without a choice (offline, so that no machine downloads the GPU archive here) the build
# fails and says how to choose a distribution and make the choice stick.
if out=$(in_app ONNXRT_OFFLINE=1 cargo build -q 2>&1); then fail "the offline build without a cached default succeeded"; fi
for want in "ONNXRT_DIST" "already holds:" "[env]" ".cargo/config.toml"; do
  grep -qF -- "$want" <<<"$out" || { echo "$out"; fail "the first build's error does not mention '$want'"; }
done
if grep -qF -- "cargo run -p" <<<"$out"; then echo "$out"; fail "the error advises a command that works only inside this repository"; fi
say "a build without ONNXRT_DIST fails naming ONNXRT_DIST, what the cache holds and the [env] lines"

# 4b. The README's [env] lines; build without libclang; run with an empty environment.
printf '%s\n' "$config" | sed "s/^ONNXRT_DIST = \"cpu-1.16.2\"/ONNXRT_DIST = \"$dist\"/" >>"$app/hello/.cargo/config.toml"
grep -q "^ONNXRT_DIST = \"$dist\"" "$app/hello/.cargo/config.toml" || fail "the README's config block sets no ONNXRT_DIST"
started=$SECONDS
in_app cargo build -q
output=$(ls -t "$CARGO_TARGET_DIR"/debug/build/onnxrt-sys-*/output | head -1)
grep -q "libclang not found" "$output" || fail "LIBCLANG_PATH=/nonexistent did not use the checked-in bindings ($output)"
out=$(cd "$app/hello" && env -i "$CARGO_TARGET_DIR/debug/hello" 2>&1) || { echo "$out"; fail "the quick start failed under env -i"; }
echo "$out"
grep -q '^ONNX Runtime 1\.16' <<<"$out" && grep -qF '[5, 6, 7]' <<<"$out" \
  || fail "the quick start did not print the runtime version and the sum"
say "README quick start: built from the packaged crates without libclang ($((SECONDS - started)) s), ran under env -i"

# 4c. docs.rs: DOCS_RS set, offline, an empty cache and no libclang.
in_app DOCS_RS=1 ONNXRT_OFFLINE=1 ONNXRT_CACHE_DIR="$app/empty-cache" cargo doc -q --offline --no-deps -p onnxrt
{ [ -f "$CARGO_TARGET_DIR/doc/onnxrt/index.html" ] && [ ! -e "$app/empty-cache" ]; } \
  || fail "DOCS_RS build: no documentation, or it touched the cache"
say "docs.rs-style build: documented offline, with an empty cache and without libclang"

# 5. The CLI installed from its packaged crate (`cargo install onnxrt-cli --features fetch`) and used in the app,
# which holds no checkout of this repository: its help, a fetch of the distribution the app uses,
# and every other distribution of the built-in manifest known to it (offline here: each is either
# in the cache or refused as offline, or as no runtime for a plugin provider bundle; never as unknown).
started=$SECONDS
# (`cargo install` reads no project configuration: the source replacement is given here, and the
# distribution its own build links against is chosen in the environment, as a user would.)
in_app env ONNXRT_DIST="$dist" cargo install -q --force --debug --offline --root "$app/tools" onnxrt-cli --features fetch \
  --config 'source.crates-io.replace-with="packaged"' --config "source.packaged.directory=\"$registry\""
cli=$app/tools/bin/onnxrt
(cd "$app/hello" && "$cli" --help) | grep -q "EXIT STATUS" || fail "the installed onnxrt has no help with the exit codes"
lib_dir=$(cd "$app/hello" && env -u ONNXRT_DIST "$cli" fetch "$dist") || fail "the installed onnxrt could not fetch $dist"
[ -d "$lib_dir" ] || fail "onnxrt fetch printed no library folder: $lib_dir"
for d in $(sed -n 's/^name = "\(.*\)"$/\1/p' build-support/vendor-manifest.toml); do
  out=$(cd "$app/hello" && ONNXRT_OFFLINE=1 "$cli" fetch "$d" 2>&1) && continue
  grep -qiE "offline|is a plugin provider bundle, not a runtime" <<<"$out" && ! grep -q "no distribution named" <<<"$out" \
    || { echo "$out"; fail "the installed onnxrt does not know how to fetch $d"; }
done
say "cargo install onnxrt-cli from the packaged crate: help, fetch $dist, every manifest entry known ($((SECONDS - started)) s)"
