#!/usr/bin/env python3
"""The client of scripts/bench-exchange-uptime (standard library only): logs in once, then
exchanges the chain back to back on one keep-alive connection for SECONDS, and prints per
WINDOW seconds the exchanges, their p50 and p99, and the server's CPU per exchange (from
/proc/PID/stat). Any answer but 200 with a token ends the run with an error naming it.

    exchange_uptime.py --port PORT --pid PID [--seconds 60] [--window 10]
"""
import argparse
import http.client
import json
import os
import sys
import time


def server_cpu_seconds(pid: int) -> float:
    """User plus system CPU of the server process so far (its threads included)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(sorted_values: list, fraction: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(fraction * len(sorted_values)))]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--window", type=float, default=10)
    args = parser.parse_args()

    connection = http.client.HTTPConnection("127.0.0.1", args.port, timeout=30)
    body = json.dumps({"username": "bench", "password": "correct horse battery", "device_id": "uptime"})
    connection.request("POST", "/v1/login", body, {"Content-Type": "application/json"})
    answer = connection.getresponse()
    token = json.loads(answer.read())["token"] if answer.status == 200 else None
    if token is None:
        print(f"Error: the login answered {answer.status}", file=sys.stderr)
        return 1

    rates = []
    start = time.monotonic()
    window_start, cpu_start, latencies = start, server_cpu_seconds(args.pid), []
    while True:
        now = time.monotonic()
        if now - window_start >= args.window or now - start >= args.seconds:
            cpu = server_cpu_seconds(args.pid)
            latencies.sort()
            count = len(latencies)
            rate = count / (now - window_start)
            rates.append(rate)
            cpu_each = (cpu - cpu_start) / count * 1e6 if count else float("nan")
            print(f"window {len(rates)}: {window_start - start:5.0f}-{now - start:5.0f} s  {count:7,} exchanges  "
                  f"{rate:8,.0f}/s  p50 {percentile(latencies, 0.5) * 1e3:6.2f} ms  "
                  f"p99 {percentile(latencies, 0.99) * 1e3:6.2f} ms  server CPU {cpu_each:6.0f} µs/exchange", flush=True)
            if now - start >= args.seconds:
                break
            window_start, cpu_start, latencies = now, cpu, []
        sent = time.monotonic()
        try:
            connection.request("POST", "/v1/exchange", headers={"Authorization": f"Bearer {token}"})
            answer = connection.getresponse()
            payload = answer.read()
        except (OSError, http.client.HTTPException) as error:
            alive = os.path.exists(f"/proc/{args.pid}")
            print(f"Error: the exchange failed after {len(rates)} windows: {error!r} "
                  f"(server {'alive' if alive else 'gone'})", file=sys.stderr)
            print(f"first_rate={rates[0] if rates else 0:.0f} last_rate=0 last_over_first=0 "
                  f"server_alive={'yes' if alive else 'no'}")
            return 1
        latencies.append(time.monotonic() - sent)
        if answer.status != 200:
            print(f"Error: the exchange answered {answer.status}: {payload[:200]!r}", file=sys.stderr)
            return 1
        token = json.loads(payload)["token"]
    alive = os.path.exists(f"/proc/{args.pid}")
    print(f"first_rate={rates[0]:.0f} last_rate={rates[-1]:.0f} last_over_first={rates[-1] / rates[0]:.2f} "
          f"server_alive={'yes' if alive else 'no'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
