#!/usr/bin/env python3
"""A conversion webhook for dc_conversion.bats that really converts.

example.com Hook: v1 has spec.color, v2 has spec.colour; every other
field travels as is. Serves HTTPS (HTTP/1.1) on 127.0.0.1 at a port the
kernel picks, written to PORTFILE once it listens. The file MODEFILE,
read on every request, breaks it on purpose: "bad-uid", "rename",
"drop", "fail", "bad-labels" (an invalid label key on every object) or
"slow" (answers after 5 s); anything else converts. Each request's Host
header is written to MODEFILE.host and the TLS server name (SNI) the
client sent to MODEFILE.sni.

usage: convwebhook.py CERT KEY PORTFILE MODEFILE
"""
import json
import os
import ssl
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CERT, KEY, PORTFILE, MODEFILE = sys.argv[1:5]


def mode():
    try:
        with open(MODEFILE) as f:
            return f.read().strip()
    except OSError:
        return ""


def record(suffix, text):
    with open(MODEFILE + suffix + ".tmp", "w") as f:
        f.write(text + "\n")
    os.rename(MODEFILE + suffix + ".tmp", MODEFILE + suffix)


def on_sni(sock, name, ctx):
    record(".sni", name or "")


def convert(review, m):
    req = review["request"]
    desired = req["desiredAPIVersion"]
    to_v2 = desired == "example.com/v2"
    out = []
    for obj in req["objects"]:
        obj = dict(obj)
        obj["apiVersion"] = desired
        spec = dict(obj.get("spec") or {})
        src, dst = ("color", "colour") if to_v2 else ("colour", "color")
        if src in spec:
            spec[dst] = spec.pop(src)
        if "spec" in obj:
            obj["spec"] = spec
        if m == "rename":
            obj["metadata"] = dict(obj["metadata"], name="other")
        if m == "bad-labels":
            labels = dict(obj["metadata"].get("labels") or {}, **{"bad key": "x"})
            obj["metadata"] = dict(obj["metadata"], labels=labels)
        out.append(obj)
    if m == "drop":
        out = out[1:]
    resp = {"uid": "bad" if m == "bad-uid" else req["uid"], "convertedObjects": out,
            "result": {"status": "Success"}}
    if m == "fail":
        resp["result"] = {"status": "Failure", "message": "colour: not a colour"}
    return {"apiVersion": review["apiVersion"], "kind": "ConversionReview", "response": resp}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        record(".host", self.headers.get("Host", ""))
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        m = mode()
        if m == "slow":
            time.sleep(5)
        try:
            answer = json.dumps(convert(json.loads(body), m)).encode()
            code = 200
        except (ValueError, KeyError, TypeError) as e:
            answer = str(e).encode()
            code = 400
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


def main():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(CERT, KEY)
    ctx.sni_callback = on_sni
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    with open(PORTFILE + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(PORTFILE + ".tmp", PORTFILE)
    srv.serve_forever()


if __name__ == "__main__":
    main()
