#!/usr/bin/env python3
"""Summarises scripts/bench-dpop: per run kind (bearer, bound, nginx at c32 and c64) the median
over rounds of requests/s, p50, p99, non-2xx answers and the server's CPU per request; the
ratios taken within each round (bound / bearer, bearer / nginx, bound / nginx) and their
medians with [min-max]; the server CPU of one proof check (bound minus bearer, per round); and
that against one P-256 verification by `openssl speed` in the same round (issue 30's ratio).
Usage: summarize_dpop.py RESULTS_TSV"""
import statistics
import sys

from wrk_results import parse_wrk


runs = {}  # (round, name) -> figures
p256 = {}  # (round, shape) -> µs per verification, openssl speed
for line in open(sys.argv[1]):
    round_, name, rest = line.rstrip("\n").split("\t")
    values = dict(item.split("=", 1) for item in rest.split(" "))
    if name.startswith("p256 "):
        if values["verifies_per_second"]:
            p256[(int(round_), name.split(" ")[1])] = 1e6 / float(values["verifies_per_second"])
        continue
    figures = parse_wrk(values["wrk"])
    figures["cpu_us"] = int(values["cpu_ticks"]) / int(values["hz"]) * 1e6 / max(figures["requests"], 1)
    runs[(int(round_), name)] = figures
rounds = sorted({r for r, _ in runs})


def median_range(values):
    return f"{statistics.median(values):.3g} [{min(values):.3g}–{max(values):.3g}]"


print(f"rounds: {len(rounds)}")
print("| run | requests/s (per round) | p50 ms | p99 ms | non-2xx | server CPU µs/request |")
print("|---|---:|---:|---:|---:|---:|")
for shape in ("c32", "c64"):
    for kind in ("bearer", "bound", "nginx"):
        rows = [runs[(r, f"{kind} {shape}")] for r in rounds if (r, f"{kind} {shape}") in runs]
        if not rows:
            continue
        rps = [row["rps"] for row in rows]
        print(f"| {kind} verify {shape} | {statistics.median(rps):,.0f} ({', '.join(f'{v:.0f}' for v in rps)}) "
              f"| {statistics.median(row['p50'] for row in rows):.2f} | {statistics.median(row['p99'] for row in rows):.2f} "
              f"| {sum(row['bad'] for row in rows)} | {statistics.median(row['cpu_us'] for row in rows):.0f} |")
print()
print("| ratio (within each round) | c32 | c64 |")
print("|---|---|---|")
for label, top, bottom in (("bound / bearer", "bound", "bearer"), ("bearer / nginx", "bearer", "nginx"), ("bound / nginx", "bound", "nginx")):
    cells = []
    for shape in ("c32", "c64"):
        ratios = [runs[(r, f"{top} {shape}")]["rps"] / runs[(r, f"{bottom} {shape}")]["rps"]
                  for r in rounds if (r, f"{top} {shape}") in runs and (r, f"{bottom} {shape}") in runs]
        cells.append(median_range(ratios) if ratios else "-")
    print(f"| {label} | {cells[0]} | {cells[1]} |")
for shape in ("c32", "c64"):
    deltas = [runs[(r, f"bound {shape}")]["cpu_us"] - runs[(r, f"bearer {shape}")]["cpu_us"]
              for r in rounds if (r, f"bound {shape}") in runs and (r, f"bearer {shape}") in runs]
    if deltas:
        print(f"server CPU of a proof check ({shape}, bound minus bearer per request): {median_range(deltas)} µs")
    ratios = [(runs[(r, f"bound {shape}")]["cpu_us"] - runs[(r, f"bearer {shape}")]["cpu_us"]) / p256[(r, shape)]
              for r in rounds if (r, f"bound {shape}") in runs and (r, f"bearer {shape}") in runs and (r, shape) in p256]
    if ratios:
        verification = [p256[(r, shape)] for r in rounds if (r, shape) in p256]
        print(f"one P-256 verification, openssl speed in the same rounds ({shape}): {median_range(verification)} µs; "
              f"proof check / verification: {median_range(ratios)} (target <= 1.3)")
bad = sum(row["bad"] for (r, name), row in runs.items() if not name.startswith("nginx"))
print(f"non-2xx answers from Baton: {bad}")
