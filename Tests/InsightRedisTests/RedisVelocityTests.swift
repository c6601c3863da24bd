import Foundation
import InsightDomain
@testable import InsightRedis
import InsightTesting
import Locking
import RedisClient
import RedisTesting
import XCTest

/// The store's history, as a fixed list (what `VelocityHistory` answers): its sequence is the
/// position in time order; `reads` counts replays (each begins by asking for the end).
final class FixedHistory: VelocityHistory {
    let events: Locked<[VelocityEvent]>
    let reads = Locked<Int>(0)
    init(_ events: [VelocityEvent]) { self.events = Locked(events) }

    private func stored() -> [(sequence: Int64, event: VelocityEvent)] {
        events.withLock { $0 }.sorted { $0.time < $1.time }.enumerated().map { (Int64($0.offset + 1), $0.element) }
    }

    func velocityHistoryEnd() throws -> VelocityHistoryEnd {
        reads.withLock { $0 += 1 }
        let all = stored()
        return VelocityHistoryEnd(sequence: Int64(all.count), time: (all.last?.event.time ?? -1) + 1)
    }

    func velocityEvents(
        after cursor: VelocityHistoryCursor, through end: VelocityHistoryEnd,
        limit: Int
    ) throws -> VelocityHistoryBatch {
        let batch = stored().filter {
            ($0.event.time, $0.sequence) > (cursor.time, cursor.sequence) && $0.sequence <= end.sequence && $0.event.time < end.time
        }.prefix(limit)
        let next = batch.count < limit ? nil : batch.last.map { VelocityHistoryCursor(time: $0.event.time, sequence: $0.sequence) }
        return VelocityHistoryBatch(events: batch.map(\.event), next: next)
    }
}

/// Two `RedisVelocity`s on one server are two instances: what one records, the other sees, and
/// both answer what `VelocityTracker` answers for the same evaluations.
final class RedisVelocityTests: XCTestCase {
    var redis: TemporaryRedis!

    override func setUpWithError() throws { redis = try TemporaryRedis.shared() }

    private func hash(_ label: String) -> [UInt8] { Array(("h:" + label).utf8) + Array(repeating: 7, count: 24) }

    private func velocity(
        _ instance: Instance, limits: VelocityLimits = .init(), history: FixedHistory = FixedHistory([]),
        mayRebuild: Bool = false
    ) -> RedisVelocity {
        RedisVelocity(
            link: instance.link, history: history, clock: SystemClock(), limits: limits,
            metrics: instance.metrics, mayRebuild: { mayRebuild })
    }

    private func pair(limits: VelocityLimits = .init(), name: String = #function) throws -> (RedisVelocity, RedisVelocity) {
        let prefix = uniquePrefix(name)
        let a = try Instance(redis, prefix: prefix), b = try Instance(redis, prefix: prefix)
        a.link.start()
        b.link.start()
        addTeardownBlock {
            a.link.stop(); b.link.stop()
        }
        return (velocity(a, limits: limits), velocity(b, limits: limits))
    }

    private func serverNow() throws -> Milliseconds { try redis.connect().serverTime() / 1000 }

    private func event(
        _ account: String?, device: String? = nil, counterparty: String? = nil, payment: Bool = false,
        value: InsightValue? = .unknown, at time: Milliseconds
    ) -> VelocityEvent {
        VelocityEvent(
            environment: .production, time: time, account: account.map(hash), device: device.map(hash),
            counterparty: counterparty.map(hash), isPayment: payment, value: value)
    }

    private func query(
        _ account: String?, device: String? = nil, counterparty: String? = nil,
        payment: Bool = false
    ) -> VelocityQuery {
        VelocityQuery(
            environment: .production, accounts: account.map { [hash($0)] } ?? [],
            devices: device.map { [hash($0)] } ?? [], counterparties: counterparty.map { [hash($0)] } ?? [],
            isPayment: payment)
    }

    func testWhatOneInstanceRecordsTheOtherSees() throws {
        let (a, b) = try pair()
        let now = try serverNow()
        // An account evaluated three times on instance A.
        for i in 0..<3 { a.record(event("alice", device: "phone", at: now - 60_000 * Int64(i + 1))) }
        let alice = b.signals(for: query("alice", device: "phone"))
        XCTAssertEqual(alice.accountEvaluations, VelocityCounts(hour: 4, day: 4, week: 4))
        XCTAssertNotNil(alice.deviceLastSeenForAccount)
        // A device shared by accounts: bob and carol on it through A, dave asks through B.
        a.record(event("bob", device: "tablet", at: now - 5_000))
        b.record(event("carol", device: "tablet", at: now - 4_000))
        XCTAssertEqual(a.signals(for: query("dave", device: "tablet")).deviceAccounts, VelocityCounts(hour: 3, day: 3, week: 3))
        // The mule signal: two coached accounts paid one counterparty, through both instances.
        a.record(event("v1", counterparty: "mule", payment: true, value: .high, at: now - 3_000))
        b.record(event("v2", counterparty: "mule", payment: true, value: .unknown, at: now - 2_000))
        b.record(event("v2", value: .medium, at: now - 1_000))  // coached after paying: counts
        let mule = a.signals(for: query("v3", counterparty: "mule", payment: true))
        XCTAssertEqual(mule.counterpartyPayers.week, 2)
        XCTAssertEqual(mule.counterpartyCoachedPayers.week, 2)
        XCTAssertEqual(b.signals(for: query("v3", counterparty: "mule", payment: true)).withoutTime, mule.withoutTime)
        // Other environments see nothing of it.
        var sandbox = query("alice", device: "phone")
        sandbox.environment = .sandbox
        XCTAssertEqual(a.signals(for: sandbox).accountEvaluations.week, 1)
    }

    func testRecordingTheSameEvaluationTwiceCountsItOnce() throws {
        let (a, b) = try pair()
        let now = try serverNow()
        let events = [
            event("erin", device: "d1", counterparty: "shop", payment: true, value: .high, at: now - 10_000),
            event("erin", device: "d2", at: now - 9_000),
            event("frank", counterparty: "shop", payment: true, value: .medium, at: now - 8_000)
        ]
        for e in events { a.record(e) }
        let once = b.signals(for: query("erin", device: "d1", counterparty: "shop", payment: true))
        for e in events { b.record(e) }
        for e in events.reversed() { a.record(e) }
        XCTAssertEqual(b.signals(for: query("erin", device: "d1", counterparty: "shop", payment: true)).withoutTime, once.withoutTime)
        XCTAssertEqual(once.accountEvaluations.week, 3)
    }

    /// A random history (late arrivals, key rotation, small caps so they saturate) recorded into
    /// both, then every subject asked: the same signals, to the millisecond.
    func testSignalsEqualTheInMemoryTrackersForTheSameEvaluations() throws {
        var limits = VelocityLimits()
        limits.eventsPerAccount = 6
        limits.accountsPerDevice = 3
        limits.payersPerCounterparty = 3
        for seed in 1...4 as ClosedRange<UInt64> {
            let (shared, _) = try pair(limits: limits, name: "equal\(seed)")
            let clock = ManualClock(try serverNow())
            let tracker = VelocityTracker(clock: clock, limits: limits)
            var random = SplitMix64(seed: seed)
            func pick(_ n: Int) -> Int { Int(random.next() % UInt64(n)) }
            let accounts = (0..<6).map { "acct\($0)" }, devices = (0..<4).map { "dev\($0)" }
            let counterparties = (0..<4).map { "cp\($0)" }
            let values: [InsightValue?] = [nil, .unknown, .medium, .high]
            var used = Set<Milliseconds>()
            for _ in 0..<150 {
                // Distinct times within the last 6.9 days, in random order (late arrivals).
                var age = Milliseconds(random.next() % 596_000_000) + 1_000
                while used.contains(age) { age += 1 }
                used.insert(age)
                let payment = pick(2) == 0
                var e = event(
                    accounts[pick(accounts.count)], device: pick(4) == 0 ? nil : devices[pick(devices.count)],
                    counterparty: pick(3) == 0 ? nil : counterparties[pick(counterparties.count)],
                    payment: payment, value: values[pick(values.count)], at: clock.now() - age)
                e.raisedByVelocity = pick(4) == 0
                shared.record(e)
                tracker.record(e)
            }
            var asked = 0
            for account in accounts + ["stranger"] {
                for device in [nil] + devices {
                    for counterparty in [nil] + counterparties {
                        for payment in [false, true] {
                            var q = query(account, device: device, counterparty: counterparty, payment: payment)
                            if asked % 5 == 0 { q.accounts.append(hash(accounts[(asked / 5) % accounts.count])) }  // a key rotation
                            asked += 1
                            let fromRedis = shared.signals(for: q)
                            clock.advance(ms: fromRedis.now - clock.now())
                            XCTAssertEqual(
                                fromRedis, tracker.signals(for: q),
                                "seed \(seed), \(account) \(device ?? "-") \(counterparty ?? "-") \(payment)")
                        }
                    }
                }
            }
        }
    }

    /// After an erasure, Redis answers what a tracker that recorded the same evaluations without
    /// the subject's hashes answers (the erased store's rebuild): the subject as a never-seen
    /// one, the others without it in their lists. Lists stay below their caps here: where an
    /// account's set no longer names an older device or payment, its key stays in that set
    /// (docs/privacy.md).
    func testAnErasedSubjectIsForgottenAsARebuildWithoutItWouldBe() throws {
        for seed in 1...2 as ClosedRange<UInt64> {
            let (shared, other) = try pair(name: "erase\(seed)")
            let clock = ManualClock(try serverNow())
            let reference = VelocityTracker(clock: clock)
            var random = SplitMix64(seed: seed)
            func pick(_ n: Int) -> Int { Int(random.next() % UInt64(n)) }
            let accounts = (0..<6).map { "acct\($0)" }, devices = (0..<4).map { "dev\($0)" }
            let counterparties = (0..<4).map { "cp\($0)" }
            let values: [InsightValue?] = [nil, .unknown, .medium, .high]
            let erased = ErasedSubject(
                tenant: "t", account: [hash("acct0"), hash("old/acct0")], device: [hash("dev0")],
                counterparty: [hash("cp0")])
            for i in 0..<150 {
                let account = accounts[pick(accounts.count)]
                let event = VelocityEvent(
                    environment: pick(3) == 0 ? .sandbox : .production, time: clock.now() - Milliseconds(1_000 + 997 * i),
                    account: hash(account == "acct0" && pick(2) == 0 ? "old/acct0" : account),
                    device: pick(4) == 0 ? nil : hash(devices[pick(devices.count)]),
                    counterparty: pick(3) == 0 ? nil : hash(counterparties[pick(counterparties.count)]),
                    isPayment: pick(2) == 0, value: values[pick(values.count)], raisedByVelocity: pick(4) == 0)
                shared.record(event)
                var unlinked = event
                if let a = unlinked.account, erased.account.contains(a) { unlinked.account = nil }
                if let d = unlinked.device, erased.device.contains(d) { unlinked.device = nil }
                if let c = unlinked.counterparty, erased.counterparty.contains(c) { unlinked.counterparty = nil }
                reference.record(unlinked)
            }
            var queries: [VelocityQuery] = []
            for environment in [Environment.production, .sandbox] {
                for account in [[]] + accounts.map({ [hash($0)] }) + [[hash("acct0"), hash("old/acct0")]] {
                    for device in [nil] + devices {
                        for counterparty in [nil] + counterparties {
                            for payment in [false, true] {
                                queries.append(
                                    VelocityQuery(
                                        environment: environment, accounts: account,
                                        devices: device.map { [hash($0)] } ?? [],
                                        counterparties: counterparty.map { [hash($0)] } ?? [],
                                        isPayment: payment))
                            }
                        }
                    }
                }
            }
            func differences() -> Int {
                queries.filter { query in
                    let fromRedis = shared.signals(for: query)
                    clock.advance(ms: fromRedis.now - clock.now())
                    return fromRedis != reference.signals(for: query)
                }.count
            }
            XCTAssertGreaterThan(differences(), 0, "seed \(seed): the subject counted before erasure")

            try other.erase(erased)  // on another instance: the state is shared

            for query in queries {
                let fromRedis = shared.signals(for: query)
                clock.advance(ms: fromRedis.now - clock.now())
                XCTAssertEqual(fromRedis, reference.signals(for: query), "seed \(seed): \(query)")
            }
            try shared.erase(erased)
            XCTAssertEqual(differences(), 0, "a second erasure changes nothing")
        }
    }

    /// An account past its cap of evaluations is still in the sets of the devices and
    /// counterparties its dropped evaluations named; erasure finds those through the record
    /// script's notes, so none still counts it.
    func testAnErasedAccountPastItsCapLeavesEveryDeviceAndCounterparty() throws {
        var limits = VelocityLimits()
        limits.eventsPerAccount = 4
        let (shared, other) = try pair(limits: limits)
        let now = try serverNow()
        for i in 0..<10 {
            shared.record(
                event(
                    "busy", device: "dev\(i)", counterparty: "cp\(i)", payment: true, value: .high,
                    at: now - Milliseconds(10_000 - i * 100)))
        }
        func counted(_ i: Int) -> (device: Int, payers: Int) {
            (
                shared.signals(for: query(nil, device: "dev\(i)")).deviceAccounts.week,
                shared.signals(for: query(nil, counterparty: "cp\(i)", payment: true)).counterpartyPayers.week
            )
        }
        XCTAssertEqual(counted(0).device, 1, "the first device, long dropped from the account's own set, has it")
        XCTAssertEqual(counted(0).payers, 1)
        try other.erase(ErasedSubject(tenant: "t", account: [hash("busy")]))
        for i in 0..<10 {
            XCTAssertEqual(counted(i).device, 0, "device \(i) still counts the erased account")
            XCTAssertEqual(counted(i).payers, 0, "counterparty \(i) still counts the erased account")
        }
    }

    func testRedisUnavailableAnswersNoSignalsAndCountsIt() throws {
        let own = try TemporaryRedis()
        let instance = try Instance(own, prefix: uniquePrefix(), commandTimeout: .milliseconds(50))
        instance.link.start()
        defer { instance.link.stop() }
        let v = velocity(instance)
        let now = try own.connect().serverTime() / 1000
        for i in 0..<12 { v.record(event("gina", device: "d", at: now - Milliseconds(i) * 1000)) }
        XCTAssertEqual(v.signals(for: query("gina", device: "d")).accountEvaluations.hour, 13)
        own.stop()
        let none = v.signals(for: query("gina", device: "d"))
        XCTAssertEqual(none.accountEvaluations, VelocityCounts())
        XCTAssertFalse(none.hasAccount, "no signal can fire")
        XCTAssertEqual(EscalationPolicy.defaults.apply(.medium, signals: none).value, .medium, "no escalation")
        v.record(event("gina", at: now))
        XCTAssertEqual(instance.sample("insightd_velocity_without_redis_total{operation=\"signals\"}"), 1)
        XCTAssertEqual(instance.sample("insightd_velocity_without_redis_total{operation=\"record\"}"), 1)
    }

    /// The record an answer waits for goes through the link's call thread: the caller does not
    /// wait, `then` runs once per record, after which the other instance sees it; with Redis away
    /// it still runs once and the record is counted as dropped; the link's `stop` sends what is
    /// queued first, and a record made after it is sent by the caller before `then`.
    func testTheRecordAnAnswerWaitsForIsSentByTheWriterAndCallsBackOnce() throws {
        let (a, b) = try pair()
        let now = try serverNow()
        let done = DispatchGroup()
        let calls = Locked<Int>(0)
        let onCaller = Locked<Int>(0)
        for i in 0..<40 {  // under the account's cap of entries
            done.enter()
            let caller = pthread_self()
            a.record(event("hana", device: "d\(i % 3)", at: now - Milliseconds(i) * 100)) {
                calls.withLock { $0 += 1 }
                if pthread_equal(pthread_self(), caller) != 0 { onCaller.withLock { $0 += 1 } }
                done.leave()
            }
        }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(calls.withLock { $0 }, 40)
        XCTAssertEqual(onCaller.withLock { $0 }, 0, "recorded by the call thread, not the caller's")
        XCTAssertEqual(b.signals(for: query("hana", device: "d0")).accountEvaluations.hour, 41)
        let empty = Locked<Bool>(false)
        a.record(event(nil, device: "d0", at: now)) { empty.withLock { $0 = true } }
        XCTAssertTrue(empty.withLock { $0 }, "no account: nothing to wait for")

        // Queued records are sent before stop returns; afterwards the caller sends its own.
        let last = Locked<Bool>(false)
        a.record(event("hana", at: now)) { last.withLock { $0 = true } }
        a.link.stop()
        XCTAssertTrue(last.withLock { $0 })
        XCTAssertEqual(b.signals(for: query("hana")).accountEvaluations.hour, 42)
        let after = Locked<Bool>(false)
        a.record(event("hana", at: now + 1)) { after.withLock { $0 = true } }
        XCTAssertTrue(after.withLock { $0 }, "recorded by the caller once the link stopped")
        XCTAssertEqual(b.signals(for: query("hana")).accountEvaluations.hour, 43)

        // Redis away: still one call back each, and counted as dropped.
        let own = try TemporaryRedis()
        let instance = try Instance(own, prefix: uniquePrefix(), commandTimeout: .milliseconds(50))
        instance.link.start()
        defer { instance.link.stop() }
        let v = velocity(instance)
        own.stop()
        let away = DispatchGroup()
        for _ in 0..<3 {
            away.enter()
            v.record(event("ivan", at: now)) { away.leave() }
        }
        XCTAssertEqual(away.wait(timeout: .now() + 10), .success)
        v.link.stop()
        XCTAssertEqual(instance.sample("insightd_velocity_without_redis_total{operation=\"record\"}"), 3)
    }

    /// Redis restarted empty (`--save ''`): the instance allowed to rebuild replays the store's
    /// last 7 days into it; the others do not; the answers are those before the restart.
    func testARedisThatLostItsDataIsRebuiltFromTheStoreByTheLead() throws {
        let own = try TemporaryRedis()
        let prefix = uniquePrefix()
        let lead = try Instance(own, prefix: prefix), other = try Instance(own, prefix: prefix)
        let now = try own.connect().serverTime() / 1000
        let history = FixedHistory([
            event("hana", device: "shared", at: now - 8 * 86_400_000),  // older than 7 d: not replayed
            event("hana", device: "shared", counterparty: "m", payment: true, value: .high, at: now - 3 * 86_400_000),
            event("ivan", device: "shared", counterparty: "m", payment: true, value: .medium, at: now - 7_200_000),
            event("jack", device: "shared", at: now - 60_000)
        ])
        let led = velocity(lead, history: history, mayRebuild: true)
        let follower = velocity(other, history: history, mayRebuild: false)
        other.link.start()
        defer { other.link.stop() }
        lead.link.start()
        defer { lead.link.stop() }
        XCTAssertTrue(
            eventually { history.reads.withLock { $0 } == 1 && lead.logged.count == 2 },
            "the lead rebuilt at start (the marker was missing), on its background thread")
        XCTAssertEqual(history.reads.withLock { $0 }, 1, "only the lead rebuilds")
        let q = query("kate", device: "shared", counterparty: "m", payment: true)
        let before = follower.signals(for: q)
        XCTAssertEqual(before.deviceAccounts.week, 4)
        XCTAssertEqual(before.counterpartyCoachedPayers.week, 2)
        XCTAssertEqual(led.signals(for: q).deviceAccounts, before.deviceAccounts)

        // Restarted empty: both reconnect, the lead replays, the answers come back.
        own.stop()
        try own.start()
        XCTAssertTrue(eventually { history.reads.withLock { $0 } >= 2 && lead.link.isAvailable && other.link.isAvailable })
        XCTAssertTrue(eventually { follower.signals(for: q).deviceAccounts == before.deviceAccounts })
        XCTAssertEqual(follower.signals(for: q).counterpartyCoachedPayers, before.counterpartyCoachedPayers)
        XCTAssertTrue(lead.logged.contains { if case .note("velocity replayed into Redis", _) = $0 { true } else { false } })
    }

    func testAReplayIsIdempotent() throws {
        let instance = try Instance(redis, prefix: uniquePrefix())
        instance.link.start()
        defer { instance.link.stop() }
        let now = try serverNow()
        var events: [VelocityEvent] = []
        for i in 0..<40 {
            let value: InsightValue = i % 3 == 0 ? .high : .unknown
            events.append(
                event(
                    "acct\(i % 5)", device: "dev\(i % 3)", counterparty: "cp\(i % 4)", payment: i % 2 == 0,
                    value: value, at: now - Milliseconds(i) * 600_000))
        }
        let history = FixedHistory(events)
        let v = velocity(instance, history: history)
        let connection = try redis.connect()
        let queries = (0..<5).map { query("acct\($0)", device: "dev\($0 % 3)", counterparty: "cp\($0 % 4)", payment: true) }
        try v.replay(connection, since: 0, reason: "test")
        let first = queries.map { v.signals(for: $0) }
        try v.replay(connection, since: 0, reason: "test")
        for e in try history.velocityEvents(since: 0) { v.record(e) }
        XCTAssertEqual(queries.map { v.signals(for: $0).withoutTime }, first.map { $0.withoutTime })
    }
}

private extension VelocitySignals {
    /// The signals with `now` left out (two reads a few milliseconds apart).
    var withoutTime: VelocitySignals {
        var copy = self
        copy.now = 0
        return copy
    }
}
