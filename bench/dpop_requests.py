#!/usr/bin/env python3
"""Device-bound chains for scripts/bench-dpop, made by joserfc (an independent JOSE
implementation from PyPI, .venv-tools/): N logins, each with its own P-256 key and a DPoP
proof, then COUNT verify requests spread over the chains, each with a fresh proof (its own
jti, `ath` of the chain's token), signed before the clock starts so that the load generator
spends nothing on signatures during the measured runs.

    dpop_requests.py HOST:PORT USERNAME PASSWORD CHAINS COUNT OUT_FILE...

Each OUT_FILE gets COUNT lines "<token> <proof>" (no proof in two files: one file per run).
Exits 1 if a login fails or is not bound (token_type DPoP).
"""
import base64
import hashlib
import http.client
import json
import multiprocessing
import secrets
import sys
import time

from joserfc import jws
from joserfc.jwk import ECKey


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def proof(key: ECKey, method: str, url: str, token: str | None = None) -> str:
    header = {"typ": "dpop+jwt", "alg": "ES256", "jwk": key.as_dict(private=False)}
    claims = {"jti": secrets.token_urlsafe(16), "htm": method, "htu": url, "iat": int(time.time())}
    if token is not None:
        claims["ath"] = b64url(hashlib.sha256(token.encode("ascii")).digest())
    return jws.serialize_compact(header, json.dumps(claims, separators=(",", ":")).encode(), key, algorithms=["ES256"])


def sign_batch(job: tuple) -> list:
    jwk, token, url, count = job
    key = ECKey.import_key(jwk)
    return [f"{token} {proof(key, 'GET', url, token)}" for _ in range(count)]


def main() -> None:
    address, username, password, chains, count = sys.argv[1:6]
    outs = sys.argv[6:]
    chains, count = int(chains), int(count)
    base = f"http://{address}"
    host, port = address.rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    bound = []
    for index in range(chains):
        key = ECKey.generate_key("P-256")
        body = json.dumps({"username": username, "password": password, "device_id": f"bound-{index}", "device_class": "mobile"})
        connection.request("POST", "/v1/login", body,
                           {"Content-Type": "application/json", "DPoP": proof(key, "POST", f"{base}/v1/login")})
        response = connection.getresponse()
        data = response.read()
        if response.status != 200:
            raise SystemExit(f"bound login {index}: {response.status} {data[:300]!r}")
        bundle = json.loads(data)
        if bundle.get("token_type") != "DPoP":
            raise SystemExit(f"bound login {index}: token_type {bundle.get('token_type')!r}, not DPoP")
        bound.append((key.as_dict(private=True), bundle["token"]))
    per_chain = -(-count // chains)
    jobs = [(jwk, token, f"{base}/v1/verify", per_chain) for jwk, token in bound]
    with multiprocessing.Pool() as pool:
        for out in outs:
            batches = pool.map(sign_batch, jobs)
            with open(out, "w") as file:
                # Interleaved by chain, so any prefix of the file spreads over all chains.
                for row in range(per_chain):
                    for batch in batches:
                        file.write(batch[row] + "\n")


if __name__ == "__main__":
    main()
