"""What one wrk run printed (`wrk --latency`), as numbers: for the bench/summarize*.py scripts."""
import re


def to_ms(value, unit):
    """A wrk duration (`812.00us`, `1.20ms`, `2.01s`) in milliseconds."""
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def parse_wrk(path):
    """requests/s, p50/p90/p99 and max latency (ms), requests, non-2xx answers and socket
    errors of the wrk output in `path`; a missing figure is NaN (latency) or 0."""
    text = open(path).read()

    def latency(label):
        match = re.search(rf"\s{label}%\s+([\d.]+)(us|ms|s)", text)
        return to_ms(*match.groups()) if match else float("nan")

    rate = re.search(r"Requests/sec:\s+([\d.]+)", text)
    worst = re.search(r"Latency\s+\S+\s+\S+\s+([\d.]+)(us|ms|s)", text)
    requests = re.search(r"(\d+) requests in", text)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    errors = re.search(r"Socket errors: (.*)", text)
    return {
        "rps": float(rate.group(1)) if rate else 0.0,
        "p50": latency(50), "p90": latency(90), "p99": latency(99),
        "max": to_ms(*worst.groups()) if worst else float("nan"),
        "requests": int(requests.group(1)) if requests else 0,
        "bad": int(non2xx.group(1)) if non2xx else 0, "socket": errors.group(1) if errors else "",
    }
