"""Where a measured run's time went, from two /metrics snapshots of onnxrt-serve taken before and
after it: mean batch size and the mean of each batcher phase (queue wait, gather, model run, whole
run), the bucket bound under which 99 % of each lies (`_p99_le_ms`: the tail, read off the
histograms; with the HTTP side's request latency, it tells a wait in the batcher from one outside
it), plus the CPU seconds each process used and the GPU's mean utilisation, when given.

    python3 phases.py BEFORE AFTER [--label L] [--serve-cpu S] [--loadgen-cpu S] [--gpu-util FILE]
"""
import argparse
import re

SERIES = re.compile(r'^(batcher_[a-z_]+?)_(sum|count)\{model="[^"]*"\} ([0-9.eE+-]+)$')
BUCKET = re.compile(r'^([a-z_]+)_bucket\{(?:model="[^"]*",)?le="([^"]+)"\} ([0-9.eE+-]+)$')


def read(path):
    totals, buckets = {}, {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            match = SERIES.match(line)
            if match:
                key = (match.group(1), match.group(2))
                totals[key] = totals.get(key, 0.0) + float(match.group(3))
            match = BUCKET.match(line)
            if match:
                le = float("inf") if match.group(2) == "+Inf" else float(match.group(2))
                key = (match.group(1), le)
                buckets[key] = buckets.get(key, 0.0) + float(match.group(3))
    return totals, buckets


def p99_bound(name, before, after):
    """The smallest bucket bound (seconds) with 99 % of the run's observations under it."""
    cumulative = sorted((le, count - before.get((n, le), 0.0)) for (n, le), count in after.items() if n == name)
    if not cumulative or cumulative[-1][1] <= 0:
        return None
    total = cumulative[-1][1]
    return next(le for le, count in cumulative if count >= 0.99 * total)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--label", default="")
    parser.add_argument("--serve-cpu", type=float)
    parser.add_argument("--loadgen-cpu", type=float)
    parser.add_argument("--gpu-util")
    args = parser.parse_args()
    (before, before_buckets), (after, after_buckets) = read(args.before), read(args.after)

    def delta(name, part):
        return after.get((name, part), 0.0) - before.get((name, part), 0.0)

    batches = delta("batcher_batch_size", "count")
    fields = [args.label, f"batches={batches:.0f}"]
    if batches:
        fields.append(f"mean_batch={delta('batcher_batch_size', 'sum') / batches:.1f}")
    for phase in ("queue", "gather", "device_wait", "model", "run"):
        name = f"batcher_{phase}_seconds"
        count = delta(name, "count")
        if count:
            fields.append(f"{phase}_ms={1000 * delta(name, 'sum') / count:.2f}")
    for label, name in (("queue", "batcher_queue_seconds"), ("device_wait", "batcher_device_wait_seconds"),
                        ("run", "batcher_run_seconds"), ("http", "serve_http_request_seconds")):
        bound = p99_bound(name, before_buckets, after_buckets)
        if bound is not None:
            fields.append(f"{label}_p99_le_ms={1000 * bound:g}")
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
