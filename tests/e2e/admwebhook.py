#!/usr/bin/env python3
"""An admission webhook for dc_admission.bats.

Serves HTTPS (HTTP/1.1) on 127.0.0.1 at a port the kernel picks, written
to PORTFILE once it listens. Each AdmissionReview it gets is written to
DIR/<path>.json (the last one per path). By path:

  /mutate    allows, with a JSON patch that sets the annotation
             example.com/by to the requesting user, and a warning
  /validate  denies (403, "deny is not allowed") an object with data.deny,
             and a DELETE of one with data.keep (no message); else allows
  /slow      answers after 3 s (longer than the webhooks' timeoutSeconds)

usage: admwebhook.py CERT KEY PORTFILE DIR
"""
import base64
import json
import os
import ssl
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CERT, KEY, PORTFILE, DIR = sys.argv[1:5]


def record(name, review):
    path = os.path.join(DIR, name + ".json")
    with open(path + ".tmp", "w") as f:
        json.dump(review, f)
    os.rename(path + ".tmp", path)


def answer(path, review):
    req = review["request"]
    resp = {"uid": req["uid"], "allowed": True}
    obj = req.get("object") or {}
    old = req.get("oldObject") or {}
    if path == "mutate":
        user = req["userInfo"]["username"]
        if (obj.get("metadata") or {}).get("annotations") is None:
            ops = [{"op": "add", "path": "/metadata/annotations",
                    "value": {"example.com/by": user}}]
        else:
            ops = [{"op": "add", "path": "/metadata/annotations/example.com~1by",
                    "value": user}]
        resp["patchType"] = "JSONPatch"
        resp["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
        resp["warnings"] = ["mutated by the test webhook"]
    elif path == "validate":
        if "deny" in (obj.get("data") or {}):
            resp = {"uid": req["uid"], "allowed": False,
                    "status": {"code": 403, "message": "deny is not allowed"}}
        elif req["operation"] == "DELETE" and "keep" in (old.get("data") or {}):
            resp = {"uid": req["uid"], "allowed": False}
    return {"apiVersion": review["apiVersion"], "kind": "AdmissionReview", "response": resp}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        path = self.path.split("?")[0].strip("/")
        try:
            review = json.loads(body)
            record(path, review)
            if path == "slow":
                time.sleep(3)
            out = json.dumps(answer(path, review)).encode()
            code = 200
        except (ValueError, KeyError, TypeError) as e:
            out = str(e).encode()
            code = 400
        try:
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
        except OSError:
            pass  # the caller gave up (timeoutSeconds)

    def log_message(self, *args):
        pass


def main():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(CERT, KEY)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    with open(PORTFILE + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(PORTFILE + ".tmp", PORTFILE)
    srv.serve_forever()


if __name__ == "__main__":
    main()
