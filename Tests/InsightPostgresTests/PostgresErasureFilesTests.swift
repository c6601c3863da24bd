import Foundation
import InsightDomain
@testable import InsightPostgres
import PostgresClient
import PostgresTesting
import Synchronization
import XCTest

/// What an erasure leaves of the erased hashes in PostgreSQL's files (docs/privacy.md,
/// "Erasure"), scanned in the temporary cluster's data directory after a CHECKPOINT has written
/// the pages out: no live row holds them, but after the erasure's VACUUM the heap pages still
/// hold the removed row versions' bytes in their free space (PostgreSQL does not zero it), and
/// the write-ahead log holds the rows as written until its segments are recycled. A
/// `VACUUM FULL` of the two tables (the operator's step, in a maintenance window: it locks
/// them) rewrites them into new files that hold no copy.
final class PostgresErasureFilesTests: XCTestCase {
    func testWhatAnErasureLeavesInPostgreSQLsFiles() throws {
        let server = try TemporaryPostgres.shared()
        let settings = PostgresSettings(url: server.url(database: try server.createDatabase()))
        let (store, _) = try PostgresStore.open(settings: settings, now: 1, receipts: .withEphemeralKey())
        store.start()
        defer { store.stop() }
        var generator = SystemRandomNumberGenerator()
        func random() -> [UInt8] { (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) } }
        let erased = random(), kept = random()

        for i in 0..<2_000 {
            let evaluation = EvaluationRecord(
                eventId: "e\(i)", callerId: "c\(i % 3)", environment: .production, category: .payment, createdAt: 1_000,
                reportConsumptionBy: 2_000,
                subject: HashedSubject(
                    account: i % 10 == 3 ? erased : (i == 4 ? kept : random()), device: random(),
                    keyId: "k1"),
                insights: [])
            _ = try Self.wait { store.ledger.record(evaluation, answer: [7], completion: $0) }
        }
        _ = try Self.wait {
            store.authorizations.apply(
                .denied,
                for: SubjectHashes(
                    environment: .production, kind: .account, hashes: [erased],
                    activeKeyId: "k1"),
                now: 1, cooldown: 0, completion: $0)
        }
        let connection = try PostgresConnection(url: settings.url)
        try connection.execute("CHECKPOINT")
        let files = try ["evaluations", "subject_authorizations", "subject_authorizations_pkey"].map { table in
            server.dataDirectory + "/" + (try connection.query("SELECT pg_relation_filepath('\(table)')").first?.text(0) ?? "")
        }
        XCTAssertFalse(try Self.occurrences(of: erased, in: files).isEmpty, "the scan finds what is stored")

        let report = try Self.wait {
            store.erasure.erase(ErasedSubject(tenant: Tenant.defaultName, account: [erased]), completion: $0)
        }
        XCTAssertEqual(report, SubjectErasureReport(evaluations: 200, authorizations: 1))
        try connection.execute("CHECKPOINT")

        XCTAssertEqual(
            try connection.query(
                "SELECT count(*) FROM evaluations WHERE account_hash = $1",
                [.bytea(erased)]
            ).first?.int64(0), 0, "no live row")
        let remnants = try Self.occurrences(of: erased, in: files).count
        XCTAssertGreaterThan(
            remnants, 0,
            "VACUUM leaves the bytes in the pages' free space (if this fails, PostgreSQL "
                + "now zeroes it: docs/privacy.md can say so)")
        print(
            "after the erasure's VACUUM, copies of the erased hash left in the tables' and the opt-outs' index files: \(remnants) (of 201 rows)"
        )

        try connection.execute("VACUUM FULL evaluations, subject_authorizations")
        try connection.execute("CHECKPOINT")
        let rewritten = try ["evaluations", "subject_authorizations", "subject_authorizations_pkey"].map { table in
            server.dataDirectory + "/" + (try connection.query("SELECT pg_relation_filepath('\(table)')").first?.text(0) ?? "")
        }
        XCTAssertNotEqual(rewritten, files)
        XCTAssertEqual(try Self.occurrences(of: erased, in: rewritten), [], "no copy in the rewritten tables' files")
        XCTAssertFalse(try Self.occurrences(of: kept, in: rewritten).isEmpty, "another subject's hash stays")
        let wal = try FileManager.default.contentsOfDirectory(atPath: server.dataDirectory + "/pg_wal")
            .filter { $0.count == 24 }.map { server.dataDirectory + "/pg_wal/" + $0 }
        XCTAssertFalse(
            try Self.occurrences(of: erased, in: wal).isEmpty,
            "the write-ahead log keeps the rows as written until its segments are recycled")
    }

    static func occurrences(of needle: [UInt8], in paths: [String]) throws -> [String] {
        var found: [String] = []
        for path in paths {
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            guard bytes.count >= needle.count else { continue }
            for offset in 0...(bytes.count - needle.count) where bytes[offset] == needle[0] {
                if bytes[offset..<offset + needle.count].elementsEqual(needle) { found.append("\(path)@\(offset)") }
            }
        }
        return found
    }

    static func wait<T: Sendable>(_ body: (@escaping @Sendable (Result<T, StoreFailure>) -> Void) -> Void) throws -> T {
        let box = Mutex<Result<T, StoreFailure>?>(nil)
        let done = DispatchSemaphore(value: 0)
        body { result in
            box.withLock { $0 = result }
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        return try XCTUnwrap(box.withLock { $0 }).get()
    }
}
