import InsightDomain
import PostgresClient

/// The stored chain of signed heads (migration 0018): written by the writer in each batch's
/// transaction, read through the pool.
public final class PostgresReceiptLog: ReceiptLog {
    private let reads: PostgresReadPool

    init(reads: PostgresReadPool) { self.reads = reads }

    public func heads(instance: String, from: Int64, limit: Int, withLeaves: Bool) throws -> [LoggedHead] {
        let leaves = withLeaves ? "leaves" : "''::bytea"
        let rows: [(String, [UInt8])] = try reads.read { db in
            try db.query(
                """
                SELECT jws, \(leaves) FROM receipt_heads WHERE instance = $1 AND sequence >= $2 ORDER BY sequence LIMIT $3
                """, [.text(instance), .int64(from), .int64(Int64(limit))]
            ).map { ($0.text(0) ?? "", $0.bytea(1) ?? []) }
        }
        return try rows.map { jws, leaves in
            guard let signed = SignedHead(jws: jws) else { throw PostgresStoreError("a stored receipt head is not a head's JWS") }
            return LoggedHead(signed: signed, leaves: leaves)
        }
    }

    public func latestHeads() throws -> [SignedHead] {
        try reads.read { db in
            try db.query(
                """
                SELECT DISTINCT ON (instance) jws FROM receipt_heads ORDER BY instance, sequence DESC
                """
            ).map { $0.text(0) ?? "" }
        }.compactMap(SignedHead.init(jws:))
    }
}
