"""Requests encode as the API's JSON; answers decode into the typed models, open to values a
later insightd adds; problems become their typed errors."""
import json
import unittest

import insightd_client as insight
from insightd_client.client import Client
from insightd_client.wire import decode, decode_request, encode


class WireTests(unittest.TestCase):
    def test_request_encodes_camel_case_without_absent_fields(self):
        request = insight.EvaluationRequest(
            insight.OperationCategory.RESOURCE_USE, [insight.InsightRequest.is_likely_being_coached()],
            interaction=insight.Interaction(events=[insight.InteractionEvent(0, insight.EventType.SESSION_START)],
                                            device=insight.DeviceFacts(active_call=True)))
        self.assertEqual(encode(request), {
            "operationCategory": "resourceUse",
            "insights": [{"type": "isLikelyBeingCoached", "schemaVersion": 1}],
            "interaction": {"events": [{"t": 0, "type": "sessionStart"}], "device": {"activeCall": True}}})

    def test_answer_decodes_with_open_values(self):
        answer = decode(insight.EvaluationResponse, {
            "eventId": "e", "tenant": "t", "environment": "sandbox", "serverTimestamp": "s",
            "reportConsumptionBy": "r", "futureField": 1,
            "insights": [{"insightId": "i", "type": "isLikelyBeingCoached", "schemaVersion": 1,
                          "outcome": {"value": "veryHigh"}, "reasons": ["x"]}],
            "decision": {"action": "confirmOutOfBand", "reasons": [], "policyVersion": "default-1"}})
        self.assertIs(answer.decision.action, insight.DecisionAction.CONFIRM_OUT_OF_BAND)
        self.assertIs(answer.environment, insight.Environment.SANDBOX)
        self.assertEqual(answer.insights[0].value, "veryHigh")
        with self.assertRaises(ValueError):
            decode(insight.EvaluationResponse, {"eventId": "e"})

    # The web kit's object, as InsightCapture's session.finish() returns it.
    KIT = {"events": [{"t": 0, "type": "sessionStart"}, {"t": 900, "type": "submit"}],
           "source": {"kit": "insight-capture-web", "version": "1.0.0", "platform": "web"}}

    def refused(self, request):
        """The UnknownMemberError evaluate raises, before sending (port 9 answers nothing: a
        request that got out would be a TransportError instead)."""
        with self.assertRaises(insight.UnknownMemberError) as raised:
            Client("http://127.0.0.1:9", "key", max_retries=0).evaluate(request)
        return raised.exception

    def base(self, **members):
        return dict({"operationCategory": "payment",
                     "insights": [{"type": "isLikelyBeingCoached", "schemaVersion": 1}]}, **members)

    def test_request_with_the_kit_object_wrapped_twice_is_refused_by_its_path(self):
        error = self.refused(self.base(interaction={"interaction": self.KIT}))
        self.assertEqual(error.path, "interaction.interaction")
        self.assertIn("interaction.interaction", str(error))

    def test_request_with_a_misspelt_member_is_refused_by_its_path(self):
        error = self.refused(self.base(transaction={"newCounterParty": True}))
        self.assertEqual(error.path, "transaction.newCounterParty")
        self.assertIn("newCounterparty", error.members)
        self.assertEqual(self.refused(self.base(interaction=dict(self.KIT, events=[{"t": 0, "type": "sessionStart", "x": 1}]))).path,
                         "interaction.events[0].x")

    def test_request_forwarding_the_kit_object_unchanged_decodes_whole(self):
        request = decode_request(insight.EvaluationRequest, self.base(interaction=self.KIT))
        self.assertEqual(encode(request)["interaction"], self.KIT)

    def test_answer_with_unknown_members_still_decodes(self):
        problem = decode(insight.Problem, {"type": "t", "title": "t", "status": 422, "code": "contextInvalid",
                                           "detail": "d", "addedLater": {"x": 1}})
        self.assertEqual(problem.code, "contextInvalid")

    def test_every_problem_code_has_its_error(self):
        for code in insight.ProblemCode:
            body = json.dumps({"type": "urn:insightd:problem:" + code.value, "title": "t", "status": 429,
                               "code": code.value, "detail": "d", "reason": "callerRate"}).encode()
            error = Client._problem(429, {"retry-after": "3"}, body)
            self.assertIs(type(error), insight.PROBLEM_ERRORS[code.value])
            self.assertEqual((error.code, error.retry_after, error.reason), (code, 3.0, insight.ThrottleReason.CALLER_RATE))
        unknown = Client._problem(400, {}, b'{"type":"x","title":"t","status":400,"code":"somethingNew","detail":"d"}')
        self.assertIs(type(unknown), insight.ProblemError)

    def test_more_than_a_thousand_labels_are_refused_before_sending(self):
        client = Client("http://127.0.0.1:9", "key", max_retries=0)
        label = insight.Label("i", insight.LabelOutcome.CONFIRMED_LEGITIMATE, "2026-12-01")
        with self.assertRaises(insight.BatchTooLargeError):
            client.submit_labels([label] * 1001)

    def test_an_evaluation_that_cannot_connect_says_it_never_left(self):
        client = Client("http://127.0.0.1:9", "key", max_retries=1, backoff=0)
        with self.assertRaises(insight.TransportError) as raised:
            client.evaluate({"operationCategory": "payment", "insights": [{"type": "isLikelyBeingCoached", "schemaVersion": 1}]})
        self.assertFalse(raised.exception.may_have_reached_server)


if __name__ == "__main__":
    unittest.main()
