import InsightDomain
import SQLiteClient
import Synchronization

/// The stored chains of signed heads (migrations 0018 and 0024): written by the group-commit
/// writer in each batch's transaction, read through its own connection. A chain of no tenant
/// (heads made before 0024) is stored with empty text for its tenant and environment.
public final class SQLiteReceiptLog: ReceiptLog {
    private let reader: Mutex<SQLiteConnection>

    public init(path: String) throws {
        reader = Mutex(try Database.open(path: path, create: false))
    }

    public func heads(of chain: ReceiptChain, from: Int64, limit: Int, withLeaves: Bool) throws -> [LoggedHead] {
        try reader.withLock { try Self.heads(in: $0, of: chain, from: from, limit: limit, withLeaves: withLeaves) }
    }

    public func latestHeads(tenant: String?, environment: String?) throws -> [SignedHead] {
        try reader.withLock { db in try Self.latestHeads(in: db, tenant: tenant, environment: environment) }
    }

    /// The latest head of each chain (of `tenant` and `environment`'s only, when given; of
    /// `instance`'s only, when given), ordered by instance, tenant and environment.
    static func latestHeads(
        in db: SQLiteConnection, tenant: String?, environment: String?, instance: String? = nil
    ) throws -> [SignedHead] {
        try db.prepare(
            """
            SELECT h.jws FROM (
                SELECT instance, tenant, environment, max(sequence) AS sequence FROM receipt_heads
                WHERE (?1 IS NULL OR tenant = ?1) AND (?2 IS NULL OR environment = ?2) AND (?3 IS NULL OR instance = ?3)
                GROUP BY instance, tenant, environment) l
            JOIN receipt_heads h ON h.instance = l.instance AND h.tenant = l.tenant AND h.environment = l.environment
                AND h.sequence = l.sequence
            ORDER BY h.instance, h.tenant, h.environment
            """
        ).query([tenant, environment, instance]) { $0.text(0) ?? "" }.compactMap(SignedHead.init(jws:))
    }

    static func heads(
        in db: SQLiteConnection, of chain: ReceiptChain, from: Int64, limit: Int,
        withLeaves: Bool
    ) throws -> [LoggedHead] {
        let leaves = withLeaves ? "leaves" : "x''"
        let rows = try db.prepare(
            """
            SELECT jws, \(leaves) FROM receipt_heads WHERE instance = ? AND tenant = ? AND environment = ? AND sequence >= ?
            ORDER BY sequence LIMIT ?
            """
        ).query([chain.instance, chain.tenant ?? "", chain.environment ?? "", from, limit]) { ($0.text(0) ?? "", $0.blob(1) ?? []) }
        return try rows.map { jws, leaves in
            guard let signed = SignedHead(jws: jws) else { throw StoreError.invalid("a stored receipt head is not a head's JWS") }
            return LoggedHead(signed: signed, leaves: leaves)
        }
    }

    /// Where each of `instance`'s chains stands in the database: the last head of each.
    public static func tips(of instance: String, in db: SQLiteConnection) throws -> [SignedHead] {
        try latestHeads(in: db, tenant: nil, environment: nil, instance: instance)
    }

    /// Stores a batch's head and leaves, in the batch's transaction.
    static func insert(_ batch: ReceiptBatch, into db: SQLiteConnection) throws {
        let head = batch.head.head
        try db.cached(
            "INSERT INTO receipt_heads (instance, tenant, environment, sequence, made_at, jws, leaves) VALUES (?, ?, ?, ?, ?, ?, ?)"
        ).run(head.instance, head.tenant ?? "", head.environment ?? "", head.sequence, head.time, batch.head.jws, batch.leaves)
    }
}
