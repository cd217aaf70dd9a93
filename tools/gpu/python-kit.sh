#!/usr/bin/env bash
# Builds the Python kit of the GPU server comparison (tools/serve/bench-gpu.sh): the wheels of
# tools/gpu/python-kit.txt for the device's CPython 3.12 (manylinux x86-64, binary wheels only),
# packed into parts of at most CHUNK_MIB (50) MiB that can travel one per device call, as
# OUT_DIR/py0 … pyN (OUT_DIR default .gpu-bundle, ignored by git). A wheel larger than a part is
# cut with `split` and joined there. Each part holds tools/gpu/python-kit-unpack.sh as unpack.sh:
#   bash .gpu-bundle/pK/unpack.sh      (K = 0 … N, one call each, chained: /tmp lives while warm)
# stores the part in /tmp/pykit; the call that brings the last one checks every wheel's sha256 and
# installs them into the venv /tmp/pyenv (tools/gpu/README.md, "The server comparison").
#
# Usage, from the project root here:   bash tools/gpu/python-kit.sh [OUT_DIR]
# KIT_PYTHON_VERSION (3.12) makes a kit for another CPython, e.g. 3.11 to try the unpacking here.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-.gpu-bundle}
chunk=$(( ${CHUNK_MIB:-50} * 1024 * 1024 ))
work=$(mktemp -d /tmp/python-kit.XXXXXX)
trap 'rm -rf "$work"' EXIT

# pip matches manylinux tags exactly: every glibc level the device (2.39) takes that these wheels use.
platforms=()
for tag in manylinux1 manylinux2014 manylinux_2_5 manylinux_2_17 manylinux_2_24 manylinux_2_27 manylinux_2_28 \
  manylinux_2_31 manylinux_2_34 manylinux_2_35; do platforms+=(--platform "${tag}_x86_64"); done
python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: --python-version "${KIT_PYTHON_VERSION:-3.12}" \
  --implementation cp "${platforms[@]}" -d "$work/wheels" -r "$root/tools/gpu/python-kit.txt"
(cd "$work/wheels" && sha256sum -- *.whl >"$work/SHA256SUMS")

# What the wheels need that the kit does not hold (or holds at a version outside the range): it
# must be on the device, at a fitting version (the device tool's list of its packages, or `pip show` there).
python3 - "$work/wheels" "${KIT_PYTHON_VERSION:-3.12}" <<'PY'
import re, sys, zipfile, pathlib
from pip._vendor.packaging.requirements import Requirement
from pip._vendor.packaging.utils import canonicalize_name
folder, python = pathlib.Path(sys.argv[1]), sys.argv[2]
env = {"python_version": python, "python_full_version": python + ".0", "sys_platform": "linux",
       "platform_system": "Linux", "platform_machine": "x86_64", "platform_python_implementation": "CPython",
       "implementation_name": "cpython", "os_name": "posix", "extra": ""}
have, needs = {}, []
for wheel in sorted(folder.glob("*.whl")):
    with zipfile.ZipFile(wheel) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    name = canonicalize_name(re.search(r"^Name: (.+)$", meta, re.M).group(1))
    have[name] = re.search(r"^Version: (.+)$", meta, re.M).group(1).strip()
    needs += [(name, Requirement(line)) for line in re.findall(r"^Requires-Dist: (.+)$", meta, re.M)]
# The extras that one wheel asks of another (pytriton: tritonclient[grpc,http]) count too.
extras = {}
for who, req in needs:
    if req.marker is None or req.marker.evaluate(env):
        extras.setdefault(canonicalize_name(req.name), set()).update(req.extras)
outside, clash = set(), []
for who, req in needs:
    wanted = [""] + sorted(extras.get(who, ()))
    if req.marker is not None and not any(req.marker.evaluate({**env, "extra": e}) for e in wanted):
        continue
    name = canonicalize_name(req.name)
    if name not in have:
        outside.add(name)
    elif not req.specifier.contains(have[name], prereleases=True):
        clash.append(f"{who} wants {req}, the kit has {have[name]}")
print("python kit: needed from the device: " + ", ".join(sorted(outside)))
for line in clash:
    print("python kit: known mismatch (installed with --no-deps; runs in the bench-cpu.sh venvs): " + line)
PY

# Wheels larger than a part: cut into pieces of half a part (each lands beside smaller wheels).
for wheel in "$work"/wheels/*.whl; do
  if [ "$(stat -c %s "$wheel")" -gt "$chunk" ]; then
    split -b $((chunk / 2)) -d -a 2 "$wheel" "$wheel.piece-"
    rm "$wheel"
  fi
done

# First fit, largest first, into parts of at most $chunk bytes.
rm -rf "$out"/py[0-9]*
mkdir -p "$out"
parts=$(python3 - "$work/wheels" "$chunk" "$out" <<'PY'
import os, sys
folder, chunk, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
files = sorted(os.listdir(folder), key=lambda f: -os.path.getsize(os.path.join(folder, f)))
parts = []  # [bytes, [files]]
for f in files:
    size = os.path.getsize(os.path.join(folder, f))
    for part in parts:
        if part[0] + size <= chunk:
            part[0] += size
            part[1].append(f)
            break
    else:
        parts.append([size, [f]])
for index, (_, names) in enumerate(parts):
    os.makedirs(f"{out}/py{index}")
    for name in names:
        os.rename(os.path.join(folder, name), f"{out}/py{index}/{name}")
print(len(parts))
PY
)
for ((i = 0; i < parts; i++)); do
  cp "$root/tools/gpu/python-kit-unpack.sh" "$out/py$i/unpack.sh"
  cp "$work/SHA256SUMS" "$out/py$i/SHA256SUMS"
  printf 'parts=%s\nindex=%s\n' "$parts" "$i" >"$out/py$i/kit.info"
done
if [ "${out#/}" = "$out" ] && [ -d "$root/.git" ] && ! grep -qx "/$out/" "$root/.git/info/exclude" 2>/dev/null; then
  echo "/$out/" >>"$root/.git/info/exclude"
fi
echo "python kit: $(wc -l <"$work/SHA256SUMS") wheels, $(du -cb "$out"/py[0-9]*/* | tail -1 | cut -f1) bytes in $parts parts:"
for ((i = 0; i < parts; i++)); do echo "  $out/py$i: $(du -cb "$out/py$i"/* | tail -1 | cut -f1) bytes"; done
