#!/usr/bin/env python3
"""Logs in N times with P clients in parallel (keep-alive connections, distinct device ids)
and writes "<chain id> <token>" lines for the wrk scripts. Exits 1 if any login fails.
Usage: login_burst.py HOST:PORT USERNAME PASSWORD N PARALLEL OUT_FILE"""
import concurrent.futures
import http.client
import json
import sys
import threading

address, username, password, count, parallel, out = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
host, port = address.rsplit(":", 1)
local = threading.local()

def login(index):
    if not hasattr(local, "connection"):
        local.connection = http.client.HTTPConnection(host, int(port), timeout=30)
    body = json.dumps({"username": username, "password": password, "device_id": f"bench-{index}", "device_class": "mobile"})
    local.connection.request("POST", "/v1/login", body, {"Content-Type": "application/json"})
    response = local.connection.getresponse()
    data = response.read()
    if response.status != 200:
        raise SystemExit(f"login {index}: {response.status} {data[:200]!r}")
    bundle = json.loads(data)
    return f"{bundle['chain_id']} {bundle['token']}"

with concurrent.futures.ThreadPoolExecutor(parallel) as pool:
    lines = list(pool.map(login, range(count)))
with open(out, "w") as file:
    file.write("\n".join(lines) + "\n")
