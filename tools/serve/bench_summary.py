"""Summarises tools/serve/bench-cpu.sh's results.txt as a Markdown table: per server its maximum
throughput (the larger of the closed loop at 8 and 64 clients) in each repeat, the open-loop p50
and p99 at 50 % and 80 % of that maximum (marked when the server fell behind the offered rate)
and at the rates offered to all, with ratios against the FastAPI anchor and against Triton.

    python3 tools/serve/bench_summary.py results.txt
"""

import statistics
import sys
from collections import defaultdict


def parse(path):
    rows = []
    with open(path) as lines:
        for line in lines:
            fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
            if fields:
                rows.append(fields)
    return rows


def number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return float("nan")


def kept(run):
    """The share of the offered rate the server answered; below SATURATED it fell behind."""
    return number(run.get("throughput")) / number(run.get("rate")) if run else float("nan")


# An open-loop run that answered less than this share of its offered rate was past the server's
# capacity at that moment (the maximum was measured minutes earlier, on a shared machine).
SATURATED = 0.95


def main(path):
    rows = parse(path)
    runs = defaultdict(dict)  # (server, repeat) -> run -> fields
    order = []
    for row in rows:
        server = row["server"]
        if server not in order:
            order.append(server)
        runs[(server, row["repeat"])][row["run"]] = row
    repeats = sorted({row["repeat"] for row in rows})

    summary = {}
    for server in order:
        per_repeat = []
        for repeat in repeats:
            got = runs.get((server, repeat), {})
            if "closed8" not in got:
                continue
            best = max(number(got.get(r, {}).get("throughput")) for r in ("closed8", "closed64"))
            per_repeat.append(
                {
                    "max": best,
                    "t8": number(got["closed8"].get("throughput")),
                    "t64": number(got.get("closed64", {}).get("throughput")),
                    "p99_64": number(got.get("closed64", {}).get("p99_ms")),
                    "p99_50": number(got.get("open50", {}).get("p99_ms")),
                    "p50_50": number(got.get("open50", {}).get("p50_ms")),
                    "p50_80": number(got.get("open80", {}).get("p50_ms")),
                    "p99_80": number(got.get("open80", {}).get("p99_ms")),
                    "kept50": kept(got.get("open50", {})),
                    "kept80": kept(got.get("open80", {})),
                    "errors": sum(int(r.get("errors", 0)) for r in got.values()),
                    "load": max(number(r.get("load1")) for r in got.values()),
                }
            )
        summary[server] = per_repeat

    def both(server, key, digits=0):
        values = [r[key] for r in summary[server]]
        return " / ".join(f"{v:.{digits}f}" for v in values) if values else "not run"

    def p99(server, share):
        cells = []
        for r in summary[server]:
            mark = f" (fell behind: {r[f'kept{share}'] * 100:.0f} % answered)" if r[f"kept{share}"] < SATURATED else ""
            cells.append(f"{r[f'p50_{share}']:.1f}, {r[f'p99_{share}']:.1f}{mark}")
        return " / ".join(cells) if cells else "not run"

    def geometric_ratio(server, anchor, key):
        pairs = [(a[key], b[key]) for a, b in zip(summary[server], summary[anchor])]
        product = 1.0
        for mine, theirs in pairs:
            product *= mine / theirs
        return product ** (1 / len(pairs)) if pairs else float("nan")

    def mean(server, key):
        values = [r[key] for r in summary[server]]
        return statistics.mean(values) if values else float("nan")

    print("| server | req/s at 8 clients | req/s at 64 clients | max req/s (mean) | p50, p99 ms at 50 % | p50, p99 ms at 80 % | errors | load1 before runs (max) |")
    print("|---|---|---|---|---|---|---|---|")
    for server in order:
        if not summary[server]:
            print(f"| {server} | did not start | | | | | | |")
            continue
        print(
            f"| {server} | {both(server, 't8')} | {both(server, 't64')} | {mean(server, 'max'):.0f} | "
            f"{p99(server, 50)} | {p99(server, 80)} | {both(server, 'errors')} | {both(server, 'load', 2)} |"
        )
    same = sorted({row["run"] for row in rows if row["run"].startswith("same")}, key=lambda r: int(r[4:]))
    if same:
        print()
        print("| server | " + " | ".join(f"p50, p99 ms at {r[4:]} req/s (all servers)" for r in same) + " |")
        print("|---|" + "---|" * len(same))
        for server in order:
            cells = []
            for run in same:
                values = []
                for repeat in repeats:
                    got = runs.get((server, repeat), {}).get(run)
                    if got:
                        mark = " (fell behind)" if kept(got) < SATURATED else ""
                        values.append(f"{number(got.get('p50_ms')):.1f}, {number(got.get('p99_ms')):.1f}{mark}")
                cells.append(" / ".join(values) or "not run")
            print(f"| {server} | " + " | ".join(cells) + " |")
    print()
    print(f"Each cell: one value per repeat ({', '.join(repeats)}). Open-loop rates are 50 % and 80 % of each server's own maximum in that repeat.")
    for anchor in ("fastapi", "triton-off", "triton-on"):
        if anchor not in summary or not summary[anchor]:
            continue
        print()
        print(
            f"Ratios against {anchor}, geometric means of the per-repeat ratios: max throughput; p99 at 50 % and at 80 % "
            "(lower is better; a run that fell behind makes its 80 % ratio meaningless)"
        )
        for server in order:
            if server == anchor or not summary[server]:
                continue
            throughput = geometric_ratio(server, anchor, "max")
            p50 = geometric_ratio(server, anchor, "p99_50")
            p80 = geometric_ratio(server, anchor, "p99_80")
            at_same = []
            for run in same:
                pairs = [
                    (runs[(server, r)][run], runs[(anchor, r)][run])
                    for r in repeats
                    if run in runs.get((server, r), {}) and run in runs.get((anchor, r), {})
                ]
                for key in ("p50_ms", "p99_ms"):
                    ratios = [number(mine[key]) / number(theirs[key]) for mine, theirs in pairs]
                    if ratios:
                        at_same.append(f"{key[:3]} at {run[4:]} req/s {statistics.geometric_mean(ratios):.2f}x")
            same_text = f"; {', '.join(at_same)}" if at_same else ""
            print(f"- {server}: {throughput:.2f}x the throughput; p99 at 50 % {p50:.2f}x, at 80 % {p80:.2f}x{same_text}")


if __name__ == "__main__":
    main(sys.argv[1])
