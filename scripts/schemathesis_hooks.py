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
