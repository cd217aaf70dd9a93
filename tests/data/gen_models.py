#!/usr/bin/env python3
"""Generate the small ONNX models used by the onnxrt tests.

Run from anywhere: `python3 tests/data/gen_models.py`. Output goes to
`tests/data/models/` next to this script. The output is deterministic, so a
re-run on the same onnx version leaves the committed files unchanged.

Models target IR version 8 and default-domain opset 17 so ONNX Runtime 1.16
loads them (except the deliberately broken ones).
"""

import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8
MAX_BYTES = 100 * 1024

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")

# (suffix, ONNX element type) for the identity_<suffix>.onnx family.
IDENTITY_TYPES = [
    ("f32", TensorProto.FLOAT),
    ("f64", TensorProto.DOUBLE),
    ("f16", TensorProto.FLOAT16),
    ("bf16", TensorProto.BFLOAT16),
    ("i8", TensorProto.INT8),
    ("i16", TensorProto.INT16),
    ("i32", TensorProto.INT32),
    ("i64", TensorProto.INT64),
    ("u8", TensorProto.UINT8),
    ("u16", TensorProto.UINT16),
    ("u32", TensorProto.UINT32),
    ("u64", TensorProto.UINT64),
    ("bool", TensorProto.BOOL),
    ("string", TensorProto.STRING),
]


def model(graph, opsets=None, ir_version=IR_VERSION):
    """Wrap a graph with the opset imports and IR version every test model uses."""
    if opsets is None:
        opsets = [helper.make_opsetid("", OPSET)]
    m = helper.make_model(graph, opset_imports=opsets)
    m.ir_version = ir_version
    return m


def tensor(name, elem_type, shape):
    return helper.make_tensor_value_info(name, elem_type, shape)


def add_f32():
    g = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["sum"])],
        "add_f32",
        [tensor("a", TensorProto.FLOAT, [2, 3]), tensor("b", TensorProto.FLOAT, [2, 3])],
        [tensor("sum", TensorProto.FLOAT, [2, 3])],
    )
    return model(g)


def identity(suffix, elem_type):
    g = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"])],
        f"identity_{suffix}",
        [tensor("x", elem_type, ["N", "M"])],
        [tensor("y", elem_type, ["N", "M"])],
    )
    return model(g)


def dynamic_batch():
    # Opset 17 ReduceMean still takes `axes` as an attribute (it became an input in 18).
    g = helper.make_graph(
        [helper.make_node("ReduceMean", ["images"], ["pooled"], axes=[2, 3], keepdims=0)],
        "dynamic_batch",
        [tensor("images", TensorProto.FLOAT, ["batch", 3, 4, 4])],
        [tensor("pooled", TensorProto.FLOAT, ["batch", 3])],
    )
    m = model(g)
    m.producer_name = "onnxrt-tests"
    m.producer_version = "1.0"
    m.domain = "ai.onnxrt.test"
    m.doc_string = "NCHW mean pool"
    m.model_version = 7
    helper.set_model_props(m, {"author": "onnxrt", "purpose": "tests"})
    return m


def multi_output():
    g = helper.make_graph(
        [
            helper.make_node("Add", ["x", "x"], ["doubled"]),
            helper.make_node("Mul", ["x", "x"], ["squared"]),
            helper.make_node("Neg", ["x"], ["negated"]),
        ],
        "multi_output",
        [tensor("x", TensorProto.FLOAT, ["N"])],
        [
            tensor("doubled", TensorProto.FLOAT, ["N"]),
            tensor("squared", TensorProto.FLOAT, ["N"]),
            tensor("negated", TensorProto.FLOAT, ["N"]),
        ],
    )
    return model(g)


def mlp_weights():
    rs = np.random.RandomState(0)
    # Scale keeps activations O(1) so a float tolerance in the tests stays meaningful.
    w1 = (rs.randn(16, 32) * 0.25).astype(np.float32)
    b1 = (rs.randn(32) * 0.1).astype(np.float32)
    w2 = (rs.randn(32, 4) * 0.25).astype(np.float32)
    b2 = (rs.randn(4) * 0.1).astype(np.float32)
    return w1, b1, w2, b2


def mlp_input():
    return (np.arange(2 * 16).reshape(2, 16) / 32).astype(np.float32)


def mlp_expected():
    w1, b1, w2, b2 = mlp_weights()
    x = mlp_input()
    hidden = np.maximum(x @ w1 + b1, np.float32(0))
    out = hidden @ w2 + b2
    return out.astype(np.float32)


def mlp():
    w1, b1, w2, b2 = mlp_weights()
    inits = [
        numpy_helper.from_array(w1, "w1"),
        numpy_helper.from_array(b1, "b1"),
        numpy_helper.from_array(w2, "w2"),
        numpy_helper.from_array(b2, "b2"),
    ]
    g = helper.make_graph(
        [
            helper.make_node("Gemm", ["x", "w1", "b1"], ["h"]),
            helper.make_node("Relu", ["h"], ["h_relu"]),
            helper.make_node("Gemm", ["h_relu", "w2", "b2"], ["logits"]),
        ],
        "mlp",
        [tensor("x", TensorProto.FLOAT, ["batch", 16])],
        [tensor("logits", TensorProto.FLOAT, ["batch", 4])],
        initializer=inits,
    )
    return model(g)


def save_mlp_external():
    """`mlp` with every initializer in external data (`mlp_external.data`, as onnx lays it out),
    for loading weights from memory."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mlp_external.onnx")
        onnx.save_model(
            mlp(), path, save_as_external_data=True, all_tensors_to_one_file=True,
            location="mlp_external.data", size_threshold=0,
        )
        onnx.checker.check_model(path)
        with open(path, "rb") as f:
            data = f.read()
        with open(os.path.join(tmp, "mlp_external.data"), "rb") as f:
            blob = f.read()
    write("mlp_external.onnx", data)
    write("mlp_external.data", blob)
    print(f"{'mlp_external.onnx':24} {len(data):7} bytes  weights in mlp_external.data ({len(blob)} bytes)")


def convnet():
    # A small real CNN (three 3x3 convolutions, ReLU, global pooling, a classifier): the
    # batcher's tests check that ORT's CPU convolutions give each sample of a batch the same bits
    # as a run of that sample alone.
    rs = np.random.RandomState(14)

    def weights(shape, fan_in):
        return (rs.randn(*shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    inits = [
        numpy_helper.from_array(weights((16, 3, 3, 3), 27), "c1_w"),
        numpy_helper.from_array((rs.randn(16) * 0.1).astype(np.float32), "c1_b"),
        numpy_helper.from_array(weights((32, 16, 3, 3), 144), "c2_w"),
        numpy_helper.from_array((rs.randn(32) * 0.1).astype(np.float32), "c2_b"),
        numpy_helper.from_array(weights((32, 32, 3, 3), 288), "c3_w"),
        numpy_helper.from_array((rs.randn(32) * 0.1).astype(np.float32), "c3_b"),
        numpy_helper.from_array(weights((32, 10), 32), "fc_w"),
        numpy_helper.from_array((rs.randn(10) * 0.1).astype(np.float32), "fc_b"),
    ]
    g = helper.make_graph(
        [
            helper.make_node("Conv", ["image", "c1_w", "c1_b"], ["c1"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c1"], ["r1"]),
            helper.make_node("Conv", ["r1", "c2_w", "c2_b"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
            helper.make_node("Relu", ["c2"], ["r2"]),
            helper.make_node("Conv", ["r2", "c3_w", "c3_b"], ["c3"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c3"], ["r3"]),
            helper.make_node("GlobalAveragePool", ["r3"], ["pooled"]),
            helper.make_node("Flatten", ["pooled"], ["features"]),
            helper.make_node("Gemm", ["features", "fc_w", "fc_b"], ["logits"]),
        ],
        "convnet",
        [tensor("image", TensorProto.FLOAT, ["batch", 3, 32, 32])],
        [tensor("logits", TensorProto.FLOAT, ["batch", 10])],
        initializer=inits,
    )
    return model(g)


def batch_reshape():
    # Its output's first axis is free but is not the batch axis: a batch of n samples comes back
    # as 2n rows. The batcher must refuse to split that, failing every request of the batch.
    g = helper.make_graph(
        [helper.make_node("Reshape", ["x", "rows_of_two"], ["y"])],
        "batch_reshape",
        [tensor("x", TensorProto.FLOAT, ["batch", 4])],
        [tensor("y", TensorProto.FLOAT, ["rows", 2])],
        initializer=[numpy_helper.from_array(np.array([-1, 2], dtype=np.int64), "rows_of_two")],
    )
    return model(g)


def strings():
    # ORT's default locale here is en_US.UTF-8, which fails session creation on hosts
    # without that locale installed; "C" always exists (it upper-cases ASCII only).
    g = helper.make_graph(
        [
            helper.make_node(
                "StringNormalizer",
                ["text"],
                ["upper"],
                case_change_action="UPPER",
                locale="C",
            )
        ],
        "strings",
        [tensor("text", TensorProto.STRING, ["N"])],
        [tensor("upper", TensorProto.STRING, ["N"])],
    )
    return model(g)


def float_seq_type():
    return helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))


def sequence():
    g = helper.make_graph(
        [helper.make_node("SequenceConstruct", ["a", "b"], ["seq"])],
        "sequence",
        [tensor("a", TensorProto.FLOAT, ["N"]), tensor("b", TensorProto.FLOAT, ["N"])],
        [helper.make_value_info("seq", float_seq_type())],
    )
    return model(g)


def sequence_len():
    g = helper.make_graph(
        [helper.make_node("SequenceLength", ["seq"], ["len"])],
        "sequence_len",
        [helper.make_value_info("seq", float_seq_type())],
        [tensor("len", TensorProto.INT64, [])],
    )
    return model(g)


def map_out():
    # ZipMap's map values are plain floats, which TypeProto spells as a shapeless float tensor.
    # onnx 1.14's helper has no map-type builder, so fill the TypeProto by hand.
    map_type = onnx.TypeProto()
    map_type.map_type.key_type = TensorProto.STRING
    map_type.map_type.value_type.CopyFrom(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    probs_type = helper.make_sequence_type_proto(map_type)
    g = helper.make_graph(
        [
            helper.make_node(
                "ZipMap",
                ["x"],
                ["probs"],
                domain="ai.onnx.ml",
                classlabels_strings=["cat", "dog", "fish"],
            )
        ],
        "map_out",
        [tensor("x", TensorProto.FLOAT, [1, 3])],
        [helper.make_value_info("probs", probs_type)],
    )
    return model(g, [helper.make_opsetid("", OPSET), helper.make_opsetid("ai.onnx.ml", 1)])


def scalar():
    g = helper.make_graph(
        [helper.make_node("Mul", ["x", "x"], ["y"])],
        "scalar",
        [tensor("x", TensorProto.FLOAT, [])],
        [tensor("y", TensorProto.FLOAT, [])],
    )
    return model(g)


SLOW_N = 256


def slow_loop():
    n = SLOW_N
    body = helper.make_graph(
        [
            helper.make_node("MatMul", ["state_in", "state_in"], ["prod"]),
            helper.make_node("Tanh", ["prod"], ["state_out"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "slow_loop_body",
        [
            tensor("iter", TensorProto.INT64, []),
            tensor("cond_in", TensorProto.BOOL, []),
            tensor("state_in", TensorProto.FLOAT, [n, n]),
        ],
        [
            tensor("cond_out", TensorProto.BOOL, []),
            tensor("state_out", TensorProto.FLOAT, [n, n]),
        ],
    )
    # The initial state is built in-graph (a 256x256 initializer would be 256 KiB); a
    # ramp rather than a constant keeps the matrix non-trivial. Tanh keeps values bounded.
    nodes = [
        helper.make_node(
            "Constant", [], ["start"], value=helper.make_tensor("start", TensorProto.FLOAT, [], [0.0])
        ),
        helper.make_node(
            "Constant",
            [],
            ["limit"],
            value=helper.make_tensor("limit", TensorProto.FLOAT, [], [1.0]),
        ),
        helper.make_node(
            "Constant",
            [],
            ["delta"],
            value=helper.make_tensor("delta", TensorProto.FLOAT, [], [1.0 / (n * n)]),
        ),
        helper.make_node("Range", ["start", "limit", "delta"], ["ramp"]),
        helper.make_node(
            "Constant",
            [],
            ["shape"],
            value=helper.make_tensor("shape", TensorProto.INT64, [2], [n, n]),
        ),
        helper.make_node("Reshape", ["ramp", "shape"], ["init_state"]),
        helper.make_node(
            "Constant", [], ["cond"], value=helper.make_tensor("cond", TensorProto.BOOL, [], [True])
        ),
        helper.make_node("Loop", ["iters", "cond", "init_state"], ["out"], body=body),
    ]
    g = helper.make_graph(
        nodes,
        "slow_loop",
        [tensor("iters", TensorProto.INT64, [])],
        [tensor("out", TensorProto.FLOAT, [n, n])],
    )
    return model(g)


def opset_too_new():
    g = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["sum"])],
        "opset_too_new",
        [tensor("a", TensorProto.FLOAT, [2, 3]), tensor("b", TensorProto.FLOAT, [2, 3])],
        [tensor("sum", TensorProto.FLOAT, [2, 3])],
    )
    return model(g, [helper.make_opsetid("", 21)], ir_version=10)


def custom_add_one():
    """x -> AddOne(x) in the custom domain ai.onnxrt.test, implemented by tests/custom_op/add_one.c."""
    node = helper.make_node("AddOne", ["x"], ["y"], domain="ai.onnxrt.test")
    graph = helper.make_graph([node], "custom_add_one", [tensor("x", TensorProto.FLOAT, ["N"])],
                              [tensor("y", TensorProto.FLOAT, ["N"])])
    return model(graph, opsets=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnxrt.test", 1)])


def custom_scale():
    """x -> Scale(x, factor=2.5) in the domain ai.onnxrt.example, implemented in Rust by the
    example of onnxrt's custom_op module docs."""
    node = helper.make_node("Scale", ["x"], ["y"], domain="ai.onnxrt.example", factor=2.5)
    graph = helper.make_graph([node], "custom_scale", [tensor("x", TensorProto.FLOAT, ["N"])],
                              [tensor("y", TensorProto.FLOAT, ["N"])])
    return model(graph, opsets=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnxrt.example", 1)])


def passthrough():
    # No nodes: every output is a graph input, which ORT returns as the input's own value (the
    # aliasing case of docs/soundness.md).
    g = helper.make_graph(
        [],
        "passthrough",
        [
            tensor("x", TensorProto.FLOAT, ["N"]),
            helper.make_value_info("s", float_seq_type()),
            tensor("t", TensorProto.STRING, ["N"]),
        ],
        [
            tensor("x", TensorProto.FLOAT, ["N"]),
            helper.make_value_info("s", float_seq_type()),
            tensor("t", TensorProto.STRING, ["N"]),
        ],
    )
    return model(g)


def last_row():
    # Reads only the last row of its input: on CUDA a kernel that touches the end of a large
    # tensor first, for the zeros_cuda ordering test (tests/tests/soundness_cuda_ordering.rs).
    consts = [
        numpy_helper.from_array(np.array([-1], dtype=np.int64), "starts"),
        numpy_helper.from_array(np.array([np.iinfo(np.int64).max], dtype=np.int64), "ends"),
        numpy_helper.from_array(np.array([0], dtype=np.int64), "axes"),
    ]
    g = helper.make_graph(
        [helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["y"])],
        "last_row",
        [tensor("x", TensorProto.FLOAT, ["N", "M"])],
        [tensor("y", TensorProto.FLOAT, [1, "M"])],
        initializer=consts,
    )
    return model(g)


def write(name, data):
    path = os.path.join(OUT_DIR, name)
    with open(path, "wb") as f:
        f.write(data)
    if len(data) >= MAX_BYTES:
        sys.exit(f"{name} is {len(data)} bytes; test models must stay under {MAX_BYTES}")
    return path


def save(name, m, check="full"):
    """Serialize and write a model; `check` is "full", "basic" (no shape inference) or None."""
    note = f"checked ({check})"
    if check is not None:
        onnx.checker.check_model(m, full_check=(check == "full"))
    else:
        # The bad models are meant to be rejected; still see what the checker says.
        try:
            onnx.checker.check_model(m)
            note = "unchecked (checker accepts it)"
        except Exception as e:  # noqa: BLE001 - any checker failure is informative here
            note = f"unchecked (checker: {type(e).__name__})"
    data = m.SerializeToString()
    write(name, data)
    print(f"{name:24} {len(data):7} bytes  {note}")
    return data


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    add_bytes = save("add_f32.onnx", add_f32())
    for suffix, elem_type in IDENTITY_TYPES:
        save(f"identity_{suffix}.onnx", identity(suffix, elem_type))
    save("dynamic_batch.onnx", dynamic_batch())
    save("multi_output.onnx", multi_output())
    save("mlp.onnx", mlp())
    expected = mlp_expected()
    raw = expected.astype("<f4").tobytes()
    write("mlp_expected.bin", raw)
    print(f"{'mlp_expected.bin':24} {len(raw):7} bytes  float32 LE, shape {list(expected.shape)}")
    save_mlp_external()
    save("convnet.onnx", convnet())
    save("batch_reshape.onnx", batch_reshape())
    save("strings.onnx", strings())
    save("sequence.onnx", sequence())
    save("sequence_len.onnx", sequence_len())
    # onnx 1.14 shape inference cannot merge map types ("type case unsupported"),
    # so this one only gets the structural check.
    save("map_out.onnx", map_out(), check="basic")
    save("scalar.onnx", scalar())
    save("passthrough.onnx", passthrough())
    save("last_row.onnx", last_row())
    save("slow_loop.onnx", slow_loop())
    save("opset_too_new.onnx", opset_too_new(), check=None)
    # The checker does not know the custom domain's schema.
    save("custom_add_one.onnx", custom_add_one(), check=None)
    save("custom_scale.onnx", custom_scale(), check=None)
    truncated = add_bytes[: len(add_bytes) // 2]
    write("bad_truncated.onnx", truncated)
    print(f"{'bad_truncated.onnx':24} {len(truncated):7} bytes  first half of add_f32.onnx")


if __name__ == "__main__":
    main()
