import Foundation
import InsightDomain
@testable import InsightRedis
import RedisClient
import RedisTesting
import XCTest

/// What one call costs against a redis-server on this machine (loopback), printed for
/// docs/performance.md by `make bench` (`INSIGHTD_BENCH_FIGURES=1 swift test --filter
/// RoundTripCostTests`; skipped by `make test`: a benchmark, not a test). A debug build; the time
/// is mostly the round trip and the server's script. Asserts only that a call is not absurdly slow.
final class RoundTripCostTests: XCTestCase {
    /// Microseconds the server spent in EVALSHA so far.
    private func scriptMicroseconds(_ redis: TemporaryRedis) throws -> Double {
        let info = try redis.connect().command("INFO", "commandstats").string ?? ""
        for line in info.split(whereSeparator: \.isNewline) where line.hasPrefix("cmdstat_evalsha:") {
            for field in line.dropFirst("cmdstat_evalsha:".count).split(separator: ",") where field.hasPrefix("usec=") {
                return Double(field.dropFirst(5)) ?? 0
            }
        }
        return 0
    }

    private func usedMemory(_ redis: TemporaryRedis) throws -> Int {
        let info = try redis.connect().command("INFO", "memory").string ?? ""
        for line in info.split(whereSeparator: \.isNewline) where line.hasPrefix("used_memory:") {
            return Int(line.dropFirst("used_memory:".count)) ?? 0
        }
        return 0
    }

    func testMicrosecondsPerCall() throws {
        try XCTSkipUnless(
            ProcessInfo.processInfo.environment["INSIGHTD_BENCH_FIGURES"] == "1",
            "a benchmark: make bench runs it (INSIGHTD_BENCH_FIGURES=1)")
        let redis = try TemporaryRedis()
        let instance = try Instance(redis, prefix: uniquePrefix())
        instance.link.start()
        defer { instance.link.stop() }
        let limiter = RedisRateLimiter(link: instance.link, settings: .init(), clock: SystemClock(), instances: 3)
        let velocity = RedisVelocity(
            link: instance.link, history: FixedHistory([]), clock: SystemClock(),
            metrics: instance.metrics, mayRebuild: { false })
        let who = caller("caller_bench", rate: 1_000_000, burst: 1_000_000)
        func hash(_ kind: UInt8, _ n: Int) -> [UInt8] { [kind, UInt8(n & 0xFF), UInt8(n >> 8 & 0xFF)] + Array(repeating: 1, count: 29) }
        let now = try redis.connect().serverTime() / 1000
        let before = try usedMemory(redis)
        // Histories like the embedded benchmark's: accounts with a few evaluations each.
        for i in 0..<2_000 {
            velocity.record(
                VelocityEvent(
                    environment: .production, time: now - Milliseconds(i % 3) * 3_600_000,
                    account: hash(1, i % 500), device: hash(2, i % 400), counterparty: hash(3, i % 100),
                    isPayment: true, value: i % 7 == 0 ? .high : .unknown))
        }
        let filled = try usedMemory(redis) - before
        let calls = 2_000
        var serverSide: [String] = []
        func microseconds(_ name: String = "", _ body: (Int) -> Void) -> Double {
            for i in 0..<100 { body(i) }  // warm: scripts cached, connection open
            let server = (try? scriptMicroseconds(redis)) ?? 0
            let started = ContinuousClock.now
            for i in 0..<calls { body(i) }
            let elapsed = ContinuousClock.now - started
            if !name.isEmpty {
                serverSide.append(String(format: "%@ %.1f", name, (((try? scriptMicroseconds(redis)) ?? 0) - server) / Double(calls)))
            }
            return Double(elapsed.components.seconds) * 1e6 / Double(calls)
                + Double(elapsed.components.attoseconds) / 1e12 / Double(calls)
        }
        let admit = microseconds("admit") { _ in _ = limiter.admit(who) }
        let device = microseconds("admitDevice") { i in _ = limiter.admitDevice(hash(2, i % 400), environment: .production, caller: who) }
        let signals = microseconds("signals") { i in
            _ = velocity.signals(
                for: VelocityQuery(
                    environment: .production, accounts: [hash(1, i % 500)],
                    devices: [hash(2, i % 400)], counterparties: [hash(3, i % 100)],
                    isPayment: true))
        }
        // What an evaluation asks before it is answered, in one script (RedisEvaluationGate).
        let gate = RedisEvaluationGate(limiter: limiter, velocity: velocity)
        let preflight = microseconds("gate") { i in
            _ = gate.pass(
                GateRequest(
                    caller: who, environment: .production, device: hash(2, i % 400),
                    insightTypes: ["isLikelyBeingCoached"],
                    velocity: VelocityQuery(
                        environment: .production, accounts: [hash(1, i % 500)],
                        devices: [hash(2, i % 400)], counterparties: [hash(3, i % 100)],
                        isPayment: true)))
        }
        let record = microseconds("record") { i in
            velocity.record(
                VelocityEvent(
                    environment: .production, time: now + Milliseconds(i), account: hash(1, i % 500),
                    device: hash(2, i % 400), counterparty: hash(3, i % 100), isPayment: true,
                    value: .unknown))
        }
        // The same records by the record script of the first multi-instance release, coached
        // results (which also mark the counterparties the account paid) and late arrivals by both.
        let previous = try redis.connect()
        func recordWith(_ script: RedisScript, at offset: Int, value: InsightValue) -> (Int) -> Void {
            { i in
                let event = VelocityEvent(
                    environment: .production, time: now + Milliseconds(offset + i), account: hash(1, i % 500),
                    device: hash(2, i % 400), counterparty: hash(3, i % 100), isPayment: true, value: value)
                if let command = RecordScriptCompatibilityTests.recordCommand(
                    event, prefix: instance.link.settings.keyPrefix,
                    limits: velocity.limits, script: script)
                {
                    _ = try? previous.command(command)
                }
            }
        }
        _ = microseconds(
            "record by the first release's script",
            recordWith(
                RecordScriptCompatibilityTests.reference,
                at: 10_000, value: .unknown))
        _ = microseconds("record coached", recordWith(VelocityScripts.record, at: 20_000, value: .high))
        _ = microseconds(
            "record coached by the first release's script",
            recordWith(RecordScriptCompatibilityTests.reference, at: 30_000, value: .high))
        // Late arrivals: older than what the account, device and counterparty already hold.
        _ = microseconds("record late", recordWith(VelocityScripts.record, at: -1_800_000, value: .unknown))
        _ = microseconds(
            "record late by the first release's script",
            recordWith(RecordScriptCompatibilityTests.reference, at: -1_900_000, value: .unknown))
        let ping = try redis.connect()
        let roundTrip = microseconds { _ in _ = try? ping.command("PING") }
        print(
            String(
                format:
                    "redis µs per call (loopback, %d calls each): PING %.1f, admit %.1f, admitDevice %.1f, signals %.1f, gate (device + insight quota + signals) %.1f, record %.1f; velocity memory %d bytes per evaluation (2,000 evaluations of 500 accounts, 400 devices, 100 counterparties)",
                calls, roundTrip, admit, device, signals, preflight, record, filled / 2_000))
        print("redis server µs per script (INFO commandstats): " + serverSide.joined(separator: ", "))
        XCTAssertTrue(instance.link.isAvailable)
        XCTAssertLessThan(max(admit, signals, record), 50_000, "a call took over 50 ms on average")
    }
}
