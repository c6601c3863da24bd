import InsightDomain
import PostgresClient

/// Caller administration, reporting counts and the velocity history for the running daemon:
/// reads through the read pool, writes through the writer (each one statement that changes a
/// row of the tenant and returns it).
public final class PostgresAdministration: CallerAdministration, ReportingStatsSource, VelocityHistory, SubjectHistory,
    DecisionReporting, ModelPerformanceSource
{
    private let reads: PostgresReadPool
    private let writer: PostgresWriter

    init(reads: PostgresReadPool, writer: PostgresWriter) {
        self.reads = reads
        self.writer = writer
    }

    /// Every caller of every tenant (the daemon's own bookkeeping; never an admin's view).
    public func everyCaller() throws -> [Caller] {
        try reads.read { try PostgresCallerRegistry($0).list(tenant: nil) }
    }

    public func callers(tenant: String) throws -> [Caller] {
        try reads.read { try PostgresCallerRegistry($0).list(tenant: tenant) }
    }

    public func caller(_ callerId: String, tenant: String) throws -> Caller? {
        try reads.read { try PostgresCallerRegistry($0).caller(callerId, tenant: tenant) }
    }

    public func ceiling(tenant: String) throws -> TenantCeiling {
        try reads.read { try PostgresCallerRegistry($0).ceiling(tenant: tenant) }
    }

    public func updateCaller(
        callerId: String, tenant: String, rate: Double?, burst: Int?, trainingCapture: Bool?,
        completion: @escaping @Sendable (Result<Caller?, StoreFailure>) -> Void
    ) {
        writer.submit(
            {
                try Caller.checkQuota(rate: rate, burst: burst)
                // A value above the tenant's ceiling is stored as the ceiling (`TenantCeiling.capping`, in the one statement).
                return [
                    WriteStatement(
                        name: "insightd_update_quota",
                        sql: """
                            UPDATE callers SET
                                rate = least(coalesce($1::double precision, rate),
                                             (SELECT max_rate FROM tenant_ceilings t WHERE t.tenant = callers.tenant)),
                                burst = least(coalesce($2::bigint, burst), (SELECT max_burst FROM tenant_ceilings t WHERE t.tenant = callers.tenant)),
                                training_capture = coalesce($5::bigint, training_capture)
                            WHERE caller_id = $3::text AND tenant = $4::text
                            RETURNING caller_id, name, environment, roles, rate, burst, created_at, tenant, training_capture
                            """,
                        parameters: [
                            rate.map { .double($0) }, burst.map { .int64(Int64($0)) }, .text(callerId), .text(tenant),
                            trainingCapture.map { .int64($0 ? 1 : 0) }
                        ])
                ]
            }, decode: { results in try results.first?.first.map(PostgresRows.caller) }, completion: completion)
    }

    public func resetPenalty(
        callerId: String, tenant: String, at time: Milliseconds,
        completion: @escaping @Sendable (Result<Bool, StoreFailure>) -> Void
    ) {
        writer.submit(
            {
                [
                    WriteStatement(
                        name: "insightd_reset_penalty",
                        sql: """
                            UPDATE callers SET penalty_reset_at = $1::bigint WHERE caller_id = $2::text AND tenant = $3::text
                            """, parameters: [.int64(time), .text(callerId), .text(tenant)])
                ]
            }, decode: { results in results.first?.affectedRows == 1 }, completion: completion)
    }

    public func keys(callerId: String, tenant: String) throws -> [StoredKey]? {
        try reads.read { db in
            let registry = PostgresCallerRegistry(db)
            guard try registry.caller(callerId, tenant: tenant) != nil else { return nil }
            return try registry.keys(callerId: callerId)
        }
    }

    public func revokeKey(
        callerId: String, keyId: String, tenant: String, at time: Milliseconds,
        completion: @escaping @Sendable (Result<StoredKey?, StoreFailure>) -> Void
    ) {
        // One statement: the key of that caller of that tenant, revoked now unless it was before.
        writer.submit(
            {
                [
                    WriteStatement(
                        name: "insightd_revoke_key",
                        sql: """
                            UPDATE api_keys k SET revoked_at = coalesce(k.revoked_at, $1::bigint)
                            FROM callers c
                            WHERE k.key_id = $2::text AND k.caller_id = $3::text AND c.caller_id = k.caller_id AND c.tenant = $4::text
                            RETURNING k.key_id, k.caller_id, k.secret_hash, k.created_at, k.revoked_at
                            """, parameters: [.int64(time), .text(keyId), .text(callerId), .text(tenant)])
                ]
            }, decode: { results in results.first?.first.map { PostgresRows.key($0, from: 0) } }, completion: completion)
    }

    public func subjectHistory(_ query: SubjectHistoryQuery) throws -> SubjectHistoryPage {
        try reads.read { try PostgresSubjectHistory.page(query, in: $0) }
    }

    public func modelPerformanceCounts(_ query: ModelPerformanceQuery) throws -> [ModelPerformanceCell] {
        try reads.read { try PostgresModelPerformance.counts(query, in: $0) }
    }

    public func velocityHistoryEnd() throws -> VelocityHistoryEnd {
        try reads.read { db in
            let row = try db.query(
                """
                \(StoreSchema.everyCaller)
                SELECT (SELECT coalesce(max(number), 0) FROM evaluations),
                       (SELECT coalesce(max(last), -1) FROM every_caller c CROSS JOIN LATERAL
                           (SELECT max(created_at) AS last FROM evaluations e WHERE e.caller_id = c.id) m)
                """
            ).first
            return VelocityHistoryEnd(sequence: row?.int64(0) ?? 0, time: (row?.int64(1) ?? -1) + 1)
        }
    }

    /// A batch of the evaluations after `cursor` stored up to `end` (by `number`, the identity
    /// that orders what is stored), as the velocity tracker records them. Without an index on
    /// creation time alone, each caller's first `limit` after the cursor come from its range of
    /// evaluations_by_caller_created, and the batch is the first `limit` of those.
    public func velocityEvents(
        after cursor: VelocityHistoryCursor, through end: VelocityHistoryEnd,
        limit: Int
    ) throws -> VelocityHistoryBatch {
        precondition(limit > 0, "a batch holds at least one evaluation")
        return try reads.read { db in
            var last = cursor
            let events = try db.query(
                db.prepare(
                    "insightd_velocity_batch",
                    """
                    \(StoreSchema.everyCaller)
                    SELECT e.environment, e.created_at, e.account_hash, e.device_hash, e.counterparty_hash, e.category,
                           e.tracked_value, e.raised_by_velocity, e.number
                    FROM every_caller c CROSS JOIN LATERAL (
                        SELECT * FROM evaluations e
                        WHERE e.caller_id = c.id AND e.created_at >= $1::bigint AND e.created_at < $4::bigint
                          AND (e.created_at, e.number) > ($1::bigint, $2::bigint) AND e.number <= $3::bigint
                        ORDER BY e.created_at, e.number LIMIT $5::bigint) e
                    ORDER BY e.created_at, e.number LIMIT $5::bigint
                    """),
                [
                    .int64(cursor.time), .int64(cursor.sequence), .int64(end.sequence), .int64(end.time),
                    .int64(Int64(limit))
                ]
            ).map { row in
                guard let environment = Environment(rawValue: row.text(0) ?? "") else {
                    throw PostgresStoreError("an evaluation has an unknown environment")
                }
                last = VelocityHistoryCursor(time: row.int64(1) ?? 0, sequence: row.int64(8) ?? 0)
                return VelocityEvent(
                    environment: environment, time: row.int64(1) ?? 0, account: row.bytea(2),
                    device: row.bytea(3), counterparty: row.bytea(4),
                    isPayment: row.text(5) == OperationCategory.payment.rawValue,
                    value: row.text(6).flatMap(InsightValue.init(rawValue:)),
                    raisedByVelocity: (row.int64(7) ?? 0) != 0)
            }
            return VelocityHistoryBatch(events: events, next: events.count < limit ? nil : last)
        }
    }

    public func reportingStats(since: Milliseconds, now: Milliseconds) throws -> [String: ReportingStats] {
        try reads.read { db in
            var result: [String: ReportingStats] = [:]
            for row in try db.query(db.prepare("insightd_reporting_stats", Self.reportingStatsSQL), [.int64(now), .int64(since)]) {
                result[row.text(0) ?? ""] = ReportingStats(
                    evaluations: Int(row.int64(1) ?? 0), onTime: Int(row.int64(2) ?? 0), late: Int(row.int64(3) ?? 0),
                    overdue: Int(row.int64(4) ?? 0), pending: Int(row.int64(5) ?? 0))
            }
            return result
        }
    }

    public func decisionCounts(tenant: String, from: Milliseconds, to: Milliseconds) throws -> [DecisionCount] {
        try reads.read { db in
            try db.query(db.prepare("insightd_decision_counts", Self.decisionCountsSQL), [.text(tenant), .int64(from), .int64(to)])
                .compactMap { row in
                    guard let action = DecisionAction(code: Int(row.int64(1) ?? -1)) else { return nil }
                    return DecisionCount(
                        callerId: row.text(0) ?? "", action: action,
                        status: row.text(2).flatMap(ConsumptionStatus.init(rawValue:)),
                        intervention: row.text(3).flatMap(InterventionKind.init(rawValue:)),
                        response: row.text(4).flatMap(InterventionResponse.init(rawValue:)),
                        evaluations: Int(row.int64(5) ?? 0))
                }
        }
    }

    public func storedDecision(eventId: String) throws -> Decision? {
        guard !eventId.utf8.contains(0) else { return nil }
        return try reads.read { db in
            try db.query(
                db.prepare(
                    "insightd_stored_decision",
                    """
                    SELECT decision_action, decision_reasons, policy_version FROM evaluations WHERE event_id = $1::text
                    """), [.text(eventId)]
            ).first.flatMap { row in
                Decision.stored(action: row.int64(0).map(Int.init), reasons: row.text(1), policyVersion: row.text(2))
            }
        }
    }

    /// Per caller of the tenant ($1), the evaluations of $2..<$3 with a decision, by action and
    /// reported status, intervention and response (a range of evaluations_by_caller_created per caller).
    static let decisionCountsSQL = """
        SELECT c.caller_id, e.decision_action, r.status, r.intervention, r.response, count(*)
        FROM callers c
        JOIN evaluations e ON e.caller_id = c.caller_id AND e.created_at >= $2::bigint AND e.created_at < $3::bigint
        LEFT JOIN consumption_reports r ON r.event_id = e.event_id
        WHERE c.tenant = $1::text AND e.decision_action IS NOT NULL
        GROUP BY c.caller_id, e.decision_action, r.status, r.intervention, r.response
        """

    /// Per caller, the window's counts ($1: now, $2: the window's start), each caller's window
    /// starting at its penalty reset when that is later: a range of evaluations_by_caller_created.
    /// The FILTERs are `ReportingStats.count`, in SQL so that the counts are read, not the rows.
    static let reportingStatsSQL = """
        SELECT c.caller_id, count(*),
               count(*) FILTER (WHERE r.event_id IS NOT NULL AND r.reported_at <= e.report_by),
               count(*) FILTER (WHERE r.event_id IS NOT NULL AND r.reported_at > e.report_by),
               count(*) FILTER (WHERE r.event_id IS NULL AND e.report_by < $1::bigint),
               count(*) FILTER (WHERE r.event_id IS NULL AND e.report_by >= $1::bigint)
        FROM callers c
        JOIN evaluations e ON e.caller_id = c.caller_id AND e.created_at >= greatest($2::bigint, coalesce(c.penalty_reset_at, 0))
        LEFT JOIN consumption_reports r ON r.event_id = e.event_id
        GROUP BY c.caller_id
        """
}

/// Key lookup for authentication, on the read pool: every request that misses the credential
/// cache reads the key as the database has it now, so a key revoked through any instance (or
/// `insightctl`) is refused everywhere once the cache entries of it expire.
public final class PostgresCredentialDirectory: CredentialDirectory {
    private let reads: PostgresReadPool

    init(reads: PostgresReadPool) { self.reads = reads }

    public func credential(keyId: String) throws -> (key: StoredKey, caller: Caller)? {
        try reads.read { db in
            try db.query(
                db.prepare(
                    "insightd_credential",
                    """
                    SELECT k.key_id, k.caller_id, k.secret_hash, k.created_at, k.revoked_at,
                           c.caller_id, c.name, c.environment, c.roles, c.rate, c.burst, c.created_at, c.tenant,
                           c.training_capture
                    FROM api_keys k JOIN callers c ON c.caller_id = k.caller_id WHERE k.key_id = $1::text
                    """), [.text(keyId)]
            ).first.map { row in
                (PostgresRows.key(row, from: 0), try PostgresRows.caller(row, from: 5))
            }
        }
    }
}

/// The retention purge of the running daemon: each batch one statement of the writer.
public final class PostgresRetention: RetentionPurge {
    private let writer: PostgresWriter

    init(writer: PostgresWriter) { self.writer = writer }

    /// Rows of each kind deleted per batch.
    public static let batchSize = 1000

    public func purgeBatch(
        olderThan cutoff: Milliseconds, trainingVectorsOlderThan trainingCutoff: Milliseconds,
        completion: @escaping @Sendable (Result<RetentionReport, StoreFailure>) -> Void
    ) {
        writer.submit(
            { [Self.statement(cutoff: cutoff, trainingCutoff: trainingCutoff)] }, decode: Self.decode,
            completion: completion)
    }

    static func statement(cutoff: Milliseconds, trainingCutoff: Milliseconds) -> WriteStatement {
        WriteStatement(
            name: "insightd_purge", sql: purgeSQL,
            parameters: [.int64(cutoff), .int64(Int64(batchSize)), .int64(trainingCutoff)])
    }

    static func decode(_ results: [PostgresResult]) throws -> RetentionReport {
        guard let row = results.first?.first else { throw PostgresStoreError("no answer to a purge") }
        return RetentionReport(
            evaluations: Int(row.int64(0) ?? 0), labels: Int(row.int64(1) ?? 0),
            labelSubmissions: Int(row.int64(2) ?? 0), authorizations: Int(row.int64(3) ?? 0),
            trainingVectors: Int(row.int64(4) ?? 0), receiptHeads: Int(row.int64(5) ?? 0))
    }

    /// $1 the cutoff, $2 the batch size, $3 the training vectors' cutoff. Evaluations are found
    /// caller by caller, each a range of evaluations_by_caller_created (a loose index scan over
    /// the callers that have evaluations, as on SQLite: there is no index on created_at alone);
    /// each goes with its insights (its slots), its training vector and, by cascade, its
    /// consumption report. One DELETE takes both kinds of expired training vectors, so that no
    /// row is deleted twice in the statement.
    static let purgeSQL = """
        \(StoreSchema.everyCaller),
        expired AS MATERIALIZED (
            SELECT x.number FROM every_caller c CROSS JOIN LATERAL (
                SELECT e.number FROM evaluations e WHERE e.caller_id = c.id AND e.created_at < $1::bigint LIMIT $2::bigint) AS x
            LIMIT $2::bigint),
        gone_insights AS (
            DELETE FROM insights i USING expired x WHERE i.slot BETWEEN x.number * 8 AND x.number * 8 + 7),
        gone_evaluations AS (
            DELETE FROM evaluations e USING expired x WHERE e.number = x.number RETURNING 1),
        gone_vectors AS (
            DELETE FROM training_vectors WHERE evaluation IN (
                SELECT number FROM expired
                UNION ALL (SELECT evaluation FROM training_vectors WHERE created_at < $3::bigint LIMIT $2::bigint))
            RETURNING 1),
        gone_labels AS (
            DELETE FROM labels WHERE insight_id IN (
                SELECT insight_id FROM labels WHERE received_at < $1::bigint LIMIT $2::bigint)
            RETURNING 1),
        gone_submissions AS (
            DELETE FROM label_submissions WHERE (caller_id, key_hash) IN (
                SELECT caller_id, key_hash FROM label_submissions WHERE created_at < $1::bigint LIMIT $2::bigint)
            RETURNING 1),
        gone_authorizations AS (
            DELETE FROM subject_authorizations WHERE (environment, kind, subject_hash) IN (
                SELECT environment, kind, subject_hash FROM subject_authorizations WHERE renewed_at < $1::bigint LIMIT $2::bigint)
            RETURNING 1),
        gone_heads AS (
            DELETE FROM receipt_heads WHERE (instance, tenant, environment, sequence) IN (
                SELECT instance, tenant, environment, sequence FROM receipt_heads WHERE made_at < $1::bigint LIMIT $2::bigint)
            RETURNING 1)
        SELECT (SELECT count(*) FROM gone_evaluations), (SELECT count(*) FROM gone_labels),
               (SELECT count(*) FROM gone_submissions), (SELECT count(*) FROM gone_authorizations),
               (SELECT count(*) FROM gone_vectors), (SELECT count(*) FROM gone_heads)
        """
}
