#!/usr/bin/env python3
"""The flooding requests of scripts/bench-refused-flood, made by joserfc (.venv-tools/):
logs USERNAME in bound (a P-256 key of its own) and prints one line per kind of refused
proof, "<kind>\t<Authorization>\t<DPoP>", each a GET /v1/verify the server must refuse:

  wrong-key       the chain's real token, a proof by another key (a valid signature)
  bad-signature   the chain's real token, a proof naming the chain's own public key (which
                  every proof the device sends shows) with a signature that does not verify
  made-up-token   a token whose MAC fails, with a good proof by the chain's key

    refused_flood_requests.py HOST:PORT USERNAME PASSWORD
"""
import base64
import http.client
import json
import sys

from joserfc.jwk import ECKey

from dpop_requests import b64url, proof


def main() -> None:
    address, username, password = sys.argv[1:4]
    base = f"http://{address}"
    host, port = address.rsplit(":", 1)
    key = ECKey.generate_key("P-256", private=True)
    body = json.dumps({"username": username, "password": password, "device_id": "flood", "device_class": "mobile"})
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    connection.request("POST", "/v1/login", body, {"Content-Type": "application/json", "DPoP": proof(key, "POST", f"{base}/v1/login")})
    response = connection.getresponse()
    bundle = json.loads(response.read())
    if response.status != 200 or bundle.get("token_type") != "DPoP":
        raise SystemExit(f"bound login: {response.status} {bundle}")
    token = bundle["token"]
    url = f"{base}/v1/verify"
    wrong = proof(ECKey.generate_key("P-256", private=True), "GET", url, token)
    good = proof(key, "GET", url, token)
    head, payload, signature = good.split(".")
    raw = bytearray(base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4)))
    raw[5] ^= 0x01
    bad = f"{head}.{payload}.{b64url(bytes(raw))}"
    made_up = token[:-1] + ("A" if token[-1] != "A" else "B")
    print(f"wrong-key\tDPoP {token}\t{wrong}")
    print(f"bad-signature\tDPoP {token}\t{bad}")
    print(f"made-up-token\tDPoP {made_up}\t{proof(key, 'GET', url, made_up)}")


if __name__ == "__main__":
    main()
