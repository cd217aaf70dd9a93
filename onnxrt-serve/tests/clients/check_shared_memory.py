#!/usr/bin/env python3
"""The system shared-memory extension with stock tritonclient (HTTP and gRPC) and
tritonclient.utils.shared_memory.

    check_shared_memory.py --http HOST:PORT --grpc HOST:PORT --model NAME

For model NAME (a model of make_repository.py, loaded): inputs written into a POSIX shared-memory
region (at an offset), outputs asked into another; the answers read from the region equal the
answers sent inline, byte for byte, over both protocols. Region status lists what is registered.
Hostile requests are refused with InferenceServerException and the server lives on: an offset or
size outside the region, a key outside /dev/shm, a region larger than its object, a region
registered twice, an unregistered region, an output larger than its place. Unregistering (one,
then all) empties the status. One line per check, then `checks: N passed, M failed`.
"""

import argparse
import os
import sys

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
import tritonclient.utils.shared_memory as shm
from client_checks import check, raises, summary

from check_oip import sample

OFFSET = 64


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", required=True)
    parser.add_argument("--grpc", required=True)
    parser.add_argument("--model", required=True)
    args = parser.parse_args()
    http = httpclient.InferenceServerClient(args.http)
    grpc = grpcclient.InferenceServerClient(args.grpc)
    model = args.model
    inputs = sample(model, 0)
    datatype = {np.dtype(np.float32): "FP32", np.dtype(np.int64): "INT64"}

    def inline(client, module):
        tensors = []
        for name, array in inputs.items():
            tensor = module.InferInput(name, list(array.shape), datatype[array.dtype])
            tensor.set_data_from_numpy(array)
            tensors.append(tensor)
        result = client.infer(model, tensors)
        names = [o["name"] for o in result.get_response()["outputs"]] if module is httpclient else \
            [o.name for o in result.get_response().outputs]
        return {n: result.as_numpy(n) for n in names}

    reference = inline(http, httpclient)
    in_size = OFFSET + sum(a.nbytes for a in inputs.values())
    out_size = sum(a.nbytes for a in reference.values())
    pid = os.getpid()
    in_key, out_key = f"/onnxrt_check_in_{pid}", f"/onnxrt_check_out_{pid}"
    in_handle = shm.create_shared_memory_region("in", in_key, in_size)
    out_handle = shm.create_shared_memory_region("out", out_key, out_size)
    try:
        at = OFFSET
        places = {}
        for name, array in inputs.items():
            shm.set_shared_memory_region(in_handle, [np.ascontiguousarray(array)], offset=at)
            places[name] = (at, array.nbytes)
            at += array.nbytes

        for protocol, client, module in (("http", http, httpclient), ("grpc", grpc, grpcclient)):
            client.register_system_shared_memory("in", in_key, in_size)
            client.register_system_shared_memory("out", out_key, out_size)
            status = client.get_system_shared_memory_status()
            names = sorted(r["name"] for r in status) if protocol == "http" else sorted(status.regions)
            check(f"{protocol}: status lists both regions", names == ["in", "out"], str(status))

            def request(in_region="in", shift=0, out_place=None):
                tensors = []
                for name, array in inputs.items():
                    tensor = module.InferInput(name, list(array.shape), datatype[array.dtype])
                    offset, size = places[name]
                    tensor.set_shared_memory(in_region, size, offset + shift)
                    tensors.append(tensor)
                wanted, at = [], 0
                for name, array in reference.items():
                    output = module.InferRequestedOutput(name) if module is grpcclient else \
                        module.InferRequestedOutput(name, binary_data=True)
                    size = out_place if out_place is not None else array.nbytes
                    output.set_shared_memory("out", size, at)
                    wanted.append(output)
                    at += array.nbytes
                return client.infer(model, tensors, outputs=wanted)

            request()
            at, same = 0, True
            for name, array in reference.items():
                got = shm.get_contents_as_numpy(out_handle, array.dtype, array.shape, offset=at)
                same = same and got.tobytes() == array.tobytes()
                at += array.nbytes
            check(f"{protocol}: inputs from shared memory (offset {OFFSET}), outputs into it, equal to inline answers bitwise", same)

            message = raises(lambda: request(shift=in_size))
            check(f"{protocol}: an input offset past the region is refused", "outside region" in message, message)
            message = raises(lambda: request(out_place=1))
            check(f"{protocol}: an output larger than its place is refused", "shared_memory_byte_size" in message, message)
            message = raises(lambda: request(in_region="nowhere"))
            check(f"{protocol}: an unregistered region is refused", "nowhere" in message, message)
            message = raises(lambda: client.register_system_shared_memory("in", in_key, in_size))
            check(f"{protocol}: a region registered twice is refused", "already registered" in message, message)
            message = raises(lambda: client.register_system_shared_memory("evil", "/../../etc/passwd", 16))
            check(f"{protocol}: a key outside /dev/shm is refused", "key" in message, message)
            message = raises(lambda: client.register_system_shared_memory("big", in_key, in_size + 1))
            check(f"{protocol}: a region past its object's end is refused", "within" in message, message)
            message = raises(lambda: client.register_system_shared_memory("far", in_key, 8, offset=2**64 - 4))
            check(f"{protocol}: an offset that overflows is refused", bool(message), message)
            message = raises(lambda: client.get_system_shared_memory_status("nowhere"))
            check(f"{protocol}: status of an unknown region raises", "nowhere" in message, message)
            check(f"{protocol}: the server lives on", client.is_server_live())

            client.unregister_system_shared_memory("in")
            status = client.get_system_shared_memory_status()
            names = sorted(r["name"] for r in status) if protocol == "http" else sorted(status.regions)
            check(f"{protocol}: unregister one region", names == ["out"], str(names))
            message = raises(lambda: request())
            check(f"{protocol}: an unregistered input region is refused", "in" in message, message)
            client.unregister_system_shared_memory()
            status = client.get_system_shared_memory_status()
            check(f"{protocol}: unregister all", len(status if protocol == "http" else status.regions) == 0, str(status))
    finally:
        shm.destroy_shared_memory_region(in_handle)
        shm.destroy_shared_memory_region(out_handle)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
