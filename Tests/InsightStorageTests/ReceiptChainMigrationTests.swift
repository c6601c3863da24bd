import Crypto
import Foundation
import InsightDomain
import InsightStorage
import SQLiteClient
import XCTest

/// Migration 0024 on a database that holds heads and a retry entry made before it: the heads stay
/// as they were, in their order, as each instance's chain of no tenant, and still verify; the
/// entry still names its head; the instance's new heads start chains of their own.
final class ReceiptChainMigrationTests: XCTestCase {
    func testHeadsOfNoTenantStayAndKeepVerifyingBesideTheNewChains() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("chains-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("insightd.db").path
        let db = try Database.open(path: path)
        let all = try Migrator.bundled()
        _ = try Migrator(migrations: all.filter { $0.version < 24 }).migrate(db, now: 1)
        let issuer = ReceiptIssuer.withEphemeralKey(instance: "old-1")
        var old: [ReceiptBatch] = []
        for k in 0..<3 {
            let batch = try XCTUnwrap(issuer.issue(leafHashes: [MerkleTree.leafHash(of: [UInt8(k)])]))
            issuer.committed(batch)
            old.append(batch)
            try db.prepare("INSERT INTO receipt_heads (instance, sequence, made_at, jws, leaves) VALUES (?, ?, ?, ?, ?)")
                .run("old-1", batch.head.head.sequence, batch.head.head.time, batch.head.jws, batch.leaves)
        }
        try db.prepare(
            """
            INSERT INTO retry_entries (request_key, digest, event_id, answer, expires_at, head_instance, head_sequence)
            VALUES (?, ?, 'e1', x'00', 9000000000000, 'old-1', 1)
            """
        ).run([UInt8](repeating: 5, count: 32), [UInt8](repeating: 6, count: 32))
        XCTAssertEqual(try Migrator(migrations: all).migrate(db, now: 2).count, all.count - 23)

        let log = try SQLiteReceiptLog(path: path)
        let legacy = ReceiptChain(instance: "old-1", tenant: nil, environment: nil)
        let kept = try log.heads(of: legacy, from: 0, limit: 10, withLeaves: true)
        XCTAssertEqual(kept.map(\.signed), old.map(\.head), "the heads as they were, in order")
        var audit = ReceiptChainAudit(
            chain: legacy,
            keys: Dictionary(
                uniqueKeysWithValues: issuer.keys.published().compactMap { key in
                    Ed25519VerifyingKey(rawRepresentation: key.publicKey).map { (key.keyId, $0) }
                }))
        for head in kept { XCTAssertTrue(audit.check(head), "\(audit.broken.map(\.reason) ?? "")") }
        XCTAssertEqual(audit.heads, 3)
        let ledger = try SQLiteLedger(writer: GroupCommitWriter(connection: db, receipts: issuer))
        XCTAssertEqual(
            try ledger.retryEntry(keys: [[UInt8](repeating: 5, count: 32)], now: 3)?.firstHead?.signed, old[1].head,
            "the entry names its head still")
        // The instance goes on: a tenant's first head starts a chain of its own.
        issuer.resume(after: try SQLiteReceiptLog.tips(of: "old-1", in: db))
        XCTAssertEqual(issuer.nextPlace(tenant: "acme", environment: "production").sequence, 0)
        XCTAssertEqual(try log.latestHeads().map(\.head.chain), [legacy])
    }
}
