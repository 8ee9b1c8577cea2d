#!/usr/bin/env python3
"""A quick self-test of the test identity providers that the Swift identity-provider tests start
(IdentityProviderTests, IdentityMockProviderTests): scripts/test_idp.py and
scripts/oidc_mock_idp.py, each started as those tests start it (a child process, one JSON line
when ready, gone when its standard input closes), checked over HTTPS with only its throwaway CA
trusted, every token verified with joserfc against the provider's own JWKS.

Usage: "$(scripts/idp-venv)" scripts/test_test_idp.py
Prints one line for each provider checked and the time taken; exits 1 at the first failure.
"""
import base64
import hashlib
import hmac
import json
import os
import re
import secrets
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import warnings

from joserfc import jwt
from joserfc.errors import BadSignatureError, JoseError
from joserfc.jwk import KeySet, RSAKey

warnings.filterwarnings("ignore")  # joserfc: "EdDSA is deprecated via RFC 9864" (the name the tests use)
SCRIPTS = os.path.dirname(os.path.abspath(__file__))
ALGORITHMS = {"RS256": "rsa-1", "PS256": "rsa-1", "ES256": "ec-1", "EdDSA": "ed-1"}


def b64url_json(part):
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Provider:
    """One provider script as a child process, as TestIdentityProvider.swift runs it."""

    def __init__(self, script, directory):
        self.process = subprocess.Popen([sys.executable, os.path.join(SCRIPTS, script), "--dir", directory],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        assert line.endswith("\n"), f"{script} printed no ready line: {line!r} {self.process.stderr.read()!r}"
        self.ready = json.loads(line)
        self.issuer = self.ready["issuer"]
        self.trust = ssl.create_default_context(cafile=self.ready["ca_file"])

    def get(self, url, timeout=10):
        with urllib.request.urlopen(url, context=self.trust if url.startswith("https:") else None, timeout=timeout) as answer:
            return json.loads(answer.read()), answer.headers

    def post(self, path, body):
        request = urllib.request.Request(self.issuer + path, data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, context=self.trust, timeout=10) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def control(self, action, **more):
        status, body = self.post("/control", dict(more, action=action))
        assert status == 200, f"control {action}: {status} {body}"
        return body

    def mint(self, claims, alg="RS256", **more):
        status, body = self.post("/mint", dict(more, claims=claims, alg=alg))
        assert status == 200, f"mint {alg}: {status} {body}"
        return body["token"]

    def command(self, body):
        self.process.stdin.write(json.dumps(body) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self):
        """Closes its standard input, as the Swift tests do: it must exit, cleanly and quietly."""
        self.process.stdin.close()
        status = self.process.wait(timeout=10)
        errors = self.process.stderr.read()
        assert status == 0, f"exited {status}: {errors}"
        assert self.process.stdout.read() == "", "more on stdout than the ready line and the answers"
        assert errors == "", f"not quiet on stderr: {errors!r}"


def claims_for(issuer):
    now = int(time.time())
    return {"iss": issuer, "sub": "customer-7", "aud": "bank-app", "iat": now, "exp": now + 300,
            "nonce": b64url(os.urandom(32)), "jti": secrets.token_hex(8)}


def verify(token, jwks, alg):
    return jwt.decode(token, KeySet.import_key_set(jwks), algorithms=[alg])


def check_test_idp(directory):
    idp = Provider("test_idp.py", directory)
    issuer = idp.issuer
    assert set(idp.ready) == {"issuer", "ca_file", "plain_jwks_uri"}, idp.ready
    assert re.fullmatch(r"https://127\.0\.0\.1:\d+", issuer), issuer
    assert idp.ready["ca_file"] == os.path.join(directory, "ca.pem") and os.path.isfile(idp.ready["ca_file"])
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/jwks", idp.ready["plain_jwks_uri"]), idp.ready

    # Only the throwaway CA makes its certificate trusted.
    try:
        urllib.request.urlopen(issuer + "/jwks", timeout=5)
        raise AssertionError("the provider's certificate was trusted without its CA")
    except urllib.error.URLError as error:
        assert isinstance(error.reason, ssl.SSLCertVerificationError), error

    discovery, _ = idp.get(issuer + "/.well-known/openid-configuration")
    assert discovery == {"issuer": issuer, "jwks_uri": issuer + "/jwks", "response_types_supported": ["id_token"],
                         "subject_types_supported": ["public"],
                         "id_token_signing_alg_values_supported": ["RS256", "PS256", "ES256", "EdDSA"]}, discovery
    jwks, headers = idp.get(issuer + "/jwks")
    assert headers["Cache-Control"] == "max-age=300", headers
    assert [(key["kid"], key["kty"], key.get("crv")) for key in jwks["keys"]] == \
        [("rsa-1", "RSA", None), ("ec-1", "EC", "P-256"), ("ed-1", "OKP", "Ed25519")], jwks
    assert all("alg" not in key and "d" not in key for key in jwks["keys"]), jwks
    assert len(base64.urlsafe_b64decode(jwks["keys"][0]["n"] + "==")) == 256  # RSA 2048
    plain, _ = idp.get(idp.ready["plain_jwks_uri"])
    assert plain == jwks

    # Every real algorithm, verified against the JWKS; the claims verbatim.
    for alg, kid in ALGORITHMS.items():
        claims = claims_for(issuer)
        token = idp.mint(claims, alg)
        verified = verify(token, jwks, alg)
        assert verified.header == {"alg": alg, "typ": "JWT", "kid": kid}, verified.header
        assert verified.claims == claims, verified.claims
    # RS256 and PS256 really differ with the one key: PKCS #1 v1.5 is deterministic, PSS salted.
    claims = claims_for(issuer)
    assert idp.mint(claims, "RS256") == idp.mint(claims, "RS256")
    assert idp.mint(claims, "PS256") != idp.mint(claims, "PS256")
    assert verify(idp.mint(claims, "ES256", typ="at+jwt"), jwks, "ES256").header["typ"] == "at+jwt"
    assert "typ" not in verify(idp.mint(claims, "ES256", typ=None), jwks, "ES256").header
    assert b64url_json(idp.mint({"aud": ["a", "b"], "nested": {"x": [1, None]}}).split(".")[1]) == \
        {"aud": ["a", "b"], "nested": {"x": [1, None]}}

    # alg none: no signature.
    none = idp.mint(claims, "none")
    assert none.endswith(".") and none.count(".") == 2, none
    assert b64url_json(none.split(".")[0]) == {"alg": "none", "typ": "JWT"}
    assert b64url_json(none.split(".")[1]) == claims
    # HS256 keyed with rsa-1's public key PEM, which anyone can compute from the JWKS.
    confused = idp.mint(claims, "HS256-public-key")
    header, payload, signature = confused.split(".")
    assert b64url_json(header) == {"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}
    assert b64url_json(payload) == claims
    public_pem = RSAKey.import_key(jwks["keys"][0]).as_pem(private=False)
    assert signature == b64url(hmac.new(public_pem, f"{header}.{payload}".encode(), hashlib.sha256).digest())
    # A kid that names no key: in the header, signed with rsa-1 all the same.
    forged = idp.mint(claims, "RS256", kid="no-such-key")
    assert b64url_json(forged.split(".")[0])["kid"] == "no-such-key"
    rsa1 = RSAKey.import_key(jwks["keys"][0])
    assert jwt.decode(forged, rsa1, algorithms=["RS256"]).claims == claims

    # Rotation: a new key, not published until asked.
    assert idp.control("rotate") == {"kid": "rsa-2"}
    rotated = idp.mint(claims, "RS256", kid="rsa-2")
    assert b64url_json(rotated.split(".")[0])["kid"] == "rsa-2"
    jwks, _ = idp.get(issuer + "/jwks")
    assert [key["kid"] for key in jwks["keys"]] == ["rsa-1", "ec-1", "ed-1"], jwks
    try:
        verify(rotated, jwks, "RS256")
        raise AssertionError("a token of an unpublished key verified")
    except JoseError:
        pass
    idp.control("publish")
    jwks, _ = idp.get(issuer + "/jwks")
    assert [key["kid"] for key in jwks["keys"]] == ["rsa-1", "ec-1", "ed-1", "rsa-2"], jwks
    assert verify(rotated, jwks, "RS256").claims == claims
    try:  # signed with rsa-2's key, not rsa-1's
        jwt.decode(rotated, rsa1, algorithms=["RS256"])
        raise AssertionError("rsa-2's token verified with rsa-1")
    except BadSignatureError:
        pass
    assert idp.control("rotate") == {"kid": "rsa-3"}

    # Counters: both JWKS (HTTPS and plain HTTP) and discovery.
    idp.control("reset_stats")
    assert idp.control("stats") == {"jwks_hits": 0, "discovery_hits": 0}
    idp.get(issuer + "/jwks")
    idp.get(idp.ready["plain_jwks_uri"])
    idp.get(issuer + "/.well-known/openid-configuration")
    assert idp.control("stats") == {"jwks_hits": 2, "discovery_hits": 1}

    # Discovery modes.
    idp.control("discovery_mode", mode="wrong_issuer")
    discovery, _ = idp.get(issuer + "/.well-known/openid-configuration")
    assert discovery["issuer"] != issuer and discovery["jwks_uri"] == issuer + "/jwks", discovery
    idp.control("discovery_mode", mode="plain_http_jwks")
    discovery, _ = idp.get(issuer + "/.well-known/openid-configuration")
    assert discovery["issuer"] == issuer and discovery["jwks_uri"] == idp.ready["plain_jwks_uri"], discovery
    idp.control("discovery_mode", mode="normal")
    assert idp.get(issuer + "/.well-known/openid-configuration")[0]["jwks_uri"] == issuer + "/jwks"

    # JWKS modes: oversized (valid JSON, about 2 MiB, the real keys still in it).
    idp.control("jwks_mode", mode="oversized")
    with urllib.request.urlopen(issuer + "/jwks", context=idp.trust, timeout=10) as answer:
        body = answer.read()
    assert 1.5 * 2**20 < len(body) < 2.5 * 2**20, len(body)
    big = json.loads(body)["keys"]
    assert [key["kid"] for key in big[:4]] == ["rsa-1", "ec-1", "ed-1", "rsa-2"] and len(big) > 10000
    assert idp.get(idp.ready["plain_jwks_uri"])[0] == jwks  # the plain-HTTP JWKS is never misbehaving
    # slow: the JWKS answers after 20 s, while discovery and a silent connection hold up nothing.
    idp.control("jwks_mode", mode="slow")
    silent = socket.create_connection(("127.0.0.1", int(issuer.rsplit(":", 1)[1])))  # no TLS handshake, ever
    outcome = {}

    def slow_fetch():
        started = time.monotonic()
        try:
            idp.get(issuer + "/jwks", timeout=3)
            outcome["answered"] = time.monotonic() - started
        except (TimeoutError, urllib.error.URLError) as error:
            outcome["timed out"] = error

    fetcher = threading.Thread(target=slow_fetch)
    fetcher.start()
    time.sleep(0.3)
    started = time.monotonic()
    assert idp.get(issuer + "/.well-known/openid-configuration", timeout=5)[0]["issuer"] == issuer
    assert idp.mint(claims, "ES256")
    assert time.monotonic() - started < 2, "discovery waited for the slow JWKS"
    fetcher.join()
    assert "timed out" in outcome, outcome
    silent.close()
    idp.control("jwks_mode", mode="normal")
    assert idp.get(issuer + "/jwks", timeout=5)[0] == jwks

    # Bad requests: 400 with a reason.
    for path, body in [("/control", {"action": "jwks_mode", "mode": "sloww"}), ("/control", {"action": "explode"}),
                       ("/control", {"action": "discovery_mode"}), ("/mint", {"claims": {}, "alg": "HS512"}),
                       ("/mint", {"alg": "RS256"}), ("/mint", {"claims": [], "alg": "RS256"})]:
        status, answer = idp.post(path, body)
        assert status == 400 and answer.get("error"), f"{path} {body}: {status} {answer}"
    idp.close()

    # SIGTERM: also a clean exit.
    other = Provider("test_idp.py", tempfile.mkdtemp(dir=directory))
    other.process.send_signal(signal.SIGTERM)
    assert other.process.wait(timeout=10) == 0
    other.process.stdin.close()
    return f"test_idp.py: {issuer}, RS256/PS256/ES256/EdDSA verified, none, HS256-public-key, rotation, stats, modes"


def check_oidc_mock(directory):
    mock = Provider("oidc_mock_idp.py", directory)
    issuer = mock.issuer
    assert set(mock.ready) == {"issuer", "ca_file"}, mock.ready
    assert re.fullmatch(r"https://127\.0\.0\.1:\d+", issuer), issuer
    discovery, _ = mock.get(issuer + "/.well-known/openid-configuration")
    assert discovery["issuer"] == issuer, f"the mock's issuer is {discovery['issuer']!r}, served at {issuer!r}"
    assert discovery["jwks_uri"] == issuer + "/jwks", discovery
    assert discovery["id_token_signing_alg_values_supported"] == ["RS256"], discovery
    jwks, _ = mock.get(discovery["jwks_uri"])
    assert [key["kty"] for key in jwks["keys"]] == ["RSA"], jwks
    keys = KeySet.import_key_set(jwks)

    seen = []
    for sub in ["alice", "bob@bank.test"]:
        nonce = b64url(os.urandom(32))
        answer = mock.command({"action": "id_token", "sub": sub, "nonce": nonce, "client_id": "baton-app"})
        token = answer.get("id_token")
        assert token, answer
        header = b64url_json(token.split(".")[0])
        assert header == {"typ": "JWT", "alg": "RS256"}, header  # no kid: its one key
        claims = jwt.decode(token, keys.keys[0], algorithms=["RS256"]).claims
        now = time.time()
        assert claims["iss"] == issuer and claims["sub"] == sub and claims["nonce"] == nonce, claims
        assert claims["aud"] == ["baton-app"] and "azp" not in claims, claims
        assert claims["iat"] <= now + 5 and claims["exp"] > now + 3000 and claims["auth_time"] <= now + 5, claims
        seen.append(claims)
    # A failure is answered, not fatal: no nonce (the mock requires one).
    answer = mock.command({"action": "id_token", "sub": "carol", "client_id": "baton-app", "nonce": ""})
    assert set(answer) == {"error"}, answer
    assert "id_token" in mock.command({"action": "id_token", "sub": "carol", "nonce": "n", "client_id": "other-app"})
    mock.close()
    return f"oidc_mock_idp.py: {issuer}, RS256 without kid, ID token claims {sorted(seen[0])}"


def main():
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="baton-test-idp-") as directory:
        for check, name in [(check_test_idp, "test-idp"), (check_oidc_mock, "mock")]:
            os.mkdir(os.path.join(directory, name))
            print(check(os.path.join(directory, name)), flush=True)
    print(f"ok ({time.monotonic() - started:.1f} s)")


if __name__ == "__main__":
    main()
