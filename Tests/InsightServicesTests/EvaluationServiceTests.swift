import CoachingModel
import Foundation
import InsightDomain
import InsightServices
import Synchronization
import XCTest

/// docs/api.md "POST /v1/evaluations": what an evaluation answers, per insight, and what it stores.
final class EvaluationAnswerTests: XCTestCase {
    func testTheEvaluationAndEachInsightGetAnIdTheInsightsMadeFromTheEvaluations() throws {
        let f = Fixture()
        let caller = f.caller()
        let record = try f.evaluate(Fixture.request(insights: Array(repeating: Fixture.coaching, count: 4)), by: caller)
        XCTAssertNotNil(
            record.eventId.range(
                of: "^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{11}0$",
                options: .regularExpression), record.eventId)
        XCTAssertEqual(
            record.insights.map(\.insightId),
            (0..<4).map { EvaluationIdentifiers.insightId(eventId: record.eventId, position: $0) })
        let other = try f.evaluate(Fixture.request(), by: caller)
        XCTAssertNotEqual(other.eventId, record.eventId)
        XCTAssertNotEqual(other.insights[0].insightId, record.insights[0].insightId)
    }

    func testTheEvaluationIsStoredWithItsCallerEnvironmentAndReportDeadline() throws {
        let f = Fixture()
        let caller = f.caller(environment: .sandbox)
        let record = try f.evaluate(Fixture.request(category: .account), by: caller)
        XCTAssertEqual(record.callerId, caller.callerId)
        XCTAssertEqual(record.environment, .sandbox)
        XCTAssertEqual(record.category, .account)
        XCTAssertEqual(record.createdAt, f.clock.now())
        XCTAssertEqual(record.reportConsumptionBy, f.clock.now() + 15 * 60_000, "the default grace is 15 minutes")
        XCTAssertEqual(f.store.received.evaluations, [record], "completed before (or without) storing")
    }

    /// The capture kit is stored with the evaluation; the events it dropped are only counted.
    func testTheCaptureKitIsStoredAndItsDroppedEventsCounted() throws {
        let f = Fixture()
        let caller = f.caller()
        var request = Fixture.request()
        let kit = InteractionSource(kit: "insight-capture-web", version: "1.0.0", platform: .web)
        (request.source, request.droppedEvents) = (kit, 42)
        let record = try f.evaluate(request, by: caller)
        XCTAssertEqual(record.source, kit)
        XCTAssertEqual(f.store.received.evaluations.map(\.source), [kit])
        XCTAssertEqual(f.counter("insightd_interaction_dropped_events_total", ["platform": "web"]), 42)
        XCTAssertNil(try f.evaluate(Fixture.request(), by: caller).source, "none named: none stored")
        XCTAssertEqual(f.counter("insightd_interaction_dropped_events_total"), 42)
    }

    func testWithoutAModelACoachingInsightIsUnavailableNeverAnInventedValue() throws {
        let f = Fixture()
        let record = try f.evaluate(Fixture.request(interaction: Fixture.coachedSession), by: f.caller())
        guard case .error(.insightUnavailable, _) = record.insights[0].outcome else {
            return XCTFail("\(record.insights[0].outcome)")
        }
        XCTAssertNil(record.insights[0].newestModelVersion)
    }

    func testOneFailingInsightNeverFailsTheOthers() throws {
        let f = Fixture { $0.models = try? Fixture.committedModels() }
        let record = try f.evaluate(
            Fixture.request(insights: [
                InsightRequest(type: "isLikelyBeingPhished", schemaVersion: 1),
                InsightRequest(type: InsightType.isLikelyBeingCoached.rawValue, schemaVersion: 2),
                Fixture.coaching
            ]), by: f.caller())
        XCTAssertEqual(
            record.insights.map(\.type), ["isLikelyBeingPhished", "isLikelyBeingCoached", "isLikelyBeingCoached"],
            "the type is kept as sent")
        guard case .error(.insightUnavailable, _) = record.insights[0].outcome else { return XCTFail("\(record.insights[0])") }
        XCTAssertNil(record.insights[0].newestModelVersion, "an unknown type has no newest version")
        guard case .error(.insightVersionIncompatible, _) = record.insights[1].outcome else { return XCTFail("\(record.insights[1])") }
        XCTAssertEqual(record.insights[1].newestModelVersion, "2.0")
        guard case .value = record.insights[2].outcome else { return XCTFail("\(record.insights[2])") }
    }

    func testAPriorModelVersionAnswersBesideTheCurrentOne() throws {
        let f = Fixture { $0.models = try? Fixture.committedModels() }
        let record = try f.evaluate(
            Fixture.request(
                insights: [
                    Fixture.coaching, InsightRequest(type: InsightType.isLikelyBeingCoached.rawValue, schemaVersion: 1, modelVersion: "1.0")
                ], interaction: Fixture.genuineSession), by: f.caller())
        XCTAssertEqual(record.insights.map(\.modelVersion), ["2.0", "1.0"])
        XCTAssertEqual(record.insights.map(\.newestModelVersion), ["2.0", "2.0"])
        for insight in record.insights {
            guard case .value = insight.outcome else { return XCTFail("\(insight)") }
        }
    }

    func testAnUnknownModelVersionIsVersionUnavailable() throws {
        let f = Fixture { $0.models = try? Fixture.committedModels() }
        let record = try f.evaluate(
            Fixture.request(insights: [
                InsightRequest(type: InsightType.isLikelyBeingCoached.rawValue, schemaVersion: 1, modelVersion: "9.9")
            ]), by: f.caller())
        guard case .error(.insightVersionUnavailable, _) = record.insights[0].outcome else { return XCTFail("\(record.insights[0])") }
        XCTAssertEqual(record.insights[0].modelVersion, "9.9", "the version asked for is answered back")
        XCTAssertEqual(record.insights[0].newestModelVersion, "2.0")
    }

    func testAWithdrawnModelVersionIsVersionUnavailable() throws {
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("usecase-models-\(UUID().uuidString)")
        try FileManager.default.copyItem(atPath: Fixture.modelsDirectory, toPath: copy.path)
        defer { try? FileManager.default.removeItem(at: copy) }
        let manifest = copy.appendingPathComponent("1.0/manifest.json")
        let text = try String(contentsOf: manifest, encoding: .utf8)
        XCTAssertTrue(text.contains(#""status": "active""#))
        try text.replacingOccurrences(of: #""status": "active""#, with: #""status": "withdrawn""#)
            .write(to: manifest, atomically: false, encoding: .utf8)
        let f = Fixture { $0.models = try? ModelRegistry.load(directory: copy.path) }
        let record = try f.evaluate(
            Fixture.request(insights: [
                InsightRequest(type: InsightType.isLikelyBeingCoached.rawValue, schemaVersion: 1, modelVersion: "1.0"),
                InsightRequest(type: InsightType.isLikelyBeingCoached.rawValue, schemaVersion: 1, modelVersion: "2.0")
            ]), by: f.caller())
        guard case .error(.insightVersionUnavailable, _) = record.insights[0].outcome else { return XCTFail("\(record.insights[0])") }
        guard case .value = record.insights[1].outcome else { return XCTFail("\(record.insights[1])") }
    }

    func testModelsReplacedAtRunTimeAnswerTheNextEvaluation() throws {
        let f = Fixture { $0.models = try? Fixture.committedModels() }
        let caller = f.caller()
        guard case .value = try f.evaluate(Fixture.request(), by: caller).insights[0].outcome else { return XCTFail() }
        f.models.replace(nil)
        guard case .error(.insightUnavailable, _) = try f.evaluate(Fixture.request(), by: caller).insights[0].outcome else {
            return XCTFail()
        }
        XCTAssertNil(f.useCases.evaluation.catalogue.models)
        XCTAssertEqual(f.useCases.evaluation.catalogue.schemaVersions, [1])
    }

    func testWithoutAnInteractionTheAnswerIsUnknownNeverAGuess() throws {
        let f = Fixture { $0.models = try? Fixture.committedModels() }
        for category in OperationCategory.allCases {
            let record = try f.evaluate(Fixture.request(category: category), by: f.caller())
            XCTAssertEqual(record.insights[0].outcome, .value(.unknown, reasons: []), "\(category)")
            XCTAssertEqual(record.insights[0].modelVersion, "2.0")
        }
    }

    func testACoachedSessionIsFlaggedWithReasonsAndAGenuineOneIsNot() throws {
        let f = Fixture { $0.models = try? Fixture.committedModels() }
        let caller = f.caller()
        let coached = try f.evaluate(Fixture.request(interaction: Fixture.coachedSession), by: caller).insights[0]
        guard case .value(let value, let reasons) = coached.outcome else { return XCTFail("\(coached)") }
        XCTAssertTrue([.medium, .high].contains(value), "a coached session answered \(value)")
        XCTAssertFalse(reasons.isEmpty)
        let genuine = try f.evaluate(Fixture.request(interaction: Fixture.genuineSession), by: caller).insights[0]
        guard case .value(.unknown, _) = genuine.outcome else { return XCTFail("\(genuine)") }
    }

    func testAnInteractionTheModelCannotReadIsInvalidAndNothingIsStored() throws {
        let f = Fixture { $0.models = try? Fixture.committedModels() }
        let caller = f.caller()
        // Far past the session bound of the feature extractor.
        let beyond = InteractionInput.events(
            [
                InteractionEvent(t: 0, type: .sessionStart),
                InteractionEvent(t: 86_400_000, type: .submit)
            ], DeviceFacts())
        guard
            case .invalid(let field, _)? = rejection({ () throws(Rejection) in
                try f.evaluate(Fixture.request(interaction: beyond), by: caller)
            })
        else {
            return XCTFail("not refused as invalid")
        }
        XCTAssertTrue(field.hasPrefix("interaction"), field)
        var summary = SummaryFeatures()
        summary.append(name: "noSuchFeature", value: 1)
        guard
            case .invalid(let summaryField, _)? = rejection({ () throws(Rejection) in
                try f.evaluate(Fixture.request(interaction: .summary(summary, DeviceFacts())), by: caller)
            })
        else { return XCTFail("an unknown feature was accepted") }
        XCTAssertEqual(summaryField, "interaction.summary.noSuchFeature")
        XCTAssertTrue(f.store.received.evaluations.isEmpty)
    }

    func testAnsweredAndFailedInsightsAreCountedByTenantCategoryEnvironmentVersionAndValue() throws {
        let f = Fixture { $0.models = try? Fixture.committedModels() }
        let caller = f.caller(tenant: "acme")
        for _ in 0..<3 {
            _ = try f.evaluate(
                Fixture.request(insights: [Fixture.coaching, InsightRequest(type: "isLikelyBeingPhished", schemaVersion: 1)]),
                by: caller)
        }
        XCTAssertEqual(
            f.counter(
                "insightd_evaluations_total",
                [
                    "tenant": "acme", "category": "payment", "environment": "production",
                    "model_version": "2.0", "value": "unknown"
                ]), 3)
        XCTAssertEqual(f.counter("insightd_insight_errors_total", ["code": "insightUnavailable"]), 3)
    }

    func testAStoreThatCannotWriteIsAStoreRejectionAndNothingIsCounted() throws {
        let f = Fixture { $0.models = try? Fixture.committedModels() }
        let caller = f.caller()
        for failure in [StoreFailure.overloaded, .unavailable("disk full")] {
            f.store.failWrites(failure)
            XCTAssertRejects(.store(failure)) { () throws(Rejection) in try f.evaluate(Fixture.request(account: "a"), by: caller) }
        }
        XCTAssertEqual(f.counter("insightd_evaluations_total"), 0)
    }
}

/// docs/api.md "Sandbox: Insight-Override": a sandbox caller forces outcomes; a production caller
/// may not.
final class SandboxOverrideTests: XCTestCase {
    let versions = [
        Fixture.coaching,
        InsightRequest(type: InsightType.isLikelyBeingCoached.rawValue, schemaVersion: 1, modelVersion: "1.0")
    ]

    func testASandboxCallerForcesEveryValueAndKeepsTheIdsAndVersions() throws {
        let f = Fixture { $0.models = try? Fixture.committedModels() }
        let sandbox = f.caller(environment: .sandbox)
        for value in InsightValue.allCases {
            let forced = InsightOutcome.value(value, reasons: [SandboxOverride.reason])
            let record = try f.evaluate(
                Fixture.request(insights: versions),
                by: sandbox, override: SandboxOverride(insights: [Fixture.coaching.type: forced]))
            XCTAssertEqual(record.insights.map(\.outcome), [forced, forced])
            XCTAssertEqual(record.insights.map(\.modelVersion), ["2.0", "1.0"])
            XCTAssertEqual(
                record.insights.map(\.insightId),
                (0..<2).map { EvaluationIdentifiers.insightId(eventId: record.eventId, position: $0) })
        }
    }

    func testASandboxCallerForcesEveryInsightError() throws {
        let f = Fixture { $0.models = try? Fixture.committedModels() }
        let sandbox = f.caller(environment: .sandbox)
        for code in InsightErrorCode.allCases {
            let forced = InsightOutcome.error(code, detail: "forced")
            let record = try f.evaluate(
                Fixture.request(insights: versions), by: sandbox,
                override: SandboxOverride(insights: [Fixture.coaching.type: forced]))
            XCTAssertEqual(record.insights.map(\.outcome), [forced, forced], "\(code)")
        }
    }

    func testAForcedEvaluationErrorIsRefusedAndStoresNothing() throws {
        let f = Fixture()
        let sandbox = f.caller(environment: .sandbox)
        for error in SandboxOverride.EvaluationError.allCases {
            let override = SandboxOverride(
                evaluationError: error,
                insights: [Fixture.coaching.type: .value(.high, reasons: [SandboxOverride.reason])])
            guard
                case .forced(let forced, _)? = rejection({ () throws(Rejection) in
                    try f.evaluate(Fixture.request(account: "a"), by: sandbox, override: override)
                })
            else { return XCTFail("\(error) was not forced") }
            XCTAssertEqual(forced, error)
        }
        XCTAssertTrue(f.store.received.evaluations.isEmpty, "a forced error stored an evaluation")
        XCTAssertEqual(f.counter("insightd_evaluations_total"), 0)
    }

    func testAForcedRateLimitExceededSaysWhatARealOneWould() throws {
        let f = Fixture()
        let sandbox = f.caller(environment: .sandbox, rate: 5, burst: 10)
        guard
            case .forced(.rateLimitExceeded, let throttle)? = rejection({ () throws(Rejection) in
                try f.evaluate(Fixture.request(), by: sandbox, override: SandboxOverride(evaluationError: .rateLimitExceeded))
            })
        else { return XCTFail("not forced") }
        XCTAssertEqual(throttle.reason, .callerRate)
        XCTAssertEqual(throttle.retryAfterSeconds, 1)
        XCTAssertEqual(throttle.status.remaining, 0, "a forced 429 reports an empty bucket")
        XCTAssertEqual(throttle.status.configured, GCRA(rate: 5, burst: 10))
        XCTAssertEqual(throttle.status.effective, GCRA(rate: 5, burst: 10))
        XCTAssertEqual(throttle.view, f.limiter.view(sandbox))
        XCTAssertEqual(throttle.compliance, f.limiter.settings.compliance)
    }

    func testAProductionCallerCannotSendAnOverride() throws {
        let f = Fixture { $0.models = try? Fixture.committedModels() }
        let production = f.caller()
        for override in [
            SandboxOverride(insights: [Fixture.coaching.type: .value(.high, reasons: [SandboxOverride.reason])]),
            SandboxOverride(evaluationError: .serverError), SandboxOverride()
        ] {
            XCTAssertRejects(.overrideNotAllowed) { () throws(Rejection) in
                try f.evaluate(Fixture.request(), by: production, override: override)
            }
        }
        XCTAssertRejects(.overrideNotAllowed) { () throws(Rejection) in try f.useCases.evaluation.permitOverride(for: production) }
        XCTAssertNoThrow(try f.useCases.evaluation.permitOverride(for: f.caller(environment: .sandbox)))
        XCTAssertTrue(f.store.received.evaluations.isEmpty)
        guard case .value(.unknown, _) = try f.evaluate(Fixture.request(), by: production).insights[0].outcome else {
            return XCTFail("without an override the production caller is answered")
        }
    }

    func testAForcedValueIsStoredAndCanBeReportedOn() throws {
        let f = Fixture()
        let sandbox = f.caller(environment: .sandbox)
        let forced = InsightOutcome.value(.high, reasons: [SandboxOverride.reason])
        let record = try f.evaluate(Fixture.request(), by: sandbox, override: SandboxOverride(insights: [Fixture.coaching.type: forced]))
        XCTAssertEqual(f.store.received.evaluations.last?.insights[0].outcome, forced)
        try f.report(.usedIncreasedFriction, on: record.eventId, used: [record.insights[0].insightId], by: sandbox)
    }
}

/// docs/api.md "Subject authorization" seen from an evaluation: a denial in effect refuses it, not
/// before.
final class OptOutTests: XCTestCase {
    func testAnOptedOutAccountIsRefusedOnlyOnceTheCooldownHasPassed() throws {
        let f = Fixture()
        let caller = f.caller()
        let state = try f.choose(.denied, "acct-77", by: caller)
        XCTAssertEqual(state.record?.effectiveAt, f.clock.now() + 72 * 3_600_000)
        _ = try f.evaluate(Fixture.request(account: "acct-77"), by: caller)  // during the cooldown evaluations continue
        f.clock.advance(ms: 72 * 3_600_000 - 1)
        _ = try f.evaluate(Fixture.request(account: "acct-77"), by: caller)
        let stored = f.store.received.evaluations.count
        f.clock.advance(ms: 1)
        XCTAssertRejects(.optedOut) { () throws(Rejection) in try f.evaluate(Fixture.request(account: "acct-77"), by: caller) }
        XCTAssertEqual(f.store.received.evaluations.count, stored, "a refused evaluation was stored")
    }

    func testAnOptedOutDeviceIsRefused() throws {
        let f = Fixture { $0.cooldown = 0 }
        let caller = f.caller()
        try f.choose(.denied, "dev-9", kind: .device, by: caller)
        XCTAssertRejects(.optedOut) { () throws(Rejection) in
            try f.evaluate(Fixture.request(account: "someone", device: "dev-9"), by: caller)
        }
        // The same text as an account is another subject.
        _ = try f.evaluate(Fixture.request(account: "dev-9"), by: caller)
    }

    func testAnOptOutCoversOnlyItsSubjectAndEnvironment() throws {
        let f = Fixture { $0.cooldown = 0 }
        let caller = f.caller()
        try f.choose(.denied, "acct-77", by: caller)
        XCTAssertRejects(.optedOut) { () throws(Rejection) in try f.evaluate(Fixture.request(account: "acct-77"), by: caller) }
        _ = try f.evaluate(Fixture.request(account: "acct-78"), by: caller)
        _ = try f.evaluate(Fixture.request(account: "acct-77"), by: f.caller(environment: .sandbox))
    }

    func testSwitchingInsightsBackOnTakesEffectAtOnce() throws {
        let f = Fixture { $0.cooldown = 0 }
        let caller = f.caller()
        try f.choose(.denied, "acct-77", by: caller)
        XCTAssertRejects(.optedOut) { () throws(Rejection) in try f.evaluate(Fixture.request(account: "acct-77"), by: caller) }
        try f.choose(.authorized, "acct-77", by: caller)
        _ = try f.evaluate(Fixture.request(account: "acct-77"), by: caller)
    }

    func testOneTenantsOptOutIsItsOwn() throws {
        let f = Fixture { $0.cooldown = 0 }
        let acme = f.caller(tenant: "acme"), acmeOther = f.caller(tenant: "acme"), globex = f.caller(tenant: "globex")
        try f.choose(.denied, "acct-shared", by: acme)
        XCTAssertRejects(.optedOut) { () throws(Rejection) in try f.evaluate(Fixture.request(account: "acct-shared"), by: acmeOther) }
        _ = try f.evaluate(Fixture.request(account: "acct-shared"), by: globex)
        try f.choose(.authorized, "acct-shared", by: globex)  // another tenant cannot cancel it
        XCTAssertRejects(.optedOut) { () throws(Rejection) in try f.evaluate(Fixture.request(account: "acct-shared"), by: acme) }
    }
}

/// docs/rate-limits.md "Rate limits": per-device limits (per tenant and environment) and
/// per-insight-type quotas.
final class EvaluationLimitTests: XCTestCase {
    func testADeviceOverItsHourlyLimitIsRefusedWithTheWaitAndTheLimit() throws {
        let f = Fixture { $0.rateLimits.devicePerHour = 2 }
        let caller = f.caller()
        for _ in 0..<2 { _ = try f.evaluate(Fixture.request(device: "d-1"), by: caller) }
        XCTAssertRejects(.deviceThrottled(retryAfterSeconds: 1800, perHour: 2)) { () throws(Rejection) in
            try f.evaluate(Fixture.request(device: "d-1"), by: caller)
        }
        XCTAssertEqual(f.store.received.evaluations.count, 2, "a refused evaluation was stored")
        XCTAssertEqual(f.counter("insightd_throttled_requests_total", ["reason": "deviceRate"]), 1)
        XCTAssertEqual(f.limiter.view(caller).lastThrottleReason, .deviceRate)
        _ = try f.evaluate(Fixture.request(device: "d-2"), by: caller)
        f.clock.advance(seconds: 1800)
        _ = try f.evaluate(Fixture.request(device: "d-1"), by: caller)
    }

    func testDeviceLimitsArePerTenantAndEnvironment() throws {
        let f = Fixture { $0.rateLimits.devicePerHour = 3 }
        let acme = f.caller(tenant: "acme"), acmeOther = f.caller(tenant: "acme")
        for _ in 0..<3 { _ = try f.evaluate(Fixture.request(device: "dev-shared"), by: acme) }
        guard
            case .deviceThrottled? = rejection({ () throws(Rejection) in
                try f.evaluate(Fixture.request(device: "dev-shared"), by: acmeOther)
            })
        else { return XCTFail("callers of one tenant do not share the device limit") }
        for caller in [f.caller(tenant: "globex"), f.caller(tenant: "acme", environment: .sandbox)] {
            for _ in 0..<3 { _ = try f.evaluate(Fixture.request(device: "dev-shared"), by: caller) }
        }
    }

    func testAnInsightTypeOverItsQuotaAnswersRateLimitErrorAndTheOthersStillAnswer() throws {
        let f = Fixture {
            $0.models = try? Fixture.committedModels()
            $0.rateLimits.insightQuotaFactor = 1
        }
        let caller = f.caller(rate: 1, burst: 2)
        let insights = [
            Fixture.coaching,
            InsightRequest(type: InsightType.isLikelyBeingCoached.rawValue, schemaVersion: 1, modelVersion: "1.0"),
            InsightRequest(type: "isLikelyBeingPhished", schemaVersion: 1)
        ]
        let first = try f.evaluate(Fixture.request(insights: insights), by: caller)
        guard case .value = first.insights[0].outcome, case .value = first.insights[1].outcome else { return XCTFail("\(first)") }
        let second = try f.evaluate(Fixture.request(insights: insights), by: caller)
        guard case .error(.rateLimitError, _) = second.insights[0].outcome,
            case .error(.rateLimitError, _) = second.insights[1].outcome
        else { return XCTFail("\(second.insights)") }
        guard case .error(.insightUnavailable, _) = second.insights[2].outcome else { return XCTFail("\(second.insights[2])") }
        XCTAssertEqual(second.insights[0].modelVersion, "2.0")
        XCTAssertEqual(f.counter("insightd_insight_errors_total", ["code": "rateLimitError"]), 2)
    }

    /// A shadow version answers beside a served coaching insight that a model answered, and not
    /// where the served one failed (its quota used up): the versions are compared on the same
    /// evaluations.
    func testAShadowAnswersOnlyWhereTheServedInsightWasAnswered() throws {
        let f = Fixture {
            $0.models = try? ModelRegistry.load(directory: Fixture.modelsDirectory, shadow: ["1.0"])
            $0.rateLimits.insightQuotaFactor = 1
        }
        // Two requests of a burst of 2; each asks the coaching insight twice, so the second
        // finds the insight quota (burst 2) used up.
        let caller = f.caller(rate: 1, burst: 2)
        let request = Fixture.request(insights: [Fixture.coaching, Fixture.coaching], interaction: Fixture.genuineSession)
        let first = try f.evaluate(request, by: caller)
        guard case .value = first.insights[0].outcome else { return XCTFail("\(first.insights)") }
        XCTAssertEqual(first.shadowInsights.map(\.modelVersion), ["1.0"])
        let second = try f.evaluate(request, by: caller)
        guard case .error(.rateLimitError, _) = second.insights[0].outcome,
            case .error(.rateLimitError, _) = second.insights[1].outcome
        else { return XCTFail("\(second.insights)") }
        XCTAssertEqual(second.shadowInsights.count, 0, "a shadow answered where the served insight did not")
    }
}

/// docs/velocity.md "Escalation": velocity raises a value by one level, never lowers it, and is
/// tracked per environment.
final class EvaluationVelocityTests: XCTestCase {
    func value(_ record: EvaluationRecord) -> (InsightValue?, [String]) {
        guard case .value(let value, let reasons) = record.insights[0].outcome else { return (nil, []) }
        return (value, reasons)
    }

    func testTheTenthEvaluationOfAnAccountIsRaisedOneLevelAndTrackedAsRaised() throws {
        let f = Fixture { $0.models = try? Fixture.committedModels() }
        let caller = f.caller()
        for _ in 0..<9 {
            let record = try f.evaluate(Fixture.request(account: "busy"), by: caller)
            XCTAssertEqual(value(record).0, .unknown)
            XCTAssertEqual(record.trackedValue, .unknown)
            XCTAssertFalse(record.raisedByVelocity)
        }
        let tenth = try f.evaluate(Fixture.request(account: "busy"), by: caller)
        XCTAssertEqual(value(tenth).0, .medium)
        XCTAssertEqual(value(tenth).1, ["accountVelocity"])
        XCTAssertEqual(tenth.trackedValue, .medium)
        XCTAssertTrue(tenth.raisedByVelocity)
        XCTAssertEqual(f.store.received.evaluations.last, tenth, "the stored record is not the one answered")
        XCTAssertEqual(f.counter("insightd_velocity_rules_total", ["rule": "accountVelocity", "mode": "enforce"]), 1)
        // Another account is unaffected.
        XCTAssertEqual(value(try f.evaluate(Fixture.request(account: "quiet"), by: caller)).0, .unknown)
    }

    func testTwoRulesFiringStillRaiseByOneLevelOnly() throws {
        let f = Fixture { $0.models = try? Fixture.committedModels() }
        let caller = f.caller()
        for _ in 0..<9 { _ = try f.evaluate(Fixture.request(account: "busy", device: "dev-1"), by: caller) }
        let tenth = try f.evaluate(Fixture.request(account: "busy", device: "dev-2"), by: caller)
        XCTAssertEqual(Set(value(tenth).1), ["accountVelocity", "newDeviceForAccount"])
        XCTAssertEqual(value(tenth).0, .medium, "unknown went further than one level")
    }

    func testOneDeviceUsedByManyAccountsIsRaisedAndTheSandboxKeepsItsOwnCounts() throws {
        let f = Fixture { $0.models = try? Fixture.committedModels() }
        let caller = f.caller()
        for i in 0..<3 {
            XCTAssertEqual(value(try f.evaluate(Fixture.request(account: "acct-\(i)", device: "shared"), by: caller)).0, .unknown)
        }
        let fourth = try f.evaluate(Fixture.request(account: "acct-3", device: "shared"), by: caller)
        XCTAssertEqual(value(fourth).0, .medium)
        XCTAssertTrue(value(fourth).1.contains("sharedDevice"), "\(value(fourth).1)")
        let sandbox = f.caller(environment: .sandbox)
        XCTAssertEqual(value(try f.evaluate(Fixture.request(account: "acct-9", device: "shared"), by: sandbox)).0, .unknown)
    }

    func testForcedCoachedValuesAreTrackedAndMarkTheCounterpartyTheyPaid() throws {
        let f = Fixture { $0.models = try? Fixture.committedModels() }
        let sandbox = f.caller(environment: .sandbox)
        let high = SandboxOverride(insights: [Fixture.coaching.type: .value(.high, reasons: [SandboxOverride.reason])])
        for i in 0..<2 {
            let record = try f.evaluate(Fixture.request(account: "victim-\(i)", counterparty: "mule"), by: sandbox, override: high)
            XCTAssertEqual(value(record).0, .high)
            XCTAssertEqual(record.trackedValue, .high, "a forced value is tracked like any answer")
        }
        let next = try f.evaluate(Fixture.request(account: "victim-9", counterparty: "mule"), by: sandbox)
        XCTAssertEqual(value(next).0, .medium)
        XCTAssertTrue(value(next).1.contains("counterpartyLinkedToCoaching"), "\(value(next).1)")
        // Production never saw any of it.
        XCTAssertEqual(value(try f.evaluate(Fixture.request(account: "victim-9", counterparty: "mule"), by: f.caller())).0, .unknown)
    }

    func testAForcedValueIsNeverEscalated() throws {
        let f = Fixture { $0.models = try? Fixture.committedModels() }
        let sandbox = f.caller(environment: .sandbox)
        let unknown = SandboxOverride(insights: [Fixture.coaching.type: .value(.unknown, reasons: [SandboxOverride.reason])])
        for _ in 0..<12 {
            let record = try f.evaluate(Fixture.request(account: "busy"), by: sandbox, override: unknown)
            XCTAssertEqual(record.insights[0].outcome, .value(.unknown, reasons: [SandboxOverride.reason]))
            XCTAssertFalse(record.raisedByVelocity)
        }
    }

    func testAShadowRuleIsCountedButChangesNothing() throws {
        let policy = try EscalationPolicy.parse(#"{"version":1,"rules":{"accountVelocity":{"mode":"shadow","threshold":3,"window":"1h"}}}"#)
        let f = Fixture {
            $0.models = try? Fixture.committedModels()
            $0.escalation = policy
        }
        let caller = f.caller()
        for _ in 0..<5 {
            let record = try f.evaluate(Fixture.request(account: "s", category: .account), by: caller)
            XCTAssertEqual(value(record).0, .unknown)
            XCTAssertEqual(value(record).1, [])
        }
        XCTAssertEqual(f.counter("insightd_velocity_rules_total", ["rule": "accountVelocity", "mode": "shadow"]), 3)
        XCTAssertEqual(f.counter("insightd_velocity_rules_total", ["mode": "enforce"]), 0)
    }

    func testAnEvaluationTheStoreRefusedIsNotTrackedByVelocity() throws {
        let f = Fixture { $0.models = try? Fixture.committedModels() }
        let caller = f.caller()
        f.store.failWrites(.overloaded)
        for _ in 0..<10 {
            XCTAssertRejects(.store(.overloaded)) { () throws(Rejection) in try f.evaluate(Fixture.request(account: "busy"), by: caller) }
        }
        f.store.failWrites(nil)
        for i in 0..<9 {
            XCTAssertEqual(
                value(try f.evaluate(Fixture.request(account: "busy"), by: caller)).0, .unknown,
                "evaluation \(i) counted evaluations that were never stored")
        }
    }
}

/// docs/privacy.md "Tenants: the boundary": raw identifiers stop at the use case; each tenant
/// hashes apart.
final class EvaluationPrivacyTests: XCTestCase {
    func testTheStoreReceivesOnlyKeyedHashesNeverARawIdentifierOrTheInteraction() throws {
        let f = Fixture { $0.models = try? Fixture.committedModels() }
        let caller = f.caller()
        let account = "acct-PRIVACY-91827", device = "dev-PRIVACY-55", payee = "payee-PRIVACY-DE89"
        let record = try f.evaluate(
            Fixture.request(
                account: account, device: device, counterparty: payee,
                interaction: Fixture.coachedSession, requestId: "req-PRIVACY-7"), by: caller)
        XCTAssertEqual(
            record.subject,
            HashedSubject(
                account: f.hash(account, .account), device: f.hash(device, .device),
                counterparty: f.hash(payee, .counterparty),
                keyId: f.hashKeys.current.active.keyId))
        try f.choose(.denied, account, by: caller)
        _ = try f.useCases.authorization.query(kind: .device, identifier: device, by: caller)
        let received = f.store.received
        XCTAssertEqual(received.evaluations.count, 1)
        XCTAssertEqual(received.authorizations.count, 1)
        for needle in [account, device, payee, "PRIVACY", "req-PRIVACY-7", "keyDown", "proximityNear"] {
            XCTAssertFalse(received.transcript.contains(needle), "\(needle) reached the store")
        }
    }

    func testEachTenantHashesOnePersonApartAndTenantDefaultKeepsTheKeyringsHashes() throws {
        let f = Fixture()
        var stored: [String: HashedSubject] = [:]
        for tenant in ["acme", "globex", Tenant.defaultName] {
            stored[tenant] = try f.evaluate(Fixture.request(account: "acct-shared"), by: f.caller(tenant: tenant)).subject
        }
        XCTAssertEqual(Set(stored.values.map(\.account)).count, 3, "one person has the same hash in two tenants")
        XCTAssertEqual(Set(stored.values.map(\.keyId)).count, 3)
        let keyring = try HashKeyring(keys: [Fixture.hashKey])
        XCTAssertEqual(
            stored[Tenant.defaultName]?.account, keyring.active.hash("acct-shared", kind: .account),
            "tenant default's hashes changed")
        XCTAssertEqual(stored["acme"]?.account, keyring.forTenant("acme").active.hash("acct-shared", kind: .account))
    }

    func testAfterARotationNewEvaluationsUseTheNewKeyAndOptOutsStillMatch() throws {
        let f = Fixture { $0.cooldown = 0 }
        let caller = f.caller()
        try f.choose(.denied, "acct-77", by: caller)
        let before = f.hashKeys.current.active.keyId
        f.hashKeys.replace(try HashKeyring(keys: [Fixture.hashKey, [UInt8](repeating: 0xA5, count: 32)]))
        XCTAssertNotEqual(f.hashKeys.current.active.keyId, before)
        XCTAssertRejects(.optedOut) { () throws(Rejection) in try f.evaluate(Fixture.request(account: "acct-77"), by: caller) }
        XCTAssertEqual(try f.useCases.authorization.query(kind: .account, identifier: "acct-77", by: caller).record?.request, .denied)
        let other = try f.evaluate(Fixture.request(account: "acct-90"), by: caller)
        XCTAssertEqual(other.subject.keyId, f.hashKeys.current.active.keyId)
        XCTAssertEqual(other.subject.account, f.hash("acct-90", .account))
        // Switching back on folds the old key's record into the new one.
        try f.choose(.authorized, "acct-77", by: caller)
        _ = try f.evaluate(Fixture.request(account: "acct-77"), by: caller)
    }
}

/// Where an evaluation's work after its commit runs: the store completes the write on its own
/// thread (the writer, the one serial stage), and everything after it, velocity's record
/// included, runs in `resume` (the request's loop).
final class EvaluationResumeTests: XCTestCase {
    /// Counts how deep the calls of `resume` are nested now (the tests are single-threaded:
    /// the fixture's store completes before it returns).
    final class ResumeDepth: Sendable {
        let depth = Mutex(0)
        var resume: Resume {
            { work in
                self.depth.withLock { $0 += 1 }
                work()
                self.depth.withLock { $0 -= 1 }
            }
        }
        var isInside: Bool { depth.withLock { $0 > 0 } }
    }

    /// The fixture's velocity tracker, noting whether each record was made inside `resume`.
    final class VelocityWhere: VelocityState {
        let tracker: VelocityTracker
        let resume: ResumeDepth
        let recordedInside = Mutex<[Bool]>([])
        init(_ tracker: VelocityTracker, resume: ResumeDepth) {
            self.tracker = tracker
            self.resume = resume
        }
        func signals(for query: VelocityQuery) -> VelocitySignals { tracker.signals(for: query) }
        func record(_ event: VelocityEvent) {
            recordedInside.withLock { $0.append(resume.isInside) }
            tracker.record(event)
        }
        func record(_ event: VelocityEvent, then: @escaping @Sendable () -> Void) {
            recordedInside.withLock { $0.append(resume.isInside) }
            tracker.record(event, then: then)
        }
        func erase(_ subject: ErasedSubject) throws { try tracker.erase(subject) }
        var isRebuilding: Bool { tracker.isRebuilding }
    }

    func testVelocityRecordsTheEvaluationInResumeNotOnTheStoresThread() throws {
        let f = Fixture()
        let caller = f.caller()
        let resume = ResumeDepth()
        let velocity = VelocityWhere(f.velocity, resume: resume)
        let service = EvaluationService(
            ledger: f.store, models: f.models, hashKeys: f.hashKeys, clock: f.clock, limiter: f.limiter,
            denials: f.denials, velocity: velocity, escalation: .defaults, metrics: ServiceMetrics(registry: f.registry),
            consumptionGrace: 15 * 60_000)
        let evaluated = try f.completed { done throws(Rejection) in
            try service.evaluate(Fixture.request(), by: caller, answer: PlainAnswer(), resume: resume.resume, completion: done)
        }
        XCTAssertEqual(velocity.recordedInside.withLock { $0 }, [true], "recorded once, from resume")
        XCTAssertEqual(f.store.received.evaluations, [evaluated.record!])
    }
}
