import InsightDomain
import PostgresClient

/// One subject's evaluations on PostgreSQL (`SubjectHistory`): each hash's newest after the
/// cursor are a backward range of its kind's index (migration 0012), with their insights
/// gathered by slot, merged newest first by (creation time, number).
enum PostgresSubjectHistory {
    static func page(_ query: SubjectHistoryQuery, in db: PostgresConnection) throws -> SubjectHistoryPage {
        let statement = try db.prepare("insightd_subject_history_\(query.kind.rawValue)", sql(query.kind))
        let before = query.after ?? SubjectHistoryCursor(time: .max, sequence: .max)
        var found: [(number: Int64, entry: SubjectHistoryEntry)] = []
        for hash in Set(query.hashes) {
            for row in try db.query(
                statement,
                [
                    .bytea(hash), .text(query.environment.rawValue), .text(query.tenant),
                    .int64(before.time), .int64(before.sequence),
                    .int64(Int64(query.limit + 1))
                ])
            {
                let number = row.int64(0) ?? 0
                if found.last?.number != number {
                    guard let category = OperationCategory(rawValue: row.text(3) ?? "") else {
                        throw PostgresStoreError("an evaluation has an unknown operation category")
                    }
                    found.append(
                        (
                            number,
                            SubjectHistoryEntry(
                                eventId: row.text(1) ?? "", createdAt: row.int64(2) ?? 0,
                                category: category, callerId: row.text(4) ?? "",
                                callerName: row.text(5), insights: [],
                                decision: row.int64(10).flatMap { DecisionAction(code: Int($0)) })
                        ))
                }
                guard let type = row.text(6) else { continue }
                guard let outcome = SubjectHistoryInsight.outcome(value: row.text(8), errorCode: row.text(9)) else {
                    throw PostgresStoreError("an insight has neither a known value nor a known error code")
                }
                found[found.count - 1].entry.insights.append(
                    SubjectHistoryInsight(type: type, modelVersion: row.text(7), outcome: outcome))
            }
        }
        found.sort { ($0.entry.createdAt, $0.number) > ($1.entry.createdAt, $1.number) }
        let page = found.prefix(query.limit)
        let next = found.count > query.limit ? page.last.map { SubjectHistoryCursor(time: $0.entry.createdAt, sequence: $0.number) } : nil
        return SubjectHistoryPage(entries: page.map(\.entry), next: next)
    }

    /// The evaluations with hash $1 of `kind` in environment $2 by callers of tenant $3 (a row
    /// whose caller is unknown counts as tenant `default`'s) before (time $4, number $5), newest
    /// first, at most $6, each with its served insights (positions 0 to 3; the shadow answers at
    /// 4 to 7 are never shown) in slot order (or one row of NULLs if none):
    /// a backward range of the kind's index, bounded by the cursor's time.
    static func sql(_ kind: IdentifierKind) -> String {
        """
        SELECT e.number, e.event_id, e.created_at, e.category, e.caller_id, e.name,
               i.type, i.model_version, i.value, i.error_code, e.decision_action
        FROM (SELECT e.number, e.event_id, e.created_at, e.category, e.caller_id, c.name, e.decision_action
              FROM evaluations e LEFT JOIN callers c ON c.caller_id = e.caller_id
              WHERE e.\(kind.rawValue)_hash = $1::bytea AND e.created_at <= $4::bigint
                AND (e.created_at, e.number) < ($4::bigint, $5::bigint)
                AND e.environment = $2::text AND coalesce(c.tenant, 'default') = $3::text
              ORDER BY e.created_at DESC, e.number DESC LIMIT $6::bigint) e
        LEFT JOIN insights i ON i.slot BETWEEN e.number * 8 AND e.number * 8 + 3
        ORDER BY e.created_at DESC, e.number DESC, i.slot
        """
    }
}
