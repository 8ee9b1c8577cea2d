"""The verdict per operation of scripts/check-api: how many cases of each operation that
docs/openapi.yaml documents were answered 2xx, over every schemathesis run (the hooks'
after_call writes one `METHOD PATH STATUS` line per answer). Fails, naming them, if an
operation never reached a success answer: a headline count of cases that all stopped at a 401
would prove nothing about the logic behind it.

    python schemathesis_operations.py docs/openapi.yaml OUTCOMES-FILE
"""
import collections
import sys

import yaml

METHODS = {"get", "post", "put", "patch", "delete", "head", "options"}


def documented_operations(spec):
    return [f"{method.upper()} {path}" for path, item in spec["paths"].items() for method in item if method in METHODS]


def tally(lines):
    answered, succeeded = collections.Counter(), collections.Counter()
    for line in lines:
        method, path, status = line.split()
        answered[f"{method} {path}"] += 1
        if status.startswith("2"):
            succeeded[f"{method} {path}"] += 1
    return answered, succeeded


def verdict(operations, lines):
    """(report lines, operations that never succeeded)."""
    answered, succeeded = tally(lines)
    width = max(map(len, operations))
    report = ["check-api: cases per operation that reached a success answer (2xx), of all its cases:"]
    report += [f"  {operation:<{width}}  {succeeded[operation]:>5} of {answered[operation]:>5}" for operation in operations]
    never = [operation for operation in operations if succeeded[operation] == 0]
    if not never:
        total = sum(succeeded[operation] for operation in operations)
        report.append(f"check-api: every documented operation ({len(operations)}) reached a success answer; {total} cases did")
    return report, never


def main():
    spec = yaml.safe_load(open(sys.argv[1]))
    report, never = verdict(documented_operations(spec), open(sys.argv[2]).read().splitlines())
    print("\n".join(report))
    if never:
        print(f"check-api: these documented operations never reached a success answer: {', '.join(never)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
