import InsightDomain
import SQLiteClient
import Synchronization

/// Caller administration and reporting counts for the running daemon: reads through their own
/// connection (WAL readers never block the writer), writes through the group-commit writer so
/// that they are ordered with everything else and never stall a loop thread.
public final class SQLiteAdministration: CallerAdministration, ReportingStatsSource, VelocityHistory, DecisionReporting,
    ModelPerformanceSource
{
    private let reader: Mutex<SQLiteConnection>
    private let writer: GroupCommitWriter
    /// The time a velocity replay's next query reads (milliseconds), adapted batch by batch.
    private let replayWindow = Mutex<Milliseconds>(60_000)

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

    public func ceiling(tenant: String) throws -> TenantCeiling {
        try reader.withLock { try CallerRegistry($0).ceiling(tenant: tenant) }
    }

    public func updateCaller(
        callerId: String, tenant: String, rate: Double?, burst: Int?, trainingCapture: Bool?,
        completion: @escaping @Sendable (Result<Caller?, StoreFailure>) -> Void
    ) {
        writer.submit(
            { db in
                let registry = CallerRegistry(db)
                guard try registry.caller(callerId, tenant: tenant) != nil else { return nil }
                if rate != nil || burst != nil { try registry.updateQuota(callerId: callerId, rate: rate, burst: burst) }
                if let trainingCapture { return try registry.setTrainingCapture(callerId: callerId, trainingCapture) }
                return try registry.caller(callerId)
            }, completion: completion)
    }

    public func resetPenalty(
        callerId: String, tenant: String, at time: Milliseconds,
        completion: @escaping @Sendable (Result<Bool, StoreFailure>) -> Void
    ) {
        writer.submit(
            { db in
                try db.cached("UPDATE callers SET penalty_reset_at = ? WHERE caller_id = ? AND tenant = ?").run(time, callerId, tenant)
                return db.changes == 1
            }, completion: completion)
    }

    public func keys(callerId: String, tenant: String) throws -> [StoredKey]? {
        try reader.withLock { db in
            let registry = CallerRegistry(db)
            guard try registry.caller(callerId, tenant: tenant) != nil else { return nil }
            return try registry.keys(callerId: callerId)
        }
    }

    public func revokeKey(
        callerId: String, keyId: String, tenant: String, at time: Milliseconds,
        completion: @escaping @Sendable (Result<StoredKey?, StoreFailure>) -> Void
    ) {
        writer.submit(
            { db in
                let registry = CallerRegistry(db)
                guard try registry.caller(callerId, tenant: tenant) != nil else { return nil }
                try db.cached("UPDATE api_keys SET revoked_at = ? WHERE key_id = ? AND caller_id = ? AND revoked_at IS NULL")
                    .run(time, keyId, callerId)
                return try registry.keys(callerId: callerId).first { $0.keyId == keyId }
            }, completion: completion)
    }

    /// The last rowid and one past the newest creation time (each caller's newest is one seek
    /// of evaluations_by_caller_created), read in one statement.
    public func velocityHistoryEnd() throws -> VelocityHistoryEnd {
        try reader.withLock { db in
            try db.prepare(
                """
                \(StoreSchema.everyCaller)
                SELECT (SELECT coalesce(max(rowid), 0) FROM evaluations),
                       (SELECT max((SELECT max(created_at) FROM evaluations WHERE caller_id = c.id)) FROM every_caller c)
                """
            ).query { row in
                VelocityHistoryEnd(sequence: row.int64(0), time: row.int64(1) + 1)
            }.first ?? VelocityHistoryEnd(sequence: 0, time: 0)
        }
    }

    /// A batch of the evaluations after `cursor` stored up to `end`, as the velocity tracker
    /// records them. Without an index on creation time alone, each query reads one window of
    /// time as every caller's range of evaluations_by_caller_created and sorts only that window;
    /// the window's length follows what the last ones held, so that a window holds about one
    /// batch (a full batch ends inside its window and the next continues from it).
    public func velocityEvents(
        after cursor: VelocityHistoryCursor, through end: VelocityHistoryEnd,
        limit: Int
    ) throws -> VelocityHistoryBatch {
        precondition(limit > 0, "a batch holds at least one evaluation")
        guard cursor.time < end.time else { return VelocityHistoryBatch(events: [], next: nil) }
        let span = replayWindow.withLock { $0 }
        let windowEnd = cursor.time + min(span, end.time - cursor.time)
        var last = cursor
        let events = try reader.withLock { db in
            try db.prepare(Self.velocityBatchQuery).query([cursor.time, windowEnd, cursor.sequence, end.sequence, limit]) { row in
                guard let environment = Environment(rawValue: row.text(1) ?? "") else {
                    throw StoreError.invalid("an evaluation has an unknown environment")
                }
                last = VelocityHistoryCursor(time: row.int64(2), sequence: row.int64(0))
                return VelocityEvent(
                    environment: environment, time: row.int64(2), account: row.blob(3), device: row.blob(4),
                    counterparty: row.blob(5), isPayment: row.text(6) == OperationCategory.payment.rawValue,
                    value: row.text(7).flatMap(InsightValue.init(rawValue:)),
                    raisedByVelocity: row.int(8) != 0)
            }
        }
        if events.count >= limit {
            // The window held more than a batch: continue inside it, with shorter windows after.
            replayWindow.withLock { $0 = max(1, span / 2) }
            return VelocityHistoryBatch(events: events, next: last)
        }
        // The window is read through: aim the next one at about half a batch.
        let scaled = Double(span) * Double(limit) / Double(max(1, events.count) * 2)
        replayWindow.withLock { $0 = Milliseconds(min(max(scaled, 1), Double(VelocityWindow.week.milliseconds))) }
        return VelocityHistoryBatch(events: events, next: windowEnd < end.time ? .from(windowEnd) : nil)
    }

    /// The evaluations of `[?1, ?2)` after (?1, rowid ?3) with rowid at most ?4, oldest first, at
    /// most ?5. Callers come first (CROSS JOIN fixes the order) so that each caller's window is a
    /// range of evaluations_by_caller_created; rowid orders one millisecond's as they were stored.
    static let velocityBatchQuery = """
        \(StoreSchema.everyCaller)
        SELECT e.rowid, e.environment, e.created_at, e.account_hash, e.device_hash, e.counterparty_hash, e.category,
               e.tracked_value, e.raised_by_velocity
        FROM every_caller c CROSS JOIN evaluations e ON e.caller_id = c.id AND e.created_at >= ?1 AND e.created_at < ?2
        WHERE (e.created_at > ?1 OR e.rowid > ?3) AND e.rowid <= ?4
        ORDER BY e.created_at, e.rowid
        LIMIT ?5
        """

    public func modelPerformanceCounts(_ query: ModelPerformanceQuery) throws -> [ModelPerformanceCell] {
        try reader.withLock { try SQLiteModelPerformance.counts(query, in: $0) }
    }

    public func reportingStats(since: Milliseconds, now: Milliseconds) throws -> [String: ReportingStats] {
        try reader.withLock { db in
            var result: [String: ReportingStats] = [:]
            for (id, stats) in try db.cached(Self.reportingStatsQuery).query(
                [now, since],
                row: { row in
                    (
                        row.text(0) ?? "",
                        ReportingStats(
                            evaluations: row.int(1), onTime: row.int(2), late: row.int(3),
                            overdue: row.int(4), pending: row.int(5))
                    )
                })
            {
                result[id] = stats
            }
            return result
        }
    }

    /// Per caller, the window's counts (?1: now, ?2: the window's start). Callers come first
    /// (CROSS JOIN fixes the order), so that each caller's window is a range of
    /// evaluations_by_caller_created. With the join the other way round the window's start
    /// depended on the caller row, and SQLite scanned the whole index — every evaluation kept,
    /// up to the retention period — to count the last hour's. The sums are `ReportingStats.count`,
    /// in SQL so that the counts are read, not the rows.
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

    public func decisionCounts(tenant: String, from: Milliseconds, to: Milliseconds) throws -> [DecisionCount] {
        try reader.withLock { db in
            try db.cached(Self.decisionCountsQuery).query([tenant, from, to]) { row in
                (row.text(0) ?? "", row.int(1), row.text(2), row.text(3), row.text(4), row.int(5))
            }.compactMap { callerId, code, status, intervention, response, count in
                guard let action = DecisionAction(code: code) else { return nil }
                return DecisionCount(
                    callerId: callerId, action: action, status: status.flatMap(ConsumptionStatus.init(rawValue:)),
                    intervention: intervention.flatMap(InterventionKind.init(rawValue:)),
                    response: response.flatMap(InterventionResponse.init(rawValue:)), evaluations: count)
            }
        }
    }

    public func storedDecision(eventId: String) throws -> Decision? {
        try reader.withLock { db in
            try db.cached("SELECT decision_action, decision_reasons, policy_version FROM evaluations WHERE event_id = ?")
                .query([eventId]) { row in
                    Decision.stored(action: row.isNull(0) ? nil : row.int(0), reasons: row.text(1), policyVersion: row.text(2))
                }.first ?? nil
        }
    }

    /// Per caller of the tenant (?1), the evaluations of ?2..<?3 with a decision, by action and
    /// reported status, intervention and response: callers first, so each one's evaluations are a
    /// range of evaluations_by_caller_created.
    static let decisionCountsQuery: StaticString = """
        SELECT c.caller_id, e.decision_action, r.status, r.intervention, r.response, count(*)
        FROM callers c
        CROSS JOIN evaluations e ON e.caller_id = c.caller_id AND e.created_at >= ?2 AND e.created_at < ?3
        LEFT JOIN consumption_reports r ON r.event_id = e.event_id
        WHERE c.tenant = ?1 AND e.decision_action IS NOT NULL
        GROUP BY c.caller_id, e.decision_action, r.status, r.intervention, r.response
        """
}
