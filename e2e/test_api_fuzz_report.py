"""Tests of e2e/api_fuzz_report.py on recorded schemathesis event logs (run by e2e/api-fuzz.sh first).

e2e/testdata/api-fuzz-events.ndjson holds real lines of a run of the pinned schemathesis 4.32.5
against insightd (2026-12-08: its first events, the smallest finished scenario, a stateful scenario
that followed createEvaluation and reportConsumption, its last events) and, between them, the
shapes that run did not write but schemathesis' NDJSON writer does (reporting/ndjson.py leaves
out a recorder's empty `cases`, `checks` and `interactions`): a stateful scenario that recorded
nothing, a skipped one, one that errored before a call, a call with no response (a transport
error), a FuzzScenarioFinished, a NonFatalError and an Interrupted event.
"""

import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import api_fuzz_report  # noqa: E402

SPEC = os.path.join(HERE, "..", "openapi", "openapi.json")
EVENTS = os.path.join(HERE, "testdata", "api-fuzz-events.ndjson")


def recorded():
    with open(EVENTS) as events:
        return events.read()


def scenario(phase, calls):
    """A ScenarioFinished line with one answered call per (method, path, status, transition, body)."""
    cases, interactions = {}, {}
    for n, (method, path, status, transition, body) in enumerate(calls):
        case_id = f"case{n}"
        cases[case_id] = {"value": {"method": method, "path": path, "id": case_id},
                          "transition": {"id": transition} if transition else None,
                          "is_transition_applied": transition is not None}
        interactions[case_id] = {"request": {"method": method, "uri": "http://127.0.0.1:1" + path, "headers": {}},
                                 "response": {"status_code": status, "headers": {}, "content": body, "elapsed": 0.001}}
    return json.dumps({"ScenarioFinished": {"phase": phase, "status": "success",
                                            "recorder": {"label": "extra", "cases": cases, "interactions": interactions}}})


class ApiFuzzReportTests(unittest.TestCase):
    def run_main(self, path):
        with open(os.devnull, "w") as quiet:
            stdout, stderr = sys.stdout, sys.stderr
            sys.stdout = sys.stderr = quiet
            try:
                return api_fuzz_report.main(SPEC, path)
            finally:
                sys.stdout, sys.stderr = stdout, stderr

    def test_every_event_shape_is_read_and_only_answered_calls_count(self):
        calls = [(phase, label, status) for phase, label, status, _, _, _ in api_fuzz_report.interactions(EVENTS)]
        self.assertEqual(calls, [
            ("fuzzing", "HEAD /livez", 200),
            ("stateful", "GET /v1/insights", 200),
            ("stateful", "POST /v1/evaluations", 200),
            ("stateful", "GET /v1/insights", 200),
            ("stateful", "POST /v1/evaluations/{eventId}/consumption", 204),
        ])

    def test_a_run_missing_links_fails_by_name_not_by_a_crash(self):
        problems = []
        original = print

        def capture(*args, **kwargs):
            if kwargs.get("file") is sys.stderr:
                problems.append(" ".join(map(str, args)))

        api_fuzz_report.print = capture
        try:
            self.assertEqual(self.run_main(EVENTS), 1)
        finally:
            api_fuzz_report.print = original
        self.assertEqual(len(problems), 3, problems)
        self.assertTrue(any("submitLabels" in p for p in problems), problems)

    def test_a_complete_run_passes(self):
        labels = json.dumps({"results": [{"insightId": "i", "status": "accepted"}]})
        with tempfile.NamedTemporaryFile("w", suffix=".ndjson", delete=False) as report:
            report.write(recorded())
            report.write(scenario("stateful", [("POST", "/v1/labels", 200,
                                                "POST /v1/evaluations -> [200] submitLabels -> POST /v1/labels", labels)]) + "\n")
            report.write(scenario("fuzzing", [("POST", "/v1/evaluations/{eventId}/consumption", 409, None, None)]) + "\n")
        try:
            self.assertEqual(self.run_main(report.name), 0)
        finally:
            os.unlink(report.name)

    def test_a_line_cut_short_is_named(self):
        with tempfile.NamedTemporaryFile("w", suffix=".ndjson", delete=False) as report:
            report.write(recorded())
            report.write('{"ScenarioFinished":{"phase":"stateful","recorder":{"cases":')
        try:
            with self.assertRaises(SystemExit) as stop:
                list(api_fuzz_report.interactions(report.name))
            self.assertIn(":16 is not JSON", str(stop.exception.code))
        finally:
            os.unlink(report.name)


if __name__ == "__main__":
    unittest.main()
