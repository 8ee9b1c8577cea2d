"""Tests of scripts/schemathesis_links.py (run by scripts/check-api before schemathesis):
the coverage gate fails a run that followed no link, one link too few, or no reuse, and
passes a run that followed every link to a success and met reuse."""
import base64
import json
import os
import sys
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import schemathesis_links as links  # noqa: E402

SPEC = yaml.safe_load("""
paths:
  /v1/login:
    post:
      operationId: login
      responses:
        '200': { $ref: '#/components/responses/TokenBundle' }
  /v1/exchange:
    post:
      operationId: exchange
      responses:
        '200': { $ref: '#/components/responses/TokenBundle' }
        '401': { description: error }
components:
  responses:
    TokenBundle:
      description: A token.
      links:
        Exchange:
          operationId: exchange
          parameters: { header.Authorization: 'Bearer {$response.body#/token}' }
""")

LOGIN_EXCHANGE = "POST /v1/login -> [200] Exchange -> POST /v1/exchange"
EXCHANGE_EXCHANGE = "POST /v1/exchange -> [200] Exchange -> POST /v1/exchange"


def scenario(*steps, phase="stateful"):
    """One ScenarioFinished event line; a step is (link id or None, status, error or None, applied)."""
    cases, interactions = {}, {}
    for number, (link, status, error, applied) in enumerate(steps):
        case_id = f"c{number}"
        node = {"value": {"id": case_id}, "is_transition_applied": applied}
        if link:
            node["transition"] = {"id": link}
        cases[case_id] = node
        body = json.dumps({"error": error} if error else {"token": "t"}).encode()
        interactions[case_id] = {"response": {"status_code": status, "content": {"$base64": base64.b64encode(body).decode()}}}
    return json.dumps({"ScenarioFinished": {"phase": phase, "recorder": {"cases": cases, "interactions": interactions}}})


class SchemathesisLinksTests(unittest.TestCase):
    def test_declared_links_are_named_as_schemathesis_names_them(self):
        self.assertEqual(links.declared_links(SPEC), [LOGIN_EXCHANGE, EXCHANGE_EXCHANGE])

    def test_a_run_that_followed_no_link_fails(self):
        events = [scenario((None, 200, None, False), (None, 401, "token_invalid", False))]
        found = links.problems(links.declared_links(SPEC), links.followed_links(events))
        self.assertIn(f"link never followed: {LOGIN_EXCHANGE}", found)
        self.assertIn(f"link never followed: {EXCHANGE_EXCHANGE}", found)
        self.assertIn("no link to POST /v1/exchange reached a 2xx answer", found)
        self.assertIn("no followed link was answered token_reused", found)

    def test_a_link_drawn_but_not_applied_does_not_count(self):
        events = [scenario((LOGIN_EXCHANGE, 200, None, False))]
        self.assertEqual(links.followed_links(events), {})

    def test_a_link_never_followed_fails(self):
        events = [scenario((LOGIN_EXCHANGE, 200, None, True), (LOGIN_EXCHANGE, 401, "token_reused", True),
                           (LOGIN_EXCHANGE, 401, "chain_revoked", True))]
        found = links.problems(links.declared_links(SPEC), links.followed_links(events))
        self.assertEqual(found, [f"link never followed: {EXCHANGE_EXCHANGE}"])

    def test_links_to_an_operation_answered_only_with_errors_fail(self):
        events = [scenario((LOGIN_EXCHANGE, 401, "token_reused", True), (EXCHANGE_EXCHANGE, 401, "chain_revoked", True))]
        found = links.problems(links.declared_links(SPEC), links.followed_links(events))
        self.assertEqual(found, ["no link to POST /v1/exchange reached a 2xx answer"])

    def test_every_link_to_a_success_and_reuse_passes(self):
        events = [scenario((None, 200, None, False), (LOGIN_EXCHANGE, 200, None, True), (EXCHANGE_EXCHANGE, 200, None, True),
                           (LOGIN_EXCHANGE, 401, "token_reused", True), (EXCHANGE_EXCHANGE, 401, "chain_revoked", True))]
        followed = links.followed_links(events)
        self.assertEqual(links.problems(links.declared_links(SPEC), followed), [])
        self.assertEqual(dict(followed[LOGIN_EXCHANGE]), {"200": 1, "401 token_reused": 1})

    def test_runs_that_each_miss_a_link_pass_together(self):
        first = [scenario((LOGIN_EXCHANGE, 200, None, True), (LOGIN_EXCHANGE, 401, "token_reused", True))]
        second = [scenario((EXCHANGE_EXCHANGE, 200, None, True), (EXCHANGE_EXCHANGE, 401, "chain_revoked", True))]
        declared = links.declared_links(SPEC)
        self.assertNotEqual(links.problems(declared, links.followed_links(first)), [])
        self.assertNotEqual(links.problems(declared, links.followed_links(second)), [])
        followed = links.union([links.followed_links(first), links.followed_links(second), links.followed_links(first)])
        self.assertEqual(links.problems(declared, followed), [])
        self.assertEqual(dict(followed[LOGIN_EXCHANGE]), {"200": 2, "401 token_reused": 2})

    def test_other_phases_are_not_counted(self):
        events = [scenario((LOGIN_EXCHANGE, 200, None, True), phase="fuzzing")]
        self.assertEqual(links.followed_links(events), {})


if __name__ == "__main__":
    unittest.main()
