import Foundation
import InsightDomain
import PostgresClient

/// Erasure of a subject (`SubjectErasure`) on PostgreSQL: one job of the writer (one
/// transaction), then a `VACUUM` of the three tables it touched, on a connection of its own
/// (VACUUM cannot run inside a transaction), before the completion. The VACUUM has no statement
/// timeout but keeps the store's lock timeout: when autovacuum holds a table's lock longer, the
/// erasure fails (the rows are unlinked already) and erasing again vacuums again.
///
/// What remains of the erased hashes, and for how long (docs/privacy.md, "Erasure"): an UPDATE
/// or DELETE leaves the old row version in its heap page, and in the pages of any index on the
/// column, until VACUUM removes it; the VACUUM here does that at once rather than whenever
/// autovacuum comes. PostgreSQL does not zero the space it frees in a page, so bytes of a
/// removed row version can stay in a page's free space until a later write reuses it; and the
/// write-ahead log holds the rows as they were written until its segments are recycled after
/// later checkpoints (and in any WAL archive, for as long as the archive keeps them).
public final class PostgresSubjectErasure: SubjectErasure {
    private let writer: PostgresWriter
    private let settings: PostgresSettings

    init(writer: PostgresWriter, settings: PostgresSettings) {
        self.writer = writer
        self.settings = settings
    }

    /// The evaluations' hash columns, by kind.
    static let columns: [(IdentifierKind, String)] = [
        (.account, "account_hash"), (.device, "device_hash"), (.counterparty, "counterparty_hash")
    ]

    /// What each statement's result counts.
    private enum Counted: Sendable { case trainingVectors, evaluations, authorizations }

    public func erase(
        _ subject: ErasedSubject,
        completion: @escaping @Sendable (Result<SubjectErasureReport, StoreFailure>) -> Void
    ) {
        var statements: [WriteStatement] = []
        var counted: [Counted] = []
        // First the training vectors of the evaluations about to be unlinked (found through the
        // hashes the UPDATEs below clear).
        for (kind, column) in Self.columns {
            for hash in subject.hashes(kind) {
                statements.append(
                    WriteStatement(
                        name: "insightd_erase_vectors_\(column)",
                        sql: """
                            DELETE FROM training_vectors t USING evaluations e
                            WHERE t.evaluation = e.number AND e.\(column) = $1::bytea
                              AND coalesce((SELECT c.tenant FROM callers c WHERE c.caller_id = e.caller_id), 'default') = $2::text
                              AND ($3::text = '' OR e.environment = $3::text)
                            """, parameters: [.bytea(hash), .text(subject.tenant), .text(subject.environmentParameter)]))
                counted.append(.trainingVectors)
            }
        }
        for (kind, column) in Self.columns {
            for hash in subject.hashes(kind) {
                statements.append(
                    WriteStatement(
                        name: "insightd_erase_\(column)",
                        sql: """
                            UPDATE evaluations e SET \(column) = NULL
                            WHERE e.\(column) = $1::bytea
                              AND coalesce((SELECT c.tenant FROM callers c WHERE c.caller_id = e.caller_id), 'default') = $2::text
                              AND ($3::text = '' OR e.environment = $3::text)
                            RETURNING e.event_id
                            """, parameters: [.bytea(hash), .text(subject.tenant), .text(subject.environmentParameter)]))
                counted.append(.evaluations)
            }
        }
        for kind in AuthorizableKind.allCases {
            for hash in subject.hashes(kind.identifierKind) {
                statements.append(
                    WriteStatement(
                        name: "insightd_erase_authorization",
                        sql: """
                            DELETE FROM subject_authorizations WHERE kind = $1::text AND subject_hash = $2::bytea AND tenant = $3::text
                              AND ($4::text = '' OR environment = $4::text)
                            """,
                        parameters: [.text(kind.rawValue), .bytea(hash), .text(subject.tenant), .text(subject.environmentParameter)]))
                counted.append(.authorizations)
            }
        }
        if statements.isEmpty { return completion(.success(SubjectErasureReport())) }
        let settings = self.settings
        writer.submit(
            { statements },
            decode: { [counted] results in
                var evaluations = Set<String>(), authorizations = 0, trainingVectors = 0
                for (result, what) in zip(results, counted) {
                    switch what {
                    case .trainingVectors: trainingVectors += result.affectedRows
                    case .evaluations: for row in result { if let id = row.text(0) { evaluations.insert(id) } }
                    case .authorizations: authorizations += result.affectedRows
                    }
                }
                return SubjectErasureReport(
                    evaluations: evaluations.count, authorizations: authorizations,
                    trainingVectors: trainingVectors)
            },
            completion: { result in
                guard case .success = result else { return completion(result) }
                // Off the writer thread: a VACUUM reads the tables' changed pages and their indexes.
                DispatchQueue.global(qos: .utility).async {
                    do {
                        try Self.vacuum(settings: settings)
                        completion(result)
                    } catch {
                        completion(.failure(.unavailable("PostgreSQL: VACUUM after an erasure: \(error)")))
                    }
                }
            })
    }

    /// Removes the dead row versions of the tables an erasure touches, without a time limit.
    static func vacuum(settings: PostgresSettings) throws {
        let connection = try settings.connect()
        try connection.execute("SET statement_timeout = 0")
        try connection.execute("VACUUM evaluations, subject_authorizations, training_vectors")
    }
}
