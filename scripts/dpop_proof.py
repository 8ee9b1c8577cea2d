#!/usr/bin/env python3
"""One DPoP proof (RFC 9449 §4.2) with joserfc, for scripts/dpop-proof (see its usage)."""
import argparse
import base64
import hashlib
import json
import os
import secrets
import sys
import time

from joserfc import jws
from joserfc.jwk import ECKey


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def default_key_path() -> str:
    """Outside the repository (a device's private key has no place in a work tree):
    $XDG_CONFIG_HOME/baton/dpop-key.json, else ~/.config/baton/dpop-key.json."""
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(config, "baton", "dpop-key.json")


def load_key(path: str) -> ECKey:
    if os.path.exists(path):
        with open(path) as handle:
            return ECKey.import_key(json.load(handle))
    key = ECKey.generate_key("P-256", private=True)
    os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        json.dump(key.as_dict(private=True), handle)
    return key


def main() -> int:
    parser = argparse.ArgumentParser(prog="dpop-proof", description="Print a DPoP proof (RFC 9449) for one request.")
    parser.add_argument("--key", default=default_key_path(), help="JWK file of the P-256 key (created mode 0600 if missing; default: %(default)s)")
    parser.add_argument("--nonce", help="the server's DPoP-Nonce")
    parser.add_argument("--thumbprint", action="store_true", help="print the key's RFC 7638 thumbprint and exit")
    parser.add_argument("method", nargs="?")
    parser.add_argument("url", nargs="?")
    parser.add_argument("token", nargs="?", help="the token presented (for ath); none at login")
    arguments = parser.parse_args()
    key = load_key(arguments.key)
    if arguments.thumbprint:
        print(key.thumbprint())
        return 0
    if not arguments.method or not arguments.url:
        parser.error("METHOD and URL are required")
    claims = {
        "jti": b64url(secrets.token_bytes(16)),
        "htm": arguments.method,
        "htu": arguments.url.split("?")[0].split("#")[0],
        "iat": int(time.time()),
    }
    if arguments.token:
        claims["ath"] = b64url(hashlib.sha256(arguments.token.encode("ascii")).digest())
    if arguments.nonce:
        claims["nonce"] = arguments.nonce
    header = {"typ": "dpop+jwt", "alg": "ES256", "jwk": key.as_dict(private=False)}
    print(jws.serialize_compact(header, json.dumps(claims, separators=(",", ":")).encode(), key, algorithms=["ES256"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
