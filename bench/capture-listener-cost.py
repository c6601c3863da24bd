"""What the web capture kit's listeners cost per event, in Chromium (docs/performance.md).

    .venv-console/bin/python bench/capture-listener-cost.py      # make test-capture makes the venv

Serves a bare page with the kit (cross-origin isolated, so that performance.now() has its fine
resolution) and opens it in Debian's headless Chromium. Two measures, each with no listener,
with a reference pair of empty listeners where the kit puts its own (what any listener costs),
and with a kit session:

  synthetic  N typed characters, each a beforeinput and an input event dispatched by script on a
             text field (the kit loaded with data-insight-accept-untrusted, so that it does its
             full work); the difference per character is what the listeners add.
  trusted    K characters typed through the browser's input pipeline (CDP Input.dispatchKeyEvent);
             a window capture listener (before the kit's document listeners) and a listener on
             the field (after them) time each input event.

Prints one line per measure; never fails. Figures are only as quiet as the machine.
"""
import http.server
import os
import shutil
import statistics
import sys
import threading

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KIT = open(os.environ.get("CAPTURE_KIT") or os.path.join(ROOT, "capture/web/insight-capture.js"), "rb").read()
PAGE = b"""<!doctype html><meta charset="utf-8"><title>listener cost</title>
<script src="insight-capture.js" data-insight-accept-untrusted></script><input id="field" data-insight-field="payee">"""
MODES = ("none", "empty", "kit")
# What a listener costs before it does anything: a no-op where the kit listens.
START = """
const mode = arguments[arguments.length - 1];
if (mode === 'kit') return InsightCapture.start();
if (mode === 'none') return null;
const nothing = () => {};
const how = {capture: true, passive: true};
for (const type of ['beforeinput', 'input']) document.addEventListener(type, nothing, how);
return {finish() { for (const type of ['beforeinput', 'input']) document.removeEventListener(type, nothing, how); }};"""
# N stays under the kit's 4,999 events, so that every character is recorded (none takes the drop path).
N, K, ROUNDS = 4000, 300, 10


class Files(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body, kind = (KIT, "text/javascript") if self.path == "/insight-capture.js" else (PAGE, "text/html")
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Files)
threading.Thread(target=server.serve_forever, daemon=True).start()
options = webdriver.ChromeOptions()
options.binary_location = shutil.which("chromium")
for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
    options.add_argument(argument)
driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)

SYNTHETIC = """
const n = arguments[0];
const field = document.getElementById('field');
field.focus();
const session = (function () {""" + START + """}).apply(null, arguments);
const start = performance.now();
for (let i = 0; i < n; i++) {
  field.dispatchEvent(new InputEvent('beforeinput', {inputType: 'insertText', bubbles: true}));
  field.dispatchEvent(new InputEvent('input', {inputType: 'insertText', bubbles: true}));
}
const elapsed = performance.now() - start;
if (session) session.finish();
field.value = '';
return elapsed * 1000 / n;"""

TIMED = """
window.costs = [];
window.costStart = 0;
window.addEventListener('input', () => { window.costStart = performance.now(); }, true);
document.getElementById('field').addEventListener('input', () => { window.costs.push(performance.now() - window.costStart); });
window.session = (function () {""" + START + """}).apply(null, arguments);
document.getElementById('field').focus();"""

try:
    driver.get(f"http://127.0.0.1:{server.server_port}/")
    synthetic = {mode: [] for mode in MODES}
    for _ in range(ROUNDS):
        for mode in MODES:
            synthetic[mode].append(driver.execute_script(SYNTHETIC, N, mode))
    base, empty, kit = (statistics.median(synthetic[mode]) for mode in MODES)
    print(f"synthetic: {N} characters x {ROUNDS} rounds, us per character (beforeinput + input): {base:.2f} without "
          f"listeners, {empty:.2f} with two empty ones (+{empty - base:.2f}), {kit:.2f} with the kit (+{kit - base:.2f})")
    trusted = {}
    for mode in MODES:
        driver.get(f"http://127.0.0.1:{server.server_port}/")
        driver.execute_script(TIMED, mode)
        isolated = driver.execute_script("return crossOriginIsolated")
        for i in range(K):
            character = "abcdefghij"[i % 10]
            driver.execute_cdp_cmd("Input.dispatchKeyEvent", {"type": "keyDown", "text": character, "key": character})
            driver.execute_cdp_cmd("Input.dispatchKeyEvent", {"type": "keyUp", "key": character})
        costs = driver.execute_script("if (window.session) window.session.finish(); return window.costs")
        trusted[mode] = (statistics.mean(costs) * 1000, statistics.median(costs) * 1000)
    (base, _), (empty, _), (kit, _) = (trusted[mode] for mode in MODES)
    print(f"trusted: {K} keystrokes through CDP (crossOriginIsolated={isolated}), the input event's capture-to-target "
          f"time, mean us: {base:.1f} without listeners, {empty:.1f} with an empty one (+{empty - base:.1f}), "
          f"{kit:.1f} with the kit (+{kit - base:.1f})")
    print(f"chromium: {driver.capabilities.get('browserVersion')}")
finally:
    driver.quit()
    server.shutdown()
