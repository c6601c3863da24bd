"""What the web kit's coarse timing in password and one-time-code fields (docs/capture.md)
does to the model's features and answers, on the simulator's web sessions.

    python3 bench/capture-secret-timing.py [COUNT]      # default 20,000 sessions; ~30 s

Each session of training/simulate.py's web profile with keys in a `password` or `otp` field is
scored twice with the current model (models/registry.json) and the web thresholds: with each
key's time, as the simulator emits it, and with the kit's bursts (capture/web/insight-capture.js
`record`/`flush`, ported below). Prints the features that moved and the levels that changed,
by label; never fails. No numpy or LightGBM: the tree walk is train.py's `raw_score`.
"""
import json
import math
import os
import sys

repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, repo + "/training")
import features as F
import simulate

K_ZERO = 1.0000000180025095e-35   # float(np.float32(1e-35)), as train.py has it
INF = 1e300

def raw_score(model, x):
    x = [0.0 if abs(v) <= K_ZERO else v for v in x]
    total = 0.0
    for tree in model["trees"]:
        splits, leaves = tree["splits"], tree["leaves"]
        if not splits:
            total += leaves[0]; continue
        node = 0
        while True:
            f, thr, default_left, missing, left, right, _ = splits[node]
            thr = math.inf if thr >= INF else (-math.inf if thr <= -INF else thr)
            v = x[f]
            if missing != 2 and math.isnan(v): v = 0.0
            if (missing == 1 and -K_ZERO <= v <= K_ZERO) or (missing == 2 and math.isnan(v)):
                node = left if default_left else right
            else:
                node = left if v <= thr else right
            if node < 0:
                total += leaves[~node]; break
    return total

def coarse(events):
    """The kit's burst rule (capture/web/insight-capture.js record/flush), on an event list."""
    out, burst = [], None
    def flush():
        nonlocal burst
        if burst:
            field, first, last, types = burst
            n = len(types)
            for i, typ in enumerate(types):
                t = first + (math.floor(i * (last - first) / (n - 1) + 0.5) if n > 1 else 0)
                out.append({"t": t, "type": typ, "field": field})
        burst = None
    for e in events:
        secret = e["type"] in ("keyDown", "delete") and e.get("field") in ("password", "otp")
        if secret and burst and burst[0] == e["field"] and e["t"] - burst[2] <= 1000:
            burst[2] = e["t"]; burst[3].append(e["type"]); continue
        flush()
        if secret:
            burst = [e["field"], e["t"], e["t"], [e["type"]]]
        else:
            out.append(e)
    flush()
    return out

current = json.load(open(repo + "/models/registry.json"))["current"]
model = json.load(open(f"{repo}/models/{current}/model.json"))
manifest = json.load(open(f"{repo}/models/{current}/manifest.json"))
thresholds = manifest["platformThresholds"]["web"]
names = model["featureNames"]
count = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
sessions = simulate.generate(count, 20261202, profile="web")
with_secret = changed_features = changed_level = 0
flagged = {(label, kind): 0 for label in (0, 1) for kind in ("each key", "bursts")}
labels = {0: 0, 1: 0}
moved = {}
levels = {}
for s in sessions:
    events = s["interaction"]["events"]
    if not any(e.get("field") in ("password", "otp") and e["type"] in ("keyDown", "delete") for e in events):
        continue
    with_secret += 1
    a = F.extract([(e["t"], e["type"], e.get("field")) for e in events], {})
    b = F.extract([(e["t"], e["type"], e.get("field")) for e in coarse(events)], {})
    diff = [F.FEATURE_NAMES[i] for i in range(len(a)) if not (a[i] == b[i] or (math.isnan(a[i]) and math.isnan(b[i])))]
    if diff: changed_features += 1
    for d in diff: moved[d] = moved.get(d, 0) + 1
    def level(f):
        x = [f[F.INDEX[n]] for n in names]
        ev = F.has_sufficient_evidence(list(f), manifest["evidenceRule"])
        raw = raw_score(model, x)
        t = thresholds[s["category"]]
        return "unknown" if not ev else ("high" if raw > t["high"]["raw"] else ("medium" if raw > t["medium"]["raw"] else "unknown"))
    la, lb = level(a), level(b)
    labels[s["label"]] += 1
    flagged[(s["label"], "each key")] += la != "unknown"
    flagged[(s["label"], "bursts")] += lb != "unknown"
    if la != lb:
        changed_level += 1
        levels[(s["label"], la, lb)] = levels.get((s["label"], la, lb), 0) + 1
print(f"model {current}: {count} simulated web sessions, {with_secret} with keys in a password or otp field")
print(f"features changed in {changed_features}: {moved}")
print(f"coaching level changed in {changed_level} ({100 * changed_level / max(1, with_secret):.2f} %):")
for (label, before, after), n in sorted(levels.items()):
    print(f"  {'coached' if label else 'genuine'} {before} -> {after}: {n}")
for label, name in ((1, "coached flagged (medium or high)"), (0, "genuine flagged (false alarms)")):
    print(f"{name}: each key {flagged[(label, 'each key')]} of {labels[label]}, bursts {flagged[(label, 'bursts')]} of {labels[label]}")
