import Foundation
@testable import InsightClient
import XCTest

/// The client's decisions that need no service: request-id binding, response checks, error
/// mapping and the retry rules.
final class PureTests: XCTestCase {
    static func body(requestId: String?, insights: Int = 1, value: String = "high") -> Data {
        let id = requestId.map { #""requestId":"\#($0)","# } ?? ""
        let insight =
            #"{"insightId":"5d1e0c4a-8b1f-4c55-9a07-3f2b1c9d0e11","type":"isLikelyBeingCoached","schemaVersion":1,"modelVersion":"2.0","newestModelVersion":"2.0","isUsingCurrentModel":true,"outcome":{"value":"\#(value)"},"reasons":["activeCallDuringSession","somethingNew"]}"#
        return Data(
            #"{"eventId":"0b6f5c2e-1111-4222-8333-944445555666",\#(id)"environment":"production","serverTimestamp":"2026-12-02T10:00:00.123Z","reportConsumptionBy":"2026-12-02T10:15:00.123Z","insights":[\#(Array(repeating: insight, count: insights).joined(separator: ","))],"futureMember":{"x":1}}"#
                .utf8)
    }

    func testRequestIDMustMatchExactly() throws {
        XCTAssertNoThrow(try InsightEvaluation.verifyRequestID(sent: "txn-1", received: "txn-1"))
        XCTAssertThrowsError(try InsightEvaluation.verifyRequestID(sent: "txn-1", received: "txn-2")) {
            XCTAssertEqual($0 as? EvaluationError, .requestIDMismatch(sent: "txn-1", received: "txn-2"))
        }
        XCTAssertThrowsError(try InsightEvaluation.verifyRequestID(sent: "txn-1", received: nil)) {
            XCTAssertEqual($0 as? EvaluationError, .requestIDMismatch(sent: "txn-1", received: nil))
        }
        XCTAssertThrowsError(try InsightEvaluation.verifyRequestID(sent: "txn-1", received: "TXN-1"))
    }

    func testResponsesAreDecodedOnlyWhenBoundToTheRequest() throws {
        let requested = [InsightRequest.isLikelyBeingCoached()]
        let evaluation = try InsightEvaluation.decode(
            Self.body(requestId: "txn-1"), sentRequestID: "txn-1",
            requested: requested, client: nil)
        XCTAssertEqual(evaluation.eventID, "0b6f5c2e-1111-4222-8333-944445555666")
        XCTAssertEqual(evaluation.environment, .production)
        XCTAssertEqual(evaluation.serverTimestamp.timeIntervalSince1970, 1_796_205_600.123, accuracy: 0.0005)
        XCTAssertEqual(evaluation.reportConsumptionBy.timeIntervalSince(evaluation.serverTimestamp), 900, accuracy: 0.0005)
        XCTAssertEqual(evaluation.isLikelyBeingCoached?.outcome, .success(.high))
        XCTAssertEqual(evaluation.isLikelyBeingCoached?.reasons, ["activeCallDuringSession", "somethingNew"])

        XCTAssertThrowsError(
            try InsightEvaluation.decode(
                Self.body(requestId: "txn-other"), sentRequestID: "txn-1",
                requested: requested, client: nil)
        ) {
            XCTAssertEqual($0 as? EvaluationError, .requestIDMismatch(sent: "txn-1", received: "txn-other"))
        }
        XCTAssertThrowsError(
            try InsightEvaluation.decode(
                Self.body(requestId: nil), sentRequestID: "txn-1",
                requested: requested, client: nil)
        ) {
            XCTAssertEqual($0 as? EvaluationError, .requestIDMismatch(sent: "txn-1", received: nil))
        }
        XCTAssertThrowsError(
            try InsightEvaluation.decode(
                Self.body(requestId: "txn-1", insights: 2), sentRequestID: "txn-1",
                requested: requested, client: nil)
        ) {
            guard case .unexpectedResponse? = $0 as? EvaluationError else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsError(
            try InsightEvaluation.decode(
                Data("<html>".utf8), sentRequestID: "txn-1",
                requested: requested, client: nil)
        ) {
            guard case .unexpectedResponse? = $0 as? EvaluationError else { return XCTFail("\($0)") }
        }
        let other = [InsightRequest(type: "isLikelyBeingCoached", schemaVersion: 3)]
        XCTAssertThrowsError(
            try InsightEvaluation.decode(
                Self.body(requestId: "txn-1"), sentRequestID: "txn-1",
                requested: other, client: nil))
    }

    func testValuesAndCodesStayOpen() throws {
        let evaluation = try InsightEvaluation.decode(
            Self.body(requestId: "r", value: "veryHigh"), sentRequestID: "r",
            requested: [.isLikelyBeingCoached()], client: nil)
        XCTAssertEqual(evaluation.isLikelyBeingCoached?.outcome, .success(.unrecognized("veryHigh")))
        XCTAssertEqual(IsLikelyBeingCoached.Value(rawValue: "medium"), .medium)
        XCTAssertEqual(IsLikelyBeingCoached.Value.unrecognized("low").rawValue, "low")
        XCTAssertEqual(InsightError(code: "rateLimitError"), .rateLimitError)
        XCTAssertEqual(InsightError(code: "insightQuarantined"), .unknown(code: "insightQuarantined"))
        XCTAssertEqual(InsightError.insightVersionIncompatible.code, "insightVersionIncompatible")
        XCTAssertEqual(OperationCategory(rawValue: "payment"), .payment)
    }

    func testProblemsMapToErrors() {
        func problem(_ status: Int, _ code: String, field: String? = nil, retryAfter: TimeInterval? = nil) -> EvaluationError {
            let fieldMember = field.map { #","field":"\#($0)""# } ?? ""
            let body =
                #"{"type":"urn:insightd:problem:\#(code)","title":"t","status":\#(status),"code":"\#(code)","detail":"why"\#(fieldMember)}"#
            return EvaluationError.from(status: status, retryAfter: retryAfter, body: Data(body.utf8))
        }
        XCTAssertEqual(
            problem(422, "contextInvalid", field: "insights[1].schemaVersion"),
            .contextInvalid(field: "insights[1].schemaVersion", detail: "why"))
        XCTAssertEqual(problem(400, "contextInvalid", field: "(body)"), .contextInvalid(field: "(body)", detail: "why"))
        XCTAssertEqual(problem(401, "unauthorized"), .unauthorized)
        XCTAssertEqual(problem(403, "forbidden"), .forbidden)
        XCTAssertEqual(problem(403, "denied"), .denied)
        XCTAssertEqual(problem(429, "rateLimitExceeded", retryAfter: 3), .rateLimitExceeded(retryAfter: 3))
        XCTAssertEqual(problem(503, "serverError", retryAfter: 1), .serverError(status: 503, retryAfter: 1))
        XCTAssertEqual(problem(500, "serverError"), .serverError(status: 500, retryAfter: nil))
        XCTAssertEqual(problem(404, "evaluationNotFound"), .notFound)
        XCTAssertEqual(problem(404, "notFound"), .notFound)
        XCTAssertEqual(problem(409, "consumptionConflict"), .conflict)
        XCTAssertEqual(problem(422, "idempotencyKeyReused"), .idempotencyKeyReused)
        XCTAssertEqual(problem(413, "payloadTooLarge"), .unknown(code: "payloadTooLarge", status: 413, detail: "why"))
        XCTAssertEqual(problem(503, "maintenance", retryAfter: 30), .serverError(status: 503, retryAfter: 30))
        // Not a problem body (a proxy's page): the status decides.
        XCTAssertEqual(
            EvaluationError.from(status: 502, retryAfter: nil, body: Data("<html>".utf8)),
            .serverError(status: 502, retryAfter: nil))
        XCTAssertEqual(EvaluationError.from(status: 429, retryAfter: 2, body: Data()), .rateLimitExceeded(retryAfter: 2))
        guard case .unexpectedResponse = EvaluationError.from(status: 418, retryAfter: nil, body: Data()) else {
            return XCTFail("418 without a problem")
        }
    }

    func testRetryAfterParsing() {
        XCTAssertEqual(parseRetryAfter("1"), 1)
        XCTAssertEqual(parseRetryAfter(" 0 "), 0)
        XCTAssertNil(parseRetryAfter("-3"))
        XCTAssertNil(parseRetryAfter("soon"))
        XCTAssertNil(parseRetryAfter(nil))
        let now = Date(timeIntervalSince1970: 1_796_205_600)  // Wed, 02 Dec 2026 10:00:00 GMT
        XCTAssertEqual(parseRetryAfter("Wed, 02 Dec 2026 10:00:05 GMT", now: now), 5)
        XCTAssertEqual(parseRetryAfter("Wed, 02 Dec 2026 09:00:00 GMT", now: now), 0)
    }

    func testRetryRules() {
        let policy = RetryPolicy(maxAttempts: 4, maxTotalDelay: 3, transportRetryDelay: 0.5)
        func delay(_ error: EvaluationError, transport: Bool = false, attempts: Int = 1, waited: TimeInterval = 0) -> TimeInterval? {
            policy.delay(after: error, retryableTransport: transport, attemptsMade: attempts, waited: waited)
        }
        XCTAssertEqual(delay(.serverError(status: 503, retryAfter: 1)), 1)
        XCTAssertEqual(delay(.rateLimitExceeded(retryAfter: 2)), 2)
        XCTAssertNil(delay(.serverError(status: 500, retryAfter: nil)), "no advice, no retry")
        XCTAssertNil(delay(.rateLimitExceeded(retryAfter: nil)))
        XCTAssertNil(delay(.contextInvalid(field: "x", detail: "y")))
        XCTAssertNil(delay(.unauthorized))
        XCTAssertNil(delay(.conflict))
        XCTAssertNil(delay(.requestIDMismatch(sent: "a", received: "b")))
        XCTAssertNil(delay(.serverError(status: 503, retryAfter: 4)), "over the budget")
        XCTAssertNil(delay(.serverError(status: 503, retryAfter: 1), attempts: 4), "out of attempts")
        XCTAssertNil(delay(.serverError(status: 503, retryAfter: 1), attempts: 2, waited: 2.5))
        XCTAssertEqual(delay(.transport(description: "refused"), transport: true), 0.5)
        XCTAssertEqual(delay(.transport(description: "refused"), transport: true, attempts: 2, waited: 0.5), 1)
        XCTAssertNil(delay(.transport(description: "TLS"), transport: false))
        XCTAssertNil(
            RetryPolicy.never.delay(
                after: .serverError(status: 503, retryAfter: 0), retryableTransport: false,
                attemptsMade: 1, waited: 0))
        XCTAssertNil(
            RetryPolicy(maxAttempts: 3, maxTotalDelay: 9, transportRetryDelay: nil)
                .delay(after: .transport(description: "x"), retryableTransport: true, attemptsMade: 1, waited: 0))
    }

    func testRequestBodiesFollowTheWireFormat() throws {
        let context = InsightContext(
            operationCategory: .payment,
            requestedInsights: [.isLikelyBeingCoached(), .isLikelyBeingCoached(model: .specific(versionNumber: "1.0"))],
            requestID: "txn-9", subject: Subject(account: "a"),
            interaction: .events(
                [InteractionEvent(at: 0, .sessionStart), InteractionEvent(at: 5, .paste, field: .payee)],
                device: DeviceFacts(activeCall: true),
                source: InteractionSource(kit: "insight-capture-ios", version: "1.2.0", platform: .ios)),
            transaction: TransactionContext(amountBand: .high))
        let json = try JSONSerialization.jsonObject(with: try APIClient.encode(WireEvaluationRequest(context, requestID: "txn-9")))
        let expected: NSDictionary = [
            "requestId": "txn-9", "operationCategory": "payment",
            "insights": [
                ["type": "isLikelyBeingCoached", "schemaVersion": 1],
                ["type": "isLikelyBeingCoached", "schemaVersion": 1, "modelVersion": "1.0"]
            ],
            "subject": ["account": "a"],
            "interaction": [
                "events": [["t": 0, "type": "sessionStart"], ["t": 5, "type": "paste", "field": "payee"]],
                "device": ["activeCall": true],
                "source": ["kit": "insight-capture-ios", "version": "1.2.0", "platform": "ios"]
            ],
            "transaction": ["amountBand": "high"]
        ]
        XCTAssertEqual(json as? NSDictionary, expected)
        XCTAssertTrue(InsightEvaluator.generateRequestID().allSatisfy { $0 == "-" || ("a"..."z").contains($0) || $0 == "r" })
    }

    func testOverrideOption() throws {
        var options = RequestOptions.insightOverride("isLikelyBeingCoached=high")
        XCTAssertEqual(options.additionalHeaders, ["Insight-Override": "isLikelyBeingCoached=high"])
        options.insightOverride = "evaluation=error:rateLimitExceeded"
        XCTAssertEqual(options.insightOverride, "evaluation=error:rateLimitExceeded")
        XCTAssertEqual(options.additionalHeaders.count, 1)
        options.insightOverride = nil
        XCTAssertEqual(options.additionalHeaders, [:])
        XCTAssertThrowsError(try RequestOptions(additionalHeaders: ["Idempotency-Key": "x"]).validatedHeaders())
        XCTAssertThrowsError(try RequestOptions(additionalHeaders: ["Bad Name": "x"]).validatedHeaders())
    }

    func testURLSegmentsAreEncoded() throws {
        let client = APIClient(
            baseURL: URL(string: "https://gw.example/insight/")!, apiKey: "k", session: .shared,
            retryPolicy: .never)
        XCTAssertEqual(
            try client.url(["v1", "evaluations", "a/b?c", "consumption"]).absoluteString,
            "https://gw.example/insight/v1/evaluations/a%2Fb%3Fc/consumption")
    }
}
