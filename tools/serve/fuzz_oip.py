#!/usr/bin/env python3
"""A mutation fuzzer for an Open Inference Protocol server (REST), bounded by a request count.

    fuzz_oip.py --http HOST:PORT --pid PID --requests N [--seed S] [--threads T] [--models a,b]

Each request starts from a valid one for a model of the server (its inputs read from
`GET /v2/models/NAME`; free axes get small sizes) and takes one to three mutations: an axis
resized (0, 1, odd sizes, sizes the models are not made for, 2^31, negative), an axis added or
dropped, another datatype, non-finite or extreme values, a lying `binary_data_size`, an input
dropped, doubled or renamed, JSON `data` instead of binary (sometimes ragged or short), a flipped
byte in the JSON header, a body cut short, odd `outputs` and `parameters`. Tensors stay under
MAX_ELEMENTS elements, so the run measures robustness, not bandwidth.

The server must answer every request (any status; a 5xx is counted and its message kept) and stay
up: after every CHECK_EVERY requests its process must exist and `/v2/health/live` answer 200.
Prints the status counts, the distinct 5xx messages, the server's worker-crash counter and its
resident memory; exit status 1 if the server died, a request got no answer, or a connection hung.
"""

import argparse
import http.client
import json
import random
import re
import struct
import sys
import threading
import time
from collections import Counter
from pathlib import Path

MAX_ELEMENTS = 3 * 160 * 160
CHECK_EVERY = 1000
SIZES = [0, 1, 2, 3, 7, 8, 15, 16, 31, 32, 33, 47, 48, 63, 64, 100, 127, 128, 160]
ODD_SIZES = [0, 1, 2, 3, 5, 8, 9, 33, 99, 1 << 31, (1 << 40) + 3, -1, -7]
DATATYPES = ["FP32", "FP64", "FP16", "BF16", "INT64", "INT32", "INT8", "UINT8", "BOOL", "BYTES", "NOPE"]
PACK = {"FP32": "f", "FP64": "d", "INT64": "q", "INT32": "i", "INT8": "b", "UINT8": "B", "BOOL": "?"}
SPECIAL = [float("nan"), float("inf"), float("-inf"), 3.4e38, -3.4e38, 1e-45, 0.0, -0.0, 1.0, -1.0]


def model_inputs(address: str, name: str) -> list:
    connection = http.client.HTTPConnection(address, timeout=60)
    connection.request("GET", f"/v2/models/{name}")
    metadata = json.loads(connection.getresponse().read())
    return metadata["inputs"], [o["name"] for o in metadata["outputs"]]


def element_bytes(datatype: str, count: int, rng: random.Random) -> bytes:
    """`count` elements of `datatype`, now and then extreme or non-finite."""
    if datatype == "BYTES":
        out = b""
        for _ in range(count):
            s = bytes(rng.randrange(256) for _ in range(rng.randrange(4)))
            out += struct.pack("<I", len(s)) + s
        return out
    if datatype in ("FP16", "BF16"):
        return bytes(rng.randrange(256) for _ in range(2 * count))
    code = PACK.get(datatype, "f")
    if code in "fd":
        pick = rng.random()
        if pick < 0.2:
            values = [rng.choice(SPECIAL) for _ in range(count)]
        elif pick < 0.3:
            values = [rng.choice(SPECIAL)] * count
        else:
            values = [rng.uniform(-1, 1) for _ in range(count)]
        if code == "f":
            values = [v if abs(v) < 3.5e38 or v != v or abs(v) == float("inf") else 0.0 for v in values]
        return struct.pack(f"<{count}{code}", *values)
    if code == "?":
        return struct.pack(f"<{count}?", *[rng.random() < 0.5 for _ in range(count)])
    bits = {"q": 63, "i": 31, "b": 7, "B": 8}[code]
    lo, hi = (0, (1 << bits) - 1) if code == "B" else (-(1 << bits), (1 << bits) - 1)
    pool = [lo, hi, 0, 1, -1 if code != "B" else 2, 8000, 16000, 12345, 44100]
    values = [rng.choice(pool) if rng.random() < 0.7 else rng.randint(lo, hi) for _ in range(count)]
    values = [min(max(v, lo), hi) for v in values]
    return struct.pack(f"<{count}{code}", *values)


def count_of(shape: list) -> int:
    n = 1
    for d in shape:
        n *= max(d, 0)
    return n


def base_request(inputs: list, rng: random.Random) -> list:
    """A valid-looking tensor per input: free axes small, silero's state 1 wide and sr 16000."""
    tensors = []
    for spec in inputs:
        shape = []
        for axis, d in enumerate(spec["shape"]):
            shape.append(d if d >= 0 else (1 if axis == 0 else rng.choice(SIZES[1:])))
        tensors.append({"name": spec["name"], "datatype": spec["datatype"], "shape": shape})
    return tensors


def mutate(tensors: list, outputs: list, rng: random.Random) -> tuple:
    """Applies 1-3 mutations; returns (tensors, request-level changes)."""
    changes = {}
    for _ in range(rng.randint(1, 3)):
        if not tensors:
            break
        t = rng.choice(tensors)
        kind = rng.randrange(16)
        if kind <= 4 and t["shape"]:
            axis = rng.randrange(len(t["shape"]))
            t["shape"][axis] = rng.choice(SIZES if kind <= 3 else ODD_SIZES)
        elif kind == 5:
            t["shape"].insert(rng.randrange(len(t["shape"]) + 1), rng.choice([1, 2, 3]))
        elif kind == 6 and t["shape"]:
            t["shape"].pop(rng.randrange(len(t["shape"])))
        elif kind == 7:
            t["datatype"] = rng.choice(DATATYPES)
        elif kind == 8:
            t["lie"] = rng.choice([-4, -1, 1, 4, 1 << 20])
        elif kind == 9:
            tensors.remove(t)
        elif kind == 10:
            tensors.append(dict(t, shape=list(t["shape"])))
        elif kind == 11:
            t["name"] = rng.choice(["", "x ", "X", "input\u00e9", "state", "sr", "x" * 300])
        elif kind == 12:
            t["json"] = rng.choice(["flat", "nested", "ragged", "short", "strings"])
        elif kind == 13:
            changes["flip"] = True
        elif kind == 14:
            changes["cut"] = True
        else:
            changes["outputs"] = rng.choice([
                [{"name": rng.choice(outputs)}],
                [{"name": "nope"}],
                [{"name": outputs[0]}, {"name": outputs[0]}],
                [{"name": outputs[0], "parameters": {"binary_data": True}}],
                [{"name": outputs[0], "parameters": {"class_count": 3}}],
            ])
            changes["parameters"] = rng.choice([{}, {"timeout": 1}, {"sequence_id": 3}, {"binary_data_output": True},
                                                 {"timeout": "soon"}])
    return tensors, changes


def body_of(tensors: list, changes: dict, rng: random.Random) -> tuple:
    """(headers, body) of the request, binary tensors unless an input asks for JSON."""
    header = {"inputs": [], "parameters": changes.get("parameters", {})}
    if "outputs" in changes:
        header["outputs"] = changes["outputs"]
    binary = b""
    for t in tensors:
        n = count_of(t["shape"])
        if n > MAX_ELEMENTS or any(d < 0 or d > 1 << 20 for d in t["shape"]):
            n = min(n, 16) if all(0 <= d < 1 << 31 for d in t["shape"]) else 4  # the data lies about the shape
        entry = {"name": t["name"], "shape": t["shape"], "datatype": t["datatype"]}
        if "json" in t:
            values = [rng.uniform(-1, 1) for _ in range(min(n, 4096))]
            style = t["json"]
            if style == "nested" and len(t["shape"]) > 1 and t["shape"][-1] > 0:
                w = t["shape"][-1]
                values = [values[i:i + w] for i in range(0, len(values), w)]
            elif style == "ragged":
                values = [values[:3], values[3:4], [values[4:5]]]
            elif style == "short":
                values = values[: max(0, len(values) - 1)]
            elif style == "strings":
                values = ["a"] * len(values)
            entry["data"] = values
        else:
            data = element_bytes(t["datatype"], n, rng)
            size = max(0, len(data) + t.get("lie", 0))
            entry["parameters"] = {"binary_data_size": size}
            binary += data
        header["inputs"].append(entry)
    text = json.dumps(header).encode()
    if changes.get("flip") and text:
        at = rng.randrange(len(text))
        text = text[:at] + bytes([text[at] ^ (1 << rng.randrange(8))]) + text[at + 1:]
    body = text + binary
    if changes.get("cut") and body:
        body = body[: rng.randrange(len(body))]
    headers = {"Content-Type": "application/octet-stream" if binary else "application/json"}
    if binary:
        headers["Inference-Header-Content-Length"] = str(len(text))
    return headers, body


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.statuses = Counter()
        self.server_errors = Counter()
        self.no_answer = []
        self.sent = 0

    def add(self, status, message: str = "") -> None:
        with self.lock:
            self.sent += 1
            self.statuses[status] += 1
            if isinstance(status, int) and status >= 500:
                # Messages without the numbers that vary, so the distinct kinds show.
                self.server_errors[re.sub(r"\d+", "N", message)[:240]] += 1


def alive(pid: int, address: str) -> bool:
    if not Path(f"/proc/{pid}").exists():
        return False
    status = Path(f"/proc/{pid}/status").read_text()
    if "State:\tZ" in status:
        return False
    try:
        connection = http.client.HTTPConnection(address, timeout=60)
        connection.request("GET", "/v2/health/live")
        return connection.getresponse().status == 200
    except OSError:
        return False


def worker(args, models: dict, tally: Tally, quota: int, seed: int, stop: threading.Event) -> None:
    rng = random.Random(seed)
    connection = http.client.HTTPConnection(args.http, timeout=120)
    names = sorted(models)
    for _ in range(quota):
        if stop.is_set():
            return
        name = rng.choice(names)
        inputs, outputs = models[name]
        tensors, changes = mutate(base_request(inputs, rng), outputs, rng)
        headers, body = body_of(tensors, changes, rng)
        try:
            connection.request("POST", f"/v2/models/{name}/infer", body=body, headers=headers)
            response = connection.getresponse()
            payload = response.read()
            message = ""
            if response.status >= 500:
                try:
                    message = json.loads(payload).get("error", "")
                except ValueError:
                    message = payload[:200].decode(errors="replace")
            tally.add(response.status, message)
            if response.getheader("connection", "").lower() == "close":
                connection.close()
                connection = http.client.HTTPConnection(args.http, timeout=120)
        except (OSError, http.client.HTTPException) as error:
            # A cut body is answered 400 or 408 and the server may close: only a request the
            # server never answered counts.
            tally.add(f"no answer ({type(error).__name__})")
            with tally.lock:
                tally.no_answer.append(f"{name}: {error} (shapes {[t['shape'] for t in tensors]}, {changes})")
            connection.close()
            connection = http.client.HTTPConnection(args.http, timeout=120)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", required=True)
    parser.add_argument("--pid", required=True, type=int)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--models", default="")
    args = parser.parse_args()
    connection = http.client.HTTPConnection(args.http, timeout=60)
    connection.request("POST", "/v2/repository/index", body=b"{}")
    index = json.loads(connection.getresponse().read())
    names = [e["name"] for e in index if e.get("state") == "READY"]
    if args.models:
        names = [n for n in names if n in args.models.split(",")]
    models = {name: model_inputs(args.http, name) for name in names}
    print(f"fuzz_oip: {args.requests} requests on {names}, seed {args.seed}, {args.threads} threads", flush=True)
    tally = Tally()
    stop = threading.Event()
    started = time.monotonic()
    done = 0
    died = False
    while done < args.requests and not died:
        batch = min(CHECK_EVERY, args.requests - done)
        share = [batch // args.threads + (1 if i < batch % args.threads else 0) for i in range(args.threads)]
        threads = [threading.Thread(target=worker, args=(args, models, tally, share[i], args.seed * 1000003 + done + i, stop))
                   for i in range(args.threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        done += batch
        if not alive(args.pid, args.http):
            died = True
            print(f"fuzz_oip: the server is down after {done} requests", flush=True)
        elif done % (10 * CHECK_EVERY) == 0:
            print(f"fuzz_oip: {done} requests, {time.monotonic() - started:.0f} s, statuses {dict(tally.statuses)}", flush=True)
    took = time.monotonic() - started
    metrics = ""
    if not died:
        connection = http.client.HTTPConnection(args.http, timeout=60)
        connection.request("GET", "/metrics")
        metrics = connection.getresponse().read().decode()
    crashes = [l for l in metrics.splitlines() if l.startswith(("serve_worker_crashes_total", "process_resident_memory_bytes"))]
    print(f"fuzz_oip: {tally.sent} requests in {took:.0f} s ({tally.sent / max(took, 1e-9):.0f}/s)")
    print(f"fuzz_oip: statuses {dict(sorted(tally.statuses.items(), key=str))}")
    for message, n in tally.server_errors.most_common(20):
        print(f"fuzz_oip: 5xx x{n}: {message}")
    for line in crashes:
        print(f"fuzz_oip: {line}")
    for line in tally.no_answer[:10]:
        print(f"fuzz_oip: no answer: {line}")
    server_up = not died and alive(args.pid, args.http)
    print(f"fuzz_oip: server {'up' if server_up else 'DOWN'}; requests without an answer: {len(tally.no_answer)}")
    sys.exit(0 if server_up and not tally.no_answer else 1)


if __name__ == "__main__":
    main()
