import InsightDomain
import SQLiteClient

/// One subject's evaluations on SQLite (`SubjectHistory`), read by `SQLiteSubjectIndex`: for
/// each hash, its newest before the cursor among the evaluations up to the side file's
/// watermark (a backward range of the side keys, each checked against its evaluation) and among
/// those past it (a range of rowids, the tail the indexer has not reached), merged newest
/// first; their insights are each evaluation's range of slots.
enum SQLiteSubjectHistory {
    /// The page of `query`; evaluations up to `watermark` are found in the attached side file
    /// (`subjects`) when `indexed`, the others by the tail's range of rowids.
    static func page(_ query: SubjectHistoryQuery, watermark: Int64, indexed: Bool, in db: SQLiteConnection) throws -> SubjectHistoryPage {
        let before = query.after ?? SubjectHistoryCursor(time: .max, sequence: .max)
        let indexedQuery = indexed ? try db.prepare(indexedQuery(query.kind)) : nil
        let tail = try db.prepare(tailQuery(query.kind))
        var found: [(rowid: Int64, entry: SubjectHistoryEntry)] = []
        let entry = { (row: SQLiteStatement) throws -> (rowid: Int64, entry: SubjectHistoryEntry) in
            guard let category = OperationCategory(rawValue: row.text(3) ?? "") else {
                throw StoreError.invalid("an evaluation has an unknown operation category")
            }
            return (
                row.int64(0),
                SubjectHistoryEntry(
                    eventId: row.text(1) ?? "", createdAt: row.int64(2),
                    category: category, callerId: row.text(4) ?? "",
                    callerName: row.text(5), insights: [],
                    decision: row.isNull(6) ? nil : DecisionAction(code: row.int(6)))
            )
        }
        for hash in Set(query.hashes) {
            let common: [any SQLiteBindable] = [
                hash, query.environment.rawValue, query.tenant, before.time, before.sequence,
                query.limit + 1, watermark
            ]
            if let indexedQuery {
                found += try indexedQuery.query(common + [SubjectIndexEntry.code(query.kind)], row: entry)
            }
            found += try tail.query(common, row: entry)
        }
        found.sort { ($0.entry.createdAt, $0.rowid) > ($1.entry.createdAt, $1.rowid) }
        let page = found.prefix(query.limit)
        let insights = try db.cached(
            """
            SELECT type, model_version, value, error_code FROM insights WHERE slot BETWEEN ? AND ? ORDER BY slot
            """)
        var entries: [SubjectHistoryEntry] = []
        for (rowid, entry) in page {
            var entry = entry
            // The insights answered to the caller: never the shadow answers after them.
            let slots = InsightSlots.servedRange(ofEvaluation: rowid)
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

    /// The columns of an entry, from `evaluations e` and `callers c`.
    private static let columns = "e.rowid, e.event_id, e.created_at, e.category, e.caller_id, c.name, e.decision_action"

    /// What every found evaluation must satisfy: its `kind` hash is ?1 (the side file knows
    /// only a prefix, and an erased or purged row is no longer there), in environment ?2, by a
    /// caller of tenant ?3 (a row whose caller is unknown counts as tenant `default`'s).
    private static func checks(_ kind: IdentifierKind) -> String {
        "e.\(kind.rawValue)_hash = ?1 AND e.environment = ?2 AND coalesce(c.tenant, 'default') = ?3"
    }

    /// The evaluations up to the watermark ?7 with hash ?1 of `kind` (code ?8)
    /// before (time ?4, rowid ?5), newest first, at most ?6: a backward range of the side keys
    /// of (kind, prefix), each evaluation read by its rowid.
    static func indexedQuery(_ kind: IdentifierKind) -> String {
        """
        SELECT \(columns)
        FROM subjects.entries s CROSS JOIN evaluations e ON e.rowid = s.evaluation
            LEFT JOIN callers c ON c.caller_id = e.caller_id
        WHERE s.kind = ?8 AND s.prefix = substr(?1, 1, 8) AND s.created_at <= ?4 AND (s.created_at < ?4 OR s.evaluation < ?5)
          AND s.evaluation <= ?7 AND \(checks(kind))
        ORDER BY s.created_at DESC, s.evaluation DESC LIMIT ?6
        """
    }

    /// The same among the evaluations past the watermark ?7: a range of rowids, as long as the
    /// indexer's lag.
    static func tailQuery(_ kind: IdentifierKind) -> String {
        """
        SELECT \(columns)
        FROM evaluations e LEFT JOIN callers c ON c.caller_id = e.caller_id
        WHERE e.rowid > ?7 AND e.created_at <= ?4 AND (e.created_at < ?4 OR e.rowid < ?5) AND \(checks(kind))
        ORDER BY e.created_at DESC, e.rowid DESC LIMIT ?6
        """
    }
}
