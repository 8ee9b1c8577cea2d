#!/usr/bin/env python3
"""Summarises scripts/bench-server's wrk output: medians per measurement, per-round ratio
of baton verify to nginx static, failures, and baton's memory."""
import re
import statistics
import sys

def to_ms(value, unit):
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]

runs = {}
order = []
for block in open(sys.argv[1]).read().split("=== ")[1:]:
    name, _, body = block.partition("\n")
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", body).group(1))
    p50 = re.search(r"\s50%\s+([\d.]+)(us|ms|s)", body)
    p99 = re.search(r"\s99%\s+([\d.]+)(us|ms|s)", body)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", body)
    errors = re.search(r"Socket errors: (.*)", body)
    runs.setdefault(name, []).append({
        "rps": rps, "p50": to_ms(*p50.groups()), "p99": to_ms(*p99.groups()),
        "bad": int(non2xx.group(1)) if non2xx else 0, "socket": errors.group(1) if errors else "",
    })
    if name not in order:
        order.append(name)

print("| measurement | median req/s | median p50 | median p99 | non-2xx | req/s per round |")
print("|---|---:|---:|---:|---:|---|")
for name in order:
    r = runs[name]
    print(f"| {name} | {statistics.median(x['rps'] for x in r):,.0f} | {statistics.median(x['p50'] for x in r):.2f} ms "
          f"| {statistics.median(x['p99'] for x in r):.2f} ms | {sum(x['bad'] for x in r)} | "
          + ", ".join(f"{x['rps']:,.0f}" for x in r) + " |")
for name in order:
    for x in runs[name]:
        if x["socket"]:
            print(f"socket errors in '{name}': {x['socket']}")

nginx = runs.get("nginx static, 32 connections", [])
verify = runs.get("baton verify, 32 connections", [])
if nginx and verify:
    ratios = [v["rps"] / n["rps"] for v, n in zip(verify, nginx)]
    print(f"\nbaton verify / nginx static at 32 connections, per round: "
          + ", ".join(f"{100 * r:.0f}%" for r in ratios) + f" (median {100 * statistics.median(ratios):.0f}%)")
print("\nbaton memory after the run: " + ", ".join(line.strip().replace("\t", " ") for line in open(sys.argv[2])))
