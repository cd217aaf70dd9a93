#!/usr/bin/env bash
# Builds a carry-able ONNX Runtime GPU bundle (CUDA 13 / cuDNN 9 build) for the GPU machine.
#
# Usage, from the project root on the (CPU) development machine:
#   tools/gpu/make-bundle.sh [ORT_VERSION] [OUT_DIR]        defaults: 1.30.0  .gpu-bundle
#
# It downloads the official onnxruntime-gpu wheel for CPython 3.12 with pip, keeps the
# runtime libraries (libonnxruntime.so.<ver>, libonnxruntime_providers_{shared,cuda,tensorrt}.so)
# and the Python package (for side-by-side comparisons with the Python API), compresses it and
# splits it into parts small enough to send one per run (the GPU machine takes at most 64 MiB
# of working tree per run). OUT_DIR is added to .git/info/exclude.
#
# Then send OUT_DIR/p0, OUT_DIR/p1, ... in consecutive runs on the GPU machine (it stays up for
# 30 s after each run, so chain them), starting each command with
#   bash OUT_DIR/pK/unpack.sh
# The run that brings the last part assembles the bundle under /tmp/ort-gpu and prints the
# environment to export.
set -euo pipefail
ver=${1:-1.30.0}
out=${2:-.gpu-bundle}
chunk_mib=${CHUNK_MIB:-50}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  -d "$work/whl" "onnxruntime-gpu==$ver"
whl=$(ls "$work"/whl/*.whl)
(cd "$work" && unzip -q "$whl" 'onnxruntime/*' \
  -x 'onnxruntime/datasets/*' 'onnxruntime/tools/*' 'onnxruntime/transformers/*' 'onnxruntime/quantization/*')
tar -C "$work" -cf - onnxruntime | xz -T0 -6 > "$work/bundle.tar.xz"
sum=$(sha256sum "$work/bundle.tar.xz" | cut -d' ' -f1)
(cd "$work" && split -b "${chunk_mib}m" -d -a 2 bundle.tar.xz part.)
parts=$(ls "$work"/part.* | wc -l)

rm -rf "$out"
i=0
for p in "$work"/part.*; do
  mkdir -p "$out/p$i"
  mv "$p" "$out/p$i/"
  cp "$here/unpack.sh" "$out/p$i/unpack.sh"
  printf 'parts=%s\nsha256=%s\nversion=%s\n' "$parts" "$sum" "$ver" > "$out/p$i/bundle.info"
  i=$((i + 1))
done
if [ -d .git ] && ! grep -qx "/$out/" .git/info/exclude 2>/dev/null; then
  echo "/$out/" >> .git/info/exclude
fi
echo "onnxruntime-gpu $ver bundle: $parts parts in $out (sha256 $sum)"
echo "send $out/p0 ... $out/p$((parts - 1)), one per run on the GPU machine, each command starting with: bash $out/pK/unpack.sh"
