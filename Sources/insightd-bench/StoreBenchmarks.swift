// The group-commit store: evaluations per second through SQLiteLedger with 1 and with 64
// submitters that each wait for their commit before sending the next (like 1 or 64 keep-alive
// connections), on a real file with synchronous=FULL in a temporary directory; the last also with
// every evaluation carrying a training vector (a caller with training capture on).
import Crypto
import Foundation
import InsightDomain
import InsightStorage
import SQLiteClient
import Synchronization

enum StoreBenchmarks {
    /// How event and insight ids are made.
    enum Ids: Sendable {
        /// Random version-4 UUIDs (`SecureRandom.uuid`): the alternative to time-ordered ids,
        /// kept to show what ordered ids save.
        case random
        /// Ids that grow with time, as the evaluate endpoint makes them (version 7): each
        /// insert lands on the right edge of the primary-key indexes instead of a random page.
        case ordered
    }

    static func all() -> [MicroBenchmark] {
        [
            (1, Ids.random, 0, false, ""), (64, .random, 0, false, ""), (64, .ordered, 0, false, ".orderedIds"),
            (64, .ordered, 1, false, ".orderedIds.shadow1"), (64, .ordered, 0, true, ".orderedIds.capture")
        ]
        .map { submitters, ids, shadows, capture, suffix in
            let name = "store.record.\(submitters)\(suffix)"
            let what =
                (ids == .random ? "random v4 ids (the daemon's before UUIDv7)" : "time-ordered ids (as the daemon makes them)")
                + (shadows == 0 ? "" : ", and \(shadows) shadow answer (INSIGHTD_MODEL_SHADOW) each")
                + (capture ? ", each with a training vector (training capture on)" : "")
            return MicroBenchmark(
                name: name,
                note:
                    "SQLiteLedger.record, \(submitters) submitter\(submitters == 1 ? "" : "s"), \(what); latency = submit to durable; ops/s = evaluations committed per second"
            ) { options in
                try run(
                    name: name, submitters: submitters, ids: ids, shadows: shadows, capture: capture,
                    seconds: options.storeSeconds)
            }
        }
    }

    private final class Shared: Sendable {
        let next = Atomic<Int>(0)
        let latencies = Mutex<[UInt64]>([])
        let failures = Atomic<Int>(0)
    }

    static func run(
        name: String, submitters: Int, ids: Ids, shadows: Int = 0, capture: Bool = false,
        seconds: Double
    ) throws -> Measurement {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("insightd-bench-\(getpid())-\(submitters)")
        try? FileManager.default.removeItem(at: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("insightd.db").path

        let (store, _) = try SQLiteStore.open(
            settings: SQLiteSettings(path: path), now: 1,
            receipts: ReceiptIssuer.withEphemeralKey(instance: "bench"))
        // The writer alone: the figure is the ledger's, without the subject indexer the daemon runs beside it.
        let writer = store.writer
        writer.start()
        let ledger = store.ledger
        let shared = Shared()

        // Warm-up: a few commits so the file, WAL and statement cache exist.
        for i in 0..<20 { try recordAndWait(ledger, record(index: -1 - i, ids: ids, shadows: shadows)) }

        let done = DispatchGroup()
        let started = monotonicNanoseconds()
        let deadline = started + UInt64(seconds * 1e9)
        for _ in 0..<submitters {
            done.enter()
            let thread = Thread {
                var mine: [UInt64] = []
                let semaphore = DispatchSemaphore(value: 0)
                while monotonicNanoseconds() < deadline {
                    let index = shared.next.wrappingAdd(1, ordering: .relaxed).oldValue
                    var evaluation = record(index: index, ids: ids, shadows: shadows)
                    if capture {
                        evaluation.trainingVector = TrainingVector(
                            insightId: evaluation.insights[0].insightId, modelVersion: "2.0", tenant: "default",
                            features: (0..<28).map { Double(index &+ $0) * 0.25 })
                    }
                    let t0 = monotonicNanoseconds()
                    ledger.record(evaluation, answer: Array(evaluation.eventId.utf8)) { result in
                        if case .failure = result { shared.failures.wrappingAdd(1, ordering: .relaxed) }
                        semaphore.signal()
                    }
                    semaphore.wait()
                    mine.append(monotonicNanoseconds() - t0)
                }
                shared.latencies.withLock { $0.append(contentsOf: mine) }
                done.leave()
            }
            thread.start()
        }
        done.wait()
        let elapsed = Double(monotonicNanoseconds() - started) / 1e9
        writer.stop()

        let failures = shared.failures.load(ordering: .relaxed)
        let samples = shared.latencies.withLock { $0 }
        let check = try SQLiteConnection(path: path)
        let stored = Int(try check.scalarText("SELECT count(*) FROM evaluations") ?? "") ?? -1
        guard failures == 0, stored == samples.count + 20 else {
            throw BenchError("\(name): \(failures) failed, \(stored) stored for \(samples.count + 20) acknowledged")
        }
        return Measurement(
            name: name, note: "", samples: samples,
            throughput: Double(samples.count) / elapsed)
    }

    private static func recordAndWait(_ ledger: SQLiteLedger, _ evaluation: EvaluationRecord) throws {
        let semaphore = DispatchSemaphore(value: 0)
        let failed = Atomic<Bool>(false)
        ledger.record(evaluation, answer: Array(evaluation.eventId.utf8)) { result in
            if case .failure = result { failed.store(true, ordering: .relaxed) }
            semaphore.signal()
        }
        semaphore.wait()
        if failed.load(ordering: .relaxed) { throw BenchError("warm-up record failed") }
    }

    /// An evaluation as the evaluate endpoint stores it: three 32-byte subject hashes, one
    /// insight with a value and three reasons (and `shadows` shadow answers, each with a score bin).
    static func record(index: Int, ids: Ids, shadows: Int = 0) -> EvaluationRecord {
        let eventId: String, insightId: String
        switch ids {
        case .random:
            eventId = SecureRandom.uuid()
            insightId = SecureRandom.uuid()
        case .ordered:
            let ids = SecureRandom.uuidV7(count: 2, milliseconds: Int64(Date().timeIntervalSince1970 * 1000))
            eventId = ids[0]
            insightId = ids[1]
        }
        func hash(_ tag: UInt8) -> [UInt8] {
            var bytes = [UInt8](repeating: tag, count: 32)
            var v = UInt64(bitPattern: Int64(index))
            for k in 0..<8 { bytes[k] = UInt8(truncatingIfNeeded: v); v >>= 8 }
            return bytes
        }
        let now: Int64 = 1_798_000_000_000 + Int64(index)
        return EvaluationRecord(
            eventId: eventId, callerId: "bench", environment: .production, category: .payment,
            createdAt: now, reportConsumptionBy: now + 900_000,
            subject: HashedSubject(account: hash(1), device: hash(2), counterparty: hash(3), keyId: "0011223344556677"),
            insights: [
                InsightRecord(
                    insightId: insightId, type: "isLikelyBeingCoached", schemaVersion: 1, modelVersion: "2.0",
                    newestModelVersion: "2.0",
                    outcome: .value(.high, reasons: ["activeCallDuringSession", "segmentedTyping", "pastedPayee"]), scoreBin: 9)
            ],
            shadowInsights: (0..<shadows).map { k in
                InsightRecord(
                    insightId: EvaluationIdentifiers.insightId(eventId: eventId, position: EvaluationRecord.maxServedInsights + k)
                        ?? insightId + "-s\(k)",
                    type: "isLikelyBeingCoached", schemaVersion: 1, modelVersion: "1.0", newestModelVersion: "2.0",
                    outcome: .value(.medium, reasons: ["activeCallDuringSession", "segmentedTyping"]), scoreBin: 8)
            })
    }
}
