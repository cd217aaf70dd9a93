#!/usr/bin/env python3
"""Generate the benchmark models: `python3 benches/models/gen_models.py`.

add_1.onnx    Add of two float32 [1] tensors       (per-call overhead, almost no compute)
add_1mb.onnx  Add of two float32 [262144] tensors  (1 MiB per input and per output)

The MLP benchmark uses tests/data/models/mlp.onnx (x[batch,16] -> logits[batch,4]).
mul_1.onnx (X[3,2] * W, W = [[1,2],[3,4],[5,6]]) and sigmoid.onnx (x[3,4,5]) are not generated: they
are ONNX Runtime's own test models, copied unchanged from the `datasets` folder of the PyPI wheel
onnxruntime==1.16.3 (sha256 71f431c4e9321ec6fbeb158d02ed240459a7dcc98673fa79a4f439ce42efaf10 and
5340aba67a7e3475162ad794378af55f1718f55f9a5d74b4af60ecc7f7a624b6).
IR version 8, opset 17, so ONNX Runtime 1.16 loads them. Output is deterministic.
"""

import os

import onnx
from onnx import TensorProto, helper

OUT_DIR = os.path.dirname(os.path.abspath(__file__))


def add(name, n):
    g = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["sum"])],
        name,
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [n]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [n]),
        ],
        [helper.make_tensor_value_info("sum", TensorProto.FLOAT, [n])],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="onnxrt-benches")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def main():
    for file, n in [("add_1.onnx", 1), ("add_1mb.onnx", 262144)]:
        path = os.path.join(OUT_DIR, file)
        data = add(file[:-5], n).SerializeToString()
        with open(path, "wb") as f:
            f.write(data)
        print(f"{file:14} {len(data):5} bytes  a[{n}] + b[{n}] -> sum[{n}]")


if __name__ == "__main__":
    main()
