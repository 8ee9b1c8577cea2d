#!/usr/bin/env python3
"""DPoP proofs (RFC 9449) made and checked by joserfc, an independent JOSE implementation
from PyPI, for Baton's interoperability tests (Tests/BatonDPoPTests/JOSEInteropTests.swift,
which runs this with the interpreter of .venv-tools; scripts/jose-venv installs joserfc).

    dpop_interop.py sign    '{"cases": [{"alg", "htm", "htu", "iat", "token"?, "nonce"?}]}'
        -> [{"proof", "jkt"}]: a proof per case with a new key, and joserfc's RFC 7638
           thumbprint of that key.
    dpop_interop.py verify  '{"cases": [{"proof", "htm", "htu", "token"?}]}'
        -> [{"ok", "jkt"?, "error"?}]: joserfc verifies the signature with the proof's own
           jwk, and this script checks typ, the claims, htm, htu and ath as RFC 9449 §4.3 asks.

Nothing of Baton is imported: the hashes, encodings and thumbprints are joserfc's and
Python's own.
"""
import base64
import hashlib
import json
import secrets
import sys
import warnings

from joserfc import jws
from joserfc.jwk import ECKey, OKPKey

# joserfc warns that RFC 9864 deprecates "EdDSA" for "Ed25519"; both are tested on purpose.
warnings.filterwarnings("ignore", message="EdDSA is deprecated")

ALGORITHMS = {"ES256": ("EC", "P-256"), "EdDSA": ("OKP", "Ed25519"), "Ed25519": ("OKP", "Ed25519")}


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def token_hash(token: str) -> str:
    return b64url(hashlib.sha256(token.encode("ascii")).digest())


def sign(case: dict) -> dict:
    alg = case["alg"]
    kty, crv = ALGORITHMS[alg]
    key = ECKey.generate_key(crv) if kty == "EC" else OKPKey.generate_key(crv)
    header = {"typ": "dpop+jwt", "alg": alg, "jwk": key.as_dict(private=False)}
    claims = {"jti": secrets.token_urlsafe(16), "htm": case["htm"], "htu": case["htu"], "iat": case["iat"]}
    if case.get("token"):
        claims["ath"] = token_hash(case["token"])
    if case.get("nonce"):
        claims["nonce"] = case["nonce"]
    proof = jws.serialize_compact(header, json.dumps(claims).encode(), key, algorithms=[alg])
    return {"proof": proof, "jkt": key.thumbprint()}


def verify(case: dict) -> dict:
    try:
        header = jws.extract_compact(case["proof"].encode()).headers()
        alg = header.get("alg")
        if header.get("typ") != "dpop+jwt":
            return {"ok": False, "error": "typ"}
        if alg not in ALGORITHMS:
            return {"ok": False, "error": "alg"}
        jwk = header["jwk"]
        key = ECKey.import_key(jwk) if jwk.get("kty") == "EC" else OKPKey.import_key(jwk)
        if key.is_private:
            return {"ok": False, "error": "private key in jwk"}
        verified = jws.deserialize_compact(case["proof"], key, algorithms=[alg])
        claims = json.loads(verified.payload)
        if not isinstance(claims.get("jti"), str) or not isinstance(claims.get("iat"), int):
            return {"ok": False, "error": "jti or iat"}
        if claims.get("htm") != case["htm"] or claims.get("htu") != case["htu"]:
            return {"ok": False, "error": "htm or htu"}
        if case.get("token") and claims.get("ath") != token_hash(case["token"]):
            return {"ok": False, "error": "ath"}
        return {"ok": True, "jkt": key.thumbprint()}
    except Exception as error:  # any refusal by joserfc is an answer, not a crash
        return {"ok": False, "error": f"{type(error).__name__}: {error}"}


def main() -> None:
    mode = sys.argv[1]
    cases = json.loads(sys.argv[2])["cases"]
    action = {"sign": sign, "verify": verify}[mode]
    json.dump([action(case) for case in cases], sys.stdout)


if __name__ == "__main__":
    main()
