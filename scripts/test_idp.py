#!/usr/bin/env python3
"""A test OpenID provider on loopback, for Baton's token-exchange tests (IdentityProviderTests)
and scripts/bench-idp-flood: HTTPS with a throwaway CA, OIDC discovery and a JWK Set, keys
rotated on demand, and every malformed token a test needs, minted on request.

Usage: test_idp.py --dir DIR [--verbose]

At start it writes DIR/ca.pem (a throwaway CA) and serves HTTPS on 127.0.0.1 (a certificate
for IP 127.0.0.1 signed by that CA), and the same JWK Set over plain HTTP (for the "JWKS over
plain HTTP" case). When it listens it prints one JSON line:
  {"issuer": "https://127.0.0.1:PORT", "ca_file": "DIR/ca.pem", "plain_jwks_uri": "http://127.0.0.1:PORT2/jwks"}
It exits when its standard input reaches end of file (the test that started it is done, or
died), or on SIGTERM. Nothing else goes to standard output; --verbose logs requests to stderr.

Endpoints:
  GET  /.well-known/openid-configuration   discovery; modes: normal, wrong_issuer, plain_http_jwks
  GET  /jwks                               the published keys (Cache-Control: max-age=300); modes:
                                           normal, oversized (about 2 MiB: the keys and junk keys),
                                           slow (answers after 20 s; other requests go on meanwhile)
  POST /control {"action": ...}            rotate (a new RSA key, not published: {"kid"}), publish,
                                           jwks_mode {"mode"}, discovery_mode {"mode"}, stats
                                           ({"jwks_hits", "discovery_hits"}), reset_stats
  POST /mint {"claims", "alg", "kid"?, "typ"?}
                                           {"token"}: the claims as given, signed as alg says:
                                           RS256, PS256 (key rsa-1), ES256 (ec-1), EdDSA (ed-1),
                                           none (no signature), HS256-public-key (HMAC keyed with
                                           rsa-1's public key PEM: the algorithm-confusion attack);
                                           kid: the header's kid, and the key signing when it names
                                           one of the alg's type (rotated ones included, published
                                           or not); any other kid signs with the alg's key anyway;
                                           typ: the header's typ (default "JWT"; null: none)
Bad requests (an unknown action, alg or mode) are answered 400 {"error"}.
"""
import argparse
import base64
import datetime
import hashlib
import hmac
import http.server
import ipaddress
import json
import os
import signal
import ssl
import sys
import threading
import time
import warnings

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from joserfc import jwt
from joserfc.jwk import ECKey, OKPKey, RSAKey


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def make_certificates(directory):
    """A throwaway CA (DIR/ca.pem) and a server certificate for 127.0.0.1 it signed (returned)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Baton test identity provider CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    certificate = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
                   .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
                   .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
                   .sign(ca_key, hashes.SHA256()))
    ca_file = os.path.join(directory, "ca.pem")
    with open(ca_file, "wb") as file:
        file.write(ca.public_bytes(serialization.Encoding.PEM))
    cert_file, key_file = os.path.join(directory, "idp-cert.pem"), os.path.join(directory, "idp-key.pem")
    with open(cert_file, "wb") as file:
        file.write(certificate.public_bytes(serialization.Encoding.PEM))
    with open(os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as file:
        file.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return ca_file, cert_file, key_file


class Provider:
    """The keys, the modes and the counters, shared by both servers' threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.keys = {"rsa-1": RSAKey.generate_key(2048), "ec-1": ECKey.generate_key("P-256"), "ed-1": OKPKey.generate_key("Ed25519")}
        self.published = ["rsa-1", "ec-1", "ed-1"]
        self.rotations = 1
        self.jwks_mode = "normal"
        self.discovery_mode = "normal"
        self.jwks_hits = 0
        self.discovery_hits = 0
        self.issuer = ""
        self.plain_jwks_uri = ""
        self.junk = None  # the oversized mode's padding, made once

    JWKS_MODES = ("normal", "oversized", "slow")
    DISCOVERY_MODES = ("normal", "wrong_issuer", "plain_http_jwks")

    def jwks(self):
        keys = []
        for kid in self.published:
            jwk = self.keys[kid].as_dict(private=False)
            jwk["kid"] = kid
            jwk["use"] = "sig"
            keys.append(jwk)
        return {"keys": keys}

    def oversized_jwks(self):
        """The published keys, then junk keys (well-formed EC public keys no token names) up to
        about 2 MiB of JSON."""
        if self.junk is None:
            template = ECKey.generate_key("P-256").as_dict(private=False)
            self.junk = [dict(template, kid=f"junk-{n:05d}", use="sig") for n in range(15000)]
        return {"keys": self.jwks()["keys"] + self.junk}

    KEY_TYPES = {"RS256": RSAKey, "PS256": RSAKey, "ES256": ECKey, "EdDSA": OKPKey}
    DEFAULT_KIDS = {"RS256": "rsa-1", "PS256": "rsa-1", "ES256": "ec-1", "EdDSA": "ed-1"}

    def mint(self, claims, alg, kid, typ="JWT"):
        if not isinstance(claims, dict):
            raise ValueError("claims must be a JSON object")
        if kid is not None and not isinstance(kid, str):
            raise ValueError("kid must be a string")
        header = {"alg": alg}
        if typ is not None:
            header["typ"] = typ
        if alg == "none":
            if kid:
                header["kid"] = kid
            return b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode()) + "."
        if alg == "HS256-public-key":
            with self.lock:
                secret = self.keys["rsa-1"].as_pem(private=False)
            header.update(alg="HS256", kid=kid or "rsa-1")
            signing_input = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
            return signing_input + "." + b64url(hmac.new(secret, signing_input.encode(), hashlib.sha256).digest())
        if alg not in self.KEY_TYPES:
            raise ValueError(f"unknown alg {alg!r}")
        header["kid"] = kid or self.DEFAULT_KIDS[alg]
        with self.lock:
            key = self.keys.get(header["kid"])
            if not isinstance(key, self.KEY_TYPES[alg]):
                key = self.keys[self.DEFAULT_KIDS[alg]]  # a kid that names no key of this type: signed anyway
        return jwt.encode(header, claims, key, algorithms=[alg], default_type=None)

    def control(self, body):
        action = body.get("action")
        with self.lock:
            if action == "rotate":
                self.rotations += 1
                kid = f"rsa-{self.rotations}"
                self.keys[kid] = RSAKey.generate_key(2048)
                return {"kid": kid}
            if action == "publish":
                self.published = list(self.keys)
                return {"published": self.published}
            if action == "jwks_mode":
                if body.get("mode") not in self.JWKS_MODES:
                    raise ValueError(f"jwks_mode: mode must be one of {', '.join(self.JWKS_MODES)}")
                self.jwks_mode = body["mode"]
                return {"jwks_mode": self.jwks_mode}
            if action == "discovery_mode":
                if body.get("mode") not in self.DISCOVERY_MODES:
                    raise ValueError(f"discovery_mode: mode must be one of {', '.join(self.DISCOVERY_MODES)}")
                self.discovery_mode = body["mode"]
                return {"discovery_mode": self.discovery_mode}
            if action == "stats":
                return {"jwks_hits": self.jwks_hits, "discovery_hits": self.discovery_hits}
            if action == "reset_stats":
                self.jwks_hits = self.discovery_hits = 0
                return {}
        raise ValueError(f"unknown action {action!r}")


class Server(http.server.ThreadingHTTPServer):
    """A thread for every connection; a client that went away (a slow JWKS answered after the
    fetcher's timeout, a failed handshake) is no error worth a traceback unless --verbose."""
    daemon_threads = True
    verbose = False

    def handle_error(self, request, client_address):
        if self.verbose:
            super().handle_error(request, client_address)


def handler_for(provider, secure, verbose=False):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self):
            # The TLS handshake, here in the connection's own thread rather than in accept(): a
            # client that connects and says nothing holds up no one else.
            if isinstance(self.request, ssl.SSLSocket):
                self.request.settimeout(30)
                self.request.do_handshake()
                self.request.settimeout(None)
            super().setup()

        def log_message(self, format, *args):
            if verbose:
                sys.stderr.write(("https " if secure else "http ") + (format % args) + "\n")

        def answer(self, status, body, cache_control=None):
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if cache_control:
                self.send_header("Cache-Control", cache_control)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/jwks":
                with provider.lock:
                    provider.jwks_hits += 1
                    mode = provider.jwks_mode if secure else "normal"
                    keys = provider.oversized_jwks() if mode == "oversized" else provider.jwks()
                if mode == "slow":
                    time.sleep(20)
                return self.answer(200, keys, "max-age=300")
            if self.path == "/.well-known/openid-configuration" and secure:
                with provider.lock:
                    provider.discovery_hits += 1
                    mode = provider.discovery_mode
                issuer = provider.issuer + ("/other" if mode == "wrong_issuer" else "")
                jwks_uri = provider.plain_jwks_uri if mode == "plain_http_jwks" else provider.issuer + "/jwks"
                return self.answer(200, {"issuer": issuer, "jwks_uri": jwks_uri, "response_types_supported": ["id_token"],
                                         "subject_types_supported": ["public"],
                                         "id_token_signing_alg_values_supported": ["RS256", "PS256", "ES256", "EdDSA"]})
            self.answer(404, {"error": "not_found"})

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
                if not secure:
                    raise ValueError("control over HTTPS only")
                if self.path == "/mint":
                    return self.answer(200, {"token": provider.mint(body["claims"], body.get("alg", "RS256"), body.get("kid"),
                                                                    body.get("typ", "JWT"))})
                if self.path == "/control":
                    return self.answer(200, provider.control(body))
                self.answer(404, {"error": "not_found"})
            except (ValueError, KeyError, TypeError) as error:
                self.answer(400, {"error": str(error)})

    return Handler


def main():
    warnings.filterwarnings("ignore")  # joserfc: "EdDSA is deprecated via RFC 9864" (the test wants that name)
    parser = argparse.ArgumentParser(description="A test OpenID provider on loopback (HTTPS, throwaway CA).")
    parser.add_argument("--dir", required=True, help="where the CA and the server's certificate go")
    parser.add_argument("--verbose", action="store_true", help="log every request to stderr")
    arguments = parser.parse_args()
    ca_file, cert_file, key_file = make_certificates(arguments.dir)
    provider = Provider()
    Server.verbose = arguments.verbose
    secure = Server(("127.0.0.1", 0), handler_for(provider, True, arguments.verbose))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    secure.socket = context.wrap_socket(secure.socket, server_side=True, do_handshake_on_connect=False)
    plain = Server(("127.0.0.1", 0), handler_for(provider, False, arguments.verbose))
    provider.issuer = f"https://127.0.0.1:{secure.server_address[1]}"
    provider.plain_jwks_uri = f"http://127.0.0.1:{plain.server_address[1]}/jwks"
    for server in (secure, plain):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    print(json.dumps({"issuer": provider.issuer, "ca_file": ca_file, "plain_jwks_uri": provider.plain_jwks_uri}), flush=True)
    sys.stdin.read()  # until the parent closes it (or dies)
    os._exit(0)


if __name__ == "__main__":
    main()
