import Crypto
import InsightDomain
import SQLiteClient
import Synchronization

/// The durable record of evaluations, consumption reports and labels, written through the
/// group-commit writer. Each operation's reads and writes run in one transaction on the
/// writer thread, so concurrent reports for one evaluation cannot both win.
public final class SQLiteLedger: EvaluationLedger {
    private let writer: GroupCommitWriter
    /// The connection retry entries are read through, opened on the first read.
    private let reader = Mutex<SQLiteConnection?>(nil)
    /// Where each request key's retry entry is: the table has no index on the key.
    let retryKeys: RetryKeyIndex

    /// The ledger written through `writer`; reads the retry entries' keys of its database.
    public init(writer: GroupCommitWriter) throws {
        self.writer = writer
        retryKeys = try RetryKeyIndex(of: Database.open(path: writer.databasePath, create: false))
    }

    public func record(
        _ evaluation: EvaluationRecord, answer: [UInt8],
        completion: @escaping @Sendable (Result<Receipt, StoreFailure>) -> Void
    ) {
        // Hashed here, on the caller's thread: the writer, which every evaluation waits for,
        // only pairs hashes.
        let retryKeys = self.retryKeys
        writer.submit(
            leaf: evaluation.leaf(of: answer),
            { db, head in try Self.insert(evaluation, retryKeys: retryKeys, head: head, into: db) },
            completion: completion)
    }

    /// Reads the database only for a key the index holds: nearly every request names a
    /// `requestId` of its own, and learns so from memory.
    public func retryEntry(keys: [[UInt8]], now: Milliseconds) throws -> RetryEntry? {
        for key in keys {
            guard let row = retryKeys.row(of: key) else { continue }
            if let entry = try storedRetryEntry(key: key, row: row, now: now) { return entry }
        }
        return nil
    }

    /// `key`'s live entry if it is in `row` (the index may name a row that holds another key,
    /// or none).
    private func storedRetryEntry(key: [UInt8], row: Int64, now: Milliseconds) throws -> RetryEntry? {
        try reader.withLock { reader in
            let db: SQLiteConnection
            if let open = reader {
                db = open
            } else {
                db = try Database.open(path: writer.databasePath, create: false)
                reader = db
            }
            // With the head of the batch that committed the first answer (migration 0023).
            return try db.cached(
                """
                SELECT r.digest, r.event_id, r.answer, r.expires_at, h.jws, h.leaves FROM retry_entries r
                LEFT JOIN receipt_heads h ON h.instance = r.head_instance AND h.tenant = r.head_tenant
                    AND h.environment = r.head_environment AND h.sequence = r.head_sequence
                WHERE r.entry = ? AND r.request_key = ? AND r.expires_at > ?
                """
            ).first([row, key, now]) { found in
                RetryEntry(
                    key: key, digest: found.blob(0) ?? [], eventId: found.text(1) ?? "", answer: found.blob(2) ?? [],
                    expiresAt: found.int64(3),
                    firstHead: found.text(4).flatMap(SignedHead.init(jws:)).map { LoggedHead(signed: $0, leaves: found.blob(5) ?? []) })
            }
        }
    }

    public func reissue(
        answer: [UInt8], tenant: String, environment: Environment,
        completion: @escaping @Sendable (Result<Receipt, StoreFailure>) -> Void
    ) {
        let leaf = ReceiptLeaf(hash: MerkleTree.leafHash(of: answer), tenant: tenant, environment: environment.rawValue)
        writer.submit(leaf: leaf, { _, _ in }, completion: completion)
    }

    public func report(
        _ report: ConsumptionReport,
        completion: @escaping @Sendable (Result<ConsumptionResult, StoreFailure>) -> Void
    ) {
        writer.submit({ db in try Self.apply(report, in: db) }, completion: completion)
    }

    public func submit(
        _ submission: LabelSubmission,
        completion: @escaping @Sendable (Result<LabelSubmissionResult, StoreFailure>) -> Void
    ) {
        writer.submit({ db in try Self.apply(submission, in: db) }, completion: completion)
    }

    // MARK: - Evaluations

    /// `head`: where the head of the batch that commits `e` will stand, which its retry entry names.
    static func insert(_ e: EvaluationRecord, retryKeys: RetryKeyIndex, head: HeadPlace?, into db: SQLiteConnection) throws {
        guard e.insights.count <= InsightSlots.firstShadow,
            e.shadowInsights.count <= InsightSlots.perEvaluation - InsightSlots.firstShadow
        else {
            throw StoreError.invalid("an evaluation holds at most \(InsightSlots.firstShadow) insights and as many shadow answers")
        }
        // First, so that a request racing another under the same key fails before writing more.
        if let retry = e.retry { try insert(retry, head: head, now: e.createdAt, keys: retryKeys, into: db) }
        // Bound straight from the record (`run(count:)`): this runs on the writer thread, which
        // every evaluation waits for, so each copy and release of a value is paid by all of them.
        try db.cached(
            """
            INSERT INTO evaluations (event_id, caller_id, environment, category, created_at, report_by,
                                     hash_key_id, account_hash, device_hash, counterparty_hash,
                                     tracked_value, raised_by_velocity, decision_action, decision_reasons, policy_version,
                                     source_platform, source_kit, source_version)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """
        ).run(count: 18) { b in
            b.text(e.eventId); b.text(e.callerId); b.text(e.environment.rawValue); b.text(e.category.rawValue)
            b.integer(e.createdAt); b.integer(e.reportConsumptionBy); b.text(e.subject.keyId)
            b.blob(e.subject.account); b.blob(e.subject.device); b.blob(e.subject.counterparty)
            b.text(e.trackedValue?.rawValue); b.integer(e.raisedByVelocity ? 1 : 0)
            b.integer(e.decision.map { Int64($0.action.code) })
            b.text(e.decision.flatMap { $0.reasons.isEmpty ? nil : joined($0.reasons) }); b.text(e.decision?.policyVersion)
            b.text(e.source?.platform.rawValue); b.text(e.source?.kit); b.text(e.source?.version)
        }
        let rowid = db.lastInsertRowid
        let firstSlot = InsightSlots.first(ofEvaluation: rowid)
        let insertInsight = try db.cached(
            """
            INSERT INTO insights (slot, insight_id, type, schema_version, model_version, value, error_code, reasons, score_bin)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        try insert(e.insights, from: 0, of: e.eventId, at: firstSlot, with: insertInsight)
        try insert(e.shadowInsights, from: InsightSlots.firstShadow, of: e.eventId, at: firstSlot, with: insertInsight)
        if let vector = e.trainingVector { try insert(vector, of: e, rowid: rowid, into: db) }
    }

    /// Inserts `list` at positions `first`, `first + 1`, … of the evaluation whose first slot is `firstSlot`.
    private static func insert(
        _ list: [InsightRecord], from first: Int, of eventId: String, at firstSlot: Int64,
        with insertInsight: SQLiteStatement
    ) throws {
        // Read in place: iterating the array copied each insight (its strings and reasons).
        try list.withUnsafeBufferPointer { insights in
            for k in insights.indices {
                let position = first + k
                var value: String?, errorCode: String?, reasons = ""
                switch insights[k].outcome {
                case .value(let v, let r): value = v.rawValue; reasons = joined(r)
                case .error(let code, _): errorCode = code.rawValue
                }
                // An id made from the event id is found through it; any other is kept (and indexed).
                let storedId = StoredInsightId.stored(insights[k].insightId, eventId: eventId, position: position)
                try insertInsight.run(count: 9) { b in
                    b.integer(firstSlot + Int64(position)); b.text(storedId)
                    b.text(insights[k].type); b.integer(Int64(insights[k].schemaVersion))
                    b.text(insights[k].modelVersion); b.text(value); b.text(errorCode); b.text(reasons)
                    b.integer(insights[k].scoreBin.map { Int64($0) })
                }
            }
        }
    }

    /// Keeps what a retry of the evaluation's request is answered from. A live entry under the
    /// key makes the insert fail, and with it the evaluation; an expired one is left to the sweep.
    /// Live: `RetryEntry.isLive(at:)`, in SQL.
    ///
    /// The entries are appended in the order of their numbers (`entry`, the rowid) (no index: `RetryKeyIndex` finds
    /// a key's row), so each commit writes the table's last pages, not a random page per entry.
    /// The entry names `head`, the head its answer is a leaf of (migrations 0023 and 0024).
    static func insert(
        _ retry: RetryEntry, head: HeadPlace?, now: Milliseconds, keys: RetryKeyIndex, into db: SQLiteConnection
    ) throws {
        try sweepExpiredRetryEntries(now: now, keys: keys, in: db)
        if let row = keys.row(of: retry.key),
            try db.cached("SELECT 1 FROM retry_entries WHERE entry = ? AND request_key = ? AND expires_at > ?")
                .first([row, retry.key, now], row: { _ in true }) != nil
        {
            throw StoreError.invalid("a live retry entry holds this request's key")
        }
        try db.cached(
            """
            INSERT INTO retry_entries (request_key, digest, event_id, answer, expires_at,
                                       head_instance, head_tenant, head_environment, head_sequence)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """
        ).run(count: 9) { b in
            b.blob(retry.key); b.blob(retry.digest); b.text(retry.eventId); b.blob(retry.answer); b.integer(retry.expiresAt)
            b.text(head?.chain.instance); b.text(head.map { $0.chain.tenant ?? "" })
            b.text(head.map { $0.chain.environment ?? "" }); b.integer(head?.sequence)
        }
        keys.set(retry.key, row: db.lastInsertRowid)
        if retry.expiresAt < keys.nextSweep.load(ordering: .relaxed) { keys.nextSweep.store(retry.expiresAt, ordering: .relaxed) }
    }

    /// Deletes the oldest two entries if they expired, so that the table holds about one
    /// consumption grace of entries. Entries expire in the order they were stored (one grace
    /// for all), so the oldest are the first to go; after the grace is shortened, the entries
    /// stored under the longer one hold the newer ones back until they expire themselves.
    /// The table is read only once its oldest entry can have expired (`RetryKeyIndex.nextSweep`):
    /// most inserts, within a grace of the oldest, skip the statement.
    static func sweepExpiredRetryEntries(now: Milliseconds, keys: RetryKeyIndex, in db: SQLiteConnection) throws {
        guard now >= keys.nextSweep.load(ordering: .relaxed) else { return }
        let oldest = try db.cached("SELECT entry, request_key, expires_at FROM retry_entries ORDER BY entry LIMIT 2")
        var expired: [(row: Int64, key: [UInt8])] = []
        var oldestLive: Milliseconds?
        try oldest.bind(count: 0) { _ in }
        while try oldest.step() {
            if oldest.int64(2) <= now {
                expired.append((oldest.int64(0), oldest.blob(1) ?? []))
            } else if oldestLive == nil {
                oldestLive = oldest.int64(2)
            }
        }
        for entry in expired {
            try db.cached("DELETE FROM retry_entries WHERE entry = ?").run(count: 1) { $0.integer(entry.row) }
            keys.remove(entry.key, row: entry.row)
        }
        // Two expired: more may have; none left: the next entry stored sets it.
        let next = oldestLive ?? (expired.count == 2 ? .min : .max)
        keys.nextSweep.store(next, ordering: .relaxed)
    }

    /// Keeps an evaluation's training vector (its caller opted in), in the evaluation's transaction.
    static func insert(_ vector: TrainingVector, of e: EvaluationRecord, rowid: Int64, into db: SQLiteConnection) throws {
        try db.cached(
            """
            INSERT INTO training_vectors (evaluation, insight_id, tenant, environment, category, model_version, created_at, features)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """
        ).run(
            rowid, vector.insightId, vector.tenant, e.environment.rawValue, e.category.rawValue,
            vector.modelVersion, e.createdAt, TrainingVector.encode(vector.features))
    }

    /// Reason codes joined with commas, by appending: `joined(separator:)` is not specialised
    /// here and runs generically on the writer thread, which every evaluation waits for.
    private static func joined(_ codes: [String]) -> String {
        var out = ""
        for code in codes {
            if !out.isEmpty { out += "," }
            out += code
        }
        return out
    }

    // MARK: - Consumption

    static func apply(_ r: ConsumptionReport, in db: SQLiteConnection) throws -> ConsumptionResult {
        guard
            let (rowid, reportBy, createdAt) = try db.cached(
                "SELECT rowid, report_by, created_at FROM evaluations WHERE event_id = ? AND caller_id = ? AND environment = ?"
            )
            .first([r.eventId, r.callerId, r.environment.rawValue], row: { ($0.int64(0), $0.int64(1), $0.int64(2)) })
        else {
            return .evaluationNotFound
        }
        // Only served insights can have been used: a shadow answer was never returned.
        let slots = InsightSlots.servedRange(ofEvaluation: rowid)
        // Each used id is compared with the rows as they are: an id made from the event id is
        // checked by its bytes, so no id is made (nor a set of them) on the writer thread.
        let rows = try db.cached("SELECT slot, insight_id FROM insights WHERE slot BETWEEN ? AND ?")
            .query([slots.first, slots.last]) { row in (position: Int(row.int64(0) - slots.first), stored: row.text(1)) }
        let unknown = r.insightIdsUsed.filter { id in
            !rows.contains { StoredInsightId.row(stored: $0.stored, at: $0.position, of: r.eventId, is: id) }
        }
        if !unknown.isEmpty { return .unknownInsightIds(unknown) }
        if let intervention = r.intervention, let refusal = try refusal(of: intervention, r, createdAt: createdAt, in: db) {
            return .interventionRefused(refusal)
        }
        let used = r.insightIdsUsed.joined(separator: ",")
        if let existing = try db.cached(
            """
            SELECT status, insight_ids, intervention, template_id, template_version, shown_at, response,
                   hold_started_at, hold_ended_at, hold_told_at
            FROM consumption_reports WHERE event_id = ?
            """
        )
        .first(
            [r.eventId],
            row: { row in
                (
                    row.text(0) ?? "", row.text(1) ?? "",
                    RecordedIntervention(
                        storedKind: row.text(2), templateId: row.text(3), templateVersion: row.optionalInt64(4),
                        shownAt: row.optionalInt64(5), response: row.text(6), holdStartedAt: row.optionalInt64(7),
                        holdEndedAt: row.optionalInt64(8), holdToldAt: row.optionalInt64(9))
                )
            })
        {
            return .repeated(
                r, stored: ConsumptionStatus(rawValue: existing.0),
                insightIds: existing.1.split(separator: ",").map(String.init), intervention: existing.2)
        }
        let timeliness = Timeliness(reportedAt: r.reportedAt, deadline: reportBy)
        let i = r.intervention
        try db.cached(
            """
            INSERT INTO consumption_reports (event_id, status, insight_ids, reported_at, timeliness,
                intervention, template_id, template_version, shown_at, response, hold_started_at, hold_ended_at, hold_told_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """
        )
        .run(
            r.eventId, r.status.rawValue, used, r.reportedAt, timeliness.rawValue,
            i?.kind.rawValue, i?.template?.id, i?.template.map { Int64($0.version) }, i?.shownAt, i?.response?.rawValue,
            i?.hold?.startedAt, i?.hold?.endedAt, i?.hold?.toldAt)
        return .recorded(timeliness)
    }

    /// `intervention` against the catalogue of the reporter's tenant and environment and the
    /// evaluation's times (`InterventionRefusal.check`).
    private static func refusal(
        of intervention: RecordedIntervention, _ r: ConsumptionReport, createdAt: Milliseconds, in db: SQLiteConnection
    ) throws -> InterventionRefusal? {
        var entry: (kind: InterventionKind, retiredAt: Milliseconds?)?
        if let template = intervention.template {
            entry = try db.cached(
                """
                SELECT kind, retired_at FROM intervention_templates
                WHERE tenant = ? AND environment = ? AND template_id = ? AND version = ?
                """
            )
            .first([r.tenant, r.environment.rawValue, template.id, Int64(template.version)]) { row in
                (InterventionKind(rawValue: row.text(0) ?? "") ?? .none, row.optionalInt64(1))
            }
        }
        return .check(intervention, template: entry, createdAt: createdAt, reportedAt: r.reportedAt)
    }

    // MARK: - Labels

    /// A label names an insight of the submitter's tenant and environment, or it is
    /// `unknownInsight`: whether another tenant's insight exists or is labelled is never revealed.
    /// A submission that changed nothing (no item accepted) is not kept for replays: answering
    /// it again gives the same results, and a caller sending batches of unknown ids cannot make
    /// the store grow.
    static func apply(_ s: LabelSubmission, in db: SQLiteConnection) throws -> LabelSubmissionResult {
        if let previous = try db.cached("SELECT body_hash, results FROM label_submissions WHERE caller_id = ? AND key_hash = ?")
            .first([s.callerId, s.idempotencyKeyHash], row: { ($0.blob(0) ?? [], $0.text(1) ?? "") })
        {
            return .replaying(s, keptBodyHash: previous.0, keptResults: StoreSchema.decodeLabelResults(previous.1))
        }
        // A label outlives its evaluation (retention counts from receipt), so its tenant is its labeller's.
        let findLabel = try db.cached(
            """
            SELECT l.outcome, l.fraud_type FROM labels l LEFT JOIN callers c ON c.caller_id = l.caller_id
            WHERE l.insight_id = ? AND l.environment = ? AND coalesce(c.tenant, 'default') = ?
            """)
        let insertLabel = try db.cached(
            """
            INSERT INTO labels (insight_id, environment, caller_id, outcome, fraud_type, discovered_at, received_at,
                                category, model_version, value)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        var results: [LabelResultStatus] = []
        for item in s.items {
            guard let label = item else { results.append(.invalid); continue }
            if let existing = try findLabel.first(
                [label.insightId, s.environment.rawValue, s.tenant],
                row: {
                    ($0.text(0) ?? "", $0.text(1))
                })
            {
                results.append(.repeating(label, storedOutcome: existing.0, storedFraudType: existing.1))
                continue
            }
            guard let insight = try findInsight(label.insightId, tenant: s.tenant, environment: s.environment, in: db) else {
                results.append(.unknownInsight)
                continue
            }
            try insertLabel.run(
                label.insightId, s.environment.rawValue, s.callerId, label.outcome.rawValue,
                label.fraudType?.rawValue, label.discoveredAt, s.receivedAt,
                insight.category, insight.modelVersion, insight.value)
            results.append(.accepted)
        }
        guard results.contains(.accepted) else { return .processed(results, replayed: false) }
        try db.cached(
            """
            INSERT INTO label_submissions (caller_id, key_hash, body_hash, results, created_at) VALUES (?, ?, ?, ?, ?)
            """
        ).run(s.callerId, s.idempotencyKeyHash, s.bodyHash, StoreSchema.encode(results), s.receivedAt)
        return .processed(results, replayed: false)
    }

    /// What a label records of the insight `insightId` of `tenant` in `environment`, if there is
    /// one (a row whose caller is unknown counts as tenant `default`'s, as every row before tenants): through its evaluation's event id and its slot when the id was made from the event id,
    /// else through the index of stored ids.
    private static func findInsight(_ insightId: String, tenant: String, environment: Environment, in db: SQLiteConnection) throws
        -> (category: String?, modelVersion: String?, value: String?)?
    {
        let row = { (r: SQLiteStatement) in (category: r.text(0), modelVersion: r.text(1), value: r.text(2)) }
        if let origin = EvaluationIdentifiers.origin(ofInsightId: insightId) {
            // A shadow answer is labelled through its evaluation's served insight, never by its own id.
            guard origin.position < InsightSlots.firstShadow else { return nil }
            if let found = try db.cached(findMadeInsight)
                .first([InsightSlots.perEvaluation, origin.position, origin.eventId, environment.rawValue, tenant], row: row)
            {
                return found
            }
        }
        return try db.cached(findStoredInsight).first(
            [
                InsightSlots.perEvaluation, insightId, environment.rawValue, tenant,
                InsightSlots.firstShadow
            ], row: row)
    }

    /// An insight by its evaluation's event id and its position (an id made from the event id).
    static let findMadeInsight: StaticString = """
        SELECT e.category, i.model_version, i.value FROM evaluations e JOIN insights i ON i.slot = e.rowid * ? + ?
        LEFT JOIN callers c ON c.caller_id = e.caller_id
        WHERE e.event_id = ? AND e.environment = ? AND i.insight_id IS NULL AND coalesce(c.tenant, 'default') = ?
        """

    /// An insight by its stored id (one not made from the event id).
    static let findStoredInsight: StaticString = """
        SELECT e.category, i.model_version, i.value FROM insights i JOIN evaluations e ON e.rowid = i.slot / ?1
        LEFT JOIN callers c ON c.caller_id = e.caller_id
        WHERE i.insight_id = ?2 AND e.environment = ?3 AND coalesce(c.tenant, 'default') = ?4 AND i.slot % ?1 < ?5
        """
}
