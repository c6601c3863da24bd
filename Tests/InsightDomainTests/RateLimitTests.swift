import InsightDomain
import InsightTesting
import XCTest

final class GCRATests: XCTestCase {
    func testBurstThenExactRefill() {
        let gcra = GCRA(rate: 10, burst: 5)  // one every 100 ms, five at once
        var tat: Double?
        for i in 0..<5 {
            let d = gcra.decide(now: 0, tat: tat)
            XCTAssertTrue(d.allowed, "burst request \(i)")
            XCTAssertEqual(d.remaining, 4 - i)
            tat = d.tat
        }
        let refused = gcra.decide(now: 0, tat: tat)
        XCTAssertFalse(refused.allowed)
        XCTAssertEqual(refused.retryAfter, 100, accuracy: 1e-9)
        XCTAssertEqual(refused.tat, tat)  // a refusal changes nothing
        XCTAssertFalse(gcra.decide(now: 99, tat: tat).allowed)
        let edge = gcra.decide(now: 100, tat: tat)
        XCTAssertTrue(edge.allowed)
        XCTAssertEqual(edge.remaining, 0)
        // After the whole window the bucket is full again.
        XCTAssertEqual(gcra.available(now: 600, tat: edge.tat), 5)
        XCTAssertEqual(gcra.windowSeconds, 1)
    }

    /// A request of `cost` tokens takes that many at once, and never more than the burst (a
    /// dearer one could never go).
    func testACostlyRequestTakesSeveralTokens() {
        let gcra = GCRA(rate: 10, burst: 12)
        let first = gcra.decide(now: 0, tat: nil, cost: 5)
        XCTAssertTrue(first.allowed)
        XCTAssertEqual(first.remaining, 7)
        let second = gcra.decide(now: 0, tat: first.tat, cost: 5)
        XCTAssertTrue(second.allowed)
        XCTAssertEqual(second.remaining, 2)
        let third = gcra.decide(now: 0, tat: second.tat, cost: 5)
        XCTAssertFalse(third.allowed, "two tokens left, five asked")
        XCTAssertEqual(third.retryAfter, 300, accuracy: 1e-9)
        XCTAssertTrue(GCRA(rate: 1, burst: 3).decide(now: 0, tat: nil, cost: 5).allowed, "a cost above the burst is the burst")
        let limiter = RateLimiter(settings: RateLimitSettings(), clock: ManualClock())
        let caller = Caller(
            callerId: "caller_cost", name: "c", environment: .production, roles: [.evaluate],
            rate: 1, burst: 10, createdAt: 0)
        guard case .allowed(let status) = limiter.admit(caller, cost: 5) else { return XCTFail("refused") }
        XCTAssertEqual(status.remaining, 5)
        guard case .allowed = limiter.admit(caller, cost: 5), case .throttled = limiter.admit(caller) else {
            return XCTFail("ten tokens did not buy two pages and nothing more")
        }
    }

    func testAClockSteppedBackDoesNotHoldTheBucketEmptyForTheStep() {
        let gcra = GCRA(rate: 10, burst: 5)  // a window of 500 ms
        var tat: Double?
        for _ in 0..<5 { tat = gcra.decide(now: 3_600_000, tat: tat).tat }  // the burst, spent
        XCTAssertFalse(gcra.decide(now: 3_600_000, tat: tat).allowed)
        // The wall clock steps back an hour: no trace of those requests can be that far ahead,
        // so the bucket counts as full, not empty for an hour.
        XCTAssertEqual(gcra.available(now: 0, tat: tat), 5)
        let after = gcra.decide(now: 0, tat: tat)
        XCTAssertTrue(after.allowed)
        XCTAssertEqual(after.remaining, 4)
        // Between one and two windows ahead (a stricter policy since): an empty bucket.
        XCTAssertEqual(gcra.available(now: 0, tat: 800), 0)
        XCTAssertEqual(gcra.decide(now: 0, tat: 800).retryAfter, 100, accuracy: 1e-9)
    }

    func testSustainedRateIsNeverRefused() {
        let gcra = GCRA(rate: 3, burst: 1)
        var tat: Double?
        var now = 0.0
        for _ in 0..<1000 {
            let d = gcra.decide(now: now, tat: tat)
            XCTAssertTrue(d.allowed)
            tat = d.tat
            now += 1000.0 / 3
        }
    }
}

final class CompliancePolicyTests: XCTestCase {
    func testStepsFollowOverdueBeyondTheAllowance() {
        let policy = CompliancePolicy()  // 2 %, at least 20, floor 10 %
        XCTAssertEqual(policy.allowance(ReportingStats(evaluations: 100)), 20)
        XCTAssertEqual(policy.allowance(ReportingStats(evaluations: 5000)), 100)
        XCTAssertEqual(policy.targetStep(ReportingStats(evaluations: 100, overdue: 20)), 0)
        XCTAssertEqual(policy.targetStep(ReportingStats(evaluations: 100, overdue: 21)), 1)
        XCTAssertEqual(policy.targetStep(ReportingStats(evaluations: 100, overdue: 41)), 2)
        XCTAssertEqual(policy.maxStep, 4)  // 1/16 < 10 %: the floor
        XCTAssertEqual(policy.targetStep(ReportingStats(evaluations: 100, overdue: 100_000)), 4)
        XCTAssertEqual(policy.factor(step: 0), 1)
        XCTAssertEqual(policy.factor(step: 1), 0.5)
        XCTAssertEqual(policy.factor(step: 4), 0.1)
    }

    /// INSIGHTD_OVERDUE_ALLOWANCE_PERCENT=0 and INSIGHTD_OVERDUE_ALLOWANCE_MIN=0 are valid: no
    /// overdue report is tolerated (the recount divided by the allowance and crashed the daemon).
    func testNoAllowanceMeansTheDeepestStepAtTheFirstOverdueReport() {
        var policy = CompliancePolicy()
        policy.allowanceShare = 0
        policy.allowanceMinimum = 0
        XCTAssertEqual(policy.targetStep(ReportingStats(evaluations: 6, overdue: 0, pending: 6)), 0)
        XCTAssertEqual(policy.targetStep(ReportingStats(evaluations: 6, overdue: 1)), policy.maxStep)
        XCTAssertEqual(policy.targetStep(ReportingStats(evaluations: 6, overdue: 6)), policy.maxStep)
    }
}

final class RateLimiterTests: XCTestCase {
    let caller = Caller(
        callerId: "c", name: "n", environment: .production, roles: [.evaluate], rate: 10, burst: 10,
        createdAt: 0)

    func testACompliantCallerAtItsFullRateIsNeverThrottled() {
        let clock = ManualClock()
        let limiter = RateLimiter(settings: RateLimitSettings(), clock: clock)
        var stats = ReportingStats()
        for second in 0..<600 {
            for _ in 0..<10 {
                guard case .allowed = limiter.admit(caller) else { return XCTFail("throttled at \(second) s") }
                clock.advance(ms: 100)
            }
            stats.evaluations += 10
            stats.onTime += 10
            if second % 5 == 0 { limiter.update(["c": stats]) }
        }
        XCTAssertEqual(limiter.view(caller).throttledCount, 0)
    }

    func testSkippedReportsCutTheRateAndItRecoversStepByStep() {
        let clock = ManualClock()
        var settings = RateLimitSettings()
        settings.compliance.recoverySeconds = 60
        let limiter = RateLimiter(settings: settings, clock: clock)
        // 1,000 evaluations, 61 overdue: allowance 20, so step 3 (rate 10 → 1.25/s).
        limiter.update(["c": ReportingStats(evaluations: 1000, onTime: 939, overdue: 61)])
        XCTAssertEqual(limiter.status(caller).penaltyStep, 3)
        XCTAssertEqual(limiter.status(caller).effective.rate, 1.25)
        var throttled: Admission?
        for _ in 0..<5 {
            let a = limiter.admit(caller)
            if case .throttled = a { throttled = a; break }
        }
        guard case .throttled(let reason, let status, let retry)? = throttled else { return XCTFail("not throttled") }
        XCTAssertEqual(reason, .reportingPenalty)
        XCTAssertEqual(status.effective.burst, 1)
        XCTAssertEqual(retry, 1)
        XCTAssertEqual(limiter.view(caller).throttledCount, 1)

        // Reports arrive (late): nothing overdue any more. One step back per minute.
        limiter.update(["c": ReportingStats(evaluations: 1000, onTime: 939, late: 61)])
        XCTAssertEqual(limiter.status(caller).penaltyStep, 3)
        clock.advance(ms: 59_999)
        XCTAssertEqual(limiter.status(caller).penaltyStep, 3)
        clock.advance(ms: 1)
        XCTAssertEqual(limiter.status(caller).penaltyStep, 2)
        clock.advance(ms: 60_000)
        XCTAssertEqual(limiter.status(caller).penaltyStep, 1)
        clock.advance(ms: 120_000)
        XCTAssertEqual(limiter.status(caller).penaltyStep, 0)
        XCTAssertEqual(limiter.status(caller).effective.rate, 10)

        // A relapse raises the penalty at once; a reset clears it.
        limiter.update(["c": ReportingStats(evaluations: 1000, overdue: 30)])
        XCTAssertEqual(limiter.status(caller).penaltyStep, 1)
        limiter.reset(caller)
        XCTAssertEqual(limiter.view(caller).throttledCount, 0)
        XCTAssertEqual(limiter.status(caller).penaltyStep, 0)
    }

    func testWithoutPenaltyTheReasonIsTheCallerRate() {
        let clock = ManualClock()
        let limiter = RateLimiter(settings: RateLimitSettings(), clock: clock)
        for _ in 0..<10 { _ = limiter.admit(caller) }
        guard case .throttled(.callerRate, let status, let retry) = limiter.admit(caller) else {
            return XCTFail("not throttled")
        }
        XCTAssertEqual(status.remaining, 0)
        XCTAssertEqual(retry, 1)
        clock.advance(ms: 100)
        guard case .allowed = limiter.admit(caller) else { return XCTFail("no refill after 100 ms") }
    }

    func testAWallClockSteppedBackADayDoesNotThrottleACallerForADay() {
        let clock = ManualClock()
        let limiter = RateLimiter(settings: RateLimitSettings(), clock: clock)
        for _ in 0..<10 { _ = limiter.admit(caller) }  // the burst of 10, spent
        guard case .throttled = limiter.admit(caller) else { return XCTFail("an empty bucket let a request through") }
        clock.advance(ms: -86_400_000)
        guard case .allowed = limiter.admit(caller) else {
            return XCTFail("throttled for the day the clock stepped back")
        }
        var settings = RateLimitSettings()
        settings.devicePerHour = 3
        let devices = RateLimiter(settings: settings, clock: clock)
        for _ in 0..<3 { XCTAssertNil(devices.admitDevice([1], environment: .production, caller: caller)) }
        XCTAssertNotNil(devices.admitDevice([1], environment: .production, caller: caller))
        clock.advance(ms: -3 * 3_600_000)
        XCTAssertNil(devices.admitDevice([1], environment: .production, caller: caller), "the device limit forgot the step too")
    }

    func testDeviceLimitIsPerDeviceAndEnvironment() {
        let clock = ManualClock()
        var settings = RateLimitSettings()
        settings.devicePerHour = 3
        let limiter = RateLimiter(settings: settings, clock: clock)
        for _ in 0..<3 { XCTAssertNil(limiter.admitDevice([1], environment: .production, caller: caller)) }
        XCTAssertEqual(limiter.admitDevice([1], environment: .production, caller: caller), 1200)
        XCTAssertNil(limiter.admitDevice([2], environment: .production, caller: caller))
        XCTAssertNil(limiter.admitDevice([1], environment: .sandbox, caller: caller))
        clock.advance(ms: 1_200_000)
        XCTAssertNil(limiter.admitDevice([1], environment: .production, caller: caller))
        XCTAssertEqual(limiter.view(caller).lastThrottleReason, .deviceRate)
    }

    func testInsightQuotaIsPerType() {
        let clock = ManualClock()
        let limiter = RateLimiter(settings: RateLimitSettings(), clock: clock)  // factor 2: 20 at once
        for _ in 0..<20 { XCTAssertTrue(limiter.admitInsight("isLikelyBeingCoached", caller: caller)) }
        XCTAssertFalse(limiter.admitInsight("isLikelyBeingCoached", caller: caller))
        XCTAssertTrue(limiter.admitInsight("otherType", caller: caller))
        clock.advance(ms: 50)
        XCTAssertTrue(limiter.admitInsight("isLikelyBeingCoached", caller: caller))
    }
}
