import InsightDomain
import SQLiteClient
import Synchronization

/// Caller administration and reporting counts for the running daemon: reads through their own
/// connection (WAL readers never block the writer), writes through the group-commit writer so
/// that they are ordered with everything else and never stall a loop thread.
public final class SQLiteAdministration: CallerAdministration, ReportingStatsSource, VelocityHistory {
    private let reader: Mutex<SQLiteConnection>
    private let writer: GroupCommitWriter

    public init(path: String, writer: GroupCommitWriter) throws {
        reader = Mutex(try Database.open(path: path, create: false))
        self.writer = writer
    }

    /// Every caller of every tenant (the daemon's own bookkeeping; never an admin's view).
    public func everyCaller() throws -> [Caller] {
        try reader.withLock { try CallerRegistry($0).list() }
    }

    public func callers(tenant: String) throws -> [Caller] {
        try reader.withLock { try CallerRegistry($0).list(tenant: tenant) }
    }

    public func caller(_ callerId: String, tenant: String) throws -> Caller? {
        try reader.withLock { try CallerRegistry($0).caller(callerId, tenant: tenant) }
    }

    public func updateQuota(callerId: String, tenant: String, rate: Double?, burst: Int?,
                            completion: @escaping @Sendable (Result<Caller?, StoreFailure>) -> Void) {
        writer.submit({ db in
            let registry = CallerRegistry(db)
            guard try registry.caller(callerId, tenant: tenant) != nil else { return nil }
            try registry.updateQuota(callerId: callerId, rate: rate, burst: burst)
            return try registry.caller(callerId)
        }, completion: completion)
    }

    public func resetPenalty(callerId: String, tenant: String, at time: Milliseconds,
                             completion: @escaping @Sendable (Result<Bool, StoreFailure>) -> Void) {
        writer.submit({ db in
            try db.cached("UPDATE callers SET penalty_reset_at = ? WHERE caller_id = ? AND tenant = ?").run(time, callerId, tenant)
            return db.changes == 1
        }, completion: completion)
    }

    /// The evaluations since `since`, oldest first, as the velocity tracker records them.
    public func velocityEvents(since: Milliseconds) throws -> [VelocityEvent] {
        try reader.withLock { db in
            // Each caller's range of evaluations_by_caller_created, in commit order (rowid breaks
            // ties of the same millisecond as the live tracker saw them).
            try db.prepare("""
                \(EvaluationQueries.everyCaller)
                SELECT e.environment, e.created_at, e.account_hash, e.device_hash, e.counterparty_hash, e.category,
                       e.tracked_value, e.raised_by_velocity
                FROM every_caller c CROSS JOIN evaluations e ON e.caller_id = c.id AND e.created_at >= ?
                ORDER BY e.created_at, e.rowid
                """).query([since]) { row in
                guard let environment = Environment(rawValue: row.text(0) ?? "") else {
                    throw StoreError.invalid("an evaluation has an unknown environment")
                }
                return VelocityEvent(environment: environment, time: row.int64(1), account: row.blob(2), device: row.blob(3),
                                     counterparty: row.blob(4), isPayment: row.text(5) == OperationCategory.payment.rawValue,
                                     value: row.text(6).flatMap(InsightValue.init(rawValue:)),
                                     raisedByVelocity: row.int(7) != 0)
            }
        }
    }

    public func reportingStats(since: Milliseconds, now: Milliseconds) throws -> [String: ReportingStats] {
        try reader.withLock { db in
            var result: [String: ReportingStats] = [:]
            for (id, stats) in try db.cached(Self.reportingStatsQuery).query([now, since], row: { row in
                (row.text(0) ?? "", ReportingStats(evaluations: row.int(1), onTime: row.int(2), late: row.int(3),
                                                   overdue: row.int(4), pending: row.int(5)))
            }) {
                result[id] = stats
            }
            return result
        }
    }

    /// Per caller, the window's counts (?1: now, ?2: the window's start). Callers come first
    /// (CROSS JOIN fixes the order), so that each caller's window is a range of
    /// evaluations_by_caller_created. With the join the other way round the window's start
    /// depended on the caller row, and SQLite scanned the whole index — every evaluation kept,
    /// up to the retention period — to count the last hour's.
    static let reportingStatsQuery: StaticString = """
        SELECT c.caller_id, count(*),
               sum(r.event_id IS NOT NULL AND r.reported_at <= e.report_by),
               sum(r.event_id IS NOT NULL AND r.reported_at > e.report_by),
               sum(r.event_id IS NULL AND e.report_by < ?1),
               sum(r.event_id IS NULL AND e.report_by >= ?1)
        FROM callers c
        CROSS JOIN evaluations e
            ON e.caller_id = c.caller_id AND e.created_at >= max(?2, coalesce(c.penalty_reset_at, 0))
        LEFT JOIN consumption_reports r ON r.event_id = e.event_id
        GROUP BY c.caller_id
        """
}
