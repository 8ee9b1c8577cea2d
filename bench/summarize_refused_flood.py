#!/usr/bin/env python3
"""Summarises scripts/bench-refused-flood: per flood kind (and quiet) the medians over rounds
of the victim's verify p50 and p99 and requests/s, and the flood's refusals/s.
Usage: summarize_refused_flood.py RESULTS_TSV"""
import statistics
import sys

from wrk_results import parse_wrk


runs = {}
for line in open(sys.argv[1]):
    round_, name, path = line.rstrip("\n").split("\t")
    runs[(int(round_), name)] = parse_wrk(path)
rounds = sorted({r for r, _ in runs})
print(f"rounds: {len(rounds)}")
print("| flood | victim verify p50 ms | victim p99 ms | victim requests/s | victim non-2xx | flood refusals/s | flood non-refused |")
print("|---|---:|---:|---:|---:|---:|---:|")
for kind in ("quiet", "wrong-key", "bad-signature", "made-up-token"):
    rows = [runs[(r, kind)] for r in rounds if (r, kind) in runs]
    if not rows:
        continue
    floods = [runs[(r, f"flood {kind}")] for r in rounds if (r, f"flood {kind}") in runs]
    flood_rate = f"{statistics.median(f['rps'] for f in floods):,.0f}" if floods else "-"
    flood_ok = str(sum(f["requests"] - f["bad"] for f in floods)) if floods else "-"
    each = ", ".join(f"{r['p50']:.2f}" for r in rows)
    print(f"| {kind} | {statistics.median(r['p50'] for r in rows):.3f} ({each}) "
          f"| {statistics.median(r['p99'] for r in rows):.2f} | {statistics.median(r['rps'] for r in rows):,.0f} "
          f"| {sum(r['bad'] for r in rows)} | {flood_rate} | {flood_ok} |")
