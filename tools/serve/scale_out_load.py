#!/usr/bin/env python3
"""Load through a load balancer in front of several `serve` instances, with one drained and one
killed while it runs (tools/serve/scale-out.sh starts the instances and HAProxy, then this).

    scale_out_load.py --http HOST:PORT --grpc HOST:PORT --reference HOST:PORT --model NAME
                      --count N --clients C --drain-pid PID --kill-pid PID [--stats URL]

Three phases of N requests each, sent by C concurrent clients (half tritonclient.http with binary
tensors, half tritonclient.grpc, each with a client of its own) through the balancer:
  steady  every instance up;
  drain   SIGTERM to --drain-pid once N/4 requests of the phase are answered;
  kill    SIGKILL to --kill-pid once N/4 requests of the phase are answered.
Every answer must be bitwise equal to the reference: the same sample sent alone, before the
load, to one instance directly (--reference). Prints the table (phase, protocol, requests,
failed, wrong) and the first errors of each phase; exits 1 on a failed request in `steady` or
`drain` or on any wrong answer (a kill may lose the requests the balancer cannot retry: counted,
not fatal). The phases are bounded by counts, never by time.
"""

import argparse
import json
import os
import signal
import sys
import threading
import urllib.request

import numpy as np
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

SAMPLES = 16  # distinct inputs, so that an answer sent to the wrong request shows


def sample(index: int) -> np.ndarray:
    """ppocr_cls's input, seeded by index (a crop 48 high and 192 wide, as PP-OCR feeds it)."""
    rng = np.random.default_rng([45, index % SAMPLES])
    return rng.uniform(-1.0, 1.0, (1, 3, 48, 192)).astype(np.float32)


def infer(client, module, model: str, array: np.ndarray) -> dict:
    tensor = module.InferInput("x", list(array.shape), "FP32")
    if module is httpclient:
        tensor.set_data_from_numpy(array, binary_data=True)
    else:
        tensor.set_data_from_numpy(array)
    result = client.infer(model, [tensor])
    response = result.get_response()
    outputs = response["outputs"] if isinstance(response, dict) else response.outputs
    names = [o["name"] if isinstance(o, dict) else o.name for o in outputs]
    return {name: result.as_numpy(name) for name in names}


# A gRPC client's own retry policy (--grpc-retry): UNAVAILABLE, which is what a stream the
# balancer refused (RST_STREAM REFUSED_STREAM: not processed) reads as, is tried again.
GRPC_RETRY = [
    ("grpc.max_send_message_length", -1),
    ("grpc.max_receive_message_length", -1),
    ("grpc.enable_retries", 1),
    ("grpc.service_config", json.dumps({"methodConfig": [{
        "name": [{"service": "inference.GRPCInferenceService"}],
        "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.1s",
                        "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]},
    }]})),
]
grpc_channel_args = None


def connect(protocol: str, url: str):
    if protocol == "grpc":
        return grpcclient, grpcclient.InferenceServerClient(url, channel_args=grpc_channel_args)
    return httpclient, httpclient.InferenceServerClient(url, connection_timeout=60.0, network_timeout=60.0)


def same(got: dict, want: dict) -> bool:
    return got.keys() == want.keys() and all(
        got[k].dtype == want[k].dtype and got[k].shape == want[k].shape and got[k].tobytes() == want[k].tobytes()
        for k in want
    )


class Phase:
    """One phase's shared counters: the next request's index, and what came back."""

    def __init__(self, name: str, count: int, event):
        self.name, self.count, self.event = name, count, event
        self.lock = threading.Lock()
        self.next = 0
        self.done = 0
        self.fired = False
        self.rows = {p: {"requests": 0, "failed": 0, "wrong": 0} for p in ("http", "grpc")}
        self.errors: list[str] = []

    def take(self) -> int | None:
        with self.lock:
            if self.next >= self.count:
                return None
            self.next += 1
            return self.next - 1

    def record(self, protocol: str, outcome: str, error: str = "") -> None:
        with self.lock:
            row = self.rows[protocol]
            row["requests"] += 1
            if outcome != "ok":
                row[outcome] += 1
                if len(self.errors) < 5:
                    self.errors.append(f"{protocol}: {error}")
            self.done += 1
            fire = self.event is not None and not self.fired and self.done >= self.count // 4
            if fire:
                self.fired = True
        if fire:
            self.event()


def client_loop(phase: Phase, protocol: str, url: str, model: str, refs: list) -> None:
    module, client = connect(protocol, url)
    try:
        while (index := phase.take()) is not None:
            try:
                got = infer(client, module, model, sample(index))
            except Exception as error:  # any failure the client sees counts: that is the point
                phase.record(protocol, "failed", f"{type(error).__name__}: {str(error)[:200]}")
                continue
            phase.record(protocol, "ok" if same(got, refs[index % SAMPLES]) else "wrong", f"request {index}: wrong answer")
    finally:
        client.close()


def servers_state(stats: str | None) -> str:
    """The balancer's view of its REST servers (HAProxy's CSV stats: svname and status)."""
    if not stats:
        return ""
    try:
        text = urllib.request.urlopen(stats, timeout=10).read().decode()
    except OSError as error:
        return f"(stats unreadable: {error})"
    lines = [l.split(",") for l in text.splitlines() if l and not l.startswith("#")]
    return " ".join(f"{f[0]}/{f[1]}={f[17]}" for f in lines if f[1] not in ("FRONTEND", "BACKEND"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", required=True)
    parser.add_argument("--grpc", required=True)
    parser.add_argument("--reference", required=True, help="one instance's REST address, for the reference answers")
    parser.add_argument("--model", default="ppocr_cls")
    parser.add_argument("--count", type=int, default=1000, help="requests per phase")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (half HTTP, half gRPC)")
    parser.add_argument("--drain-pid", type=int, required=True)
    parser.add_argument("--kill-pid", type=int, required=True)
    parser.add_argument("--stats", help="HAProxy's CSV stats URL, to print its view after each phase")
    parser.add_argument("--json", help="write the table here too")
    parser.add_argument("--grpc-retry", action="store_true", help="gRPC clients retry UNAVAILABLE (a retry policy)")
    args = parser.parse_args()
    global grpc_channel_args
    grpc_channel_args = GRPC_RETRY if args.grpc_retry else None

    module, client = connect("http", args.reference)
    refs = [infer(client, module, args.model, sample(i)) for i in range(SAMPLES)]
    client.close()
    # An answer given to the wrong request must show: the samples' answers differ pairwise.
    alike = [(i, j) for i in range(SAMPLES) for j in range(i) if same(refs[i], refs[j])]
    if alike:
        print(f"scale_out_load: samples with the same answer, which cannot tell requests apart: {alike}", file=sys.stderr)
        return 2

    def send(pid: int, sig: signal.Signals, what: str):
        def fire():
            print(f"scale_out_load: {what}: {sig.name} to {pid}", file=sys.stderr, flush=True)
            os.kill(pid, sig)
        return fire

    phases = [
        Phase("steady", args.count, None),
        Phase("drain", args.count, send(args.drain_pid, signal.SIGTERM, "drain")),
        Phase("kill", args.count, send(args.kill_pid, signal.SIGKILL, "kill")),
    ]
    for phase in phases:
        threads = [
            threading.Thread(
                target=client_loop,
                args=(phase, "http" if i % 2 == 0 else "grpc", args.http if i % 2 == 0 else args.grpc, args.model, refs),
            )
            for i in range(args.clients)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        state = servers_state(args.stats)
        print(f"scale_out_load: {phase.name} done{': ' + state if state else ''}", file=sys.stderr, flush=True)
        for error in phase.errors:
            print(f"scale_out_load: {phase.name}: {error}", file=sys.stderr)

    print(f"{'phase':<8} {'protocol':<8} {'requests':>8} {'failed':>7} {'wrong':>6}")
    table = []
    for phase in phases:
        for protocol, row in phase.rows.items():
            print(f"{phase.name:<8} {protocol:<8} {row['requests']:>8} {row['failed']:>7} {row['wrong']:>6}")
            table.append({"phase": phase.name, "protocol": protocol, **row})
    if args.json:
        with open(args.json, "w") as out:
            json.dump(table, out, indent=1)
    lost = [r for r in table if r["phase"] in ("steady", "drain") and r["failed"]]
    wrong = [r for r in table if r["wrong"]]
    if lost:
        print("scale_out_load: FAIL: requests lost without a kill: "
              + ", ".join(f"{r['phase']}/{r['protocol']} {r['failed']}" for r in lost), file=sys.stderr)
    if wrong:
        print("scale_out_load: FAIL: wrong answers: " + ", ".join(f"{r['phase']}/{r['protocol']} {r['wrong']}" for r in wrong),
              file=sys.stderr)
    return 1 if lost or wrong else 0


if __name__ == "__main__":
    sys.exit(main())
