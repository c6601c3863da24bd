import InsightDomain
import SQLiteClient

/// Erasure of a subject (`SubjectErasure`) on SQLite: the evaluations that carry its hashes are
/// found through the subject index (its keys up to the watermark, then the tail past it), unlinked
/// (and their captured training vectors deleted) by one job of the group-commit writer, and then the index's keys of them are removed on the
/// indexer's thread, after any batch it read before the unlinking.
///
/// Both steps run with `PRAGMA secure_delete` on, so that SQLite overwrites with zeros the
/// content it frees (the old cells of the rows it rewrites, index entries, freed pages); after
/// each commit, a `wal_checkpoint(TRUNCATE)` copies the rewritten pages into the file and
/// empties its write-ahead log, which still held the earlier images of those pages. A
/// checkpoint that readers keep from finishing (beyond the busy timeout) fails the erasure; the
/// rows are unlinked already, and erasing again answers zeros and checkpoints again.
public final class SQLiteSubjectErasure: SubjectErasure {
    private let writer: GroupCommitWriter
    private let index: SQLiteSubjectIndex

    public init(writer: GroupCommitWriter, index: SQLiteSubjectIndex) {
        self.writer = writer
        self.index = index
    }

    public func erase(
        _ subject: ErasedSubject,
        completion: @escaping @Sendable (Result<SubjectErasureReport, StoreFailure>) -> Void
    ) {
        let subjects = index
        let found: [IdentifierKind: (rowids: [Int64], watermark: Int64)]
        do {
            found = try Dictionary(
                uniqueKeysWithValues: IdentifierKind.allCases.map { kind in
                    (kind, try subjects.candidates(kind, hashes: subject.hashes(kind)))
                })
        } catch {
            return completion(.failure(.unavailable("\(error)")))
        }
        writer.submit({ db in try Self.erase(subject, found: found, in: db) }, afterCommit: Self.checkpoint) { result in
            guard case .success(let report) = result else { return completion(result) }
            subjects.erase(subject) { error in
                completion(error.map { .failure(.unavailable("\($0)")) } ?? .success(report))
            }
        }
    }

    /// The statement that unlinks one hash of `kind` (?1 the hash, ?2 the tenant, ?4 the
    /// environment or '' for both) from the evaluation of rowid ?3 if `tail` is false, else from
    /// every evaluation past rowid ?3 (the tail the index has not reached). An evaluation whose
    /// caller is unknown belongs to tenant `default`, as everywhere.
    static func unlink(_ kind: IdentifierKind, tail: Bool) -> String {
        """
        UPDATE evaluations SET \(kind.rawValue)_hash = NULL
        WHERE rowid \(tail ? ">" : "=") ?3 AND \(kind.rawValue)_hash = ?1 AND (?4 = '' OR environment = ?4)
          AND coalesce((SELECT c.tenant FROM callers c WHERE c.caller_id = evaluations.caller_id), 'default') = ?2
        RETURNING rowid
        """
    }

    /// Unlinks `subject` in the current transaction; answers the rows it changed.
    /// `found` holds, per kind, the rowids the index names for the subject's hashes and the
    /// watermark they are complete up to.
    static func erase(
        _ subject: ErasedSubject, found: [IdentifierKind: (rowids: [Int64], watermark: Int64)],
        in db: SQLiteConnection
    ) throws -> SubjectErasureReport {
        try db.execute("PRAGMA secure_delete=ON")
        defer { try? db.execute("PRAGMA secure_delete=OFF") }
        var evaluations = Set<Int64>()
        let environment = subject.environmentParameter
        for kind in IdentifierKind.allCases {
            let one = try db.prepare(unlink(kind, tail: false)), tail = try db.prepare(unlink(kind, tail: true))
            let (rowids, watermark) = found[kind] ?? ([], 0)
            for hash in Set(subject.hashes(kind)) {
                for rowid in rowids {
                    for unlinked in try one.query([hash, subject.tenant, rowid, environment], row: { $0.int64(0) }) {
                        evaluations.insert(unlinked)
                    }
                }
                for unlinked in try tail.query([hash, subject.tenant, watermark, environment], row: { $0.int64(0) }) {
                    evaluations.insert(unlinked)
                }
            }
        }
        // The training vectors of the unlinked evaluations go (docs/privacy.md, "Training capture").
        var trainingVectors = 0
        let deleteVector = try db.cached("DELETE FROM training_vectors WHERE evaluation = ?")
        for rowid in evaluations {
            try deleteVector.run(rowid)
            trainingVectors += db.changes
        }
        var authorizations = 0
        let delete = try db.cached(
            "DELETE FROM subject_authorizations WHERE kind = ?1 AND subject_hash = ?2 AND tenant = ?3 AND (?4 = '' OR environment = ?4)")
        for kind in AuthorizableKind.allCases {
            for hash in subject.hashes(kind.identifierKind) {
                try delete.run(kind.rawValue, hash, subject.tenant, environment)
                authorizations += db.changes
            }
        }
        return SubjectErasureReport(evaluations: evaluations.count, authorizations: authorizations, trainingVectors: trainingVectors)
    }

    /// Copies every page into the database file and truncates the write-ahead log.
    static func checkpoint(_ db: SQLiteConnection) throws {
        let busy = try db.prepare("PRAGMA wal_checkpoint(TRUNCATE)").first(row: { $0.int64(0) })
        guard busy == 0 else { throw StoreError.io("the write-ahead log could not be checkpointed: readers kept it busy") }
    }
}
