"""Writes a ResNet-50 (torchvision's layout: 3-4-6-3 bottlenecks, 25.6 M parameters) as ONNX with
seeded random weights, opset 17, dynamic batch, input `input` [N,3,224,224] → `logits` [N,1000].

For benchmarks on machines without torch (the CPU development machine): the architecture and
weight sizes are ResNet-50's, the numbers are not a trained network's. Needs onnx and numpy.

    python3 benches/scripts/make_resnet50.py /tmp/resnet50.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build():
    rs = np.random.RandomState(50)
    nodes, inits = [], []
    counter = [0]

    def name(prefix):
        counter[0] += 1
        return f"{prefix}{counter[0]}"

    def conv(x, cin, cout, k, stride=1, relu=True):
        w = name("w")
        # He-style scale keeps activations bounded through 50 layers.
        inits.append(numpy_helper.from_array((rs.randn(cout, cin, k, k) * np.sqrt(2.0 / (cin * k * k))).astype(np.float32), w))
        b = name("b")
        inits.append(numpy_helper.from_array(np.zeros(cout, np.float32), b))
        y = name("conv")
        nodes.append(helper.make_node("Conv", [x, w, b], [y], kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4))
        if not relu:
            return y
        r = name("relu")
        nodes.append(helper.make_node("Relu", [y], [r]))
        return r

    def bottleneck(x, cin, width, stride):
        cout = width * 4
        y = conv(x, cin, width, 1)
        y = conv(y, width, width, 3, stride)
        y = conv(y, width, cout, 1, relu=False)
        shortcut = conv(x, cin, cout, 1, stride, relu=False) if stride != 1 or cin != cout else x
        s = name("add")
        nodes.append(helper.make_node("Add", [y, shortcut], [s]))
        r = name("relu")
        nodes.append(helper.make_node("Relu", [s], [r]))
        return r, cout

    x = conv("input", 3, 64, 7, 2)
    p = name("pool")
    nodes.append(helper.make_node("MaxPool", [x], [p], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    x, c = p, 64
    for width, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
        for i in range(blocks):
            x, c = bottleneck(x, c, width, stride if i == 0 else 1)
    g = name("gap")
    nodes.append(helper.make_node("GlobalAveragePool", [x], [g]))
    f = name("flat")
    nodes.append(helper.make_node("Flatten", [g], [f]))
    inits.append(numpy_helper.from_array((rs.randn(1000, 2048) * 0.01).astype(np.float32), "fc_w"))
    inits.append(numpy_helper.from_array(np.zeros(1000, np.float32), "fc_b"))
    nodes.append(helper.make_node("Gemm", [f, "fc_w", "fc_b"], ["logits"], transB=1))
    graph = helper.make_graph(
        nodes, "resnet50",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 224, 224])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1000])],
        initializer=inits,
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="onnxrt-bench")
    m.ir_version = 8
    return m


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/resnet50.onnx"
    m = build()
    onnx.checker.check_model(m)
    onnx.save_model(m, out)
    params = sum(int(np.prod(t.dims)) for t in m.graph.initializer)
    print(f"{out}: {params / 1e6:.1f} M parameters, {len(m.graph.node)} nodes")
    # The weights beside it, for programs that load them once and share them between sessions
    # (benches' deploy_bench): raw little-endian f32 back to back, and one line per initializer:
    # `name dim,dim,...` in that order.
    with open(out + ".weights", "wb") as raw, open(out + ".weights.txt", "w") as index:
        for t in m.graph.initializer:
            raw.write(numpy_helper.to_array(t).astype("<f4").tobytes())
            index.write(f"{t.name} {','.join(str(d) for d in t.dims)}\n")
