#!/usr/bin/env python3
"""What other clients see while slow clients hold connections open (issue 45, item 1).

A measurement, not a test (the test is SlowClientTests in `make test`): it starts BIN_DIR's
insightd with its default connection settings on a temporary state directory, creates a
production caller with insightctl, then for SECONDS runs the attack and, beside it, three
clients that each send a request on a new connection every 50 ms and wait up to 10 s for the
answer:

- `GET /livez` and a production evaluation from 127.0.0.100 (an address the attack does not use);
- `GET /livez` from 127.0.0.1 (one of the attack's own addresses).

The attack: ADDRESSES loopback source addresses (127.0.0.1, 127.0.0.2, ...) x SOCKETS sockets
each, no key, every socket sending a request head that never ends: `line` mode sends one header
line every 0.5 s, `byte` mode one byte a second; a socket that is closed (or refused) connects
again at once. It prints, per client, the requests answered and refused (closed or reset
without an answer, or no answer within 10 s) and the latencies of the answered ones, then what
the attack saw (connections opened, closed by the server, answers received).

Loopback only; it stops itself after SECONDS (and kills the daemon it started).

Usage: bench/slowloris_probe.py BIN_DIR [line|byte] [SECONDS] [ADDRESSES] [SOCKETS]
       (e.g. bench/slowloris_probe.py .build/release line 18 4 256)
"""
import json
import os
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

BIN = sys.argv[1] if len(sys.argv) > 1 else sys.exit(__doc__)
MODE = sys.argv[2] if len(sys.argv) > 2 else "line"
SECONDS = float(sys.argv[3]) if len(sys.argv) > 3 else 18.0
ADDRESSES = int(sys.argv[4]) if len(sys.argv) > 4 else 4
SOCKETS = int(sys.argv[5]) if len(sys.argv) > 5 else 256
if MODE not in ("line", "byte"):
    sys.exit(__doc__)
ANSWER_WAIT = 10.0
CLIENT_PAUSE = 0.05
HEAD = b"GET /livez HTTP/1.1\r\nHost: localhost\r\n"
BYTE_PREFIX = HEAD + b"X-Slow: "


def request(method, path, key=None, body=None):
    head = f"{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
    if key:
        head += f"Authorization: Bearer {key}\r\n"
    if body is not None:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + (body or b"")


def exchange(port, data, source):
    """Sends one request on a new connection from `source`; the status, or -1 when refused."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(ANSWER_WAIT)
            s.bind((source, 0))
            s.connect(("127.0.0.1", port))
            s.sendall(data)
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
            return int(answer.split(b" ", 2)[1])
    except (OSError, ValueError, IndexError):
        return -1


def percentile(sorted_values, share):
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * share))]


def summary(samples):
    answered = sorted(seconds * 1000 for seconds, status in samples if status > 0)
    refused = sum(1 for _, status in samples if status <= 0)
    statuses = sorted({status for _, status in samples if status > 0})
    text = f"{len(answered)} answered, {refused} refused"
    if answered:
        text += (f"; p50 {percentile(answered, 0.5):.1f} ms, p99 {percentile(answered, 0.99):.1f} ms, "
                 f"max {answered[-1]:.1f} ms; statuses {statuses}")
    return text


class Attack:
    """ADDRESSES x SOCKETS slow sockets on one selector thread, each reconnecting when closed."""

    def __init__(self, port, deadline):
        self.port, self.deadline = port, deadline
        self.selector = selectors.DefaultSelector()
        self.opened = self.closed = self.answers = 0
        self.period = 0.5 if MODE == "line" else 1.0

    def connect(self, slot):
        source = f"127.0.0.{slot // SOCKETS + 1}"
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.bind((source, 0))
        try:
            s.connect(("127.0.0.1", self.port))
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            return None
        self.opened += 1
        self.selector.register(s, selectors.EVENT_READ, slot)
        # (socket, pieces of the endless head sent so far, when the next piece is due: at once)
        return [s, 0, time.monotonic()]

    def piece(self, sent):
        """The next piece of the endless head: a header line, or one byte of it."""
        if MODE == "line":
            return HEAD if sent == 0 else f"X-Slow-{sent}: {'a' * 8}\r\n".encode()
        return BYTE_PREFIX[sent:sent + 1] if sent < len(BYTE_PREFIX) else b"a"

    def drop(self, slots, slot):
        s = slots[slot][0]
        self.selector.unregister(s)
        s.close()
        self.closed += 1
        slots[slot] = self.connect(slot)

    def run(self):
        slots = [self.connect(slot) for slot in range(ADDRESSES * SOCKETS)]
        while time.monotonic() < self.deadline:
            for key, _ in self.selector.select(timeout=0.05):
                slot = key.data
                try:
                    data = key.fileobj.recv(65536)
                except OSError:
                    data = b""
                if data:
                    self.answers += 1  # a 408 (or another answer) before the close
                else:
                    self.drop(slots, slot)
            now = time.monotonic()
            for slot, entry in enumerate(slots):
                if entry is None:
                    slots[slot] = self.connect(slot)
                    continue
                s, sent, due = entry
                if due > now:
                    continue
                data = self.piece(sent)
                try:
                    s.send(data)
                    entry[1] = sent + 1
                    entry[2] = now + self.period
                except BlockingIOError:
                    entry[2] = now + 0.05  # not connected yet
                except OSError:
                    self.drop(slots, slot)
        for entry in slots:
            if entry:
                entry[0].close()


def main():
    work = tempfile.mkdtemp(prefix="insightd-slowloris-")
    env = dict(os.environ, INSIGHTD_STATE_DIR=work + "/state", INSIGHTD_LISTEN="127.0.0.1:0",
               INSIGHTD_DEVICE_LIMIT_PER_HOUR="1000000")
    log_path = work + "/insightd.log"
    daemon = None
    try:
        subprocess.run([BIN + "/insightctl", "init"], env=env, check=True, capture_output=True)
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
        out = subprocess.run([BIN + "/insightctl", "callers", "create", "--name", "production", "--roles", "evaluate",
                              "--environment", "production", "--rate", "100000", "--burst", "100000", "--json"],
                             env=env, check=True, capture_output=True, text=True).stdout
        key = json.loads(out)["apiKey"]
        livez = request("GET", "/livez")
        body = ('{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],'
                '"subject":{"account":"acct-live","device":"dev-live"}}').encode()
        evaluation = request("POST", "/v1/evaluations", key, body)
        for _ in range(100):  # a new key is seen within INSIGHTD_CREDENTIAL_CACHE
            if exchange(port, evaluation, "127.0.0.100") == 200:
                break
            time.sleep(0.1)
        else:
            sys.exit("the production evaluation is not answered 200 before the attack")

        deadline = time.monotonic() + SECONDS
        attack = Attack(port, deadline)
        attacker = threading.Thread(target=attack.run)
        attacker.start()
        time.sleep(min(2.0, SECONDS / 4))  # the attack's sockets are open and sending
        clients = [("GET /livez from 127.0.0.100", livez, "127.0.0.100", []),
                   ("production evaluation from 127.0.0.100", evaluation, "127.0.0.100", []),
                   ("GET /livez from 127.0.0.1 (an attacking address)", livez, "127.0.0.1", [])]

        def client(data, source, samples):
            while time.monotonic() < deadline:
                started = time.monotonic()
                status = exchange(port, data, source)
                samples.append((time.monotonic() - started, status))
                time.sleep(CLIENT_PAUSE)

        threads = [threading.Thread(target=client, args=(data, source, samples)) for _, data, source, samples in clients]
        for thread in threads:
            thread.start()
        for thread in threads + [attacker]:
            thread.join()
        print(f"attack ({MODE}, {ADDRESSES} addresses x {SOCKETS} sockets, {SECONDS:g} s): "
              f"{attack.opened} connections opened, {attack.closed} closed by the server, "
              f"{attack.answers} answers read")
        for name, _, _, samples in clients:
            print(f"{name}: {summary(samples)}")
    finally:
        if daemon:
            daemon.terminate()
            daemon.wait()
        shutil.rmtree(work, ignore_errors=True)


main()
