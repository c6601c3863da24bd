import InsightDomain
import PostgresClient

/// The stored chains of signed heads (migrations 0018 and 0024): written by the writer in each
/// batch's transaction, read through the pool. A chain of no tenant (heads made before 0024) is
/// stored with empty text for its tenant and environment.
public final class PostgresReceiptLog: ReceiptLog {
    private let reads: PostgresReadPool

    init(reads: PostgresReadPool) { self.reads = reads }

    public func heads(of chain: ReceiptChain, from: Int64, limit: Int, withLeaves: Bool) throws -> [LoggedHead] {
        let leaves = withLeaves ? "leaves" : "''::bytea"
        let rows: [(String, [UInt8])] = try reads.read { db in
            try db.query(
                """
                SELECT jws, \(leaves) FROM receipt_heads
                WHERE instance = $1 AND tenant = $2 AND environment = $3 AND sequence >= $4 ORDER BY sequence LIMIT $5
                """,
                [
                    .text(chain.instance), .text(chain.tenant ?? ""), .text(chain.environment ?? ""), .int64(from),
                    .int64(Int64(limit))
                ]
            ).map { ($0.text(0) ?? "", $0.bytea(1) ?? []) }
        }
        return try rows.map { jws, leaves in
            guard let signed = SignedHead(jws: jws) else { throw PostgresStoreError("a stored receipt head is not a head's JWS") }
            return LoggedHead(signed: signed, leaves: leaves)
        }
    }

    public func latestHeads(tenant: String?, environment: String?) throws -> [SignedHead] {
        try reads.read { db in
            try db.query(Self.latestSQL, [tenant.map { .text($0) }, environment.map { .text($0) }, nil]).map { $0.text(0) ?? "" }
        }.compactMap(SignedHead.init(jws:))
    }

    /// The latest head of each chain, of tenant $1 and environment $2 and instance $3 when given.
    static let latestSQL = """
        SELECT DISTINCT ON (instance, tenant, environment) jws FROM receipt_heads
        WHERE ($1::text IS NULL OR tenant = $1::text) AND ($2::text IS NULL OR environment = $2::text)
            AND ($3::text IS NULL OR instance = $3::text)
        ORDER BY instance, tenant, environment, sequence DESC
        """
}
