import Foundation
import InsightDomain
@testable import InsightStorage
import SQLiteClient
import Synchronization
import XCTest

/// How SQLite keeps retry entries (migration 0021): appended in order, without an index on the
/// key, found through the daemon's in-memory `RetryKeyIndex`, which is read from the table when
/// the store opens. What every backend must do with them is `StoreContract`'s (`RetryCases`).
extension StorageTests {
    func retried(_ id: String, key: [UInt8], created: Milliseconds = 1_000, expires: Milliseconds = 2_000) -> EvaluationRecord {
        var record = evaluation(id)
        record.createdAt = created
        record.reportConsumptionBy = expires
        record.retry = RetryEntry(key: key, digest: [1, 2], eventId: id, answer: Array("answer of \(id)".utf8), expiresAt: expires)
        return record
    }

    func key(_ byte: UInt8) -> [UInt8] { [UInt8](repeating: byte, count: 32) }

    func testRetryEntriesHaveNoKeyIndexAndAreFoundAgainAfterTheStoreOpensAgain() throws {
        let (ledger, writer) = try makeLedger()
        _ = try wait { ledger.record(retried("e1", key: key(1)), answer: [1], completion: $0) }.get()
        _ = try wait { ledger.record(retried("e2", key: key(2)), answer: [2], completion: $0) }.get()
        writer.stop()
        let db = try Database.open(path: path)
        XCTAssertEqual(try db.scalarText("SELECT count(*) FROM pragma_index_list('retry_entries')"), "0", "no B-tree over random keys")

        // Another ledger over the same file, as after a restart: its index is read from the table.
        let (reopened, again) = try makeLedger()
        defer { again.stop() }
        XCTAssertEqual(reopened.retryKeys.count, 2)
        XCTAssertEqual(try reopened.retryEntry(keys: [key(2)], now: 1_500)?.eventId, "e2")
        guard case .failure = wait({ reopened.record(retried("e3", key: key(1), created: 1_500), answer: [3], completion: $0) }) else {
            return XCTFail("a second evaluation was stored under a live key the reopened index holds")
        }
    }

    /// The index names rows by their number, which a VACUUM keeps (it may renumber the rows of a
    /// table without an INTEGER PRIMARY KEY).
    func testAVacuumKeepsTheRowsTheIndexNames() throws {
        let (ledger, writer) = try makeLedger()
        defer { writer.stop() }
        for byte in UInt8(1)...5 {
            _ = try wait { ledger.record(retried("e\(byte)", key: key(byte)), answer: [byte], completion: $0) }.get()
        }
        let db = try Database.open(path: path)
        try db.execute("DELETE FROM retry_entries WHERE event_id IN ('e1', 'e3')")
        try db.execute("VACUUM")
        XCTAssertEqual(try ledger.retryEntry(keys: [key(5)], now: 1_500)?.eventId, "e5")
        XCTAssertEqual(try ledger.retryEntry(keys: [key(4)], now: 1_500)?.eventId, "e4")
    }

    /// Each insert deletes the oldest two entries once they expired, and the index forgets their
    /// keys; a key whose newer entry is live keeps it.
    func testEachInsertSweepsTheOldestTwoExpiredEntries() throws {
        let (ledger, writer) = try makeLedger()
        defer { writer.stop() }
        for byte in UInt8(1)...4 {
            _ = try wait { ledger.record(retried("e\(byte)", key: key(byte)), answer: [byte], completion: $0) }.get()
        }
        // All four expired at 2_000; key 2 gets a new entry, which sweeps e1 and e2.
        _ = try wait { ledger.record(retried("n2", key: key(2), created: 2_500, expires: 3_500), answer: [9], completion: $0) }.get()
        let db = try Database.open(path: path)
        XCTAssertEqual(
            try db.prepare("SELECT event_id FROM retry_entries ORDER BY entry").query { $0.text(0) ?? "" }, ["e3", "e4", "n2"])
        XCTAssertEqual(ledger.retryKeys.count, 3, "key 1 is forgotten; key 2 names its new row")
        XCTAssertEqual(try ledger.retryEntry(keys: [key(2)], now: 2_600)?.eventId, "n2")
        _ = try wait { ledger.record(retried("n5", key: key(5), created: 2_600, expires: 3_600), answer: [5], completion: $0) }.get()
        XCTAssertEqual(
            try db.prepare("SELECT event_id FROM retry_entries ORDER BY entry").query { $0.text(0) ?? "" }, ["n2", "n5"],
            "the oldest two went; the live one stops the sweep")
        XCTAssertEqual(try ledger.retryEntry(keys: [key(2)], now: 2_700)?.eventId, "n2", "a swept row's key keeps its newer row")
    }

    /// A batch that rolls back leaves the index naming a row that is not there, or that holds
    /// another key once its number is used again: neither answers for the key.
    func testARolledBackInsertLeavesNoEntryBehind() throws {
        let (db, _) = try Database.openMigrated(path: path, now: 1)
        let writer = GroupCommitWriter(connection: db, receipts: .withEphemeralKey(instance: "test"))
        let ledger = try SQLiteLedger(writer: writer)
        // One batch: r1 under key 1, then a duplicate event id that fails, so the batch runs again
        // with savepoints; then r2 under key 1 must be refused and r3 stored.
        let results = Mutex<[String: Bool]>([:])
        let done = DispatchGroup()
        for (id, record) in [
            ("r1", retried("r1", key: key(1))), ("dup", retried("r1", key: key(7))), ("r2", retried("r2", key: key(1))),
            ("r3", retried("r3", key: key(3)))
        ] {
            done.enter()
            ledger.record(record, answer: Array(id.utf8)) { result in
                results.withLock { $0[id] = (try? result.get()) != nil }
                done.leave()
            }
        }
        writer.start()
        defer { writer.stop() }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(results.withLock { $0 }, ["r1": true, "dup": false, "r2": false, "r3": true])
        XCTAssertEqual(try ledger.retryEntry(keys: [key(1)], now: 1_500)?.eventId, "r1")
        XCTAssertNil(try ledger.retryEntry(keys: [key(7)], now: 1_500), "the failed job's key answers nothing")
        XCTAssertEqual(try ledger.retryEntry(keys: [key(3)], now: 1_500)?.eventId, "r3")
    }

    func testMigrationToEntriesInOrderKeepsEveryEntryInExpiryOrder() throws {
        let (db, all) = try database(migratedUpTo: 20)
        for (byte, expires) in [(UInt8(1), 3_000), (2, 1_000), (3, 2_000)] {
            try db.prepare("INSERT INTO retry_entries (request_key, digest, event_id, answer, expires_at) VALUES (?, ?, ?, ?, ?)")
                .run(key(byte), [byte], "e\(byte)", [byte], Int64(expires))
        }
        XCTAssertEqual(try Migrator(migrations: all).migrate(db, now: 2), all.filter { $0.version > 20 }.map(\.name))
        XCTAssertEqual(
            try db.prepare("SELECT event_id FROM retry_entries ORDER BY entry").query { $0.text(0) ?? "" }, ["e2", "e3", "e1"])
        let (ledger, writer) = try makeLedger()
        defer { writer.stop() }
        XCTAssertEqual(try ledger.retryEntry(keys: [key(1)], now: 2_500)?.eventId, "e1")
    }
}
