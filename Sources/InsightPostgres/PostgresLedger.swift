import Crypto
import InsightDomain
import PostgresClient

/// The durable record of evaluations, consumption reports and labels on PostgreSQL, written
/// through the pipelined writer. Each job is a fixed list of statements that decides in SQL:
///
/// - an evaluation and its insights are one statement (the insert of the evaluation returns
///   its number, from which the insights' slots are made); the evaluations of a batch that keep
///   no training vector are one statement together (`EvaluationRows`);
/// - a consumption report takes the evaluation's advisory lock, then one statement looks the
///   evaluation and its insights up, checks the ids, inserts the report unless one exists, and
///   returns what it found;
/// - a label submission takes the locks of its idempotency key and of each insight it labels,
///   then one statement replays or processes it, item by item as the SQLite store does.
///
/// The locks make each check-then-insert atomic across instances: two instances handling
/// conflicting reports for one evaluation, or one idempotency key, take turns, and the second
/// sees what the first committed.
public final class PostgresLedger: EvaluationLedger {
    private let writer: PostgresWriter
    /// Retry entries are read through the pool, whichever instance wrote them.
    private let reads: PostgresReadPool

    init(writer: PostgresWriter, reads: PostgresReadPool) {
        self.writer = writer
        self.reads = reads
    }

    public func record(
        _ evaluation: EvaluationRecord, answer: [UInt8],
        completion: @escaping @Sendable (Result<Receipt, StoreFailure>) -> Void
    ) {
        // Hashed here, on the caller's thread: the writer only pairs hashes.
        let leaf = evaluation.leaf(of: answer)
        guard evaluation.trainingVector != nil || evaluation.retry != nil else {
            return writer.submit(evaluation: { .evaluation(try EvaluationRows(evaluation)) }, leaf: leaf, completion: completion)
        }
        // With rows of other tables, the evaluation is written by statements of its own.
        writer.submit(
            evaluation: {
                .statements(
                    (evaluation.retry.map { Self.insert($0, now: evaluation.createdAt) } ?? []) + [try Self.insert(evaluation)]
                        + (evaluation.trainingVector.map { [Self.insert($0, of: evaluation)] } ?? []))
            }, leaf: leaf, retryKey: evaluation.retry?.key, completion: completion)
    }

    public func retryEntry(keys: [[UInt8]], now: Milliseconds) throws -> RetryEntry? {
        guard !keys.isEmpty else { return nil }
        return try reads.read { db in
            try db.query(
                // With the head of the batch that committed the first answer (migration 0023),
                // whichever instance's it is.
                """
                SELECT r.request_key, r.digest, r.event_id, r.answer, r.expires_at, h.jws, h.leaves FROM retry_entries r
                LEFT JOIN receipt_heads h ON h.instance = r.head_instance AND h.tenant = r.head_tenant
                    AND h.environment = r.head_environment AND h.sequence = r.head_sequence
                WHERE r.request_key = ANY($1::bytea[]) AND r.expires_at > $2::bigint
                """, [SQLValues.arrayLiteral(keys.map { SQLValues.arrayElement(PostgresValue.bytea($0)) }), .int64(now)]
            ).first.map { row in
                RetryEntry(
                    key: row.bytea(0) ?? [], digest: row.bytea(1) ?? [], eventId: row.text(2) ?? "",
                    answer: row.bytea(3) ?? [], expiresAt: row.int64(4) ?? 0,
                    firstHead: row.text(5).flatMap(SignedHead.init(jws:)).map { LoggedHead(signed: $0, leaves: row.bytea(6) ?? []) })
            }
        }
    }

    public func reissue(
        answer: [UInt8], tenant: String, environment: Environment,
        completion: @escaping @Sendable (Result<Receipt, StoreFailure>) -> Void
    ) {
        let leaf = ReceiptLeaf(hash: MerkleTree.leafHash(of: answer), tenant: tenant, environment: environment.rawValue)
        writer.submit(evaluation: { .statements([]) }, leaf: leaf, completion: completion)
    }

    public func report(
        _ report: ConsumptionReport,
        completion: @escaping @Sendable (Result<ConsumptionResult, StoreFailure>) -> Void
    ) {
        // PostgreSQL text holds no NUL, so no stored event id has one (and libpq would cut the
        // parameter at it): such an id names nothing.
        guard !Self.holdsNul(report.eventId) else {
            return writer.submit({ [] }, decode: { _ in .evaluationNotFound }, completion: completion)
        }
        writer.submit({ Self.statements(report) }, decode: { try Self.decode($0, report) }, completion: completion)
    }

    public func submit(
        _ submission: LabelSubmission,
        completion: @escaping @Sendable (Result<LabelSubmissionResult, StoreFailure>) -> Void
    ) {
        writer.submit({ Self.statements(submission) }, decode: { try Self.decode($0, submission) }, completion: completion)
    }

    /// Whether `text` holds a NUL, which no PostgreSQL text value can.
    static func holdsNul(_ text: String) -> Bool { text.utf8.contains(0) }

    // MARK: - Evaluations

    /// Slots per evaluation in `insights` (migration 0007): the evaluation's number times this
    /// plus the insight's position.
    static let slotsPerEvaluation = 8
    /// The first shadow position (migration 0015): the served insights are at positions 0 to 3,
    /// the shadow versions' answers at 4 to 7.
    static let firstShadow = EvaluationRecord.maxServedInsights

    static func insert(_ e: EvaluationRecord) throws -> WriteStatement {
        try EvaluationRows(e).statement
    }

    /// Keeps what a retry of the evaluation's request is answered from (as the SQLite store
    /// does): the key's expired entry and up to two other expired ones (not locked by another
    /// writer) go first; a live entry under the key fails the insert (the unique key), and the
    /// evaluation's transaction with it. Live: `RetryEntry.isLive(at:)`, in SQL.
    static func insert(_ retry: RetryEntry, now: Milliseconds) -> [WriteStatement] {
        [
            WriteStatement(
                name: "insightd_retry_expired",
                sql: """
                    DELETE FROM retry_entries WHERE (request_key = $1::bytea AND expires_at <= $2::bigint)
                        OR request_key IN (SELECT request_key FROM retry_entries WHERE expires_at <= $2::bigint
                                           LIMIT 2 FOR UPDATE SKIP LOCKED)
                    """, parameters: [.bytea(retry.key), .int64(now)]),
            WriteStatement(
                name: "insightd_retry_entry",
                sql: """
                    INSERT INTO retry_entries (request_key, digest, event_id, answer, expires_at)
                    VALUES ($1::bytea, $2::bytea, $3::text, $4::bytea, $5::bigint)
                    """,
                parameters: [
                    .bytea(retry.key), .bytea(retry.digest), .text(retry.eventId), .bytea(retry.answer),
                    .int64(retry.expiresAt)
                ])
        ]
    }

    /// Keeps an evaluation's training vector (its caller opted in), in the evaluation's
    /// transaction, under the number its insert gave it.
    static func insert(_ vector: TrainingVector, of e: EvaluationRecord) -> WriteStatement {
        WriteStatement(
            name: "insightd_training_vector",
            sql: """
                INSERT INTO training_vectors (evaluation, insight_id, tenant, environment, category, model_version, created_at, features)
                SELECT number, $2::text, $3::text, environment, category, $4::text, created_at, $5::bytea
                FROM evaluations WHERE event_id = $1::text
                """,
            parameters: [
                .text(e.eventId), .text(vector.insightId), .text(vector.tenant), .text(vector.modelVersion),
                .bytea(TrainingVector.encode(vector.features))
            ])
    }

    /// The insert of an evaluation with 0 through 4 insights (`[served]`) and 0 through 4
    /// shadow answers (`[served][shadows]`).
    static let recordSQL: [[String]] = (0...firstShadow).map { served in
        (0...(slotsPerEvaluation - firstShadow)).map { shadows in
            recordSQL(positions: Array(0..<served) + Array(firstShadow..<(firstShadow + shadows)))
        }
    }

    /// The insert of an evaluation with insights at `positions`.
    static func recordSQL(positions: [Int]) -> String {
        let evaluation = """
            INSERT INTO evaluations (event_id, caller_id, environment, category, created_at, report_by, hash_key_id,
                                     account_hash, device_hash, counterparty_hash, tracked_value, raised_by_velocity,
                                     decision_action, decision_reasons, policy_version, source_platform, source_kit,
                                     source_version)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
            """
        guard !positions.isEmpty else { return evaluation }
        let rows = positions.enumerated().map { k, position in
            let p = EvaluationRows.evaluationColumns + k * 8
            return "(\(position), $\(p + 1)::text, $\(p + 2)::text, $\(p + 3)::bigint, $\(p + 4)::text, $\(p + 5)::text, "
                + "$\(p + 6)::text, $\(p + 7)::text, $\(p + 8)::bigint)"
        }
        return """
            WITH e AS (\(evaluation) RETURNING number)
            INSERT INTO insights (slot, insight_id, type, schema_version, model_version, value, error_code, reasons, score_bin)
            SELECT e.number * \(slotsPerEvaluation) + v.position, v.insight_id, v.type, v.schema_version, v.model_version,
                   v.value, v.error_code, v.reasons, v.score_bin
            FROM e, (VALUES \(rows.joined(separator: ", ")))
                AS v(position, insight_id, type, schema_version, model_version, value, error_code, reasons, score_bin)
            """
    }

    // MARK: - Consumption

    static func statements(_ r: ConsumptionReport) -> [WriteStatement] {
        // Each used id with the position it names in this evaluation when it was made from the
        // event id (-1 otherwise): such an id is the row at that slot that keeps no id of its own.
        // An id holding a NUL is sent as NULL, which matches no row: it is unknown.
        let ids: [String?] = r.insightIdsUsed.map { holdsNul($0) ? nil : $0 }
        let positions: [Int64?] = r.insightIdsUsed.map { id in
            guard let origin = EvaluationIdentifiers.origin(ofInsightId: id), origin.eventId == r.eventId else { return -1 }
            return Int64(origin.position)
        }
        return [
            lockStatement([SQLValues.lockKey("report", r.eventId)]),
            WriteStatement(
                name: "insightd_report", sql: reportSQL,
                parameters: [
                    .text(r.eventId), .text(r.callerId), .text(r.environment.rawValue),
                    SQLValues.textArray(ids), SQLValues.integerArray(positions),
                    .text(r.status.rawValue), .text(r.insightIdsUsed.joined(separator: ",")), .int64(r.reportedAt)
                ] + interventionParameters(r))
        ]
    }

    /// $9 tenant, $10 kind, $11 template id, $12 template version, $13 shown at, $14 response,
    /// $15–$17 the hold's start, end and telling; NULL where the report has none.
    static func interventionParameters(_ r: ConsumptionReport) -> [PostgresValue?] {
        let i = r.intervention
        return [
            .text(r.tenant), i.map { .text($0.kind.rawValue) }, i?.template.map { .text($0.id) },
            i?.template.map { .int64(Int64($0.version)) }, i?.shownAt.map { .int64($0) }, i?.response.map { .text($0.rawValue) },
            i?.hold.map { .int64($0.startedAt) }, i?.hold.map { .int64($0.endedAt) }, i?.hold.map { .int64($0.toldAt) }
        ]
    }

    /// $1 event id, $2 caller, $3 environment, $4 the used ids, $5 their positions, $6 status,
    /// $7 the ids as stored, $8 reported at, $9–$17 the intervention (`interventionParameters`).
    /// Only served insights (positions 0 to 3) can have been used: a shadow answer was never
    /// returned. Answers: the evaluation exists; the ordinals of the unknown ids; the stored
    /// report's status, ids and intervention; the timeliness of the report inserted now
    /// (`Timeliness(reportedAt:deadline:)` in SQL, so that the report is one statement); the
    /// evaluation's creation and the named template's kind and retirement, from which `decode`
    /// tells why an intervention was refused (`InterventionRefusal.check`, which `sane` and
    /// `template` restate so that a refused intervention is never inserted).
    static let reportSQL = """
        WITH e AS (
            SELECT number, report_by, created_at FROM evaluations WHERE event_id = $1::text AND caller_id = $2::text AND environment = $3::text),
        template AS (
            SELECT kind, retired_at FROM intervention_templates
            WHERE tenant = $9::text AND environment = $3::text AND template_id = $11::text AND version = $12::bigint),
        bounds AS (
            SELECT e.created_at - \(RecordedIntervention.clockTolerance) AS low, $8::bigint + \(RecordedIntervention.clockTolerance) AS high FROM e),
        sane AS (
            SELECT 1 FROM bounds WHERE $10::text IS NULL OR (
                ($13::bigint IS NULL OR $13::bigint BETWEEN low AND high)
                AND ($15::bigint IS NULL OR ($15::bigint BETWEEN low AND high AND $16::bigint BETWEEN low AND high
                     AND $16::bigint >= $15::bigint AND $17::bigint BETWEEN low AND high))
                AND ($11::text IS NULL OR EXISTS (
                    SELECT 1 FROM template WHERE kind = $10::text AND (retired_at IS NULL OR $13::bigint < retired_at))))),
        used AS (
            SELECT u.id, u.position, u.ord FROM unnest($4::text[], $5::bigint[]) WITH ORDINALITY AS u(id, position, ord)),
        unknown AS (
            SELECT used.ord FROM used, e WHERE NOT EXISTS (
                SELECT 1 FROM insights i
                WHERE i.slot BETWEEN e.number * 8 AND e.number * 8 + 3
                  AND (i.insight_id = used.id OR (i.insight_id IS NULL AND i.slot = e.number * 8 + used.position)))),
        existing AS (
            SELECT status, insight_ids, intervention, template_id, template_version, shown_at, response,
                   hold_started_at, hold_ended_at, hold_told_at
            FROM consumption_reports WHERE event_id = $1::text),
        inserted AS (
            INSERT INTO consumption_reports (event_id, status, insight_ids, reported_at, timeliness,
                intervention, template_id, template_version, shown_at, response, hold_started_at, hold_ended_at, hold_told_at)
            SELECT $1::text, $6::text, $7::text, $8::bigint, CASE WHEN $8::bigint <= e.report_by THEN 'onTime' ELSE 'late' END,
                   $10::text, $11::text, $12::bigint, $13::bigint, $14::text, $15::bigint, $16::bigint, $17::bigint
            FROM e WHERE NOT EXISTS (SELECT 1 FROM unknown) AND NOT EXISTS (SELECT 1 FROM existing) AND EXISTS (SELECT 1 FROM sane)
            ON CONFLICT (event_id) DO NOTHING
            RETURNING timeliness)
        SELECT EXISTS (SELECT 1 FROM e), (SELECT string_agg(ord::text, ',' ORDER BY ord) FROM unknown),
               (SELECT status FROM existing), (SELECT insight_ids FROM existing), (SELECT timeliness FROM inserted),
               (SELECT created_at FROM e), EXISTS (SELECT 1 FROM template), (SELECT kind FROM template),
               (SELECT retired_at FROM template),
               (SELECT intervention FROM existing), (SELECT template_id FROM existing), (SELECT template_version FROM existing),
               (SELECT shown_at FROM existing), (SELECT response FROM existing), (SELECT hold_started_at FROM existing),
               (SELECT hold_ended_at FROM existing), (SELECT hold_told_at FROM existing)
        """

    static func decode(_ results: [PostgresResult], _ r: ConsumptionReport) throws -> ConsumptionResult {
        guard results.count == 2, let row = results[1].first else { throw PostgresStoreError("no answer to a report") }
        guard row.bool(0) == true else { return .evaluationNotFound }
        if let unknown = row.text(1) {
            let ordinals = unknown.split(separator: ",").compactMap { Int($0) }
            return .unknownInsightIds(ordinals.compactMap { r.insightIdsUsed.indices.contains($0 - 1) ? r.insightIdsUsed[$0 - 1] : nil })
        }
        if let timeliness = row.text(4) {
            guard let value = Timeliness(rawValue: timeliness) else { throw PostgresStoreError("unknown timeliness") }
            return .recorded(value)
        }
        if let intervention = r.intervention, let createdAt = row.int64(5) {
            let template = row.bool(6) == true ? (InterventionKind(rawValue: row.text(7) ?? "") ?? .none, row.int64(8)) : nil
            if let refusal = InterventionRefusal.check(intervention, template: template, createdAt: createdAt, reportedAt: r.reportedAt) {
                return .interventionRefused(refusal)
            }
        }
        guard let status = row.text(2), let ids = row.text(3) else {
            throw PostgresStoreError("a report was neither stored nor found")
        }
        let stored = RecordedIntervention(
            storedKind: row.text(9), templateId: row.text(10), templateVersion: row.int64(11), shownAt: row.int64(12),
            response: row.text(13), holdStartedAt: row.int64(14), holdEndedAt: row.int64(15), holdToldAt: row.int64(16))
        return .repeated(
            r, stored: ConsumptionStatus(rawValue: status), insightIds: ids.split(separator: ",").map(String.init),
            intervention: stored)
    }

    // MARK: - Labels

    static func statements(_ s: LabelSubmission) -> [WriteStatement] {
        var keys = [SQLValues.lockKey([Array("label-key".utf8), Array(s.callerId.utf8), s.idempotencyKeyHash])]
        var ids: [String?] = [], outcomes: [String?] = [], fraudTypes: [String?] = [], discovered: [String?] = []
        var originEvents: [String?] = [], originPositions: [Int64?] = []
        var valid: [Int64?] = []
        for item in s.items {
            valid.append(item == nil ? 0 : 1)
            // An id holding a NUL names no stored insight (PostgreSQL text holds none): sent as
            // NULL, it matches nothing and is unknownInsight.
            let id = item.flatMap { holdsNul($0.insightId) ? nil : $0.insightId }
            ids.append(id)
            outcomes.append(item?.outcome.rawValue)
            fraudTypes.append(item?.fraudType?.rawValue)
            discovered.append(item?.discoveredAt)
            let origin = id.flatMap { EvaluationIdentifiers.origin(ofInsightId: $0) }
            // A shadow answer is labelled through its evaluation's served insight, never by its
            // own id: such an id is sent as naming nothing, so the item is unknownInsight.
            let shadow = origin.map { $0.position >= firstShadow } ?? false
            ids[ids.count - 1] = shadow ? nil : id
            originEvents.append(shadow ? nil : origin?.eventId)
            originPositions.append(shadow ? nil : origin.map { Int64($0.position) })
            // Labels are keyed by insight id alone: one lock per id, whatever the tenant.
            if let id { keys.append(SQLValues.lockKey("label", id)) }
        }
        return [
            lockStatement(keys),
            WriteStatement(
                name: "insightd_labels", sql: labelsSQL,
                parameters: [
                    .text(s.callerId), .bytea(s.idempotencyKeyHash), .bytea(s.bodyHash), .text(s.environment.rawValue),
                    .text(s.tenant), .int64(s.receivedAt), SQLValues.textArray(ids), SQLValues.textArray(outcomes),
                    SQLValues.textArray(fraudTypes), SQLValues.textArray(discovered), SQLValues.textArray(originEvents),
                    SQLValues.integerArray(originPositions), SQLValues.integerArray(valid)
                ])
        ]
    }

    /// $1 caller, $2 idempotency key hash, $3 body hash, $4 environment, $5 tenant, $6 received
    /// at; per item ($7…$13): insight id (NULL for an invalid item, or one that cannot name an
    /// insight), outcome, fraud type, date discovered, the event id and position the insight id
    /// was made from (NULL otherwise), and 1 for a valid item (0 for an invalid one).
    ///
    /// As the SQLite store, item by item: a label of the insight in this tenant and environment
    /// (stored, or accepted earlier in this submission) makes the item a duplicate or a conflict
    /// (`LabelResultStatus.repeating`, in SQL so that the submission is one statement);
    /// else an insight not of the tenant and environment is unknownInsight; else the item is
    /// accepted. A submission that accepted something is kept for replays. Answers: the kept
    /// submission's body hash and results (a replay), the results now, labels and submissions
    /// inserted.
    static let labelsSQL = """
        WITH prev AS (
            SELECT body_hash, results FROM label_submissions WHERE caller_id = $1::text AND key_hash = $2::bytea),
        items AS (
            SELECT t.*, min(t.ord) FILTER (WHERE t.insight_id IS NOT NULL) OVER (PARTITION BY t.insight_id) AS first_ord
            FROM unnest($7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::bigint[], $13::bigint[])
                WITH ORDINALITY AS t(insight_id, outcome, fraud_type, discovered_at, origin_event, origin_position, valid, ord)),
        existing AS (
            SELECT items.ord, l.outcome, l.fraud_type FROM items
            JOIN labels l ON l.insight_id = items.insight_id AND l.environment = $4::text
            LEFT JOIN callers c ON c.caller_id = l.caller_id
            WHERE coalesce(c.tenant, 'default') = $5::text),
        found AS (
            SELECT items.ord, f.category, f.model_version, f.value FROM items CROSS JOIN LATERAL (
                SELECT e.category, i.model_version, i.value, 0 AS preference
                FROM evaluations e JOIN insights i ON i.slot = e.number * 8 + items.origin_position
                LEFT JOIN callers c ON c.caller_id = e.caller_id
                WHERE e.event_id = items.origin_event AND e.environment = $4::text AND i.insight_id IS NULL
                  AND coalesce(c.tenant, 'default') = $5::text
                UNION ALL
                SELECT e.category, i.model_version, i.value, 1
                FROM insights i JOIN evaluations e ON e.number = i.slot / 8
                LEFT JOIN callers c ON c.caller_id = e.caller_id
                WHERE i.insight_id = items.insight_id AND e.environment = $4::text AND coalesce(c.tenant, 'default') = $5::text
                  AND i.slot % 8 < 4
                ORDER BY preference LIMIT 1) AS f),
        statuses AS (
            SELECT items.ord, items.insight_id, items.outcome, items.fraud_type, items.discovered_at,
                   found.category, found.model_version, found.value,
                   CASE WHEN items.valid = 0 THEN 'invalid'
                        WHEN existing.ord IS NOT NULL THEN
                            CASE WHEN existing.outcome = items.outcome
                                      AND existing.fraud_type IS NOT DISTINCT FROM items.fraud_type
                                 THEN 'duplicate' ELSE 'conflict' END
                        WHEN found.ord IS NULL THEN 'unknownInsight'
                        WHEN items.ord = items.first_ord THEN 'accepted'
                        WHEN earlier.outcome = items.outcome AND earlier.fraud_type IS NOT DISTINCT FROM items.fraud_type
                            THEN 'duplicate'
                        ELSE 'conflict' END AS status
            FROM items
            LEFT JOIN existing ON existing.ord = items.ord
            LEFT JOIN found ON found.ord = items.ord
            LEFT JOIN items AS earlier ON earlier.ord = items.first_ord),
        labelled AS (
            INSERT INTO labels (insight_id, environment, caller_id, outcome, fraud_type, discovered_at, received_at,
                                category, model_version, value)
            SELECT insight_id, $4::text, $1::text, outcome, fraud_type, discovered_at, $6::bigint, category, model_version, value
            FROM statuses WHERE status = 'accepted' AND NOT EXISTS (SELECT 1 FROM prev)
            RETURNING 1),
        summary AS (
            SELECT coalesce(string_agg(status, ',' ORDER BY ord), '') AS results,
                   coalesce(bool_or(status = 'accepted'), false) AS accepted
            FROM statuses),
        kept AS (
            INSERT INTO label_submissions (caller_id, key_hash, body_hash, results, created_at)
            SELECT $1::text, $2::bytea, $3::bytea, summary.results, $6::bigint FROM summary
            WHERE summary.accepted AND NOT EXISTS (SELECT 1 FROM prev)
            RETURNING 1)
        SELECT (SELECT body_hash FROM prev), (SELECT results FROM prev), (SELECT results FROM summary),
               (SELECT count(*) FROM labelled), (SELECT count(*) FROM kept)
        """

    static func decode(_ results: [PostgresResult], _ s: LabelSubmission) throws -> LabelSubmissionResult {
        guard results.count == 2, let row = results[1].first else { throw PostgresStoreError("no answer to a label submission") }
        if let previous = row.bytea(0) {
            return .replaying(s, keptBodyHash: previous, keptResults: StoreSchema.decodeLabelResults(row.text(1) ?? ""))
        }
        return .processed(StoreSchema.decodeLabelResults(row.text(2) ?? ""), replayed: false)
    }
}

/// A failure of the PostgreSQL store that is not the server's: safe to log.
struct PostgresStoreError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
