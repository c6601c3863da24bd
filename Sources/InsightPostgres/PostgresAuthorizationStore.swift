import InsightDomain
import PostgresClient

/// Subject authorizations on PostgreSQL. A request takes the advisory locks of the subject's
/// hashes, then one statement reads the stored choice, works out the new one, keeps it under the
/// active hash and removes it from the others. One statement is one round trip to the writer's
/// connection, so the rules are written here in SQL: `existingSQL` is
/// `AuthorizationRecord.standing` and `applySQL`'s `record` is `AuthorizationRecord.applying`,
/// and the store contract's authorization cases hold this store to those functions.
public final class PostgresAuthorizationStore: AuthorizationStore {
    private let reads: PostgresReadPool
    private let writer: PostgresWriter

    init(reads: PostgresReadPool, writer: PostgresWriter) {
        self.reads = reads
        self.writer = writer
    }

    public func apply(
        _ request: AuthorizationRequest, for subject: SubjectHashes, now: Milliseconds,
        cooldown: Milliseconds,
        completion: @escaping @Sendable (Result<AuthorizationRecord, StoreFailure>) -> Void
    ) {
        writer.submit(
            {
                guard !subject.hashes.isEmpty else { throw PostgresStoreError("a subject needs a hash") }
                let keys = subject.hashes.map { hash in
                    SQLValues.lockKey([
                        Array("authorization".utf8), Array(subject.tenant.utf8),
                        Array(subject.environment.rawValue.utf8), Array(subject.kind.rawValue.utf8), hash
                    ])
                }
                return [
                    lockStatement(keys),
                    WriteStatement(
                        name: "insightd_authorize", sql: Self.applySQL,
                        parameters: [
                            .text(subject.environment.rawValue), .text(subject.kind.rawValue), .text(subject.tenant),
                            SQLValues.hexList(subject.hashes), .text(request.rawValue), .int64(now), .int64(cooldown),
                            .text(subject.activeKeyId)
                        ])
                ]
            },
            decode: { results in
                guard results.count == 2, let row = results[1].first, row.bool(4) == true,
                    let request = AuthorizationRequest(rawValue: row.text(0) ?? "")
                else {
                    throw PostgresStoreError("the subject's choice was not stored (its hash is another tenant's)")
                }
                return AuthorizationRecord(
                    request: request, requestedAt: row.int64(1) ?? 0, effectiveAt: row.int64(2) ?? 0,
                    renewedAt: row.int64(3) ?? 0)
            }, completion: completion)
    }

    /// The stored choice under the hashes ($4, hex, comma-separated, the active first) in the
    /// subject's scope, as `AuthorizationRecord.standing` picks it: a denial wins over an
    /// authorization (the last denial in the keyring's order, else the first authorization).
    static let existingSQL = """
        hashes AS (
            SELECT decode(h, 'hex') AS hash, ord FROM unnest(string_to_array($4::text, ',')) WITH ORDINALITY AS t(h, ord)),
        existing AS (
            SELECT a.status, a.requested_at, a.effective_at, a.renewed_at
            FROM subject_authorizations a JOIN hashes ON a.subject_hash = hashes.hash
            WHERE a.environment = $1::text AND a.kind = $2::text AND a.tenant = $3::text
            ORDER BY a.status = 'denied' DESC, CASE WHEN a.status = 'denied' THEN -hashes.ord ELSE hashes.ord END
            LIMIT 1)
        """

    /// $1 environment, $2 kind, $3 tenant, $4 hashes, $5 request, $6 now, $7 cooldown, $8 the
    /// active key's id. `record` is `AuthorizationRecord.applying($5, over: existing, now: $6,
    /// cooldown: $7)`. Answers the record kept and whether it was kept.
    static let applySQL = """
        WITH \(existingSQL),
        record AS (
            SELECT $5::text AS status,
                   CASE WHEN $5::text = 'denied' AND existing.status = 'denied' THEN existing.requested_at
                        ELSE $6::bigint END AS requested_at,
                   CASE WHEN $5::text = 'denied' AND existing.status = 'denied' THEN existing.effective_at
                        WHEN $5::text = 'denied' THEN $6::bigint + $7::bigint
                        ELSE $6::bigint END AS effective_at,
                   CASE WHEN $5::text = 'denied' AND existing.status = 'denied' THEN greatest(existing.renewed_at, $6::bigint)
                        ELSE $6::bigint END AS renewed_at
            FROM (SELECT 1) AS one LEFT JOIN existing ON true),
        folded AS (
            DELETE FROM subject_authorizations a USING hashes
            WHERE hashes.ord > 1 AND a.subject_hash = hashes.hash
              AND a.environment = $1::text AND a.kind = $2::text AND a.tenant = $3::text),
        kept AS (
            INSERT INTO subject_authorizations (environment, kind, subject_hash, hash_key_id, status, requested_at,
                                                effective_at, tenant, renewed_at)
            SELECT $1::text, $2::text, decode(split_part($4::text, ',', 1), 'hex'), $8::text, status, requested_at,
                   effective_at, $3::text, renewed_at
            FROM record
            ON CONFLICT (environment, kind, subject_hash) DO UPDATE
                SET hash_key_id = excluded.hash_key_id, status = excluded.status, requested_at = excluded.requested_at,
                    effective_at = excluded.effective_at, renewed_at = excluded.renewed_at
                WHERE subject_authorizations.tenant = excluded.tenant
            RETURNING 1)
        SELECT status, requested_at, effective_at, renewed_at, EXISTS (SELECT 1 FROM kept) FROM record
        """

    public func record(for subject: SubjectHashes) throws -> AuthorizationRecord? {
        guard !subject.hashes.isEmpty else { return nil }
        return try reads.read { db in
            try db.query(
                db.prepare("insightd_authorization", "WITH \(Self.existingSQL) SELECT * FROM existing"),
                [
                    .text(subject.environment.rawValue), .text(subject.kind.rawValue), .text(subject.tenant),
                    SQLValues.hexList(subject.hashes)
                ]
            ).first.map { row in
                AuthorizationRecord(
                    request: AuthorizationRequest(rawValue: row.text(0) ?? "") ?? .authorized,
                    requestedAt: row.int64(1) ?? 0, effectiveAt: row.int64(2) ?? 0,
                    renewedAt: row.int64(3) ?? 0)
            }
        }
    }

    public func denials() throws -> [StoredDenial] {
        try rows("WHERE status = 'denied'", [])
    }

    public func authorizations(renewedSince since: Milliseconds) throws -> [StoredAuthorization] {
        try rows("WHERE renewed_at >= $1", [.int64(since)])
    }

    private func rows(_ filter: String, _ parameters: [PostgresValue?]) throws -> [StoredAuthorization] {
        try reads.read { db in
            try db.query(
                """
                SELECT tenant, environment, kind, subject_hash, status, effective_at, renewed_at
                FROM subject_authorizations \(filter)
                """, parameters
            ).map { row in
                guard let environment = Environment(rawValue: row.text(1) ?? ""),
                    let kind = AuthorizableKind(rawValue: row.text(2) ?? ""),
                    let request = AuthorizationRequest(rawValue: row.text(4) ?? "")
                else {
                    throw PostgresStoreError("subject_authorizations holds an unknown environment, kind or status")
                }
                return StoredAuthorization(
                    tenant: row.text(0) ?? Tenant.defaultName, environment: environment, kind: kind,
                    hash: row.bytea(3) ?? [], request: request, effectiveAt: row.int64(5) ?? 0,
                    renewedAt: row.int64(6) ?? 0)
            }
        }
    }
}
