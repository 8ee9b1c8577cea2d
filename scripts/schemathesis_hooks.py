"""schemathesis hooks for scripts/check-api (loaded with SCHEMATHESIS_HOOKS).

Bodies that carry a password get the test user's real one in three cases of four (by a
counter, not by the generated value: Hypothesis draws short values such as "0" again and
again, so a choice by the value's length starved confirm of real passwords), so that the
stateful phase's links reach real answers: a login succeeds and its token is exchanged, verified, confirmed, used to
change the password and logged out (docs/openapi.yaml, the TokenBundle links). The rest keep
their generated values (unknown users, wrong passwords, odd fields).

- /v1/login: username and password become alice's.
- /v1/confirm: password becomes alice's.
- /v1/password: current_password and new_password both become alice's (the change is
  real, revoking the user's other chains, but the password stays what the next login uses).

Every request that may count a failed password comes from its own client address
(X-Forwarded-For, which the server believes from 127.0.0.1): otherwise the failed ones would
soon throttle the address (429) and no password could succeed.

In check-api's last run (CHECK_API_CREDENTIALS, below) three cases of four of every operation
behind an authentication get a valid credential, and three of four token exchanges
(/v1/token-exchange) a valid ID token of the run's identity provider with a DPoP proof of a
new device key, so that they reach the logic instead of a 401 or a 400.
"""
import itertools

import schemathesis

USERNAME = "alice"
PASSWORD = "correct horse battery"

_addresses = itertools.count(1)
_bodies = itertools.count(0)

# The body fields set to the real password, per operation path.
_PASSWORD_FIELDS = {
    "/v1/login": ("password",),
    "/v1/confirm": ("password",),
    "/v1/password": ("current_password", "new_password"),
}


def _path(ctx):
    operation = getattr(ctx, "operation", None)
    return getattr(operation, "path", "") if operation is not None else ""


@schemathesis.hook
def map_body(ctx, body):
    path = _path(ctx)
    fields = _PASSWORD_FIELDS.get(path)
    if fields is None or not isinstance(body, dict):
        return body
    # A case is all real or all generated: a real current_password with a generated
    # new_password would change alice's password and lock every later login out.
    if next(_bodies) % 4 == 3:
        return body
    body = dict(body, **{field: PASSWORD for field in fields})
    if path == "/v1/login":
        body["username"] = USERNAME
    return body


@schemathesis.hook
def map_headers(ctx, headers):
    if _path(ctx) in _PASSWORD_FIELDS:
        n = next(_addresses)
        headers = dict(headers or {}, **{"X-Forwarded-For": f"10.{n // 65536 % 256}.{n // 256 % 256}.{n % 256}"})
    return headers


# ---------------------------------------------------------------------------------------------
# Outcomes, per operation (CHECK_API_OUTCOMES: a file): every answer's operation and status,
# one line each, for scripts/check-api's verdict of which documented operations reached a
# success answer (a 2xx) and how often. Without the variable nothing is recorded.
import base64
import hashlib
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request

from joserfc import jws, jwt
from joserfc.jwk import ECKey

_OUTCOMES = os.environ.get("CHECK_API_OUTCOMES")


@schemathesis.hook
def after_call(ctx, case, response):
    if _OUTCOMES:
        with open(_OUTCOMES, "a") as file:
            file.write(f"{case.method.upper()} {case.operation.path} {response.status_code}\n")
    if _CREDENTIALS:
        _credentials.after(case, response)


# ---------------------------------------------------------------------------------------------
# Credentials (CHECK_API_CREDENTIALS=URL, CHECK_API_CLIENT_SECRET=FILE): three cases of four of
# every operation that needs one get a valid credential just before they are sent, so that the
# cases reach the logic behind the authentication instead of its 401:
# - a fresh token of bob's session (exchanged for this case from the session's head; a new
#   login when a case ended the session: a logout, a revoke, a sign-out),
# - the chain id of another live session of bob's for DELETE /v1/sessions/{chain_id},
# - the introspection client's HTTP Basic credentials (kong) and a fresh token in the form body
#   of /v1/introspect and /v1/revoke,
# - for /v1/token-exchange (CHECK_API_ISSUER_KEY=FILE: the private JWK of the issuer that
#   scripts/check-api configured), a form body with a fresh ID token of a new identity
#   (check-api-N, so each case is a first login and creates its account) whose nonce binds it
#   to a new device key, and that key's DPoP proof (without them every case stops at a 400),
# and every case comes from an address of its own (X-Forwarded-For), so that no per-address
# limit (failed client authentications, the password-hash queue's share) masks the logic.
_CREDENTIALS = os.environ.get("CHECK_API_CREDENTIALS")
_TOKEN_PATHS = {"/v1/exchange", "/v1/verify", "/v1/confirm", "/v1/password", "/v1/logout", "/v1/sessions",
                "/v1/sessions/revoke-others", "/v1/sessions/{chain_id}", "/v1/authz/{original_path}"}
_CLIENT_PATHS = {"/v1/introspect", "/v1/revoke"}
_EXCHANGE_PATH = "/v1/token-exchange"
ISSUER = "https://login.check-api.test"  # as scripts/check-api's `baton admin issuer add`
CLIENT_ID = "check-api-app"


def _b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class _Credentials:
    """bob's session, kept live across the cases; a second session of his to sign out."""

    def __init__(self, url, secret_file, issuer_key_file):
        self.url = url.rstrip("/")
        self.secret = open(secret_file).read().strip() if secret_file else None
        self.token = None
        self.handed = None  # the token handed to the case being sent
        self.cases = itertools.count(0)
        self.addresses = itertools.count(1)
        self.identities = itertools.count(1)
        self.issuer_key = ECKey.import_key(json.load(open(issuer_key_file))) if issuer_key_file else None

    def _post(self, path, token=None, body=None, address="192.0.2.1"):
        headers = {"X-Forwarded-For": address}
        data = None
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(self.url + path, data=data if data is not None else b"", headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, json.loads(answer.read() or b"{}")
        except urllib.error.HTTPError as error:
            return error.code, {}

    def login(self, device):
        for _ in range(20):  # 503 while the hash queue is busy: a client retries
            status, body = self._post("/v1/login", body={"username": "bob", "password": PASSWORD, "device_id": device},
                                      address=self.address())
            if status == 200:
                return body
            if status not in (429, 503):
                raise RuntimeError(f"check-api: bob's login answered {status}")
        raise RuntimeError("check-api: bob's login did not succeed in 20 tries")

    def fresh_token(self):
        if self.token:
            status, body = self._post("/v1/exchange", token=self.token)
            if status == 200:
                self.token = body["token"]
                return self.token
        self.token = self.login("check-api")["token"]
        return self.token

    def token_exchange(self):
        """A valid token exchange's form body and DPoP proof (docs/identity.md): a new identity's
        ID token, its nonce base64url(SHA-256(the new device key's RFC 7638 thumbprint))."""
        n = next(self.identities)
        device = ECKey.generate_key("P-256", private=True)
        now = int(time.time())
        nonce = _b64url(hashlib.sha256(device.thumbprint().encode("ascii")).digest())
        claims = {"iss": ISSUER, "sub": f"check-api-{n}", "aud": CLIENT_ID, "iat": now, "exp": now + 300, "nonce": nonce}
        id_token = jwt.encode({"alg": "ES256", "kid": self.issuer_key.kid}, claims, self.issuer_key, algorithms=["ES256"])
        proof_claims = {"jti": _b64url(os.urandom(16)), "htm": "POST", "htu": self.url + _EXCHANGE_PATH, "iat": now}
        proof = jws.serialize_compact({"typ": "dpop+jwt", "alg": "ES256", "jwk": device.as_dict(private=False)},
                                      json.dumps(proof_claims).encode(), device, algorithms=["ES256"])
        body = {"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "subject_token": id_token,
                "subject_token_type": "urn:ietf:params:oauth:token-type:id_token", "device_id": f"check-api-device-{n}"}
        return body, proof

    def address(self):
        n = next(self.addresses)
        return f"10.{128 + n // 65536 % 128}.{n // 256 % 256}.{n % 256}"

    def before(self, case):
        path = case.operation.path
        headers = dict(case.headers or {})
        headers["X-Forwarded-For"] = self.address()
        self.handed = None
        exchange = path == _EXCHANGE_PATH and self.issuer_key is not None
        real = (path in _TOKEN_PATHS or path in _CLIENT_PATHS or exchange) and next(self.cases) % 4 != 3
        if real and exchange:
            case.body, headers["DPoP"] = self.token_exchange()
        elif real:
            token = self.fresh_token()
            self.handed = token
            if path in _CLIENT_PATHS:
                secret = urllib.parse.quote(self.secret, safe="")
                headers["Authorization"] = "Basic " + base64.b64encode(f"kong:{secret}".encode()).decode()
                if isinstance(case.body, dict):
                    case.body = dict(case.body, token=token)
            else:
                headers["Authorization"] = f"Bearer {token}"
                headers.pop("DPoP", None)
            if path == "/v1/sessions/{chain_id}":
                other = self.login(f"check-api-other-{next(self.cases)}")
                case.path_parameters = dict(case.path_parameters or {}, chain_id=other["chain_id"])
        case.headers = headers

    def after(self, case, response):
        # An exchange of the handed token made the session's head: keep it.
        if self.handed and case.operation.path == "/v1/exchange" and response.status_code == 200:
            try:
                self.token = json.loads(response.content)["token"]
            except (ValueError, KeyError):
                self.token = None


_credentials = _Credentials(_CREDENTIALS, os.environ.get("CHECK_API_CLIENT_SECRET"),
                           os.environ.get("CHECK_API_ISSUER_KEY")) if _CREDENTIALS else None


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    if _credentials:
        _credentials.before(case)
