#!/usr/bin/env python3
"""Builds the model repository of the client checks from installed wheels, models unchanged.

    make_repository.py OUT_DIR

writes OUT_DIR/<name>/model.onnx for the four real models of the client checks, each copied byte for
byte from the wheel that ships it and checked against that wheel's RECORD hash:

    ppocr_det   rapidocr_onnxruntime  models/ch_PP-OCRv4_det_infer.onnx      x [?,3,?,?] float
    ppocr_rec   rapidocr_onnxruntime  models/ch_PP-OCRv4_rec_infer.onnx      x [?,3,?,?] float (fed 48 high)
    ppocr_cls   rapidocr_onnxruntime  models/ch_ppocr_mobile_v2.0_cls_infer.onnx  x [?,3,?,?] float
    silero_vad  silero_vad            data/silero_vad.onnx   input [?,?], state [2,?,128], sr [] int64

and OUT_DIR/<name>/config.json where a model needs one (below), and batching where it makes sense: cls
and rec take a batch of crops of one size, so they batch; det takes pages of any height and width
(run alone); silero's state has its batch on axis 1 and `sr` is a scalar, so its requests cannot be
stacked on axis 0 (run alone; batched, its stateN also differs from single runs in ORT 1.16).

The packages are located without being imported (rapidocr_onnxruntime imports OpenCV, silero_vad
imports torch; neither is installed in the client environment: clients-env.sh installs the
wheels without their dependencies).
"""

import base64
import hashlib
import importlib.metadata
import json
import shutil
import sys
from pathlib import Path

# name -> (distribution, top-level package, path inside the package)
MODELS = {
    "ppocr_det": ("rapidocr_onnxruntime", "rapidocr_onnxruntime", "models/ch_PP-OCRv4_det_infer.onnx"),
    "ppocr_rec": ("rapidocr_onnxruntime", "rapidocr_onnxruntime", "models/ch_PP-OCRv4_rec_infer.onnx"),
    "ppocr_cls": ("rapidocr_onnxruntime", "rapidocr_onnxruntime", "models/ch_ppocr_mobile_v2.0_cls_infer.onnx"),
    "silero_vad": ("silero-vad", "silero_vad", "data/silero_vad.onnx"),
}

# The server's per-model config (DIR/<name>/config.json, onnxrt-serve's repository::ModelConfig):
# only what a model needs. det needs none (the default warm-up, free axes 64 but the batch axis,
# suits it). cls and rec batch (a delay of 2 ms lets the checker's eight concurrent requests meet
# in one batch on a loaded two-core machine). rec's height is narrowed to the 48 it is made for
# (`shapes`): ONNX Runtime 1.16 dies of SIGFPE on heights up to 32, so such requests are refused
# before a run. silero_vad runs only with `sr` 16000 or 8000, a whole chunk of samples (64 of
# context + 512) and a state whose free axis is the batch's (1, not the default 64), so its
# warm-up says so.
CONFIGS = {
    "ppocr_det": None,
    "ppocr_rec": {"batching": True, "max_batch": 8, "max_delay_us": 2000, "shapes": {"x": [-1, 3, 48, -1]}},
    "ppocr_cls": {"batching": True, "max_batch": 8, "max_delay_us": 2000},
    "silero_vad": {"batching": False, "warmup": {"input": [1, 576], "state": [2, 1, 128]}, "warmup_fill": {"sr": 16000}},
}


def wheel_file(distribution: str, package: str, inner: str) -> tuple[Path, str]:
    """The installed file and the sha256 its wheel's RECORD lists for it."""
    try:
        dist = importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        sys.exit(f"make_repository: the wheel `{distribution}` is not installed; "
                 f"install onnxrt-serve/tests/clients/requirements.txt (tools/serve/clients-env.sh does)")
    wanted = f"{package}/{inner}"
    for entry in dist.files or []:
        if entry.as_posix() == wanted:
            if entry.hash is None or entry.hash.mode != "sha256":
                sys.exit(f"make_repository: {distribution}'s RECORD has no sha256 for {wanted}")
            return Path(entry.locate()), entry.hash.value
    sys.exit(f"make_repository: {distribution} {dist.version} ships no {wanted} "
             f"(requirements.txt pins the version that does)")


def sha256_record(path: Path) -> str:
    """A file's sha256 as a wheel's RECORD writes it: urlsafe base64 without padding."""
    digest = hashlib.sha256(path.read_bytes()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: make_repository.py OUT_DIR")
    out = Path(sys.argv[1])
    for name, (distribution, package, inner) in MODELS.items():
        source, recorded = wheel_file(distribution, package, inner)
        if sha256_record(source) != recorded:
            sys.exit(f"make_repository: {source} differs from its wheel's RECORD hash (edited after install?)")
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / "model.onnx"
        shutil.copyfile(source, target)
        if sha256_record(target) != recorded:
            sys.exit(f"make_repository: the copy {target} differs from {source}")
        note = ""
        if CONFIGS.get(name) is not None:
            (folder / "config.json").write_text(json.dumps(CONFIGS[name]) + "\n")
            note = f", config.json {json.dumps(CONFIGS[name])}"
        version = importlib.metadata.version(distribution)
        print(f"{name}: {distribution} {version} {package}/{inner} ({target.stat().st_size} bytes, "
              f"sha256 as in the wheel's RECORD){note}")


if __name__ == "__main__":
    main()
