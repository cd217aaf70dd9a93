"""The Python baseline for benches/src/bin/gpu_bench.rs, same modes and output format, same ORT build.
python3 bench_python.py MODEL [--modes run,iobinding,cuda_graph,nhwc,fast] [--batches 1,32,128] [--iterations 50] [--warmup 10]
(PYTHONPATH must reach the onnxruntime package of the GPU bundle.)"""
import argparse
import time

import numpy as np
import onnxruntime as ort

p = argparse.ArgumentParser()
p.add_argument("model")
p.add_argument("--batches", default="1,32,128")
p.add_argument("--modes", default="run,iobinding,cuda_graph")
p.add_argument("--iterations", type=int, default=50)
p.add_argument("--warmup", type=int, default=10)
a = p.parse_args()


def session(graph, nhwc):
    opts = ort.SessionOptions()
    opts.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    cuda = {"enable_cuda_graph": "1" if graph else "0"}
    if nhwc:
        cuda["prefer_nhwc"] = "1"
    provider = ("CUDAExecutionProvider", cuda)
    return ort.InferenceSession(a.model, opts, providers=[provider])


def measure(mode, batch):
    s = session(mode in ("cuda_graph", "fast"), mode in ("nhwc", "fast"))
    inp, out = s.get_inputs()[0], s.get_outputs()[0]
    dtype = np.float16 if "float16" in inp.type else np.float32
    x = np.full((batch, 3, 224, 224), 0.5, dtype=dtype)
    times = []
    if mode == "run":
        for i in range(a.warmup + a.iterations):
            t = time.perf_counter()
            s.run([out.name], {inp.name: x})
            if i >= a.warmup:
                times.append(time.perf_counter() - t)
    else:
        x_dev = ort.OrtValue.ortvalue_from_numpy(x, "cuda", 0)
        y_dev = ort.OrtValue.ortvalue_from_shape_and_type((batch, 1000), dtype, "cuda", 0)
        b = s.io_binding()
        b.bind_ortvalue_input(inp.name, x_dev)
        b.bind_ortvalue_output(out.name, y_dev)
        for i in range(a.warmup + a.iterations):
            t = time.perf_counter()
            s.run_with_iobinding(b)
            b.synchronize_outputs()
            if i >= a.warmup:
                times.append(time.perf_counter() - t)
    times.sort()
    return times


print(f"# runtime {ort.__version__} (python); model {a.model}")
print("mode batch median_ms p90_ms images_per_s")
for batch in [int(b) for b in a.batches.split(",")]:
    for mode in a.modes.split(","):
        t = measure(mode, batch)
        med, p90 = t[len(t) // 2], t[len(t) * 9 // 10]
        print(f"{mode} {batch} {med * 1e3:.3f} {p90 * 1e3:.3f} {batch / med:.1f}")
