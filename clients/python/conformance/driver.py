#!/usr/bin/env python3
"""The Python client's conformance driver (clients/conformance/README.md): `describe` prints the
client's operations and enumerations; `run` executes clients/conformance/scenario.json against
the daemon the environment names, through the client's public API only."""
import dataclasses
import datetime
import json
import os
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import insightd_client as insight  # noqa: E402
from insightd_client.wire import camel  # noqa: E402


def describe():
    print(json.dumps({
        "client": "python",
        "version": insight.__version__,
        "operations": {op: "%s %s" % (method, path) for op, (method, path, _) in insight.OPERATIONS.items()},
        "enums": insight.ENUMERATIONS,
        "requestMembers": {cls.__name__: [camel(f.name) for f in dataclasses.fields(cls) if f.init] for cls in (
            insight.EvaluationRequest, insight.InsightRequest, insight.Subject, insight.Interaction,
            insight.InteractionEvent, insight.DeviceFacts, insight.InteractionSource, insight.Transaction,
            insight.Initiator, insight.AgentFacts, insight.Label)},
    }, indent=1))


class Failed(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failed(message)


class Run:
    def __init__(self, scenario):
        self.scenario = scenario
        self.clients = {}
        self.saved = {}
        self.idempotency_keys = {}
        self.today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()

    def client(self, key_name, via=None, verify=True, pin=None):
        url = os.environ[{"tampering": "INSIGHT_TAMPERING_URL", "rekeying": "INSIGHT_REKEYING_URL"}.get(via, "INSIGHT_URL")]
        slot = (key_name, via, verify, pin)
        if slot not in self.clients:
            self.clients[slot] = insight.Client(url, os.environ["INSIGHT_KEY_" + key_name.upper()],
                                                verify_receipts=verify, timeout=10, **self.pins(pin))
        return self.clients[slot]

    @staticmethod
    def pins(pin):
        """The daemon's own keys (never the proxy's), pinned as the step says."""
        if pin is None:
            return {}
        jwks = insight.Client(os.environ["INSIGHT_URL"], "").signing_keys()
        if pin == "thumbprints":
            return {"pinned_thumbprints": [key.kid for key in jwks.keys]}
        return {"pinned_keys": jwks}

    @staticmethod
    def caller_id(name):
        return os.environ["INSIGHT_CALLER_" + name.upper()]

    # Each action returns what `expect` is checked against, or raises.

    def do_catalog(self, step):
        return {"catalog": self.client("sandbox").catalog()}

    def do_signingKeys(self, step):
        return {"jwks": insight.Client(os.environ["INSIGHT_URL"], "").signing_keys()}

    def do_evaluate(self, step):
        client = self.client(step["key"], step.get("via"), step.get("verify", True), step.get("pin"))
        request = dict(self.scenario["contexts"][step["context"]])
        if "requestId" in step:
            request["requestId"] = self.idempotency_keys.setdefault("request:" + step["requestId"], "%s-%s" % (step["requestId"], uuid.uuid4()))
        deadline = time.monotonic() + 15
        while True:
            evaluation = client.evaluate(request, override=step.get("override"))
            differs_from = step.get("untilKidDiffersFrom")
            if differs_from is None or evaluation.receipt.kid != self.saved[differs_from].receipt.kid \
                    or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        if "save" in step:
            self.saved[step["save"]] = evaluation
        return {"evaluation": evaluation}

    def do_report(self, step):
        evaluation = self.saved[step["evaluation"]]
        self.client(step["key"]).report_consumption(evaluation.event_id, insight.ConsumptionStatus(step["status"]),
                                                    [evaluation.insights[0].insight_id])
        return {"recorded": True}

    def do_label(self, step):
        labels = []
        for item in step["labels"] * step.get("repeat", 1):
            insight_id = item.get("insightId") or self.saved[item["insightOf"]].insights[0].insight_id
            labels.append(insight.Label(insight_id, insight.LabelOutcome(item["outcome"]), self.today,
                                        insight.FraudType(item["fraudType"]) if "fraudType" in item else None))
        name = step["idempotencyKey"]
        key = self.idempotency_keys.setdefault(name, "%s-%s" % (name, uuid.uuid4()))
        return {"labels": self.client(step["key"]).submit_labels(labels, idempotency_key=key)}

    def do_authorize(self, step):
        state = self.client(step["key"]).set_authorization(insight.AuthorizationSubject(**step["subject"]),
                                                           insight.AuthorizationChoice(step["status"]))
        return {"authorization": state}

    def do_queryAuthorization(self, step):
        return {"authorization": self.client(step["key"]).query_authorization(insight.AuthorizationSubject(**step["subject"]))}

    def do_transparency(self, step):
        result = self.client(step["key"]).transparency(insight.SubjectIdentifiers(**step["subject"]))
        return {"transparency": result, "authorization": result.authorization}

    def do_erase(self, step):
        return {"erasure": self.client(step["key"]).erase_subject(insight.SubjectIdentifiers(**step["subject"]))}

    def do_rateLimit(self, step):
        return {"rateLimit": self.client(step["key"]).caller_rate_limit(self.caller_id(step["caller"]))}

    def do_rateLimits(self, step):
        return {"callerIds": [entry.caller.caller_id for entry in self.client(step["key"]).rate_limits()]}

    def do_resetRateLimit(self, step):
        return {"rateLimit": self.client(step["key"]).reset_caller_rate_limit(self.caller_id(step["caller"]))}

    def do_callers(self, step):
        return {"callerIds": [caller.caller_id for caller in self.client(step["key"]).callers()]}

    def do_caller(self, step):
        return {"caller": self.client(step["key"]).caller(self.caller_id(step["caller"]))}

    def do_updateQuota(self, step):
        return {"caller": self.client(step["key"]).update_caller_quota(self.caller_id(step["caller"]), burst=step["burst"])}

    def do_keys(self, step):
        return {"keys": self.client(step["key"]).caller_keys(self.caller_id(step["caller"]))}

    def do_revokeKey(self, step):
        client = self.client(step["key"])
        caller_id = self.caller_id(step["caller"])
        keys = client.caller_keys(caller_id)
        check(len(keys) == 1, "the caller has %d keys, not 1" % len(keys))
        return {"revokedKey": client.revoke_caller_key(caller_id, keys[0].key_id)}

    def do_rotateSigningKey(self, step):
        subprocess.run(os.environ["INSIGHT_ROTATE_COMMAND"], shell=True, check=True)
        return {}

    def do_receiptHeads(self, step):
        receipt = self.saved[step["evaluation"]].receipt
        heads = self.client(step["key"]).receipt_heads(instance=receipt.head.instance, from_sequence=receipt.head.sequence, limit=1)
        return {"heads": heads}

    def expect(self, step, got, error):
        expect = step.get("expect", {})
        if "problem" in expect:
            want = expect["problem"]
            check(isinstance(error, insight.ProblemError), "expected problem %s, got %r" % (want["code"], error or got))
            check(error.code == want["code"] and type(error) is insight.PROBLEM_ERRORS[want["code"]],
                  "expected problem %s, got %s (%s)" % (want["code"], error.code, type(error).__name__))
            check(error.status == want["status"], "expected status %s, got %s" % (want["status"], error.status))
            if want.get("retryAfter"):
                check(error.retry_after is not None and error.retry_after > 0, "no retry_after")
            for key in ("field", "reason"):
                if key in want:
                    check(getattr(error, key) == want[key], "expected %s %s, got %s" % (key, want[key], getattr(error, key)))
            if "attempts" in expect:
                check(error.attempts == expect["attempts"], "%d attempts" % error.attempts)
            return
        if "clientError" in expect:
            classes = {"receiptInvalid": insight.ReceiptInvalidError, "batchTooLarge": insight.BatchTooLargeError,
                       "unknownMember": insight.UnknownMemberError}
            check(isinstance(error, classes[expect["clientError"]]), "expected %s, got %r" % (expect["clientError"], error or got))
            if "path" in expect:
                check(error.path == expect["path"], "expected path %s, got %s" % (expect["path"], error.path))
            return
        if error is not None:
            raise error
        evaluation = got.get("evaluation")
        if evaluation is not None:
            check(evaluation.verified == expect.get("verified", True),
                  "verified is %s, expected %s" % (evaluation.verified, expect.get("verified", True)))
            insight_result = evaluation.insights[0]
            if "environment" in expect:
                check(evaluation.environment == expect["environment"], "environment %s" % evaluation.environment)
            check(evaluation.tenant == os.environ["INSIGHT_TENANT"], "tenant %s" % evaluation.tenant)
            if "insights" in expect:
                check(len(evaluation.insights) == expect["insights"], "%d insights" % len(evaluation.insights))
            if "value" in expect:
                check(insight_result.value == expect["value"], "value %s, expected %s" % (insight_result.value, expect["value"]))
            if "reason" in expect:
                check(expect["reason"] in insight_result.reasons, "reasons %s" % insight_result.reasons)
            if "insightError" in expect:
                check(insight_result.error is not None and insight_result.error.code == expect["insightError"],
                      "insight outcome %s" % insight_result.outcome)
            if "decision" in expect:
                check(evaluation.decision.action == expect["decision"], "decision %s" % evaluation.decision.action)
            check(isinstance(evaluation.decision.action, insight.DecisionAction), "decision %r" % evaluation.decision.action)
            if "kidDiffersFrom" in expect:
                check(evaluation.receipt.kid != self.saved[expect["kidDiffersFrom"]].receipt.kid, "the signing key did not change")
            if "attempts" in expect:
                check(evaluation.attempts == expect["attempts"], "%d attempts" % evaluation.attempts)
            if "replayed" in expect:
                check(evaluation.replayed == expect["replayed"], "replayed is %s" % evaluation.replayed)
            if "sameEventAs" in expect:
                check(evaluation.event_id == self.saved[expect["sameEventAs"]].event_id, "another eventId")
        if "insightTypes" in expect:
            types = [entry.type for entry in got["catalog"].insights]
            check(all(t in types for t in expect["insightTypes"]), "catalog types %s" % types)
        if "minKeys" in expect:
            check(len(got["jwks"].keys) >= expect["minKeys"], "%d keys" % len(got["jwks"].keys))
        if "recorded" in expect:
            check(got.get("recorded") is True, "not recorded")
        if "results" in expect:
            statuses = [result.status for result in got["labels"].results]
            check(statuses == expect["results"], "label results %s" % statuses)
            check(getattr(got["labels"].summary, "accepted") == statuses.count("accepted"), "summary %s" % got["labels"].summary)
        if "replayed" in expect and "labels" in got:
            check(got["labels"].replayed == expect["replayed"], "replayed is %s" % got["labels"].replayed)
        if "authorization" in expect:
            check(got["authorization"].status == expect["authorization"], "authorization %s" % got["authorization"].status)
        if "minEvaluations" in expect:
            check(len(got["transparency"].evaluations) >= expect["minEvaluations"], "%d evaluations" % len(got["transparency"].evaluations))
        if "erasedEvaluations" in expect:
            erasure = got["erasure"]
            check((erasure.evaluations, erasure.authorizations) == (expect["erasedEvaluations"], expect["erasedAuthorizations"]),
                  "erased %d evaluations, %d authorizations" % (erasure.evaluations, erasure.authorizations))
            check(erasure.tenant == os.environ["INSIGHT_TENANT"] and erasure.hash_keys >= 1, "erasure %s" % erasure)
        if "minThrottled" in expect:
            check(got["rateLimit"].throttled.count >= expect["minThrottled"], "throttled %d" % got["rateLimit"].throttled.count)
        if "includesCaller" in expect:
            check(self.caller_id(expect["includesCaller"]) in got["callerIds"], "caller not listed")
        if "caller" in expect:
            owner = got.get("caller") or got.get("rateLimit")
            check(owner.caller_id == self.caller_id(expect["caller"]), "caller %s" % owner.caller_id)
        if "environment" in expect and "caller" in got:
            check(got["caller"].environment == expect["environment"], "environment %s" % got["caller"].environment)
        if "burst" in expect:
            check(got["caller"].burst == expect["burst"], "burst %s" % got["caller"].burst)
        if "keys" in expect:
            check(len(got["keys"]) == expect["keys"], "%d keys" % len(got["keys"]))
            check(sum(1 for key in got["keys"] if key.revoked_at) == expect["revoked"], "revoked keys")
        if "revoked" in expect and "revokedKey" in got:
            check(got["revokedKey"].revoked_at is not None, "revokedAt is null")
        if "includesHeadOf" in expect:
            receipt = self.saved[expect["includesHeadOf"]].receipt
            check(any(head.head == receipt.head_jws for head in got["heads"].heads), "the receipt's head is not listed")

    def step(self, step):
        got, error = {}, None
        try:
            got = getattr(self, "do_" + step["do"])(step)
        except insight.InsightdError as raised:
            error = raised
        self.expect(step, got, error)


def run():
    with open(os.environ["INSIGHT_SCENARIO"]) as f:
        scenario = json.load(f)
    runner = Run(scenario)
    passed = failed = 0
    for step in scenario["steps"]:
        try:
            runner.step(step)
            passed += 1
            print("ok    %s" % step["id"], flush=True)
        except Exception as error:  # a step's failure of any kind is reported, and the run goes on
            failed += 1
            print("FAIL  %s: %s: %s" % (step["id"], type(error).__name__, error), flush=True)
    print("python: %d passed, %d failed" % (passed, failed))
    return failed == 0


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command == "describe":
        describe()
    elif command == "run":
        sys.exit(0 if run() else 1)
    else:
        sys.exit("usage: driver.py describe|run")
