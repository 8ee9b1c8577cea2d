#!/usr/bin/env python3
"""Summarises scripts/bench-gateways: median requests/s and latency per run kind, errors, and
per-round ratios (each gateway's verify against its own static answer and its plain proxy).
Usage: summarize_gateways.py RESULTS_TSV   (lines: round, name, wrk output file)"""
import re
import statistics
import sys

UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def parse(path):
    text = open(path).read()
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    latency = {}
    for percent, value, unit in re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", text, re.M):
        latency[percent] = float(value) * UNITS[unit]
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    socket = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    errors = (int(non2xx.group(1)) if non2xx else 0) + (sum(int(x) for x in socket.groups()) if socket else 0)
    return rate, latency.get("50"), latency.get("99"), errors


runs = {}
for line in open(sys.argv[1]):
    round_, name, path = line.rstrip("\n").split("\t")
    runs.setdefault(name, {})[int(round_)] = parse(path)

order = ["baton-verify", "nginx-static", "nginx-proxy", "nginx-verify", "caddy-static", "caddy-proxy", "caddy-verify", "traefik-static", "traefik-proxy", "traefik-verify", "haproxy-static", "haproxy-proxy", "haproxy-verify"]
print("| run | requests/s (median) | p50 ms | p99 ms | errors |")
print("|---|---|---|---|---|")
for name in order:
    if name not in runs:
        continue
    values = list(runs[name].values())
    print(f"| {name} | {statistics.median(v[0] for v in values):,.0f} | {statistics.median(v[1] for v in values):.2f} | "
          f"{statistics.median(v[2] for v in values):.2f} | {sum(v[3] for v in values)} |")
print()
print("| gateway | verify / static (per round) | verify / proxy (per round) | median verify / proxy |")
print("|---|---|---|---|")
for gateway in ["nginx", "caddy", "traefik", "haproxy"]:
    verify, static, proxy = (runs.get(f"{gateway}-{kind}", {}) for kind in ("verify", "static", "proxy"))
    rounds = sorted(set(verify) & set(static) & set(proxy))
    if not rounds:
        continue
    to_static = [verify[r][0] / static[r][0] for r in rounds]
    to_proxy = [verify[r][0] / proxy[r][0] for r in rounds]
    print(f"| {gateway} | {', '.join(f'{x:.2f}' for x in to_static)} | {', '.join(f'{x:.2f}' for x in to_proxy)} | "
          f"{statistics.median(to_proxy):.2f} |")
