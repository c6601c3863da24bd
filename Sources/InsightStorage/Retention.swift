import InsightDomain
import SQLiteClient

/// Deletes data older than the retention period in bounded batches, each its own short
/// transaction, so that a large purge never holds the write lock long enough to stall traffic.
/// Evaluations take their insights, consumption reports (foreign-key cascade) and captured
/// training vectors with them; training vectors also go on their own, shorter, period;
/// labels carry their own copy of what model metrics need. A subject's authorization (an
/// opt-out) goes once nobody renewed it for the retention period: a person who keeps the
/// choice keeps asserting it, and a store no caller can fill without bound is what makes the
/// in-memory index of denials safe.
public struct Retention {
    /// What one purge deleted.
    public typealias Report = RetentionReport

    /// Rows deleted per batch.
    public static let batchSize = 1000

    let db: SQLiteConnection

    public init(_ db: SQLiteConnection) { self.db = db }

    /// Deletes one batch of each kind older than `cutoff` (training vectors: older than
    /// `trainingCutoff`, default `cutoff`); call until it reports nothing.
    public static func purgeBatch(_ db: SQLiteConnection, cutoff: Milliseconds, trainingCutoff: Milliseconds? = nil) throws -> Report {
        var forgotten: [SubjectIndexEntry] = []
        return try purgeBatch(db, cutoff: cutoff, trainingCutoff: trainingCutoff ?? cutoff, forgotten: &forgotten)
    }

    /// `purgeBatch`, adding to `forgotten` the subject index's keys of the evaluations deleted
    /// (their owner removes them from the side file once the batch is committed).
    static func purgeBatch(
        _ db: SQLiteConnection, cutoff: Milliseconds, trainingCutoff: Milliseconds,
        forgotten: inout [SubjectIndexEntry]
    ) throws -> Report {
        var report = Report()
        // Each caller's range of evaluations_by_caller_created (there is no index on created_at
        // alone: it cost every evaluation's commit a B-tree). Each evaluation goes with its
        // insights (their slots) and, by cascade, its consumption report.
        let expired = try db.prepare(
            """
            \(StoreSchema.everyCaller)
            SELECT e.rowid, e.created_at, e.account_hash, e.device_hash, e.counterparty_hash
            FROM every_caller c CROSS JOIN evaluations e ON e.caller_id = c.id AND e.created_at < ? LIMIT ?
            """
        ).query([cutoff, batchSize]) { row in
            let rowid = row.int64(0)
            for (column, kind) in [(2, IdentifierKind.account), (3, .device), (4, .counterparty)] {
                guard let hash = row.blob(column) else { continue }
                forgotten.append(SubjectIndexEntry(kind: kind, hash: hash, createdAt: row.int64(1), evaluation: rowid))
            }
            return rowid
        }
        for rowid in expired {
            let slots = InsightSlots.range(ofEvaluation: rowid)
            try db.cached("DELETE FROM insights WHERE slot BETWEEN ? AND ?").run(slots.first, slots.last)
            try db.cached("DELETE FROM evaluations WHERE rowid = ?").run(rowid)
            // Its training vector, if one was captured, goes with it.
            try db.cached("DELETE FROM training_vectors WHERE evaluation = ?").run(rowid)
            report.trainingVectors += db.changes
        }
        report.evaluations = expired.count
        try db.cached(
            """
            DELETE FROM training_vectors WHERE evaluation IN
                (SELECT evaluation FROM training_vectors WHERE created_at < ? LIMIT ?)
            """
        ).run(trainingCutoff, batchSize)
        report.trainingVectors += db.changes
        try db.cached(
            """
            DELETE FROM labels WHERE insight_id IN
                (SELECT insight_id FROM labels WHERE received_at < ? LIMIT ?)
            """
        ).run(cutoff, batchSize)
        report.labels = db.changes
        try db.cached(
            """
            DELETE FROM label_submissions WHERE rowid IN
                (SELECT rowid FROM label_submissions WHERE created_at < ? LIMIT ?)
            """
        ).run(cutoff, batchSize)
        report.labelSubmissions = db.changes
        try db.cached(
            """
            DELETE FROM subject_authorizations WHERE rowid IN
                (SELECT rowid FROM subject_authorizations WHERE renewed_at < ? LIMIT ?)
            """
        ).run(cutoff, batchSize)
        report.authorizations = db.changes
        // A head goes whole, with its leaf hashes, oldest first: what remains of a chain still
        // verifies from its oldest kept head. The one writer stores heads in time order, so the
        // oldest are the first rowids, up to the first head that is not yet old (an index on
        // made_at would cost every commit a page of the write-ahead log; migration 0022).
        let oldest = try db.cached("SELECT rowid, made_at FROM receipt_heads ORDER BY rowid LIMIT ?")
            .query([batchSize]) { (rowid: $0.int64(0), madeAt: $0.int64(1)) }
        if let last = oldest.prefix(while: { $0.madeAt < cutoff }).last {
            try db.cached("DELETE FROM receipt_heads WHERE rowid <= ?").run(last.rowid)
            report.receiptHeads = db.changes
        }
        return report
    }

    /// Purges everything older than `cutoff` on this connection, batch by batch, and the keys
    /// of the deleted evaluations from the subject index's side file, if there is one.
    public func purge(olderThan cutoff: Milliseconds) throws -> Report {
        var total = Report()
        while true {
            var forgotten: [SubjectIndexEntry] = []
            let batch = try db.transaction { try Self.purgeBatch(db, cutoff: cutoff, trainingCutoff: cutoff, forgotten: &forgotten) }
            try SQLiteSubjectIndex.delete(forgotten, databasePath: db.path)
            if batch.isEmpty { return total }
            total.add(batch)
        }
    }
}

/// The retention purge of the running daemon: each batch is a job of the group-commit writer,
/// ordered with every other write; once it is committed, the keys of its evaluations leave the
/// subject index through the indexer's thread (after any batch that read them before).
public final class SQLiteRetention: RetentionPurge {
    private let writer: GroupCommitWriter
    private let index: SQLiteSubjectIndex

    public init(writer: GroupCommitWriter, index: SQLiteSubjectIndex) {
        self.writer = writer
        self.index = index
    }

    public func purgeBatch(
        olderThan cutoff: Milliseconds, trainingVectorsOlderThan trainingCutoff: Milliseconds,
        completion: @escaping @Sendable (Result<RetentionReport, StoreFailure>) -> Void
    ) {
        let index = self.index
        writer.submit(
            { db in
                var forgotten: [SubjectIndexEntry] = []
                let report = try Retention.purgeBatch(db, cutoff: cutoff, trainingCutoff: trainingCutoff, forgotten: &forgotten)
                return (report, forgotten)
            },
            completion: { (result: Result<(RetentionReport, [SubjectIndexEntry]), StoreFailure>) in
                switch result {
                case .failure(let failure): completion(.failure(failure))
                case .success(let (report, forgotten)):
                    index.forget(forgotten) { error in completion(error.map { .failure(.unavailable("\($0)")) } ?? .success(report)) }
                }
            })
    }
}
