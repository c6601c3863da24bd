import InsightDomain
import InsightRedis
import InsightStoreFakes
import RedisClient
import RedisTesting
import Telemetry
import XCTest

/// The contract against the in-memory limits and gate of one instance.
final class InMemoryLimiterContractTests: XCTestCase {
    func makeLimiters(_ settings: RateLimitSettings) -> Limiters {
        let limiter = RateLimiter(settings: settings, clock: SystemClock())
        return Limiters(limits: limiter, gate: SeparateCallsGate(limits: limiter, velocity: VelocityTracker(clock: SystemClock())))
    }

    /// Every case, each on fresh limiters; a failure names its case.
    func testTheContract() {
        for failure in LimiterContract.runAll(make: makeLimiters) { XCTFail(failure) }
    }
}

/// The contract against the limits and gate that instances share in a real redis-server
/// (`TemporaryRedis`), each case under a key prefix of its own.
final class RedisLimiterContractTests: XCTestCase {
    var redis: TemporaryRedis!

    override func setUpWithError() throws { redis = try TemporaryRedis.shared() }

    func makeLimiters(_ settings: RateLimitSettings) throws -> Limiters {
        var link = RedisLinkSettings(url: try RedisURL(redis.url))
        link.keyPrefix = "contract:\(UInt64.random(in: 0...UInt64.max)):"
        link.commandTimeout = .milliseconds(500)
        let metrics = MetricsRegistry()
        let redisLink = RedisLink(settings: link, metrics: metrics, log: { _ in })
        redisLink.start()
        addTeardownBlock { redisLink.stop() }
        XCTAssertTrue(redisLink.isAvailable, "Redis did not answer")
        let limiter = RedisRateLimiter(link: redisLink, settings: settings, clock: SystemClock(), instances: 1)
        let velocity = RedisVelocity(
            link: redisLink, history: InMemoryStore(), clock: SystemClock(), metrics: metrics,
            mayRebuild: { false })
        return Limiters(limits: limiter, gate: RedisEvaluationGate(limiter: limiter, velocity: velocity))
    }

    /// Every case, each on fresh limiters; a failure names its case.
    func testTheContract() {
        for failure in LimiterContract.runAll(make: makeLimiters) { XCTFail(failure) }
    }
}

/// The contract has its cases (the classes above run them all).
final class LimiterContractCoverageTests: XCTestCase {
    func testTheContractHasCases() {
        XCTAssertGreaterThanOrEqual(LimiterContract.cases.count, 9)
        XCTAssertEqual(Set(LimiterContract.cases.map(\.name)).count, LimiterContract.cases.count, "two cases share a name")
    }
}

/// The contract catches a backend that breaks it: the in-memory limits behind a wrapper that
/// charges every request one token and forgets nothing on a reset.
final class LimiterContractSensitivityTests: XCTestCase {
    final class CheapAndUnforgetting: RateLimits {
        let base: RateLimiter
        init(_ base: RateLimiter) { self.base = base }
        var settings: RateLimitSettings { base.settings }
        func admit(_ caller: Caller, cost: Int) -> Admission { base.admit(caller, cost: 1) }
        func admitDevice(_ hash: [UInt8], environment: Environment, caller: Caller) -> Int? {
            base.admitDevice(hash, environment: environment, caller: caller)
        }
        func admitInsight(_ insightType: String, caller: Caller) -> Bool { base.admitInsight(insightType, caller: caller) }
        func status(_ caller: Caller) -> QuotaStatus { base.status(caller) }
        func view(_ caller: Caller) -> RateLimitView { base.view(caller) }
        func update(_ stats: [String: ReportingStats]) { base.update(stats) }
        func refresh(from source: any ReportingStatsSource) throws { try base.refresh(from: source) }
        func reset(_ caller: Caller) {}
    }

    func testABrokenLimiterFailsTheCasesItBreaks() {
        let failures = LimiterContract.runAll { settings in
            let limits = CheapAndUnforgetting(RateLimiter(settings: settings, clock: SystemClock()))
            return Limiters(limits: limits, gate: SeparateCallsGate(limits: limits, velocity: VelocityTracker(clock: SystemClock())))
        }
        let failed = Set(failures.map { String($0.prefix { $0 != ":" }) })
        XCTAssertEqual(
            failed,
            [
                "a costly request takes several tokens, and a refused one takes none",
                "overdue reports cut the rate by penalty steps, and a reset clears them",
                "a reset gives back no token, however often it comes",
                "a reset after the deepest penalty leaves an empty bucket, not a full one"
            ], failures.joined(separator: "\n"))
    }
}
