#!/usr/bin/env bash
# The Python environment of the client checks of onnxrt-serve, made once and reused; prints its
# python on stdout (everything else goes to stderr):
#   tools/serve/clients-env.sh          tritonclient, numpy, onnx and the model wheels
#                                       (onnxrt-serve/tests/clients/requirements.txt)
#   tools/serve/clients-env.sh --perf   perf_analyzer (onnxrt-serve/tests/clients/perf-requirements.txt),
#                                       with the one system library it needs (libb64)
# The environment lives in ${ONNXRT_CACHE_DIR:-~/.cache/onnxrt}/<clients|perf>-venv and is reused
# while the requirements file and the Python version are those it was made with (a hash of both is
# written last, so an interrupted install is redone). On a fresh Debian/Ubuntu machine, as root,
# python3 and python3-venv are installed when missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
say() { printf '\033[1mclients-env.sh:\033[0m %s\n' "$*" >&2; }

kind=clients
requirements=$root/onnxrt-serve/tests/clients/requirements.txt
if [ "${1:-}" = --perf ]; then
  kind=perf
  requirements=$root/onnxrt-serve/tests/clients/perf-requirements.txt
elif [ -n "${1:-}" ]; then
  say "usage: clients-env.sh [--perf]"; exit 2
fi

apt_install() {
  command -v apt-get >/dev/null || { say "cannot install $*: no apt-get here; install it and run again"; exit 1; }
  say "installing $*"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

command -v python3 >/dev/null || apt_install python3
if [ "$kind" = perf ] && ! { ldconfig -p | grep -q 'libb64\.so\.0d'; }; then
  apt_install libb64-0d  # perf_analyzer links libb64.so.0d
fi

cache=${ONNXRT_CACHE_DIR:-$HOME/.cache/onnxrt}
venv=$cache/$kind-venv
mkdir -p "$cache"
hash=$( { cat "$requirements"; python3 -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-16)

exec 9>"$venv.lock"
flock 9  # two runs at once make the environment once
if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.requirements-hash" 2>/dev/null)" = "$hash" ]; then
  echo "$venv/bin/python"
  exit 0
fi

rm -rf "$venv"
if ! python3 -m venv "$venv" >&2 2>/dev/null; then
  # Debian's python3 has venv without ensurepip until python3-venv is installed.
  rm -rf "$venv"
  apt_install python3-venv
  python3 -m venv "$venv" >&2
fi
say "installing $(grep -cvE '^\s*(#|$)' "$requirements") pinned packages into $venv ($(python3 --version))"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps -r "$requirements" >&2
echo "$hash" >"$venv/.requirements-hash"
echo "$venv/bin/python"
