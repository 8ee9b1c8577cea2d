"""schemathesis hooks for scripts/check-api (loaded with SCHEMATHESIS_HOOKS).

Login bodies whose generated device_id has an even length get the test user's real
credentials, so that some logins succeed: the stateful phase then follows the TokenBundle
links (exchange, verify, logout) with real tokens. The rest keep their generated values
(unknown users, wrong passwords, odd fields). Every login comes from its own client address
(X-Forwarded-For, which the server believes from 127.0.0.1): otherwise the failed ones
would soon throttle the address (429) and no login could succeed.
"""
import itertools

import schemathesis

_addresses = itertools.count(1)


def _is_login(ctx):
    operation = getattr(ctx, "operation", None)
    return operation is not None and getattr(operation, "path", "") == "/v1/login"


@schemathesis.hook
def map_body(ctx, body):
    if _is_login(ctx) and isinstance(body, dict) and isinstance(body.get("device_id"), str) and len(body["device_id"]) % 2 == 0:
        body = dict(body, username="alice", password="correct horse battery")
    return body


@schemathesis.hook
def map_headers(ctx, headers):
    if _is_login(ctx):
        n = next(_addresses)
        headers = dict(headers or {}, **{"X-Forwarded-For": f"10.{n // 65536 % 256}.{n // 256 % 256}.{n % 256}"})
    return headers
