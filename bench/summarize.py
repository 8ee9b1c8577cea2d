#!/usr/bin/env python3
"""Summarises scripts/bench-server: per build, the median over rounds of every wrk figure
(req/s, p50, p90, p99, max), the ratios taken within each round (verify / nginx, exchange /
raw SQLite) and their medians, server CPU per verify, RSS at each phase, checkpoints.
Usage: summarize.py RESULTS_TSV BUILD..."""
import statistics
import sys

from wrk_results import parse_wrk


rows = []
for line in open(sys.argv[1]):
    round_, build, name, rest = line.rstrip("\n").split("\t")
    values = dict(item.split("=", 1) for item in rest.split(" ") if "=" in item)
    if "wrk" in values:
        values.update(parse_wrk(values["wrk"]))
        values["cpu_us"] = int(values["cpu_ticks"]) / int(values["hz"]) * 1e6 / max(values["requests"], 1)
    rows.append((int(round_), build, name, values))
builds = sys.argv[2:]
rounds = sorted({r for r, _, _, _ in rows})

def runs(build, name):
    return {r: v for r, b, n, v in rows if b == build and n == name}

def median(values):
    values = [v for v in values if v == v]
    return statistics.median(values) if values else float("nan")

print("## Throughput and latency (median over rounds; max: the worst round)\n")
print("| measurement | build | req/s | p50 ms | p90 ms | p99 ms | max ms | non-2xx | req/s per round |")
print("|---|---|---:|---:|---:|---:|---:|---:|---|")
for name in ["verify c32", "verify c64", "exchange c32", "exchange c64"]:
    for build in builds + (["nginx"] if name.startswith("verify") else []):
        r = runs(build, name)
        if not r:
            continue
        xs = [r[k] for k in sorted(r)]
        print(f"| {name} | {build} | {median(x['rps'] for x in xs):,.0f} | {median(x['p50'] for x in xs):.2f} | {median(x['p90'] for x in xs):.2f} "
              f"| {median(x['p99'] for x in xs):.2f} | {max(x['max'] for x in xs):.1f} | {sum(x['bad'] for x in xs)} | "
              + ", ".join(f"{x['rps']:,.0f}" for x in xs) + " |")
raw = runs("sqlite", "raw exchange")
print(f"| raw SQLite, 64 per commit | sqlite | {median(float(v['rate']) for v in raw.values()):,.0f} | | | | | | "
      + ", ".join(f"{float(raw[k]['rate']):,.0f}" for k in sorted(raw)) + " |")
for r, b, n, v in rows:
    if v.get("socket"):
        print(f"\nsocket errors, round {r}, {b} {n}: {v['socket']}")

print("\n## Ratios, each taken within one round (median [per round])\n")
print("| ratio | " + " | ".join(builds) + " |")
print("|---|" + "---|" * len(builds))
def ratio_row(label, numerator, denominator_build, denominator, key="rps"):
    cells = []
    for build in builds:
        top, bottom = runs(build, numerator), runs(denominator_build, denominator)
        ratios = [top[k][key] / float(bottom[k][key] if key in bottom[k] else bottom[k]["rate"]) for k in sorted(top) if k in bottom]
        cells.append(f"{median(ratios):.2f} [" + ", ".join(f"{x:.2f}" for x in ratios) + "]" if ratios else "n/a")
    print(f"| {label} | " + " | ".join(cells) + " |")
ratio_row("verify / nginx, 32 connections", "verify c32", "nginx", "verify c32")
ratio_row("verify / nginx, 64 connections", "verify c64", "nginx", "verify c64")
for build in builds:
    pass
cells = []
for build in builds:
    top = runs(build, "exchange c32")
    ratios = [top[k]["rps"] / float(raw[k]["rate"]) for k in sorted(top) if k in raw]
    cells.append(f"{median(ratios):.2f} [" + ", ".join(f"{x:.2f}" for x in ratios) + "]")
print("| exchange c32 / raw SQLite 64 per commit | " + " | ".join(cells) + " |")

print("\n## Server CPU per request, verify at 32 connections (µs; median [per round])\n")
for build in builds + ["nginx"]:
    r = runs(build, "verify c32")
    xs = [r[k]["cpu_us"] for k in sorted(r)]
    print(f"* {build}: {median(xs):.1f} [" + ", ".join(f"{x:.1f}" for x in xs) + "]")

print("\n## VmRSS by phase (MiB; median [per round])\n")
print("| phase | " + " | ".join(builds) + " |")
print("|---|" + "---|" * len(builds))
for phase in ["start", "after_logins", "after_verify", "after_exchange", "end"]:
    cells = []
    for build in builds:
        xs = [int(v["kib"]) / 1024 for r, b, n, v in rows if b == build and n == "rss" and v.get("phase") == phase]
        cells.append(f"{median(xs):.0f} [" + ", ".join(f"{x:.0f}" for x in xs) + "]")
    print(f"| {phase.replace('_', ' ')} | " + " | ".join(cells) + " |")
cells = []
for build in builds:
    xs = [int(v["hwm"]) / 1024 for r, b, n, v in rows if b == build and n == "rss" and "hwm" in v]
    cells.append(f"{max(xs):.0f}")
print("| peak (VmHWM), worst round | " + " | ".join(cells) + " |")

print("\n## WAL\n")
for build in builds:
    left = [v["wal_left"] for r, b, n, v in rows if b == build and n == "shutdown"]
    print(f"* {build}: WAL left after SIGTERM, per round: {', '.join(left)}")
    for r, b, n, v in rows:
        if b == build and n == "wal":
            text = open(v["metrics"]).read().strip().replace("\n", "; ")
            if text:
                print(f"  - round {r}: {text}")
