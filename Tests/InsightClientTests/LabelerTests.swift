import DaemonTesting
import Foundation
import InsightClient
import XCTest

/// Offline labels through the client, against a live daemon.
final class LabelerTests: XCTestCase {
    func testSubmitLabels() async throws {
        let daemon = try TestDaemon(.live, models: true)
        let key = try daemon.createKey(roles: ["evaluate", "labels"])
        let evaluator = InsightEvaluator(baseURL: daemon.baseURL, apiKey: key)
        let evaluation = try await evaluator.requestEvaluation(
            context: InsightContext(
                operationCategory: .payment, interaction: .events(Sessions.coached, device: Sessions.coachedDevice)))
        let insightID = try XCTUnwrap(evaluation.isLikelyBeingCoached?.insightID)
        try await evaluation.reportConsumption(.usedIncreasedFriction, insightIDsUsed: [insightID])

        let labeler = InsightLabeler(baseURL: daemon.baseURL, apiKey: key)
        let labels: [Label] = [
            .confirmedFraud(insightID: insightID, fraudType: .authorityImpersonation, discoveredAt: Date()),
            .confirmedLegitimate(insightID: "00000000-0000-4000-8000-000000000000", discoveredAt: Date()),
            .confirmedLegitimate(insightID: insightID, discoveredAt: Date(timeIntervalSince1970: 0))
        ]
        let batch = InsightLabeler.newIdempotencyKey()
        let results = try await labeler.submit(labels, idempotencyKey: batch)
        XCTAssertEqual(results.map(\.status), [.accepted, .unknownInsight, .invalid])
        XCTAssertEqual(results.map(\.index), [0, 1, 2])
        XCTAssertEqual(results[0].insightID, insightID)
        XCTAssertEqual(results[2].field, "labels[2].discoveredAt")

        // The same batch again replays the answer; the same key with other labels is refused.
        let replay = try await labeler.submit(labels, idempotencyKey: batch)
        XCTAssertEqual(replay, results)
        let reused = await evaluationError { () async throws(EvaluationError) in
            try await labeler.submit(Array(labels.prefix(1)), idempotencyKey: batch)
        }
        XCTAssertEqual(reused, .idempotencyKeyReused)
        // A new batch with the same label is a duplicate; a different verdict is a conflict.
        let again = try await labeler.submit(
            [labels[0], .confirmedLegitimate(insightID: insightID, discoveredAt: Date())],
            idempotencyKey: InsightLabeler.newIdempotencyKey())
        XCTAssertEqual(again.map(\.status), [.duplicate, .conflict])

        let badKey = await evaluationError { () async throws(EvaluationError) in
            try await labeler.submit(labels, idempotencyKey: "")
        }
        guard case .contextInvalid(let field, _)? = badKey else { return XCTFail(String(describing: badKey)) }
        XCTAssertEqual(field, "Idempotency-Key")

        let evaluateOnly = InsightLabeler(baseURL: daemon.baseURL, apiKey: try daemon.createKey(roles: ["evaluate"]))
        let forbidden = await evaluationError { () async throws(EvaluationError) in
            try await evaluateOnly.submit(labels, idempotencyKey: "k-1")
        }
        XCTAssertEqual(forbidden, .forbidden)
    }
}
