"""The admin console in headless Chromium (e2e/console.sh sets the environment).

Signs in with a wrong key and then the admin key, watches a caller whose evaluations go
unreported become penalised with its overdue count and throttled, resets it and sees it recover,
changes another caller's rate and burst, revokes a key, signs out; takes a screenshot of each
page at 400 px and wide, and copies the ones docs/console/ shows.
"""
import json
import os
import shutil
import sys
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

URL = os.environ["CONSOLE_URL"]
ADMIN_KEY = os.environ["CONSOLE_ADMIN_KEY"]
SKIPPER_KEY = os.environ["CONSOLE_SKIPPER_KEY"]
REPORTER_KEY = os.environ["CONSOLE_REPORTER_KEY"]
SHOTS = os.environ["CONSOLE_SCREENSHOTS"]
DOCS = os.environ["CONSOLE_DOCS"]
UPDATE_DOCS = os.environ.get("CONSOLE_UPDATE_DOCS", "0") == "1"
SKIPPER, REPORTER = "payments-backend", "fraud-desk"
WIDE, NARROW = (1440, 1000), (400, 900)
BEGAN = time.monotonic()


def step(text):
    print(f"console: [{time.monotonic() - BEGAN:5.1f}s] {text}", flush=True)


def post(path, key, payload, headers=None):
    """A POST to the API; returns (status, parsed body or None)."""
    request = urllib.request.Request(f"{URL}{path}", data=json.dumps(payload).encode(), method="POST",
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json",
                                              **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, None


# A short session (the model scores it, and the shadow version beside it).
INTERACTION = {"events": [{"t": 0, "type": "sessionStart"}, {"t": 900, "type": "fieldFocus", "field": "payee"},
                          {"t": 1200, "type": "keyDown", "field": "payee"}, {"t": 5000, "type": "submit"}],
               "device": {"activeCall": True},
               "source": {"kit": "insight-capture-ios", "version": "1.0.0", "platform": "ios"}}


def evaluate(key, account, answer=None):
    """One evaluation; returns the HTTP status (200, or 429 once throttled)."""
    status, body = post("/v1/evaluations", key, {"operationCategory": "payment", "subject": {"account": account},
                                                 "insights": [{"type": "isLikelyBeingCoached", "schemaVersion": 1}],
                                                 "interaction": INTERACTION})
    if answer is not None and body:
        answer.append(body["insights"][0])
    return status


def label(insights):
    """Labels the skipper's evaluations through the reporter (labels role, same tenant): the
    medium ones two fraud and one legitimate, the unknown ones three fraud and the rest
    legitimate, so that the report has precision and recall with intervals to draw."""
    today = time.strftime("%Y-%m-%d", time.gmtime())
    items, fraud = [], {"medium": 2, "high": 2, "unknown": 3}
    for insight in insights:
        value = (insight.get("outcome") or {}).get("value", "unknown")
        is_fraud = fraud.get(value, 0) > 0
        fraud[value] = fraud.get(value, 0) - 1
        item = {"insightId": insight["insightId"], "outcome": "confirmedFraud" if is_fraud else "confirmedLegitimate",
                "discoveredAt": today}
        if is_fraud:
            item["fraudType"] = "authorityImpersonation"
        items.append(item)
    status, body = post("/v1/labels", REPORTER_KEY, {"labels": items}, {"Idempotency-Key": "console-test"})
    assert status == 200 and all(r["status"] == "accepted" for r in body["results"]), (status, body)


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     f"--window-size={WIDE[0]},{WIDE[1]}", "--lang=en-GB", "--force-device-scale-factor=1"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)


driver = browser()
# The pages re-render as answers arrive (the callers list every 3 s): an element found a moment
# ago may be gone when its text is read, which is only a reason to look again.
wait = WebDriverWait(driver, 20, poll_frequency=0.2, ignored_exceptions=[StaleElementReferenceException])
shots = []


def visible(by, what):
    return wait.until(EC.visibility_of_element_located((by, what)))


def button(label, within=None):
    """The button whose visible text is `label` (plain text, as a person reads it)."""
    root = within or driver
    return wait.until(lambda d: next((b for b in root.find_elements(By.TAG_NAME, "button")
                                      if b.is_displayed() and b.text.strip() == label), None))


def confirm():
    dialog = visible(By.ID, "confirm")
    button(dialog.find_element(By.ID, "confirm-ok").text, dialog).click()
    wait.until(lambda d: not d.find_element(By.ID, "confirm").is_displayed())


def notice_contains(text):
    wait.until(lambda d: text in d.find_element(By.ID, "notice").text)
    return driver.find_element(By.ID, "notice").text


def row_of(name):
    """The callers table's row whose name cell reads `name`."""
    for row in driver.find_elements(By.CSS_SELECTOR, "#callers-list tbody tr"):
        try:
            if row.find_element(By.CSS_SELECTOR, "th").text.strip() == name:
                return row
        except StaleElementReferenceException:
            return None
    return None


def cells(name):
    """The row's cells by column header (re-read: the list is redrawn every few seconds)."""
    for _ in range(20):
        try:
            headers = [th.text.strip() for th in driver.find_elements(By.CSS_SELECTOR, "#callers-list thead th")]
            row = row_of(name)
            if row is None:
                return None
            values = [row.find_element(By.CSS_SELECTOR, "th").text] + [td.text for td in row.find_elements(By.CSS_SELECTOR, "td")]
            return dict(zip(headers, values))
        except StaleElementReferenceException:
            time.sleep(0.1)
    raise AssertionError("the callers list kept changing under the test")


def shoot(name):
    """Whole-page screenshots, wide and 400 px wide; at 400 px nothing may be wider than the window
    (tables turn into one card per row there)."""
    os.makedirs(SHOTS, exist_ok=True)
    for label, (width, height) in (("wide", WIDE), ("400", NARROW)):
        driver.set_window_size(width, height)
        time.sleep(0.4)
        overflow = driver.execute_script("""
            const root = document.documentElement;
            return Math.max(root.scrollWidth - root.clientWidth,
                            ...[...document.querySelectorAll('.table-wrap')].map(w => w.scrollWidth - w.clientWidth));""")
        assert overflow <= 1, f"{name}: {overflow}px wider than a {width} px window"
        # The whole page: a window as tall as the document (bounded).
        full = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(width, min(max(height, full + 140), 4000))
        time.sleep(0.3)
        path = os.path.join(SHOTS, f"{name}-{label}.png")
        driver.save_screenshot(path)
        shots.append(path)
    driver.set_window_size(*WIDE)


def go(page, heading):
    driver.find_element(By.LINK_TEXT, page).click()
    wait.until(lambda d: any(h.text == heading for h in d.find_elements(By.TAG_NAME, "h2")))


try:
    # The caller that never reports: twelve evaluations of one account now (the tenth and later
    # fire the account velocity rule), each overdue once the 60 s grace has passed.
    insights = []
    statuses = [evaluate(SKIPPER_KEY, "acct-console", insights) for _ in range(12)]
    assert statuses == [200] * 12, statuses
    evaluated_at = time.monotonic()
    label(insights)
    step("12 unreported evaluations made, and labelled")

    driver.get(f"{URL}/console/")
    assert driver.title == "insightd console"
    key_input = visible(By.ID, "api-key")
    assert driver.find_element(By.CSS_SELECTOR, "label[for=api-key]").text == "Admin API key"
    shoot("sign-in")

    # A wrong key: a clear message, still signed out.
    key_input.send_keys("ik_0000000000000000_" + "A" * 43, Keys.ENTER)
    error = visible(By.ID, "sign-in-error")
    assert "not accepted" in error.text, error.text
    assert driver.execute_script("return sessionStorage.length") == 0
    # A key without the admin role.
    visible(By.ID, "api-key").send_keys(REPORTER_KEY, Keys.ENTER)
    wait.until(lambda d: "lacks the admin role" in d.find_element(By.ID, "sign-in-error").text)
    step("wrong and non-admin keys refused with a message")

    # Sign in: the callers page lists this tenant's callers only.
    visible(By.ID, "api-key").send_keys(ADMIN_KEY, Keys.ENTER)
    visible(By.ID, "callers-list")
    wait.until(lambda d: row_of(SKIPPER) is not None)
    assert driver.execute_script("return sessionStorage.getItem('insightd.adminKey')") == ADMIN_KEY
    assert row_of("elsewhere-app") is None, "another tenant's caller is shown"
    row = cells(SKIPPER)
    assert row["Environment"] == "production" and row["Roles"] == "evaluate", row
    assert row["Pending"] == "12", row
    step("signed in; callers listed")

    # Change the reporter's rate and burst, with a confirmation and the result shown.
    button(f"{REPORTER}").click()
    rate = visible(By.ID, "rate-input")
    assert driver.find_element(By.CSS_SELECTOR, "label[for=rate-input]").is_displayed()
    rate.clear(); rate.send_keys("7.5")
    burst = driver.find_element(By.ID, "burst-input")
    burst.clear(); burst.send_keys("1500")
    button("Change rate and burst").click()
    confirm()
    print("console:", notice_contains("now has a rate of"))
    wait.until(lambda d: (cells(REPORTER) or {}).get("Rate") == "7.5/s" and cells(REPORTER).get("Burst") == "1,500")
    step("rate and burst changed")

    # Revoke the reporter's key (keyboard only: Tab to the button, Enter, then confirm).
    revoke = button("Revoke")
    driver.execute_script("arguments[0].focus()", revoke)
    revoke.send_keys(Keys.ENTER)
    visible(By.ID, "confirm")
    driver.find_element(By.ID, "confirm-ok").send_keys(Keys.ENTER)
    print("console:", notice_contains("is revoked"))
    deadline = time.monotonic() + 10
    while evaluate(REPORTER_KEY, "acct-r") != 401:
        assert time.monotonic() < deadline, "the revoked key is still accepted"
        time.sleep(0.3)
    step("key revoked, and refused by the API")
    button("Close details").click()

    # The other pages, while the grace runs out.
    go("Models", "Models")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#model-versions table"))
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#model-report table"))
    report = driver.find_element(By.ID, "model-report").text
    assert "Immature" in report, report[:400]
    assert driver.find_elements(By.CSS_SELECTOR, "#model-report svg.chart"), "no chart"
    assert driver.find_elements(By.CSS_SELECTOR, "#model-report svg.chart line.whisker"), "no Wilson interval drawn"
    assert "Labelled fraud" in report and "[" in report, report[:600]
    versions = driver.find_element(By.ID, "model-versions").text
    assert "current" in versions, versions
    # 1.0 runs as a shadow of 2.0 (INSIGHTD_MODEL_SHADOW=1.0): marked in both tables, with drift.
    assert "shadow" in versions, versions
    assert "1.0 (shadow) · " in report and "Drift of each version" in report, report[:800]
    # The evaluations name their capture kit: the report splits by it.
    assert "By capture kit" in report and "ios · insight-capture-ios 1.0.0" in report, report[:1200]
    shoot("models")
    step("models page: versions (1.0 a shadow), report with the shadow's rows and drift, by capture kit, charts, immature marked")

    go("Velocity", "Velocity")
    wait.until(lambda d: "accountVelocity" in d.find_element(By.ID, "velocity").text)
    shoot("velocity")
    step("velocity page: rule hits")

    go("Health", "Health")
    wait.until(lambda d: "Write failures" in d.find_element(By.ID, "health").text)
    health = driver.find_element(By.ID, "health").text
    assert "Ready for traffic\nyes" in health, health
    # How much the instance commits counts every tenant: the operator's, on the metrics listener.
    assert "Writes committed" not in health and "Commits" not in health, health
    # The latest signed head of this instance's chain, as the receipt log lists it.
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#health tr[data-instance]"))
    listed = json.loads(urllib.request.urlopen(urllib.request.Request(
        URL + "/v1/receipts/heads", headers={"Authorization": "Bearer " + ADMIN_KEY})).read())["heads"]
    rows = driver.find_elements(By.CSS_SELECTOR, "#health tr[data-instance]")
    assert [r.get_attribute("data-instance") for r in rows] == [h["instance"] for h in listed], (listed, health)
    assert "Receipt chains" in driver.find_element(By.ID, "health").text, health
    shoot("health")
    step("health page: readiness, write failures, the latest receipt head of each instance")

    # Routes that are no page (names every object inherits among them) show the not-found view.
    for route in ["constructor", "__proto__", "toString", "no-such-page"]:
        driver.execute_script("location.hash = arguments[0]", route)
        wait.until(lambda d: any(h.text == "Page not found" for h in d.find_elements(By.TAG_NAME, "h2")))
        assert "no such page" in driver.find_element(By.ID, "not-found").text
        assert not driver.find_elements(By.CSS_SELECTOR, "#nav a[aria-current]"), route
    step("routes that are no page: not found")

    # The skipper becomes penalised with its overdue count once the grace has passed.
    go("Callers", "Callers")
    remaining = 60 - (time.monotonic() - evaluated_at)
    step(f"waiting about {max(0, remaining):.0f}s for the grace of the skipper's evaluations to pass")
    WebDriverWait(driver, max(0, remaining) + 30, poll_frequency=0.5,
                  ignored_exceptions=[StaleElementReferenceException]).until(
        lambda d: (cells(SKIPPER) or {}).get("Overdue") == "12" and (cells(SKIPPER) or {}).get("Penalty", "none") != "none")
    row = cells(SKIPPER)
    assert "overdue reports" in row["Why"] and "12" in row["Why"], row
    step(f"penalised: {row['Penalty']}, overdue {row['Overdue']}")
    # Its requests are now refused beyond the reduced rate; the detail shows the throttling.
    refused = sum(evaluate(SKIPPER_KEY, f"acct-burst-{i}") == 429 for i in range(30))
    assert refused > 0, "no request of the penalised caller was throttled"
    button(SKIPPER).click()
    wait.until(lambda d: "requests refused" in d.find_element(By.ID, "recent-throttling").text)
    step(f"throttled: {refused} of 30 refused, shown in the detail")
    shoot("callers")
    button("Close details").click()

    # Reset: confirmation, result, and the row recovers.
    reset = button("Reset", row_of(SKIPPER))
    reset.click()
    confirm()
    print("console:", notice_contains(f"{SKIPPER} was reset"))
    wait.until(lambda d: (cells(SKIPPER) or {}).get("Penalty") == "none" and cells(SKIPPER).get("Overdue") == "0")
    step("reset: penalty none, overdue 0")

    # No console errors (a CSP violation would be one).
    problems = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"
                and "401" not in entry["message"] and "403" not in entry["message"]]
    assert not problems, problems

    # Sign out: the key is forgotten.
    button("Sign out").click()
    visible(By.ID, "api-key")
    assert driver.execute_script("return sessionStorage.length") == 0
    wait.until(lambda d: "Signed out" in d.find_element(By.ID, "sign-in-error").text)
    driver.refresh()
    visible(By.ID, "api-key")
    step("signed out; the key is gone after a reload")
except Exception:
    os.makedirs(SHOTS, exist_ok=True)
    driver.save_screenshot(os.path.join(SHOTS, "failure.png"))
    print(f"console: FAIL; the page at the failure: {os.path.join(SHOTS, 'failure.png')}", file=sys.stderr)
    raise
finally:
    driver.quit()

if UPDATE_DOCS:
    os.makedirs(DOCS, exist_ok=True)
    for path in shots:
        shutil.copyfile(path, os.path.join(DOCS, os.path.basename(path)))
    step(f"docs/console/ regenerated from {len(shots)} screenshots")
