#!/usr/bin/env python3
"""Drives an Open Inference Protocol server with clients nobody here wrote.

    check_oip.py --http HOST:PORT --grpc HOST:PORT --repository DIR --onnxrt PATH --work DIR

For each of the four real models of make_repository.py, with `tritonclient.http` (JSON tensors,
and the binary-tensor extension) and `tritonclient.grpc`:

- server live, ready, metadata; the repository index lists the model, READY;
- model ready; model metadata: input and output names, datatypes and shapes as in the .onnx
  (read with the `onnx` package; a free axis is -1);
- inference: SAMPLES deterministic random samples (seeded numpy) sent concurrently from a pool of
  CONCURRENCY threads, so that a batching server gathers them; every output compared bitwise
  (dtype, shape, raw bytes) with one run of that same sample alone on the same runtime, made by
  the project's CLI: `onnxrt run MODEL --input NAME=FILE.npy ... --output-dir D --repeat 0`;
- requested outputs: a request naming one output gets that output only;
- wrong requests: an unknown model, a wrong datatype, a wrong shape and a missing input each
  raise `InferenceServerException` with a 4xx (HTTP) or INVALID_ARGUMENT/NOT_FOUND (gRPC) status
  and a message naming what is wrong.

One line per check, then `checks: N passed, M failed`; exit status 1 if any failed. Every wait is
bounded by a count of polls, never by a sleep taken as an assertion.
"""

import json
import argparse
import concurrent.futures
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import onnx
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

MODELS = ("ppocr_det", "ppocr_rec", "ppocr_cls", "silero_vad")

# ONNX element type -> the protocol's datatype.
DATATYPES = {
    onnx.TensorProto.FLOAT: "FP32", onnx.TensorProto.DOUBLE: "FP64", onnx.TensorProto.FLOAT16: "FP16",
    onnx.TensorProto.BFLOAT16: "BF16", onnx.TensorProto.INT8: "INT8", onnx.TensorProto.INT16: "INT16",
    onnx.TensorProto.INT32: "INT32", onnx.TensorProto.INT64: "INT64", onnx.TensorProto.UINT8: "UINT8",
    onnx.TensorProto.UINT16: "UINT16", onnx.TensorProto.UINT32: "UINT32", onnx.TensorProto.UINT64: "UINT64",
    onnx.TensorProto.BOOL: "BOOL", onnx.TensorProto.STRING: "BYTES",
}
NUMPY = {"FP32": np.float32, "FP64": np.float64, "INT64": np.int64, "INT32": np.int32}


def sample(model: str, index: int) -> dict:
    """The inputs of sample `index` of `model`: seeded by both, sizes the models are used with.

    det and rec alternate two sizes (free height/width, free width), so a batching server sees
    requests whose shapes differ; silero gets 64 samples of context + 512 new ones at 16 kHz, as
    silero_vad's own wrapper sends them, with a zero state."""
    rng = np.random.default_rng([MODELS.index(model), index])
    if model == "ppocr_det":
        h, w = ((64, 96), (96, 64))[index % 2]
        return {"x": rng.uniform(-1.0, 1.0, (1, 3, h, w)).astype(np.float32)}
    if model == "ppocr_rec":
        w = (320, 160)[index % 2]
        return {"x": rng.uniform(-1.0, 1.0, (1, 3, 48, w)).astype(np.float32)}
    if model == "ppocr_cls":
        return {"x": rng.uniform(-1.0, 1.0, (1, 3, 48, 192)).astype(np.float32)}
    if model == "silero_vad":
        return {
            "input": (0.1 * rng.standard_normal((1, 576))).astype(np.float32),
            "state": np.zeros((2, 1, 128), np.float32),
            "sr": np.array(16000, np.int64),
        }
    raise KeyError(model)


def cli_file_name(output: str) -> str:
    """The file `onnxrt run --output-dir` writes an output to (cli/src/run/show.rs file_name_for)."""
    safe = "".join(c if (c.isascii() and c.isalnum()) or c in "._-" else "_" for c in output)
    return safe.lstrip(".") + ".npy"


class Checks:
    """Counts and prints one line per check."""

    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.lock = threading.Lock()

    def record(self, ok: bool, what: str, detail: str = "") -> bool:
        with self.lock:
            if ok:
                self.passed += 1
            else:
                self.failed += 1
            print(f"{'ok  ' if ok else 'FAIL'} {what}" + (f": {detail}" if detail else ""), flush=True)
        return ok

    def run(self, what: str, check) -> bool:
        """Runs `check()`, which returns (ok, detail); an exception is a failure with its text."""
        try:
            ok, detail = check()
        except Exception as error:  # noqa: BLE001 - any failure is reported as this check's
            ok, detail = False, f"{type(error).__name__}: {error}"
        return self.record(ok, what, detail)


def model_io(path: Path) -> dict:
    """{'inputs': [(name, datatype, shape)], 'outputs': [...]} from the .onnx file itself."""
    model = onnx.load(str(path), load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}

    def tensors(values):
        found = []
        for value in values:
            if value.name in initializers:
                continue
            tensor = value.type.tensor_type
            shape = [d.dim_value if d.HasField("dim_value") else -1 for d in tensor.shape.dim]
            found.append((value.name, DATATYPES.get(tensor.elem_type, f"onnx type {tensor.elem_type}"), shape))
        return found

    io = {"inputs": tensors(model.graph.input), "outputs": tensors(model.graph.output)}
    # The model's config.json may narrow an input's free axes (`shapes`); the metadata says so.
    config = path.parent / "config.json"
    narrowed = json.loads(config.read_text()).get("shapes", {}) if config.is_file() else {}
    io["inputs"] = [(name, datatype, [d if n == -1 else n for d, n in zip(shape, narrowed[name])] if name in narrowed else shape)
                    for name, datatype, shape in io["inputs"]]
    return io


def references(args, io: dict) -> dict:
    """(model, sample) -> {output: array}: each sample run alone by the project's CLI."""
    jobs = []
    for model in getattr(args, "models", MODELS):
        for index in range(args.samples):
            folder = args.work / "reference" / model / str(index)
            (folder / "out").mkdir(parents=True, exist_ok=True)
            command = [str(args.onnxrt), "run", str(args.repository / model / "model.onnx"), "--repeat", "0",
                       "--output-dir", str(folder / "out")]
            for name, array in sample(model, index).items():
                np.save(folder / f"{name}.npy", array)
                command += ["--input", f"{name}={folder / (name + '.npy')}"]
            jobs.append((model, index, folder, command))

    def run(job):
        model, index, folder, command = job
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()[-2000:]}")
        return {name: np.load(folder / "out" / cli_file_name(name)) for name, _, _ in io[model]["outputs"]}

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        return {(m, i): out for (m, i, _, _), out in zip(jobs, pool.map(run, jobs))}


def bitwise(got: np.ndarray, want: np.ndarray) -> tuple[bool, str]:
    """Equal dtype, shape and bytes; else what differs."""
    if got is None:
        return False, "no such output in the answer"
    if got.dtype != want.dtype or got.shape != want.shape:
        return False, f"got {got.dtype} {list(got.shape)}, the single run gave {want.dtype} {list(want.shape)}"
    if got.tobytes() == want.tobytes():
        return True, ""
    differ = np.count_nonzero(got != want)
    worst = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
    return False, f"{differ} of {want.size} elements differ (max |diff| {worst:g})"


class Client:
    """One protocol binding: http-json, http-binary or grpc, behind the same small interface."""

    def __init__(self, kind: str, url: str):
        self.kind, self.url = kind, url
        self.local = threading.local()
        self.module = grpcclient if kind == "grpc" else httpclient
        self.shared = self.connect() if kind == "grpc" else None  # gRPC: one channel, many streams

    def connect(self):
        if self.kind == "grpc":
            return grpcclient.InferenceServerClient(self.url)
        return httpclient.InferenceServerClient(self.url, connection_timeout=120.0, network_timeout=120.0)

    @property
    def client(self):
        """gRPC's client is thread-safe; tritonclient.http's is one per thread (its docs)."""
        if self.shared is not None:
            return self.shared
        if not hasattr(self.local, "client"):
            self.local.client = self.connect()
        return self.local.client

    def inputs(self, arrays: dict, datatypes: dict | None = None, shapes: dict | None = None):
        built = []
        for name, array in arrays.items():
            datatype = (datatypes or {}).get(name) or {np.dtype(np.float32): "FP32", np.dtype(np.int64): "INT64",
                                                      np.dtype(np.float64): "FP64", np.dtype(np.int32): "INT32"}[array.dtype]
            tensor = self.module.InferInput(name, list(array.shape), datatype)
            if self.kind == "grpc":
                tensor.set_data_from_numpy(array)
            else:
                tensor.set_data_from_numpy(array, binary_data=self.kind == "http-binary")
            if shapes and name in shapes:
                tensor.set_shape(shapes[name])  # a declared shape the data does not fill
            built.append(tensor)
        return built

    def outputs(self, names):
        if names is None:
            return None
        if self.kind == "grpc":
            return [grpcclient.InferRequestedOutput(n) for n in names]
        return [httpclient.InferRequestedOutput(n, binary_data=self.kind == "http-binary") for n in names]

    def infer(self, model: str, arrays: dict, outputs=None, **bad):
        return self.client.infer(model, self.inputs(arrays, **bad), outputs=self.outputs(outputs))

    def metadata(self, model: str) -> dict:
        """{'inputs': [(name, datatype, shape)], 'outputs': [...]} as the server describes the model."""
        if self.kind == "grpc":
            meta = self.client.get_model_metadata(model, as_json=True)
            # protobuf's JSON form writes int64 as strings
            io = {k: [(t["name"], t["datatype"], [int(d) for d in t.get("shape", [])]) for t in meta.get(k, [])]
                  for k in ("inputs", "outputs")}
        else:
            meta = self.client.get_model_metadata(model)
            io = {k: [(t["name"], t["datatype"], [int(d) for d in t["shape"]]) for t in meta.get(k, [])]
                  for k in ("inputs", "outputs")}
        return io

    def index(self) -> dict:
        """Model name -> state, from the repository index."""
        if self.kind == "grpc":
            return {m.name: m.state for m in self.client.get_model_repository_index().models}
        return {m["name"]: m.get("state", "") for m in self.client.get_model_repository_index()}


def wait_ready(client: Client, models, polls: int) -> tuple[bool, str]:
    """Polls server readiness and each model's readiness, at most `polls` times each (0.1 s apart)."""
    last = ""
    for _ in range(polls):
        try:
            if client.client.is_server_live() and client.client.is_server_ready():
                break
            last = "server not ready"
        except Exception as error:  # noqa: BLE001 - not up yet
            last = str(error)
        time.sleep(0.1)
    else:
        return False, f"server not live and ready after {polls} polls: {last}"
    for model in models:
        for _ in range(polls):
            try:
                if client.client.is_model_ready(model):
                    break
            except Exception as error:  # noqa: BLE001
                last = str(error)
            time.sleep(0.1)
        else:
            return False, f"model {model} not ready after {polls} polls {last}"
    return True, ""


def expect_error(client: Client, call, *patterns: str):
    """A check that `call()` raises InferenceServerException, with a client-error status and a
    message matching every regular expression in `patterns` (case-insensitive)."""

    def check():
        try:
            call()
        except InferenceServerException as error:
            message, status = error.message() or "", str(error.status())
            ok_status = (status.startswith("4") if client.kind != "grpc"
                         else status in ("StatusCode.INVALID_ARGUMENT", "StatusCode.NOT_FOUND"))
            missing = [p for p in patterns if not re.search(p, message, re.IGNORECASE)]
            detail = f"[{status}] {message}"
            if not ok_status:
                detail += " (status is not a client error)"
            if missing:
                detail += f" (message does not match {missing})"
            return ok_status and not missing, detail
        return False, "no error raised"

    return check


def check_client(args, checks: Checks, client: Client, io: dict, refs: dict) -> None:
    k = client.kind
    models = args.models
    if not checks.run(f"{k} server live and ready, models ready", lambda: wait_ready(client, models, args.polls)):
        return

    def server_metadata():
        meta = client.client.get_server_metadata(**({"as_json": True} if k == "grpc" else {}))
        return bool(meta.get("name")), f"name {meta.get('name')!r} version {meta.get('version')!r} extensions {meta.get('extensions')}"

    checks.run(f"{k} server metadata", server_metadata)

    def index():
        states = client.index()
        missing = [m for m in models if m not in states]
        not_ready = {m: states[m] for m in models if m in states and states[m] != "READY"}
        return not missing and not not_ready, f"missing {missing}, not READY {not_ready}" if missing or not_ready else f"{sorted(states)}"

    checks.run(f"{k} repository index", index)

    for model in models:
        def metadata(model=model):
            got = client.metadata(model)
            if got == io[model]:
                return True, f"inputs {got['inputs']} outputs {got['outputs']}"
            return False, f"server says {got}, the .onnx says {io[model]}"

        checks.run(f"{k} {model} metadata", metadata)

        def concurrent_infer(model=model):
            names = [n for n, _, _ in io[model]["outputs"]]
            # http-binary asks for no outputs by name: all come back, binary (binary_data_output).
            wanted = None if k == "http-binary" else names
            with concurrent.futures.ThreadPoolExecutor(max_workers=args.concurrency) as pool:
                futures = [pool.submit(client.infer, model, sample(model, i), wanted) for i in range(args.samples)]
                answers = [f.result() for f in futures]
            bad = []
            for index, answer in enumerate(answers):
                for name in names:
                    ok, why = bitwise(answer.as_numpy(name), refs[(model, index)][name])
                    if not ok:
                        bad.append(f"sample {index} `{name}`: {why}")
            shapes = sorted({str(list(a.as_numpy(names[0]).shape)) for a in answers})
            if bad:
                return False, "; ".join(bad[:4]) + (f" (+{len(bad) - 4} more)" if len(bad) > 4 else "")
            return True, f"{args.samples} samples, {args.concurrency} at a time, outputs {names} of shapes {shapes}"

        checks.run(f"{k} {model} infer, concurrent, bitwise equal to single runs", concurrent_infer)

    def requested_output():
        model, name = "silero_vad", "output"
        answer = client.infer(model, sample(model, 0), [name])
        response = answer.get_response(**({"as_json": True} if k == "grpc" else {}))
        returned = [o["name"] for o in response["outputs"]]
        ok, why = bitwise(answer.as_numpy(name), refs[(model, 0)][name])
        return ok and returned == [name], f"asked for [{name!r}], got {returned}" + (f"; {why}" if why else "")

    cls = sample("ppocr_cls", 0)
    vad = sample("silero_vad", 0)
    checks.run(f"{k} unknown model is refused",
               expect_error(client, lambda: client.infer("no_such_model", cls), r"no_such_model"))
    if "ppocr_cls" in models:
        checks.run(f"{k} wrong shape is refused (cls x with 4 channels)",
                   expect_error(client, lambda: client.infer("ppocr_cls", {"x": np.zeros((1, 4, 48, 192), np.float32)}),
                                r"\bx\b", r"shape|dimension|axis|\b4\b"))
        checks.run(f"{k} wrong datatype is refused (cls x as FP64)",
                   expect_error(client, lambda: client.infer("ppocr_cls", {"x": cls["x"].astype(np.float64)}),
                                r"\bx\b", r"FP64|FP32|float|type"))
        checks.run(f"{k} data not filling the declared shape is refused (cls x [1,3,48,192] sent as [1,3,48,96])",
                   expect_error(client, lambda: client.infer("ppocr_cls", cls, shapes={"x": [1, 3, 48, 96]}),
                                r"\bx\b", r"element|byte|size|length|shape|count"))
    if "silero_vad" not in models:
        return
    checks.run(f"{k} silero_vad requested output (one of two)", requested_output)
    checks.run(f"{k} wrong datatype is refused (state as FP64)",
               expect_error(client, lambda: client.infer("silero_vad", {**vad, "state": vad["state"].astype(np.float64)}),
                            r"\bstate\b", r"FP64|FP32|float|type"))
    checks.run(f"{k} wrong datatype is refused (sr as INT32)",
               expect_error(client, lambda: client.infer("silero_vad", {**vad, "sr": vad["sr"].astype(np.int32)}),
                            r"\bsr\b", r"INT32|INT64|int|type"))
    checks.run(f"{k} wrong shape is refused (silero state [3, 1, 128])",
               expect_error(client, lambda: client.infer("silero_vad", {**vad, "state": np.zeros((3, 1, 128), np.float32)}),
                            r"\bstate\b", r"shape|dimension|axis|\b3\b"))
    checks.run(f"{k} missing input is refused (silero without sr)",
               expect_error(client, lambda: client.infer("silero_vad", {"input": vad["input"], "state": vad["state"]}),
                            r"\bsr\b"))


def typed_contents(args, refs: dict, model: str) -> tuple[bool, str]:
    """gRPC's other encoding: tensors in InferTensorContents' typed fields (fp32_contents,
    int64_contents) instead of raw_input_contents, as other clients (KServe's) send them.
    tritonclient only sends raw contents, so this one goes through its generated stub."""
    request = grpcclient.service_pb2.ModelInferRequest(model_name=model)
    for name, array in sample(model, 0).items():
        tensor = request.inputs.add(name=name, shape=list(array.shape),
                                    datatype={np.dtype(np.float32): "FP32", np.dtype(np.int64): "INT64"}[array.dtype])
        field = tensor.contents.fp32_contents if array.dtype == np.float32 else tensor.contents.int64_contents
        field.extend(array.ravel().tolist())
    client = grpcclient.InferenceServerClient(args.grpc)  # held: its channel closes when it is dropped
    response = client._client_stub.ModelInfer(request, timeout=120)
    answer = grpcclient.InferResult(response)

    def output(name):
        """The protocol lets the answer come as raw contents or typed, like the request."""
        if response.raw_output_contents:
            return answer.as_numpy(name)
        for tensor in response.outputs:
            if tensor.name == name:
                typed = {"FP32": (tensor.contents.fp32_contents, np.float32),
                         "INT64": (tensor.contents.int64_contents, np.int64)}[tensor.datatype]
                return np.array(typed[0], dtype=typed[1]).reshape(list(tensor.shape))
        return None

    bad = []
    for name, want in refs[(model, 0)].items():
        ok, why = bitwise(output(name), want)
        if not ok:
            bad.append(f"`{name}`: {why}")
    form = "raw contents" if response.raw_output_contents else "typed contents"
    return not bad, "; ".join(bad) or f"outputs {sorted(refs[(model, 0)])}, answered as {form}"


def hostile_crop(args) -> tuple[bool, str]:
    client = Client("http-json", args.http)
    refused, detail = expect_error(client, lambda: client.infer("ppocr_rec", {"x": np.zeros((1, 3, 32, 32), np.float32)}),
                                   r"\bx\b")()
    live = False
    for _ in range(10):
        try:
            live = Client("http-json", args.http).client.is_server_live()
            break
        except Exception:  # noqa: BLE001 - gone, or not answering yet
            time.sleep(0.1)
    return refused and live, detail + ("" if live else "; the server no longer answers /v2/health/live")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--http", required=True, help="HOST:PORT of the REST endpoint")
    parser.add_argument("--grpc", required=True, help="HOST:PORT of the gRPC endpoint")
    parser.add_argument("--repository", required=True, type=Path, help="the model repository the server serves")
    parser.add_argument("--onnxrt", required=True, type=Path, help="the project's CLI (target/debug/onnxrt)")
    parser.add_argument("--work", required=True, type=Path, help="a folder for reference inputs and outputs")
    parser.add_argument("--samples", type=int, default=8, help="samples per model (default 8)")
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight at once (default 8)")
    parser.add_argument("--polls", type=int, default=600, help="readiness polls, 0.1 s apart (default 600)")
    parser.add_argument("--clients", default="http-json,http-binary,grpc", help="which clients (default all three)")
    parser.add_argument("--models", default=",".join(MODELS), help="which of the four models (default all)")
    args = parser.parse_args()
    args.models = [m for m in args.models.split(",") if m]
    unknown = [m for m in args.models if m not in MODELS]
    if unknown:
        parser.error(f"--models: {unknown} are not among {list(MODELS)}")

    checks = Checks()
    io = {}
    for model in args.models:
        path = args.repository / model / "model.onnx"
        checks.run(f"{model} read from {path}", lambda path=path, model=model: (io.setdefault(model, model_io(path)) is not None, ""))
    if len(io) != len(args.models):
        print(f"checks: {checks.passed} passed, {checks.failed} failed")
        return 1
    refs: dict = {}
    checks.run(f"references: {args.samples} samples per model run alone by {args.onnxrt}",
               lambda: (refs.update(references(args, io)) is None, f"in {args.work / 'reference'}"))
    if refs:
        for kind in args.clients.split(","):
            url = args.grpc if kind == "grpc" else args.http
            check_client(args, checks, Client(kind, url), io, refs)
        if "grpc" in args.clients.split(","):
            for model in ("ppocr_cls", "silero_vad"):
                if model in args.models:
                    checks.run(f"grpc {model} infer with typed contents (fp32_contents, int64_contents), bitwise equal",
                               lambda model=model: typed_contents(args, refs, model))
        if "ppocr_rec" in args.models:
            # Last, as it may end the server: ONNX Runtime 1.16 dies of SIGFPE running ppocr_rec on
            # a crop lower than about 32 pixels (x [1, 3, 32, 32]; the model's height is free, it is
            # fed 48). A server must refuse such a request (4xx) or at least survive it.
            checks.run("http-json ppocr_rec x [1, 3, 32, 32] (ONNX Runtime 1.16 dies of SIGFPE on it) is refused and the server lives on",
                       lambda: hostile_crop(args))
    print(f"checks: {checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
