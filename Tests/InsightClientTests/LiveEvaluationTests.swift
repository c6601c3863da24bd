import DaemonTesting
import Foundation
import InsightClient
import XCTest

/// The client against a real insightd started in-process on port 0, answering with the
/// committed models in `models/`.
final class LiveEvaluationTests: XCTestCase {
    var daemon: TestDaemon!
    var evaluator: InsightEvaluator!
    var key = ""

    override func setUpWithError() throws {
        daemon = try TestDaemon(.live, models: true)
        key = try daemon.createKey(roles: ["evaluate"])
        evaluator = InsightEvaluator(baseURL: daemon.baseURL, apiKey: key, retryPolicy: .never)
    }

    override func tearDown() {
        evaluator = nil
        daemon = nil
    }

    func testEvaluateThenReportConsumption() async throws {
        let context = InsightContext(
            operationCategory: .payment, requestedInsights: [.isLikelyBeingCoached()], requestID: "txn-2026-000123",
            subject: Subject(account: "cust-88121", device: "inst-5f2a", counterparty: "payee-7712"),
            interaction: .events(
                Sessions.genuine, device: DeviceFacts(activeCall: false),
                source: InteractionSource(
                    kit: "insight-capture-ios", version: "1.0.0+b7", platform: .ios,
                    droppedEvents: 0)),
            transaction: TransactionContext(newCounterparty: false, amountBand: .low))
        let evaluation = try await evaluator.requestEvaluation(context: context)

        XCTAssertEqual(evaluation.requestID, "txn-2026-000123")
        XCTAssertEqual(evaluation.environment, .sandbox)
        XCTAssertFalse(evaluation.eventID.isEmpty)
        XCTAssertEqual(evaluation.reportConsumptionBy.timeIntervalSince(evaluation.serverTimestamp), 900, accuracy: 0.001)
        XCTAssertLessThan(abs(evaluation.serverTimestamp.timeIntervalSinceNow), 60)
        let insight = try XCTUnwrap(evaluation.isLikelyBeingCoached)
        XCTAssertEqual(insight.outcome, .success(.unknown))
        XCTAssertEqual(insight.reasons, [])
        XCTAssertEqual(insight.modelVersion, "2.0")
        XCTAssertEqual(insight.newestModelVersion, "2.0")
        XCTAssertTrue(insight.isUsingCurrentModel)
        XCTAssertEqual(insight.schemaVersion, .version1)

        try await evaluation.reportConsumption(.usedUnchangedFriction, insightIDsUsed: [insight.insightID])
        // The same report again changes nothing; a different one is a conflict.
        try await evaluation.reportConsumption(.usedUnchangedFriction, insightsUsed: [insight])
        let conflict = await evaluationError { () async throws(EvaluationError) in
            try await evaluation.reportConsumption(.usedIncreasedFriction, insightIDsUsed: [insight.insightID])
        }
        XCTAssertEqual(conflict, .conflict)
    }

    func testGeneratedRequestIDIsSentAndVerified() async throws {
        let first = try await evaluator.requestEvaluation(context: InsightContext(operationCategory: .account))
        let second = try await evaluator.requestEvaluation(context: InsightContext(operationCategory: .account))
        XCTAssertTrue(first.requestID.hasPrefix("req-"), first.requestID)
        XCTAssertEqual(first.requestID.count, 28)
        XCTAssertNotEqual(first.requestID, second.requestID)
        // No interaction observed: no evidence, never a guess.
        XCTAssertEqual(first.isLikelyBeingCoached?.outcome, .success(.unknown))
        try await first.reportConsumption(.usedEvaluationOnly)
        try await second.reportConsumption(.notUsedNotNeeded)
    }

    func testCoachedSessionIsMediumOrHigh() async throws {
        let evaluation = try await evaluator.requestEvaluation(
            context: InsightContext(
                operationCategory: .payment,
                requestedInsights: [.isLikelyBeingCoached(), .isLikelyBeingCoached(model: .specific(versionNumber: "1.0"))],
                interaction: .events(Sessions.coached, device: Sessions.coachedDevice),
                transaction: TransactionContext(newCounterparty: true, amountBand: .high)))
        let answers = evaluation.insights(IsLikelyBeingCoached.self)
        XCTAssertEqual(answers.count, 2)
        let current = answers[0], prior = answers[1]
        let value = try current.outcome.get()
        XCTAssertTrue([.medium, .high].contains(value), "coached session answered \(value)")
        XCTAssertFalse(current.reasons.isEmpty)
        XCTAssertTrue(current.isUsingCurrentModel)
        XCTAssertEqual(prior.modelVersion, "1.0")
        XCTAssertEqual(prior.newestModelVersion, "2.0")
        XCTAssertFalse(prior.isUsingCurrentModel)
        XCTAssertNoThrow(try prior.outcome.get())
        XCTAssertNotEqual(current.insightID, prior.insightID)
        try await evaluation.reportConsumption(.usedIncreasedFriction, insightIDsUsed: [current.insightID])
    }

    func testSummaryInteractionIsAccepted() async throws {
        let summary: InteractionSummary = [
            "sessionSeconds": 64, "keystrokeCount": 24, "activeCall": 1,
            "callStartedBeforeSession": 1, "segmentPauseShare": 0.25
        ]
        let evaluation = try await evaluator.requestEvaluation(
            context: InsightContext(
                operationCategory: .payment, interaction: .summary(summary, device: DeviceFacts(screenSharing: true))))
        XCTAssertNoThrow(try evaluation.isLikelyBeingCoached?.outcome.get())
        let deviceOnly = try await evaluator.requestEvaluation(
            context: InsightContext(
                operationCategory: .communication, interaction: .device(Sessions.coachedDevice)))
        XCTAssertNoThrow(try deviceOnly.isLikelyBeingCoached?.outcome.get())
    }

    func testPerInsightErrorsDoNotFailTheEvaluation() async throws {
        let evaluation = try await evaluator.requestEvaluation(
            context: InsightContext(
                operationCategory: .payment,
                requestedInsights: [
                    InsightRequest(type: "isLikelyBeingImpersonated", schemaVersion: 1),
                    InsightRequest(type: "isLikelyBeingCoached", schemaVersion: 2),
                    .isLikelyBeingCoached(model: .specific(versionNumber: "9.9")),
                    .isLikelyBeingCoached()
                ],
                interaction: .events(Sessions.genuine)))
        XCTAssertEqual(
            evaluation.insights.map(\.type),
            ["isLikelyBeingImpersonated", "isLikelyBeingCoached", "isLikelyBeingCoached", "isLikelyBeingCoached"])
        XCTAssertEqual(evaluation.insights[0].outcome, .failure(.insightUnavailable))
        XCTAssertEqual(evaluation.insights[1].outcome, .failure(.insightVersionIncompatible))
        XCTAssertEqual(evaluation.insights[2].outcome, .failure(.insightVersionUnavailable))
        XCTAssertNotNil(evaluation.insights[2].errorDetail)
        XCTAssertEqual(evaluation.insights[2].modelVersion, "9.9")
        XCTAssertEqual(evaluation.insights[3].outcome, .success("unknown"))
        let typed = evaluation.insights(IsLikelyBeingCoached.self)
        XCTAssertEqual(typed.count, 3)
        XCTAssertEqual(typed[1].outcome, .failure(.insightVersionUnavailable))
        XCTAssertEqual(typed[2].outcome, .success(.unknown))
        try await evaluation.reportConsumption(.usedUnchangedFriction, insightIDsUsed: [typed[2].insightID])
    }

    func testContextInvalidNamesTheFieldAndIsNotRetried() async throws {
        let patient = InsightEvaluator(
            baseURL: daemon.baseURL, apiKey: key,
            retryPolicy: RetryPolicy(maxAttempts: 5, maxTotalDelay: 5, transportRetryDelay: 0.1))
        let cases: [(InsightContext, String)] = [
            (InsightContext(operationCategory: OperationCategory(rawValue: "gambling")), "operationCategory"),
            (InsightContext(operationCategory: .payment, requestID: String(repeating: "x", count: 129)), "requestId"),
            (InsightContext(operationCategory: .payment, requestedInsights: []), "insights"),
            (
                InsightContext(
                    operationCategory: .payment,
                    interaction: .events([
                        InteractionEvent(at: 0, .sessionStart), InteractionEvent(at: 10, .keyDown),
                        InteractionEvent(at: 5, .keyDown)
                    ])),
                "interaction.events[2].t"
            ),
            (
                InsightContext(operationCategory: .payment, interaction: .summary(["noSuchFeature": 1])),
                "interaction.summary.noSuchFeature"
            ),
            (InsightContext(operationCategory: .payment, subject: Subject(account: "")), "subject.account"),
            (
                InsightContext(
                    operationCategory: .payment,
                    interaction: .events(Sessions.genuine, source: InteractionSource(kit: "my kit", version: "1", platform: .web))),
                "interaction.source.kit"
            ),
            (
                InsightContext(
                    operationCategory: .payment,
                    interaction: .events(
                        Sessions.genuine, source: InteractionSource(kit: "k", version: "1", platform: ClientPlatform(rawValue: "tv")))),
                "interaction.source.platform"
            )
        ]
        for (context, field) in cases {
            let error = await evaluationError { () async throws(EvaluationError) in
                try await patient.requestEvaluation(context: context)
            }
            guard case .contextInvalid(let named, let detail)? = error else {
                XCTFail("\(field): \(String(describing: error))"); continue
            }
            XCTAssertEqual(named, field)
            XCTAssertFalse(detail.isEmpty)
            XCTAssertFalse(error!.mayRetry)
        }
        let statuses = try await daemon.settledStatuses(route: "/v1/evaluations", count: cases.count)
        XCTAssertEqual(statuses, Array(repeating: 422, count: cases.count), "a validation error was retried")
    }

    func testAuthenticationErrors() async throws {
        let stranger = InsightEvaluator(baseURL: daemon.baseURL, apiKey: "not-a-key", retryPolicy: .default)
        let unauthorized = await evaluationError { () async throws(EvaluationError) in
            try await stranger.requestEvaluation(context: InsightContext(operationCategory: .payment))
        }
        XCTAssertEqual(unauthorized, .unauthorized)

        let labelsOnly = InsightEvaluator(baseURL: daemon.baseURL, apiKey: try daemon.createKey(roles: ["labels"]))
        let forbidden = await evaluationError { () async throws(EvaluationError) in
            try await labelsOnly.requestEvaluation(context: InsightContext(operationCategory: .payment))
        }
        XCTAssertEqual(forbidden, .forbidden)
    }

    func testConsumptionErrors() async throws {
        let evaluation = try await evaluator.requestEvaluation(context: InsightContext(operationCategory: .payment))
        let unknownID = await evaluationError { () async throws(EvaluationError) in
            try await evaluation.reportConsumption(.usedUnchangedFriction, insightIDsUsed: ["00000000-0000-0000-0000-000000000000"])
        }
        guard case .contextInvalid(let field, _)? = unknownID else { return XCTFail(String(describing: unknownID)) }
        XCTAssertEqual(field, "insightIdsUsed[0]")

        // Another caller (here: of the production environment) cannot see the evaluation.
        let other = InsightEvaluator(
            baseURL: daemon.baseURL,
            apiKey: try daemon.createKey(roles: ["evaluate"], environment: "production"))
        let theirs = try await other.requestEvaluation(context: InsightContext(operationCategory: .payment))
        XCTAssertEqual(theirs.environment, .production)
        let foreign = InsightEvaluation(
            eventID: theirs.eventID, requestID: theirs.requestID, environment: .sandbox,
            serverTimestamp: theirs.serverTimestamp,
            reportConsumptionBy: theirs.reportConsumptionBy, insights: theirs.insights)
        let detached = await evaluationError { () async throws(EvaluationError) in
            try await foreign.reportConsumption(.notUsedError)
        }
        guard case .unexpectedResponse? = detached else { return XCTFail(String(describing: detached)) }

        // The same event id reported with this caller's key is not found.
        let mine = try await evaluator.requestEvaluation(context: InsightContext(operationCategory: .payment))
        let notFound = await evaluationError { () async throws(EvaluationError) in
            try await evaluator.reportConsumption(eventID: theirs.eventID, .notUsedError)
        }
        XCTAssertEqual(notFound, .notFound)
        try await evaluation.reportConsumption(.notUsedError)
        try await theirs.reportConsumption(.notUsedError)
        try await mine.reportConsumption(.notUsedError)
    }

    func testExtraHeadersAreCheckedBeforeSending() async throws {
        var options = RequestOptions(additionalHeaders: ["Authorization": "Bearer other"])
        let reserved = await evaluationError { () async throws(EvaluationError) in
            try await evaluator.requestEvaluation(context: InsightContext(operationCategory: .payment), options: options)
        }
        guard case .contextInvalid(let field, _)? = reserved else { return XCTFail(String(describing: reserved)) }
        XCTAssertEqual(field, "options.additionalHeaders")
        options = RequestOptions(additionalHeaders: ["X-Trace": "a\r\nInjected: 1"])
        let injected = await evaluationError { () async throws(EvaluationError) in
            try await evaluator.requestEvaluation(context: InsightContext(operationCategory: .payment), options: options)
        }
        guard case .contextInvalid? = injected else { return XCTFail(String(describing: injected)) }
        XCTAssertEqual(try daemon.answeredStatuses(route: "/v1/evaluations"), [])

        // A well-formed extra header travels (the sandbox override is one).
        let evaluation = try await evaluator.requestEvaluation(
            context: InsightContext(operationCategory: .payment),
            options: RequestOptions(additionalHeaders: ["X-Trace": "t-1"], timeout: 5))
        try await evaluation.reportConsumption(.usedEvaluationOnly)
    }
}

/// The error a throwing call threw, or `nil` when it returned.
func evaluationError<T>(_ body: () async throws(EvaluationError) -> T) async -> EvaluationError? {
    do {
        _ = try await body()
        return nil
    } catch {
        return error
    }
}
