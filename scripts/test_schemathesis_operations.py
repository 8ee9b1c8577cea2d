"""Tests of scripts/schemathesis_operations.py's verdict (run by scripts/check-api first)."""
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from schemathesis_operations import documented_operations, verdict  # noqa: E402

SPEC = {"paths": {"/v1/login": {"post": {}}, "/v1/sessions/{chain_id}": {"delete": {}, "parameters": []}}}
OPERATIONS = documented_operations(SPEC)
assert OPERATIONS == ["POST /v1/login", "DELETE /v1/sessions/{chain_id}"], OPERATIONS

# Every operation answered 2xx at least once: passes, counting them.
report, never = verdict(OPERATIONS, ["POST /v1/login 200", "POST /v1/login 401", "DELETE /v1/sessions/{chain_id} 204"])
assert never == [] and report[-1].endswith("2 cases did"), report

# Only 401s and 429s for one operation: it is named, however many cases it had.
report, never = verdict(OPERATIONS, ["POST /v1/login 200"] + ["DELETE /v1/sessions/{chain_id} 401"] * 50
                        + ["DELETE /v1/sessions/{chain_id} 429"])
assert never == ["DELETE /v1/sessions/{chain_id}"], never

# An operation with no case at all fails too.
_, never = verdict(OPERATIONS, ["POST /v1/login 201"])
assert never == ["DELETE /v1/sessions/{chain_id}"], never
print("test_schemathesis_operations: 3 checks passed")
