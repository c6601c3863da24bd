import DaemonTesting
import Foundation
import InsightClient
import XCTest

/// Forced outcomes through ``RequestOptions/insightOverride``, against a live daemon: every
/// branch of a caller's decision logic is reachable from the client.
final class SandboxOverrideTests: XCTestCase {
    var daemon: TestDaemon!
    var sandboxKey = ""

    override func setUpWithError() throws {
        daemon = try TestDaemon(.live, models: true)
        sandboxKey = try daemon.createKey(roles: ["evaluate"], environment: "sandbox")
    }

    override func tearDown() { daemon = nil }

    func testForcedValuesAndInsightErrors() async throws {
        let evaluator = InsightEvaluator(baseURL: daemon.baseURL, apiKey: sandboxKey)
        let expected: [(String, Result<IsLikelyBeingCoached.Value, InsightError>)] = [
            ("isLikelyBeingCoached=unknown", .success(.unknown)),
            ("isLikelyBeingCoached=medium", .success(.medium)),
            ("isLikelyBeingCoached=high", .success(.high)),
            ("isLikelyBeingCoached=error:insightEvaluationFailed", .failure(.insightEvaluationFailed)),
            ("isLikelyBeingCoached=error:rateLimitError", .failure(.rateLimitError))
        ]
        for (override, outcome) in expected {
            let evaluation = try await evaluator.requestEvaluation(
                context: InsightContext(operationCategory: .payment, interaction: .events(Sessions.genuine)),
                options: .insightOverride(override))
            XCTAssertEqual(evaluation.environment, .sandbox)
            XCTAssertEqual(evaluation.isLikelyBeingCoached?.outcome, outcome, override)
            try await evaluation.reportConsumption(.usedEvaluationOnly)
        }
    }

    func testForcedEvaluationErrors() async throws {
        let evaluator = InsightEvaluator(baseURL: daemon.baseURL, apiKey: sandboxKey, retryPolicy: .never)
        func forced(_ override: String, with evaluator: InsightEvaluator) async -> EvaluationError? {
            await evaluationError { () async throws(EvaluationError) in
                try await evaluator.requestEvaluation(
                    context: InsightContext(operationCategory: .payment),
                    options: .insightOverride(override))
            }
        }
        let denied = await forced("evaluation=error:denied", with: evaluator)
        XCTAssertEqual(denied, .denied)
        let throttled = await forced("evaluation=error:rateLimitExceeded", with: evaluator)
        XCTAssertEqual(throttled, .rateLimitExceeded(retryAfter: 1))
        let failed = await forced("evaluation=error:serverError", with: evaluator)
        XCTAssertEqual(failed, .serverError(status: 503, retryAfter: 1))
        let invalid = await forced("evaluation=error:contextInvalid", with: evaluator)
        guard case .contextInvalid? = invalid else { return XCTFail(String(describing: invalid)) }
        let malformed = await forced("isLikelyBeingCoached=low", with: evaluator)
        guard case .contextInvalid(let field, _)? = malformed else { return XCTFail(String(describing: malformed)) }
        XCTAssertEqual(field, "Insight-Override")

        // 429 with Retry-After is retried within the policy, then thrown.
        let patient = InsightEvaluator(
            baseURL: daemon.baseURL, apiKey: sandboxKey,
            retryPolicy: RetryPolicy(maxAttempts: 2, maxTotalDelay: 2))
        let before = try daemon.answeredStatuses(route: "/v1/evaluations").count
        let retried = await forced("evaluation=error:rateLimitExceeded", with: patient)
        XCTAssertEqual(retried, .rateLimitExceeded(retryAfter: 1))
        let statuses = try await daemon.settledStatuses(route: "/v1/evaluations", count: before + 2)
        XCTAssertEqual(Array(statuses.dropFirst(before)), [429, 429])
    }

    func testProductionKeysCannotOverride() async throws {
        let production = InsightEvaluator(
            baseURL: daemon.baseURL,
            apiKey: try daemon.createKey(roles: ["evaluate"], environment: "production"))
        let refused = await evaluationError { () async throws(EvaluationError) in
            try await production.requestEvaluation(
                context: InsightContext(operationCategory: .payment),
                options: .insightOverride("isLikelyBeingCoached=high"))
        }
        XCTAssertEqual(refused, .overrideNotAllowed)
    }
}
