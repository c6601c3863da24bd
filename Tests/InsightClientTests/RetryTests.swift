import DaemonTesting
import Foundation
import InsightClient
import LoopbackPort
import XCTest

/// Retries happen only where the failure says a retry may succeed, within the policy's bounds.
final class RetryTests: XCTestCase {
    /// A daemon whose write queue takes nothing answers every evaluation `503` with
    /// `Retry-After: 1`: the client waits as told, retries up to `maxAttempts`, then throws.
    func testOverloadedServiceIsRetriedUpToMaxAttempts() async throws {
        let daemon = try TestDaemon(.live, models: true) { $0.writeQueueCapacity = 0 }
        let evaluator = InsightEvaluator(
            baseURL: daemon.baseURL, apiKey: try daemon.createKey(roles: ["evaluate"]),
            retryPolicy: RetryPolicy(maxAttempts: 3, maxTotalDelay: 5))
        let started = Date()
        let error = await evaluationError { () async throws(EvaluationError) in
            try await evaluator.requestEvaluation(context: InsightContext(operationCategory: .payment))
        }
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertEqual(error, .serverError(status: 503, retryAfter: 1))
        let statuses = try await daemon.settledStatuses(route: "/v1/evaluations", count: 3)
        XCTAssertEqual(statuses, [503, 503, 503])
        XCTAssertGreaterThanOrEqual(elapsed, 2, "Retry-After was not honoured")
        XCTAssertLessThan(elapsed, 5)
    }

    /// The total-delay budget ends retries before `maxAttempts` when the next wait would exceed it.
    func testDelayBudgetBoundsRetries() async throws {
        let daemon = try TestDaemon(.live) { $0.writeQueueCapacity = 0 }
        let evaluator = InsightEvaluator(
            baseURL: daemon.baseURL, apiKey: try daemon.createKey(roles: ["evaluate"]),
            retryPolicy: RetryPolicy(maxAttempts: 10, maxTotalDelay: 1.5))
        let error = await evaluationError { () async throws(EvaluationError) in
            try await evaluator.requestEvaluation(context: InsightContext(operationCategory: .payment))
        }
        XCTAssertEqual(error, .serverError(status: 503, retryAfter: 1))
        let statuses = try await daemon.settledStatuses(route: "/v1/evaluations", count: 2)
        XCTAssertEqual(statuses, [503, 503])

        // With no retries allowed, one request only.
        let impatient = InsightEvaluator(
            baseURL: daemon.baseURL, apiKey: try daemon.createKey(roles: ["evaluate"]),
            retryPolicy: .never)
        let once = await evaluationError { () async throws(EvaluationError) in
            try await impatient.requestEvaluation(context: InsightContext(operationCategory: .payment))
        }
        XCTAssertEqual(once, .serverError(status: 503, retryAfter: 1))
        let all = try await daemon.settledStatuses(route: "/v1/evaluations", count: 3)
        XCTAssertEqual(all, [503, 503, 503])
    }

    /// Nothing listens: the client retries with backoff, then throws a transport error.
    func testUnreachableServiceIsATransportError() async throws {
        let evaluator = InsightEvaluator(
            baseURL: URL(string: "http://127.0.0.1:\(try closedPort())")!, apiKey: "k",
            retryPolicy: RetryPolicy(maxAttempts: 3, maxTotalDelay: 5, transportRetryDelay: 0.1))
        let started = Date()
        let error = await evaluationError { () async throws(EvaluationError) in
            try await evaluator.requestEvaluation(context: InsightContext(operationCategory: .payment))
        }
        guard case .transport? = error else { return XCTFail(String(describing: error)) }
        XCTAssertTrue(error!.mayRetry)
        XCTAssertGreaterThanOrEqual(Date().timeIntervalSince(started), 0.3, "waits of 0.1 s then 0.2 s expected")
    }

    /// A port nothing listens on: bound, then closed.
    func closedPort() throws -> Int { try freeLoopbackPort() }
}
