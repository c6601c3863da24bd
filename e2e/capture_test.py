"""The web capture kit in a real browser (e2e/capture.sh sets the environment).

Runs `insightd-demo --web` against a live insightd through a recording proxy (every request to
insightd and its answer are kept), and drives the demo's payment page in headless Chromium as
a person would, through the browser's own input pipeline (CDP Input.*, WebDriver clicks) with
real pauses, so that every event the kit sees is trusted:

  1. a fluent genuine payment: steady typing, then Pay: insightd answers `unknown`;
  2. a payment typed in dictated chunks with long hesitations: `medium` or `high`;
  3. a canary typed, deleted, pasted (a trusted Ctrl+V from the clipboard), a spell in another
     tab, IME composition, and what another script on the page does, which the kit must ignore:
     events it fires, text it inserts with execCommand, a session of its own.

Each captured object is checked against what was done (order, counts, gaps within tolerance)
and against the Interaction schema of openapi/openapi.json; the demo must forward it unchanged.
The canary must appear in no captured object, no request to the demo or to insightd, no log and
no file of insightd's state directory.
"""
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jsonschema
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

INSIGHTD = os.environ["CAPTURE_INSIGHTD_URL"]
KEY = os.environ["CAPTURE_KEY"]
DEMO = os.environ["CAPTURE_DEMO"]
STATE = os.environ["CAPTURE_STATE"]
LOGS = os.environ["CAPTURE_LOGS"].split(":")
OPENAPI = os.environ["CAPTURE_OPENAPI"]
WORK = os.environ["CAPTURE_WORK"]
CANARY = "qz7Canary4k9w"
# Any 6 consecutive characters of the canary betray it (the payee field keeps only its first 11
# after two Backspaces; the reference field holds it whole after the paste).
PIECES = [CANARY[i:i + 6] for i in range(len(CANARY) - 5)]


def leaks(data):
    """Whether text or bytes contain a piece of the canary."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return any(piece in text for piece in PIECES)
BEGAN = time.monotonic()
checks = []


def step(text):
    print(f"capture: [{time.monotonic() - BEGAN:5.1f}s] {text}", flush=True)


def check(condition, what, detail=""):
    """An assertion that is also listed at the end (the report names each one that passed)."""
    if not condition:
        raise AssertionError(f"{what}: {detail}" if detail else what)
    checks.append(what)


# ---------------------------------------------------------------- the proxy in front of insightd

class Recorder(BaseHTTPRequestHandler):
    """Forwards each request to insightd and keeps it with the answer."""
    records = []

    def forward(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length", "connection")}
        request = urllib.request.Request(INSIGHTD + self.path, data=body or None, method=self.command, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                status, answer, answer_headers = response.status, response.read(), response.headers.items()
        except urllib.error.HTTPError as error:
            status, answer, answer_headers = error.code, error.read(), error.headers.items()
        Recorder.records.append({"method": self.command, "path": self.path, "body": body, "status": status, "answer": answer})
        self.send_response(status)
        for name, value in answer_headers:
            if name.lower() not in ("content-length", "connection", "transfer-encoding", "date", "server"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    do_GET = do_POST = do_PUT = do_DELETE = forward

    def log_message(self, *args):
        pass


proxy = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
threading.Thread(target=proxy.serve_forever, daemon=True).start()

# ------------------------------------------------------------------------------ the demo backend

demo_log = os.path.join(WORK, "demo.log")
demo = subprocess.Popen([DEMO, "--web", "--listen", "127.0.0.1:0", "--url", f"http://127.0.0.1:{proxy.server_port}"],
                        env={**os.environ, "INSIGHTD_API_KEY": KEY}, stdout=open(demo_log, "w"), stderr=subprocess.STDOUT)
PAGE = None
for _ in range(100):
    text = open(demo_log).read()
    if "the payment page is at " in text:
        PAGE = text.split("the payment page is at ")[1].split()[0]
        break
    if demo.poll() is not None:
        break
    time.sleep(0.1)
if PAGE is None:
    demo.kill()
    sys.exit(f"capture: insightd-demo --web did not start: {open(demo_log).read()}")

spec = json.load(open(OPENAPI))
interaction_schema = jsonschema.Draft202012Validator({**spec, "$ref": "#/components/schemas/Interaction"})


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1000,900", "--lang=en-GB"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)


driver = browser()
wait = WebDriverWait(driver, 20, poll_frequency=0.1)


def cdp(command, **parameters):
    return driver.execute_cdp_cmd(command, parameters)


def key(text=None, name=None, code=None, vk=None, modifiers=0, commands=None):
    """One key press through the browser's input pipeline (trusted, as a keyboard's)."""
    down = {"type": "keyDown", "key": name or text, "modifiers": modifiers}
    if text:
        down["text"] = text
    if code:
        down["code"] = code
    if vk:
        down["windowsVirtualKeyCode"] = vk
    if commands:
        down["commands"] = commands
    cdp("Input.dispatchKeyEvent", **down)
    cdp("Input.dispatchKeyEvent", type="keyUp", key=name or text, modifiers=modifiers,
        **({"code": code} if code else {}), **({"windowsVirtualKeyCode": vk} if vk else {}))


class Person:
    """Acts on the page and notes, for each action, the wall-clock moments just before it was
    sent and just after the browser acknowledged it: the event's own timestamp lies between
    them, so the gaps the kit records can be checked exactly, however loaded the machine is."""

    def __init__(self):
        self.moments = []   # (what, monotonic ms before, monotonic ms after)

    def act(self, what, action):
        before = time.monotonic() * 1000
        action()
        self.moments.append((what, before, time.monotonic() * 1000))

    def open(self):
        driver.get(PAGE)
        wait.until(lambda d: d.execute_script("return typeof InsightCapture === 'object'"))

    def click(self, element_id):
        self.act(f"click {element_id}", lambda: driver.find_element(By.ID, element_id).click())

    def type(self, text, gap):
        """Types `text` one key at a time, `gap` seconds apart (a list: one gap per key)."""
        gaps = gap if isinstance(gap, list) else [gap] * len(text)
        for character, pause in zip(text, gaps):
            self.act("key", lambda: key(character))
            time.sleep(pause)

    def brackets(self, what):
        """For consecutive actions named `what`: the least and the most time between them."""
        marks = [(before, after) for name, before, after in self.moments if name == what]
        return [(b[0] - a[1], b[1] - a[0]) for a, b in zip(marks, marks[1:])]

    def pay(self):
        """Clicks Pay; returns the page's decision and the bodies the page and the demo sent."""
        before = len(Recorder.records)
        self.click("pay")
        wait.until(lambda d: d.find_element(By.ID, "result").is_displayed())
        page_request = json.loads(posted("/api/payments")[-1])
        sent = [r for r in Recorder.records[before:] if r["path"] == "/v1/evaluations"]
        return {"action": driver.find_element(By.ID, "result").get_attribute("data-action"),
                "page": page_request, "insightd": json.loads(sent[0]["body"]),
                "answer": json.loads(sent[0]["answer"]) if sent[0]["status"] == 200 else sent[0]}


network_posts = []


def posted(suffix):
    """The bodies of the POSTs the browser sent to URLs ending with `suffix` (Chromium's own log)."""
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            request = message["params"]["request"]
            if request["method"] == "POST":
                network_posts.append((request["url"], request.get("postData")))
    return [body for url, body in network_posts if url.endswith(suffix)]


def checked(result, name):
    """Schema, forwarding and shape checks every captured object must pass."""
    interaction = result["page"]["interaction"]
    keep(result, name)
    errors = sorted(interaction_schema.iter_errors(interaction), key=str)
    check(not errors, f"{name}: the captured object is a valid Interaction of openapi/", errors[:3])
    check(set(interaction) == {"events", "source"}, f"{name}: events and source only (no device facts)", set(interaction))
    check(interaction["source"]["kit"] == "insight-capture-web" and interaction["source"]["platform"] == "web",
          f"{name}: source names the web kit", interaction["source"])
    check(result["insightd"]["interaction"] == interaction, f"{name}: the demo forwarded the object unchanged")
    check(isinstance(result["answer"], dict) and "insights" in result["answer"], f"{name}: insightd answered 200", result["answer"])
    return interaction["events"]


def keep(result, name):
    """Writes what the page captured to CAPTURE_OBJECTS (when set), to replay or inspect."""
    if os.environ.get("CAPTURE_OBJECTS"):
        os.makedirs(os.environ["CAPTURE_OBJECTS"], exist_ok=True)
        with open(os.path.join(os.environ["CAPTURE_OBJECTS"], f"{name}.json"), "w") as out:
            json.dump(result["page"]["interaction"], out)


def coaching(result):
    insight = result["answer"]["insights"][0]
    return (insight.get("outcome") or {}).get("value", "error")


def gaps(events, kind, field):
    times = [e["t"] for e in events if e["type"] == kind and e.get("field") == field]
    return [b - a for a, b in zip(times, times[1:])]


def within(measured, brackets, slack=3):
    """Whether each measured gap (ms) lies in its bracket, give or take rounding."""
    return len(measured) == len(brackets) and all(low - slack <= m <= high + slack for m, (low, high) in zip(measured, brackets))


try:
    cdp("Network.enable")
    origin = PAGE.rstrip("/")
    cdp("Browser.grantPermissions", permissions=["clipboardReadWrite", "clipboardSanitizedWrite"], origin=origin)

    # ---------------------------------------------------------------- 1. a fluent genuine payment
    person = Person()
    person.open()
    time.sleep(0.6)
    person.click("payee")
    payee_gaps = [0.14, 0.17, 0.15, 0.19, 0.13, 0.16] * 3
    person.type("NL91ABNA0417164300", payee_gaps)
    person.click("amount")
    person.type("120", 0.18)
    time.sleep(0.5)
    genuine = person.pay()
    events = checked(genuine, "genuine")
    check([e["type"] for e in events] ==
          ["sessionStart", "tap", "fieldFocus"] + ["keyDown"] * 18 + ["tap", "fieldBlur", "fieldFocus"]
          + ["keyDown"] * 3 + ["tap", "fieldBlur", "submit"],
          "genuine: the events in the order done (tap, focus, 18 keys, tap, blur, focus, 3 keys, tap, blur, submit)",
          [e["type"] for e in events])
    check([e.get("field") for e in events if e["type"] == "keyDown"] == ["payee"] * 18 + ["amount"] * 3,
          "genuine: each keyDown names its field")
    measured, expected = gaps(events, "keyDown", "payee"), person.brackets("key")[:17]
    check(within(measured, expected), "genuine: each key gap between the moments the keys were sent and acknowledged",
          f"{measured} vs {expected}")
    check(coaching(genuine) == "unknown", "genuine: insightd answers unknown", coaching(genuine))
    check(genuine["action"] == genuine["answer"]["decision"]["action"], "genuine: the page shows insightd's decision",
          (genuine["action"], genuine["answer"]["decision"]))
    step(f"genuine session: {len(events)} events, {coaching(genuine)}, decision {genuine['action']}")

    # ------------------------------------------- 2. dictated chunks with long hesitations
    # The shape of an account number read out over the phone: the person listens first (the
    # first key ~9 s in), types it in chunks of three with the pauses of someone listening for
    # the next digits, the amount slowly, then waits for "now press confirm".
    person = Person()
    person.open()
    time.sleep(9)
    person.click("payee")
    chunk_pause = 3.8
    dictated = ([0.2, 0.22, chunk_pause] * 7)[:-1] + [0.3]
    person.type("GB29NWBK6016133192681", dictated)
    person.click("amount")
    time.sleep(1.8)
    person.type("4900", [0.8, 0.9, 0.7, 0.3])
    person.click("new-payee")
    time.sleep(8)
    coached = person.pay()
    events = checked(coached, "coached")
    payee = gaps(events, "keyDown", "payee")
    check(within(payee, person.brackets("key")[:20]), "coached: each key gap, pauses included, between the moments sent and acknowledged",
          f"{payee} vs {person.brackets('key')[:20]}")
    check(sum(1 for g in payee if 1000 < g <= 10000) == 6, "coached: six pauses between seven dictated chunks", payee)
    first_key = next(e["t"] for e in events if e["type"] == "keyDown")
    submit, last_key = events[-1]["t"], [e["t"] for e in events if e["type"] == "keyDown"][-1]
    check(first_key >= 9000 and submit - last_key >= 8000, "coached: the first key after 9 s, and 8 s or more between the last key and Pay",
          (first_key, submit - last_key))
    step(f"coached session: {len(events)} events, {coaching(coached)}, decision {coached['action']}, "
         f"insight {json.dumps(coached['answer']['insights'][0])}")

    # ------------------------- 3. canary: typed, deleted, pasted; another tab; composition
    person = Person()
    person.open()
    person.click("payee")
    person.type(CANARY, 0.12)
    for _ in range(2):
        key(name="Backspace", code="Backspace", vk=8)
        time.sleep(0.1)
    # Another script on the page: it starts a session of its own asking for script-fired events,
    # tries to replace the kit, fires events (isTrusted false) and inserts text with
    # execCommand (whose input events Chromium marks trusted, without a beforeinput). The kit
    # records none of it, in the page's session or in the script's own.
    hostile = driver.execute_script("""
        const payee = document.getElementById('payee');
        const own = InsightCapture.start({acceptUntrusted: true});
        const kit = InsightCapture;
        window.InsightCapture = {start: () => own, finish: () => ({events: []})};
        payee.dispatchEvent(new InputEvent('input', {inputType: 'insertText', data: 'x', bubbles: true}));
        payee.dispatchEvent(new PointerEvent('pointerdown', {bubbles: true}));
        payee.dispatchEvent(new FocusEvent('focusin', {bubbles: true}));
        const inserted = document.activeElement === payee && document.execCommand('insertText', false, 'x');
        return [inserted, window.InsightCapture === kit, own.finish().events.map(e => e.type)];""")
    check(hostile == [True, True, ["sessionStart", "submit"]],
          "canary: another script's session, script-fired events and execCommand text are not recorded; the kit cannot be replaced",
          hostile)
    # A trusted paste: the canary on the clipboard, then Ctrl+V into the reference field.
    written = driver.execute_async_script(
        "navigator.clipboard.writeText(arguments[0]).then(() => arguments[1]('ok'), e => arguments[1](String(e)))", CANARY)
    check(written == "ok", "canary: on the clipboard", written)
    person.click("reference")
    key(name="v", code="KeyV", vk=86, modifiers=2, commands=["paste"])
    wait.until(lambda d: CANARY in d.find_element(By.ID, "reference").get_attribute("value"))
    # A spell in another tab: the page is hidden, then visible again.
    time.sleep(0.3)
    page_tab = driver.current_window_handle
    person.act("spell", lambda: driver.switch_to.new_window("tab"))
    time.sleep(1.5)
    person.act("spell", lambda: (driver.close(), driver.switch_to.window(page_tab)))
    time.sleep(0.3)
    # IME composition in the reference field: three updates, then the commit.
    person.click("reference")
    for text in ("n", "ni", "nih"):
        cdp("Input.imeSetComposition", text=text, selectionStart=len(text), selectionEnd=len(text))
        time.sleep(0.08)
    cdp("Input.insertText", text="你")
    person.click("amount")
    person.type("75", 0.15)
    # The phone turned to portrait and back (Chromium's emulated screen fires trusted changes).
    for width, height, kind, angle in ((400, 800, "portraitPrimary", 0), (800, 600, "landscapePrimary", 90)):
        cdp("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=True,
            screenOrientation={"type": kind, "angle": angle})
        time.sleep(0.2)
    private = person.pay()
    cdp("Emulation.clearDeviceMetricsOverride")
    events = checked(private, "canary")
    by_field = lambda kind, field: sum(1 for e in events if e["type"] == kind and e.get("field") == field)
    check(by_field("keyDown", "payee") == len(CANARY), "canary: one keyDown per typed character (none for execCommand's)",
          by_field("keyDown", "payee"))
    check(by_field("delete", "payee") == 2, "canary: two Backspaces are two deletes")
    check(by_field("paste", "reference") == 1 and by_field("keyDown", "reference") == 4,
          "canary: one paste, and four composition keyDowns (three updates and the commit) in reference",
          (by_field("paste", "reference"), by_field("keyDown", "reference")))
    check(sum(1 for e in events if e["type"] == "tap") == 5, "canary: five taps (payee, reference twice, amount, Pay); script-fired ones ignored")
    kinds = [e["type"] for e in events]
    check(kinds.count("appBackground") == 1 and kinds.count("appForeground") == 1, "canary: one spell in the background")
    away = next(e["t"] for e in events if e["type"] == "appBackground")
    back = next(e["t"] for e in events if e["type"] == "appForeground")
    check(within([back - away], person.brackets("spell")), "canary: the spell's length between the moments the tab was opened and left",
          (back - away, person.brackets("spell")))
    blur = max(i for i, e in enumerate(events) if e["type"] == "fieldBlur" and e["t"] <= away)
    check(events[blur].get("field") == "reference", "canary: the reference field lost focus as the page was hidden")
    check(kinds.count("orientationChange") == 2, "canary: two orientation changes", kinds.count("orientationChange"))
    check(all(b["t"] >= a["t"] for a, b in zip(events, events[1:])), "canary: t never decreases")
    step(f"canary session: {len(events)} events, {coaching(private)}, decision {private['action']}")

    # Nothing typed or pasted left the browser, and the page stored nothing.
    stored = driver.execute_script("return [localStorage.length, sessionStorage.length, document.cookie]")
    check(stored == [0, 0, ""], "privacy: no storage, no cookie", stored)
    page_posts = posted("/api/payments")
    check(len(page_posts) == 3 and not any(leaks(body) for body in page_posts), "privacy: the canary is in no request to the demo")
    check(not any(leaks(r["body"] + r["answer"]) for r in Recorder.records),
          f"privacy: the canary is in none of the {len(Recorder.records)} requests to insightd or their answers")
    for path in LOGS + [demo_log]:
        check(not leaks(open(path, "rb").read()), f"privacy: the canary is not in {os.path.basename(path)}")
    scanned, leaking = 0, []
    for folder, _, names in os.walk(STATE):
        for name in names:
            with open(os.path.join(folder, name), "rb") as handle:
                if leaks(handle.read()):
                    leaking.append(name)
            scanned += 1
    check(scanned > 0 and not leaking, f"privacy: the canary is in none of the {scanned} files of the state directory", leaking)
    step(f"privacy: canary absent from {len(page_posts)} page requests, {len(Recorder.records)} insightd requests, logs, {scanned} state files")

    # The page ran under its strict CSP: no error in the console (a violation would be one), and
    # inline script is refused there (WebDriver's own scripts are exempt, so an inline <script>).
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    check(not errors, "CSP: no error in the browser console while the kit ran", errors)
    refused = driver.execute_async_script("""
        const done = arguments[0];
        document.addEventListener('securitypolicyviolation', e => done([e.violatedDirective, window.inlineRan === true]));
        const script = document.createElement('script');
        script.textContent = 'window.inlineRan = true';
        document.body.append(script);
        setTimeout(() => done(['none', window.inlineRan === true]), 2000);""")
    check(refused == ["script-src-elem", False], "CSP: the page refuses inline script (the kit needs none)", refused)
    consumption = [r for r in Recorder.records if r["path"].startswith("/v1/evaluations/") and r["method"] == "POST"]
    check(len(consumption) == 3 and all(r["status"] in (200, 204) for r in consumption),
          "demo: consumption reported for each payment", [(r["path"], r["status"]) for r in consumption])
    # Last, so that every other check has run when the model's answer fails.
    check(coaching(coached) in ("medium", "high"), "coached: insightd answers medium or high", coaching(coached))
    check(coached["action"] == coached["answer"]["decision"]["action"] != "proceed",
          "coached: the page shows insightd's decision, which adds friction", coached["action"])
except AssertionError as failure:
    failed = failure
else:
    failed = None
finally:
    driver.quit()
    demo.terminate()
    demo.wait(timeout=10)
    proxy.shutdown()

print(f"capture: {len(checks)} checks passed in {time.monotonic() - BEGAN:.0f}s:")
for what in checks:
    print(f"capture:   ok  {what}")
if failed:
    sys.exit(f"capture: FAIL: {failed}")
