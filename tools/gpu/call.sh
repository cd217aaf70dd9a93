# One device call (tools/gpu/README.md section 5): unpack the last bundle part, run the GPU tests
# (unless TESTS=0), then the command in $SERVE29 (e.g. a serve29.sh line); results in $OUT.
bash .gpu-bundle/p3/unpack.sh >/dev/null 2>&1 || true
export OUT
capi=/tmp/ort-gpu/onnxruntime/capi
export ONNXRT_DYLIB_PATH=$capi/libonnxruntime.so.1.30.0 ONNXRT_TEST_MODELS=$PWD/tests/data/models
export LD_LIBRARY_PATH=$capi:/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/lib/x86_64-linux-gnu
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
[ -f /tmp/resnet50.onnx ] || python3 tools/gpu/export_resnet.py /tmp/resnet50.onnx /tmp/resnet50_fp16.onnx > $OUT/export.log 2>&1
if [ "${TESTS:-1}" = 1 ]; then
  start=$(date +%s)
  ONNXRT_GPU_RESNET=/tmp/resnet50.onnx timeout ${TEST_TIMEOUT:-200} .gpu-run/gpu --test-threads 1 --nocapture > $OUT/gpu-tests.log 2>&1
  echo "gpu tests rc=$? in $(( $(date +%s) - start )) s"
  grep -E "^test .*(FAILED|ok)$|test result|panicked|CudaGraph:|graphs: \[" $OUT/gpu-tests.log | tail -40
fi
if [ -n "${SERVE29:-}" ]; then
  start=$(date +%s)
  timeout ${SERVE_TIMEOUT:-380} bash -c "$SERVE29" > $OUT/serve29.log 2>&1
  echo "serve29 rc=$? in $(( $(date +%s) - start )) s"
  grep -E "RESULT|PHASES|goal|^iobinding|^cuda_graph|images/s|^\| |graph_runs|did not start|error" $OUT/serve29.log | cut -c1-400 | tail -60
fi
