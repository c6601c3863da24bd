#!/usr/bin/env python3
"""How long other callers wait while one caller sends the worst bodies it can build.

A measurement, not a test (the test is HostileInputTests in `make test`): it starts BIN_DIR's
insightd on a temporary state directory, creates a sandbox caller (the attacker) and a production
caller with insightctl, then for SECONDS has 4 connections send the attacker's worst bodies (each
up to the 1 MiB body limit, in turn to every endpoint that reads a body) while two more clients
time `GET /livez` and a production evaluation, each every 20 ms. It prints the attack's answers
and the latencies the other two saw.

Usage: bench/hostile-input.py BIN_DIR [SECONDS]     (e.g. bench/hostile-input.py .build/release 10)
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

BIN = sys.argv[1] if len(sys.argv) > 1 else sys.exit(__doc__)
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 10.0
MAX_BODY = (1 << 20) - 64


def filled(prefix, unit, suffix, limit=MAX_BODY):
    """prefix, then unit(0), unit(1), ... joined by commas while it fits in limit bytes, then suffix."""
    parts, size, i = [prefix], len(prefix) + len(suffix), 0
    while True:
        item = ("," if i else "") + unit(i)
        if size + len(item) > limit:
            break
        parts.append(item)
        size += len(item)
        i += 1
    parts.append(suffix)
    return "".join(parts).encode()


INSIGHTS = '[{"type":"isLikelyBeingCoached","schemaVersion":1}]'
ROOT = '{"operationCategory":"payment","insights":' + INSIGHTS + ","
FULL_OBJECT = "{" + ",".join(f'"m{i}":0' for i in range(256)) + "}"
DEEP = "[" * 30 + "0" + "]" * 30
BODIES = [  # the shapes of HostileInputTests.worstBodies
    ("40,000-member object", filled("{", lambda i: f'"k{i}":0', "}", 430_000)),
    ("40,000-member label", filled('{"labels":[{', lambda i: f'"k{i}":0', "}]}", 430_000)),
    ("objects of 256 members", filled(ROOT + '"x":[', lambda i: FULL_OBJECT, "]}")),
    ("many tiny values", filled(ROOT + '"x":[', lambda i: "0", "]}")),
    ("deep nesting, repeated", filled(ROOT + '"x":[', lambda i: DEEP, "]}")),
    ("long escapes", filled(ROOT + '"requestId":"', lambda i: "\\u00e9\\ud83d\\ude00", '"}')),
    ("long number", filled(ROOT + '"x":0.3', lambda i: "3333333333", "}")),
]
ENDPOINTS = [
    ("POST", "/v1/evaluations", ""),
    ("POST", "/v1/labels", "Idempotency-Key: hostile-1\r\n"),
    ("PUT", "/v1/authorization", ""),
    ("POST", "/v1/evaluations/0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a20/consumption", ""),
]


def request(method, path, key=None, body=None, headers=""):
    head = f"{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n{headers}"
    if key:
        head += f"Authorization: Bearer {key}\r\n"
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + (body or b"")


def exchange(port, data):
    """Sends one request on a new connection; the status, or -1."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
            s.sendall(data)
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
            return int(answer.split(b" ", 2)[1])
    except (OSError, ValueError, IndexError):
        return -1


def summary(samples):
    ms = sorted(seconds * 1000 for seconds, _ in samples)
    statuses = sorted({status for _, status in samples})
    return (f"n={len(ms)} median {ms[len(ms) // 2]:.1f} ms, p99 {ms[min(len(ms) - 1, int(len(ms) * 0.99))]:.1f} ms, "
            f"max {ms[-1]:.1f} ms, statuses {statuses}")


def main():
    work = tempfile.mkdtemp(prefix="insightd-hostile-")
    env = dict(os.environ, INSIGHTD_STATE_DIR=work + "/state", INSIGHTD_LISTEN="127.0.0.1:0",
               INSIGHTD_DEVICE_LIMIT_PER_HOUR="1000000")
    log_path = work + "/insightd.log"
    daemon = None
    try:
        subprocess.run([BIN + "/insightctl", "migrate"], env=env, check=True, capture_output=True)
        with open(log_path, "w") as log:
            daemon = subprocess.Popen([BIN + "/insightd"], env=env, stdout=log, stderr=log)
        port = None
        for _ in range(200):
            time.sleep(0.05)
            with open(log_path) as log:
                for line in log:
                    if '"insightd ready"' in line:
                        port = int(json.loads(line)["listen"].rsplit(":", 1)[1])
            if port:
                break
        if not port:
            sys.exit("insightd did not become ready; see " + log_path)

        def caller(environment, roles):
            out = subprocess.run([BIN + "/insightctl", "callers", "create", "--name", environment, "--roles", roles,
                                  "--environment", environment, "--rate", "100000", "--burst", "100000", "--json"],
                                 env=env, check=True, capture_output=True, text=True).stdout
            return json.loads(out)["apiKey"]

        attacker, production = caller("sandbox", "evaluate,labels"), caller("production", "evaluate")
        requests = []
        for i, (name, body) in enumerate(BODIES):
            for e in range(len(ENDPOINTS)):
                method, path, headers = ENDPOINTS[(i + e) % len(ENDPOINTS)]
                requests.append((f"{name} to {method} {path}", request(method, path, attacker, body, headers)))
        livez = request("GET", "/livez")
        evaluation = request("POST", "/v1/evaluations", production,
                             (ROOT + '"subject":{"account":"acct-live","device":"dev-live"}}').encode())
        for _ in range(100):  # new keys are seen within INSIGHTD_CREDENTIAL_CACHE
            if exchange(port, evaluation) == 200:
                break
            time.sleep(0.1)

        deadline = time.monotonic() + SECONDS
        attacks, lock = [], threading.Lock()

        def attack(k):
            n = k * len(requests) // 4
            while time.monotonic() < deadline:
                name, data = requests[n % len(requests)]
                n += 1
                started = time.monotonic()
                status = exchange(port, data)
                with lock:
                    attacks.append((name, status, time.monotonic() - started))

        def probe(samples, data):
            while time.monotonic() < deadline:
                started = time.monotonic()
                status = exchange(port, data)
                samples.append((time.monotonic() - started, status))
                time.sleep(0.02)

        livez_samples, evaluation_samples = [], []
        threads = [threading.Thread(target=attack, args=(k,)) for k in range(4)]
        threads += [threading.Thread(target=probe, args=(livez_samples, livez)),
                    threading.Thread(target=probe, args=(evaluation_samples, evaluation))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        slowest = max(attacks, key=lambda a: a[2])
        print(f"attack: {len(attacks)} requests in {SECONDS:g} s, statuses {sorted({a[1] for a in attacks})}, "
              f"slowest {slowest[2] * 1000:.1f} ms ({slowest[0]})")
        print("GET /livez:", summary(livez_samples))
        print("production evaluation:", summary(evaluation_samples))
    finally:
        if daemon:
            daemon.terminate()
            daemon.wait()
        shutil.rmtree(work, ignore_errors=True)


main()
