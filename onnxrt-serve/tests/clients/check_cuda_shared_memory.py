#!/usr/bin/env python3
"""The CUDA shared-memory extension with stock tritonclient (HTTP and gRPC) and
tritonclient.utils.cuda_shared_memory (which needs cuda-python), on a machine with a GPU.

    check_cuda_shared_memory.py --http HOST:PORT --grpc HOST:PORT --model NAME [--device 0]

For model NAME (FP32/INT64 inputs; a free dimension is taken as 1): inputs written into a CUDA
region (at an offset), outputs asked into another; the answers read back from device memory equal
the answers sent inline, byte for byte, over both protocols. Hostile requests are refused with
InferenceServerException and the server lives on: a place outside the region, a region longer
than its allocation, a handle of the wrong length, a name taken, an unregistered region. One line
per check, then `checks: N passed, M failed`.
"""

import argparse
import sys

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.cuda_shared_memory as cudashm
from client_checks import check, raises, summary

OFFSET = 256
NUMPY = {"FP32": np.float32, "INT64": np.int64}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", required=True)
    parser.add_argument("--grpc", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--device", type=int, default=0)
    args = parser.parse_args()
    http = httpclient.InferenceServerClient(args.http)
    grpc = grpcclient.InferenceServerClient(args.grpc)
    model, device = args.model, args.device
    rng = np.random.default_rng(7)
    inputs = {}
    for meta in http.get_model_metadata(model)["inputs"]:
        shape = [d if d > 0 else 1 for d in meta["shape"]]
        inputs[meta["name"]] = (rng.uniform(-1, 1, shape) * 10).astype(NUMPY[meta["datatype"]])
    datatype = {np.dtype(np.float32): "FP32", np.dtype(np.int64): "INT64"}

    def tensors_of(module, place=None):
        tensors, at = [], OFFSET
        for name, array in inputs.items():
            tensor = module.InferInput(name, list(array.shape), datatype[array.dtype])
            if place is None:
                tensor.set_data_from_numpy(array)
            else:
                place(tensor, at, array.nbytes)
            tensors.append(tensor)
            at += array.nbytes
        return tensors

    result = http.infer(model, tensors_of(httpclient))
    reference = {o["name"]: result.as_numpy(o["name"]) for o in result.get_response()["outputs"]}
    in_size = OFFSET + sum(a.nbytes for a in inputs.values())
    out_size = sum(a.nbytes for a in reference.values())
    in_handle = cudashm.create_shared_memory_region("cin", in_size, device)
    out_handle = cudashm.create_shared_memory_region("cout", out_size, device)
    try:
        # tritonclient's helper writes from the region's start: the gap before OFFSET is zeros.
        staged = np.zeros(OFFSET, np.uint8).tobytes() + b"".join(np.ascontiguousarray(a).tobytes() for a in inputs.values())
        cudashm.set_shared_memory_region(in_handle, [np.frombuffer(staged, np.uint8)])
        in_raw, out_raw = cudashm.get_raw_handle(in_handle), cudashm.get_raw_handle(out_handle)
        for protocol, client, module in (("http", http, httpclient), ("grpc", grpc, grpcclient)):
            client.register_cuda_shared_memory("cin", in_raw, device, in_size)
            client.register_cuda_shared_memory("cout", out_raw, device, out_size)
            status = client.get_cuda_shared_memory_status()
            names = sorted(r["name"] for r in status) if protocol == "http" else sorted(status.regions)
            check(f"{protocol}: status lists both CUDA regions", names == ["cin", "cout"], str(status))

            def request(region="cin", shift=0, out_size_each=None):
                def place(tensor, at, size):
                    tensor.set_shared_memory(region, size, at + shift)

                wanted, at = [], 0
                for name, array in reference.items():
                    output = module.InferRequestedOutput(name) if module is grpcclient else \
                        module.InferRequestedOutput(name, binary_data=True)
                    output.set_shared_memory("cout", out_size_each or array.nbytes, at)
                    wanted.append(output)
                    at += array.nbytes
                return client.infer(model, tensors_of(module, place), outputs=wanted)

            request()
            written = cudashm.get_contents_as_numpy(out_handle, np.uint8, [out_size]).tobytes()
            at, same = 0, True
            for name, array in reference.items():
                same = same and written[at:at + array.nbytes] == array.tobytes()
                at += array.nbytes
            check(f"{protocol}: inputs from device memory (offset {OFFSET}), outputs into it, equal to inline answers bitwise", same)

            message = raises(lambda: request(shift=in_size))
            check(f"{protocol}: an input place past the region is refused", "outside region" in message, message)
            message = raises(lambda: request(out_size_each=1))
            check(f"{protocol}: an output larger than its place is refused", "shared_memory_byte_size" in message, message)
            message = raises(lambda: request(region="nowhere"))
            check(f"{protocol}: an unregistered region is refused", "nowhere" in message, message)
            message = raises(lambda: client.register_cuda_shared_memory("cin", in_raw, device, in_size))
            check(f"{protocol}: a region registered twice is refused", "already registered" in message, message)
            message = raises(lambda: client.register_cuda_shared_memory("long", in_raw, device, in_size + (1 << 30)))
            check(f"{protocol}: a region longer than its allocation is refused", "holds" in message, message)
            message = raises(lambda: client.register_cuda_shared_memory("short", b"c2hvcnQ=", device, 8))
            check(f"{protocol}: a handle of the wrong length is refused", "raw_handle" in message, message)
            check(f"{protocol}: the server lives on", client.is_server_live())
            client.unregister_cuda_shared_memory("cin")
            message = raises(lambda: request())
            check(f"{protocol}: an unregistered input region is refused", "cin" in message, message)
            client.unregister_cuda_shared_memory()
            status = client.get_cuda_shared_memory_status()
            check(f"{protocol}: unregister all", len(status if protocol == "http" else status.regions) == 0, str(status))
    finally:
        cudashm.destroy_shared_memory_region(in_handle)
        cudashm.destroy_shared_memory_region(out_handle)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
