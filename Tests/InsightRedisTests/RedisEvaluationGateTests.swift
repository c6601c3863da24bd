import Foundation
import InsightDomain
import Locking
@testable import InsightRedis
import RedisClient
import RedisTesting
import XCTest

/// The evaluation's one script: the answers of the separate calls, in one round trip, and a
/// refused device that takes nothing else.
final class RedisEvaluationGateTests: XCTestCase {
    var redis: TemporaryRedis!

    override func setUpWithError() throws { redis = try TemporaryRedis.shared() }

    private func hash(_ label: String) -> [UInt8] { Array(("g:" + label).utf8) + Array(repeating: 3, count: 24) }

    private struct Parts {
        let instance: Instance
        let limiter: RedisRateLimiter
        let velocity: RedisVelocity
        var gate: RedisEvaluationGate { RedisEvaluationGate(limiter: limiter, velocity: velocity) }
    }

    private func parts(devicePerHour: Int = 120, name: String = #function) throws -> Parts {
        let instance = try Instance(redis, prefix: uniquePrefix(name))
        instance.link.start()
        addTeardownBlock { instance.link.stop() }
        var settings = RateLimitSettings()
        settings.devicePerHour = devicePerHour
        return Parts(
            instance: instance,
            limiter: RedisRateLimiter(link: instance.link, settings: settings, clock: SystemClock(), instances: 1),
            velocity: RedisVelocity(
                link: instance.link, history: FixedHistory([]), clock: SystemClock(),
                metrics: instance.metrics, mayRebuild: { false }))
    }

    /// EVALSHA (and EVAL, after a script cache miss) calls the server has answered so far.
    private func scriptCalls() throws -> Int {
        let info = try redis.connect().command("INFO", "commandstats").string ?? ""
        var calls = 0
        for line in info.split(whereSeparator: \.isNewline)
        where line.hasPrefix("cmdstat_evalsha:") || line.hasPrefix("cmdstat_eval:") {
            for field in line.split(separator: ":")[1].split(separator: ",") where field.hasPrefix("calls=") {
                calls += Int(field.dropFirst(6)) ?? 0
            }
        }
        return calls
    }

    /// Device, two insight quotas and velocity in one script call, answering what the separate
    /// calls answer: the signals equal `RedisVelocity.signals` on the same state, and the quotas
    /// run out where `admitInsight`'s do.
    func testOneCallAnswersWhatTheSeparateCallsAnswer() throws {
        let p = try parts()
        let who = caller("caller_gate", rate: 1, burst: 2)  // insight quota: factor 2, 4 at once
        let account = hash("account"), device = hash("device"), payee = hash("payee")
        p.velocity.record(
            VelocityEvent(
                environment: .production, time: try redis.connect().serverTime() / 1000 - 60_000,
                account: account, device: device, counterparty: payee, isPayment: true, value: .high))
        let query = VelocityQuery(
            environment: .production, accounts: [account], devices: [device], counterparties: [payee],
            isPayment: true)
        // Once the script is cached, one pass is one script call.
        _ = p.gate.pass(
            GateRequest(
                caller: caller("caller_warm"), environment: .production, device: nil, insightTypes: [],
                velocity: query))
        let before = try scriptCalls()
        let answer = p.gate.pass(
            GateRequest(
                caller: who, environment: .production, device: device,
                insightTypes: ["isLikelyBeingCoached", "isLikelyBeingCoached"], velocity: query))
        XCTAssertEqual(try scriptCalls() - before, 1, "device, quotas and velocity in one script call")
        XCTAssertNil(answer.deviceRetryAfter)
        XCTAssertEqual(answer.insightsAdmitted, [true, true])
        var gated = try XCTUnwrap(answer.signals), separate = p.velocity.signals(for: query)
        XCTAssertEqual(gated.accountEvaluations.day, 2, "the recorded evaluation and this one")
        XCTAssertEqual(gated.accountCoachingResults.day, 1)
        XCTAssertNotNil(gated.counterpartyLastPaidByAccount)
        (gated.now, separate.now) = (0, 0)  // read a moment apart
        XCTAssertEqual(gated, separate)
        // The quota goes on from what the pass took: two more, then none.
        XCTAssertEqual(
            [
                p.limiter.admitInsight("isLikelyBeingCoached", caller: who),
                p.limiter.admitInsight("isLikelyBeingCoached", caller: who),
                p.limiter.admitInsight("isLikelyBeingCoached", caller: who)
            ], [true, true, false])
        let last = p.gate.pass(
            GateRequest(
                caller: who, environment: .production, device: nil,
                insightTypes: ["isLikelyBeingCoached", "otherType"], velocity: nil))
        XCTAssertEqual(last.insightsAdmitted, [false, true], "each type its own quota")
        XCTAssertNil(last.signals, "velocity not asked")
    }

    /// A device over its hourly limit: the evaluation is refused with the time to wait, takes no
    /// unit of any insight quota, reads no velocity, and the caller's throttling says why.
    func testARefusedDeviceTakesNoInsightQuota() throws {
        let p = try parts(devicePerHour: 2)
        let who = caller("caller_device", rate: 1, burst: 1)  // insight quota: 2 at once
        let device = hash("busy-device")
        let query = VelocityQuery(
            environment: .production, accounts: [hash("a")], devices: [device], counterparties: [],
            isPayment: false)
        func pass() -> GateAnswer {
            p.gate.pass(
                GateRequest(
                    caller: who, environment: .production, device: device,
                    insightTypes: ["isLikelyBeingCoached"], velocity: query))
        }
        XCTAssertEqual(pass().insightsAdmitted, [true])
        let refused = [pass(), pass(), pass()]
        XCTAssertEqual(refused[0].insightsAdmitted, [true], "the device's second evaluation of the hour")
        for answer in refused.dropFirst() {
            XCTAssertEqual(answer.deviceRetryAfter.map { (1700...1800).contains($0) }, true, "an hour for 2: 1,800 s")
            XCTAssertEqual(answer.insightsAdmitted, [])
            XCTAssertNil(answer.signals)
        }
        XCTAssertEqual(p.limiter.view(who).lastThrottleReason, .deviceRate)
        // Two units were taken by the two admitted evaluations, none by the refused ones: the
        // quota (burst 2) is used up now, and another device is admitted but gets no unit.
        let other = p.gate.pass(
            GateRequest(
                caller: who, environment: .production, device: hash("other-device"),
                insightTypes: ["isLikelyBeingCoached"], velocity: nil))
        XCTAssertNil(other.deviceRetryAfter)
        XCTAssertEqual(other.insightsAdmitted, [false])
    }

    /// A device refused for a caller whose hash did not exist yet (`admitDevice` alone, no token
    /// asked): the throttling counts written there expire as the hash's other writes do.
    func testAThrottlingCountWrittenByARefusedDeviceExpires() throws {
        let p = try parts(devicePerHour: 1)
        let who = caller("caller_device_only")
        let device = hash("device-only")
        XCTAssertNil(p.limiter.admitDevice(device, environment: .production, caller: who))
        XCTAssertNotNil(p.limiter.admitDevice(device, environment: .production, caller: who))
        let key = RedisArgument(p.instance.link.settings.keyPrefix + "rl:c:caller_device_only")
        XCTAssertEqual(try redis.connect().command("HGET", key, "lastReason").string, "deviceRate")
        let ttl = try XCTUnwrap(try redis.connect().command("PTTL", key).integer)
        XCTAssertGreaterThan(ttl, 0, "the caller's hash expires")
        XCTAssertLessThanOrEqual(ttl, p.limiter.callerLifetime)
    }

    /// The caller's token taken by the same script: the bucket is the one `admit` uses (burst 2:
    /// a pass, an admit, then a refused pass); a refused caller takes no device token and no
    /// insight quota, reads no velocity, and its throttling says why; a pass that does not ask
    /// for the token takes none.
    func testTheCallersTokenIsTakenWithTheRestAndARefusedCallerTakesNothingElse() throws {
        let p = try parts(devicePerHour: 2)
        let who = caller("caller_token", rate: 0.001, burst: 2)  // insight quota: 4 at once
        let device = hash("token-device")
        let query = VelocityQuery(
            environment: .production, accounts: [hash("acct")], devices: [device], counterparties: [],
            isPayment: false)
        func pass(token: Bool = true) -> GateAnswer {
            p.gate.pass(
                GateRequest(
                    caller: who, takesCallerToken: token, environment: .production, device: device,
                    insightTypes: ["isLikelyBeingCoached"], velocity: query))
        }
        _ = p.gate.pass(
            GateRequest(
                caller: caller("caller_warm_token"), takesCallerToken: true, environment: .production,
                device: nil, insightTypes: [], velocity: nil))
        let before = try scriptCalls()
        let first = pass()
        XCTAssertEqual(try scriptCalls() - before, 1, "the token with the rest, one script call")
        guard case .allowed(let status) = first.caller else { return XCTFail("first request: \(String(describing: first.caller))") }
        XCTAssertEqual(status.remaining, 1)
        XCTAssertEqual(first.insightsAdmitted, [true])
        XCTAssertNotNil(first.signals)
        guard case .allowed = p.limiter.admit(who) else { return XCTFail("the second token, taken by admit") }

        let refused = pass()
        guard case .throttled(.callerRate, _, let retryAfter) = refused.caller else {
            return XCTFail("third request: \(String(describing: refused.caller))")
        }
        XCTAssertGreaterThan(retryAfter, 0)
        XCTAssertNil(refused.deviceRetryAfter)
        XCTAssertEqual(refused.insightsAdmitted, [])
        XCTAssertNil(refused.signals, "a refused caller reads nothing")
        XCTAssertEqual(p.limiter.view(who).lastThrottleReason, .callerRate)
        // Only the first pass took the device's token (limit 2 an hour) and an insight unit:
        // a pass without the caller's token is still admitted once, then the device is refused.
        let untaxed = pass(token: false)
        XCTAssertNil(untaxed.caller)
        XCTAssertNil(untaxed.deviceRetryAfter, "the refused caller took no device token")
        XCTAssertEqual(untaxed.insightsAdmitted, [true])
        XCTAssertNotNil(pass(token: false).deviceRetryAfter)
    }

    /// The gate as an evaluation asks it: queued for the link's call thread, which answers on
    /// its own thread (never the caller's) once per pass, with what a pass asked on the caller's
    /// thread answers; passes queued together go as one pipeline; once the link is stopped, a
    /// pass is answered at once on the caller's thread.
    func testQueuedPassesAreAnsweredOnTheCallThreadOnceEach() throws {
        let p = try parts()
        let query = VelocityQuery(
            environment: .production, accounts: [hash("queued")], devices: [], counterparties: [],
            isPayment: false)
        let done = DispatchGroup()
        let answers = Locked<[Int: GateAnswer]>([:])
        let onCaller = Locked<Int>(0)
        for i in 0..<30 {
            done.enter()
            let thread = pthread_self()
            let request = GateRequest(
                caller: caller("caller_queued", rate: 0.001, burst: 20), takesCallerToken: true,
                environment: .production, device: nil, insightTypes: ["isLikelyBeingCoached"],
                velocity: query)
            XCTAssertNil(
                p.gate.pass(request) { answer in
                    if pthread_equal(pthread_self(), thread) != 0 { onCaller.withLock { $0 += 1 } }
                    answers.withLock { XCTAssertNil($0.updateValue(answer, forKey: i), "answered twice") }
                    done.leave()
                }, "queued")
        }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(onCaller.withLock { $0 }, 0)
        let all = answers.withLock { $0 }
        XCTAssertEqual(all.count, 30)
        // Burst 20: twenty tokens, then ten refusals, whichever order the passes ran in.
        XCTAssertEqual(all.values.filter { if case .allowed = $0.caller { true } else { false } }.count, 20)
        XCTAssertEqual(all.values.filter { $0.signals?.hasAccount == true }.count, 20)
        p.instance.link.stop()
        let late = p.gate.pass(
            GateRequest(
                caller: caller("caller_late"), takesCallerToken: true, environment: .production,
                device: nil, insightTypes: [], velocity: nil)
        ) { _ in XCTFail("answered at once") }
        XCTAssertNotNil(late?.caller, "answered at once once the link is stopped")
    }

    /// Redis stopped: each part answers as its own call does without Redis — the device and the
    /// quotas from the local share, no velocity signals (counted) — within the command timeout.
    func testRedisStoppedAnswersEachPartFromItsFallback() throws {
        let own = try TemporaryRedis()
        let instance = try Instance(own, prefix: uniquePrefix(), commandTimeout: .milliseconds(50))
        instance.link.start()
        defer { instance.link.stop() }
        var settings = RateLimitSettings()
        settings.devicePerHour = 4
        let limiter = RedisRateLimiter(link: instance.link, settings: settings, clock: SystemClock(), instances: 2)
        let velocity = RedisVelocity(
            link: instance.link, history: FixedHistory([]), clock: SystemClock(),
            metrics: instance.metrics, mayRebuild: { false })
        let gate = RedisEvaluationGate(limiter: limiter, velocity: velocity)
        own.stop()
        let who = caller("caller_outage", rate: 1, burst: 4)  // local share: burst 2, quota 4
        let device = hash("outage-device")
        let query = VelocityQuery(
            environment: .production, accounts: [hash("acct")], devices: [], counterparties: [],
            isPayment: false)
        let started = ContinuousClock.now
        let answers = (0..<3).map { _ in
            gate.pass(
                GateRequest(
                    caller: who, environment: .production, device: device,
                    insightTypes: ["isLikelyBeingCoached"], velocity: query))
        }
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(2))
        // The device limit of 4 per hour over 2 instances: 2 locally.
        XCTAssertEqual(answers.map { $0.deviceRetryAfter == nil }, [true, true, false])
        // The caller's token from its local share too (burst 4 over 2 instances: 2).
        let tokens = (0..<3).map { _ in
            gate.pass(
                GateRequest(
                    caller: who, takesCallerToken: true, environment: .production, device: nil,
                    insightTypes: [], velocity: nil)
            ).caller
        }
        XCTAssertEqual(tokens.map { if case .allowed = $0 { true } else { false } }, [true, true, false])
        XCTAssertEqual(answers[0].insightsAdmitted, [true])
        XCTAssertEqual(answers[0].signals?.hasAccount, false, "no signals without Redis")
        XCTAssertGreaterThanOrEqual(instance.sample("insightd_velocity_without_redis_total{operation=\"signals\"}") ?? 0, 2)
    }
}
