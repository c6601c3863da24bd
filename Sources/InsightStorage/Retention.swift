import InsightDomain
import SQLiteClient

/// Deletes data older than the retention period in bounded batches, each its own short
/// transaction, so that a large purge never holds the write lock long enough to stall traffic.
/// Evaluations take their insights and consumption reports with them (foreign-key cascade);
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

    /// Deletes one batch of each kind older than `cutoff`; call until it reports nothing.
    public static func purgeBatch(_ db: SQLiteConnection, cutoff: Milliseconds) throws -> Report {
        var report = Report()
        // Each caller's range of evaluations_by_caller_created (there is no index on created_at
        // alone: it cost every evaluation's commit a B-tree). Each evaluation goes with its
        // insights (their slots) and, by cascade, its consumption report.
        let expired = try db.prepare("""
            \(EvaluationQueries.everyCaller)
            SELECT e.rowid FROM every_caller c CROSS JOIN evaluations e
                ON e.caller_id = c.id AND e.created_at < ? LIMIT ?
            """).query([cutoff, batchSize]) { $0.int64(0) }
        for rowid in expired {
            let slots = InsightSlots.range(ofEvaluation: rowid)
            try db.cached("DELETE FROM insights WHERE slot BETWEEN ? AND ?").run(slots.first, slots.last)
            try db.cached("DELETE FROM evaluations WHERE rowid = ?").run(rowid)
        }
        report.evaluations = expired.count
        try db.cached("""
            DELETE FROM labels WHERE insight_id IN
                (SELECT insight_id FROM labels WHERE received_at < ? LIMIT ?)
            """).run(cutoff, batchSize)
        report.labels = db.changes
        try db.cached("""
            DELETE FROM label_submissions WHERE rowid IN
                (SELECT rowid FROM label_submissions WHERE created_at < ? LIMIT ?)
            """).run(cutoff, batchSize)
        report.labelSubmissions = db.changes
        try db.cached("""
            DELETE FROM subject_authorizations WHERE rowid IN
                (SELECT rowid FROM subject_authorizations WHERE renewed_at < ? LIMIT ?)
            """).run(cutoff, batchSize)
        report.authorizations = db.changes
        return report
    }

    /// Purges everything older than `cutoff` on this connection, batch by batch.
    public func purge(olderThan cutoff: Milliseconds) throws -> Report {
        var total = Report()
        while true {
            let batch = try db.transaction { try Self.purgeBatch(db, cutoff: cutoff) }
            if batch.isEmpty { return total }
            total.add(batch)
        }
    }
}

/// The retention purge of the running daemon: each batch is a job of the group-commit writer,
/// ordered with every other write.
public final class SQLiteRetention: RetentionPurge {
    private let writer: GroupCommitWriter

    public init(writer: GroupCommitWriter) { self.writer = writer }

    public func purgeBatch(olderThan cutoff: Milliseconds,
                           completion: @escaping @Sendable (Result<RetentionReport, StoreFailure>) -> Void) {
        writer.submit({ db in try Retention.purgeBatch(db, cutoff: cutoff) }, completion: completion)
    }
}
