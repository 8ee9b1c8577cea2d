"""Which links of docs/openapi.yaml schemathesis's stateful phase really followed, and with
what answers; fails when one was never followed with a success or reuse went untested.

Usage: schemathesis_links.py OPENAPI.yaml EVENTS.ndjson [EVENTS.ndjson ...]

EVENTS is schemathesis's NDJSON report (`--report ndjson`) of a run with the stateful phase;
given several (scripts/check-api runs the phase again when one run left a link unfollowed),
the requirements hold for their union.
A link counts as followed when schemathesis applied it: the step's Authorization header
carried the token from the previous answer. For each declared link the script prints how
often it was followed and the answers (status, and the JSON `error` code of 4xx answers),
then requires:
- every declared link followed at least once;
- every operation the links lead to reached with a 2xx answer through one of them (a real
  token carried into a real success; which link gets there varies from run to run, because
  password changes and logouts revoke the chains of many tokens drawn later);
- at least one `token_reused` (a consumed token exchanged again, drawn a second time from the
  same answer) and one `chain_revoked` (a token of that chain used afterwards) among the
  answers to followed links, as docs/api.md documents for reuse.
Exit status 1 with the reason when a requirement fails, 2 on a usage or input error.
"""
import base64
import collections
import json
import sys

import yaml

REQUIRED_ERRORS = ("token_reused", "chain_revoked")


def declared_links(spec):
    """The links the spec declares, as schemathesis names them:
    'POST /v1/login -> [200] Exchange -> POST /v1/exchange'."""
    by_id = {}
    for path, methods in spec.get("paths", {}).items():
        for method, operation in methods.items():
            if isinstance(operation, dict) and "operationId" in operation:
                by_id[operation["operationId"]] = f"{method.upper()} {path}"
    links = []
    for path, methods in spec.get("paths", {}).items():
        for method, operation in methods.items():
            if not isinstance(operation, dict):
                continue
            for status, response in operation.get("responses", {}).items():
                response = resolve(spec, response)
                for name, link in (response.get("links") or {}).items():
                    target = by_id[resolve(spec, link)["operationId"]]
                    links.append(f"{method.upper()} {path} -> [{status}] {name} -> {target}")
    return links


def resolve(spec, node):
    """Follows local `$ref`s ('#/components/responses/TokenBundle')."""
    while isinstance(node, dict) and "$ref" in node:
        target = spec
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def answer_label(response):
    """'200', or '401 token_reused' for an error answer with a JSON error code."""
    status = response.get("status_code")
    label = str(status)
    if isinstance(status, int) and status >= 400:
        content = response.get("content") or {}
        raw = content.get("$base64")
        text = base64.b64decode(raw) if raw is not None else (content.get("string") or "").encode()
        try:
            error = json.loads(text).get("error")
        except (ValueError, AttributeError):
            error = None
        if error:
            label += f" {error}"
    return label


def followed_links(events):
    """Per followed link, a Counter of answer labels."""
    followed = collections.defaultdict(collections.Counter)
    for line in events:
        event = json.loads(line)
        finished = event.get("ScenarioFinished")
        if not finished or finished.get("phase") != "stateful":
            continue
        recorder = finished.get("recorder") or {}
        interactions = recorder.get("interactions") or {}
        for case_id, node in (recorder.get("cases") or {}).items():
            transition = node.get("transition")
            if not transition or not node.get("is_transition_applied"):
                continue
            interaction = interactions.get(case_id)
            if not interaction or not interaction.get("response"):
                continue
            followed[transition["id"]][answer_label(interaction["response"])] += 1
    return followed


def union(runs):
    """The links followed in any of several runs, their answers added up."""
    followed = collections.defaultdict(collections.Counter)
    for run in runs:
        for link, answers in run.items():
            followed[link] += answers
    return followed


def target_of(link):
    """'POST /v1/exchange' of 'POST /v1/login -> [200] Exchange -> POST /v1/exchange'."""
    return link.rsplit(" -> ", 1)[1]


def problems(declared, followed):
    """What the run lacks (empty when it passes)."""
    found = []
    for link in declared:
        if not followed.get(link):
            found.append(f"link never followed: {link}")
    for target in dict.fromkeys(target_of(link) for link in declared):
        answers = [label for link in declared if target_of(link) == target for label in followed.get(link, ())]
        if not any(label[:1] == "2" for label in answers):
            found.append(f"no link to {target} reached a 2xx answer")
    seen = {label.split(" ", 1)[1] for answers in followed.values() for label in answers if " " in label}
    for error in REQUIRED_ERRORS:
        if error not in seen:
            found.append(f"no followed link was answered {error}")
    return found


def main(arguments):
    if len(arguments) < 2:
        print("Usage: schemathesis_links.py OPENAPI.yaml EVENTS.ndjson [EVENTS.ndjson ...]", file=sys.stderr)
        return 2
    try:
        with open(arguments[0]) as file:
            declared = declared_links(yaml.safe_load(file))
        runs = []
        for path in arguments[1:]:
            with open(path) as file:
                runs.append(followed_links(file))
        followed = union(runs)
    except (OSError, ValueError, KeyError, yaml.YAMLError) as error:
        print(f"schemathesis links: cannot read the input: {error}", file=sys.stderr)
        return 2
    total = sum(sum(answers.values()) for answers in followed.values())
    covered = sum(1 for link in declared if followed.get(link))
    runs = len(arguments) - 1
    print(f"stateful links: {covered} of {len(declared)} declared links followed, {total} steps"
          + (f" in {runs} runs" if runs > 1 else ""))
    for link in declared:
        answers = followed.get(link, collections.Counter())
        summary = ", ".join(f"{count} × {label}" for label, count in sorted(answers.items()))
        print(f"  {link}: {sum(answers.values())} ({summary or 'never'})")
    found = problems(declared, followed)
    for problem in found:
        print(f"schemathesis links: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
