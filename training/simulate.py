"""Session simulator for the isLikelyBeingCoached model.

It writes what a client app would send in `interaction` (docs/api.md, POST /v1/evaluations): a
list of timing-only events (`t` in ms since sessionStart, `type`, optional `field`) plus `device` facts.
It never writes features; training/features.py derives them from these events exactly as the
daemon does, so the model is trained on the wire contract, not on the simulator's internals.

THE DATA IS SYNTHETIC. The scenario library below encodes published, mostly qualitative,
behavioural findings (docs/model-card.md lists them with sources); every number is an assumption
chosen to reproduce those findings, not a measurement. Real labelled sessions should replace it
(docs/model-card.md, "Retraining").

Scenario library (label, name: what it models):
  genuine  routine       saved payee or known form, fluent typing, short review
  genuine  firstTime     new payee copied in chunks from an invoice or pasted after fetching it
                         from another app; longer review, corrections
  genuine  slowTypist    slow, irregular "hunt and peck" typing (often older users), long pauses
  genuine  onCall        an unrelated phone call during the session (hard negative): call facts,
                         phone at the ear, distracted pauses, sometimes a friend reads a number out
  genuine  remoteTool    a remote-access or screen-casting app that is installed or running for an
                         innocent reason (family IT help, casting) - hard negative
  genuine  quickConfirm  a one-tap confirmation with almost no interaction (evidence rule)
  coached  techSupport   "your computer/account is compromised": screen sharing or a
                         remote-access app, a call, mostly very long sessions with idle
                         stretches (half brisk: the ground was prepared before the session)
  coached  authority     bank/police impersonation, "move money to a safe account": a call that
                         began before the session, phone alternating at the ear, dictated account
                         numbers typed in segments, long waits for the instruction to confirm
  coached  family        "Hi Mum, new number" family emergency over messages: switches to the
                         messaging app, pasted or copied payee details, urgency, little or no call
  coached  residual      coached earlier (the call has ended): only weak traces remain. These are
                         the positives no timing model can be expected to catch.

Signals are noisy and missing at realistic rates: a share of clients sends no device facts
(web, old SDKs); Android sees cellular calls only (VoIP calls are invisible to it); iOS cannot
see remote-access apps; many apps never enable the proximity sensor.

Two profiles of client:
  app   (the default) what an app SDK sends: the platforms' device facts, call and proximity
        events where they can be seen, 15% web clients without them. The built-in models are
        trained on it.
  web   exactly what the web capture kit (capture/web/insight-capture.js) emits, and nothing
        a page cannot know: see WebDevice and WebSession below for what it assumes.

Usage: python simulate.py --count 100 --seed 7 > sessions.jsonl   (one JSON session per line)
       python simulate.py --profile web --count 100 > web.jsonl
       python simulate.py --profile web --print-one coached        (one typical session as the
                                                                    `interaction` JSON of a request)
"""

import argparse
import json
import math
import os
import random
import sys

CATEGORIES = ["payment", "account", "resourceUse", "communication", "other"]
CATEGORY_WEIGHTS = [0.50, 0.20, 0.10, 0.10, 0.10]

GENUINE_SCENARIOS = ["routine", "firstTime", "slowTypist", "onCall", "remoteTool", "quickConfirm"]
GENUINE_WEIGHTS = [0.51, 0.20, 0.14, 0.10, 0.02, 0.03]
COACHED_SCENARIOS = ["techSupport", "authority", "family", "residual"]
COACHED_WEIGHTS = [0.28, 0.34, 0.26, 0.12]
COACHED_SHARE = 0.25  # enriched far above real prevalence so the classifier sees enough positives

MAX_SESSION_MS = 3_600_000
MAX_EVENTS = 5000


def lognormal(rng, median, sigma):
    return median * math.exp(rng.gauss(0.0, sigma))


def clamp(x, lo, hi):
    return lo if x < lo else hi if x > hi else x


class Device:
    """What the client platform and SDK can observe and report (finish() turns what they
    cannot see into absent device facts or missing events)."""

    def __init__(self, rng):
        self.platform = rng.choices(["ios", "android", "web"], [0.45, 0.40, 0.15])[0]
        old_sdk = rng.random() < 0.10
        web = self.platform == "web"
        self.reports_facts = not (web or old_sdk)
        # Whether the SDK also emits call/share events as they happen (not just facts at submit).
        self.emits_call_events = self.reports_facts and rng.random() < 0.6
        self.sees_voip = self.platform == "ios" and rng.random() < 0.85  # CallKit apps
        self.sees_share = self.reports_facts and rng.random() < (0.9 if self.platform == "ios" else 0.75)
        self.sees_remote_app = self.reports_facts and self.platform == "android" and rng.random() < 0.85
        self.proximity = self.platform != "web" and rng.random() < 0.45
        self.orientation = self.platform != "web" or rng.random() < 0.2
        self.reports_taps = rng.random() < 0.9
        self.reports_scrolls = rng.random() < 0.8

    def new_session(self, rng, persona):
        return Session(rng, self, persona)


class Persona:
    def __init__(self, rng, slow=False):
        if slow:
            self.iki = lognormal(rng, 620.0, 0.30)
            self.iki_sigma = rng.uniform(0.45, 0.75)
            self.typo = rng.uniform(0.04, 0.12)
            self.think = rng.uniform(0.04, 0.10)
            self.review = lognormal(rng, 6000.0, 0.5)
        else:
            self.iki = lognormal(rng, 230.0, 0.30)
            self.iki_sigma = rng.uniform(0.25, 0.55)
            self.typo = rng.uniform(0.01, 0.06)
            self.think = rng.uniform(0.005, 0.03)
            self.review = lognormal(rng, 2200.0, 0.6)
        self.reaction = lognormal(rng, 700.0 if slow else 450.0, 0.3)


class Session:
    def __init__(self, rng, device, persona):
        self.rng = rng
        self.device = device
        self.persona = persona
        self.t = 0
        self.events = [(0, "sessionStart", None)]
        # Listening to a caller with the phone at the ear during dictation pauses.
        self.ear_prob = 0.0
        self.near_spans = []
        self.orientation_times = []
        # The form asks for the person's own data in its `other` field (login, sign-up).
        self.own_data_form = False

    def wait(self, ms):
        self.t += max(0, int(round(ms)))

    def emit(self, typ, field=None):
        if typ == "tap" and not self.device.reports_taps:
            return
        if typ == "scroll" and not self.device.reports_scrolls:
            return
        self.events.append((self.t, typ, field))

    def key_gap(self):
        p = self.persona
        return clamp(lognormal(self.rng, p.iki, p.iki_sigma), 40.0, 4000.0)

    def focus(self, field):
        self.wait(lognormal(self.rng, 600.0, 0.5))
        self.emit("tap")
        self.wait(self.rng.uniform(20, 120))
        self.emit("fieldFocus", field)

    def blur(self, field):
        self.wait(lognormal(self.rng, 250.0, 0.5))
        self.emit("fieldBlur", field)

    def keystrokes(self, field, n, stress=1.0):
        """n characters typed from memory, with typos corrected by deletions."""
        rng = self.rng
        p = self.persona
        left = n
        while left > 0:
            self.wait(self.key_gap() * stress)
            if rng.random() < p.think:
                self.wait(lognormal(rng, 1800.0, 0.5))
            typed = self.keystroke(field, left)
            left -= typed
            if typed == 1 and rng.random() < p.typo * stress:
                extra = 1 if rng.random() < 0.7 else 2
                for _ in range(extra):
                    self.wait(self.key_gap())
                    self.emit("keyDown", field)
                self.wait(lognormal(rng, p.reaction, 0.4))
                for _ in range(extra + (1 if rng.random() < 0.3 else 0)):
                    self.emit(self.correction(), field)
                    self.wait(self.rng.uniform(90, 220))

    def keystroke(self, field, left):
        """One key press with `left` characters still to type; answers how many it typed."""
        self.emit("keyDown", field)
        return 1

    def correction(self):
        """The event of one key press that corrects a typo."""
        return "delete"

    def chunked(self, field, n, chunk_lo, chunk_hi, pause_median, pause_sigma):
        """n characters in chunks: copied from paper (short glances) or dictated (listening)."""
        left = n
        while left > 0:
            k = min(left, self.rng.randint(chunk_lo, chunk_hi))
            self.keystrokes(field, k)
            left -= k
            if left > 0:
                pause = lognormal(self.rng, pause_median, pause_sigma)
                if pause > 1500.0 and self.rng.random() < self.ear_prob:
                    a, b = self.t + 250, self.t + int(pause) - 250
                    self.near_spans.append((a, b))
                    self.orientation_times.extend([a, b])
                self.wait(pause)

    def paste(self, field):
        self.wait(lognormal(self.rng, 700.0, 0.4))  # long-press, menu
        self.emit("tap")
        self.wait(lognormal(self.rng, 500.0, 0.4))
        self.emit("paste", field)

    def scrolls(self, k):
        for _ in range(k):
            self.wait(lognormal(self.rng, 900.0, 0.6))
            self.scroll_gesture()

    def scroll_gesture(self):
        self.emit("scroll")

    def leave_app(self, away_ms):
        self.wait(lognormal(self.rng, 400.0, 0.4))
        self.emit("appBackground")
        self.wait(away_ms)
        self.emit("appForeground")

    def fill_own(self, field, n, stress):
        """A field of the person's own data (name, e-mail, password, OTP): typed. The web
        profile lets an autofill or a password manager fill it instead."""
        self.keystrokes(field, n, stress)

    def submit(self, review_ms):
        self.wait(review_ms)
        self.emit("tap")
        self.wait(self.rng.uniform(30, 150))
        self.emit("submit")


# ---------------------------------------------------------------------------- the web profile

# The source the web capture kit names (capture/web/insight-capture.js).
WEB_SOURCE = {"kit": "insight-capture-web", "version": "1.0.0", "platform": "web"}


class WebDevice:
    """A browser running the web capture kit: what it can observe and how it maps what browsers
    deliver onto the event vocabulary (docs/capture.md). Assumptions, each a guess at a share:

    - No device facts ever (a page cannot know calls, screen sharing or remote-access apps), no
      call, screen-share or proximity events.
    - Every pointerdown is a `tap` (so is the touch that starts a scroll on a phone); `scroll` at
      most once per 250 ms, so a scroll gesture is a short burst of them.
    - Each character inserted by typing is a `keyDown`, each deletion a `delete` (one per input
      event: a held backspace repeats, a selection deleted at once is one). An IME or an Android
      keyboard composes: each composition update is one `keyDown`, a correction inside the
      composed word too (it updates the composition), and picking a suggestion inserts the rest
      of the word as one `keyDown`.
    - Autofill and password managers fill a field with no key event at all (the kit records
      nothing for `insertReplacementText` or an input without an inputType): the person's own
      data only (name, e-mail, password, a one-time code offered from the SMS), never a new
      payee's details.
    - `appBackground`/`appForeground` are visibilitychange: on a phone, leaving the browser for
      another app hides the page, and so does the screen turning off when the phone goes to the
      ear during a call (assumed for 40% of phones: only where the call's proximity sensor is
      active with the browser in front); on a desktop, another tab or a minimised window hides
      it but another window beside it does not (assumed hidden 60% of the time).
    - `orientationChange` only when a phone is actually rotated (5% of phone sessions), never
      from the phone going to the ear.
    - Desktop users switch fields with Tab (30% of them, most of the time: no tap), paste with
      Ctrl+V (no tap) and submit with Enter (20%: no tap before submit).
    """

    def __init__(self, rng):
        self.platform = "web"
        self.mobile = rng.random() < 0.45
        self.reports_facts = False
        self.emits_call_events = False
        self.sees_voip = False
        self.sees_share = False
        self.sees_remote_app = False
        self.proximity = False
        self.orientation = False
        self.reports_taps = True
        self.reports_scrolls = True
        self.ime = rng.random() < (0.25 if self.mobile else 0.05)
        self.autofill = rng.random() < 0.6
        self.password_manager = rng.random() < 0.5
        self.one_time_code = self.mobile and rng.random() < 0.4
        self.tab_navigation = not self.mobile and rng.random() < 0.3
        self.enter_submits = not self.mobile and rng.random() < 0.2
        self.hidden_when_away = 1.0 if self.mobile else 0.6
        self.screen_off_at_ear = self.mobile and rng.random() < 0.4

    def new_session(self, rng, persona):
        return WebSession(rng, self, persona)

    def page_events(self, rng, near_spans, end):
        """Events the page sees that the session's own steps do not make: the screen going off
        at the ear (visibilitychange) and the rare rotation of a phone."""
        out = []
        if self.screen_off_at_ear:
            for start, stop in near_spans:
                if stop is not None and stop < end and stop - start > 1000:
                    out.append((max(1, start), "appBackground", None))
                    out.append((stop, "appForeground", None))
        if self.mobile and rng.random() < 0.05:
            for _ in range(rng.randint(1, 2)):
                out.append((int(rng.uniform(1, max(2, end))), "orientationChange", None))
        return out


class WebSession(Session):
    """A session as the web capture kit records it (WebDevice lists the assumptions)."""

    last_scroll = -250

    def emit(self, typ, field=None):
        if typ == "scroll":
            if self.t - self.last_scroll < 250:
                return  # the kit records at most one scroll event per 250 ms
            self.last_scroll = self.t
        super().emit(typ, field)

    def focus(self, field):
        if self.device.tab_navigation and self.rng.random() < 0.8:
            self.wait(lognormal(self.rng, 450.0, 0.5))  # Tab: no pointer
            self.emit("fieldFocus", field)
            return
        super().focus(field)

    def keystroke(self, field, left):
        rng = self.rng
        if self.device.ime and left >= 3 and rng.random() < 0.08:
            # A suggestion picked: the rest of the word arrives as one composition update.
            self.wait(lognormal(rng, 700.0, 0.4))
            self.emit("keyDown", field)
            return rng.randint(2, min(6, left))
        return super().keystroke(field, left)

    def correction(self):
        if self.device.ime and self.rng.random() < 0.8:
            return "keyDown"  # inside the composed word a backspace updates the composition
        return "delete"

    def scroll_gesture(self):
        if self.device.mobile:
            self.emit("tap")  # the touch that starts the scroll is a pointerdown
        for k in range(min(8, 1 + int(lognormal(self.rng, 450.0, 0.6) // 250))):
            if k:
                self.wait(250 + self.rng.uniform(0, 30))
            self.emit("scroll")

    def leave_app(self, away_ms):
        if self.rng.random() < self.device.hidden_when_away:
            return super().leave_app(away_ms)
        self.wait(lognormal(self.rng, 400.0, 0.4))  # another window beside the page: no event
        self.wait(away_ms)

    def paste(self, field):
        if self.device.mobile or self.rng.random() < 0.4:
            return super().paste(field)
        self.wait(lognormal(self.rng, 450.0, 0.4))  # Ctrl+V
        self.emit("paste", field)

    def fill_own(self, field, n, stress):
        d, rng = self.device, self.rng
        filled = ((field == "password" and d.password_manager and rng.random() < 0.85)
                  or (field == "other" and d.autofill and rng.random() < 0.7)
                  or (field == "otp" and d.one_time_code))
        if filled:
            self.wait(lognormal(rng, 1100.0, 0.5))  # picks the browser's suggestion: no page event
            return
        super().fill_own(field, n, stress)

    def submit(self, review_ms):
        if self.device.enter_submits:
            self.wait(review_ms)
            self.emit("submit")
            return
        super().submit(review_ms)


def field_plan(rng, category):
    """The form for a category: (field, characters) in order; chars 0 = chosen by tapping."""
    if category == "payment":
        plan = [("payee", rng.randint(8, 22)), ("amount", rng.randint(2, 6))]
        if rng.random() < 0.6:
            plan.append(("reference", rng.randint(4, 18)))
        if rng.random() < 0.35:
            plan.append(("otp", 6))
        return plan
    if category == "account":
        plan = [("other", rng.randint(8, 28))]
        if rng.random() < 0.7:
            plan.append(("password", rng.randint(8, 16)))
        if rng.random() < 0.6:
            plan.append(("otp", 6))
        return plan
    if category == "communication":
        plan = [("other", rng.randint(15, 120))]
        if rng.random() < 0.3:
            plan.append(("reference", rng.randint(4, 12)))
        return plan
    if category == "resourceUse":
        plan = [("other", rng.randint(5, 40))]
        if rng.random() < 0.5:
            plan.append(("amount", rng.randint(1, 4)))
        return plan
    return [("other", rng.randint(3, 40))]


class Overlay:
    """Call, proximity, orientation and screen-share timelines laid over the session."""

    def __init__(self):
        self.call_before = False   # a call was running at sessionStart
        self.call_spans = []       # (start, end or None) in ms
        self.near_spans = []
        self.orientation_times = []
        self.share = False
        self.share_start = None
        self.remote_app = False


def finish(rng, s, overlay, label, scenario, category):
    device = s.device
    end = s.t
    overlay.near_spans.extend(s.near_spans)
    overlay.orientation_times.extend(s.orientation_times)
    events = list(s.events)
    extra = []
    call_active_at_end = False
    observed_call = False
    for start, stop in overlay.call_spans:
        # Android sees cellular calls only; scammers increasingly use VoIP apps.
        voip = rng.random() < 0.35
        visible = device.reports_facts and (not voip or device.sees_voip)
        if not visible:
            continue
        observed_call = True
        if device.emits_call_events:
            if start > 0:
                extra.append((start, "callStart", None))
            if stop is not None and stop < end:
                extra.append((stop, "callEnd", None))
        if stop is None or stop >= end:
            call_active_at_end = True
    if device.proximity:
        for start, stop in overlay.near_spans:
            extra.append((max(1, start), "proximityNear", None))
            if stop is not None and stop < end:
                extra.append((stop, "proximityFar", None))
    if device.orientation:
        for t in overlay.orientation_times:
            if 0 < t < end:
                extra.append((t, "orientationChange", None))
    if overlay.share and device.sees_share and device.emits_call_events and overlay.share_start:
        extra.append((overlay.share_start, "screenShareStart", None))
    if device.platform == "web" and isinstance(device, WebDevice):
        extra.extend(device.page_events(rng, overlay.near_spans, end))
    for e in extra:
        events.append((min(e[0], end), e[1], e[2]))
    # Stable sort: at equal t the app's own events keep their order and overlay events follow.
    events.sort(key=lambda e: e[0])
    events = [e for e in events if e[0] <= MAX_SESSION_MS][:MAX_EVENTS]

    facts = {}
    if device.reports_facts:
        facts["activeCall"] = call_active_at_end if observed_call else False
        if observed_call or rng.random() < 0.8:
            before = overlay.call_before and observed_call
            facts["callStartedBeforeSession"] = before
        if device.sees_share:
            facts["screenSharing"] = overlay.share
        if device.sees_remote_app:
            facts["remoteAccessApp"] = overlay.remote_app
        if rng.random() < 0.05:  # partial reports from flaky SDK versions
            facts.pop(rng.choice(list(facts.keys())), None)
    session = {
        "label": label,
        "scenario": scenario,
        "category": category,
        "platform": device.platform,
        "interaction": {
            "events": [
                {"t": t, "type": typ, **({"field": f} if f is not None else {})}
                for t, typ, f in events
            ],
            "device": facts,
        },
    }
    if isinstance(device, WebDevice):
        # What the kit sends beside the events: its source, and no device facts at all.
        session["profile"] = "web"
        session["interaction"] = {"events": session["interaction"]["events"], "source": dict(WEB_SOURCE)}
    return session


def fill_form(s, plan, *, saved_payee=False, paste_payee=False, fetch_first=False,
              dictated_fields=(), copy_fields=(), stress=1.0):
    rng = s.rng
    for field, n in plan:
        if field == "payee" and saved_payee:
            s.scrolls(rng.randint(0, 2))
            s.wait(lognormal(rng, 900.0, 0.5))
            s.emit("tap")  # pick a saved payee from the list
            continue
        s.focus(field)
        if field == "payee" and paste_payee:
            if fetch_first:
                s.emit("fieldBlur", field)
                s.leave_app(lognormal(rng, 15000.0, 0.7))
                s.emit("fieldFocus", field)
            s.paste(field)
        elif field in dictated_fields:
            s.wait(lognormal(rng, 2500.0, 0.6))  # "ready? it's..."
            s.chunked(field, n, 2, 4, 2600.0, 0.45)
        elif field in copy_fields:
            s.chunked(field, n, 3, 6, 900.0, 0.45)
        elif field == "otp":
            s.wait(lognormal(rng, 4000.0, 0.6))  # wait for the SMS
            s.fill_own(field, n, stress)
        elif field == "password" or (field == "other" and s.own_data_form):
            s.fill_own(field, n, stress)
        else:
            s.keystrokes(field, n, stress)
        s.blur(field)


def maybe_revisit(s, plan, p):
    rng = s.rng
    typed = [f for f, n in plan if n > 0]
    if typed and rng.random() < p:
        field = rng.choice(typed)
        s.focus(field)
        s.keystrokes(field, rng.randint(0, 2))
        for _ in range(rng.randint(1, 3)):
            s.emit("delete", field)
            s.wait(rng.uniform(100, 300))
        s.keystrokes(field, rng.randint(1, 3))
        s.blur(field)


def genuine(rng, scenario, category, device):
    slow = scenario == "slowTypist" or (scenario in ("onCall", "firstTime") and rng.random() < 0.15)
    p = Persona(rng, slow=slow)
    s = device.new_session(rng, p)
    s.own_data_form = category == "account"
    ov = Overlay()
    plan = field_plan(rng, category)
    s.wait(lognormal(rng, 1500.0 if not slow else 3000.0, 0.6))

    if scenario == "quickConfirm":
        s.wait(lognormal(rng, 800.0, 0.5))
        s.submit(lognormal(rng, 500.0, 0.5))
        return finish(rng, s, ov, 0, scenario, category)

    if scenario == "routine":
        fill_form(s, plan, saved_payee=category == "payment" and rng.random() < 0.75)
        maybe_revisit(s, plan, 0.05)
        s.scrolls(rng.randint(0, 2))
        s.submit(p.review)
    elif scenario == "firstTime":
        paste = rng.random() < 0.35
        fill_form(s, plan, paste_payee=paste, fetch_first=paste and rng.random() < 0.6,
                  copy_fields=("payee", "reference") if rng.random() < 0.7 else ())
        if rng.random() < 0.15:  # checks the invoice again in the mail app
            s.leave_app(lognormal(rng, 12000.0, 0.7))
        maybe_revisit(s, plan, 0.2)
        s.scrolls(rng.randint(0, 3))
        s.submit(p.review * lognormal(rng, 1.8, 0.4))
    elif scenario == "slowTypist":
        fill_form(s, plan, saved_payee=category == "payment" and rng.random() < 0.5,
                  copy_fields=("payee",) if rng.random() < 0.5 else ())
        maybe_revisit(s, plan, 0.2)
        s.scrolls(rng.randint(0, 3))
        s.submit(p.review * lognormal(rng, 1.3, 0.5))
    elif scenario == "onCall":
        before = rng.random() < 0.75
        ov.call_before = before
        # Phone at the ear while talking, then taken away to use the screen.
        if before and rng.random() < 0.4:
            s.wait(lognormal(rng, 2500.0, 0.6))
            ov.near_spans.append((1, s.t))
            ov.orientation_times.append(s.t)
        friend_reads = category == "payment" and rng.random() < 0.15
        s.ear_prob = 0.3
        fill_form(s, plan, saved_payee=category == "payment" and not friend_reads and rng.random() < 0.6,
                  dictated_fields=("payee",) if friend_reads else (), stress=1.15)
        # The conversation distracts: idle stretches.
        for _ in range(rng.randint(0, 2)):
            s.wait(lognormal(rng, 4000.0, 0.7))
            s.emit("scroll")
        if rng.random() < 0.2:
            a = s.t
            s.wait(lognormal(rng, 5000.0, 0.6))
            ov.near_spans.append((a, s.t))
            ov.orientation_times.extend([a, s.t])
            s.wait(300)
        maybe_revisit(s, plan, 0.1)
        s.submit(p.review * lognormal(rng, 1.4, 0.5))
        start = 0 if before else int(rng.uniform(0.05, 0.6) * s.t)
        end = None if rng.random() < 0.75 else int(rng.uniform(max(start, 1), s.t))
        ov.call_spans.append((start, end))
    elif scenario == "remoteTool":
        if rng.random() < 0.7:
            ov.remote_app = True
        else:
            ov.share = True
        fill_form(s, plan, saved_payee=category == "payment" and rng.random() < 0.6)
        s.submit(p.review)
    return finish(rng, s, ov, 0, scenario, category)


def coached(rng, scenario, category, device):
    slow = rng.random() < (0.45 if scenario == "techSupport" else 0.2)  # RAT victims skew older
    p = Persona(rng, slow=slow)
    s = device.new_session(rng, p)
    s.own_data_form = category == "account"
    ov = Overlay()
    plan = field_plan(rng, category)

    if scenario == "techSupport":
        ov.call_before = True
        if rng.random() < 0.75:
            ov.call_spans.append((0, None))
        mode = rng.random()
        ov.remote_app = mode < 0.6
        ov.share = mode >= 0.35
        # The scammer talks the victim through a "refund"/"security check": long idle stretches,
        # unless the ground was prepared earlier and this session is only the payment.
        brisk = rng.random() < 0.5
        s.wait(lognormal(rng, 4000.0 if brisk else 25000.0, 0.8))
        for _ in range(0 if brisk else rng.randint(1, 4)):
            s.scrolls(rng.randint(1, 3))
            s.wait(lognormal(rng, 20000.0, 0.8))
        if rng.random() < (0.3 if brisk else 0.5):
            s.leave_app(lognormal(rng, 30000.0, 0.8))  # to the remote-access app / browser
        if ov.share and rng.random() < 0.4:
            ov.share_start = s.t  # "now share your screen so I can guide you"
        dictated = ("payee", "reference", "other") if rng.random() < 0.5 else ()
        fill_form(s, plan, dictated_fields=dictated, stress=1.2)
        maybe_revisit(s, plan, 0.25)
        if not brisk:
            s.wait(lognormal(rng, 15000.0, 0.9))
        s.submit(lognormal(rng, 4000.0 if brisk else 9000.0, 0.7))
    elif scenario == "authority":
        before = rng.random() < 0.9
        if rng.random() < 0.92:
            ov.call_before = before
            ov.call_spans.append((0 if before else int(rng.uniform(500, 5000)), None))
        # Alternating: listening with the phone at the ear, then typing on the screen
        # (unless the victim was told to use the speaker).
        s.ear_prob = 0.0 if rng.random() < 0.35 else rng.uniform(0.4, 0.9)
        # A share of scripts move fast: the caller has the victim ready before the app opens.
        brisk = rng.random() < 0.4
        s.wait(lognormal(rng, 2500.0 if brisk else 6000.0, 0.8))
        dictated = ["payee"] if rng.random() < 0.85 else []
        if rng.random() < 0.6:
            dictated.append("reference")
        if rng.random() < 0.5:
            dictated.append("other")
        saved = category == "payment" and not dictated and rng.random() < 0.5
        t0 = s.t
        if s.ear_prob > 0.0:
            ov.near_spans.append((1, max(2, t0 - 400)))
            ov.orientation_times.append(max(2, t0 - 400))
        fill_form(s, plan, dictated_fields=tuple(dictated), saved_payee=saved, stress=1.25)
        maybe_revisit(s, plan, 0.3)
        if not brisk:
            s.wait(lognormal(rng, 6000.0, 0.8))  # "stay on the line, I'm checking the account"
        s.submit(lognormal(rng, 3000.0 if brisk else 8000.0, 0.7))  # waits for "now press confirm"
    elif scenario == "family":
        if rng.random() < 0.2:
            ov.call_spans.append((int(rng.uniform(1000, 30000)), None))
        s.wait(lognormal(rng, 2000.0, 0.6))
        paste = rng.random() < 0.55
        fill_form(s, plan, paste_payee=paste, fetch_first=paste,
                  copy_fields=("payee", "reference") if not paste else ("reference",), stress=1.3)
        # Back and forth with the "child" in the messaging app.
        for _ in range(rng.randint(1, 5)):
            s.leave_app(lognormal(rng, 18000.0, 0.8))
            if rng.random() < 0.4:
                s.scrolls(1)
        maybe_revisit(s, plan, 0.35)
        s.submit(lognormal(rng, 4500.0, 0.7))
    else:  # residual: the instructions were given before; only faint traces remain
        if rng.random() < 0.15:
            ov.call_before = True
            ov.call_spans.append((0, int(rng.uniform(2000, 20000))))
        s.wait(lognormal(rng, 3000.0, 0.7))
        fill_form(s, plan, copy_fields=("payee", "reference") if rng.random() < 0.6 else (),
                  stress=1.15)
        if rng.random() < 0.3:
            s.leave_app(lognormal(rng, 15000.0, 0.8))
        maybe_revisit(s, plan, 0.25)
        s.submit(p.review * lognormal(rng, 2.2, 0.5))

    return finish(rng, s, ov, 1, scenario, category)


def session(seed, index, profile="app"):
    """One session, a pure function of (seed, index, profile): generation order and parallelism
    never change the data. The web profile draws from a stream of its own."""
    if profile == "web":
        rng = random.Random(f"web:{seed}:{index}")
        category = rng.choices(CATEGORIES, CATEGORY_WEIGHTS)[0]
        device = WebDevice(rng)
    else:
        rng = random.Random(seed * 1_000_003 + index)
        category = rng.choices(CATEGORIES, CATEGORY_WEIGHTS)[0]
        device = Device(rng)
    if rng.random() < COACHED_SHARE:
        scenario = rng.choices(COACHED_SCENARIOS, COACHED_WEIGHTS)[0]
        if scenario == "techSupport" and category in ("communication",):
            category = "account"
        if scenario == "family" and category not in ("payment", "communication"):
            category = "payment"
        return coached(rng, scenario, category, device)
    scenario = rng.choices(GENUINE_SCENARIOS, GENUINE_WEIGHTS)[0]
    return genuine(rng, scenario, category, device)


def generate(count, seed, start=0, profile="app"):
    return [session(seed, start + i, profile) for i in range(count)]


def events_as_tuples(s):
    return [(e["t"], e["type"], e.get("field")) for e in s["interaction"]["events"]]


def typical(kind, seed, models_dir):
    """A typical web-profile payment session of `kind`, as the current model judges it with its
    web thresholds: `coached`, the first dictated one (authority scenario, payee typed) it
    answers `medium` or `high`; `genuine`, the first routine one with a typed payee it answers
    `unknown`. Answers (session, level, raw score, model version)."""
    import train  # the trainer's scorer (LightGBM's walk in Python): only this option needs it
    import features as F
    with open(os.path.join(models_dir, "registry.json")) as fh:
        version = json.load(fh)["current"]
    with open(os.path.join(models_dir, version, "manifest.json")) as fh:
        manifest = json.load(fh)
    with open(os.path.join(models_dir, version, "model.json")) as fh:
        model = json.load(fh)
    cols = [F.INDEX[n] for n in manifest["features"]]
    scenario = "authority" if kind == "coached" else "routine"
    for index in range(100_000):
        s = session(seed, index, "web")
        types = [(e["type"], e.get("field")) for e in s["interaction"]["events"]]
        if s["scenario"] != scenario or s["category"] != "payment" or ("keyDown", "payee") not in types:
            continue
        x = F.extract(events_as_tuples(s), {})
        raw = train.raw_score(model, [x[c] for c in cols])
        level = train.level_for(raw, manifest["platformThresholds"]["web"]["payment"],
                                F.has_sufficient_evidence(x, train.EVIDENCE_RULE))
        if (level != "unknown") == (kind == "coached"):
            return s, level, raw, version
    raise SystemExit(f"no typical {kind} session in 100,000")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=20261202)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--profile", choices=["app", "web"], default="app",
                    help="app: what app SDKs send (the built-in models' training data); web: what the web capture kit emits")
    ap.add_argument("--print-one", choices=["coached", "genuine"], metavar="KIND",
                    help="print one typical web-profile payment session of KIND (coached or genuine) as the "
                         "`interaction` of a request, with what the current model answers on standard error")
    ap.add_argument("--models", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"),
                    help="models directory for --print-one")
    args = ap.parse_args()
    if args.print_one:
        s, level, raw, version = typical(args.print_one, args.seed, args.models)
        events = s["interaction"]["events"]
        print(f"{s['label'] and 'coached' or 'genuine'}.{s['scenario']} {s['category']}: {len(events)} events over "
              f"{events[-1]['t'] / 1000:.1f} s; model {version} with its web thresholds: {level} (raw score {raw:.3f})",
              file=sys.stderr)
        sys.stdout.write(json.dumps(s["interaction"], separators=(",", ":")) + "\n")
        return
    for s in generate(args.count, args.seed, args.start, args.profile):
        sys.stdout.write(json.dumps(s, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
