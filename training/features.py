"""Feature extraction for the isLikelyBeingCoached model: a Python port of the Swift
`FeatureExtractor` (Sources/CoachingModel/FeatureExtractor.swift).

Only the offline trainer uses this file. The daemon computes features in Swift; the two must
agree to within 1e-9 on every committed fixture row (Tests/CoachingModelTests checks this), so
every formula here is written with the same operations in the same order as the Swift code:
integer millisecond arithmetic first, then a single division or a sequential float sum. Change
one side, change the other, and regenerate the fixtures with `training/make-model.sh`.

docs/features.md defines each feature in prose; this file is the executable definition.
"""

import math

NAN = float("nan")

EVENT_TYPES = [
    "sessionStart", "fieldFocus", "fieldBlur", "keyDown", "delete", "paste", "tap", "scroll",
    "appBackground", "appForeground", "callStart", "callEnd", "screenShareStart",
    "screenShareEnd", "orientationChange", "proximityNear", "proximityFar", "submit",
]
FIELDS = ["payee", "amount", "reference", "otp", "password", "other"]

# All features, in the fixed order of `FeatureVector.names` in Swift.
FEATURE_NAMES = [
    "sessionSeconds",
    "userActionCount",
    "firstInputSeconds",
    "keystrokeCount",
    "keyIntervalMeanMs",
    "keyIntervalCV",
    "meanBurstLength",
    "segmentPauseCount",
    "segmentPauseShare",
    "segmentPauseMeanMs",
    "longPauseCount",
    "longestPauseSeconds",
    "submitHesitationSeconds",
    "deletionCount",
    "deletionRatio",
    "payeePasted",
    "amountPasted",
    "fieldRevisits",
    "appSwitchCount",
    "backgroundSeconds",
    "backgroundShare",
    "activeCall",
    "callStartedBeforeSession",
    "proximityNearShare",
    "orientationChanges",
    "screenSharing",
    "remoteAccessApp",
    "otpEntryDelaySeconds",
]
INDEX = {name: i for i, name in enumerate(FEATURE_NAMES)}

MAX_EVENTS = 5000
MAX_SESSION_MS = 3_600_000  # one hour: longer "sessions" are treated as hostile input
TYPING_GAP_MAX_MS = 1000    # in-field keystroke gaps up to this are typing rhythm
SEGMENT_PAUSE_MAX_MS = 10000  # (1 s, 10 s] in-field gaps are dictation-like segment pauses
LONG_PAUSE_MS = 5000        # foreground idle gaps of at least this are long pauses

KEYSTROKE = {"keyDown", "delete"}
INPUT = {"keyDown", "delete", "paste"}
USER_ACTION = {"fieldFocus", "fieldBlur", "keyDown", "delete", "paste", "tap", "scroll", "submit"}
# Events between two keystrokes that end a typing run (the gap is then not "in-field").
RUN_BREAK = {"fieldFocus", "fieldBlur", "appBackground", "appForeground", "paste", "submit"}


class FeatureExtractionError(ValueError):
    def __init__(self, field, message):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def validate(events):
    """Mirror of the Swift validation; raises FeatureExtractionError naming the problem."""
    if len(events) == 0:
        raise FeatureExtractionError("interaction.events",
                                     "is empty; a session starts with a sessionStart event at t = 0")
    if len(events) > MAX_EVENTS:
        raise FeatureExtractionError("interaction.events",
                                     f"has {len(events)} events; at most {MAX_EVENTS} are accepted")
    previous = 0
    for i, (t, typ, _field) in enumerate(events):
        path = f"interaction.events[{i}]"
        if i == 0:
            if typ != "sessionStart":
                raise FeatureExtractionError(path + ".type", "the first event must be sessionStart")
            if t != 0:
                raise FeatureExtractionError(path + ".t", "sessionStart must have t = 0")
        elif typ == "sessionStart":
            raise FeatureExtractionError(path + ".type", "a session has exactly one sessionStart")
        if t < 0:
            raise FeatureExtractionError(path + ".t", "must not be negative")
        if t > MAX_SESSION_MS:
            raise FeatureExtractionError(path + ".t", f"exceeds the session cap of {MAX_SESSION_MS} ms")
        if t < previous:
            raise FeatureExtractionError(path + ".t", "events must be in time order")
        previous = t


def _flag(value):
    return NAN if value is None else (1.0 if value else 0.0)


def extract(events, device):
    """events: list of (t:int ms, type:str, field:str|None); device: dict with optional keys
    activeCall, callStartedBeforeSession, screenSharing, remoteAccessApp (bool or None).
    Returns a list of floats in FEATURE_NAMES order, NaN for missing."""
    validate(events)
    device = device or {}
    n = len(events)
    end_ms = events[-1][0]

    user_actions = 0
    keystrokes = 0
    deletions = 0
    first_input = None
    payee_pasted = 0
    amount_pasted = 0

    # Typing rhythm: consecutive keystrokes in the same field, no run break between.
    last_key_t = None
    last_key_field = None
    run_open = False
    rhythm_count = 0
    rhythm_sum = 0
    rhythm_gaps = []
    in_field_intervals = 0
    segment_pauses = 0
    segment_sum = 0

    # Background (app switching) state.
    in_background = False
    background_start = 0
    background_ms = 0
    app_switches = 0

    # Idle gaps between user actions, net of time in background.
    last_action_t = None
    last_action_bg = 0
    long_pauses = 0
    longest_pause = None

    last_input_t = None
    hesitation = None

    focused = None
    seen_fields = set()
    revisits = 0

    call_events = False
    first_call_event = None
    share_events = False

    near = False
    near_start = 0
    near_ms = 0
    first_proximity = None
    orientation = 0

    otp_focus_t = None
    otp_delay = None

    for t, typ, field in events:
        bg_now = background_ms + (t - background_start if in_background else 0)

        if typ in USER_ACTION:
            user_actions += 1
            if last_action_t is not None:
                gap = (t - last_action_t) - (bg_now - last_action_bg)
                if gap >= LONG_PAUSE_MS:
                    long_pauses += 1
                if longest_pause is None or gap > longest_pause:
                    longest_pause = gap
            last_action_t = t
            last_action_bg = bg_now

        if typ in INPUT:
            if first_input is None:
                first_input = t
            last_input_t = t
            if field == "otp" and otp_focus_t is not None and otp_delay is None:
                otp_delay = t - otp_focus_t

        if typ in KEYSTROKE:
            keystrokes += 1
            if typ == "delete":
                deletions += 1
            if run_open and field == last_key_field:
                gap = t - last_key_t
                in_field_intervals += 1
                if gap <= TYPING_GAP_MAX_MS:
                    rhythm_count += 1
                    rhythm_sum += gap
                    rhythm_gaps.append(gap)
                elif gap <= SEGMENT_PAUSE_MAX_MS:
                    segment_pauses += 1
                    segment_sum += gap
            last_key_t = t
            last_key_field = field
            run_open = True
        elif typ in RUN_BREAK:
            run_open = False

        if typ == "paste":
            if field == "payee":
                payee_pasted = 1
            elif field == "amount":
                amount_pasted = 1
        elif typ == "fieldFocus":
            if field is not None and field != focused:
                if field in seen_fields:
                    revisits += 1
                seen_fields.add(field)
                focused = field
            if field == "otp" and otp_focus_t is None:
                otp_focus_t = t
        elif typ == "fieldBlur":
            if field is not None and field == focused:
                focused = None
        elif typ == "appBackground":
            if not in_background:
                in_background = True
                background_start = t
                app_switches += 1
        elif typ == "appForeground":
            if in_background:
                in_background = False
                background_ms += t - background_start
        elif typ == "callStart" or typ == "callEnd":
            if not call_events:
                call_events = True
                first_call_event = typ
        elif typ == "screenShareStart" or typ == "screenShareEnd":
            share_events = True
        elif typ == "proximityNear" or typ == "proximityFar":
            if first_proximity is None:
                first_proximity = typ
                if typ == "proximityFar":
                    # Far first means the phone was near the ear from the start.
                    near_ms += t
            if typ == "proximityNear" and not near:
                near = True
                near_start = t
            elif typ == "proximityFar" and near:
                near = False
                near_ms += t - near_start
        elif typ == "orientationChange":
            orientation += 1
        elif typ == "submit":
            if last_input_t is not None:
                hesitation = t - last_input_t

    if in_background:
        background_ms += end_ms - background_start
    if near:
        near_ms += end_ms - near_start

    f = [NAN] * len(FEATURE_NAMES)
    f[INDEX["sessionSeconds"]] = end_ms / 1000.0
    f[INDEX["userActionCount"]] = float(user_actions)
    if first_input is not None:
        f[INDEX["firstInputSeconds"]] = first_input / 1000.0
    f[INDEX["keystrokeCount"]] = float(keystrokes)
    if rhythm_count > 0:
        mean = rhythm_sum / rhythm_count
        f[INDEX["keyIntervalMeanMs"]] = mean
        if rhythm_count >= 2 and mean > 0.0:
            ss = 0.0
            for g in rhythm_gaps:
                d = g - mean
                ss += d * d
            f[INDEX["keyIntervalCV"]] = math.sqrt(ss / rhythm_count) / mean
    if keystrokes > 0:
        bursts = keystrokes - rhythm_count
        f[INDEX["meanBurstLength"]] = keystrokes / bursts
        f[INDEX["deletionRatio"]] = deletions / keystrokes
    f[INDEX["segmentPauseCount"]] = float(segment_pauses)
    if in_field_intervals > 0:
        f[INDEX["segmentPauseShare"]] = segment_pauses / in_field_intervals
    if segment_pauses > 0:
        f[INDEX["segmentPauseMeanMs"]] = segment_sum / segment_pauses
    f[INDEX["longPauseCount"]] = float(long_pauses)
    if longest_pause is not None:
        f[INDEX["longestPauseSeconds"]] = longest_pause / 1000.0
    if hesitation is not None:
        f[INDEX["submitHesitationSeconds"]] = hesitation / 1000.0
    f[INDEX["deletionCount"]] = float(deletions)
    f[INDEX["payeePasted"]] = float(payee_pasted)
    f[INDEX["amountPasted"]] = float(amount_pasted)
    f[INDEX["fieldRevisits"]] = float(revisits)
    f[INDEX["appSwitchCount"]] = float(app_switches)
    f[INDEX["backgroundSeconds"]] = background_ms / 1000.0
    if end_ms > 0:
        f[INDEX["backgroundShare"]] = background_ms / end_ms
        f[INDEX["proximityNearShare"]] = near_ms / end_ms
    f[INDEX["orientationChanges"]] = float(orientation)
    if otp_delay is not None:
        f[INDEX["otpEntryDelaySeconds"]] = otp_delay / 1000.0

    # Device facts and call events. A call seen in the events, or a device that says a call is
    # (or was, before the session) active, is a call; only an explicit false is "no call".
    dev_active = device.get("activeCall")
    dev_before = device.get("callStartedBeforeSession")
    if dev_active is True or call_events or dev_before is True:
        active = True
    elif dev_active is False:
        active = False
    else:
        active = None
    # A callEnd with no callStart before it: the call was already running at sessionStart.
    # As for every device-derived flag, a "true" from any source wins over a "false".
    if dev_before is True or first_call_event == "callEnd":
        before = True
    elif dev_before is False or call_events or active is False:
        before = False
    else:
        before = None
    f[INDEX["activeCall"]] = _flag(active)
    f[INDEX["callStartedBeforeSession"]] = _flag(before)

    dev_share = device.get("screenSharing")
    if dev_share is True or share_events:
        sharing = True
    elif dev_share is False:
        sharing = False
    else:
        sharing = None
    f[INDEX["screenSharing"]] = _flag(sharing)
    f[INDEX["remoteAccessApp"]] = _flag(device.get("remoteAccessApp"))
    return f


def has_sufficient_evidence(f, rule):
    """The evidence rule (docs/features.md): behaviour was observed, or a device fact says
    something on its own. Mirrors `CoachingModelVersion.hasSufficientEvidence` in Swift."""
    actions = f[INDEX["userActionCount"]]
    seconds = f[INDEX["sessionSeconds"]]
    if (not math.isnan(actions) and actions >= rule["minUserActions"]
            and not math.isnan(seconds) and seconds >= rule["minSessionSeconds"]):
        return True
    return any(f[INDEX[name]] == 1.0 for name in rule["deviceSignals"])
