import InsightDomain
import InsightServices
import XCTest

/// docs/api.md "Authentication": a key names one caller; unknown, revoked or forged keys are
/// refused, and a missing role is forbidden.
final class CredentialCheckTests: XCTestCase {
    let unauthorized = Rejection.unauthorized(detail: "The API key is not valid.")

    func testAKeyAuthenticatesItsCaller() throws {
        let f = Fixture()
        let (caller, key) = f.register([.evaluate, .labels])
        XCTAssertEqual(try f.useCases.credentials.caller(for: key.token, requiring: .evaluate), caller)
        XCTAssertEqual(try f.useCases.credentials.caller(for: key.token, requiring: .labels), caller)
        XCTAssertEqual(try f.useCases.credentials.caller(for: key.token, requiring: nil), caller)
    }

    func testSomethingNotAKeyAnUnknownKeyAndAWrongSecretAreUnauthorized() {
        let f = Fixture()
        let (_, key) = f.register()
        let forged = String(key.token.prefix(20)) + String(repeating: "A", count: 43)
        for token in ["", "not-a-key", APIKey.generate().token, forged] {
            XCTAssertRejects(
                unauthorized, { () throws(Rejection) in try f.useCases.credentials.caller(for: token, requiring: .evaluate) },
                token)
        }
    }

    func testARevokedKeyIsUnauthorizedAndAnotherKeyOfItsCallerIsNot() throws {
        let f = Fixture()
        let (caller, key) = f.register()
        let second = try f.store.inner.issueKey(callerId: caller.callerId, now: f.clock.now())
        try f.store.inner.revokeKey(keyId: key.keyId, now: f.clock.now())
        XCTAssertRejects(unauthorized) { () throws(Rejection) in try f.useCases.credentials.caller(for: key.token, requiring: .evaluate) }
        XCTAssertEqual(try f.useCases.credentials.caller(for: second.token, requiring: .evaluate), caller)
    }

    func testACallerWithoutTheRoleIsForbidden() {
        let f = Fixture()
        let (_, key) = f.register([.labels])
        XCTAssertRejects(.forbidden(missing: .evaluate)) { () throws(Rejection) in
            try f.useCases.credentials.caller(for: key.token, requiring: .evaluate)
        }
        XCTAssertRejects(.forbidden(missing: .admin)) { () throws(Rejection) in
            try f.useCases.credentials.caller(for: key.token, requiring: .admin)
        }
    }

    func testADirectoryThatCannotBeReadIsUnavailableNotUnauthorized() {
        let f = Fixture()
        let (_, key) = f.register()
        f.store.failReads(true)
        XCTAssertRejects(.credentialsUnavailable) { () throws(Rejection) in
            try f.useCases.credentials.caller(for: key.token, requiring: .evaluate)
        }
    }

    func testARevokedKeyIsRefusedOnceTheCacheTimeHasPassed() throws {
        let f = Fixture { $0.credentialCacheSeconds = 30 }
        let (caller, key) = f.register()
        XCTAssertEqual(try f.useCases.credentials.caller(for: key.token, requiring: .evaluate), caller)
        try f.store.inner.revokeKey(keyId: key.keyId, now: f.clock.now())
        f.clock.advance(seconds: 29)
        XCTAssertEqual(try f.useCases.credentials.caller(for: key.token, requiring: .evaluate), caller, "the cache was not used")
        f.clock.advance(seconds: 2)
        XCTAssertRejects(unauthorized) { () throws(Rejection) in try f.useCases.credentials.caller(for: key.token, requiring: .evaluate) }
    }

    /// A key revoked after the wall clock stepped back is refused once the cache time has
    /// passed, not once the clock has caught up with the step.
    func testARevocationIsNotDelayedByAWallClockSteppedBack() throws {
        let f = Fixture { $0.credentialCacheSeconds = 30 }
        let (_, key) = f.register()
        _ = try f.useCases.credentials.caller(for: key.token, requiring: .evaluate)  // cached now
        f.clock.step(ms: -3_600_000)  // the clock steps back an hour
        try f.store.inner.revokeKey(keyId: key.keyId, now: f.clock.now())
        f.clock.advance(seconds: 31)  // the cache time, but 59 minutes short of the step
        XCTAssertRejects(unauthorized) { () throws(Rejection) in try f.useCases.credentials.caller(for: key.token, requiring: .evaluate) }
    }

    /// A real caller's key stays cached while a flood of random key ids passes: the key is
    /// revoked behind the cache's back, so a look-up after a flushed cache would refuse it.
    func testAFloodOfRandomKeyIdsDoesNotFlushARealCallersKey() throws {
        let f = Fixture { $0.credentialCacheSeconds = 60 }
        let (caller, key) = f.register()
        _ = try f.useCases.credentials.caller(for: key.token, requiring: .evaluate)
        try f.store.inner.revokeKey(keyId: key.keyId, now: f.clock.now())
        for _ in 0..<12_000 {
            let token = APIKey.generate().token
            XCTAssertRejects(unauthorized) { () throws(Rejection) in try f.useCases.credentials.caller(for: token, requiring: nil) }
        }
        XCTAssertEqual(
            try f.useCases.credentials.caller(for: key.token, requiring: .evaluate), caller,
            "the real caller's cached key was flushed by random key ids")
    }
}

/// docs/rate-limits.md "The caller quota" and "The reporting penalty": each caller's token bucket,
/// and the reporting penalty that cuts it.
final class QuotaGateTests: XCTestCase {
    func testABurstIsAdmittedThenTheCallerIsThrottledWithWhatItNeedsToKnow() throws {
        let f = Fixture()
        let caller = f.caller(rate: 1, burst: 3)
        XCTAssertEqual(try (0..<3).map { _ in try f.useCases.quota.admit(caller).remaining }, [2, 1, 0])
        guard case .throttled(let throttle)? = rejection({ () throws(Rejection) in try f.useCases.quota.admit(caller) }) else {
            return XCTFail("the burst was not enforced")
        }
        XCTAssertEqual(throttle.reason, .callerRate)
        XCTAssertEqual(throttle.retryAfterSeconds, 1)
        XCTAssertEqual(throttle.status.remaining, 0)
        XCTAssertEqual(throttle.status.configured, GCRA(rate: 1, burst: 3))
        XCTAssertEqual(throttle.status.effective, GCRA(rate: 1, burst: 3))
        XCTAssertEqual(throttle.view.throttledCount, 1)
        XCTAssertEqual(throttle.view.lastThrottleReason, .callerRate)
        XCTAssertEqual(throttle.view.lastThrottledAt, f.clock.now())
        XCTAssertEqual(throttle.compliance, f.limiter.settings.compliance)
        XCTAssertEqual(f.counter("insightd_throttled_requests_total", ["reason": "callerRate"]), 1)
        // Each caller has its own bucket.
        XCTAssertNoThrow(try f.useCases.quota.admit(f.caller(rate: 1, burst: 3)))
    }

    func testTheBucketRefillsAtTheCallersRate() throws {
        let f = Fixture()
        let caller = f.caller(rate: 2, burst: 1)
        _ = try f.useCases.quota.admit(caller)
        guard case .throttled? = rejection({ () throws(Rejection) in try f.useCases.quota.admit(caller) }) else { return XCTFail() }
        f.clock.advance(ms: 500)
        XCTAssertNoThrow(try f.useCases.quota.admit(caller))
    }

    func testOverdueReportsBeyondTheAllowanceCutTheRateStepByStepAndItRecovers() throws {
        let f = Fixture { $0.rateLimits.compliance.allowanceMinimum = 5 }
        let caller = f.caller(rate: 4, burst: 10)
        f.limiter.update([caller.callerId: ReportingStats(evaluations: 10, overdue: 10)])
        for _ in 0..<5 { _ = try f.useCases.quota.admit(caller) }
        guard case .throttled(let throttle)? = rejection({ () throws(Rejection) in try f.useCases.quota.admit(caller) }) else {
            return XCTFail("the penalty was not enforced")
        }
        XCTAssertEqual(throttle.reason, .reportingPenalty)
        XCTAssertEqual(throttle.status.penaltyStep, 1)
        XCTAssertEqual(throttle.status.configured, GCRA(rate: 4, burst: 10))
        XCTAssertEqual(throttle.status.effective, GCRA(rate: 2, burst: 5))
        XCTAssertEqual(throttle.view.stats.overdue, 10)
        XCTAssertEqual(throttle.view.allowance, 5)
        XCTAssertEqual(f.counter("insightd_throttled_requests_total", ["reason": "reportingPenalty"]), 1)
        // 20 overdue: a step deeper.
        f.limiter.update([caller.callerId: ReportingStats(evaluations: 20, overdue: 20)])
        XCTAssertEqual(f.limiter.status(caller).penaltyStep, 3)
        // Reporting recovers: one step per recovery period, not all at once.
        f.limiter.update([caller.callerId: ReportingStats(evaluations: 20, onTime: 20)])
        XCTAssertEqual(f.limiter.status(caller).penaltyStep, 3)
        f.clock.advance(seconds: 60)
        XCTAssertEqual(f.limiter.status(caller).penaltyStep, 2)
        f.clock.advance(seconds: 120)
        XCTAssertEqual(f.limiter.status(caller).penaltyStep, 0)
    }
}
