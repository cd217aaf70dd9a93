"""Summarises tools/serve/bench-cpu.sh's results.txt as a Markdown table: per server its maximum
throughput (the larger of the closed loop at 8 and 64 clients) in each repeat, and the open-loop
p99 at 50 % and 80 % of that maximum, with ratios against the FastAPI anchor.

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
                    "p99_80": number(got.get("open80", {}).get("p99_ms")),
                    "rate80": number(got.get("open80", {}).get("rate")),
                    "done80": number(got.get("open80", {}).get("throughput")),
                    "errors": sum(int(r.get("errors", 0)) for r in got.values()),
                    "load": max(number(r.get("load1")) for r in got.values()),
                }
            )
        summary[server] = per_repeat

    def both(server, key, digits=0):
        values = [r[key] for r in summary[server]]
        return " / ".join(f"{v:.{digits}f}" for v in values) if values else "not run"

    def mean(server, key):
        values = [r[key] for r in summary[server]]
        return statistics.mean(values) if values else float("nan")

    print("| server | req/s at 8 clients | req/s at 64 clients | max req/s (mean) | p99 ms at 50 % | p99 ms at 80 % | errors | load1 before runs (max) |")
    print("|---|---|---|---|---|---|---|---|")
    for server in order:
        if not summary[server]:
            print(f"| {server} | did not start | | | | | | |")
            continue
        print(
            f"| {server} | {both(server, 't8')} | {both(server, 't64')} | {mean(server, 'max'):.0f} | "
            f"{both(server, 'p99_50', 1)} | {both(server, 'p99_80', 1)} | {both(server, 'errors')} | {both(server, 'load', 2)} |"
        )
    print()
    print("Each cell: repeat 1 / repeat 2. Open-loop rates are 50 % and 80 % of each server's own maximum in that repeat.")
    anchor = "fastapi"
    if anchor in summary and summary[anchor]:
        print()
        print(f"Ratios against {anchor} (means over repeats): max throughput; p99 at 80 % (lower is better)")
        for server in order:
            if server == anchor or not summary[server]:
                continue
            throughput = mean(server, "max") / mean(anchor, "max")
            p99 = mean(server, "p99_80") / mean(anchor, "p99_80")
            print(f"- {server}: {throughput:.2f}x the throughput; p99 at 80 % {p99:.2f}x")


if __name__ == "__main__":
    main(sys.argv[1])
