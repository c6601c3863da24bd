import InsightDomain
import InsightServices
import XCTest

/// docs/api.md "Admin API" and "Tenants": an admin sees and changes its own tenant's callers and
/// their rate limits.
final class CallerAdminServiceTests: XCTestCase {
    func testAnAdminListsOnlyItsTenantsCallers() throws {
        let f = Fixture()
        let admin = f.caller([.admin], tenant: "acme")
        let acmeCaller = f.caller(tenant: "acme")
        _ = f.caller(tenant: "globex")
        _ = f.caller()
        XCTAssertEqual(try f.useCases.admin.callers(of: admin).map(\.callerId), [admin.callerId, acmeCaller.callerId])
        XCTAssertEqual(try f.useCases.admin.caller(acmeCaller.callerId, of: admin), acmeCaller)
    }

    func testAnotherTenantsCallerIsNotFoundForEveryOperationAndStaysUnchanged() throws {
        let f = Fixture()
        let admin = f.caller([.admin], tenant: "acme")
        for other in [f.caller(tenant: "globex"), f.caller()] {
            XCTAssertRejects(.callerNotFound) { () throws(Rejection) in try f.useCases.admin.caller(other.callerId, of: admin) }
            XCTAssertRejects(.callerNotFound) { () throws(Rejection) in
                try f.completed { done in
                    f.useCases.admin.updateCaller(
                        other.callerId, rate: 1, burst: nil, of: admin, resume: { $0() },
                        completion: done)
                }
            }
            XCTAssertRejects(.callerNotFound) { () throws(Rejection) in try f.useCases.admin.rateLimit(other.callerId, of: admin) }
            XCTAssertRejects(.callerNotFound) { () throws(Rejection) in
                try f.completed { done throws(Rejection) in
                    try f.useCases.admin.resetRateLimit(other.callerId, of: admin, resume: { $0() }, completion: done)
                }
            }
            XCTAssertEqual(try f.store.inner.caller(other.callerId, tenant: nil)?.rate, 10_000, "another tenant's caller was changed")
        }
        XCTAssertRejects(.callerNotFound) { () throws(Rejection) in try f.useCases.admin.caller("caller_none", of: admin) }
    }

    func testAChangedQuotaTakesEffectOnTheNextRequest() throws {
        let f = Fixture()
        let admin = f.caller([.admin])
        let (caller, key) = f.register(rate: 1, burst: 1)
        _ = try f.useCases.quota.admit(caller)
        guard case .throttled? = rejection({ () throws(Rejection) in try f.useCases.quota.admit(caller) }) else { return XCTFail() }
        let updated = try f.completed { done in
            f.useCases.admin.updateCaller(caller.callerId, rate: nil, burst: 50, of: admin, resume: { $0() }, completion: done)
        }
        XCTAssertEqual(updated.burst, 50)
        XCTAssertEqual(updated.rate, 1, "a rate not given was changed")
        // The credential check reads the caller again (its cache is off here), with its new burst.
        let authenticated = try f.useCases.credentials.caller(for: key.token, requiring: .evaluate)
        XCTAssertEqual(authenticated, updated)
        XCTAssertNoThrow(try f.useCases.quota.admit(authenticated))
    }

    /// The rate-limit view (docs/rate-limits.md "Reading the admin view") over a caller that skips
    /// its reports and one that does not.
    final class Reporting {
        let f = Fixture {
            $0.consumptionGrace = 60_000
            $0.rateLimits.compliance.allowanceMinimum = 5
        }
        let admin: Caller, reporter: Caller, skipper: Caller
        var skipped: [String] = []

        init() throws {
            admin = f.caller([.admin])
            reporter = f.caller(rate: 5, burst: 10)
            skipper = f.caller(rate: 5, burst: 10)
            for _ in 0..<10 {
                let reported = try f.evaluate(Fixture.request(), by: reporter)
                try f.report(.usedUnchangedFriction, on: reported.eventId, by: reporter)
                skipped.append(try f.evaluate(Fixture.request(), by: skipper).eventId)
            }
        }

        func view(_ caller: Caller) throws -> RateLimitView { try f.useCases.admin.rateLimit(caller.callerId, of: admin).view }

        /// The recount the daemon runs periodically.
        func recount() throws { try f.limiter.refresh(from: f.store.inner) }
    }

    func testASkippingCallerIsPenalisedWithItsReasonsWhileAReporterIsNot() throws {
        let r = try Reporting()
        guard case .throttled(let overBurst)? = rejection({ () throws(Rejection) in try r.f.evaluate(Fixture.request(), by: r.skipper) })
        else { return XCTFail("the burst was not enforced") }
        XCTAssertEqual(overBurst.reason, .callerRate)
        // The skipper's ten reports fall due.
        r.f.clock.advance(seconds: 61)
        try r.recount()
        for _ in 0..<10 { _ = try r.f.evaluate(Fixture.request(), by: r.reporter) }
        // 10 overdue, allowance 5: penalty step 1, half the rate and burst.
        for _ in 0..<5 { _ = try r.f.evaluate(Fixture.request(), by: r.skipper) }
        guard case .throttled(let throttle)? = rejection({ () throws(Rejection) in try r.f.evaluate(Fixture.request(), by: r.skipper) })
        else { return XCTFail("the penalty was not enforced") }
        XCTAssertEqual(throttle.reason, .reportingPenalty)
        XCTAssertEqual(throttle.view.stats.overdue, 10)
        XCTAssertEqual(throttle.view.allowance, 5)
        XCTAssertEqual(throttle.status.effective, GCRA(rate: 2.5, burst: 5))
        XCTAssertEqual(throttle.status.penaltyStep, 1)

        let view = try r.view(r.skipper)
        XCTAssertEqual(view.quota.penaltyStep, 1)
        XCTAssertEqual(view.stats.evaluations, 10)
        XCTAssertEqual(view.stats.overdue, 10)
        XCTAssertEqual(view.throttledCount, 2)
        XCTAssertEqual(view.lastThrottleReason, .reportingPenalty)
        XCTAssertEqual(view.lastThrottledAt, r.f.clock.now())
        XCTAssertEqual(view.statsAsOf, r.f.clock.now())
        let reporter = try r.view(r.reporter)
        XCTAssertEqual(reporter.stats.onTime, 10)
        XCTAssertEqual(reporter.throttledCount, 0)
        XCTAssertEqual(reporter.quota.penaltyStep, 0)
        XCTAssertEqual(try r.f.useCases.admin.rateLimit(r.skipper.callerId, of: r.admin).compliance, r.f.limiter.settings.compliance)
    }

    func testALateReportCountsAsLateNotMissing() throws {
        let r = try Reporting()
        r.f.clock.advance(seconds: 61)
        try r.f.report(.notUsedNotNeeded, on: r.skipped[0], by: r.skipper)
        try r.recount()
        XCTAssertEqual(try r.view(r.skipper).stats.late, 1)
        XCTAssertEqual(try r.view(r.skipper).stats.overdue, 9)
    }

    /// A reset restores the configured policy, not the tokens (docs/rate-limits.md "Resets"): the
    /// bucket the penalised caller emptied stays empty and refills at the configured rate.
    func testAResetForgivesWhatWasOverdueAndKeepsTheBucket() throws {
        let r = try Reporting()
        r.f.clock.advance(seconds: 61)
        try r.recount()
        for _ in 0..<5 { _ = try r.f.evaluate(Fixture.request(), by: r.skipper) }
        guard case .throttled? = rejection({ () throws(Rejection) in try r.f.evaluate(Fixture.request(), by: r.skipper) }) else {
            return XCTFail()
        }
        let reset = try r.f.completed { done throws(Rejection) in
            try r.f.useCases.admin.resetRateLimit(r.skipper.callerId, of: r.admin, resume: { $0() }, completion: done)
        }
        XCTAssertEqual(reset.view.quota.penaltyStep, 0)
        XCTAssertEqual(reset.view.throttledCount, 0)
        XCTAssertEqual(reset.view.quota.remaining, 0, "the reset refilled the bucket")
        XCTAssertEqual(reset.view.quota.effective, GCRA(rate: 5, burst: 10))
        guard case .throttled(let throttle)? = rejection({ () throws(Rejection) in try r.f.evaluate(Fixture.request(), by: r.skipper) })
        else { return XCTFail("admitted right after the reset") }
        XCTAssertEqual(throttle.reason, .callerRate)
        r.f.clock.advance(ms: 200)  // one token at 5 per second
        _ = try r.f.evaluate(Fixture.request(), by: r.skipper)
        // Durably: the next recount no longer counts what was overdue before the reset.
        r.f.clock.advance(ms: 1)
        try r.recount()
        XCTAssertEqual(try r.view(r.skipper).stats.overdue, 0)
        XCTAssertEqual(try r.view(r.skipper).quota.penaltyStep, 0)
    }

    func testAnUnreadableOrUnwritableStoreIsReportedAsSuch() {
        let f = Fixture()
        let admin = f.caller([.admin]), caller = f.caller()
        f.store.failWrites(.overloaded)
        XCTAssertRejects(.store(.overloaded)) { () throws(Rejection) in
            try f.completed { done in
                f.useCases.admin.updateCaller(
                    caller.callerId, rate: 1, burst: nil, of: admin, resume: { $0() },
                    completion: done)
            }
        }
        f.store.failReads(true)
        XCTAssertRejects(.unreadable(.callers)) { () throws(Rejection) in try f.useCases.admin.callers(of: admin) }
        XCTAssertRejects(.unreadable(.callers)) { () throws(Rejection) in try f.useCases.admin.rateLimit(caller.callerId, of: admin) }
    }
}
