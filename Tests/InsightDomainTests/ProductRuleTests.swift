import InsightDomain
import XCTest

/// The cooldown of a denial (`AuthorizationRecord.applying`) and which stored choice stands
/// (`AuthorizationRecord.standing`), branch by branch.
final class AuthorizationRuleTests: XCTestCase {
    func testAFirstDenialIsPendingUntilTheCooldownEndsAndInEffectExactlyAtItsEnd() {
        let record = AuthorizationRecord.applying(.denied, over: nil, now: 1_000, cooldown: 500)
        XCTAssertEqual(record, AuthorizationRecord(request: .denied, requestedAt: 1_000, effectiveAt: 1_500, renewedAt: 1_000))
        XCTAssertEqual(record.status(at: 1_499), .denialPending)
        XCTAssertEqual(record.status(at: 1_500), .denied)
        XCTAssertEqual(
            AuthorizationRecord.applying(.denied, over: nil, now: 1_000, cooldown: 0).status(at: 1_000), .denied,
            "no cooldown: in effect at once")
    }

    func testADenialOverADenialKeepsItsCooldownAndRenewsItNeverBackwards() {
        let stored = AuthorizationRecord(request: .denied, requestedAt: 1_000, effectiveAt: 1_500, renewedAt: 2_000)
        for now: Milliseconds in [1_200, 1_500, 9_000] {
            let again = AuthorizationRecord.applying(.denied, over: stored, now: now, cooldown: 700)
            XCTAssertEqual(again.requestedAt, 1_000, "at \(now)")
            XCTAssertEqual(again.effectiveAt, 1_500, "at \(now): asking again does not restart the cooldown")
            XCTAssertEqual(again.renewedAt, max(2_000, now), "at \(now)")
        }
    }

    func testADenialOverAnAuthorizationStartsANewCooldown() {
        let authorized = AuthorizationRecord(request: .authorized, requestedAt: 1_000, effectiveAt: 1_000)
        XCTAssertEqual(
            AuthorizationRecord.applying(.denied, over: authorized, now: 2_000, cooldown: 700),
            AuthorizationRecord(request: .denied, requestedAt: 2_000, effectiveAt: 2_700))
    }

    func testAnAuthorizationTakesEffectAtOnceWhateverWasStored() {
        let expected = AuthorizationRecord(request: .authorized, requestedAt: 3_000, effectiveAt: 3_000)
        for stored in [
            nil, AuthorizationRecord(request: .denied, requestedAt: 1_000, effectiveAt: 9_000),
            AuthorizationRecord(request: .authorized, requestedAt: 1_000, effectiveAt: 1_000)
        ] {
            XCTAssertEqual(AuthorizationRecord.applying(.authorized, over: stored, now: 3_000, cooldown: 700), expected)
        }
    }

    func testADenialWinsTheLastDenialInKeyringOrderElseTheFirstAuthorization() {
        let a1 = AuthorizationRecord(request: .authorized, requestedAt: 1, effectiveAt: 1)
        let a2 = AuthorizationRecord(request: .authorized, requestedAt: 2, effectiveAt: 2)
        let d1 = AuthorizationRecord(request: .denied, requestedAt: 3, effectiveAt: 4)
        let d2 = AuthorizationRecord(request: .denied, requestedAt: 5, effectiveAt: 6)
        XCTAssertNil(AuthorizationRecord.standing(among: []))
        XCTAssertEqual(AuthorizationRecord.standing(among: [a1, a2]), a1)
        XCTAssertEqual(AuthorizationRecord.standing(among: [a1, d1]), d1)
        XCTAssertEqual(AuthorizationRecord.standing(among: [d1, a1]), d1)
        XCTAssertEqual(AuthorizationRecord.standing(among: [d1, a1, d2, a2]), d2)
    }
}

/// "On time or late" (`Timeliness`), a repeated report (`ConsumptionResult.repeated`) and how the
/// reporting window counts an evaluation (`ReportingStats.count`), branch by branch.
final class ConsumptionRuleTests: XCTestCase {
    func testAReportIsOnTimeUpToAndAtTheDeadlineAndLateAfterIt() {
        XCTAssertEqual(Timeliness(reportedAt: 1_999, deadline: 2_000), .onTime)
        XCTAssertEqual(Timeliness(reportedAt: 2_000, deadline: 2_000), .onTime, "exactly at the deadline")
        XCTAssertEqual(Timeliness(reportedAt: 2_001, deadline: 2_000), .late)
    }

    func testTheSameReportAgainIsAlreadyRecordedAndAnyOtherAConflict() {
        let report = ConsumptionReport(
            eventId: "e1", callerId: "c1", environment: .production, status: .usedIncreasedFriction,
            insightIdsUsed: ["a", "b"], reportedAt: 5)
        XCTAssertEqual(ConsumptionResult.repeated(report, stored: .usedIncreasedFriction, insightIds: ["b", "a"]), .alreadyRecorded)
        XCTAssertEqual(
            ConsumptionResult.repeated(report, stored: .notUsedNotNeeded, insightIds: ["a", "b"]),
            .conflict(existing: .notUsedNotNeeded), "another status")
        XCTAssertEqual(
            ConsumptionResult.repeated(report, stored: .usedIncreasedFriction, insightIds: ["a"]),
            .conflict(existing: .usedIncreasedFriction), "other ids")
        XCTAssertEqual(
            ConsumptionResult.repeated(report, stored: nil, insightIds: ["a", "b"]),
            .conflict(existing: .usedIncreasedFriction), "a stored status this binary does not know")
    }

    func testAnEvaluationCountsOnTimeLateOverdueOrPending() {
        var stats = ReportingStats()
        stats.count(reportedAt: 2_000, deadline: 2_000, now: 9_000)
        stats.count(reportedAt: 2_001, deadline: 2_000, now: 9_000)
        stats.count(reportedAt: nil, deadline: 8_999, now: 9_000)
        stats.count(reportedAt: nil, deadline: 9_000, now: 9_000)
        XCTAssertEqual(
            stats, ReportingStats(evaluations: 4, onTime: 1, late: 1, overdue: 1, pending: 1),
            "a report at its deadline is on time; an unreported one is overdue only once now is past it")
    }
}

/// Which callers, quotas and ceilings a store accepts (`Caller.registering`, `checkQuota`,
/// `TenantCeiling.check`), and how a ceiling caps a quota.
final class CallerRuleTests: XCTestCase {
    private func register(
        name: String = "payments", tenant: String = "acme", roles: Set<Role> = [.evaluate],
        rate: Double = 50, burst: Int = 100
    ) throws(CallerRegistrationError) -> Caller {
        try Caller.registering(
            callerId: "c1", name: name, tenant: tenant, environment: .production, roles: roles,
            rate: rate, burst: burst, now: 7)
    }

    /// The refusal `body` throws, or nil when it throws none.
    private func refusal(_ body: () throws -> Void, line: UInt = #line) -> CallerRegistrationError? {
        do {
            try body()
        } catch let error as CallerRegistrationError {
            return error
        } catch {
            XCTFail("\(error) is not a CallerRegistrationError", line: line)
        }
        return nil
    }

    func testAValidCallerIsRegisteredWithItsNameTrimmed() throws {
        XCTAssertEqual(
            try register(name: "  payments\t", rate: .leastNonzeroMagnitude, burst: 1),
            Caller(
                callerId: "c1", name: "payments", tenant: "acme", environment: .production, roles: [.evaluate],
                rate: .leastNonzeroMagnitude, burst: 1, createdAt: 7))
    }

    func testEachRefusalNamesItsReasonInOrderTenantRolesRateBurstName() {
        XCTAssertEqual(refusal { _ = try register(tenant: "Acme", roles: [], rate: 0) }, .invalidTenant("Acme"))
        XCTAssertEqual(
            refusal { _ = try register(tenant: String(repeating: "a", count: Tenant.maxNameLength + 1)) },
            .invalidTenant(String(repeating: "a", count: Tenant.maxNameLength + 1)))
        XCTAssertNil(refusal { _ = try register(tenant: String(repeating: "a", count: Tenant.maxNameLength)) })
        XCTAssertEqual(refusal { _ = try register(roles: [], rate: 0) }, .noRoles)
        XCTAssertEqual(refusal { _ = try register(rate: 0, burst: 0) }, .invalidRate)
        XCTAssertEqual(refusal { _ = try register(rate: -1) }, .invalidRate)
        XCTAssertEqual(refusal { _ = try register(rate: .infinity) }, .invalidRate)
        XCTAssertEqual(refusal { _ = try register(rate: .nan) }, .invalidRate)
        XCTAssertEqual(refusal { _ = try register(burst: 0) }, .invalidBurst)
        XCTAssertEqual(refusal { _ = try register(name: " \t ") }, .invalidName)
        XCTAssertEqual(refusal { _ = try register(name: String(repeating: "n", count: 101)) }, .invalidName)
        XCTAssertNil(refusal { _ = try register(name: String(repeating: "n", count: 100)) })
    }

    func testAQuotaChangeChecksOnlyWhatItChanges() {
        XCTAssertNil(refusal { try Caller.checkQuota(rate: nil, burst: nil) })
        XCTAssertNil(refusal { try Caller.checkQuota(rate: 0.001, burst: 1) })
        XCTAssertEqual(refusal { try Caller.checkQuota(rate: 0, burst: nil) }, .invalidRate)
        XCTAssertEqual(refusal { try Caller.checkQuota(rate: nil, burst: 0) }, .invalidBurst)
        XCTAssertEqual(refusal { try Caller.checkQuota(rate: -.infinity, burst: 0) }, .invalidRate, "the rate first")
    }

    func testACeilingIsCheckedAndCapsAQuota() {
        XCTAssertNil(refusal { try TenantCeiling().check(tenant: "acme") }, "no ceiling")
        XCTAssertNil(refusal { try TenantCeiling(maxRate: 0.5, maxBurst: 1).check(tenant: "acme") })
        XCTAssertEqual(refusal { try TenantCeiling(maxRate: 1).check(tenant: "-acme") }, .invalidTenant("-acme"))
        XCTAssertEqual(refusal { try TenantCeiling(maxRate: 0).check(tenant: "acme") }, .invalidRateCeiling)
        XCTAssertEqual(refusal { try TenantCeiling(maxBurst: 0).check(tenant: "acme") }, .invalidBurstCeiling)
        let ceiling = TenantCeiling(maxRate: 40)
        XCTAssertEqual(ceiling.capping(rate: 50), 40)
        XCTAssertEqual(ceiling.capping(rate: 40), 40, "at the ceiling")
        XCTAssertEqual(ceiling.capping(rate: 30), 30)
        XCTAssertEqual(ceiling.capping(burst: 1_000), 1_000, "no burst ceiling")
    }

    func testRefusalsReadAsTheStoresAlwaysSaidThem() {
        XCTAssertEqual(CallerRegistrationError.invalidRate.description, "rate must be a positive number")
        XCTAssertEqual(CallerRegistrationError.invalidBurst.description, "burst must be at least 1")
        XCTAssertEqual(CallerRegistrationError.noRoles.description, "a caller needs at least one role")
        XCTAssertEqual(CallerRegistrationError.invalidName.description, Caller.nameRule)
        XCTAssertEqual(CallerRegistrationError.noCaller("c9").description, "no caller c9")
        XCTAssertEqual(CallerRegistrationError.keyAlreadyRevoked("k1").description, "key k1 is already revoked")
        XCTAssertTrue(CallerRegistrationError.invalidTenant("Acme").description.hasPrefix("Acme is not a tenant name"))
    }
}

/// The stored form of a caller's roles (`StoreSchema`), which both SQL stores read and write.
final class StoreSchemaTests: XCTestCase {
    func testRolesAreStoredInRoleOrderAndUnknownNamesAreLeftOut() {
        XCTAssertEqual(StoreSchema.encode([.admin, .evaluate, .labels]), "evaluate,labels,admin")
        XCTAssertEqual(StoreSchema.encode([]), "")
        XCTAssertEqual(StoreSchema.decodeRoles("admin,evaluate"), [.admin, .evaluate])
        XCTAssertEqual(StoreSchema.decodeRoles("evaluate,superuser,"), [.evaluate])
        for roles in [Set<Role>(), [.labels], Set(Role.allCases)] {
            XCTAssertEqual(StoreSchema.decodeRoles(StoreSchema.encode(roles)), roles)
        }
    }
}

/// A label again (`LabelResultStatus.repeating`) and a submission under a kept idempotency key
/// (`LabelSubmissionResult.replaying`), branch by branch.
final class LabelRuleTests: XCTestCase {
    func testALabelAgainIsADuplicateOnlyWithTheSameOutcomeAndFraudType() {
        let scam = Label(insightId: "a", outcome: .confirmedFraud, fraudType: .romanceScam, discoveredAt: "2027-01-15")
        let legitimate = Label(insightId: "a", outcome: .confirmedLegitimate, fraudType: nil, discoveredAt: "2027-01-15")
        XCTAssertEqual(LabelResultStatus.repeating(scam, storedOutcome: "confirmedFraud", storedFraudType: "romanceScam"), .duplicate)
        XCTAssertEqual(LabelResultStatus.repeating(scam, storedOutcome: "confirmedFraud", storedFraudType: "purchaseScam"), .conflict)
        XCTAssertEqual(LabelResultStatus.repeating(scam, storedOutcome: "confirmedLegitimate", storedFraudType: nil), .conflict)
        XCTAssertEqual(LabelResultStatus.repeating(legitimate, storedOutcome: "confirmedLegitimate", storedFraudType: nil), .duplicate)
        XCTAssertEqual(
            LabelResultStatus.repeating(legitimate, storedOutcome: "confirmedLegitimate", storedFraudType: "other"),
            .conflict)
    }

    func testTheSameBodyIsReplayedAndAnotherRefused() {
        let submission = LabelSubmission(
            callerId: "ops", tenant: "default", environment: .production, items: [],
            idempotencyKeyHash: [1], bodyHash: [2], receivedAt: 5)
        XCTAssertEqual(
            LabelSubmissionResult.replaying(submission, keptBodyHash: [2], keptResults: [.accepted, .invalid]),
            .processed([.accepted, .invalid], replayed: true))
        XCTAssertEqual(
            LabelSubmissionResult.replaying(submission, keptBodyHash: [3], keptResults: [.accepted]),
            .idempotencyKeyReused)
        XCTAssertEqual(
            StoreSchema.decodeLabelResults(StoreSchema.encode([.accepted, .unknownInsight, .invalid])),
            [.accepted, .unknownInsight, .invalid])
        XCTAssertEqual(StoreSchema.encode([LabelResultStatus]()), "")
    }
}

/// How long a retry entry answers (`RetryEntry.isLive`).
final class RetryRuleTests: XCTestCase {
    func testAnEntryIsLiveUntilTheMillisecondBeforeItExpires() {
        let entry = RetryEntry(key: [1], digest: [2], eventId: "e1", answer: [], expiresAt: 2_000)
        XCTAssertTrue(entry.isLive(at: 1_000))
        XCTAssertTrue(entry.isLive(at: 1_999))
        XCTAssertFalse(entry.isLive(at: 2_000), "exactly at its expiry the key serves a new evaluation")
        XCTAssertFalse(entry.isLive(at: 2_001))
    }
}
