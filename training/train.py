"""Trains the isLikelyBeingCoached models and writes the artifacts the daemon loads.

    python train.py --out ../models            (training/make-model.sh runs this in its venv)
    python train.py --from-export export.jsonl --version 3.0 --out DIR
                                               a version trained on the operator's own traffic, from
                                               the JSON lines of `insightctl training export`

Deterministic: sessions are a pure function of (seed, index), LightGBM runs single-threaded with
deterministic=True and force_row_wise=True, and nothing time- or host-dependent is written, so two
runs give byte-identical files.

For each version in VERSIONS it writes models/<version>/:
  model.json     the LightGBM ensemble in a compact form exported from Booster.dump_model()
                 (format described in docs/model-card.md and export_model below)
  manifest.json  feature order, per-category thresholds (and per platform where a client
                 profile needs its own: web, from `simulate.py --profile web`), evidence and
                 reason parameters, training description, seed, held-out metrics, sha256 of
                 model.json
  fixtures.json  held-out sessions: raw events -> features -> LightGBM raw score -> level ->
                 reasons, plus edge rows that put features exactly on split thresholds, at zero
                 and missing. The Swift tests replay every row.
and models/registry.json naming the current version.
"""

import argparse
import hashlib
import json
import math
import os
import random
import sys

import lightgbm as lgb
import numpy as np

import features as F
import simulate

SEED = 20261202
SESSIONS = 100_000
# Sessions of the web profile (simulate.py --profile web: what the web capture kit emits), as
# many as the app profile's so that their thresholds are as well estimated. The models are not
# trained on them (a 2.0 trained with their training part added detected one point more of the
# web's coached sessions: not worth a version); their validation part (30,000) sets the web
# thresholds per category, their test part gives the web figures of the model card.
WEB_SESSIONS = 100_000
SPLIT = (0.40, 0.30, 0.30)  # train, validation (thresholds), test (reported metrics, fixtures)
FIXTURE_SESSIONS = 2000
FIXTURE_EDGE_ROWS = 300

CATEGORIES = simulate.CATEGORIES
HIGH_GENUINE_SHARE = 0.005   # at most 0.5% of genuine validation sessions score above `high`
MEDIUM_GENUINE_SHARE = 0.03  # at most 3% above `medium`
MIN_CATEGORY_GENUINE = 1000  # fewer genuine validation sessions: use the pooled threshold

EVIDENCE_RULE = {
    "minUserActions": 3,
    "minSessionSeconds": 2.0,
    "deviceSignals": ["activeCall", "screenSharing", "remoteAccessApp"],
}
REASON_RULE = {"maxReasons": 4, "minContribution": 0.2}

# Reason code per feature (None: the feature informs the score but names no signal).
# The same table lives in Swift (Feature.reasonCode); docs/features.md documents it.
REASON_CODES = {
    "sessionSeconds": "longSession",
    "userActionCount": None,
    "firstInputSeconds": "delayedFirstInput",
    "keystrokeCount": None,
    "keyIntervalMeanMs": "unusualTypingRhythm",
    "keyIntervalCV": "unusualTypingRhythm",
    "meanBurstLength": "segmentedTyping",
    "segmentPauseCount": "segmentedTyping",
    "segmentPauseShare": "segmentedTyping",
    "segmentPauseMeanMs": "segmentedTyping",
    "longPauseCount": "longPauses",
    "longestPauseSeconds": "longPauses",
    "submitHesitationSeconds": "longHesitation",
    "deletionCount": "frequentCorrections",
    "deletionRatio": "frequentCorrections",
    "payeePasted": "pastedPayee",
    "amountPasted": "pastedAmount",
    "fieldRevisits": "fieldRevisits",
    "appSwitchCount": "frequentAppSwitching",
    "backgroundSeconds": "frequentAppSwitching",
    "backgroundShare": "frequentAppSwitching",
    "activeCall": "activeCallDuringSession",
    "callStartedBeforeSession": "callStartedBeforeSession",
    "proximityNearShare": "phoneAtEar",
    "orientationChanges": "orientationChanges",
    "screenSharing": "screenSharing",
    "remoteAccessApp": "remoteAccessApp",
    "otpEntryDelaySeconds": "delayedOtpEntry",
}

# Direction each feature may push the score (LightGBM monotone constraints). Published findings
# give a direction for these signals; constraining them keeps the model from learning simulator
# artefacts such as "a slightly shorter session is more suspicious", and makes the per-feature
# contributions behind the reason codes point the way the signal does.
MONOTONE = {
    "sessionSeconds": 1, "firstInputSeconds": 1, "meanBurstLength": -1,
    "segmentPauseCount": 1, "segmentPauseShare": 1, "segmentPauseMeanMs": 1, "longPauseCount": 1,
    "longestPauseSeconds": 1, "submitHesitationSeconds": 1, "payeePasted": 1,
    "amountPasted": 1, "fieldRevisits": 1, "appSwitchCount": 1, "backgroundSeconds": 1,
    "backgroundShare": 1, "activeCall": 1, "callStartedBeforeSession": 1,
    "proximityNearShare": 1, "orientationChanges": 1, "screenSharing": 1, "remoteAccessApp": 1,
    "otpEntryDelaySeconds": 1,
}

# Raw event counts name no coaching signal and mostly measure the form (how many fields, how
# long the text), which differs between apps: the models do not see them. They stay in the
# feature vector for the evidence rule.
COUNT_ONLY = ("userActionCount", "keystrokeCount")

# What the phone reports about its situation (a call, the phone at the ear or moved, the screen
# shared, a remote-access app) may interact only among themselves, and the behavioural timing
# features only among themselves: the score is then a sum of a device part and a behaviour part.
# Without this the trees learn "a call matters only in a long session", because every simulated
# coached session that has a call is also long; with it, each group's evidence counts on its
# own, which carries over to sessions shaped differently from the simulator's.
DEVICE_GROUP = ("activeCall", "callStartedBeforeSession", "proximityNearShare",
                "orientationChanges", "screenSharing", "remoteAccessApp")

VERSIONS = {
    # 1.0: device facts and coarse timing only, what a first SDK integration can send.
    "1.0": {
        "features": [
            "sessionSeconds", "firstInputSeconds", "keyIntervalMeanMs", "keyIntervalCV",
            "deletionRatio", "payeePasted", "appSwitchCount", "activeCall", "screenSharing",
            "remoteAccessApp",
        ],
        "rounds": 120,
        "status": "active",
    },
    # 2.0: every feature, including segmented typing, hesitation, proximity and call timing.
    "2.0": {"features": [n for n in F.FEATURE_NAMES if n not in COUNT_ONLY], "rounds": 200,
            "status": "active"},
}
CURRENT = "2.0"

LGB_PARAMS = {
    "objective": "binary",
    "learning_rate": 0.08,
    "num_leaves": 31,
    "min_data_in_leaf": 40,
    "lambda_l2": 1.0,
    "feature_fraction": 0.9,
    "max_bin": 255,
    "monotone_constraints_method": "basic",
    "deterministic": True,
    "force_row_wise": True,
    "num_threads": 1,
    "verbosity": -1,
}

# LightGBM's kZeroThreshold is the float literal 1e-35f widened to double.
K_ZERO = float(np.float32(1e-35))
MISSING_TYPES = {"None": 0, "Zero": 1, "NaN": 2}


# ---------------------------------------------------------------------------- model export

def export_model(booster, names):
    """Compact form of Booster.dump_model(): per tree, `splits` rows
    [featureIndex, threshold, defaultLeft, missingType, left, right, internalValue] and
    `leaves` values; a child >= 0 is a split index, a child < 0 is leaf ~child."""
    dump = booster.dump_model()
    if not dump["objective"].startswith("binary"):
        raise SystemExit(f"unexpected objective {dump['objective']}")
    if dump["feature_names"] != names:
        raise SystemExit("feature names in the booster differ from the version's feature list")
    trees = []
    for info in dump["tree_info"]:
        root = info["tree_structure"]
        n_leaves = info["num_leaves"]
        splits = [None] * (n_leaves - 1)
        leaves = [None] * n_leaves

        def ref(node):
            if "split_index" in node:
                return node["split_index"]
            return ~node.get("leaf_index", 0)

        stack = [root]
        while stack:
            node = stack.pop()
            if "split_index" not in node:
                leaves[node.get("leaf_index", 0)] = node["leaf_value"]
                continue
            if node["decision_type"] != "<=":
                raise SystemExit(f"unsupported decision_type {node['decision_type']}")
            splits[node["split_index"]] = [
                node["split_feature"], node["threshold"], 1 if node["default_left"] else 0,
                MISSING_TYPES[node["missing_type"]], ref(node["left_child"]),
                ref(node["right_child"]), node["internal_value"],
            ]
            stack.append(node["left_child"])
            stack.append(node["right_child"])
        assert all(s is not None for s in splits) and all(v is not None for v in leaves)
        trees.append({"splits": splits, "leaves": leaves})
    return {
        "format": "insightd.tree-ensemble/1",
        "source": f"LightGBM {lgb.__version__} Booster.dump_model()",
        "objective": "binary",
        "scoreTransform": "sigmoid",
        "featureNames": names,
        "trees": trees,
    }


# LightGBM keeps an open-ended bin's bound as +infinity in memory but writes it as 1e300
# (Common::AvoidInf), so a split "x <= 1e300" in the dump is "x <= +inf" for predict().
INF_THRESHOLD = 1e300


def _next_node(split, v):
    _f, thr, default_left, missing, left, right, _iv = split
    if thr >= INF_THRESHOLD:
        thr = math.inf
    elif thr <= -INF_THRESHOLD:
        thr = -math.inf
    if missing != 2 and math.isnan(v):
        v = 0.0
    if (missing == 1 and -K_ZERO <= v <= K_ZERO) or (missing == 2 and math.isnan(v)):
        return left if default_left else right
    return left if v <= thr else right


def _prepare(x):
    # LightGBM's dense-row predictor drops |v| <= kZeroThreshold, so such values arrive as 0.
    return [0.0 if abs(v) <= K_ZERO else v for v in x]


def raw_score(model, x):
    """The walk LightGBM does for predict(raw_score=True), in the same summation order."""
    x = _prepare(x)
    total = 0.0
    for tree in model["trees"]:
        splits, leaves = tree["splits"], tree["leaves"]
        if not splits:
            total += leaves[0]
            continue
        node = 0
        while True:
            split = splits[node]
            node = _next_node(split, x[split[0]])
            if node < 0:
                total += leaves[~node]
                break
    return total


def contributions(model, x):
    """Saabas path attribution: each split's feature gets child value minus parent value."""
    x = _prepare(x)
    out = [0.0] * len(model["featureNames"])
    for tree in model["trees"]:
        splits, leaves = tree["splits"], tree["leaves"]
        if not splits:
            continue
        node = 0
        parent = splits[0][6]
        while True:
            split = splits[node]
            node = _next_node(split, x[split[0]])
            child = leaves[~node] if node < 0 else splits[node][6]
            out[split[0]] += child - parent
            parent = child
            if node < 0:
                break
    return out


def reasons(model, x):
    contrib = contributions(model, x)
    totals = {}
    order = []
    for j, name in enumerate(model["featureNames"]):
        code = REASON_CODES[name]
        if code is None or math.isnan(x[j]):
            continue
        if code not in totals:
            totals[code] = 0.0
            order.append(code)
        totals[code] += contrib[j]
    ranked = sorted(order, key=lambda c: (-totals[c], c))
    chosen = [c for c in ranked if totals[c] >= REASON_RULE["minContribution"]]
    if not chosen and ranked and totals[ranked[0]] > 0.0:
        chosen = ranked[:1]
    return chosen[:REASON_RULE["maxReasons"]]


def level_for(raw, thresholds, evidence):
    if not evidence:
        return "unknown"
    if raw > thresholds["high"]["raw"]:
        return "high"
    if raw > thresholds["medium"]["raw"]:
        return "medium"
    return "unknown"


# ---------------------------------------------------------------------------- metrics

def roc_auc(y, s):
    order = np.argsort(s, kind="mergesort")
    s_sorted = s[order]
    ranks = np.empty(len(s), dtype=np.float64)
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and s_sorted[j + 1] == s_sorted[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    pos = y == 1
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def pr_auc(y, s):
    """Average precision (step-wise area under the precision-recall curve)."""
    order = np.argsort(-s, kind="mergesort")
    y_sorted = y[order]
    s_sorted = s[order]
    tp = np.cumsum(y_sorted)
    fp = np.cumsum(1 - y_sorted)
    last = np.r_[np.nonzero(np.diff(s_sorted))[0], len(s) - 1]  # end of each tie group
    precision = tp[last] / (tp[last] + fp[last])
    recall = tp[last] / tp[-1]
    prev = np.r_[0.0, recall[:-1]]
    return float(np.sum((recall - prev) * precision))


def threshold_for(genuine_raw, share):
    """The smallest observed score t such that at most `share` of genuine scores are > t."""
    s = np.sort(genuine_raw)[::-1]
    allowed = int(math.floor(share * len(s)))
    return float(s[allowed])


def r6(x):
    return float(round(x, 6))


def category_thresholds(raw, cats, genuine):
    """Per category, the thresholds over the scores `raw` of the sessions where `genuine` (genuine
    and passing the evidence rule): `high` lets at most HIGH_GENUINE_SHARE of them score above,
    `medium` MEDIUM_GENUINE_SHARE; a category with fewer than MIN_CATEGORY_GENUINE takes the
    pooled threshold."""
    pooled = {
        "medium": threshold_for(raw[genuine], MEDIUM_GENUINE_SHARE),
        "high": threshold_for(raw[genuine], HIGH_GENUINE_SHARE),
    }
    thresholds = {}
    for cat in CATEGORIES:
        sel = genuine & (cats == cat)
        t = {}
        for level, share in (("medium", MEDIUM_GENUINE_SHARE), ("high", HIGH_GENUINE_SHARE)):
            value = threshold_for(raw[sel], share) if sel.sum() >= MIN_CATEGORY_GENUINE else pooled[level]
            t[level] = {"raw": value, "score": 1.0 / (1.0 + math.exp(-value))}
        t["validationGenuineSessions"] = int(sel.sum())
        thresholds[cat] = t
    return thresholds


def rates(levels, y, mask):
    """Detection and false alarms of `levels` among the sessions of `mask`."""
    flagged = levels != "unknown"
    high = levels == "high"
    pos = mask & (y == 1)
    neg = mask & (y == 0)
    return {
        "sessions": int(mask.sum()),
        "coached": int(pos.sum()),
        "detectionRateMediumOrHigh": r6(flagged[pos].mean()) if pos.any() else None,
        "detectionRateHigh": r6(high[pos].mean()) if pos.any() else None,
        "genuineMediumOrHighRate": r6(flagged[neg].mean()) if neg.any() else None,
        "genuineHighRate": r6(high[neg].mean()) if neg.any() else None,
    }


def by_scenario(levels, scenarios):
    out = {}
    for name in sorted(set(scenarios)):
        m = scenarios == name
        out[name] = {"sessions": int(m.sum()), "mediumOrHighRate": r6((levels[m] != "unknown").mean()),
                     "highRate": r6((levels[m] == "high").mean())}
    return out


REFERENCE_BINS = 10  # deciles of the held-out raw scores per category (fewer where scores tie)


def score_reference(raw, cats, platforms=None):
    """The reference distribution the daemon measures drift against (population stability
    index, docs/operations.md "Drift"), per category: `edges`, strictly increasing raw scores
    (log-odds) that cut the held-out sessions of the category into deciles, and `shares`, the
    share of those sessions in each of the len(edges) + 1 bins. A score s falls in bin
    k = number of edges <= s (Swift: CoachingModelVersion.scoreBin)."""
    out = {}
    for cat in CATEGORIES:
        s = np.sort(np.asarray(raw)[np.asarray(cats) == cat])
        if len(s) < REFERENCE_BINS * 10:
            continue
        cuts = [float(s[int(len(s) * k / REFERENCE_BINS)]) for k in range(1, REFERENCE_BINS)]
        edges = sorted(set(cuts))
        counts = np.bincount(np.searchsorted(np.array(edges), s, side="right"), minlength=len(edges) + 1)
        out[cat] = {"edges": edges, "shares": [r6(c / len(s)) for c in counts]}
        # The same bins over another client profile's held-out sessions (`platforms`: name ->
        # (raw, cats)): what that platform's scores are expected to look like, so that its drift
        # is measured against its own traffic, not against the mix above.
        for name, (p_raw, p_cats) in sorted((platforms or {}).items()):
            p = np.asarray(p_raw)[np.asarray(p_cats) == cat]
            if len(p) < REFERENCE_BINS * 10:
                continue
            p_counts = np.bincount(np.searchsorted(np.array(edges), p, side="right"), minlength=len(edges) + 1)
            out[cat].setdefault("platformShares", {})[name] = [r6(c / len(p)) for c in p_counts]
    return {"scale": "raw", "split": "test", "bins": out}


# ---------------------------------------------------------------------------- data

def load_sessions(path):
    """Operator-labelled sessions, one JSON object per line, in the simulator's output format:
    {"label": 0|1, "category": "payment", "interaction": {"events": [...], "device": {...}}}
    plus optional "scenario" (e.g. the fraudType of the label) and "platform". Sessions the
    daemon itself would refuse are skipped and counted, not guessed at."""
    sessions, refused = [], 0
    with open(path) as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            s = json.loads(line)
            if s.get("label") not in (0, 1) or s.get("category") not in CATEGORIES:
                raise SystemExit(f"{path}:{line_no}: needs label 0/1 and a category of {CATEGORIES}")
            try:
                F.validate(simulate.events_as_tuples(s))
            except F.FeatureExtractionError:
                refused += 1
                continue
            s.setdefault("scenario", "labelled")
            s.setdefault("platform", "unknown")
            sessions.append(s)
    # A seeded shuffle, so the split does not follow the file's (often chronological) order.
    random.Random(SEED).shuffle(sessions)
    return sessions, refused


# An export of `insightctl training export`: one JSON object a line, the label, the category and
# every feature by name (null = missing); docs/operations.md, "Training on your own traffic".
EXPORT_LABELS = {"confirmedFraud": 1, "confirmedLegitimate": 0, "presumedGenuine": 0}
MIN_EXPORT_ROWS = 200     # fewer: thresholds and held-out metrics would mean nothing
MIN_EXPORT_CLASS = 20     # of each class (fraud, genuine): each split needs both


def load_export(path):
    """The rows of an export as (sessions, X, y, idx) like build_dataset's, split 40/30/30 with
    each (label, evidence) group shuffled and split on its own, so that every split holds both
    classes and validation holds genuine rows that pass the evidence rule (the thresholds are
    set on them). Exits with a message naming the problem for a malformed line, too few rows or
    one class only."""
    sessions, rows = [], []
    with open(path) as fh:
        for line_no, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                raise SystemExit(f"{path}:{line_no}: not JSON ({e.msg})")
            if not isinstance(r, dict) or r.get("label") not in EXPORT_LABELS or r.get("category") not in CATEGORIES \
                    or not isinstance(r.get("features"), dict):
                raise SystemExit(f"{path}:{line_no}: needs a label of {sorted(EXPORT_LABELS)}, a category of "
                                 f"{CATEGORIES} and features by name (the format of insightctl training export)")
            features = r["features"]
            unknown = sorted(set(features) - set(F.FEATURE_NAMES))
            if unknown:
                raise SystemExit(f"{path}:{line_no}: unknown features {unknown}")
            x = []
            for name in F.FEATURE_NAMES:
                v = features.get(name)
                if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                    raise SystemExit(f"{path}:{line_no}: feature {name} must be a number or null")
                x.append(float("nan") if v is None else float(v))
            rows.append(x)
            sessions.append({"label": EXPORT_LABELS[r["label"]], "category": r["category"],
                             "scenario": r["label"], "platform": "unknown"})
    fraud = sum(s["label"] for s in sessions)
    genuine = len(sessions) - fraud
    if len(sessions) < MIN_EXPORT_ROWS:
        raise SystemExit(f"{path}: {len(sessions)} rows; training needs at least {MIN_EXPORT_ROWS} "
                         f"(export a longer period, or add --presume-genuine-after-maturity)")
    if fraud < MIN_EXPORT_CLASS or genuine < MIN_EXPORT_CLASS:
        only = "only one class: " if min(fraud, genuine) == 0 else ""
        raise SystemExit(f"{path}: {only}{fraud} confirmedFraud and {genuine} genuine rows; training needs at "
                         f"least {MIN_EXPORT_CLASS} of each")
    X = np.array(rows, dtype=np.float64)
    y = np.array([s["label"] for s in sessions], dtype=np.int64)
    evidence = [F.has_sufficient_evidence(list(x), EVIDENCE_RULE) for x in X]
    rng = random.Random(SEED)
    idx = {"train": [], "validation": [], "test": []}
    for group in sorted({(int(label), e) for label, e in zip(y, evidence)}):
        members = [i for i in range(len(sessions)) if (int(y[i]), evidence[i]) == group]
        rng.shuffle(members)
        n_train = int(len(members) * SPLIT[0])
        n_val = int(len(members) * SPLIT[1])
        idx["train"] += members[:n_train]
        idx["validation"] += members[n_train:n_train + n_val]
        idx["test"] += members[n_train + n_val:]
    if not any(y[i] == 0 and evidence[i] for i in idx["validation"]):
        raise SystemExit(f"{path}: no genuine row with enough evidence (the manifest's evidence rule) for the "
                         f"validation split; the thresholds are set on them")
    idx = {split: np.array(sorted(ids), dtype=np.int64) for split, ids in idx.items()}
    return sessions, X, y, idx


class Dataset:
    def __init__(self, sessions, X, y, idx):
        self.sessions, self.X, self.y, self.idx = sessions, X, y, idx
        self.categories = np.array([s["category"] for s in sessions])
        self.evidence = np.array([F.has_sufficient_evidence(list(x), EVIDENCE_RULE) for x in X])
        self.scenarios = np.array([("coached." if s["label"] else "genuine.") + s["scenario"] for s in sessions])


def build_web_dataset():
    """The web-profile sessions, split as the others (their training part is not used)."""
    return Dataset(*build_dataset(simulate.generate(WEB_SESSIONS, SEED, profile="web")))


def build_dataset(sessions=None):
    if sessions is None:
        sessions = simulate.generate(SESSIONS, SEED)
    X = np.array([F.extract(simulate.events_as_tuples(s), s["interaction"].get("device", {}))
                  for s in sessions], dtype=np.float64)
    y = np.array([s["label"] for s in sessions], dtype=np.int64)
    n = len(sessions)
    n_train = int(n * SPLIT[0])
    n_val = int(n * SPLIT[1])
    idx = {
        "train": np.arange(0, n_train),
        "validation": np.arange(n_train, n_train + n_val),
        "test": np.arange(n_train + n_val, n),
    }
    return sessions, X, y, idx


def describe(sessions, idx):
    out = {}
    for split, ids in idx.items():
        counts = {}
        for i in ids:
            s = sessions[i]
            key = ("coached" if s["label"] else "genuine") + "." + s["scenario"]
            counts[key] = counts.get(key, 0) + 1
        out[split] = {"sessions": int(len(ids)), "scenarios": dict(sorted(counts.items()))}
    return out


# ---------------------------------------------------------------------------- fixtures

DEVICE_KEYS = ["activeCall", "callStartedBeforeSession", "screenSharing", "remoteAccessApp"]


def encode_events(events):
    """[dt, typeIndex, fieldIndex, ...] with dt the gap to the previous event and -1 = no field:
    about a third of the size of the wire JSON, so the committed fixtures stay small."""
    out = []
    prev = 0
    for t, typ, field in events:
        out.extend([t - prev, F.EVENT_TYPES.index(typ), -1 if field is None else F.FIELDS.index(field)])
        prev = t
    return out


def jnum(v):
    return None if math.isnan(v) else v


WEB_FIXTURE_SESSIONS = 400  # rows of the web profile, judged with the web thresholds


def fixture_rows(model, manifest, sessions, X, ids, rng, web=None):
    names = model["featureNames"]
    cols = [F.INDEX[n] for n in names]
    rows = []

    def row(full, session, platform=None):
        x = [full[c] for c in cols]
        raw = raw_score(model, x)
        category = session["category"] if session else rng.choice(CATEGORIES)
        evidence = F.has_sufficient_evidence(full, EVIDENCE_RULE)
        table = manifest["platformThresholds"][platform] if platform else manifest["thresholds"]
        level = level_for(raw, table[category], evidence)
        r = {"category": category}
        if platform:
            r["platform"] = platform
        if session is not None and "interaction" in session:
            r["events"] = encode_events(simulate.events_as_tuples(session))
            dev = session["interaction"].get("device", {})
            r["device"] = [dev.get(k) for k in DEVICE_KEYS]
        r["features"] = [jnum(v) for v in full]
        r["raw"] = raw
        r["level"] = level
        r["reasons"] = reasons(model, x) if level != "unknown" else []
        return r

    n_sessions = min(FIXTURE_SESSIONS, len(ids) // 2)
    for i in ids[:n_sessions]:
        rows.append(row(list(X[i]), sessions[i]))

    # Edge rows: values exactly on split thresholds (`<=` must go left), one ulp either side,
    # zero, a value inside LightGBM's zero band, and missing, to pin the missing-value rules.
    by_feature = {}
    for tree in model["trees"]:
        for split in tree["splits"]:
            by_feature.setdefault(split[0], []).append(split[1])
    for k in range(min(FIXTURE_EDGE_ROWS, len(ids) - n_sessions)):
        base = list(X[ids[n_sessions + k]])
        for _ in range(rng.randint(1, 4)):
            j = rng.randrange(len(names))
            kind = rng.random()
            thresholds = by_feature.get(j)
            if kind < 0.55 and thresholds:
                thr = rng.choice(thresholds)
                v = [thr, math.nextafter(thr, math.inf), math.nextafter(thr, -math.inf)][rng.randrange(3)]
            elif kind < 0.75:
                v = float("nan")
            elif kind < 0.9:
                v = 0.0
            else:
                v = 1e-36
            base[cols[j]] = v
        rows.append(row(base, None))

    # Web-profile sessions after the others (which stay as they were), with the web thresholds.
    if web is not None:
        for i in web.idx["test"][:WEB_FIXTURE_SESSIONS]:
            rows.append(row(list(web.X[i]), web.sessions[i], platform="web"))
    return rows


# ---------------------------------------------------------------------------- main

def sha256(data):
    return hashlib.sha256(data).hexdigest()


def train_version(version, spec, sessions, X, y, idx, out_dir, data_description, fixture_offset, web=None):
    names = spec["features"]
    cols = [F.INDEX[n] for n in names]
    params = dict(LGB_PARAMS)
    params["seed"] = SEED
    params["monotone_constraints"] = [MONOTONE.get(n, 0) for n in names]
    params["interaction_constraints"] = [
        [j for j, n in enumerate(names) if n in DEVICE_GROUP],
        [j for j, n in enumerate(names) if n not in DEVICE_GROUP],
    ]
    train_ids = idx["train"]
    dtrain = lgb.Dataset(X[train_ids][:, cols], label=y[train_ids], feature_name=names,
                         free_raw_data=False, params={"verbosity": -1})
    booster = lgb.train(params, dtrain, num_boost_round=spec["rounds"])
    model = export_model(booster, names)

    # The exported walk must reproduce LightGBM bit for bit before anything is written.
    test_ids = idx["test"]
    lgb_raw = booster.predict(X[test_ids][:, cols], raw_score=True)
    mine = np.array([raw_score(model, list(X[i][cols])) for i in test_ids])
    if not np.array_equal(lgb_raw, mine):
        worst = float(np.max(np.abs(lgb_raw - mine)))
        raise SystemExit(f"{version}: exported model differs from LightGBM by up to {worst}")

    def scores(ids):
        return booster.predict(X[ids][:, cols], raw_score=True)

    evidence = np.array([F.has_sufficient_evidence(list(x), EVIDENCE_RULE) for x in X])

    # Thresholds on the validation split, per category, over genuine sessions that pass the
    # evidence rule (the others answer `unknown` whatever they score).
    val_ids = idx["validation"]
    val_raw = scores(val_ids)
    val_cat = np.array([sessions[i]["category"] for i in val_ids])
    val_gen = (y[val_ids] == 0) & evidence[val_ids]
    thresholds = category_thresholds(val_raw, val_cat, val_gen)

    # Held-out metrics on the test split.
    test_raw = lgb_raw
    y_test = y[test_ids]
    cat_test = np.array([sessions[i]["category"] for i in test_ids])
    plat_test = np.array([sessions[i]["platform"] for i in test_ids])
    levels = np.array([level_for(r, thresholds[c], e)
                       for r, c, e in zip(test_raw, cat_test, evidence[test_ids])])

    def rate(mask):
        return rates(levels, y_test, mask)

    metrics = {
        "split": "test",
        "rocAuc": r6(roc_auc(y_test, test_raw)),
        "prAuc": r6(pr_auc(y_test, test_raw)),
        "overall": rate(np.ones(len(test_ids), dtype=bool)),
        "byCategory": {c: rate(cat_test == c) for c in CATEGORIES},
        # Web clients and old SDKs send no device facts: the behaviour-only case.
        "byPlatform": {p: rate(plat_test == p) for p in sorted(set(plat_test))},
        "byScenario": by_scenario(levels, np.array([("coached." if sessions[i]["label"] else "genuine.")
                                                    + sessions[i]["scenario"] for i in test_ids])),
    }

    # The web profile (what the web capture kit emits): its own thresholds per category, set on
    # its validation sessions by the same rule, and its figures on its test sessions, beside
    # what the app thresholds would have given it.
    platform_thresholds, platform_reference = {}, {}
    if web is not None:
        w_val, w_test = web.idx["validation"], web.idx["test"]
        w_val_raw = booster.predict(web.X[w_val][:, cols], raw_score=True)
        web_thresholds = category_thresholds(w_val_raw, web.categories[w_val], (web.y[w_val] == 0) & web.evidence[w_val])
        platform_thresholds["web"] = web_thresholds
        w_raw = booster.predict(web.X[w_test][:, cols], raw_score=True)
        w_y, w_cat, w_ev = web.y[w_test], web.categories[w_test], web.evidence[w_test]
        w_levels = np.array([level_for(r, web_thresholds[c], e) for r, c, e in zip(w_raw, w_cat, w_ev)])
        app_levels = np.array([level_for(r, thresholds[c], e) for r, c, e in zip(w_raw, w_cat, w_ev)])
        every = np.ones(len(w_test), dtype=bool)
        metrics["webProfile"] = {
            "data": f"simulate.py --profile web, seed {SEED}: {len(w_test)} test sessions "
                    f"({int(w_y.sum())} coached), thresholds set on {len(w_val)} validation sessions",
            "rocAuc": r6(roc_auc(w_y, w_raw)),
            "prAuc": r6(pr_auc(w_y, w_raw)),
            "overall": rates(w_levels, w_y, every),
            "byCategory": {c: rates(w_levels, w_y, w_cat == c) for c in CATEGORIES},
            "byScenario": by_scenario(w_levels, web.scenarios[w_test]),
            "withAppThresholds": {"overall": rates(app_levels, w_y, every),
                                  "byCategory": {c: rates(app_levels, w_y, w_cat == c) for c in CATEGORIES}},
        }
        platform_reference["web"] = (w_raw, w_cat)

    vdir = os.path.join(out_dir, version)
    os.makedirs(vdir, exist_ok=True)
    model_bytes = (json.dumps(model, separators=(",", ":")) + "\n").encode()
    with open(os.path.join(vdir, "model.json"), "wb") as fh:
        fh.write(model_bytes)

    manifest = {
        "insightType": "isLikelyBeingCoached",
        "schemaVersion": 1,
        "version": version,
        "status": spec["status"],
        "model": {
            "file": "model.json",
            "sha256": sha256(model_bytes),
            "format": model["format"],
            "trainer": f"LightGBM {lgb.__version__}",
            "trees": len(model["trees"]),
            "scoreTransform": "sigmoid",
        },
        "features": names,
        "thresholds": {c: {"medium": thresholds[c]["medium"], "high": thresholds[c]["high"]}
                       for c in CATEGORIES},
        "evidenceRule": EVIDENCE_RULE,
        "reasons": REASON_RULE,
        "scoreReference": score_reference(test_raw, cat_test, platform_reference),
        "training": {
            "data": data_description,
            "seed": SEED,
            "sessions": len(sessions),
            "split": {"train": SPLIT[0], "validation": SPLIT[1], "test": SPLIT[2]},
            "splits": describe(sessions, idx),
            "thresholdRule": {
                "high": f"at most {HIGH_GENUINE_SHARE:.1%} of genuine validation sessions of the category score above",
                "medium": f"at most {MEDIUM_GENUINE_SHARE:.0%} of genuine validation sessions of the category score above",
                "validationGenuineSessions": {c: thresholds[c]["validationGenuineSessions"] for c in CATEGORIES},
            },
            "lightgbm": {k: v for k, v in sorted(params.items())},
            "rounds": spec["rounds"],
        },
        "metrics": metrics,
    }
    if platform_thresholds:
        # Requests whose interaction.source names the platform take these; the others the above.
        manifest["platformThresholds"] = {
            name: {c: {"medium": t[c]["medium"], "high": t[c]["high"]} for c in CATEGORIES}
            for name, t in platform_thresholds.items()}
        manifest["training"]["thresholdRule"]["platformValidationGenuineSessions"] = {
            name: {c: t[c]["validationGenuineSessions"] for c in CATEGORIES} for name, t in platform_thresholds.items()}

    rng = random.Random(f"{SEED}:{version}")
    rows = fixture_rows(model, manifest, sessions, X, test_ids[fixture_offset:], rng, web)
    # LightGBM itself, not only the exported walk, must agree with every fixture row.
    full = np.array([[np.nan if v is None else v for v in r["features"]] for r in rows])
    check = booster.predict(full[:, cols], raw_score=True)
    if not np.array_equal(check, np.array([r["raw"] for r in rows])):
        raise SystemExit(f"{version}: fixture raw scores differ from LightGBM")
    fixtures = {
        "format": "insightd.coaching-fixtures/1",
        "version": version,
        "eventTypes": F.EVENT_TYPES,
        "fields": F.FIELDS,
        "deviceKeys": DEVICE_KEYS,
        "featureNames": F.FEATURE_NAMES,
        "rows": rows,
    }
    fixture_bytes = (json.dumps(fixtures, separators=(",", ":")) + "\n").encode()
    with open(os.path.join(vdir, "fixtures.json"), "wb") as fh:
        fh.write(fixture_bytes)
    manifest["fixtures"] = {"file": "fixtures.json", "rows": len(rows), "sha256": sha256(fixture_bytes)}
    with open(os.path.join(vdir, "manifest.json"), "w") as fh:
        fh.write(json.dumps(manifest, indent=2) + "\n")
    return manifest


def main():
    ap = argparse.ArgumentParser(
        description="Train the isLikelyBeingCoached models and write models/<version>/.",
        epilog="Without options: regenerate the built-in versions from the simulator "
               "(what make-model.sh does). With --sessions and --version: train one new version "
               "on your own labelled sessions (docs/model-card.md, 'Retraining').")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "models"))
    ap.add_argument("--sessions", help="JSONL of labelled sessions to train on instead of the simulator")
    ap.add_argument("--version", help="train only this (new) version, e.g. 3.0")
    ap.add_argument("--feature-set", default=CURRENT, choices=sorted(VERSIONS),
                    help="built-in version whose features and rounds --version uses")
    ap.add_argument("--make-current", action="store_true",
                    help="with --version: name it current in registry.json")
    ap.add_argument("--from-export", metavar="FILE",
                    help="JSON lines of insightctl training export (captured feature vectors with their labels) "
                         "to train --version on")
    args = ap.parse_args()
    out_dir = os.path.abspath(args.out)
    web = None  # the web profile, where the simulator is the data

    if args.from_export:
        if args.sessions:
            raise SystemExit("--from-export and --sessions are two sources: give one")
        if not args.version:
            raise SystemExit("--from-export trains one new version: give --version, e.g. 3.0")
        sessions, X, y, idx = load_export(args.from_export)
        fraud = int(y.sum())
        presumed = sum(1 for s in sessions if s["scenario"] == "presumedGenuine")
        print(f"{len(sessions)} captured vectors from {args.from_export}: {fraud} confirmedFraud, "
              f"{len(sessions) - fraud - presumed} confirmedLegitimate, {presumed} presumedGenuine", file=sys.stderr)
        data = (f"captured feature vectors of the operator's own traffic from {os.path.basename(args.from_export)} "
                f"(insightctl training export: {fraud} confirmedFraud, {len(sessions) - fraud - presumed} "
                f"confirmedLegitimate, {presumed} presumedGenuine)")
    elif args.sessions:
        loaded, refused = load_sessions(args.sessions)
        print(f"{len(loaded)} labelled sessions from {args.sessions}, {refused} refused as invalid",
              file=sys.stderr)
        data = (f"operator-labelled sessions from {os.path.basename(args.sessions)} "
                f"({refused} invalid ones skipped)")
        sessions, X, y, idx = build_dataset(loaded)
    else:
        data = "synthetic sessions from training/simulate.py (no real user data)"
        sessions, X, y, idx = build_dataset()
        web = build_web_dataset()

    if args.version:
        if not all(p.isdigit() for p in args.version.split(".")):
            raise SystemExit("--version must be digits separated by dots, e.g. 3.0")
        spec = dict(VERSIONS[args.feature_set])
        plan = [(args.version, spec, 0)]
    else:
        # Different held-out sessions back each version's fixtures, for wider coverage.
        plan = [(v, spec, 0 if v == CURRENT else FIXTURE_SESSIONS + FIXTURE_EDGE_ROWS)
                for v, spec in VERSIONS.items()]

    for version, spec, offset in plan:
        m = train_version(version, spec, sessions, X, y, idx, out_dir, data, offset, web)
        o = m["metrics"]["overall"]
        print(f"{version}: ROC-AUC {m['metrics']['rocAuc']:.4f}  PR-AUC {m['metrics']['prAuc']:.4f}  "
              f"detected medium+ {o['detectionRateMediumOrHigh']:.3f} high {o['detectionRateHigh']:.3f}  "
              f"genuine medium+ {o['genuineMediumOrHighRate']:.4f} high {o['genuineHighRate']:.4f}",
              file=sys.stderr)
        if "webProfile" in m["metrics"]:
            w = m["metrics"]["webProfile"]["overall"]
            print(f"{version} web profile: ROC-AUC {m['metrics']['webProfile']['rocAuc']:.4f}  "
                  f"detected medium+ {w['detectionRateMediumOrHigh']:.3f} high {w['detectionRateHigh']:.3f}  "
                  f"genuine medium+ {w['genuineMediumOrHighRate']:.4f} high {w['genuineHighRate']:.4f}",
                  file=sys.stderr)

    current = args.version if args.version and args.make_current else None if args.version else CURRENT
    if current is not None:
        # Which version answers when a request names none. The daemon lists versions from the
        # directories themselves, so this file names only the current one.
        registry = {"insightType": "isLikelyBeingCoached", "current": current}
        with open(os.path.join(out_dir, "registry.json"), "w") as fh:
            fh.write(json.dumps(registry, indent=2) + "\n")


if __name__ == "__main__":
    main()
