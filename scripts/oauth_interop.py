#!/usr/bin/env python3
"""Baton's OAuth endpoints driven by Authlib, an independent OAuth implementation from PyPI,
for the interoperability tests (Tests/BatonServerTests/AuthlibInteropTests.swift runs this
with the interpreter of .venv-tools; scripts/authlib-venv installs Authlib and requests).

    oauth_interop.py '{"base", "client_id", "client_secret", "bearer_token", "bound_token"}'
        -> one JSON object: the RFC 8414 metadata as fetched, and for each step the status
           and body Authlib's client got (introspection and revocation with
           client_secret_basic, the endpoints taken from the metadata).

Nothing of Baton is imported: the requests are Authlib's own.
"""
import json
import os
import sys

# The test server listens on plain HTTP on loopback; Authlib refuses that unless told.
os.environ["AUTHLIB_INSECURE_TRANSPORT"] = "1"

import requests  # noqa: E402
from authlib.integrations.requests_client import OAuth2Session  # noqa: E402


def answer(response):
    try:
        body = response.json()
    except ValueError:
        body = response.text
    return {"status": response.status_code, "body": body,
            "www_authenticate": response.headers.get("WWW-Authenticate")}


def main():
    case = json.loads(sys.argv[1])
    metadata = requests.get(case["base"] + "/.well-known/oauth-authorization-server", timeout=10).json()
    introspect = metadata["introspection_endpoint"]
    revoke = metadata["revocation_endpoint"]
    client = OAuth2Session(case["client_id"], case["client_secret"], token_endpoint_auth_method="client_secret_basic")
    stranger = OAuth2Session(case["client_id"], case["client_secret"] + "x", token_endpoint_auth_method="client_secret_basic")
    out = {"metadata": metadata}
    out["bearer"] = answer(client.introspect_token(introspect, token=case["bearer_token"], token_type_hint="access_token"))
    out["bound"] = answer(client.introspect_token(introspect, token=case["bound_token"]))
    out["forged"] = answer(client.introspect_token(introspect, token=case["bearer_token"][:-2] + "AA"))
    out["wrong_secret"] = answer(stranger.introspect_token(introspect, token=case["bearer_token"]))
    out["revoke_wrong_secret"] = answer(stranger.revoke_token(revoke, token=case["bearer_token"]))
    out["revoke"] = answer(client.revoke_token(revoke, token=case["bearer_token"], token_type_hint="access_token"))
    out["after_revoke"] = answer(client.introspect_token(introspect, token=case["bearer_token"]))
    out["revoke_again"] = answer(client.revoke_token(revoke, token=case["bearer_token"]))
    out["revoke_unknown"] = answer(client.revoke_token(revoke, token="not-a-token-baton-issued"))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
