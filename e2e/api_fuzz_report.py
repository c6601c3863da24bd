"""Checks a schemathesis NDJSON report (e2e/api-fuzz.sh): every operation was reached with ids that exist.

Passing checks alone do not show that the fuzzer got past the 404 of an unknown id. This reads the
event log of the run and fails unless:

- every link of the OpenAPI document was followed in the stateful phase, with the values it
  extracts applied, and answered 2xx at least once (so generic tools can chain real ids);
- `POST /v1/evaluations/{eventId}/consumption` was answered 204 or 409 (an evaluation that
  exists) in the stateful phase through the `reportConsumption` link, and outside it (where
  e2e/schemathesis_hooks.py names evaluations made before the run);
- a labels request that followed the `submitLabels` link had an item judged against a real
  insight (`accepted`, `duplicate` or `conflict`, never only `unknownInsight`).

Usage: python3 e2e/api_fuzz_report.py OPENAPI_JSON NDJSON_REPORT
"""

import base64
import json
import sys
from collections import Counter

CONSUMPTION = "POST /v1/evaluations/{eventId}/consumption"
LABELS = "POST /v1/labels"
METHODS = ("get", "head", "post", "put", "patch", "delete", "options", "trace")


def documented_links(spec):
    """{(source label, status, link name, target label)} of every link in the document."""
    labels = {}
    for path, item in spec["paths"].items():
        for method in METHODS:
            if method in item:
                labels[item[method]["operationId"]] = f"{method.upper()} {path}"
    links = set()
    for path, item in spec["paths"].items():
        for method in METHODS:
            for status, response in item.get(method, {}).get("responses", {}).items():
                for name, link in response.get("links", {}).items():
                    links.add((f"{method.upper()} {path}", status, name, labels[link["operationId"]]))
    return links


def interactions(report):
    """(phase, label, status, transition id or None, transition applied, response body) of every call.

    Every event schemathesis writes is read; only a finished scenario's answered calls count. A
    scenario may finish with nothing recorded (skipped, errored before a call, or a stateful run
    whose recorder holds no interactions: schemathesis then leaves the members out), and a call
    may have no answer (a transport error): those yield nothing, and the checks of main() decide.
    """
    with open(report) as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError as error:
                raise SystemExit(f"api-fuzz: {report}:{number} is not JSON ({error})")
            finished = event.get("ScenarioFinished") if isinstance(event, dict) else None
            if not isinstance(finished, dict):
                continue
            recorder = finished.get("recorder") or {}
            cases = recorder.get("cases") or {}
            for case_id, interaction in (recorder.get("interactions") or {}).items():
                response = (interaction or {}).get("response")
                case = cases.get(case_id) or {}
                value = case.get("value") or {}
                if response is None or "method" not in value or "path" not in value:
                    continue
                transition = case.get("transition") or {}
                content = response.get("content")
                body = base64.b64decode(content["$base64"]) if isinstance(content, dict) and "$base64" in content else content
                yield (finished.get("phase"), f"{value['method']} {value['path']}", response.get("status_code"),
                       transition.get("id"), case.get("is_transition_applied", False), body)


def main(spec_path, report_path):
    links = documented_links(json.load(open(spec_path)))
    followed = Counter()
    consumption = Counter()
    judged_labels = 0
    for phase, label, status, transition, applied, body in interactions(report_path):
        if label == CONSUMPTION and status in (204, 409):
            consumption["stateful via a link" if phase == "stateful" and transition and applied else phase] += 1
        if phase != "stateful" or not transition or not applied:
            continue
        for link in links:
            source, code, name, target = link
            if transition == f"{source} -> [{code}] {name} -> {target}" and 200 <= status < 300:
                followed[link] += 1
                if target == LABELS:
                    try:
                        results = json.loads(body)["results"]
                    except (TypeError, ValueError, KeyError):
                        results = []
                    if any(r.get("status") in ("accepted", "duplicate", "conflict") for r in results):
                        judged_labels += 1
    problems = [f"the stateful phase never followed link {name} ({source} -> [{code}] -> {target}) to a 2xx answer"
                for source, code, name, target in sorted(links) if followed[(source, code, name, target)] == 0]
    if consumption["stateful via a link"] == 0:
        problems.append(f"{CONSUMPTION} never answered 204 or 409 to a report that followed a link")
    if sum(n for phase, n in consumption.items() if phase != "stateful via a link" and phase != "stateful") == 0:
        problems.append(f"{CONSUMPTION} never answered 204 or 409 outside the stateful phase")
    if any(target == LABELS for _, _, _, target in links) and judged_labels == 0:
        problems.append(f"no {LABELS} request that followed a link had an item about an existing insight")
    summary = ", ".join(f"{link[2]} {n}" for link, n in sorted(followed.items()))
    print(f"api-fuzz: links followed to a 2xx answer: {summary or 'none'}; consumption 204/409: "
          + ", ".join(f"{phase} {n}" for phase, n in sorted(consumption.items())))
    for problem in problems:
        print(f"api-fuzz: FAIL: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
