import Foundation
import Glibc
import InsightDomain
import InsightRedis
import RedisClient
import RedisTesting
import XCTest

/// Two `RedisRateLimiter`s on one server are two instances of insightd: one bucket per caller,
/// one penalty, one device limit, whichever answers.
final class RedisRateLimiterTests: XCTestCase {
    var redis: TemporaryRedis!

    override func setUpWithError() throws { redis = try TemporaryRedis.shared() }

    private func pair(
        clockB: any InsightDomain.Clock = SystemClock(), settings: RateLimitSettings = .init(),
        name: String = #function
    ) throws -> (RedisRateLimiter, RedisRateLimiter, [Instance]) {
        let prefix = uniquePrefix(name)
        let a = try Instance(redis, prefix: prefix), b = try Instance(redis, prefix: prefix)
        a.link.start()
        b.link.start()
        addTeardownBlock {
            a.link.stop(); b.link.stop()
        }
        XCTAssertTrue(a.link.isAvailable && b.link.isAvailable)
        return (
            RedisRateLimiter(link: a.link, settings: settings, clock: SystemClock(), instances: 3),
            RedisRateLimiter(link: b.link, settings: settings, clock: clockB, instances: 3), [a, b]
        )
    }

    /// Five admissions alternating between the two limiters pass, the sixth is refused, within
    /// 90 ms (rate 10: a token comes back every 100 ms). Tried again on a fresh caller when the
    /// machine was too slow to stay within the 90 ms.
    private func assertSixthRefused(_ limiters: [RedisRateLimiter], file: StaticString = #filePath, line: UInt = #line) {
        for attempt in 0..<5 {
            let who = caller("caller_\(attempt)_\(UInt32.random(in: 0...UInt32.max))")
            let started = ContinuousClock.now
            let answers = (0..<6).map { limiters[$0 % limiters.count].admit(who) }
            guard ContinuousClock.now - started < .milliseconds(90) else { continue }
            for (i, answer) in answers.prefix(5).enumerated() {
                guard case .allowed(let status) = answer else { return XCTFail("admission \(i + 1) refused", file: file, line: line) }
                XCTAssertEqual(status.remaining, 4 - i, file: file, line: line)
            }
            guard case .throttled(.callerRate, let status, let retry) = answers[5] else {
                return XCTFail("the sixth was \(answers[5])", file: file, line: line)
            }
            XCTAssertEqual(retry, 1, file: file, line: line)
            XCTAssertEqual(status.remaining, 0, file: file, line: line)
            XCTAssertEqual(limiters[1].view(who).throttledCount, 1, file: file, line: line)
            XCTAssertEqual(limiters[0].view(who).lastThrottleReason, .callerRate, file: file, line: line)
            return
        }
        XCTFail("six admissions never fitted in 90 ms", file: file, line: line)
    }

    func testOneBucketPerCallerWhicheverInstanceAnswers() throws {
        let (a, b, _) = try pair()
        assertSixthRefused([a, b])
        assertSixthRefused([b, a])
    }

    /// A request that costs several tokens (a transparency page) takes them from the one bucket,
    /// in Redis as in memory.
    func testACostlyRequestTakesSeveralTokensOfTheSharedBucket() throws {
        let (a, b, _) = try pair()
        let who = caller("caller_cost_\(UInt32.random(in: 0...UInt32.max))", rate: 0.01, burst: 12)
        guard case .allowed(let first) = a.admit(who, cost: 5) else { return XCTFail("the first page was refused") }
        XCTAssertEqual(first.remaining, 7)
        guard case .allowed(let second) = b.admit(who, cost: 5) else { return XCTFail("the second page was refused") }
        XCTAssertEqual(second.remaining, 2)
        guard case .throttled(.callerRate, _, _) = a.admit(who, cost: 5) else { return XCTFail("two tokens bought a page") }
        guard case .allowed = b.admit(who, cost: 2) else { return XCTFail("the two tokens left were refused") }
    }

    func testAnInstanceWhoseClockIsSkewedDecidesTheSame() throws {
        // An hour ahead: with its own clock it would see a full bucket at every call.
        let (a, b, _) = try pair(clockB: SkewedClock(offset: 3_600_000))
        assertSixthRefused([a, b])
        let (c, d, _) = try pair(clockB: SkewedClock(offset: -86_400_000))
        assertSixthRefused([d, c])
    }

    func testAPenaltySetThroughOneInstanceAppliesOnTheOther() throws {
        let (a, b, _) = try pair()
        let who = caller("caller_penalised", rate: 10, burst: 10)
        // 1,000 evaluations, 61 overdue: allowance 20, step 3 (x0.125: rate 1.25, burst 1).
        a.update([who.callerId: ReportingStats(evaluations: 1000, onTime: 939, overdue: 61)])
        XCTAssertEqual(b.status(who).penaltyStep, 3)
        XCTAssertEqual(b.status(who).effective, GCRA(rate: 1.25, burst: 1))
        guard case .allowed = b.admit(who) else { return XCTFail("the first was refused") }
        guard case .throttled(.reportingPenalty, let status, _) = b.admit(who) else { return XCTFail("not throttled") }
        XCTAssertEqual(status.penaltyStep, 3)
        let view = a.view(who)
        XCTAssertEqual(view.stats.overdue, 61)
        XCTAssertEqual(view.allowance, 20)
        XCTAssertEqual(view.throttledCount, 1)
        XCTAssertEqual(view.lastThrottleReason, .reportingPenalty)
        XCTAssertNotNil(view.statsAsOf)

        // A later recount without the caller zeroes its counts; the step falls with time.
        a.update([:])
        XCTAssertEqual(b.view(who).stats, ReportingStats())
        XCTAssertEqual(b.status(who).penaltyStep, 3)
        // A relapse raises it at once; a reset (on either instance) clears it for both.
        a.update([who.callerId: ReportingStats(evaluations: 1000, overdue: 1000)])
        XCTAssertEqual(b.status(who).penaltyStep, 4)
        b.reset(who)
        XCTAssertEqual(a.status(who).penaltyStep, 0)
        XCTAssertEqual(a.view(who).throttledCount, 0)
    }

    /// The recount writes every caller in one pipeline (scripts of 200 callers): longer in all
    /// than a request-path call's 50 ms, but the timeout bounds each wait for a reply, so it is
    /// not taken for Redis hanging.
    func testARecountOfManyCallersIsNotCutByTheRequestTimeout() throws {
        let instance = try Instance(redis, prefix: uniquePrefix(), commandTimeout: .milliseconds(50))
        instance.link.start()
        defer { instance.link.stop() }
        let limiter = RedisRateLimiter(link: instance.link, settings: .init(), clock: SystemClock(), instances: 2)
        var stats: [String: ReportingStats] = [:]
        for i in 0..<30_000 { stats["caller_\(i)"] = ReportingStats(evaluations: 1000, overdue: 21 + i % 100) }
        let started = ContinuousClock.now
        limiter.update(stats)
        print("recount of 30,000 callers written in \(ContinuousClock.now - started)")
        XCTAssertTrue(instance.link.isAvailable)
        XCTAssertEqual(instance.sample("insightd_redis_failures_total{kind=\"timeout\"}") ?? 0, 0)
        XCTAssertEqual(limiter.view(caller("caller_29999")).stats.overdue, 120)
        XCTAssertEqual(limiter.status(caller("caller_29999")).penaltyStep, 4)
    }

    func testTheStepRuleIsTheInMemoryLimitersOne() throws {
        // The script's step rule against CompliancePolicy.advance, for the same history: a
        // recovery period of 1 s, so that the server's clock runs it in a second or two.
        var settings = RateLimitSettings()
        settings.compliance.recoverySeconds = 1
        let (a, b, _) = try pair(settings: settings)
        let who = caller("caller_recovering")
        a.update([who.callerId: ReportingStats(evaluations: 100, overdue: 61)])  // step 3
        a.update([who.callerId: ReportingStats(evaluations: 100, late: 61)])  // target 0
        XCTAssertEqual(b.status(who).penaltyStep, 3)
        XCTAssertTrue(eventually(5) { b.status(who).penaltyStep == 2 })
        XCTAssertTrue(eventually(5) { b.status(who).penaltyStep == 0 })
    }

    func testTheDeviceLimitIsShared() throws {
        var settings = RateLimitSettings()
        settings.devicePerHour = 3
        let (a, b, _) = try pair(settings: settings)
        let who = caller("caller_devices", rate: 100, burst: 100)
        let device: [UInt8] = (0..<32).map { _ in UInt8.random(in: 0...255) }
        XCTAssertNil(a.admitDevice(device, environment: .production, caller: who))
        XCTAssertNil(b.admitDevice(device, environment: .production, caller: who))
        XCTAssertNil(a.admitDevice(device, environment: .production, caller: who))
        let retry = b.admitDevice(device, environment: .production, caller: who)
        XCTAssertNotNil(retry)
        XCTAssertEqual(retry.map { (1100...1200).contains($0) }, true, "an hour for 3: 1,200 s per device use")
        // Another environment is another bucket.
        XCTAssertNil(b.admitDevice(device, environment: .sandbox, caller: who))
        XCTAssertEqual(a.view(who).lastThrottleReason, .deviceRate)
    }

    func testInsightQuotasAreShared() throws {
        let (a, b, _) = try pair()
        let who = caller("caller_insights", rate: 1, burst: 2)  // factor 2: 4 at once
        let answers = (0..<5).map { ($0 % 2 == 0 ? a : b).admitInsight("isLikelyBeingCoached", caller: who) }
        XCTAssertEqual(answers, [true, true, true, true, false])
    }

    /// Redis stopped: every call answers from the local share at once (no call waits more than
    /// the command timeout), the instance says so once in its log and in its metrics; Redis back:
    /// the instances share one bucket again within seconds.
    func testRedisStoppedFallsBackToALocalShareAndBackToSharedWhenItReturns() throws {
        let own = try TemporaryRedis()
        let prefix = uniquePrefix()
        let a = try Instance(own, prefix: prefix, commandTimeout: .milliseconds(50)),
            b = try Instance(own, prefix: prefix, commandTimeout: .milliseconds(50))
        a.link.start()
        b.link.start()
        defer { a.link.stop(); b.link.stop() }
        // Two instances: the local share of rate 10, burst 5 is rate 5, burst 2.
        let la = RedisRateLimiter(link: a.link, settings: .init(), clock: SystemClock(), instances: 2)
        let lb = RedisRateLimiter(link: b.link, settings: .init(), clock: SystemClock(), instances: 2)
        XCTAssertEqual(a.sample("insightd_redis_up"), 1)
        guard case .allowed = la.admit(caller("caller_warm")) else { return XCTFail("Redis up: refused") }

        own.stop()
        let who = caller("caller_outage")
        var slowest: Duration = .zero
        var answers: [Admission] = []
        for _ in 0..<4 {
            let started = ContinuousClock.now
            answers.append(la.admit(who))
            slowest = max(slowest, ContinuousClock.now - started)
        }
        XCTAssertLessThan(slowest, .milliseconds(50 + 200), "a call waited longer than the command timeout")
        XCTAssertFalse(a.link.isAvailable)
        let allowed = answers.filter { if case .allowed = $0 { true } else { false } }.count
        XCTAssertEqual(allowed, 2, "the local share: burst 5 over 2 instances")
        if case .throttled(_, let status, _) = answers[3] {
            XCTAssertEqual(status.configured, GCRA(rate: 10, burst: 5), "the caller's own policy is shown")
            XCTAssertEqual(status.effective.burst, 2)
        } else {
            XCTFail("the fourth was allowed")
        }
        XCTAssertEqual(a.sample("insightd_redis_up"), 0)
        XCTAssertGreaterThanOrEqual(a.sample("insightd_redis_failures_total{kind=\"connection\"}") ?? 0, 1)
        XCTAssertEqual(a.logged.filter { if case .unavailable = $0 { true } else { false } }.count, 1)
        // The device limit and insight quotas answer too, from the local share.
        XCTAssertNil(la.admitDevice([1, 2, 3], environment: .production, caller: who))
        XCTAssertTrue(la.admitInsight("isLikelyBeingCoached", caller: who))
        // The other instance notices on its own (its background check) and falls back as well.
        XCTAssertTrue(eventually { !b.link.isAvailable })

        try own.start()
        XCTAssertTrue(eventually { a.link.isAvailable && b.link.isAvailable }, "not shared again within 10 s")
        XCTAssertEqual(a.logged.filter { $0 == .available }.count, 2, "available at start and when back")
        XCTAssertEqual(a.sample("insightd_redis_up"), 1)
        assertSixthRefused([la, lb])
    }

    /// Redis that hangs (SIGSTOP: connections accepted, nothing answered) costs a call at most
    /// the command timeout, once: the next calls fall back at once.
    func testAHungRedisCostsACallAtMostTheCommandTimeout() throws {
        let own = try TemporaryRedis()
        let instance = try Instance(
            own, prefix: uniquePrefix(), commandTimeout: .milliseconds(50),
            checkInterval: .seconds(1))
        instance.link.start()
        defer { instance.link.stop() }
        let limiter = RedisRateLimiter(link: instance.link, settings: .init(), clock: SystemClock(), instances: 2)
        let who = caller("caller_hung")
        _ = limiter.admit(who)
        let pid = try serverPid(own)
        kill(pid, SIGSTOP)
        defer { kill(pid, SIGCONT) }
        var durations: [Duration] = []
        for _ in 0..<5 {
            let started = ContinuousClock.now
            _ = limiter.admit(who)
            durations.append(ContinuousClock.now - started)
        }
        XCTAssertLessThan(durations[0], .milliseconds(50 + 250), "the first call waits for the timeout, no more")
        XCTAssertGreaterThanOrEqual(durations[0], .milliseconds(40))
        XCTAssertLessThan(durations.dropFirst().max()!, .milliseconds(20), "later calls do not wait at all")
        XCTAssertEqual(instance.sample("insightd_redis_failures_total{kind=\"timeout\"}"), 1)
        kill(pid, SIGCONT)
        XCTAssertTrue(eventually { instance.link.isAvailable })
    }
}
