import Dispatch
import Foundation
import InsightDomain
import InsightTesting
import XCTest

/// A stand-in for an HMAC hash: 32 well-mixed bytes derived from a name.
private func fakeHash(_ name: String) -> [UInt8] {
    var x: UInt64 = 0xcbf2_9ce4_8422_2325
    for b in name.utf8 { x = (x ^ UInt64(b)) &* 0x100_0000_01b3 }
    var out: [UInt8] = []
    for _ in 0..<4 {
        x &+= 0x9E37_79B9_7F4A_7C15
        let z = SplitMix64.mix(x)
        for k in 0..<8 { out.append(UInt8(truncatingIfNeeded: z >> (8 * UInt64(k)))) }
    }
    return out
}

/// The same identifier hashed under the previous key of a rotated keyring.
private func oldHash(_ name: String) -> [UInt8] { fakeHash("old key/" + name) }

private let oneHour = VelocityWindow.hour.milliseconds
private let oneDay = VelocityWindow.day.milliseconds
private let oneWeek = VelocityWindow.week.milliseconds

private final class VelocityHarness: Sendable {
    let clock = ManualClock()
    let tracker: VelocityTracker

    init(limits: VelocityLimits = .init()) { tracker = VelocityTracker(clock: clock, limits: limits) }

    func event(
        _ account: String?, device: String? = nil, counterparty: String? = nil, payment: Bool = false,
        value: InsightValue? = .unknown, env: Environment = .production, at time: Milliseconds? = nil,
        hashing: (String) -> [UInt8] = fakeHash
    ) -> VelocityEvent {
        VelocityEvent(
            environment: env, time: time ?? clock.now(), account: account.map(hashing),
            device: device.map(hashing), counterparty: counterparty.map(hashing), isPayment: payment,
            value: value)
    }

    func record(
        _ account: String?, device: String? = nil, counterparty: String? = nil, payment: Bool = false,
        value: InsightValue? = .unknown, env: Environment = .production, at time: Milliseconds? = nil,
        hashing: (String) -> [UInt8] = fakeHash
    ) {
        tracker.record(
            event(
                account, device: device, counterparty: counterparty, payment: payment, value: value,
                env: env, at: time, hashing: hashing))
    }

    func signals(
        _ account: String?, device: String? = nil, counterparty: String? = nil, payment: Bool = false,
        env: Environment = .production
    ) -> VelocitySignals {
        tracker.signals(
            for: VelocityQuery(
                environment: env, accounts: account.map { [fakeHash($0)] } ?? [],
                devices: device.map { [fakeHash($0)] } ?? [],
                counterparties: counterparty.map { [fakeHash($0)] } ?? [], isPayment: payment))
    }

    func advance(_ ms: Int64) { clock.advance(ms: ms) }
}

// MARK: - Signals at the window edges

final class VelocitySignalTests: XCTestCase {
    func testWindowContainsIsHalfOpen() {
        XCTAssertTrue(VelocityWindow.hour.contains(0, now: oneHour - 1))
        XCTAssertFalse(VelocityWindow.hour.contains(0, now: oneHour))
        XCTAssertTrue(VelocityWindow.week.contains(0, now: oneWeek - 1))
        XCTAssertFalse(VelocityWindow.week.contains(0, now: oneWeek))
    }

    func testAccountEvaluationsAtEachEdge() {
        let h = VelocityHarness()
        h.record("a")
        XCTAssertEqual(h.signals("a").accountEvaluations, VelocityCounts(hour: 2, day: 2, week: 2), "this one included")
        XCTAssertEqual(h.signals("b").accountEvaluations, VelocityCounts(hour: 1, day: 1, week: 1))
        XCTAssertEqual(h.signals(nil).accountEvaluations, VelocityCounts(), "no account, nothing counted")
        h.advance(oneHour - 1)
        XCTAssertEqual(h.signals("a").accountEvaluations, VelocityCounts(hour: 2, day: 2, week: 2))
        h.advance(1)  // exactly 1 h old: out of the oneHour
        XCTAssertEqual(h.signals("a").accountEvaluations, VelocityCounts(hour: 1, day: 2, week: 2))
        h.advance(oneDay - oneHour - 1)
        XCTAssertEqual(h.signals("a").accountEvaluations.day, 2)
        h.advance(1)
        XCTAssertEqual(h.signals("a").accountEvaluations, VelocityCounts(hour: 1, day: 1, week: 2))
        h.advance(oneWeek - oneDay - 1)
        XCTAssertEqual(h.signals("a").accountEvaluations.week, 2)
        h.advance(1)
        XCTAssertEqual(h.signals("a").accountEvaluations, VelocityCounts(hour: 1, day: 1, week: 1))
    }

    func testAccountDevicesAndNewDevice() {
        let h = VelocityHarness()
        let start = h.clock.now()
        h.record("a", device: "d1")
        var s = h.signals("a", device: "d1")
        XCTAssertEqual(s.deviceLastSeenForAccount, start)
        XCTAssertFalse(s.isNewDeviceForAccount)
        XCTAssertEqual(s.accountDevices, VelocityCounts(hour: 1, day: 1, week: 1))
        s = h.signals("a", device: "d2")
        XCTAssertTrue(s.isNewDeviceForAccount)
        XCTAssertEqual(s.accountDevices, VelocityCounts(hour: 2, day: 2, week: 2))
        XCTAssertEqual(s.otherAccountDevices(in: .week), 1)
        XCTAssertTrue(h.signals("b", device: "d2").isNewDeviceForAccount, "new, but with no other device")
        XCTAssertEqual(h.signals("b", device: "d2").otherAccountDevices(in: .week), 0)
        // Without a device in the query the account's devices are still counted.
        XCTAssertEqual(h.signals("a").accountDevices.week, 1)
        XCTAssertNil(h.signals("a").deviceLastSeenForAccount)

        h.advance(oneHour)
        XCTAssertEqual(h.signals("a", device: "d2").accountDevices, VelocityCounts(hour: 1, day: 2, week: 2))
        h.advance(oneWeek - oneHour - 1)
        XCTAssertFalse(h.signals("a", device: "d1").isNewDeviceForAccount)
        XCTAssertEqual(h.signals("a", device: "d2").otherAccountDevices(in: .week), 1)
        h.advance(1)
        XCTAssertTrue(h.signals("a", device: "d1").isNewDeviceForAccount, "7 d old: forgotten")
        XCTAssertEqual(h.signals("a", device: "d2").otherAccountDevices(in: .week), 0)
    }

    func testDeviceAccountsAtTheDayEdge() {
        let h = VelocityHarness()
        for a in ["a1", "a2", "a3"] { h.record(a, device: "d") }
        h.record("a1", device: "d")  // a repeat is one account
        XCTAssertEqual(h.signals("a4", device: "d").deviceAccounts, VelocityCounts(hour: 4, day: 4, week: 4))
        XCTAssertEqual(h.signals("a1", device: "d").deviceAccounts.day, 3, "the query's own account counts once")
        XCTAssertEqual(h.signals(nil, device: "d").deviceAccounts.day, 3)
        h.advance(oneDay - 1)
        XCTAssertEqual(h.signals("a4", device: "d").deviceAccounts.day, 4)
        h.advance(1)
        XCTAssertEqual(h.signals("a4", device: "d").deviceAccounts, VelocityCounts(hour: 1, day: 1, week: 4))
    }

    func testFirstPaymentAndNewCounterparties() {
        let h = VelocityHarness()
        let start = h.clock.now()
        h.record("a", counterparty: "c1", payment: true)
        h.record("a", counterparty: "c9", payment: false)  // naming a counterparty is not paying it
        h.advance(1)
        var s = h.signals("a", counterparty: "c1", payment: true)
        XCTAssertEqual(s.counterpartyLastPaidByAccount, start)
        XCTAssertFalse(s.isFirstPaymentToCounterparty)
        XCTAssertEqual(s.accountNewCounterparties, VelocityCounts(hour: 1, day: 1, week: 1))
        s = h.signals("a", counterparty: "c2", payment: true)
        XCTAssertTrue(s.isFirstPaymentToCounterparty)
        XCTAssertEqual(s.accountNewCounterparties, VelocityCounts(hour: 2, day: 2, week: 2))
        s = h.signals("a", counterparty: "c9", payment: true)
        XCTAssertTrue(s.isFirstPaymentToCounterparty)
        XCTAssertFalse(
            h.signals("a", counterparty: "c2", payment: false).isFirstPaymentToCounterparty,
            "only a payment is a first payment")
        // A repeat payment does not move the first one, but keeps the counterparty known.
        h.advance(2 * oneHour)
        let repeatAt = h.clock.now()
        h.record("a", counterparty: "c1", payment: true)
        XCTAssertEqual(
            h.signals("a", counterparty: "c2", payment: true).accountNewCounterparties,
            VelocityCounts(hour: 1, day: 2, week: 2))
        h.clock.advance(ms: repeatAt + oneWeek - 1 - h.clock.now())
        s = h.signals("a", counterparty: "c1", payment: true)
        XCTAssertEqual(s.counterpartyLastPaidByAccount, repeatAt)
        XCTAssertEqual(s.accountNewCounterparties, VelocityCounts(hour: 0, day: 0, week: 1), "first paid at the repeat now")
        h.advance(1)
        XCTAssertTrue(h.signals("a", counterparty: "c1", payment: true).isFirstPaymentToCounterparty)
    }

    func testVelocityRaisedValuesCountAsTheModelsOwn() {
        let h = VelocityHarness()
        let raised = [(InsightValue.medium, true), (.high, true), (.medium, false), (.unknown, false)]
        for (value, byVelocity) in raised {
            h.tracker.record(
                VelocityEvent(
                    environment: .production, time: h.clock.now(), account: fakeHash("a"),
                    device: nil, counterparty: fakeHash("c"), isPayment: true, value: value,
                    raisedByVelocity: byVelocity))
        }
        XCTAssertEqual(h.signals("a").accountCoachingResults.week, 2, "high (model medium) and medium")
        XCTAssertEqual(h.signals("b", counterparty: "c").counterpartyCoachedPayers.week, 1)
    }

    func testPriorCoachingResults() {
        let h = VelocityHarness()
        h.record("a", value: .medium)
        h.record("a", value: .high)
        h.record("a", value: .unknown)
        h.record("a", value: nil)
        XCTAssertEqual(h.signals("a").accountCoachingResults, VelocityCounts(hour: 2, day: 2, week: 2))
        XCTAssertEqual(h.signals("a").accountEvaluations.week, 5)
        h.advance(oneDay - 1)
        XCTAssertEqual(h.signals("a").accountCoachingResults.day, 2)
        h.advance(1)
        XCTAssertEqual(h.signals("a").accountCoachingResults, VelocityCounts(hour: 0, day: 0, week: 2))
    }

    func testCoachedPayersOfACounterparty() {
        let h = VelocityHarness()
        h.record("v1", counterparty: "mule", payment: true, value: .medium)
        h.record("v2", counterparty: "mule", payment: true, value: .high)
        h.record("v3", counterparty: "mule", payment: true, value: .unknown)
        var s = h.signals("v4", counterparty: "mule", payment: true)
        XCTAssertEqual(s.counterpartyPayers, VelocityCounts(hour: 3, day: 3, week: 3))
        XCTAssertEqual(s.counterpartyCoachedPayers, VelocityCounts(hour: 2, day: 2, week: 2))
        s = h.signals("v1", counterparty: "mule", payment: true)
        XCTAssertEqual(s.counterpartyCoachedPayers.week, 1, "other accounts only")
        XCTAssertEqual(s.counterpartyPayers.week, 2)

        // Coached before paying, and coached after paying, both count.
        h.record("v5", value: .medium)
        h.advance(1)
        h.record("v5", counterparty: "m2", payment: true, value: .unknown)
        h.record("v6", counterparty: "m2", payment: true, value: .unknown)
        h.advance(1)
        h.record("v6", device: "x", value: .high)
        XCTAssertEqual(h.signals("z", counterparty: "m2", payment: true).counterpartyCoachedPayers.week, 2)

        // The coaching result expires 7 d after it was made, the payment 7 d after it was made.
        let t0 = h.clock.now()
        h.record("v7", value: .medium)
        h.advance(6 * oneDay)
        h.record("v7", counterparty: "m3", payment: true)
        h.clock.advance(ms: t0 + oneWeek - 1 - h.clock.now())
        XCTAssertEqual(h.signals("z", counterparty: "m3").counterpartyCoachedPayers.week, 1)
        h.advance(1)
        s = h.signals("z", counterparty: "m3")
        XCTAssertEqual(s.counterpartyCoachedPayers.week, 0)
        XCTAssertEqual(s.counterpartyPayers.week, 1)
    }

    func testEnvironmentsNeverShareState() {
        let h = VelocityHarness()
        for _ in 0..<5 { h.record("a", device: "d", counterparty: "c", payment: true, value: .high, env: .sandbox) }
        let production = h.signals("a", device: "d", counterparty: "c", payment: true, env: .production)
        XCTAssertEqual(production.accountEvaluations.week, 1)
        XCTAssertEqual(production.accountCoachingResults.week, 0)
        XCTAssertNil(production.deviceLastSeenForAccount)
        XCTAssertNil(production.counterpartyLastPaidByAccount)
        XCTAssertEqual(production.counterpartyPayers.week, 0)
        let sandbox = h.signals("a", device: "d", counterparty: "c", payment: true, env: .sandbox)
        XCTAssertEqual(sandbox.accountEvaluations.week, 6)
        XCTAssertEqual(sandbox.accountCoachingResults.week, 5)
        XCTAssertEqual(h.signals("b", device: "d", counterparty: "c", env: .sandbox).counterpartyCoachedPayers.week, 1)
        XCTAssertEqual(h.signals("b", device: "d", counterparty: "c", env: .production).deviceAccounts.week, 1)
    }

    func testKeyRotationUnionsOldAndNewHashes() {
        let h = VelocityHarness()
        // Before the rotation: everything under the old key.
        h.record("a", device: "d", counterparty: "c", payment: true, value: .medium, hashing: oldHash)
        h.record("b", device: "d", value: .unknown, hashing: oldHash)
        h.advance(1)
        // After it: new records under the new key.
        h.record("a", device: "d", value: .high)
        let query = VelocityQuery(
            environment: .production, accounts: [fakeHash("a"), oldHash("a")],
            devices: [fakeHash("d"), oldHash("d")], counterparties: [fakeHash("c"), oldHash("c")],
            isPayment: true)
        let s = h.tracker.signals(for: query)
        XCTAssertEqual(s.accountEvaluations.week, 3)
        XCTAssertEqual(s.accountCoachingResults.week, 2)
        XCTAssertEqual(s.accountDevices.week, 1, "one device under two hashes is one device")
        XCTAssertNotNil(s.deviceLastSeenForAccount)
        XCTAssertEqual(s.deviceAccounts.week, 2, "a and b")
        XCTAssertFalse(s.isFirstPaymentToCounterparty)
        XCTAssertEqual(s.accountNewCounterparties.week, 1)
        // Only the active hash: the old records are invisible.
        let newOnly = h.signals("a", device: "d", counterparty: "c", payment: true)
        XCTAssertEqual(newOnly.accountEvaluations.week, 2)
        XCTAssertTrue(newOnly.isFirstPaymentToCounterparty)
        // The counterparty's payers, seen from another account under both keys.
        let other = VelocityQuery(
            environment: .production, accounts: [fakeHash("z")], devices: [],
            counterparties: [fakeHash("c"), oldHash("c")], isPayment: true)
        XCTAssertEqual(h.tracker.signals(for: other).counterpartyCoachedPayers.week, 1)
    }

    func testOutOfOrderEventsLandInTheirWindows() {
        let h = VelocityHarness()
        h.advance(2 * oneHour)
        h.record("a", at: h.clock.now() - 90 * 60_000)  // 1.5 h ago
        h.record("a")
        h.record("a", at: h.clock.now() - 30 * 60_000)
        XCTAssertEqual(h.signals("a").accountEvaluations, VelocityCounts(hour: 3, day: 4, week: 4))
        h.record("a", at: h.clock.now() - oneWeek)  // already expired: ignored
        XCTAssertEqual(h.signals("a").accountEvaluations.week, 4)
    }
}

// MARK: - Memory bounds

final class VelocityBoundsTests: XCTestCase {
    func testPerSubjectCapsSaturate() {
        var limits = VelocityLimits()
        limits.eventsPerAccount = 4
        limits.accountsPerDevice = 3
        limits.payersPerCounterparty = 3
        let h = VelocityHarness(limits: limits)
        for i in 0..<10 { h.record("a", device: "d\(i)", counterparty: "c\(i)", payment: true, value: .medium) }
        let s = h.signals("a", device: "d0", counterparty: "c0", payment: true)
        XCTAssertEqual(s.accountEvaluations.week, 5, "4 remembered + this one")
        XCTAssertEqual(s.accountCoachingResults.week, 4)
        XCTAssertTrue(s.isNewDeviceForAccount, "the oldest evaluation was evicted")
        XCTAssertTrue(s.isFirstPaymentToCounterparty)
        XCTAssertFalse(h.signals("a", device: "d9").isNewDeviceForAccount)

        for i in 0..<10 { h.record("u\(i)", device: "shared", counterparty: "cp", payment: true, value: .high) }
        XCTAssertEqual(h.signals("new", device: "shared").deviceAccounts.week, 4, "3 remembered + this one")
        XCTAssertEqual(h.signals("u9", device: "shared").deviceAccounts.week, 3)
        XCTAssertEqual(h.signals("new", counterparty: "cp").counterpartyCoachedPayers.week, 3)
        XCTAssertEqual(h.signals("u0", counterparty: "cp").counterpartyCoachedPayers.week, 3, "u0 was evicted")
    }

    func testSubjectCountIsBounded() {
        var limits = VelocityLimits()
        limits.subjectsPerKind = 64
        limits.shards = 4
        let h = VelocityHarness(limits: limits)
        for i in 0..<1000 {
            h.record("a\(i)")
            h.advance(1)
        }
        XCTAssertLessThanOrEqual(h.tracker.trackedSubjects, 64)
        XCTAssertGreaterThan(h.tracker.trackedSubjects, 32)
        XCTAssertEqual(h.signals("a999").accountEvaluations.week, 2, "the most recent survive")
        XCTAssertEqual(h.signals("a0").accountEvaluations.week, 1, "the least recent were dropped")
    }

    func testExpiryAndPrune() {
        let h = VelocityHarness()
        for i in 0..<50 { h.record("a\(i)", device: "d\(i)", counterparty: "c\(i)", payment: true) }
        XCTAssertEqual(h.tracker.trackedSubjects, 150)
        h.advance(oneWeek - 1)
        h.tracker.pruneExpired()
        XCTAssertEqual(h.tracker.trackedSubjects, 150)
        h.advance(1)
        XCTAssertEqual(h.signals("a0", device: "d0").accountDevices.week, 1, "expired state is invisible before a prune")
        h.tracker.pruneExpired()
        XCTAssertEqual(h.tracker.trackedSubjects, 0)
    }

    func testWritesSweepExpiredSubjectsIncrementally() {
        var limits = VelocityLimits()
        limits.shards = 1
        let h = VelocityHarness(limits: limits)
        for i in 0..<100 { h.record("a\(i)") }
        h.advance(oneWeek)
        h.record("fresh")  // an oneHour since the last sweep: this write sweeps the shard
        XCTAssertEqual(h.tracker.trackedSubjects, 1)
    }

    func testLongRunsKeepExactWindows() {
        // Months of activity move the 32-bit time epoch many times.
        let h = VelocityHarness()
        for step in 0..<120 {
            h.record("a", device: "d\(step % 3)", counterparty: "c", payment: true, value: step % 2 == 0 ? .medium : nil)
            h.advance(oneDay + 1)
            let s = h.signals("a", device: "d0", counterparty: "c", payment: true)
            XCTAssertEqual(s.accountEvaluations, VelocityCounts(hour: 1, day: 1, week: min(step + 1, 6) + 1), "step \(step)")
            XCTAssertEqual(s.counterpartyLastPaidByAccount, h.clock.now() - oneDay - 1)
        }
        h.tracker.pruneExpired()
        XCTAssertEqual(h.tracker.trackedSubjects, 5)
    }
}

// MARK: - Rebuild and concurrency

final class VelocityRebuildTests: XCTestCase {
    /// A random but fixed history over 9 days, with some events recorded late.
    private func history(start: Milliseconds) -> [VelocityEvent] {
        var rng = SplitMix64(seed: 42)
        var events: [VelocityEvent] = []
        var now = start
        let values: [InsightValue?] = [.unknown, .unknown, .unknown, .medium, .high, nil]
        for _ in 0..<3000 {
            now += Int64(rng.next() % 520_000)
            let late = rng.next() % 5 == 0 ? Int64(rng.next() % 60_000) : 0
            let environment: Environment = rng.next() % 10 == 0 ? .sandbox : .production
            events.append(
                VelocityEvent(
                    environment: environment, time: now - late,
                    account: rng.next() % 20 == 0 ? nil : fakeHash("a\(rng.next() % 40)"),
                    device: rng.next() % 4 == 0 ? nil : fakeHash("d\(rng.next() % 15)"),
                    counterparty: rng.next() % 3 == 0 ? nil : fakeHash("c\(rng.next() % 12)"),
                    isPayment: rng.next() % 2 == 0, value: values[Int(rng.next() % 6)],
                    raisedByVelocity: rng.next() % 7 == 0))
        }
        return events
    }

    func testRebuildEqualsIncrementalRecording() {
        var limits = VelocityLimits()
        limits.eventsPerAccount = 16  // caps are reached, too
        limits.accountsPerDevice = 6
        limits.payersPerCounterparty = 5
        let live = VelocityHarness(limits: limits)
        let start = live.clock.now()
        let events = history(start: start)
        for event in events {
            if event.time > live.clock.now() { live.clock.advance(ms: event.time - live.clock.now()) }
            live.tracker.record(event)
        }
        XCTAssertGreaterThan(live.clock.now() - start, 8 * oneDay)

        let restarted = VelocityHarness(limits: limits)
        restarted.clock.advance(ms: live.clock.now() - restarted.clock.now())
        restarted.tracker.rebuild(from: events.sorted { $0.time < $1.time })

        for environment in Environment.allCases {
            for a in (0..<40).map({ "a\($0)" }) + [nil] {
                for (d, c) in [("d1", "c1"), ("d7", "c5"), ("d14", "c11"), (nil, nil)] as [(String?, String?)] {
                    for payment in [false, true] {
                        let one = live.signals(a, device: d, counterparty: c, payment: payment, env: environment)
                        let two = restarted.signals(a, device: d, counterparty: c, payment: payment, env: environment)
                        XCTAssertEqual(one, two, "\(environment) \(a ?? "-") \(d ?? "-") \(c ?? "-") \(payment)")
                    }
                }
            }
        }
        live.tracker.pruneExpired()
        restarted.tracker.pruneExpired()
        XCTAssertEqual(live.tracker.trackedSubjects, restarted.tracker.trackedSubjects)
        // The history is not trivial.
        let busy = live.signals("a1", device: "d1", counterparty: "c1", payment: true)
        XCTAssertGreaterThan(busy.accountEvaluations.week, 10)
        XCTAssertGreaterThan(busy.deviceAccounts.week, 3)
    }

    func testRebuildBesideLiveRecordingEqualsRecordingLive() {
        // The store held the first two thirds when the daemon started; the rest arrives live
        // while the replay runs, recorded from other threads as the replay's batches go in.
        var limits = VelocityLimits()
        limits.eventsPerAccount = 16
        limits.accountsPerDevice = 6
        limits.payersPerCounterparty = 5
        let live = VelocityHarness(limits: limits)
        let events = history(start: live.clock.now())
        for event in events {
            if event.time > live.clock.now() { live.clock.advance(ms: event.time - live.clock.now()) }
            live.tracker.record(event)
        }
        let restarted = VelocityHarness(limits: limits)
        restarted.clock.advance(ms: live.clock.now() - restarted.clock.now())
        let cut = events.count * 2 / 3
        let stored = events[..<cut].sorted { $0.time < $1.time }, arriving = Array(events[cut...])
        restarted.tracker.beginRebuild()
        XCTAssertTrue(restarted.tracker.isRebuilding)
        let batches = stride(from: 0, to: stored.count, by: 64).map { stored[$0..<min($0 + 64, stored.count)] }
        DispatchQueue.concurrentPerform(iterations: 3) { worker in
            if worker == 0 {
                for batch in batches { for event in batch { restarted.tracker.record(event) } }
            } else {
                for (i, event) in arriving.enumerated() where i % 2 == worker - 1 { restarted.tracker.record(event) }
            }
        }
        restarted.tracker.finishRebuild()
        XCTAssertFalse(restarted.tracker.isRebuilding)

        var compared = 0
        for environment in Environment.allCases {
            for a in (0..<40).map({ "a\($0)" }) + [nil] {
                for (d, c) in [("d1", "c1"), ("d7", "c5"), ("d14", "c11"), (nil, nil)] as [(String?, String?)] {
                    for payment in [false, true] {
                        let one = live.signals(a, device: d, counterparty: c, payment: payment, env: environment)
                        let two = restarted.signals(a, device: d, counterparty: c, payment: payment, env: environment)
                        XCTAssertEqual(one, two, "\(environment) \(a ?? "-") \(d ?? "-") \(c ?? "-") \(payment)")
                        compared += 1
                    }
                }
            }
        }
        XCTAssertEqual(compared, 2 * 41 * 4 * 2)
        live.tracker.pruneExpired()
        restarted.tracker.pruneExpired()
        XCTAssertEqual(live.tracker.trackedSubjects, restarted.tracker.trackedSubjects)
    }

    func testConcurrentRecordingKeepsExactTotals() {
        let h = VelocityHarness()
        let threads = 8, perThread = 600
        let policy = EscalationPolicy.defaults
        DispatchQueue.concurrentPerform(iterations: threads) { t in
            for i in 0..<perThread {
                // Each thread: 3 accounts with 50 evaluations each on one shared device, two of them coached
                // payers of one mule; then 450 one-off accounts on its own device.
                let account = "t\(t)-a\(i % 3)"
                let s = h.signals(account, device: "shared", counterparty: "mule", payment: true)
                _ = policy.apply(.unknown, signals: s)
                if i < 150 {
                    h.record(
                        account, device: "shared", counterparty: i % 3 == 2 ? "other\(t)" : "mule", payment: true,
                        value: i % 3 == 2 ? .unknown : .medium)
                } else {
                    h.record("t\(t)-solo\(i)", device: "own\(t)")
                }
            }
        }
        for t in 0..<threads {
            XCTAssertEqual(h.signals("t\(t)-a0").accountEvaluations.week, 51)
            XCTAssertEqual(h.signals("t\(t)-a2").accountCoachingResults.week, 0)
            XCTAssertEqual(h.signals("x", device: "own\(t)").deviceAccounts.week, 32 + 1, "capped")
        }
        let s = h.signals("victim", device: "shared", counterparty: "mule", payment: true)
        XCTAssertEqual(s.deviceAccounts.week, 25)
        XCTAssertEqual(s.counterpartyPayers.week, 16)
        // t*-a2 paid "other*" while uncoached: never a coached payer of the mule, which has 16.
        XCTAssertEqual(s.counterpartyCoachedPayers.week, 16)
        XCTAssertEqual(h.tracker.trackedSubjects, threads * 3 + threads * (perThread - 150) + 1 + threads + 1 + threads)
    }
}

// MARK: - Escalation

final class EscalationPolicyTests: XCTestCase {
    /// Signals on which exactly one default rule fires.
    private func firing(_ kind: VelocityRule.Kind) -> VelocitySignals {
        var s = VelocitySignals()
        s.now = 1_000_000_000
        switch kind {
        case .accountVelocity:
            s.hasAccount = true
            s.accountEvaluations = VelocityCounts(hour: 10, day: 10, week: 10)
        case .newDeviceForAccount:
            s.hasAccount = true
            s.hasDevice = true
            s.accountEvaluations = VelocityCounts(hour: 1, day: 3, week: 3)
            s.accountDevices = VelocityCounts(hour: 1, day: 2, week: 2)
        case .sharedDevice:
            s.hasDevice = true
            s.deviceAccounts = VelocityCounts(hour: 4, day: 4, week: 4)
        case .counterpartyLinkedToCoaching:
            s.hasCounterparty = true
            s.counterpartyPayers = VelocityCounts(hour: 2, day: 5, week: 8)
            s.counterpartyCoachedPayers = VelocityCounts(hour: 0, day: 1, week: 2)
        case .repeatedCoachingSignals:
            s.hasAccount = true
            s.accountEvaluations = VelocityCounts(hour: 1, day: 3, week: 3)
            s.accountCoachingResults = VelocityCounts(hour: 0, day: 2, week: 2)
        case .newCounterpartyVelocity:
            s.hasAccount = true
            s.hasCounterparty = true
            s.isPayment = true
            s.accountNewCounterparties = VelocityCounts(hour: 2, day: 5, week: 5)
        }
        return s
    }

    private func merge(_ a: VelocitySignals, _ b: VelocitySignals) -> VelocitySignals {
        var s = a
        s.hasAccount = a.hasAccount || b.hasAccount
        s.hasDevice = a.hasDevice || b.hasDevice
        s.hasCounterparty = a.hasCounterparty || b.hasCounterparty
        s.isPayment = a.isPayment || b.isPayment
        if b.hasDevice && b.deviceAccounts.week > 0 { s.deviceAccounts = b.deviceAccounts }
        if b.accountEvaluations.hour >= 10 { s.accountEvaluations = b.accountEvaluations }
        if b.accountCoachingResults.week > 0 { s.accountCoachingResults = b.accountCoachingResults }
        return s
    }

    func testEachRuleAloneRaisesByOneLevel() {
        let policy = EscalationPolicy.defaults
        XCTAssertEqual(policy.apply(.unknown, signals: VelocitySignals()), Escalation(value: .unknown))
        for kind in VelocityRule.Kind.allCases {
            let s = firing(kind)
            XCTAssertEqual(
                policy.apply(.unknown, signals: s),
                Escalation(value: .medium, reasons: [kind.rawValue], raised: true), "\(kind)")
            XCTAssertEqual(
                policy.apply(.medium, signals: s),
                Escalation(value: .high, reasons: [kind.rawValue], raised: true), "\(kind)")
            XCTAssertEqual(policy.apply(.high, signals: s), Escalation(value: .high, reasons: [kind.rawValue]), "\(kind)")
        }
    }

    func testJustBelowEachThresholdNothingFires() {
        let policy = EscalationPolicy.defaults
        var s = firing(.accountVelocity)
        s.accountEvaluations.hour = 9
        XCTAssertEqual(policy.apply(.unknown, signals: s).reasons, [])
        s = firing(.sharedDevice)
        s.deviceAccounts.day = 3
        XCTAssertEqual(policy.apply(.unknown, signals: s).reasons, [])
        s = firing(.counterpartyLinkedToCoaching)
        s.counterpartyPayers.week = 9  // 2 of 9 is under a quarter: a popular payee
        XCTAssertEqual(policy.apply(.unknown, signals: s).reasons, [])
        s = firing(.repeatedCoachingSignals)
        s.accountCoachingResults.day = 1
        XCTAssertEqual(policy.apply(.unknown, signals: s).reasons, [])
        s = firing(.newCounterpartyVelocity)
        s.accountNewCounterparties.day = 4
        XCTAssertEqual(policy.apply(.unknown, signals: s).reasons, [])
        s = firing(.newCounterpartyVelocity)
        s.counterpartyLastPaidByAccount = s.now - 1  // paid before: not a new payee
        XCTAssertEqual(policy.apply(.unknown, signals: s).reasons, [])
        s = firing(.newDeviceForAccount)
        s.deviceLastSeenForAccount = s.now - oneWeek + 1
        XCTAssertEqual(policy.apply(.unknown, signals: s).reasons, [])
    }

    func testTwoRulesStillRaiseOneLevelOnly() {
        let policy = EscalationPolicy.defaults
        let s = merge(firing(.sharedDevice), firing(.accountVelocity))
        XCTAssertEqual(
            policy.apply(.unknown, signals: s),
            Escalation(value: .medium, reasons: ["accountVelocity", "sharedDevice"], raised: true))
        XCTAssertEqual(policy.apply(.medium, signals: s).value, .high)
    }

    func testShadowRulesReportWithoutApplying() {
        var rules = EscalationPolicy.defaults.rules
        for i in rules.indices where rules[i].kind == .sharedDevice { rules[i].shadow = true }
        let policy = EscalationPolicy(rules: rules)
        XCTAssertEqual(
            policy.apply(.unknown, signals: firing(.sharedDevice)),
            Escalation(value: .unknown, shadowReasons: ["sharedDevice"]))
        XCTAssertEqual(
            policy.apply(.medium, signals: merge(firing(.sharedDevice), firing(.accountVelocity))),
            Escalation(
                value: .high, reasons: ["accountVelocity"], shadowReasons: ["sharedDevice"],
                raised: true))
    }

    func testNeverLowersAndNeverSkipsALevel() {
        let policy = EscalationPolicy.defaults
        let level: [InsightValue: Int] = [.unknown: 0, .medium: 1, .high: 2]
        let kinds = VelocityRule.Kind.allCases
        var cases = [VelocitySignals()] + kinds.map(firing)
        for a in kinds { for b in kinds { cases.append(merge(firing(a), firing(b))) } }
        for value in InsightValue.allCases {
            for s in cases {
                let out = policy.apply(value, signals: s)
                XCTAssertGreaterThanOrEqual(level[out.value]!, level[value]!)
                XCTAssertLessThanOrEqual(level[out.value]!, level[value]! + 1)
                XCTAssertEqual(out.value != value, !out.reasons.isEmpty && value != .high)
                XCTAssertEqual(out.raised, out.value != value)
            }
        }
    }

    // MARK: Scripted histories through the tracker

    func testOneAccountPayingManyNewPayees() {
        let h = VelocityHarness()
        var results: [Escalation] = []
        for i in 1...6 {
            let s = h.signals("acct", device: "phone", counterparty: "payee\(i)", payment: true)
            results.append(EscalationPolicy.defaults.apply(.unknown, signals: s))
            h.tracker.record(
                VelocityEvent(
                    environment: .production, time: h.clock.now(), account: fakeHash("acct"),
                    device: fakeHash("phone"), counterparty: fakeHash("payee\(i)"), isPayment: true,
                    value: results.last!.value, raisedByVelocity: results.last!.raised))
            h.advance(60_000)
        }
        XCTAssertEqual(results[0..<4].map(\.reasons), [[], [], [], []])
        XCTAssertEqual(results[4], Escalation(value: .medium, reasons: ["newCounterpartyVelocity"], raised: true))
        XCTAssertEqual(results[5].reasons, ["newCounterpartyVelocity"])
        // Velocity's own escalations are not coaching results of the model.
        XCTAssertEqual(h.signals("acct").accountCoachingResults.week, 0)
    }

    func testOneDeviceUsedByManyAccountsAcrossARestart() {
        let h = VelocityHarness()
        var stored: [VelocityEvent] = []
        var reasons: [[String]] = []
        func evaluate(_ tracker: VelocityTracker, _ account: String) {
            let s = tracker.signals(
                for: VelocityQuery(
                    environment: .production, accounts: [fakeHash(account)],
                    devices: [fakeHash("tablet")], counterparties: [], isPayment: false))
            reasons.append(EscalationPolicy.defaults.apply(.unknown, signals: s).reasons)
            let event = h.event(account, device: "tablet")
            stored.append(event)
            tracker.record(event)
            h.advance(1000)
        }
        for a in ["a1", "a2"] { evaluate(h.tracker, a) }
        let restarted = VelocityTracker(clock: h.clock)
        restarted.rebuild(from: stored)
        for a in ["a3", "a4", "a5"] { evaluate(restarted, a) }
        XCTAssertEqual(reasons, [[], [], [], ["sharedDevice"], ["sharedDevice"]])
    }

    func testSeveralCoachedAccountsPayingOneCounterparty() {
        let h = VelocityHarness()
        var outcomes: [Escalation] = []
        for (account, model) in [("v1", InsightValue.medium), ("v2", .high), ("v3", .unknown), ("v4", .medium)] {
            let s = h.signals(account, device: "dev-\(account)", counterparty: "mule", payment: true)
            outcomes.append(EscalationPolicy.defaults.apply(model, signals: s))
            h.record(account, device: "dev-\(account)", counterparty: "mule", payment: true, value: model)
            h.advance(5 * 60_000)
        }
        XCTAssertEqual(outcomes.map(\.value), [.medium, .high, .medium, .high])
        XCTAssertEqual(outcomes.map(\.reasons), [[], [], ["counterpartyLinkedToCoaching"], ["counterpartyLinkedToCoaching"]])
    }

    func testRepeatedCoachingSignals() {
        let h = VelocityHarness()
        h.record("a", value: .medium)
        h.advance(1)
        XCTAssertEqual(EscalationPolicy.defaults.apply(.unknown, signals: h.signals("a")).reasons, [])
        h.record("a", value: .high)
        XCTAssertEqual(EscalationPolicy.defaults.apply(.unknown, signals: h.signals("a")).reasons, ["repeatedCoachingSignals"])
    }

    // MARK: The policy file

    func testTheShippedPolicyFileIsTheDefaults() throws {
        let root = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("deploy/velocity-policy.json"), encoding: .utf8)
        XCTAssertEqual(try EscalationPolicy.parse(text), .defaults)
        XCTAssertEqual(try EscalationPolicy.parse(#"{"version": 1}"#), .defaults)
        XCTAssertEqual(try EscalationPolicy.parse(#" {"version":1,"rules":{}} "#), .defaults)
    }

    func testPolicyFileModesAndFields() throws {
        let policy = try EscalationPolicy.parse(
            """
            {"version": 1, "rules": {
              "sharedDevice": {"mode": "shadow", "threshold": 6, "window": "7d"},
              "newDeviceForAccount": {"mode": "off"},
              "counterpartyLinkedToCoaching": {"minimumShare": 0.5, "threshold": 3},
              "accountVelocity": {"window": "24h", "threshold": 40}
            }}
            """)
        XCTAssertEqual(
            policy.rules.map(\.kind),
            [
                .accountVelocity, .sharedDevice, .counterpartyLinkedToCoaching,
                .repeatedCoachingSignals, .newCounterpartyVelocity
            ])
        XCTAssertEqual(policy.rules[0], VelocityRule(.accountVelocity, threshold: 40, window: .day))
        XCTAssertEqual(policy.rules[1], VelocityRule(.sharedDevice, threshold: 6, window: .week, shadow: true))
        XCTAssertEqual(
            policy.rules[2],
            VelocityRule(
                .counterpartyLinkedToCoaching, threshold: 3, window: .week,
                minimumShare: 0.5))
    }

    func testBadPolicyFilesAreRefusedWithTheField() {
        func message(_ text: String) -> String {
            do {
                _ = try EscalationPolicy.parse(text)
                return "accepted"
            } catch {
                return error.message
            }
        }
        XCTAssertEqual(
            message(#"{"version": 1, "rules": {"velocityMagic": {}}}"#),
            "rules.velocityMagic: unknown rule (known: accountVelocity, newDeviceForAccount, sharedDevice, "
                + "counterpartyLinkedToCoaching, repeatedCoachingSignals, newCounterpartyVelocity)")
        XCTAssertEqual(
            message(#"{"version": 1, "rules": {"sharedDevice": {"treshold": 3}}}"#),
            "rules.sharedDevice.treshold: unknown field (expected mode, threshold, window)")
        XCTAssertEqual(
            message(#"{"version": 1, "rules": {"sharedDevice": {"minimumShare": 0.5}}}"#),
            "rules.sharedDevice.minimumShare: unknown field (expected mode, threshold, window)")
        XCTAssertEqual(
            message(#"{"version": 1, "rules": {"sharedDevice": {"threshold": 0}}}"#),
            "rules.sharedDevice.threshold: expected a whole number from 1 to 32")
        XCTAssertEqual(
            message(#"{"version": 1, "rules": {"sharedDevice": {"threshold": 2.5}}}"#),
            "rules.sharedDevice.threshold: expected a whole number from 1 to 32")
        XCTAssertEqual(
            message(#"{"version": 1, "rules": {"sharedDevice": {"threshold": 33}}}"#),
            "rules.sharedDevice.threshold: expected a whole number from 1 to 32")
        XCTAssertEqual(
            message(#"{"version": 1, "rules": {"sharedDevice": {"window": "2h"}}}"#),
            #"rules.sharedDevice.window: expected "1h", "24h" or "7d""#)
        XCTAssertEqual(
            message(#"{"version": 1, "rules": {"sharedDevice": {"mode": "on"}}}"#),
            #"rules.sharedDevice.mode: expected "enforce", "shadow" or "off""#)
        XCTAssertEqual(
            message(#"{"version": 1, "rules": {"counterpartyLinkedToCoaching": {"minimumShare": 2}}}"#),
            "rules.counterpartyLinkedToCoaching.minimumShare: expected a number from 0 to 1")
        XCTAssertEqual(message(#"{"rules": {}}"#), "policy.version: missing (this server reads version 1)")
        XCTAssertEqual(message(#"{"version": 2}"#), "policy.version: unsupported (this server reads version 1)")
        XCTAssertEqual(
            message(#"{"version": 1, "limits": {}}"#),
            #"policy: unknown field "limits" (expected "version" and "rules")"#)
        XCTAssertEqual(message(#"{"version": 1, "rules": []}"#), "rules: expected an object keyed by rule name")
        // Syntax errors come from the JSON module, with the byte offset where reading stopped.
        for (text, reason) in [
            ("{\"version\": 1,\n \"version\": 1}", "duplicate member name at byte 16"),
            (#"{"version": 1,}"#, "expected a member name at byte 14"),
            (#"{"version": 1} x"#, "unexpected data after the document at byte 15"),
            (#"{"version": 01}"#, "leading zero in number at byte 13"),
            (#"{"v\ud800": 1}"#, "unpaired surrogate at byte 9"),
            ("", "unexpected end of document at byte 0"),
            (String(repeating: "[", count: 40), "nesting deeper than 32 at byte 32")
        ] {
            XCTAssertEqual(message(text), "policy: invalid JSON: \(reason)", text)
        }
        XCTAssertEqual(
            try EscalationPolicy.parse(#"{"version": 1, "rules": {"sharedDevice": {"mode": "\u0073hadow"}}}"#)
                .rules.first { $0.kind == .sharedDevice }?.shadow, true)
    }

    func testThresholdsAreCheckedAgainstTheCapsInForce() {
        var limits = VelocityLimits()
        limits.eventsPerAccount = 8
        XCTAssertThrowsError(
            try EscalationPolicy.parse(
                #"{"version": 1, "rules": {"accountVelocity": {"threshold": 9}}}"#,
                limits: limits))
        var small = VelocityLimits()
        small.accountsPerDevice = 3
        XCTAssertThrowsError(
            try EscalationPolicy.parse(
                #"{"version": 1, "rules": {"sharedDevice": {"mode": "shadow"}}}"#,
                limits: small),
            "the default threshold 4 cannot be reached with 3 accounts per device")
    }
}
