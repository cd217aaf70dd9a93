"""The onnxruntime session of the Python servers of the comparison (triton_onnx.py, mlserver_onnx.py,
fastapi_oip.py): one provider by name, `cpu` or `cuda`, and no silent fallback — onnxruntime
quietly runs on the CPU when the CUDA provider cannot load, which would make a GPU comparison
measure the CPU. The providers the session got are printed, for the bench's log."""

import sys

import onnxruntime as ort

PROVIDERS = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider"}


def session(path, provider="cpu"):
    """An InferenceSession of the model at `path` on `provider` (`cpu` or `cuda`), or SystemExit."""
    if provider not in PROVIDERS:
        raise SystemExit(f"provider `{provider}`: expected one of {sorted(PROVIDERS)}")
    wanted = PROVIDERS[provider]
    made = ort.InferenceSession(path, providers=[wanted])
    got = made.get_providers()
    print(f"onnxruntime {ort.__version__} session for {path}: providers {got}", file=sys.stderr, flush=True)
    if not got or got[0] != wanted:
        raise SystemExit(f"{path}: asked for {wanted}, onnxruntime gave {got} (is its CUDA provider loadable?)")
    return made
