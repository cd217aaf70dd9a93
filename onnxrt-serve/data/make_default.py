"""Builds the example's embedded default model and image (run: python3 onnxrt-serve/data/make_default.py).

colors.onnx is a tiny classifier with the input/output contract of an ImageNet model
(float32 [batch, 3, 224, 224], ImageNet-normalized NCHW -> [batch, classes] logits), whose weights
are written by hand so its answers are meaningful: it names the dominant color of the picture.
  1. a 1x1 Conv undoes the ImageNet normalization, giving pixel values in [0, 1];
  2. GlobalAveragePool gives the mean color m;
  3. Gemm scores each class color q by 40 m.q - 20 |q|^2, i.e. -20 |m - q|^2 up to a constant.
red.png is a 96x64 red picture with a gradient, written with zlib (no imaging library needed).
"""
import os
import struct
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
CLASSES = [
    ("red", (1, 0, 0)), ("green", (0, 1, 0)), ("blue", (0, 0, 1)),
    ("yellow", (1, 1, 0)), ("cyan", (0, 1, 1)), ("magenta", (1, 0, 1)),
    ("white", (1, 1, 1)), ("black", (0, 0, 0)), ("gray", (0.5, 0.5, 0.5)),
    ("orange", (1, 0.5, 0)),
]


def model():
    conv_w = np.zeros((3, 3, 1, 1), dtype=np.float32)
    for c in range(3):
        conv_w[c, c, 0, 0] = STD[c]
    conv_b = MEAN.copy()
    q = np.array([c for _, c in CLASSES], dtype=np.float32)
    gemm_w = (40.0 * q).astype(np.float32)              # [classes, 3], used with transB=1
    gemm_b = (-20.0 * (q * q).sum(axis=1)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["image", "conv_w", "conv_b"], ["pixels"]),
        helper.make_node("GlobalAveragePool", ["pixels"], ["pooled"]),
        helper.make_node("Flatten", ["pooled"], ["mean_color"]),
        helper.make_node("Gemm", ["mean_color", "gemm_w", "gemm_b"], ["logits"], transB=1),
    ]
    graph = helper.make_graph(
        nodes, "colors",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, 224, 224])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", len(CLASSES)])],
        [numpy_helper.from_array(conv_w, "conv_w"), numpy_helper.from_array(conv_b, "conv_b"),
         numpy_helper.from_array(gemm_w, "gemm_w"), numpy_helper.from_array(gemm_b, "gemm_b")],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="onnxrt-examples")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    onnx.save(m, os.path.join(HERE, "colors.onnx"))
    with open(os.path.join(HERE, "colors.labels"), "w") as f:
        f.write("".join(name + "\n" for name, _ in CLASSES))


def png(path, rgb):
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(h))
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def image():
    h, w = 64, 96
    y, x = np.mgrid[0:h, 0:w]
    rgb = np.zeros((h, w, 3), dtype=np.uint8)
    rgb[..., 0] = 200 + (x * 55 // w)
    rgb[..., 1] = 20 + (y * 30 // h)
    rgb[..., 2] = 30
    png(os.path.join(HERE, "red.png"), rgb)


if __name__ == "__main__":
    model()
    image()
    print("wrote colors.onnx, colors.labels, red.png")
