"""A webhook receiver for the tests: verifies every delivery with the `standardwebhooks`
package from PyPI (an implementation independent of Baton's), answers 500 to the first
--fail verified deliveries and 200 after (with --hang: never answers; with --refuse TEXT: 403
to every delivery whose raw body contains TEXT, as a WAF would), and appends one JSON
line per request to --log: {"verified", "status", "id", "type", "body"} (status 0: not
answered) or {"verified": false, "error"}.

Run with the interpreter of the virtual environment scripts/webhook-receiver-venv makes.
"""
import argparse
import json
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--secret-file", required=True)
parser.add_argument("--log", required=True)
parser.add_argument("--fail", type=int, default=0)
parser.add_argument("--hang", action="store_true", help="never answer (logged with status 0)")
parser.add_argument("--refuse", help="answer 403 to every delivery whose raw body contains this text (a WAF)")
parser.add_argument("--tls-cert", help="serve HTTPS with this certificate (PEM; --tls-key its key)")
parser.add_argument("--tls-key")
args = parser.parse_args()

webhook = Webhook(open(args.secret_file).read().strip())
lock = threading.Lock()
failures_left = [args.fail]


def record(entry):
    with lock, open(args.log, "a") as log:
        log.write(json.dumps(entry, sort_keys=True) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            payload = webhook.verify(body, dict(self.headers.items()))
        except WebhookVerificationError as error:
            record({"verified": False, "error": str(error)})
            self.answer(400)
            return
        if args.hang:
            record({"verified": True, "status": 0, "id": self.headers["webhook-id"], "type": payload["type"], "body": payload})
            threading.Event().wait()
        with lock:
            if args.refuse and args.refuse.encode() in body:
                status = 403
            else:
                status = 500 if failures_left[0] > 0 else 200
                failures_left[0] -= 1
        record({"verified": True, "status": status, "id": self.headers["webhook-id"], "type": payload["type"],
                "body": payload})
        self.answer(status)

    def answer(self, status):
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_):
        pass


class Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # Baton closes a connection whose attempt it gave up on (its timeout, its shutdown):
        # some tests do exactly that, so a reset is no error here. Anything else is printed.
        if isinstance(sys.exc_info()[1], (ConnectionError, ssl.SSLError)):
            return
        super().handle_error(request, client_address)


server = Server(("127.0.0.1", args.port), Handler)
if args.tls_cert:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.tls_cert, args.tls_key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
print("listening", flush=True)
server.serve_forever()
