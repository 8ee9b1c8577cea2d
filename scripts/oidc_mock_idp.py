#!/usr/bin/env python3
"""The PyPI `oidc-provider-mock` (Authlib-based; an OpenID provider we did not write) served over
HTTPS with a throwaway CA, for IdentityMockProviderTests: its ID tokens, from a real
authorization-code flow with the device's nonce, must log in to Baton end to end.

Usage: oidc_mock_idp.py --dir DIR [--verbose]

Prints one JSON line when it listens: {"issuer": "https://127.0.0.1:PORT", "ca_file": "DIR/ca.pem"}
(the mock's discovery names the URL it is reached at as its issuer). Then reads commands, one
JSON object per line on standard input, and answers each with one line:
  {"action": "id_token", "sub": ..., "nonce": ..., "client_id": ...} -> {"id_token": ...}
    the flow as an app's OIDC SDK runs it: the authorization endpoint (the mock's form, with
    the user's `sub`), the redirect's code, the token endpoint (any client_id: the mock
    registers none unless asked to); a failure is answered {"error": "..."} instead
Exits at end of file on standard input. Nothing else goes to standard output; the mock's
request log goes to stderr with --verbose only.

What the mock (0.3.4) issues: the issuer is the URL it is reached at, https://127.0.0.1:PORT
(no trailing slash); ID tokens are RS256 with no kid (its JWKS holds one RSA key), and carry
iss, sub, aud (an array: [client_id]), nonce, iat, exp (an hour), auth_time and at_hash; no azp.
"""
import argparse
import json
import logging
import os
import ssl
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
import warnings

import authlib.deprecate  # noqa: F401  (it asks for its deprecation warnings "always"; this comes after)
warnings.filterwarnings("ignore")  # Authlib's deprecation warnings at the mock's import, on stderr otherwise
import werkzeug.serving  # noqa: E402
from oidc_provider_mock import app as mock_app  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no scripts/__pycache__ left in the work tree
from test_idp import make_certificates  # noqa: E402  (the same throwaway CA and certificate)

REDIRECT = "https://app.bank.test/callback"


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # the code is read from the Location header, not followed


def id_token(issuer, trust, command):
    opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=trust), NoRedirect)
    query = urllib.parse.urlencode({"client_id": command["client_id"], "redirect_uri": REDIRECT, "response_type": "code",
                                    "scope": "openid", "nonce": command["nonce"], "state": "s"})
    form = urllib.parse.urlencode({"sub": command["sub"]}).encode()
    try:
        opener.open(urllib.request.Request(f"{issuer}/oauth2/authorize?{query}", data=form, method="POST"), timeout=30)
        raise RuntimeError("the authorization endpoint did not redirect")
    except urllib.error.HTTPError as redirect:
        if redirect.code not in (302, 303):
            raise RuntimeError(f"authorize answered {redirect.code}: {redirect.read()[:300]!r}")
        location = redirect.headers["Location"]
    params = urllib.parse.parse_qs(urllib.parse.urlparse(location).query)
    if not location.startswith(REDIRECT + "?") or "code" not in params or params.get("state") != ["s"]:
        raise RuntimeError(f"authorize redirected to {location}")
    code = params["code"][0]
    body = urllib.parse.urlencode({"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                                   "client_id": command["client_id"], "client_secret": "unused"}).encode()
    with opener.open(urllib.request.Request(f"{issuer}/oauth2/token", data=body, method="POST"), timeout=30) as answer:
        return json.loads(answer.read())["id_token"]


def main():
    parser = argparse.ArgumentParser(description="oidc-provider-mock over HTTPS with a throwaway CA.")
    parser.add_argument("--dir", required=True, help="where the CA and the server's certificate go")
    parser.add_argument("--verbose", action="store_true", help="the mock's request log on stderr")
    arguments = parser.parse_args()
    if not arguments.verbose:
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        logging.getLogger("oidc_provider_mock").setLevel(logging.ERROR)
    ca_file, cert_file, key_file = make_certificates(arguments.dir)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    server = werkzeug.serving.make_server("127.0.0.1", 0, mock_app(require_nonce=True), threaded=True, ssl_context=context)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    issuer = f"https://127.0.0.1:{server.server_port}"
    trust = ssl.create_default_context(cafile=ca_file)
    print(json.dumps({"issuer": issuer, "ca_file": ca_file}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = {"id_token": id_token(issuer, trust, json.loads(line))}
        except Exception as error:  # reported to the test, which fails naming it
            answer = {"error": f"{type(error).__name__}: {error}"}
        print(json.dumps(answer), flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
