#!/usr/bin/env bash
# Breaks the GPU machine on purpose (DIAGNOSTICS.md), one way at a time, and prints one table:
#   case | the doctor's first FAIL row | the strict session's result (`resnet_cuda --strict`;
#   SESSION_FLAGS replaces `--strict` for a case, as 5b does)
# Nothing on the machine changes for good: files are hidden inside a private mount namespace
# (`unshare -m` + `mount --bind /dev/null FILE`, gone with the command), or the case is made
# with copies in a scratch folder and LD_LIBRARY_PATH / ONNXRT_DYLIB_PATH.
#
# Expects what tools/gpu/README.md sets up: the bundle unpacked (/tmp/ort-gpu), and .gpu-run/onnxrt
# and .gpu-run/resnet_cuda built here with ONNXRT_DIST=gpu-cuda13-1.30.0-wheel. Run as
#   bash .gpu-bundle/p3/unpack.sh && export OUT && bash tools/gpu/break-gpu.sh
# Every case is bounded by `timeout`; a failing case never stops the others (no `set -e`).
# CASES="0 8" runs only those cases (numbers as in the comments below; 5b and 8b run with 5 and 8).
# OTHER_ORT_CUDA_PROVIDER=FILE: a libonnxruntime_providers_cuda.so of another ORT release (case 8).
set -uo pipefail

out=${OUT:-/tmp/out}
mkdir -p "$out"
capi=${CAPI:-/tmp/ort-gpu/onnxruntime/capi}
cuda_lib=${CUDA_LIB:-/usr/local/cuda-13.0/targets/x86_64-linux/lib}
sys_lib=/usr/lib/x86_64-linux-gnu
bin=${BIN:-.gpu-run}
model=${MODEL:-/tmp/resnet50.onnx}
doctor_timeout=${DOCTOR_TIMEOUT:-180}
session_timeout=${SESSION_TIMEOUT:-300}
base_path=$capi:$cuda_lib:$sys_lib
scratch=$(mktemp -d /tmp/break-gpu.XXXXXX)
table=$out/break-gpu.md
log=$out/break-gpu.log
: >"$log"

export ONNXRT_DYLIB_PATH=$capi/libonnxruntime.so.1.30.0
if [ ! -f "$model" ]; then
  timeout 600 python3 tools/gpu/export_resnet.py "$model" /tmp/resnet50_fp16.onnx 2>&1 | tail -1
fi

# The file the loader opens for a library name: the first folder of the base path that has it,
# then the loader cache. Symbolic links resolved (a bind mount over a link covers its target).
where_is() {
  local name=$1 dir
  for dir in ${base_path//:/ }; do
    if [ -e "$dir/$name" ]; then readlink -f "$dir/$name"; return; fi
  done
  ldconfig -p | awk -v n="$name" '$1 == n { print $NF; exit }' | xargs -r readlink -f
}

# The doctor's first FAIL row from its JSON, shortened for a table cell.
first_fail() {
  python3 -c '
import json, re, sys
try:
    rows = json.load(open(sys.argv[1]))
except Exception as e:
    print("(no JSON: %s)" % e); sys.exit()
fail = [r for r in rows if r.get("status") == "FAIL"]
if not fail:
    print("no FAIL row"); sys.exit()
r = fail[0]
# The NEEDED list of a provider row says nothing about the fault: drop it.
detail = re.sub(r"complete ELF64 x86-64 library; NEEDED \(\d+\): [^;]*; ", "", r["detail"])
text = "**%s**: %s" % (r["check"], detail)
if r.get("fix"): text += " — fix: " + r["fix"]
text = text.replace("|", "/").replace("\n", " ")
print(text[:400] + ("…" if len(text) > 400 else ""))
' "$1"
}

# The strict session's result: its last line, or the signal that killed it.
session_result() {
  local code=$1 file=$2 last
  last=$(grep -v '^\s*$' "$file" | tail -n 1 | tr '|' '/' | cut -c1-300)
  if [ "$code" -eq 0 ]; then echo "ran (exit 0): $last"
  elif [ "$code" -eq 124 ]; then echo "timed out after ${session_timeout}s"
  elif [ "$code" -gt 128 ]; then echo "**killed by signal $((code - 128))** (exit $code): $last"
  else echo "exit $code: $last"; fi
}

# run_case NAME HOW [ARG]: HOW is `env` (ARG: extra `VAR=value` words, space-separated) or
# `hide` (ARG: files to cover with /dev/null inside a private mount namespace).
printf '| case | doctor: first FAIL row | `resnet_cuda --strict` |\n|---|---|---|\n' >"$table"
cases=0
run_case() {
  local title=$1 how=$2 arg=${3:-} code dcode name
  cases=$((cases + 1))
  name=case$cases   # file names; the title goes into the table
  echo "== $name: $title ($how $arg)" | tee -a "$log"
  local doctor_cmd="timeout $doctor_timeout $bin/onnxrt doctor --json --dist gpu-cuda13-1.30.0-wheel >$scratch/$name.doctor.json 2>$scratch/$name.doctor.err"
  local session_cmd="timeout $session_timeout $bin/resnet_cuda --model $model --batch 8 --iterations 5 ${SESSION_FLAGS---strict} >$scratch/$name.session.txt 2>&1"
  case $how in
    env)
      # shellcheck disable=SC2086
      env LD_LIBRARY_PATH="$base_path" $arg bash -c "$doctor_cmd"; dcode=$?
      # shellcheck disable=SC2086
      env LD_LIBRARY_PATH="$base_path" $arg bash -c "$session_cmd"; code=$?
      ;;
    hide)
      local mounts="" f
      if [ -z "$arg" ]; then echo "| $title | (not makeable: the file to hide was not found) | — |" >>"$table"; return; fi
      for f in $arg; do
        if [ ! -e "$f" ]; then echo "| $title | (not makeable: $f does not exist) | — |" >>"$table"; return; fi
        mounts="$mounts mount --bind /dev/null '$f' &&"
      done
      LD_LIBRARY_PATH="$base_path" timeout $((doctor_timeout + 10)) unshare -m bash -c "$mounts $doctor_cmd"; dcode=$?
      LD_LIBRARY_PATH="$base_path" timeout $((session_timeout + 10)) unshare -m bash -c "$mounts $session_cmd"; code=$?
      ;;
  esac
  cat "$scratch/$name.doctor.err" "$scratch/$name.session.txt" >>"$log" 2>/dev/null
  local doctor_row strict
  doctor_row=$(first_fail "$scratch/$name.doctor.json")
  if [ "$dcode" -gt 128 ]; then doctor_row="**the doctor was killed by signal $((dcode - 128))** $doctor_row"; fi
  if [ "$dcode" -eq 124 ]; then doctor_row="the doctor timed out after ${doctor_timeout}s; $doctor_row"; fi
  strict=$(session_result "$code" "$scratch/$name.session.txt")
  cp "$scratch/$name.doctor.json" "$out/" 2>/dev/null
  echo "doctor: $doctor_row" | tee -a "$log"
  echo "strict: $strict" | tee -a "$log"
  echo "| $title | $doctor_row | $strict |" >>"$table"
}

# Whether case $1 is to run (all of them unless CASES lists some).
want() {
  [ -z "${CASES:-}" ] || [[ " $CASES " == *" $1 "* ]]
}

not_makeable() {
  echo "| $1 | (not makeable here: $2) | — |" >>"$table"
  echo "== $1: not makeable here: $2" | tee -a "$log"
}

# 0. The healthy machine, for comparison.
want 0 && run_case healthy env

# 1. No GPU visible.
want 1 && run_case "no GPU visible (CUDA_VISIBLE_DEVICES=)" env "CUDA_VISIBLE_DEVICES="

# 2. A truncated libcublasLt.so.13 first on LD_LIBRARY_PATH.
lt=$(where_is libcublasLt.so.13)
if ! want 2; then :
elif [ -n "$lt" ]; then
  mkdir -p "$scratch/truncated"
  head -c $(($(stat -L -c %s "$lt") / 2)) "$lt" >"$scratch/truncated/libcublasLt.so.13"   # headers intact, the end gone
  run_case "truncated libcublasLt.so.13 first on LD_LIBRARY_PATH" env "LD_LIBRARY_PATH=$scratch/truncated:$base_path"
else
  not_makeable "truncated libcublasLt.so.13" "libcublasLt.so.13 not found"
fi

# 3. The runtime folder without libonnxruntime_providers_cuda.so.
if want 3; then
  mkdir -p "$scratch/no-cuda-provider"
  for f in "$capi"/libonnxruntime*.so*; do
    case $(basename "$f") in libonnxruntime_providers_cuda.so) ;; *) ln -s "$f" "$scratch/no-cuda-provider/" ;; esac
  done
  # ORT looks for its providers beside the file it was loaded from: a copy, not a link.
  rm -f "$scratch/no-cuda-provider/libonnxruntime.so.1.30.0"
  cp "$capi/libonnxruntime.so.1.30.0" "$scratch/no-cuda-provider/"
  run_case "runtime folder without libonnxruntime_providers_cuda.so" env "ONNXRT_DYLIB_PATH=$scratch/no-cuda-provider/libonnxruntime.so.1.30.0"
fi

# 4. libcudnn.so.9 hidden.
cudnn=$(where_is libcudnn.so.9)
want 4 && run_case "libcudnn.so.9 hidden" hide "$cudnn"

# 5. cuDNN 9's lazily loaded sub-library hidden (the guides' libcudnn_cnn_infer.so.8 row).
want 5 && run_case "libcudnn_engines_precompiled.so.9 hidden" hide "$(where_is libcudnn_engines_precompiled.so.9)"

# 5b. The same without --strict: the session loads, and the first convolution fails inside cuDNN
#     (ORT's CUDNN_STATUS_* report, which the crate types as Error::GpuLibrary with what to check).
want 5 && (SESSION_FLAGS=""; run_case "libcudnn_engines_precompiled.so.9 hidden, session not strict" hide "$(where_is libcudnn_engines_precompiled.so.9)")

# 6. A wrong-version cuDNN first on LD_LIBRARY_PATH: cuDNN 9's front library under cuDNN 8's
#    name, with the real libcudnn.so.9 hidden (what a machine with only cuDNN 8 looks like to
#    the CUDA 13 build), and a cuDNN front library of another 9.x release (pip's, if any) first
#    on LD_LIBRARY_PATH with the system's sub-libraries (a mix of releases).
if ! want 6; then :
elif [ -n "$cudnn" ]; then
  mkdir -p "$scratch/cudnn8"
  cp "$cudnn" "$scratch/cudnn8/libcudnn.so.8"
  (base_path=$scratch/cudnn8:$base_path; run_case "cuDNN 8 only (libcudnn.so.9 hidden, libcudnn.so.8 first on LD_LIBRARY_PATH)" hide "$cudnn")
  other=$(timeout 60 find / -xdev \( -path /proc -o -path /sys -o -path /tmp \) -prune -o -name 'libcudnn.so.9*' -type f -print 2>/dev/null \
    | while read -r f; do [ "$(readlink -f "$f")" != "$cudnn" ] && echo "$f"; done | head -n 1)
  if [ -n "$other" ]; then
    mkdir -p "$scratch/cudnn-mix"
    ln -s "$other" "$scratch/cudnn-mix/libcudnn.so.9"
    run_case "cuDNN front of another release ($other) first on LD_LIBRARY_PATH" env "LD_LIBRARY_PATH=$scratch/cudnn-mix:$base_path"
  else
    not_makeable "cuDNN 9 of another release first on LD_LIBRARY_PATH" "only one libcudnn.so.9 on the machine"
  fi
else
  not_makeable "wrong-version cuDNN" "libcudnn.so.9 not found"
fi

# 7. A second CUDA on LD_LIBRARY_PATH, first: another copy of the CUDA libraries (pip's, torch's)
#    if the machine has one, else a CUDA 12 folder made of CUDA 13's cudart under the 12 name.
if want 7; then
  second=$(timeout 60 find / -xdev \( -path /proc -o -path /sys -o -path /tmp -o -path /usr/local/cuda-13.0 \) -prune \
    -o -name 'libcublasLt.so.*' -type f -print 2>/dev/null | head -n 1)
  if [ -n "$second" ]; then
    run_case "second CUDA first on LD_LIBRARY_PATH ($(dirname "$second"))" env "LD_LIBRARY_PATH=$(dirname "$second"):$base_path"
  else
    mkdir -p "$scratch/cuda-12.9/lib64"
    cp "$(where_is libcudart.so.13)" "$scratch/cuda-12.9/lib64/libcudart.so.12" 2>/dev/null
    run_case "second CUDA (a cuda-12.9 folder) first on LD_LIBRARY_PATH" env "LD_LIBRARY_PATH=$scratch/cuda-12.9/lib64:$base_path"
  fi
fi

# 8. A CUDA provider library of another ORT release beside the 1.30 runtime: a scratch copy of
#    the runtime folder (the runtime copied, so ORT looks beside the copy; the 1.30 shared and
#    TensorRT provider libraries linked) whose libonnxruntime_providers_cuda.so is
#    OTHER_ORT_CUDA_PROVIDER (e.g. onnxruntime-gpu 1.31.1's, carried). ORT checks nothing.
#    Carried as on 2026-12-04: `pip download --no-deps onnxruntime-gpu==1.31.1`, unzip its
#    onnxruntime/capi/libonnxruntime_providers_cuda.so (284 MB), `xz -9` (186 MB), `split -b 59m`
#    into a git-ignored folder, one part per call, joined and checked (sha256) in the last call.
# 8b. The same with the session not strict: what ORT does with it when nothing checks first.
if ! want 8; then :
elif [ -n "${OTHER_ORT_CUDA_PROVIDER:-}" ] && [ -f "$OTHER_ORT_CUDA_PROVIDER" ]; then
  # The release strings it embeds (NUL-terminated `1.N.N`, as onnxrt_preflight::release reads them).
  foreign=$(python3 -c 'import re, sys; print(" ".join(sorted({m.decode() for m in re.findall(rb"(?<=\x00)1\.\d{1,3}\.\d{1,3}(?=\x00)", open(sys.argv[1], "rb").read())})))' "$OTHER_ORT_CUDA_PROVIDER")
  echo "== the carried CUDA provider library embeds: ${foreign:-no release string}" | tee -a "$log"
  mkdir -p "$scratch/other-release"
  cp "$capi/libonnxruntime.so.1.30.0" "$scratch/other-release/"
  ln -s "$capi/libonnxruntime_providers_shared.so" "$capi/libonnxruntime_providers_tensorrt.so" "$scratch/other-release/"
  ln -s "$OTHER_ORT_CUDA_PROVIDER" "$scratch/other-release/libonnxruntime_providers_cuda.so"
  run_case "libonnxruntime_providers_cuda.so of ORT ${foreign:-another release} beside the 1.30.0 runtime" env "ONNXRT_DYLIB_PATH=$scratch/other-release/libonnxruntime.so.1.30.0"
  (SESSION_FLAGS=""; run_case "the same, session not strict" env "ONNXRT_DYLIB_PATH=$scratch/other-release/libonnxruntime.so.1.30.0")
else
  not_makeable "CUDA provider library of another ORT release" "none carried (set OTHER_ORT_CUDA_PROVIDER to another release's libonnxruntime_providers_cuda.so)"
fi

echo
echo "== broken on purpose ($(date -u +%F), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1))"
cat "$table"
rm -rf "$scratch"
