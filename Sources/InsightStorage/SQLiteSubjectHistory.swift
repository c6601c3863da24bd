import InsightDomain
import SQLiteClient

/// One subject's evaluations on SQLite (`SubjectHistory`): each hash's newest after the cursor
/// are a backward range of its kind's index (migration 0012), merged newest first; their
/// insights are each evaluation's range of slots.
enum SQLiteSubjectHistory {
    static func page(_ query: SubjectHistoryQuery, in db: SQLiteConnection) throws -> SubjectHistoryPage {
        let statement = try db.cached(evaluationsQuery(query.kind))
        let before = query.after ?? SubjectHistoryCursor(time: .max, sequence: .max)
        var found: [(rowid: Int64, entry: SubjectHistoryEntry)] = []
        for hash in Set(query.hashes) {
            found += try statement.query([hash, query.environment.rawValue, query.tenant, before.time, before.sequence,
                                          query.limit + 1]) { row in
                guard let category = OperationCategory(rawValue: row.text(3) ?? "") else {
                    throw StoreError.invalid("an evaluation has an unknown operation category")
                }
                return (row.int64(0), SubjectHistoryEntry(eventId: row.text(1) ?? "", createdAt: row.int64(2),
                                                          category: category, callerId: row.text(4) ?? "",
                                                          callerName: row.text(5), insights: []))
            }
        }
        found.sort { ($0.entry.createdAt, $0.rowid) > ($1.entry.createdAt, $1.rowid) }
        let page = found.prefix(query.limit)
        let insights = try db.cached("""
            SELECT type, model_version, value, error_code FROM insights WHERE slot BETWEEN ? AND ? ORDER BY slot
            """)
        var entries: [SubjectHistoryEntry] = []
        for (rowid, entry) in page {
            var entry = entry
            let slots = InsightSlots.range(ofEvaluation: rowid)
            entry.insights = try insights.query([slots.first, slots.last]) { row in
                guard let outcome = SubjectHistoryInsight.outcome(value: row.text(2), errorCode: row.text(3)) else {
                    throw StoreError.invalid("an insight has neither a known value nor a known error code")
                }
                return SubjectHistoryInsight(type: row.text(0) ?? "", modelVersion: row.text(1), outcome: outcome)
            }
            entries.append(entry)
        }
        let next = found.count > query.limit ? page.last.map { SubjectHistoryCursor(time: $0.entry.createdAt, sequence: $0.rowid) } : nil
        return SubjectHistoryPage(entries: entries, next: next)
    }

    /// The evaluations with hash ?1 of `kind` in environment ?2 by callers of tenant ?3 (a row
    /// whose caller is unknown counts as tenant `default`'s) before (time ?4, rowid ?5), newest
    /// first, at most ?6: a backward range of the kind's index, bounded by the cursor's time.
    static func evaluationsQuery(_ kind: IdentifierKind) -> StaticString {
        switch kind {
        case .account: """
            SELECT e.rowid, e.event_id, e.created_at, e.category, e.caller_id, c.name
            FROM evaluations e LEFT JOIN callers c ON c.caller_id = e.caller_id
            WHERE e.account_hash = ?1 AND e.created_at <= ?4 AND (e.created_at < ?4 OR e.rowid < ?5)
              AND e.environment = ?2 AND coalesce(c.tenant, 'default') = ?3
            ORDER BY e.created_at DESC, e.rowid DESC LIMIT ?6
            """
        case .device: """
            SELECT e.rowid, e.event_id, e.created_at, e.category, e.caller_id, c.name
            FROM evaluations e LEFT JOIN callers c ON c.caller_id = e.caller_id
            WHERE e.device_hash = ?1 AND e.created_at <= ?4 AND (e.created_at < ?4 OR e.rowid < ?5)
              AND e.environment = ?2 AND coalesce(c.tenant, 'default') = ?3
            ORDER BY e.created_at DESC, e.rowid DESC LIMIT ?6
            """
        case .counterparty: """
            SELECT e.rowid, e.event_id, e.created_at, e.category, e.caller_id, c.name
            FROM evaluations e LEFT JOIN callers c ON c.caller_id = e.caller_id
            WHERE e.counterparty_hash = ?1 AND e.created_at <= ?4 AND (e.created_at < ?4 OR e.rowid < ?5)
              AND e.environment = ?2 AND coalesce(c.tenant, 'default') = ?3
            ORDER BY e.created_at DESC, e.rowid DESC LIMIT ?6
            """
        }
    }
}
