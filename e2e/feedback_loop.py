"""The feedback loop's traffic and its independent count (e2e/feedback-loop.sh).

    feedback_loop.py traffic BASE KEY SESSIONS LEDGER [--prefix P] [--version V]
        one evaluation per simulated session (training/simulate.py's JSON lines), then its
        consumption report (a fixed rotation of statuses, every seventh left unreported);
        appends one line per evaluation to LEDGER: what was sent and what was answered.
    feedback_loop.py label BASE KEY LEDGER
        labels arrive later: every coached session confirmed fraud, every other genuine one
        confirmed legitimate (a fraud team investigates the flagged and a sample of the rest);
        rewrites LEDGER with what was labelled.
    feedback_loop.py compare REPORT
        one line per version: its role, and precision and recall at medium|high over every
        category, with their samples and the PSI of its scores (the operator's comparison).
    feedback_loop.py check REPORT LEDGER VERSION [--role served|shadow] [--values-from LEDGER2]
        the report's row for VERSION against counts made here from LEDGER alone: values,
        consumption, labels per value, and the successes and samples of precision and recall.
        With --values-from, the values are those LEDGER2 (the same sessions answered by VERSION
        directly, in the sandbox) recorded, matched by session index.

Standard library only: it runs on the system python3 of `make test`.
"""
import argparse
import http.client
import json
import sys
import urllib.parse

STATUSES = ["usedReducedFriction", "usedUnchangedFriction", "usedIncreasedFriction",
            "notUsedNotNeeded", "notUsedError", "usedEvaluationOnly", None]
VALUES = ["unknown", "medium", "high"]


class API:
    """One keep-alive connection to the daemon."""

    def __init__(self, base, key):
        url = urllib.parse.urlsplit(base)
        self.connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        self.key = key

    def post(self, path, body, headers=None):
        self.connection.request("POST", path, body=json.dumps(body).encode(),
                                headers={"Authorization": "Bearer " + self.key,
                                         "Content-Type": "application/json", **(headers or {})})
        response = self.connection.getresponse()
        data = response.read()
        return response.status, (json.loads(data) if data else None)


def fail(message):
    print("feedback_loop: " + message, file=sys.stderr)
    sys.exit(1)


def traffic(args):
    api = API(args.base, args.key)
    insight = {"type": "isLikelyBeingCoached", "schemaVersion": 1}
    if args.version:
        insight["modelVersion"] = args.version
    with open(args.sessions) as sessions, open(args.ledger, "a") as ledger:
        for index, line in enumerate(sessions):
            session = json.loads(line)
            body = {"requestId": "%s-%d" % (args.prefix, index), "operationCategory": session["category"],
                    "insights": [insight],
                    # Each session its own person: velocity has nothing to add, so the values are
                    # the model's.
                    "subject": {"account": "%s-account-%d" % (args.prefix, index),
                                "device": "%s-device-%d" % (args.prefix, index)},
                    "interaction": session["interaction"]}
            status, answer = api.post("/v1/evaluations", body)
            if status != 200:
                fail("evaluation %d answered %d: %s" % (index, status, answer))
            answered = answer["insights"][0]
            value = answered.get("outcome", {}).get("value")
            if value is None:
                fail("evaluation %d has no value: %s" % (index, answer))
            report = STATUSES[index % len(STATUSES)]
            if report is not None:
                consumption = {"status": report}
                if report.startswith("used"):
                    consumption["insightIdsUsed"] = [answered["insightId"]]
                status, problem = api.post("/v1/evaluations/%s/consumption" % answer["eventId"], consumption)
                if status != 204:
                    fail("consumption of %d answered %d: %s" % (index, status, problem))
            ledger.write(json.dumps({"index": index, "category": session["category"], "coached": session["label"] == 1,
                                     "eventId": answer["eventId"], "insightId": answered["insightId"],
                                     "modelVersion": answered["modelVersion"], "value": value,
                                     "consumption": report}) + "\n")


def label(args):
    api = API(args.base, args.key)
    rows = [json.loads(line) for line in open(args.ledger)]
    labels = []
    for row in rows:
        if row["coached"]:
            row["label"] = "confirmedFraud"
            labels.append({"insightId": row["insightId"], "outcome": "confirmedFraud",
                           "fraudType": "authorityImpersonation", "discoveredAt": "2026-12-01"})
        elif row["index"] % 2 == 0:
            row["label"] = "confirmedLegitimate"
            labels.append({"insightId": row["insightId"], "outcome": "confirmedLegitimate",
                           "discoveredAt": "2026-12-01"})
        else:
            row["label"] = None
    for start in range(0, len(labels), 100):
        status, answer = api.post("/v1/labels", {"labels": labels[start:start + 100]},
                                  {"Idempotency-Key": "%s-%d" % (args.ledger.rsplit("/", 1)[-1], start)})
        if status != 200:
            fail("labels answered %d: %s" % (status, answer))
        refused = [r for r in answer["results"] if r["status"] != "accepted"]
        if refused:
            fail("labels refused: %s" % refused[:3])
    with open(args.ledger, "w") as ledger:
        for row in rows:
            ledger.write(json.dumps(row) + "\n")
    print("labelled %d of %d evaluations (%d fraud)" % (len(labels), len(rows), sum(r["coached"] for r in rows)))


def interval_counts(rows):
    """successes and sample of precision and recall, as the report defines them."""
    labelled = [r for r in rows if r.get("label")]
    fraud = [r for r in labelled if r["label"] == "confirmedFraud"]
    flagged = [r for r in labelled if r["value"] in ("medium", "high")]
    high = [r for r in labelled if r["value"] == "high"]
    return {
        ("precision", "mediumOrHigh"): (sum(r["label"] == "confirmedFraud" for r in flagged), len(flagged)),
        ("precision", "high"): (sum(r["label"] == "confirmedFraud" for r in high), len(high)),
        ("recall", "mediumOrHigh"): (sum(r["value"] in ("medium", "high") for r in fraud), len(fraud)),
        ("recall", "high"): (sum(r["value"] == "high" for r in fraud), len(fraud)),
    }


def check(args):
    report = json.load(open(args.report))
    rows = [json.loads(line) for line in open(args.ledger)]
    if args.values_from:
        direct = {json.loads(line)["index"]: json.loads(line) for line in open(args.values_from)}
        for row in rows:
            row["value"] = direct[row["index"]]["value"]
    mismatches = []
    categories = sorted({r["category"] for r in rows})
    for category in categories:
        mine = [r for r in rows if r["category"] == category]
        found = [v for v in report["versions"] if v["modelVersion"] == args.version and v["category"] == category]
        if len(found) != 1:
            fail("the report has %d rows for %s/%s" % (len(found), args.version, category))
        row = found[0]
        if args.role and row.get("role") != args.role:
            mismatches.append("%s/%s: role %s, expected %s" % (args.version, category, row.get("role"), args.role))
        expect = {"evaluations": len(mine)}
        for value in VALUES:
            expect["values." + value] = sum(r["value"] == value for r in mine)
        for status in STATUSES:
            name = status or "notReported"
            expect["consumption." + name] = sum(r["consumption"] == status for r in mine)
        for outcome in ("confirmedFraud", "confirmedLegitimate"):
            for value in VALUES:
                expect["labelled.%s.%s" % (outcome, value)] = sum(r.get("label") == outcome and r["value"] == value
                                                                  for r in mine)
        for (measure, level), (successes, sample) in interval_counts(mine).items():
            expect["%s.%s.successes" % (measure, level)] = successes
            expect["%s.%s.sample" % (measure, level)] = sample
        for path, want in expect.items():
            got = row
            for part in path.split("."):
                got = got.get(part) if isinstance(got, dict) else None
            if got != want:
                mismatches.append("%s/%s %s: report %s, counted %s" % (args.version, category, path, got, want))
    if mismatches:
        fail("the report disagrees with the independent count:\n  " + "\n  ".join(mismatches))
    print("%s: %d evaluations in %d categories agree with the report" % (args.version, len(rows), len(categories)))


def compare(args):
    report = json.load(open(args.report))
    for version in sorted({v["modelVersion"] for v in report["versions"]}):
        rows = [v for v in report["versions"] if v["modelVersion"] == version]
        def total(measure):
            return (sum(r[measure]["mediumOrHigh"]["successes"] for r in rows),
                    sum(r[measure]["mediumOrHigh"]["sample"] for r in rows))
        (ps, pn), (rs, rn) = total("precision"), total("recall")
        psi = [r["psi"]["value"] for r in rows if r.get("psi") and r["psi"].get("value") is not None]
        print("%s (%s): precision %d of %d, recall %d of %d at medium|high; PSI %s" % (
            version, rows[0].get("role"), ps, pn, rs, rn,
            ", ".join("%.3f" % p for p in psi) if psi else "none"))


def main():
    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("traffic")
    p.add_argument("base"); p.add_argument("key"); p.add_argument("sessions"); p.add_argument("ledger")
    p.add_argument("--prefix", default="loop"); p.add_argument("--version")
    p = commands.add_parser("label")
    p.add_argument("base"); p.add_argument("key"); p.add_argument("ledger")
    p = commands.add_parser("compare")
    p.add_argument("report")
    p = commands.add_parser("check")
    p.add_argument("report"); p.add_argument("ledger"); p.add_argument("version")
    p.add_argument("--role"); p.add_argument("--values-from")
    args = parser.parse_args()
    {"traffic": traffic, "label": label, "compare": compare, "check": check}[args.command](args)


if __name__ == "__main__":
    main()
