#!/usr/bin/env python3
"""Login and exchange latency of a release `baton serve` with webhooks off, and on with a
receiver that never answers, side by side in one run (scripts/bench-webhooks runs it).

Each round starts, for each configuration in turn (the order alternates between rounds), a
fresh `baton serve` on a new SQLite database and drives it for --seconds with --clients
threads, each on its own keep-alive connection: a login from a new device (a
`login.new_device` event), --exchanges exchanges, a logout (a `chain.revoked` event), again.
"on" adds `--webhook` pointing at a black hole: a socket that accepts every connection and
never reads or answers, so every delivery attempt runs into `--webhook-timeout`. Prints each
round's p50/p99 of login and exchange and the medians over the rounds; exits 1 if the black
hole saw no delivery attempt (then "on" measured nothing).

Usage: webhook_latency.py BATON [--rounds N] [--seconds S] [--clients C] [--exchanges K]
"""
import argparse
import http.client
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time

parser = argparse.ArgumentParser()
parser.add_argument("baton")
parser.add_argument("--rounds", type=int, default=5)
parser.add_argument("--seconds", type=float, default=10)
parser.add_argument("--clients", type=int, default=4)
parser.add_argument("--exchanges", type=int, default=5)
parser.add_argument("--webhook-timeout", default="10s", help="the server's --webhook-timeout (default: its default)")
args = parser.parse_args()
PASSWORD = "correct horse battery staple"


class BlackHole:
    """Accepts connections on a loopback port and never reads or answers them."""

    def __init__(self):
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(128)
        self.port = self.socket.getsockname()[1]
        self.held = []
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.held.append(connection)  # held open, never read, never answered


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")


def run(configuration, hole, secret):
    directory = tempfile.mkdtemp(prefix="baton-bench-webhooks.")
    database = os.path.join(directory, "baton.db")
    command = [args.baton, "serve", "--db", database, "--listen", "127.0.0.1:0", "--access-log", "off", "--max-chains-per-user", "0"]
    if configuration == "on":
        command += ["--webhook", f"http://127.0.0.1:{hole.port}/hook", "--webhook-secret-file", secret,
                    "--webhook-timeout", args.webhook_timeout]
    out = open(os.path.join(directory, "stdout"), "w+")
    server = subprocess.Popen(command, stdout=out, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        port = None
        deadline = time.monotonic() + 30
        while port is None and time.monotonic() < deadline and server.poll() is None:
            out.seek(0)
            match = re.search(r"127\.0\.0\.1:(\d+)", out.read())
            port = int(match.group(1)) if match else time.sleep(0.01)  # polling the server's first line
        if port is None:
            raise SystemExit(f"baton serve did not start ({configuration})")
        subprocess.run([args.baton, "admin", "user", "add", "bench", "--password-stdin", "--db", database],
                       input=PASSWORD + "\n", text=True, check=True, capture_output=True)
        held_before = len(hole.held)
        latencies = {"login": [], "exchange": []}
        lock = threading.Lock()
        stop_at = time.monotonic() + args.seconds
        failures = []

        def client(number):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            device = 0
            mine = {"login": [], "exchange": []}

            def call(method, path, body=None, token=None):
                headers = {"Content-Type": "application/json"} if body else {}
                if token:
                    headers["Authorization"] = "Bearer " + token
                started = time.perf_counter()
                connection.request(method, path, body, headers)
                response = connection.getresponse()
                data = response.read()
                return response.status, data, time.perf_counter() - started

            while time.monotonic() < stop_at:
                device += 1
                body = json.dumps({"username": "bench", "password": PASSWORD, "device_id": f"c{number}-{device}", "device_class": "mobile"})
                status, data, seconds = call("POST", "/v1/login", body)
                if status != 200:
                    failures.append(f"login {status} {data[:100]!r}")
                    return
                mine["login"].append(seconds)
                token = json.loads(data)["token"]
                for _ in range(args.exchanges):
                    status, data, seconds = call("POST", "/v1/exchange", token=token)
                    if status != 200:
                        failures.append(f"exchange {status} {data[:100]!r}")
                        return
                    mine["exchange"].append(seconds)
                    token = json.loads(data)["token"]
                call("POST", "/v1/logout", token=token)
            with lock:
                for kind in mine:
                    latencies[kind] += mine[kind]

        threads = [threading.Thread(target=client, args=(number,)) for number in range(args.clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if failures:
            raise SystemExit(f"{configuration}: {failures[0]}")
        metrics = ""
        if configuration == "on":
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            connection.request("GET", "/metrics")
            metrics = connection.getresponse().read().decode()
        pending = re.search(r"baton_webhook_pending_events\{[^}]*\} (\d+)", metrics)
        return {
            "login": latencies["login"], "exchange": latencies["exchange"],
            "attempts": len(hole.held) - held_before, "pending": int(pending.group(1)) if pending else 0,
        }
    finally:
        server.kill()  # the measurement is over; a SIGTERM would wait out the hung attempt
        server.wait()
        out.close()
        shutil.rmtree(directory, ignore_errors=True)


def main():
    hole = BlackHole()
    secret_directory = tempfile.mkdtemp(prefix="baton-bench-secret.")
    secret = os.path.join(secret_directory, "hook.secret")
    text = subprocess.run([args.baton, "admin", "webhooks", "new-secret"], capture_output=True, text=True, check=True).stdout
    descriptor = os.open(secret, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(descriptor, text.encode())
    os.close(descriptor)
    print(f"{args.rounds} rounds of {args.seconds:g} s per configuration, {args.clients} clients, "
          f"login + {args.exchanges} exchanges + logout per session; on: --webhook-timeout {args.webhook_timeout} to a black hole")
    print(f"load average before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} on {os.cpu_count()} CPUs")
    print(f"{'round':<6}{'webhooks':<10}{'logins':>7}{'login p50':>11}{'login p99':>11}{'exchanges':>10}{'exch p50':>10}{'exch p99':>10}{'attempts':>9}{'pending':>8}")
    results = {"off": [], "on": []}
    for number in range(args.rounds):
        for configuration in (("off", "on") if number % 2 == 0 else ("on", "off")):
            result = run(configuration, hole, secret)
            results[configuration].append(result)
            ms = lambda values, fraction: percentile(values, fraction) * 1000
            print(f"{number + 1:<6}{configuration:<10}{len(result['login']):>7}{ms(result['login'], 0.5):>9.2f}ms{ms(result['login'], 0.99):>9.2f}ms"
                  f"{len(result['exchange']):>10}{ms(result['exchange'], 0.5):>8.2f}ms{ms(result['exchange'], 0.99):>8.2f}ms"
                  f"{result['attempts']:>9}{result['pending']:>8}", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    print("medians over the rounds:")
    for kind in ("login", "exchange"):
        for fraction, name in ((0.5, "p50"), (0.99, "p99")):
            off = statistics.median(percentile(r[kind], fraction) for r in results["off"]) * 1000
            on = statistics.median(percentile(r[kind], fraction) for r in results["on"]) * 1000
            print(f"  {kind:<9}{name}  off {off:8.2f} ms   on (never answering) {on:8.2f} ms   on/off {on / off:5.2f}")
    shutil.rmtree(secret_directory, ignore_errors=True)
    if sum(r["attempts"] for r in results["on"]) == 0:
        raise SystemExit("the black hole saw no delivery attempt: 'on' measured nothing")


main()
