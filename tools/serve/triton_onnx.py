"""Triton Inference Server (the `tritonserver` that the nvidia-pytriton wheel ships) serving ONNX
models through onnxruntime, for the CPU comparison of BENCHMARKS.md. pytriton binds a Python
function as a model of Triton's Python backend: Triton answers the Open Inference Protocol (REST
and gRPC) itself, its dynamic batcher (when on) gathers requests, and the function runs one
onnxruntime session per model.

    python triton_onnx.py --model cls=/path/cls.onnx [--model NAME=PATH]... --http-port P \
        --grpc-port P --metrics-port P [--batching --max-batch 16 --max-delay-us 1000] [--provider cuda]

Batching off: the model has no batch axis in Triton's sense (max_batch_size 0), each request
runs alone. Batching on: max_batch_size N and a dynamic batcher with that queue delay; the first
axis of every input and output is the batch axis.
"""

import argparse

import numpy as np
from pytriton.decorators import batch
from pytriton.model_config import DynamicBatcher, ModelConfig, Tensor
from pytriton.triton import Triton, TritonConfig, TritonSecurityConfig

from ort_session import session as ort_session

NUMPY_TYPES = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(float16)": np.float16,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}


def tensors(args, batching):
    """Triton's tensor declarations from onnxruntime's: free axes are -1; with batching the first
    axis is Triton's implicit batch axis and is left out."""
    declared = []
    for arg in args:
        shape = tuple(d if isinstance(d, int) and d > 0 else -1 for d in arg.shape)
        declared.append(Tensor(name=arg.name, dtype=NUMPY_TYPES[arg.type], shape=shape[1:] if batching else shape))
    return declared


def bind(triton, name, path, options):
    session = ort_session(path, options.provider)
    output_names = [o.name for o in session.get_outputs()]

    def run(inputs):
        return dict(zip(output_names, session.run(None, inputs)))

    if options.batching:
        # @batch hands the function the batcher's gathered requests concatenated along axis 0
        # and splits the answers back.
        infer = batch(lambda **inputs: run(inputs))
        config = ModelConfig(
            batching=True,
            max_batch_size=options.max_batch,
            batcher=DynamicBatcher(max_queue_delay_microseconds=options.max_delay_us),
        )
    else:
        infer = lambda requests: [run(dict(request.items())) for request in requests]  # noqa: E731
        config = ModelConfig(batching=False)
    triton.bind(
        model_name=name,
        infer_func=infer,
        inputs=tensors(session.get_inputs(), options.batching),
        outputs=tensors(session.get_outputs(), options.batching),
        config=config,
        strict=False,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", action="append", required=True, help="NAME=PATH of an .onnx file")
    parser.add_argument("--http-port", type=int, required=True)
    parser.add_argument("--grpc-port", type=int, required=True)
    parser.add_argument("--metrics-port", type=int, required=True)
    parser.add_argument("--batching", action="store_true")
    parser.add_argument("--max-batch", type=int, default=16)
    parser.add_argument("--max-delay-us", type=int, default=1000)
    parser.add_argument("--provider", choices=["cpu", "cuda"], default="cpu", help="onnxruntime's provider")
    options = parser.parse_args()
    config = TritonConfig(
        http_address="127.0.0.1",
        http_port=options.http_port,
        grpc_address="127.0.0.1",
        grpc_port=options.grpc_port,
        metrics_port=options.metrics_port,
    )
    # pytriton guards statistics with a random token by default; perf_analyzer reads them (as it
    # does onnxrt-serve's, which are open). The other guarded APIs stay guarded.
    security = TritonSecurityConfig(restricted_endpoints=["shared-memory", "model-repository", "trace", "logging"])
    with Triton(config=config, security_config=security) as triton:
        for model in options.model:
            name, path = model.split("=", 1)
            bind(triton, name, path, options)
        triton.serve()


if __name__ == "__main__":
    main()
