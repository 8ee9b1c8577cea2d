#!/usr/bin/env python3
"""Summarises scripts/bench-refused-flood: per flood kind (and quiet) the medians over rounds
of the victim's verify p50 and p99 and requests/s, and the flood's refusals/s.
Usage: summarize_refused_flood.py RESULTS_TSV"""
import re
import statistics
import sys


def to_ms(value, unit):
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def parse_wrk(path):
    text = open(path).read()

    def latency(label):
        match = re.search(rf"\s{label}%\s+([\d.]+)(us|ms|s)", text)
        return to_ms(*match.groups()) if match else float("nan")

    rate = re.search(r"Requests/sec:\s+([\d.]+)", text)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    requests = re.search(r"(\d+) requests in", text)
    return {"rps": float(rate.group(1)) if rate else 0.0, "p50": latency(50), "p99": latency(99),
            "bad": int(non2xx.group(1)) if non2xx else 0, "requests": int(requests.group(1)) if requests else 0}


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
