"""Where a measured run's time went, from two /metrics snapshots of onnxrt-serve taken before and
after it: mean batch size and the mean of each batcher phase (queue wait, gather, model run, whole
run), plus the CPU seconds each process used and the GPU's mean utilisation, when given.

    python3 phases.py BEFORE AFTER [--label L] [--serve-cpu S] [--loadgen-cpu S] [--gpu-util FILE]
"""
import argparse
import re

SERIES = re.compile(r'^(batcher_[a-z_]+?)_(sum|count)\{model="[^"]*"\} ([0-9.eE+-]+)$')


def read(path):
    totals = {}
    with open(path) as f:
        for line in f:
            match = SERIES.match(line.strip())
            if match:
                key = (match.group(1), match.group(2))
                totals[key] = totals.get(key, 0.0) + float(match.group(3))
    return totals


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--label", default="")
    parser.add_argument("--serve-cpu", type=float)
    parser.add_argument("--loadgen-cpu", type=float)
    parser.add_argument("--gpu-util")
    args = parser.parse_args()
    before, after = read(args.before), read(args.after)

    def delta(name, part):
        return after.get((name, part), 0.0) - before.get((name, part), 0.0)

    batches = delta("batcher_batch_size", "count")
    fields = [args.label, f"batches={batches:.0f}"]
    if batches:
        fields.append(f"mean_batch={delta('batcher_batch_size', 'sum') / batches:.1f}")
    for phase in ("queue", "gather", "model", "run"):
        name = f"batcher_{phase}_seconds"
        count = delta(name, "count")
        if count:
            fields.append(f"{phase}_ms={1000 * delta(name, 'sum') / count:.2f}")
    if args.serve_cpu is not None:
        fields.append(f"serve_cpu_s={args.serve_cpu:.1f}")
    if args.loadgen_cpu is not None:
        fields.append(f"loadgen_cpu_s={args.loadgen_cpu:.1f}")
    if args.gpu_util:
        samples = [float(x) for x in open(args.gpu_util).read().split() if x.replace(".", "").isdigit()]
        if samples:
            fields.append(f"gpu_util={sum(samples) / len(samples):.0f}%")
    print("PHASES " + " ".join(f for f in fields if f))


main()
