#!/usr/bin/env python3
"""A reverse proxy in front of insightd that tampers with answers, for the clients' conformance
scenario ("tampered-answer"): every 200 of POST /v1/evaluations reaches the client with its
first `"high"` turned into `"unknown"` (Content-Length adjusted, Insight-Receipt kept), the
downgrade an attacker between a bank and insightd would want. Everything else passes unchanged.

Usage: tamper_proxy.py UPSTREAM_URL       prints "listening PORT" once it listens on 127.0.0.1
"""
import http.client
import http.server
import sys
import urllib.parse

UPSTREAM = urllib.parse.urlsplit(sys.argv[1])
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
              "proxy-authorization", "proxy-authenticate", "content-length"}


class TamperingProxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def forward(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        upstream = http.client.HTTPConnection(UPSTREAM.hostname, UPSTREAM.port, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP | {"host"}}
        upstream.request(self.command, self.path, body=body, headers=headers)
        answer = upstream.getresponse()
        data = answer.read()
        upstream.close()
        if self.command == "POST" and self.path == "/v1/evaluations" and answer.status == 200:
            data = data.replace(b'"high"', b'"unknown"', 1)
        self.send_response(answer.status, answer.reason)
        for key, value in answer.getheaders():
            if key.lower() not in HOP_BY_HOP:
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
