#!/usr/bin/env python3
"""A reverse proxy in front of insightd that tampers with answers, for the clients' conformance
scenario. Everything but the two routes below passes unchanged.

- Tampering (the default; "tampered-answer"): every 200 of POST /v1/evaluations reaches the client
  with its first `"high"` turned into `"unknown"` (Content-Length adjusted, Insight-Receipt kept),
  the downgrade an attacker between a bank and insightd would want. The receipt no longer proves
  the body, so a verifying client refuses it.
- Re-keying (`--rekey`; "rekeyed-…"): the attacker who also holds a key of their own. GET
  /v1/signing-keys answers a JWKS of one Ed25519 key the proxy made at start, and every 200 of
  POST /v1/evaluations is downgraded (`"high"` to `"unknown"`, `"confirmOutOfBand"` to
  `"proceed"`) and carries a new Insight-Receipt: a tree of that one answer whose head — the
  daemon's head payload with its own instance, sequence, size, root and previous, every other
  member kept — the proxy's key signs. The forgery verifies against the proxy's JWKS (a client
  that trusts the key set of the URL it evaluates against accepts it); only a client that pins
  insightd's keys refuses it (docs/api.md, "Receipts").

Usage: tamper_proxy.py [--rekey] UPSTREAM_URL    prints "listening PORT" once it listens on 127.0.0.1
"""
import base64
import hashlib
import http.client
import http.server
import json
import sys
import threading
import urllib.parse

REKEY = "--rekey" in sys.argv[1:]
UPSTREAM = urllib.parse.urlsplit([arg for arg in sys.argv[1:] if arg != "--rekey"][0])
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
              "proxy-authorization", "proxy-authenticate", "content-length"}


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Rekeyer:
    """The proxy's own key, its JWKS, and the chain of heads it signs (an instance of its own, so
    that its heads never claim a place in the daemon's chains)."""

    def __init__(self):
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
        self.key = Ed25519PrivateKey.generate()
        x = b64url(self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))
        self.kid = b64url(hashlib.sha256(('{"crv":"Ed25519","kty":"OKP","x":"%s"}' % x).encode()).digest())
        self.jwks = json.dumps({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": x, "kid": self.kid,
                                          "use": "sig", "alg": "EdDSA"}]}, separators=(",", ":")).encode()
        self.lock = threading.Lock()
        self.sequence, self.previous, self.time = 0, None, 0

    def resign(self, body, receipt):
        """The downgraded body and an Insight-Receipt for it that the proxy's key signs."""
        body = body.replace(b'"high"', b'"unknown"', 1).replace(b'"confirmOutOfBand"', b'"proceed"', 1)
        real_head = receipt.split('head="', 1)[1].split('"', 1)[0]
        payload = json.loads(b64url_decode(real_head.split(".")[1]))
        header = b64url(json.dumps({"alg": "EdDSA", "kid": self.kid}, separators=(",", ":")).encode())
        with self.lock:
            self.time = max(self.time, payload["time"])
            payload.update(instance="rekeying-proxy", sequence=self.sequence, size=1,
                           root=b64url(hashlib.sha256(b"\x00" + body).digest()), previous=self.previous,
                           time=self.time)
            signing_input = header + "." + b64url(json.dumps(payload, separators=(",", ":")).encode())
            jws = signing_input + "." + b64url(self.key.sign(signing_input.encode()))
            self.sequence += 1
            self.previous = b64url(hashlib.sha256(jws.encode()).digest())
        return body, 'head="%s", index=0, path=()' % jws


REKEYER = Rekeyer() if REKEY else None


class TamperingProxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def forward(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        if REKEYER is not None and self.command == "GET" and self.path.split("?")[0] == "/v1/signing-keys":
            return self.answer(200, "OK", [("Content-Type", "application/json"), ("Cache-Control", "no-store")], REKEYER.jwks)
        upstream = http.client.HTTPConnection(UPSTREAM.hostname, UPSTREAM.port, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP | {"host"}}
        upstream.request(self.command, self.path, body=body, headers=headers)
        answer = upstream.getresponse()
        data = answer.read()
        upstream.close()
        answer_headers = [(k, v) for k, v in answer.getheaders() if k.lower() not in HOP_BY_HOP]
        if self.command == "POST" and self.path == "/v1/evaluations" and answer.status == 200:
            if REKEYER is None:
                data = data.replace(b'"high"', b'"unknown"', 1)
            else:
                data, receipt = REKEYER.resign(data, answer.getheader("Insight-Receipt"))
                answer_headers = [(k, v) for k, v in answer_headers if k.lower() != "insight-receipt"]
                answer_headers.append(("Insight-Receipt", receipt))
        self.answer(answer.status, answer.reason, answer_headers, data)

    def answer(self, status, reason, headers, data):
        self.send_response(status, reason)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = forward

    def log_message(self, format, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), TamperingProxy)
print("listening", server.server_address[1], flush=True)
server.serve_forever()
