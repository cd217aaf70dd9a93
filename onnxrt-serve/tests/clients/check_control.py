#!/usr/bin/env python3
"""Model control, statistics and model configuration as Triton's clients read them: stock
tritonclient, HTTP and gRPC.

    check_control.py --http HOST:PORT --grpc HOST:PORT --repository DIR --model NAME

The server runs `--model-control-mode explicit --load-model NAME` on DIR, a repository in Triton's
layout (DIR/<model>/1/model.onnx) that also holds DIR/broken/1/model.onnx (not an ONNX file).
Checked, over both protocols where the client has the call:

- the repository index lists every model: NAME READY, the others `unloaded`;
- load_model of another model makes it ready; unload_model makes it not ready; load again;
- load_model of `broken` raises InferenceServerException naming it; the index lists it
  UNAVAILABLE with the reason; load_model of a model that does not exist raises too;
- a reload with zero failed requests: client threads (HTTP and gRPC) send NAME requests while
  DIR/NAME/2 and DIR/NAME/3 appear and are loaded; every request succeeds and every answer equals
  the answer to the same sample before the reload, byte for byte; the index then says version 3;
- statistics of the other model, freshly loaded: after 5 HTTP and 5 gRPC requests and one refused,
  get_inference_statistics says inference_count 10, success 10, fail 1, queue and compute counts
  10 with time in compute_infer, over both protocols, and lists every model when asked for all;
- get_model_config (HTTP and gRPC): name, platform onnxruntime_onnx, max_batch_size 0, the
  inputs and outputs of the metadata with their TYPE_ data types and dims.

One line per check, then `checks: N passed, M failed`; exit status 1 if any failed.
"""

import argparse
import shutil
import sys
import threading
from pathlib import Path

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from client_checks import check, raises, summary
from tritonclient.utils import InferenceServerException

from check_oip import sample



def http_index(client) -> dict:
    return {m["name"]: m for m in client.get_model_repository_index()}


def grpc_index(client) -> dict:
    return {m.name: m for m in client.get_model_repository_index().models}


def infer(client, module, model: str, inputs: dict) -> dict:
    wanted = []
    for name, array in inputs.items():
        datatype = {np.float32: "FP32", np.float64: "FP64", np.int64: "INT64"}[array.dtype.type]
        tensor = module.InferInput(name, list(array.shape), datatype)
        tensor.set_data_from_numpy(array)
        wanted.append(tensor)
    result = client.infer(model, wanted)
    answer = result.get_response()
    outputs = answer["outputs"] if isinstance(answer, dict) else answer.outputs
    names = [o["name"] if isinstance(o, dict) else o.name for o in outputs]
    return {n: result.as_numpy(n) for n in names}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", required=True)
    parser.add_argument("--grpc", required=True)
    parser.add_argument("--repository", required=True, type=Path)
    parser.add_argument("--model", required=True)
    args = parser.parse_args()
    http = httpclient.InferenceServerClient(args.http, concurrency=4)
    grpc = grpcclient.InferenceServerClient(args.grpc)
    name = args.model
    others = sorted(p.name for p in args.repository.iterdir() if p.is_dir() and p.name not in (name, "broken"))
    other = (others or [name])[0]

    for protocol, index in (("http", http_index(http)), ("grpc", grpc_index(grpc))):
        state = lambda m: index[m]["state"] if protocol == "http" else index[m].state  # noqa: E731
        reason = lambda m: index[m]["reason"] if protocol == "http" else index[m].reason  # noqa: E731
        check(f"{protocol}: index lists every model", set(index) >= {name, "broken", *others}, str(sorted(index)))
        check(f"{protocol}: {name} READY", state(name) == "READY", state(name))
        check(f"{protocol}: {other} unloaded", reason(other) == "unloaded", reason(other))

    for protocol, client in (("http", http), ("grpc", grpc)):
        client.load_model(other)
        check(f"{protocol}: load_model({other}) makes it ready", client.is_model_ready(other))
        client.unload_model(other)
        check(f"{protocol}: unload_model({other}) makes it not ready", not client.is_model_ready(other))
        message = raises(lambda: client.load_model("broken"))
        check(f"{protocol}: load_model(broken) raises, naming it", "broken" in message, message)
        message = raises(lambda: client.load_model("no_such_model"))
        check(f"{protocol}: load_model(no_such_model) raises", "no_such_model" in message, message)
    entry = http_index(http)["broken"]
    check("broken listed UNAVAILABLE with its reason", entry["state"] == "UNAVAILABLE" and entry["reason"] not in ("", "unloaded"), str(entry))
    grpc.load_model(other)
    check(f"grpc: load_model({other}) after an unload", grpc.is_model_ready(other))

    # The reload: the answers before it are the reference.
    seeds = range(4)
    reference = {seed: infer(http, httpclient, name, sample(name, seed)) for seed in seeds}
    stop = threading.Event()
    problems = []
    counts = {"http": 0, "grpc": 0}

    def send(protocol: str, client, module) -> None:
        n = 0
        # At least 20 requests each, then until the reloads end (at most 2,000).
        while n < 2000 and (n < 20 or not stop.is_set()):
            seed = n % len(seeds)
            try:
                answer = infer(client, module, name, sample(name, seed))
                for output, expected in reference[seed].items():
                    if answer[output].tobytes() != expected.tobytes() or answer[output].shape != expected.shape:
                        problems.append(f"{protocol} request {n}: output {output} differs")
            except InferenceServerException as error:
                problems.append(f"{protocol} request {n}: {error}")
            n += 1
        counts[protocol] += n

    threads = [
        threading.Thread(target=send, args=("http", httpclient.InferenceServerClient(args.http), httpclient)),
        threading.Thread(target=send, args=("grpc", grpcclient.InferenceServerClient(args.grpc), grpcclient)),
    ]
    for thread in threads:
        thread.start()
    for version, client in (("2", http), ("3", grpc)):
        folder = args.repository / name / version
        folder.mkdir()
        shutil.copy(args.repository / name / "1" / "model.onnx", folder / "model.onnx")
        client.load_model(name)
    stop.set()
    for thread in threads:
        thread.join()
    check(
        f"a reload under load: {counts['http']} HTTP and {counts['grpc']} gRPC requests, none failed, answers bitwise equal",
        not problems and min(counts.values()) >= 20,
        "; ".join(problems[:5]) + f" ({len(problems)} problems)",
    )
    version = http_index(http)[name]["version"]
    check(f"index: {name} version 3 after the reloads", version == "3", version)
    check(f"grpc: {name} version 3 ready", grpc.is_model_ready(name, "3"))

    # Statistics: `other` was loaded last, so its counters start at zero.
    for n in range(5):
        infer(http, httpclient, other, sample(other, n))
        infer(grpc, grpcclient, other, sample(other, n))
    wrong = {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in sample(other, 0).items()}
    check("a wrong datatype is refused", bool(raises(lambda: infer(http, httpclient, other, wrong))))
    for protocol, client in (("http", http), ("grpc", grpc)):
        kwargs = {"as_json": True} if protocol == "grpc" else {}
        stats = client.get_inference_statistics(other, **kwargs)["model_stats"]
        entry = stats[0] if len(stats) == 1 else {}
        numbers = entry.get("inference_stats", {})
        count = lambda key: int(numbers.get(key, {}).get("count", 0))  # noqa: E731 - gRPC's JSON gives strings
        ns = lambda key: int(numbers.get(key, {}).get("ns", 0))  # noqa: E731
        got = (int(entry.get("inference_count", 0)), count("success"), count("fail"), count("queue"), count("compute_infer"))
        check(f"{protocol}: get_inference_statistics({other}): 10 answered, 1 refused", got == (10, 10, 1, 10, 10), str(entry))
        check(f"{protocol}: statistics hold time (compute_infer, success)", ns("compute_infer") > 0 and ns("success") >= ns("compute_infer"), str(numbers))
        check(f"{protocol}: execution_count 1..10", 1 <= int(entry.get("execution_count", 0)) <= 10, str(entry))
        everything = client.get_inference_statistics(**kwargs)["model_stats"]
        check(f"{protocol}: get_inference_statistics() lists every loaded model", {name, other} <= {m["name"] for m in everything}, str([m["name"] for m in everything]))
        config = client.get_model_config(other, **kwargs)
        config = config.get("config", config)
        metadata = client.get_model_metadata(other, **kwargs)
        want = [(t["name"], "TYPE_" + t["datatype"], [int(d) for d in t.get("shape", [])]) for t in metadata["inputs"]]
        got = [(t["name"], t["data_type"], [int(d) for d in t.get("dims", [])]) for t in config.get("input", [])]
        check(f"{protocol}: get_model_config({other}) inputs as the metadata", got == want, f"{got} != {want}")
        check(f"{protocol}: get_model_config name, platform, max_batch_size",
              (config.get("name"), config.get("platform"), int(config.get("max_batch_size", 0))) == (other, "onnxruntime_onnx", 0), str(config))
        check(f"{protocol}: get_model_config outputs", [t["name"] for t in config.get("output", [])] == [t["name"] for t in metadata["outputs"]], str(config))

    return summary()


if __name__ == "__main__":
    sys.exit(main())
