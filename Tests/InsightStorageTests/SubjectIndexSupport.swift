import Foundation
import InsightDomain
@testable import InsightStorage
import SQLiteClient
import Synchronization
import XCTest

/// A database file in a temporary directory, filled fast with SQL, and what the subject index's
/// tests check it with.
final class SubjectStore {
    let directory: URL
    var path: String { directory.appendingPathComponent("insightd.db").path }
    var sidePath: String { SQLiteSubjectIndex.sidePath(databasePath: path) }
    let db: SQLiteConnection

    init(name: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        db = try Database.openMigrated(path: directory.appendingPathComponent("insightd.db").path, now: 1).0
        try db.execute(
            """
            INSERT INTO callers (caller_id, name, environment, roles, rate, burst, created_at)
                SELECT 'c' || value, 'caller ' || value, 'production', 'evaluate', 10, 20, 1
                FROM (SELECT 0 AS value UNION ALL SELECT 1 UNION ALL SELECT 2);
            """)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }

    /// The subject's account hash (32 bytes of 7) and another whose first 8 bytes are the same.
    static let subject = [UInt8](repeating: 7, count: 32)
    static let sharesPrefix = [UInt8](repeating: 7, count: 8) + [UInt8](repeating: 8, count: 24)

    /// Appends `count` evaluations by callers c0…c2 with random hashes; number i (from `first`)
    /// carries `subject` when i % 3 == 0 and `sharesPrefix` when i % 5 == 0, is in the sandbox
    /// when i % 11 == 0, has no device when i % 2 == 0, and was created at a time out of rowid
    /// order, with ties.
    func fill(_ count: Int, first: Int = 1) throws {
        try db.execute(
            """
            WITH RECURSIVE n(i) AS (SELECT \(first) UNION ALL SELECT i + 1 FROM n WHERE i < \(first + count - 1))
            INSERT INTO evaluations (event_id, caller_id, environment, category, created_at, report_by, hash_key_id,
                                     account_hash, device_hash, counterparty_hash)
                SELECT 'e' || i, 'c' || (i % 3), CASE WHEN i % 11 = 0 THEN 'sandbox' ELSE 'production' END, 'payment',
                       1000 + (i * 37) % 50 + i / 10, 2000 + i, 'k1',
                       CASE WHEN i % 3 = 0 THEN x'\(Self.hex(Self.subject))'
                            WHEN i % 5 = 0 THEN x'\(Self.hex(Self.sharesPrefix))' ELSE randomblob(32) END,
                       CASE WHEN i % 2 = 1 THEN randomblob(32) END, randomblob(32)
                FROM n;
            """)
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// The newest evaluation's rowid.
    func newest() throws -> Int64 { try db.prepare("SELECT coalesce(max(rowid), 0) FROM evaluations").first { $0.int64(0) } ?? 0 }

    /// The production evaluations carrying `hash` as their account, newest first, read without
    /// any index: what every history must answer.
    func expected(_ hash: [UInt8]) throws -> [String] {
        try db.prepare(
            """
            SELECT event_id FROM evaluations WHERE account_hash = ? AND environment = 'production'
            ORDER BY created_at DESC, rowid DESC
            """
        ).query([hash]) { $0.text(0) ?? "" }
    }

    /// The non-null hashes of the evaluations: the keys a complete side file holds.
    func expectedKeys() throws -> Int {
        try db.prepare(
            """
            SELECT count(account_hash) + count(device_hash) + count(counterparty_hash) FROM evaluations
            """
        ).first { $0.int(0) } ?? 0
    }

    /// Keys in the side file, and those whose evaluation the database no longer has.
    func sideKeys() throws -> (all: Int, dangling: Int) {
        let side = try SQLiteConnection(path: sidePath, create: false)
        side.setBusyTimeout(milliseconds: 5000)
        try side.prepare("ATTACH DATABASE ? AS store").run(path)
        let all = try side.prepare("SELECT count(*) FROM entries").first { $0.int(0) } ?? -1
        let dangling =
            try side.prepare(
                """
                SELECT count(*) FROM entries s WHERE NOT EXISTS (SELECT 1 FROM store.evaluations e WHERE e.rowid = s.evaluation)
                """
            ).first { $0.int(0) } ?? -1
        return (all, dangling)
    }

    /// Every page of the account `hash`'s history, `limit` at a time.
    func history(_ index: SQLiteSubjectIndex, _ hash: [UInt8] = subject, limit: Int = 7) throws -> [String] {
        var read: [String] = [], cursor: SubjectHistoryCursor?
        repeat {
            let page = try index.subjectHistory(
                SubjectHistoryQuery(
                    kind: .account, hashes: [hash], tenant: Tenant.defaultName,
                    environment: .production, limit: limit, after: cursor))
            read += page.entries.map(\.eventId)
            cursor = page.next
        } while cursor != nil && read.count < 100_000
        return read
    }

    /// Waits until the indexer has every evaluation of the database.
    func waitIndexed(_ index: SQLiteSubjectIndex, file: StaticString = #filePath, line: UInt = #line) throws {
        let deadline = Date(timeIntervalSinceNow: 60)
        let newest = try newest()
        while try index.indexedThrough() < newest {
            guard Date() < deadline else { return XCTFail("the indexer did not catch up", file: file, line: line) }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }
}

/// Waits for a store completion.
func completed<T: Sendable>(_ body: (@escaping @Sendable (Result<T, StoreFailure>) -> Void) -> Void) throws -> T {
    let box = Mutex<Result<T, StoreFailure>?>(nil)
    let done = DispatchSemaphore(value: 0)
    body { result in
        box.withLock { $0 = result }
        done.signal()
    }
    XCTAssertEqual(done.wait(timeout: .now() + 60), .success)
    return try XCTUnwrap(box.withLock { $0 }).get()
}
