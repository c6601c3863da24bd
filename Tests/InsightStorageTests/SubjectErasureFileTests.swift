import Foundation
import InsightDomain
@testable import InsightStorage
import SQLiteClient
import Synchronization
import XCTest

/// Erasure on SQLite leaves no byte of the erased hashes in the state directory's files (the
/// database, the subject index's side file, their write-ahead logs and shared memory), free
/// space included: real files, written by a real group-commit writer and indexer as the
/// daemon's, scanned byte by byte afterwards, for each hash and for the prefix of it that the
/// side file keeps.
final class SubjectErasureFileTests: XCTestCase {
    var directory: URL!
    var path: String { directory.appendingPathComponent("insightd.db").path }

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("erasure-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: directory) }

    static func randomHash() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// Where `needle` occurs in any file of the directory, as "file@offset".
    func occurrences(of needle: [UInt8]) throws -> [String] {
        var found: [String] = []
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            let bytes = [UInt8](try Data(contentsOf: directory.appendingPathComponent(name)))
            guard bytes.count >= needle.count else { continue }
            for offset in 0...(bytes.count - needle.count) where bytes[offset] == needle[0] {
                if bytes[offset..<offset + needle.count].elementsEqual(needle) { found.append("\(name)@\(offset)") }
            }
        }
        return found
    }

    func wait<T: Sendable>(_ body: (@escaping @Sendable (Result<T, StoreFailure>) -> Void) -> Void) throws -> T {
        let box = Mutex<Result<T, StoreFailure>?>(nil)
        let done = DispatchSemaphore(value: 0)
        body { result in
            box.withLock { $0 = result }
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        return try XCTUnwrap(box.withLock { $0 }).get()
    }

    func testNoByteOfAnErasedHashRemainsInTheDatabaseFiles() throws {
        let (db, _) = try Database.openMigrated(path: path, now: 1, cacheKiB: Database.writerCacheKiB)
        let writer = GroupCommitWriter(connection: db, receipts: .withEphemeralKey(instance: "test"))
        writer.start()
        defer { writer.stop() }
        let index = try SQLiteSubjectIndex(databasePath: path, pace: .init(batch: 500, interval: .milliseconds(5)))
        index.start()
        defer { index.stop() }
        let ledger = try SQLiteLedger(writer: writer)
        let authorizations = try SQLiteAuthorizationStore(path: path, writer: writer)
        let reader = try Database.open(path: path, create: false)
        let erased = (account: [Self.randomHash(), Self.randomHash()], device: Self.randomHash())
        let kept = Self.randomHash()

        // Enough evaluations for page splits, automatic checkpoints and a write-ahead log that
        // holds earlier images of the pages; the erased subject in one of every ten.
        for i in 0..<6_000 {
            let mine = i % 10 == 3
            let evaluation = EvaluationRecord(
                eventId: "e\(i)", callerId: "c\(i % 3)", environment: .production, category: .payment,
                createdAt: Milliseconds(1_000 + i), reportConsumptionBy: 9_000,
                subject: HashedSubject(
                    account: mine ? erased.account[i % 2] : (i == 4 ? kept : Self.randomHash()),
                    device: mine ? erased.device : Self.randomHash(),
                    counterparty: Self.randomHash(), keyId: "k\(i % 2)"),
                insights: [
                    InsightRecord(
                        insightId: "e\(i)-i", type: "isLikelyBeingCoached", schemaVersion: 1,
                        modelVersion: "2.0", newestModelVersion: "2.0",
                        outcome: .value(.medium, reasons: []))
                ])
            if i % 500 == 0 {
                // A reader between batches, as request threads read beside the writer.
                _ = try reader.scalarText("SELECT count(*) FROM evaluations")
            }
            _ = try wait { ledger.record(evaluation, answer: [7], completion: $0) }
        }
        for (hash, kind) in [
            (erased.account[0], AuthorizableKind.account), (erased.account[1], .account),
            (erased.device, .device)
        ] {
            _ = try wait {
                authorizations.apply(
                    .denied,
                    for: SubjectHashes(
                        environment: .production, kind: kind, hashes: [hash],
                        activeKeyId: "k1"),
                    now: 1, cooldown: 0, completion: $0)
            }
        }
        // The side file's keys hold the first 8 bytes of a hash.
        func prefix(_ hash: [UInt8]) -> [UInt8] { Array(hash[0..<8]) }
        let deadline = Date(timeIntervalSinceNow: 60)
        while try index.indexedThrough() < 6_000 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        for hash in erased.account + [erased.device, kept] {
            XCTAssertFalse(try occurrences(of: hash).isEmpty, "the scan finds what is stored")
        }
        for hash in [erased.account[1], erased.device, kept] {  // account[0] is only in an opt-out
            XCTAssertTrue(
                try occurrences(of: prefix(hash)).contains { $0.hasPrefix("insightd-subjects.db") },
                "the side file holds the prefix")
        }

        let report = try wait {
            SQLiteSubjectErasure(writer: writer, index: index).erase(
                ErasedSubject(tenant: Tenant.defaultName, account: erased.account, device: [erased.device]), completion: $0)
        }
        XCTAssertEqual(report, SubjectErasureReport(evaluations: 600, authorizations: 3))

        for hash in erased.account + [erased.device] {
            XCTAssertEqual(try occurrences(of: hash), [], "no byte of an erased hash remains")
            XCTAssertEqual(try occurrences(of: prefix(hash)), [], "no byte of its prefix remains")
        }
        XCTAssertFalse(try occurrences(of: kept).isEmpty, "another subject's hash stays")
        XCTAssertTrue(
            try occurrences(of: prefix(kept)).contains { $0.hasPrefix("insightd-subjects.db") },
            "and its prefix in the side file")
        XCTAssertEqual(try reader.scalarText("SELECT count(*) FROM evaluations"), "6000", "every row stays")

        // The writer goes on as before (secure_delete was for the erasing job only).
        XCTAssertEqual(try wait { writer.submit({ db in try db.scalarText("PRAGMA secure_delete") }, completion: $0) }, "0")
    }

    /// Opt-outs are keyed by their hash, so thousands of them split and rebalance the key's
    /// B-tree at random places, which leaves copies of keys in pages' free space; erasing some of
    /// them afterwards must leave none of their bytes.
    func testErasedOptOutsAmongThousandsLeaveNoByte() throws {
        let (db, _) = try Database.openMigrated(path: path, now: 1, cacheKiB: Database.writerCacheKiB)
        let writer = GroupCommitWriter(connection: db, receipts: .withEphemeralKey(instance: "test"))
        writer.start()
        defer { writer.stop() }
        let index = try SQLiteSubjectIndex(databasePath: path, pace: .init(batch: 500, interval: .milliseconds(5)))
        index.start()
        defer { index.stop() }
        let authorizations = try SQLiteAuthorizationStore(path: path, writer: writer)
        let hashes = (0..<3_000).map { _ in Self.randomHash() }
        let group = DispatchGroup()
        for hash in hashes {
            group.enter()
            authorizations.apply(
                .denied,
                for: SubjectHashes(
                    environment: .production, kind: .account, hashes: [hash],
                    activeKeyId: "k1"),
                now: 1, cooldown: 0
            ) { _ in group.leave() }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 120), .success)
        let erased = Array(hashes.prefix(300))
        for hash in erased.prefix(3) { XCTAssertFalse(try occurrences(of: hash).isEmpty, "the scan finds what is stored") }
        let report = try wait {
            SQLiteSubjectErasure(writer: writer, index: index).erase(
                ErasedSubject(tenant: Tenant.defaultName, account: erased), completion: $0)
        }
        XCTAssertEqual(report, SubjectErasureReport(evaluations: 0, authorizations: 300))
        var left: [String] = []
        for hash in erased { left += try occurrences(of: hash) }
        XCTAssertEqual(left, [], "no byte of an erased opt-out's hash remains")
        XCTAssertFalse(try occurrences(of: hashes[2_999]).isEmpty, "the others stay")
    }
}
