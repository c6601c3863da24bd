import InsightDomain
import SQLiteClient
import Synchronization

/// The stored chain of signed heads (migration 0018): written by the group-commit writer in each
/// batch's transaction, read through its own connection.
public final class SQLiteReceiptLog: ReceiptLog {
    private let reader: Mutex<SQLiteConnection>

    public init(path: String) throws {
        reader = Mutex(try Database.open(path: path, create: false))
    }

    public func heads(instance: String, from: Int64, limit: Int, withLeaves: Bool) throws -> [LoggedHead] {
        try reader.withLock { try Self.heads(in: $0, instance: instance, from: from, limit: limit, withLeaves: withLeaves) }
    }

    public func latestHeads() throws -> [SignedHead] {
        try reader.withLock { db in
            try db.prepare(
                """
                SELECT h.jws FROM (SELECT instance, max(sequence) AS sequence FROM receipt_heads GROUP BY instance) l
                JOIN receipt_heads h ON h.instance = l.instance AND h.sequence = l.sequence ORDER BY h.instance
                """
            ).query { $0.text(0) ?? "" }.compactMap(SignedHead.init(jws:))
        }
    }

    static func heads(
        in db: SQLiteConnection, instance: String, from: Int64, limit: Int,
        withLeaves: Bool
    ) throws -> [LoggedHead] {
        let leaves = withLeaves ? "leaves" : "x''"
        let rows = try db.prepare(
            """
            SELECT jws, \(leaves) FROM receipt_heads WHERE instance = ? AND sequence >= ? ORDER BY sequence LIMIT ?
            """
        ).query([instance, from, limit]) { ($0.text(0) ?? "", $0.blob(1) ?? []) }
        return try rows.map { jws, leaves in
            guard let signed = SignedHead(jws: jws) else { throw StoreError.invalid("a stored receipt head is not a head's JWS") }
            return LoggedHead(signed: signed, leaves: leaves)
        }
    }

    /// Where `instance`'s chain stands in the database: its last head, if it has one.
    public static func tip(of instance: String, in db: SQLiteConnection) throws -> ChainTip? {
        guard
            let jws = try db.cached("SELECT jws FROM receipt_heads WHERE instance = ? ORDER BY sequence DESC LIMIT 1")
                .first([instance], row: { $0.text(0) }), let jws
        else { return nil }
        guard let signed = SignedHead(jws: jws) else {
            throw StoreError.invalid("the last receipt head of \(instance) is not a head's JWS")
        }
        return ChainTip(signed)
    }

    /// Stores a batch's head and leaves, in the batch's transaction.
    static func insert(_ batch: ReceiptBatch, into db: SQLiteConnection) throws {
        let head = batch.head.head
        try db.cached("INSERT INTO receipt_heads (instance, sequence, made_at, jws, leaves) VALUES (?, ?, ?, ?, ?)")
            .run(head.instance, head.sequence, head.time, batch.head.jws, batch.leaves)
    }
}
