#!/usr/bin/env python3
"""Python onnxruntime on the CPU benchmark cases, timed like benches/src/timing.rs.

    python bench_python.py [--samples N] [--target-ms MS]

Same models and session options as the Rust harness (1 intra-op thread, sequential, all graph
optimizations, CPU provider). Variants:
  python InferenceSession.run      sess.run(None, feeds) with the numpy inputs made once
  python run_with_iobinding        inputs bound once (bind_cpu_input), output bound once to a
                                   preallocated numpy array (bind_output with its buffer_ptr)
Each variant is warmed up, a batch sized to ~target ms, then samples are taken interleaved; the
figure is the median ns per run. Prints a Markdown table and RESULT lines like cpu_bench.

Note: the onnxruntime wheel bundles its own library (1.16.3 for onnxruntime==1.16.3), not the
1.16.2 file the Rust variants load.
"""

import argparse
import os
import sys
import time

import numpy as np
import onnxruntime as ort

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

CASES = [
    ("add1", "Add, 1 element", "benches/models/add_1.onnx", ["a", "b"], [1], "sum", [1]),
    ("add1mb", "Add, 1 MiB (262144 f32)", "benches/models/add_1mb.onnx", ["a", "b"], [262144], "sum", [262144]),
    ("mlp", "MLP 16-32-4, batch 1", "tests/data/models/mlp.onnx", ["x"], [1, 16], "logits", [1, 4]),
]


def session(model):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(os.path.join(ROOT, model), options, providers=["CPUExecutionProvider"])


def variants(case):
    _, _, model, inputs, in_shape, output, out_shape = case
    feeds = {name: np.ones(in_shape, dtype=np.float32) for name in inputs}

    plain = session(model)

    def run(n):
        for _ in range(n):
            plain.run(None, feeds)

    bound_session = session(model)
    binding = bound_session.io_binding()
    for name, array in feeds.items():
        binding.bind_cpu_input(name, array)
    out = np.zeros(out_shape, dtype=np.float32)
    binding.bind_output(output, "cpu", 0, np.float32, out_shape, out.ctypes.data)

    # The binding holds raw pointers to `feeds` and `out`: the closure keeps both alive.
    def run_binding(n, keep=(feeds, out)):
        for _ in range(n):
            bound_session.run_with_iobinding(binding)

    return [("python InferenceSession.run", run), ("python run_with_iobinding", run_binding)]


def measure(vs, samples, target_ns):
    batches = []
    for _, f in vs:
        f(20)
        n = 1
        while True:
            t = time.perf_counter_ns()
            f(n)
            took = time.perf_counter_ns() - t
            if took >= 20_000_000 or n >= 1 << 24:
                break
            n *= 2
        batches.append(max(1, int(target_ns / max(1.0, took / n))))
    per = [[] for _ in vs]
    for s in range(samples):
        for k in range(len(vs)):
            i = (s + k) % len(vs)
            t = time.perf_counter_ns()
            vs[i][1](batches[i])
            per[i].append((time.perf_counter_ns() - t) / batches[i])
    out = []
    for (name, _), ns, batch in zip(vs, per, batches):
        ns.sort()
        at = lambda q: ns[round((len(ns) - 1) * q)]
        out.append((name, at(0.5), at(0.25), at(0.75), ns[0], batch, len(ns)))
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=31)
    parser.add_argument("--target-ms", type=int, default=10)
    parser.add_argument("cases", nargs="*")
    args = parser.parse_args()
    print(f"runtime: Python onnxruntime {ort.__version__} (its bundled library), Python {sys.version.split()[0]}")
    print(f"options: intra_op_threads=1, sequential, all optimizations; {args.samples} samples of ~{args.target_ms} ms each, interleaved\n")
    for case in CASES:
        if args.cases and case[0] not in args.cases:
            continue
        stats = measure(variants(case), args.samples, args.target_ms * 1_000_000)
        print(f"### {case[1]} (`{case[0]}`)\n")
        print("| variant | median ns/run | p25–p75 | min |")
        print("|---|---:|---:|---:|")
        for name, med, p25, p75, low, _, _ in stats:
            print(f"| {name} | {med:.0f} | {p25:.0f}–{p75:.0f} | {low:.0f} |")
        print()
        for name, med, p25, p75, low, batch, n in stats:
            print(
                f'RESULT case={case[0]} variant="{name}" median_ns={med:.0f} min_ns={low:.0f} '
                f"p25_ns={p25:.0f} p75_ns={p75:.0f} batch={batch} samples={n}"
            )
        print()


if __name__ == "__main__":
    main()
