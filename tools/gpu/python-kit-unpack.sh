#!/usr/bin/env bash
# shellcheck disable=SC2154  # parts and index come from kit.info
# Runs on the device, from a part of the Python kit (tools/gpu/python-kit.sh): stores the part in
# /tmp/pykit; once every part is there, joins the cut wheels, checks every sha256, makes the venv
# /tmp/pyenv (the device's packages stay visible: torch, onnx, grpcio …) and installs the wheels
# into it. Also links the two libraries perf_analyzer loads from pytriton's copies into /tmp/pykit/lib.
# Safe to call again. PYKIT_STORE, PYKIT_VENV and PYKIT_PYTHON (python3) change the places and the
# interpreter, to try it elsewhere.
set -euo pipefail
d=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC1091
. "$d/kit.info"
store=${PYKIT_STORE:-/tmp/pykit}
venv=${PYKIT_VENV:-/tmp/pyenv}
python=${PYKIT_PYTHON:-python3}
mkdir -p "$store/wheels" "$store/have" "$store/lib"
for f in "$d"/*.whl "$d"/*.whl.piece-*; do [ -e "$f" ] && mv "$f" "$store/wheels/"; done
cp "$d/SHA256SUMS" "$store/SHA256SUMS"
touch "$store/have/$index"
if [ -f "$store/installed" ]; then echo "python kit: installed in $venv"; exit 0; fi
have=$(ls "$store/have" | wc -l)
if [ "$have" -lt "$parts" ]; then echo "python kit: $have of $parts parts stored"; exit 0; fi

cd "$store/wheels"
for first in *.whl.piece-00; do
  [ -e "$first" ] || continue
  wheel=${first%.piece-00}
  cat "$wheel".piece-* >"$wheel" && rm "$wheel".piece-*
done
sha256sum --quiet -c "$store/SHA256SUMS" || { echo "python kit: checksum mismatch" >&2; exit 1; }

# python3 there may itself be a venv (torch's): --system-site-packages would show the base
# interpreter's packages, not its own, so its site folders are added by a .pth file, after ours
# (our numpy 1.26 shadows its numpy 2). The venv gets no pip of its own (the base interpreter may
# lack ensurepip): python3's pip, visible through that .pth, installs into the venv.
rm -rf "$venv"
"$python" -m venv --without-pip --system-site-packages "$venv"
site_dirs=$("$python" -c 'import site; print(repr(site.getsitepackages()))')
own=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "import site; list(map(site.addsitedir, $site_dirs))" >"$own/zz_device_site.pth"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-index --no-deps --ignore-installed \
  --find-links "$store/wheels" \
  "$store"/wheels/*.whl
libs=$(ls -d "$own/nvidia_pytriton.libs")
ln -sf "$(ls "$libs"/libcudart-*.so.12*)" "$store/lib/libcudart.so.12"
ln -sf "$(ls "$libs"/libb64-*.so.0d)" "$store/lib/libb64.so.0d"
touch "$store/installed"
echo "python kit: installed in $venv ($("$venv/bin/python" --version); $(ls "$store/wheels" | wc -l) wheels)"
echo "export PYENV=$venv   # mlserver, uvicorn, perf_analyzer in \$PYENV/bin; perf_analyzer's libraries in $store/lib"
