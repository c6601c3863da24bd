import Foundation
import InsightDomain
@testable import InsightStorage
import SQLiteClient
import Synchronization
import XCTest

/// The subject index of the embedded store (`SQLiteSubjectIndex`): a side file kept off the
/// commit path, whose history, rebuild, erasure and retention must all be right whatever the
/// indexer's lag.
final class SubjectIndexTests: XCTestCase {
    /// Before a side file is ready, at every watermark the indexer passes, and with rows past
    /// it, a history reads the same evaluations as a scan of the database: the side keys up to
    /// the watermark, the tail after it, a hash that only shares the subject's prefix left out.
    func testEveryWatermarkAnswersWhatAScanReads() throws {
        let store = try SubjectStore(name: "index-lag")
        try store.fill(400)
        let expected = try store.expected(SubjectStore.subject)
        XCTAssertGreaterThan(expected.count, 100)
        let index = try SQLiteSubjectIndex(databasePath: store.path, pace: .init(batch: 37))
        XCTAssertEqual(try store.history(index), expected, "no side file yet: all from the tail")

        let side = try index.open()
        index.ready(side)
        var watermarks: [Int64] = []
        repeat {
            watermarks.append(try index.indexedThrough())
            XCTAssertEqual(try store.history(index), expected, "watermark \(watermarks.last!)")
            XCTAssertEqual(try store.history(index, limit: 500), expected, "watermark \(watermarks.last!), one page")
        } while try index.indexBatch(side)
        XCTAssertEqual(watermarks.count, 11, "the indexer went batch by batch: \(watermarks)")
        XCTAssertEqual(try store.history(index), expected, "all indexed")
        XCTAssertEqual(try store.history(index, SubjectStore.sharesPrefix), try store.expected(SubjectStore.sharesPrefix))

        try store.fill(100, first: 401)
        XCTAssertEqual(try store.history(index), try store.expected(SubjectStore.subject), "indexed, then a tail")
        XCTAssertEqual(try store.sideKeys().all, try store.expectedKeys() - 100 - 50 - 100, "the tail is not in the side file")
    }

    /// A batch's keys and its watermark are two commits of the side file (one transaction would
    /// copy every leaf the keys touch into a statement journal first): keys past the watermark,
    /// as a crash between the two leaves them, are not read, and the next batch goes past them.
    func testKeysPastTheWatermarkAreNotReadAndTheNextBatchGoesOn() throws {
        let store = try SubjectStore(name: "index-past-watermark")
        try store.fill(300)
        let index = try SQLiteSubjectIndex(databasePath: store.path, pace: .init(batch: 1_000))
        let side = try index.open()
        index.ready(side)
        XCTAssertFalse(try index.indexBatch(side))
        try store.fill(200, first: 301)
        XCTAssertFalse(try index.indexBatch(side))
        let through = try index.indexedThrough()
        // The second batch's keys stay; its watermark is lost.
        try side.execute("UPDATE progress SET indexed = \(through - 200) WHERE id = 1")
        XCTAssertEqual(try index.indexedThrough(), through - 200)
        XCTAssertEqual(try store.sideKeys().all, try store.expectedKeys(), "the keys past the watermark are there")
        XCTAssertEqual(try store.history(index), try store.expected(SubjectStore.subject), "each evaluation read once")
        XCTAssertFalse(try index.indexBatch(side))
        XCTAssertEqual(try index.indexedThrough(), through)
        XCTAssertEqual(try store.sideKeys().all, try store.expectedKeys())
        XCTAssertEqual(try store.history(index), try store.expected(SubjectStore.subject))
    }

    /// A side file deleted, damaged, or describing other evaluations (the database restored
    /// from a backup) is recreated empty and filled again; histories stay right meanwhile.
    func testAMissingDamagedOrForeignSideFileIsRebuilt() throws {
        let store = try SubjectStore(name: "index-rebuild")
        try store.fill(3_000)
        let expected = try store.expected(SubjectStore.subject)
        let first = try SQLiteSubjectIndex(databasePath: store.path, pace: .init(batch: 500, interval: .milliseconds(5)))
        first.start()
        try store.waitIndexed(first)
        first.stop()
        XCTAssertEqual(try store.sideKeys().all, try store.expectedKeys())

        let damages: [(String, () throws -> Void)] = [
            ("deleted", { try FileManager.default.removeItem(atPath: store.sidePath) }),
            (
                "damaged",
                {
                    let handle = try XCTUnwrap(FileHandle(forWritingAtPath: store.sidePath))
                    try handle.write(contentsOf: Data(repeating: 0x5A, count: 4096))
                    try handle.close()
                }
            ),
            (
                "foreign",
                {
                    let side = try SQLiteConnection(path: store.sidePath, create: false)
                    side.setBusyTimeout(milliseconds: 5000)
                    try side.execute(
                        """
                        INSERT INTO entries VALUES (9, 9, 9, 9);
                        UPDATE progress SET created_at = created_at + 1
                        """)
                }
            ),
            (
                "another format",
                {
                    let side = try SQLiteConnection(path: store.sidePath, create: false)
                    side.setBusyTimeout(milliseconds: 5000)
                    try side.execute("INSERT INTO entries VALUES (9, 9, 9, 9); PRAGMA user_version = 99")
                }
            )
        ]
        for (damage, apply) in damages {
            try apply()
            let index = try SQLiteSubjectIndex(databasePath: store.path, pace: .init(batch: 500, interval: .milliseconds(5)))
            XCTAssertEqual(try store.history(index), expected, "\(damage): from the tail before the indexer starts")
            index.start()
            XCTAssertEqual(try store.history(index), expected, "\(damage): while it rebuilds")
            try store.waitIndexed(index)
            XCTAssertEqual(try store.history(index), expected, "\(damage): rebuilt")
            index.stop()
            XCTAssertEqual(try store.sideKeys().all, try store.expectedKeys(), "\(damage): every key once, no other")
        }
    }

    /// An erasure while the indexer lags behind evaluations that carry the subject leaves no key
    /// of it in the side file, then or after the indexer has caught up: the keys leave through
    /// the indexer's thread, after any batch that read the rows before they were unlinked.
    func testErasureWhileTheIndexerLagsLeavesNoKeyBehind() throws {
        let store = try SubjectStore(name: "index-erase")
        let (db, _) = try Database.openMigrated(path: store.path, now: 1)
        let writer = GroupCommitWriter(connection: db, receipts: .withEphemeralKey(instance: "test"))
        writer.start()
        defer { writer.stop() }
        let index = try SQLiteSubjectIndex(databasePath: store.path, pace: .init(batch: 20, interval: .milliseconds(1)))
        index.start()
        defer { index.stop() }
        let ledger = try SQLiteLedger(writer: writer)
        let subject = [UInt8](repeating: 3, count: 32)
        let prefix = SubjectIndexEntry.prefix(subject)

        for round in 0..<3 {
            // The subject in one of every five, then others only, so that the indexer is still
            // reading the subject's rows when the erasure comes.
            let group = DispatchGroup()
            for i in 0..<1_500 {
                group.enter()
                let mine = i < 1_000 && i % 5 == 0
                var generator = SystemRandomNumberGenerator()
                let hash = mine ? subject : (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
                ledger.record(
                    EvaluationRecord(
                        eventId: "r\(round)-\(i)", callerId: "c\(i % 3)", environment: .production, category: .payment,
                        createdAt: Milliseconds(1_000 + i), reportConsumptionBy: 9_000,
                        subject: HashedSubject(account: hash, device: nil, counterparty: mine ? subject : nil, keyId: "k1"),
                        insights: []), answer: [7]
                ) { _ in group.leave() }
                if i == 1_000 { group.wait() }
            }
            let report = try completed {
                SQLiteSubjectErasure(writer: writer, index: index).erase(
                    ErasedSubject(tenant: Tenant.defaultName, account: [subject], counterparty: [subject]), completion: $0)
            }
            XCTAssertEqual(report.evaluations, 200, "round \(round)")
            XCTAssertEqual(group.wait(timeout: .now() + 60), .success)
            let side = try SQLiteConnection(path: store.sidePath, create: false)
            side.setBusyTimeout(milliseconds: 5000)
            let keys = try side.prepare("SELECT count(*) FROM entries WHERE prefix = ?")
            XCTAssertEqual(try keys.first([prefix]) { $0.int(0) }, 0, "round \(round): right after the erasure")
            try store.waitIndexed(index)
            XCTAssertEqual(try keys.first([prefix]) { $0.int(0) }, 0, "round \(round): once the indexer caught up")
            XCTAssertEqual(try store.history(index, subject), [])
            XCTAssertEqual(try store.sideKeys().all, try store.expectedKeys(), "round \(round): every other key is there")
        }
    }

    /// A batch the indexer read before an erasure unlinked its rows, and commits after, does
    /// not leave their keys behind: the erasure's keys leave after it, on the indexer's thread.
    func testABatchReadBeforeAnErasureCannotPutItsKeysBack() throws {
        let store = try SubjectStore(name: "index-race")
        try store.fill(300)
        let (db, _) = try Database.openMigrated(path: store.path, now: 1)
        let writer = GroupCommitWriter(connection: db, receipts: .withEphemeralKey(instance: "test"))
        writer.start()
        defer { writer.stop() }
        let index = try SQLiteSubjectIndex(databasePath: store.path, pace: .init(batch: 1_000, interval: .milliseconds(1)))
        let read = DispatchSemaphore(value: 0), commit = DispatchSemaphore(value: 0)
        let held = Atomic<Bool>(false)
        index.batchRead = {
            // Holds the first batch (every evaluation) between its read and its commit.
            guard !held.exchange(true, ordering: .relaxed) else { return }
            read.signal()
            commit.wait()
        }
        index.start()
        defer { index.stop() }
        XCTAssertEqual(read.wait(timeout: .now() + 30), .success)

        let erased = Mutex<Result<SubjectErasureReport, StoreFailure>?>(nil)
        let done = DispatchSemaphore(value: 0)
        SQLiteSubjectErasure(writer: writer, index: index).erase(
            ErasedSubject(tenant: Tenant.defaultName, account: [SubjectStore.subject])
        ) { result in
            erased.withLock { $0 = result }
            done.signal()
        }
        // The rows are unlinked by now or soon; the erasure must not be done before the batch.
        XCTAssertEqual(done.wait(timeout: .now() + 1), .timedOut, "the erasure waits for the batch in flight")
        commit.signal()
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(try erased.withLock { $0 }?.get().evaluations, 100)
        let side = try SQLiteConnection(path: store.sidePath, create: false)
        side.setBusyTimeout(milliseconds: 5000)
        XCTAssertEqual(
            try side.prepare("SELECT count(*) FROM entries WHERE kind = 1 AND prefix = ? AND evaluation % 5 <> 0")
                .first([SubjectIndexEntry.prefix(SubjectStore.subject)]) { $0.int(0) }, 0)
        XCTAssertEqual(try store.sideKeys().all, try store.expectedKeys())
        XCTAssertEqual(try store.history(index), [])
    }

    /// The retention purge takes the keys of the evaluations it deletes out of the side file,
    /// the daemon's (through the indexer) and the operator tool's (directly).
    func testRetentionLeavesNoKeyOfADeletedEvaluation() throws {
        let store = try SubjectStore(name: "index-retention")
        try store.fill(5_000)
        let (db, _) = try Database.openMigrated(path: store.path, now: 1)
        let writer = GroupCommitWriter(connection: db, receipts: .withEphemeralKey(instance: "test"))
        writer.start()
        defer { writer.stop() }
        let index = try SQLiteSubjectIndex(databasePath: store.path, pace: .init(batch: 700, interval: .milliseconds(2)))
        index.start()
        try store.waitIndexed(index)
        XCTAssertEqual(try store.sideKeys().all, try store.expectedKeys())

        let retention = SQLiteRetention(writer: writer, index: index)
        var deleted = 0
        while true {
            let batch = try completed { retention.purgeBatch(olderThan: 1_200, completion: $0) }
            if batch.evaluations == 0 { break }
            deleted += batch.evaluations
        }
        XCTAssertGreaterThan(deleted, 1_000)
        var keys = try store.sideKeys()
        XCTAssertEqual(keys.dangling, 0, "the daemon's purge")
        XCTAssertEqual(keys.all, try store.expectedKeys())
        XCTAssertEqual(try store.history(index), try store.expected(SubjectStore.subject))
        index.stop()

        let report = try Retention(try Database.open(path: store.path, create: false)).purge(olderThan: 1_400)
        XCTAssertGreaterThan(report.evaluations, 1_000)
        keys = try store.sideKeys()
        XCTAssertEqual(keys.dangling, 0, "the tool's purge")
        XCTAssertEqual(keys.all, try store.expectedKeys())
    }
}
