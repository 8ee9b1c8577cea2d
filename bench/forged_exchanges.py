#!/usr/bin/env python3
"""Writes N forged token-exchange requests for bench/wrk/token-exchange-flood.lua: each a DPoP
proof (ES256, a fresh jti, htu the given URL) and a form body whose ID token names ISSUER but a
random `kid` the provider never published, with a junk signature (Baton refuses it at the key
lookup, before any signature check: the flood's cheapest shape for the attacker, and the one
that asks for refetches). Usage: forged_exchanges.py URL ISSUER AUDIENCE N OUT_FILE"""
import base64
import json
import os
import sys
import time
import urllib.parse

from joserfc import jws
from joserfc.jwk import ECKey

url, issuer, audience, count, out = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


key = ECKey.generate_key("P-256")
public = key.as_dict(private=False)
now = int(time.time())
lines = []
for n in range(count):
    header = b64(json.dumps({"alg": "RS256", "kid": b64(os.urandom(12))}).encode())
    claims = b64(json.dumps({"iss": issuer, "sub": f"flood-{n}", "aud": audience, "iat": now, "exp": now + 600,
                             "nonce": "x"}).encode())
    token = f"{header}.{claims}.{b64(os.urandom(256))}"
    proof = jws.serialize_compact({"typ": "dpop+jwt", "alg": "ES256", "jwk": public},
                                  json.dumps({"jti": b64(os.urandom(16)), "htm": "POST", "htu": url, "iat": now}).encode(), key)
    body = urllib.parse.urlencode({"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "subject_token": token,
                                   "subject_token_type": "urn:ietf:params:oauth:token-type:id_token", "device_id": f"flood-{n}"})
    lines.append(f"{proof} {body}")
with open(out, "w") as file:
    file.write("\n".join(lines) + "\n")
