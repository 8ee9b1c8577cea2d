#!/usr/bin/env python3
"""Summarises scripts/bench-unknown-key-flood: per setup (sqlite, postgresql, nginx) and flood
kind (quiet, made-up-bt1, unknown-key-bt2) the medians over rounds of the victim's verify p50
and p99 and requests/s, and the flood's requests/s; then, per setup, the victim's p50 under
the unknown-key flood against the made-up bt1_ flood of the same round (median ratio).
Usage: summarize_unknown_key_flood.py RESULTS_TSV"""
import statistics
import sys

from wrk_results import parse_wrk

runs = {}
for line in open(sys.argv[1]):
    round_, setup, name, path = line.rstrip("\n").split("\t")
    runs[(int(round_), setup, name)] = parse_wrk(path)
rounds = sorted({r for r, _, _ in runs})
setups = [s for s in ("sqlite", "postgresql", "nginx") if any(k[1] == s for k in runs)]
print(f"rounds: {len(rounds)}")
print("| setup | flood | victim verify p50 ms (each round) | victim p99 ms | victim requests/s | victim non-2xx | flood requests/s |")
print("|---|---|---:|---:|---:|---:|---:|")
for setup in setups:
    for kind in ("quiet", "made-up-bt1", "unknown-key-bt2"):
        rows = [runs[(r, setup, kind)] for r in rounds if (r, setup, kind) in runs]
        if not rows:
            continue
        floods = [runs[(r, setup, f"flood {kind}")] for r in rounds if (r, setup, f"flood {kind}") in runs]
        flood_rate = f"{statistics.median(f['rps'] for f in floods):,.0f}" if floods else "-"
        each = ", ".join(f"{r['p50']:.2f}" for r in rows)
        print(f"| {setup} | {kind} | {statistics.median(r['p50'] for r in rows):.3f} ({each}) "
              f"| {statistics.median(r['p99'] for r in rows):.2f} | {statistics.median(r['rps'] for r in rows):,.0f} "
              f"| {sum(r['bad'] for r in rows)} | {flood_rate} |")
print()
for setup in setups:
    ratios = [runs[(r, setup, "unknown-key-bt2")]["p50"] / runs[(r, setup, "made-up-bt1")]["p50"]
              for r in rounds if (r, setup, "unknown-key-bt2") in runs and (r, setup, "made-up-bt1") in runs]
    if ratios:
        print(f"{setup}: victim p50 under the unknown-key flood / under the made-up bt1_ flood, same round: "
              f"median {statistics.median(ratios):.2f} ({', '.join(f'{x:.2f}' for x in ratios)})")
