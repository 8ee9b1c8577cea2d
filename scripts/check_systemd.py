"""The client side of scripts/check-systemd: a user of the packaged service inside the
container, run in the container's network namespace (`nsenter -n`) with the host's Python.

  answer --password P -- COMMAND...   runs COMMAND (a documented `systemd-run --pty ...` line),
                                      typing P at each password prompt, as the operator would
  ready                               Baton answers /readyz on 127.0.0.1:8080 with 200
  flow --ca FILE --state FILE         a login, a verify and an exchange through nginx (TLS), then
                                      a reuse: the chain is revoked; the live tokens are saved
  sessions --ca FILE --state FILE --users U1,U2 --devices N
                                      logs each user in on N devices and exchanges once; saves them
  check-sessions --ca FILE --state FILE
                                      every saved session still verifies and exchanges (after an upgrade)
  exchange-loop --ca FILE --stop FILE --report FILE
                                      one session exchanging through nginx until FILE exists; reports
                                      exchanges, refusals (any is a logout) and the token kinds seen
  refused --ca FILE --state FILE NAME STATUS ERROR
                                      the saved token NAME is refused with STATUS and ERROR
  introspect --secret-file FILE --state FILE NAME
                                      RFC 7662 introspection as client `kong`: NAME's token is active

Each command prints what it did and exits non-zero, naming what differed, when an answer is
not the documented one. Standard library only.
"""
import argparse
import base64
import http.client
import json
import os
import pty
import select
import socket
import ssl
import subprocess
import sys
import time
import urllib.parse

HOST = "auth.example.org"  # the host name docs/deploy.md's trial certificate and site use
PASSWORD = "correct horse battery"


class Failure(Exception):
    pass


class GatewayConnection(http.client.HTTPSConnection):
    """HTTPS to nginx on 127.0.0.1:443 with the site's name for SNI and certificate checks."""

    def connect(self):
        raw = socket.create_connection(("127.0.0.1", 443), timeout=10)
        self.sock = self._context.wrap_socket(raw, server_hostname=self.host)


def request(args, method, path, token=None, body=None, direct=False, headers=None):
    """One request through nginx (or, direct, to Baton on 127.0.0.1:8080); (status, json)."""
    if direct:
        connection = http.client.HTTPConnection("127.0.0.1", 8080, timeout=10)
    else:
        connection = GatewayConnection(HOST, 443, context=ssl.create_default_context(cafile=args.ca), timeout=10)
    sent = dict(headers or {})
    data = None
    if token:
        sent["Authorization"] = f"Bearer {token}"
    if body is not None:
        if isinstance(body, dict):
            data = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        else:
            data = body.encode()
            sent["Content-Type"] = "application/x-www-form-urlencoded"
    connection.request(method, path, body=data, headers=sent)
    answer = connection.getresponse()
    text = answer.read().decode()
    connection.close()
    try:
        parsed = json.loads(text) if text else {}
    except ValueError:
        parsed = {"unparsed": text}
    return answer.status, parsed


def expect(condition, message):
    if not condition:
        raise Failure(message)


def login(args, username, device):
    status, body = request(args, "POST", "/v1/login", body={
        "username": username, "password": PASSWORD, "device_id": device, "device_class": "mobile"})
    expect(status == 200 and body.get("token"), f"login of {username} on {device}: {status} {body}")
    return body["token"]


def exchange(args, token, device):
    status, body = request(args, "POST", "/v1/exchange", token=token, headers={"X-Device-Id": device})
    expect(status == 200 and body.get("token"), f"exchange on {device}: {status} {body}")
    return body["token"]


def verify(args, token, what):
    status, body = request(args, "GET", "/v1/verify", token=token)
    expect(status == 200 and body.get("username"), f"verify of {what}: {status} {body}")
    return body


def load(path):
    with open(path) as file:
        return json.load(file)


def save(path, state):
    with open(path, "w") as file:
        json.dump(state, file, indent=1, sort_keys=True)


def answer_prompts(args):
    """Runs the command on a pseudo-terminal and types the password at each prompt, after the
    prompt is shown: the admin CLI turns echo off with TCSAFLUSH, which drops input typed ahead."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(args.command[0], args.command)
    seen = b""
    answered = 0
    while True:
        ready, _, _ = select.select([fd], [], [], 60)
        if not ready:
            os.kill(pid, 9)
            raise Failure(f"no output for 60 s from {args.command}")
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        sys.stdout.write(chunk.decode(errors="replace"))
        sys.stdout.flush()
        seen += chunk
        if seen.lower().count(b"password") > answered:
            answered += 1
            time.sleep(0.3)
            os.write(fd, args.password.encode() + b"\n")
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def ready(args):
    """Exits 0 when Baton answers /readyz with 200 (it takes writes), quietly otherwise."""
    try:
        status, _ = request(args, "GET", "/readyz", direct=True)
    except OSError:
        sys.exit(1)
    sys.exit(0 if status == 200 else 1)


def flow(args):
    token = login(args, "alice", "phone-1")
    identity = verify(args, token, "the login's token")
    expect(identity["username"] == "alice", f"verify named {identity}")
    successor = exchange(args, token, "phone-1")
    verify(args, successor, "the successor")
    status, body = request(args, "GET", "/v1/verify", token=token)
    expect(status == 401 and body.get("error") == "token_superseded", f"the exchanged token: {status} {body}")
    status, body = request(args, "POST", "/v1/exchange", token=token)
    expect(status == 401 and body.get("error") == "token_reused", f"the reuse: {status} {body}")
    status, body = request(args, "GET", "/v1/verify", token=successor)
    expect(status == 401 and body.get("error") == "chain_revoked" and body.get("reason") == "reuse_detected",
           f"the successor after the reuse: {status} {body}")
    live = login(args, "alice", "phone-2")
    save(args.state, {"alice": live})
    print("flow: login, verify, exchange and reuse detection through nginx as documented")


def sessions(args):
    state = {}
    for user in args.users.split(","):
        for device in range(args.devices):
            name = f"{user}/device-{device}"
            token = login(args, user, f"device-{device}")
            state[name] = exchange(args, token, f"device-{device}")
    save(args.state, state)
    print(f"sessions: {len(state)} live sessions saved")


def check_sessions(args):
    state = load(args.state)
    for name, token in state.items():
        verify(args, token, name)
        state[name] = exchange(args, token, name.split("/")[1])
        verify(args, state[name], f"{name}'s successor")
    save(args.state, state)
    print(f"check-sessions: all {len(state)} sessions verify and exchange")


def exchange_loop(args):
    token = login(args, "alice", "rotation-phone")
    exchanges = 0
    kinds = set()
    refusals = []
    while not os.path.exists(args.stop):
        status, body = request(args, "POST", "/v1/exchange", token=token, headers={"X-Device-Id": "rotation-phone"})
        if status == 200:
            token = body["token"]
            exchanges += 1
            kinds.add(token[:4])
        else:
            refusals.append({"status": status, "body": body})
            if status == 401:
                break
        status, body = request(args, "GET", "/v1/verify", token=token)
        if status != 200:
            refusals.append({"status": status, "body": body, "verify": True})
            break
        with open(args.report + ".tmp", "w") as file:
            json.dump({"exchanges": exchanges, "kinds": sorted(kinds), "refusals": refusals}, file)
        os.replace(args.report + ".tmp", args.report)
        time.sleep(0.1)
    with open(args.report, "w") as file:
        json.dump({"exchanges": exchanges, "kinds": sorted(kinds), "refusals": refusals, "done": True}, file)
    expect(not refusals, f"the exchanging client was refused: {refusals}")
    print(f"exchange-loop: {exchanges} exchanges, token kinds {sorted(kinds)}, 0 refusals")


def refused(args):
    token = load(args.state)[args.name]
    status, body = request(args, "GET", "/v1/verify", token=token)
    expect(status == args.status and body.get("error") == args.error,
           f"{args.name}'s token: expected {args.status} {args.error}, got {status} {body}")
    print(f"refused: {args.name}'s token answers {status} {args.error}")


def introspect(args):
    token = load(args.state)[args.name]
    secret = open(args.secret_file).read().strip()
    # RFC 6749 §2.3.1: the id and secret are form-urlencoded before Basic's base64 ('+' in a base64 secret).
    basic = base64.b64encode(f"kong:{urllib.parse.quote(secret, safe='')}".encode()).decode()
    status, body = request(args, "POST", "/v1/introspect", body=f"token={token}", direct=True,
                           headers={"Authorization": f"Basic {basic}"})
    expect(status == 200 and body.get("active") is True and body.get("username") == "alice",
           f"introspection as kong: {status} {body}")
    status, body = request(args, "POST", "/v1/introspect", body=f"token={token}", direct=True,
                           headers={"Authorization": "Basic " + base64.b64encode(b"kong:wrong").decode()})
    expect(status == 401 and body.get("error") == "invalid_client", f"a wrong secret: {status} {body}")
    print("introspect: client kong with the credential's secret sees the token active; a wrong secret is refused")


def main():
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command_name", required=True)
    answer = commands.add_parser("answer")
    answer.add_argument("--password", default=PASSWORD)
    answer.add_argument("command", nargs="+")
    for name in ("ready", "flow", "sessions", "check-sessions", "exchange-loop", "refused", "introspect"):
        sub = commands.add_parser(name)
        sub.add_argument("--ca")
        sub.add_argument("--state")
        if name == "sessions":
            sub.add_argument("--users", required=True)
            sub.add_argument("--devices", type=int, default=2)
        if name == "exchange-loop":
            sub.add_argument("--stop", required=True)
            sub.add_argument("--report", required=True)
        if name == "refused":
            sub.add_argument("name")
            sub.add_argument("status", type=int)
            sub.add_argument("error")
        if name == "introspect":
            sub.add_argument("--secret-file", required=True)
            sub.add_argument("name")
    args = parser.parse_args()
    try:
        if args.command_name == "answer":
            sys.exit(answer_prompts(args))
        {"ready": ready, "flow": flow, "sessions": sessions, "check-sessions": check_sessions, "exchange-loop": exchange_loop,
         "refused": refused, "introspect": introspect}[args.command_name](args)
    except (Failure, OSError, http.client.HTTPException) as error:
        print(f"check-systemd: {args.command_name}: {error}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
