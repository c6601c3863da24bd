import InsightDomain
import SQLiteClient

/// Erasure of a subject (`SubjectErasure`) as one job of the group-commit writer.
///
/// The job runs with `PRAGMA secure_delete` on, so that SQLite overwrites with zeros the
/// content it frees (the old cells of the rows it rewrites, index entries, freed pages); after
/// the commit, a `wal_checkpoint(TRUNCATE)` copies the rewritten pages into the database file
/// and empties the write-ahead log, which still held the earlier images of those pages. A
/// checkpoint that readers keep from finishing (beyond the busy timeout) fails the job; the
/// rows are unlinked already, and erasing again answers zeros and checkpoints again.
public final class SQLiteSubjectErasure: SubjectErasure {
    private let writer: GroupCommitWriter

    public init(writer: GroupCommitWriter) { self.writer = writer }

    public func erase(_ subject: ErasedSubject,
                      completion: @escaping @Sendable (Result<SubjectErasureReport, StoreFailure>) -> Void) {
        writer.submit({ db in try Self.erase(subject, in: db) }, afterCommit: Self.checkpoint, completion: completion)
    }

    /// The statement that unlinks one hash of `kind` from a tenant's evaluations (?1 the hash,
    /// ?2 the tenant). An evaluation whose caller is unknown belongs to tenant `default`, as
    /// everywhere.
    static func unlink(_ kind: IdentifierKind) -> StaticString {
        switch kind {
        case .account:
            return """
                UPDATE evaluations SET account_hash = NULL WHERE account_hash = ?1
                  AND coalesce((SELECT c.tenant FROM callers c WHERE c.caller_id = evaluations.caller_id), 'default') = ?2
                RETURNING rowid
                """
        case .device:
            return """
                UPDATE evaluations SET device_hash = NULL WHERE device_hash = ?1
                  AND coalesce((SELECT c.tenant FROM callers c WHERE c.caller_id = evaluations.caller_id), 'default') = ?2
                RETURNING rowid
                """
        case .counterparty:
            return """
                UPDATE evaluations SET counterparty_hash = NULL WHERE counterparty_hash = ?1
                  AND coalesce((SELECT c.tenant FROM callers c WHERE c.caller_id = evaluations.caller_id), 'default') = ?2
                RETURNING rowid
                """
        }
    }

    /// Unlinks `subject` in the current transaction; answers the rows it changed.
    static func erase(_ subject: ErasedSubject, in db: SQLiteConnection) throws -> SubjectErasureReport {
        try db.execute("PRAGMA secure_delete=ON")
        defer { try? db.execute("PRAGMA secure_delete=OFF") }
        var evaluations = Set<Int64>()
        for kind in IdentifierKind.allCases {
            let unlink = try db.cached(unlink(kind))
            for hash in subject.hashes(kind) {
                for rowid in try unlink.query([hash, subject.tenant], row: { $0.int64(0) }) { evaluations.insert(rowid) }
            }
        }
        var authorizations = 0
        let delete = try db.cached("DELETE FROM subject_authorizations WHERE kind = ? AND subject_hash = ? AND tenant = ?")
        for kind in AuthorizableKind.allCases {
            for hash in subject.hashes(kind.identifierKind) {
                try delete.run(kind.rawValue, hash, subject.tenant)
                authorizations += db.changes
            }
        }
        return SubjectErasureReport(evaluations: evaluations.count, authorizations: authorizations)
    }

    /// Copies every page into the database file and truncates the write-ahead log.
    static func checkpoint(_ db: SQLiteConnection) throws {
        let busy = try db.prepare("PRAGMA wal_checkpoint(TRUNCATE)").first(row: { $0.int64(0) })
        guard busy == 0 else { throw StoreError.io("the write-ahead log could not be checkpointed: readers kept it busy") }
    }
}
