import InsightDomain
import SQLiteClient
import Synchronization

/// Subject authorizations in SQLite; writes through the group-commit writer.
public final class SQLiteAuthorizationStore: AuthorizationStore {
    private let reader: Mutex<SQLiteConnection>
    private let writer: GroupCommitWriter

    public init(path: String, writer: GroupCommitWriter) throws {
        reader = Mutex(try Database.open(path: path, create: false))
        self.writer = writer
    }

    public func apply(
        _ request: AuthorizationRequest, for subject: SubjectHashes, now: Milliseconds,
        cooldown: Milliseconds,
        completion: @escaping @Sendable (Result<AuthorizationRecord, StoreFailure>) -> Void
    ) {
        writer.submit({ db in try Self.apply(request, subject, now: now, cooldown: cooldown, in: db) }, completion: completion)
    }

    public func record(for subject: SubjectHashes) throws -> AuthorizationRecord? {
        try reader.withLock { try Self.find(subject, in: $0) }
    }

    /// The stored choice under any of the subject's hashes (in its tenant): the one
    /// `AuthorizationRecord.standing` picks.
    static func find(_ subject: SubjectHashes, in db: SQLiteConnection) throws -> AuthorizationRecord? {
        let find = try db.cached(
            """
            SELECT status, requested_at, effective_at, renewed_at FROM subject_authorizations
            WHERE environment = ? AND kind = ? AND subject_hash = ? AND tenant = ?
            """)
        var found: [AuthorizationRecord] = []
        for hash in subject.hashes {
            if let record = try find.first(
                [subject.environment.rawValue, subject.kind.rawValue, hash, subject.tenant],
                row: { row in
                    AuthorizationRecord(
                        request: AuthorizationRequest(rawValue: row.text(0) ?? "") ?? .authorized,
                        requestedAt: row.int64(1), effectiveAt: row.int64(2), renewedAt: row.int64(3))
                })
            {
                found.append(record)
            }
        }
        return AuthorizationRecord.standing(among: found)
    }

    static func apply(
        _ request: AuthorizationRequest, _ subject: SubjectHashes, now: Milliseconds, cooldown: Milliseconds,
        in db: SQLiteConnection
    ) throws -> AuthorizationRecord {
        let record = AuthorizationRecord.applying(request, over: try find(subject, in: db), now: now, cooldown: cooldown)
        let delete = try db.cached(
            """
            DELETE FROM subject_authorizations WHERE environment = ? AND kind = ? AND subject_hash = ? AND tenant = ?
            """)
        for hash in subject.hashes { try delete.run(subject.environment.rawValue, subject.kind.rawValue, hash, subject.tenant) }
        try db.cached(
            """
            INSERT INTO subject_authorizations (environment, kind, subject_hash, hash_key_id, status, requested_at,
                                                effective_at, tenant, renewed_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """
        ).run(
            subject.environment.rawValue, subject.kind.rawValue, subject.hashes[0], subject.activeKeyId,
            record.request.rawValue, record.requestedAt, record.effectiveAt, subject.tenant, record.renewedAt)
        return record
    }

    public func denials() throws -> [StoredDenial] {
        try rows("WHERE status = 'denied'")
    }

    public func authorizations(renewedSince since: Milliseconds) throws -> [StoredAuthorization] {
        try rows("WHERE renewed_at >= ?", since)
    }

    private func rows(_ filter: String, _ since: Milliseconds? = nil) throws -> [StoredAuthorization] {
        try reader.withLock { db in
            let values: [any SQLiteBindable] = since.map { [$0] } ?? []
            return try db.prepare(
                """
                SELECT tenant, environment, kind, subject_hash, status, effective_at, renewed_at
                FROM subject_authorizations \(filter)
                """
            ).query(values) { row in
                guard let environment = Environment(rawValue: row.text(1) ?? ""),
                    let kind = AuthorizableKind(rawValue: row.text(2) ?? ""),
                    let request = AuthorizationRequest(rawValue: row.text(4) ?? "")
                else {
                    throw StoreError.invalid("subject_authorizations holds an unknown environment, kind or status")
                }
                return StoredAuthorization(
                    tenant: row.text(0) ?? Tenant.defaultName, environment: environment, kind: kind,
                    hash: row.blob(3) ?? [], request: request, effectiveAt: row.int64(5),
                    renewedAt: row.int64(6))
            }
        }
    }
}
