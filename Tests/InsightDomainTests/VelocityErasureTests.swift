import InsightDomain
import InsightTesting
import XCTest

/// Erasing a subject from `VelocityTracker` leaves the state that recording the same
/// evaluations without its hashes gives (what a rebuild from the erased store gives): the erased
/// subject answers as a never-seen one, and every other subject as before, except where the
/// erased one appeared in its lists.
final class VelocityErasureTests: XCTestCase {
    private func hash(_ label: String) -> [UInt8] { Array(("h:" + label).utf8) + Array(repeating: 3, count: 24) }

    func testAnErasedSubjectIsForgottenAndTheStateIsWhatARebuildWithoutItGives() throws {
        for seed in 1...4 as ClosedRange<UInt64> {
            let clock = ManualClock()
            let tracker = VelocityTracker(clock: clock), reference = VelocityTracker(clock: clock)
            var random = SplitMix64(seed: seed)
            func pick(_ n: Int) -> Int { Int(random.next() % UInt64(n)) }
            let accounts = (0..<6).map { "acct\($0)" }, devices = (0..<4).map { "dev\($0)" }
            let counterparties = (0..<4).map { "cp\($0)" }
            let values: [InsightValue?] = [nil, .unknown, .medium, .high]
            // acct0 also under a rotated key's hash.
            let erased = ErasedSubject(
                tenant: "t", account: [hash("acct0"), hash("old/acct0")], device: [hash("dev0")],
                counterparty: [hash("cp0")])
            var events: [VelocityEvent] = []
            for i in 0..<200 {
                let account = accounts[pick(accounts.count)]
                let event = VelocityEvent(
                    environment: pick(3) == 0 ? .sandbox : .production, time: clock.now() - Milliseconds(1_000 + 997 * i),
                    account: hash(account == "acct0" && pick(2) == 0 ? "old/acct0" : account),
                    device: pick(4) == 0 ? nil : hash(devices[pick(devices.count)]),
                    counterparty: pick(3) == 0 ? nil : hash(counterparties[pick(counterparties.count)]),
                    isPayment: pick(2) == 0, value: values[pick(values.count)], raisedByVelocity: pick(4) == 0)
                events.append(event)
                tracker.record(event)
                // As the store keeps it after erasure: the rows stay, without the subject's hashes.
                var unlinked = event
                if let a = unlinked.account, erased.account.contains(a) { unlinked.account = nil }
                if let d = unlinked.device, erased.device.contains(d) { unlinked.device = nil }
                if let c = unlinked.counterparty, erased.counterparty.contains(c) { unlinked.counterparty = nil }
                reference.record(unlinked)
            }
            let queries = Self.queries(
                accounts: accounts.map { [hash($0)] } + [[hash("acct0"), hash("old/acct0")]],
                devices: devices.map(hash), counterparties: counterparties.map(hash))
            let differed = queries.filter { tracker.signals(for: $0) != reference.signals(for: $0) }.count
            XCTAssertGreaterThan(differed, 0, "seed \(seed): the subject counted before erasure")

            try tracker.erase(erased)

            for query in queries {
                XCTAssertEqual(tracker.signals(for: query), reference.signals(for: query), "seed \(seed): \(query)")
            }
            try tracker.erase(erased)
            XCTAssertEqual(tracker.signals(for: queries[0]), reference.signals(for: queries[0]), "a second erasure changes nothing")
        }
    }

    /// Every combination of one account (or none), device (or none), counterparty (or none) and
    /// payment, in both environments.
    static func queries(accounts: [[[UInt8]]], devices: [[UInt8]], counterparties: [[UInt8]]) -> [VelocityQuery] {
        var queries: [VelocityQuery] = []
        for environment in [Environment.production, .sandbox] {
            for account in [[]] + accounts {
                for device in [nil] + devices {
                    for counterparty in [nil] + counterparties {
                        for payment in [false, true] {
                            queries.append(
                                VelocityQuery(
                                    environment: environment, accounts: account,
                                    devices: device.map { [$0] } ?? [],
                                    counterparties: counterparty.map { [$0] } ?? [],
                                    isPayment: payment))
                        }
                    }
                }
            }
        }
        return queries
    }
}
