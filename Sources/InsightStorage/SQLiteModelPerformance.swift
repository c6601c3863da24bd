import InsightDomain
import SQLiteClient

/// Model performance counts on SQLite (`ModelPerformanceSource`), grouped in one statement: the
/// tenant's callers of the environment (callers_by_tenant), each caller's evaluations of the
/// period (a range of evaluations_by_caller_created), their insights (a range of slots), the
/// evaluation's consumption report (its primary key) and each insight's label (its primary key,
/// the insight's id: made from the event id unless one is stored). No index is added for it, so
/// an evaluation's commit writes nothing more; a report reads the period's evaluations only.
enum SQLiteModelPerformance {
    static func counts(_ query: ModelPerformanceQuery, in db: SQLiteConnection) throws -> [ModelPerformanceCell] {
        try db.cached(countsQuery).query([
            query.tenant, query.environment.rawValue, query.from, query.to,
            query.matureBefore, query.category?.rawValue, InsightType.isLikelyBeingCoached.rawValue,
            InsightSlots.perEvaluation, InsightSlots.firstShadow
        ]) { row in
            guard let category = OperationCategory(rawValue: row.text(1) ?? ""),
                let value = InsightValue(rawValue: row.text(2) ?? "")
            else {
                throw StoreError.invalid("an insight has an unknown category or value")
            }
            return ModelPerformanceCell(
                modelVersion: row.text(0) ?? "", category: category, value: value,
                consumption: row.text(3).flatMap(ConsumptionStatus.init(rawValue:)),
                label: row.text(4).flatMap(LabelOutcome.init(rawValue:)),
                count: row.int(5), mature: row.int(6), shadow: row.int(7) != 0,
                scoreBin: row.isNull(8) ? nil : row.int(8),
                source: InteractionSource.stored(platform: row.text(9), kit: row.text(10), version: row.text(11)))
        }
    }

    /// ?1 tenant, ?2 environment, [?3, ?4) the period, ?5 the maturity cutoff, ?6 the category
    /// or NULL, ?7 the insight type, ?8 slots per evaluation, ?9 the first shadow position.
    /// Callers come first (CROSS JOIN fixes the order), so that each caller's period is a range
    /// of evaluations_by_caller_created. A shadow answer (position >= ?9) takes the label of its
    /// evaluation's first served insight of the type (a lookup among its served slots).
    /// The unary `+` on `i.type` keeps the type test off the planner's choices: offered it, SQLite
    /// built an automatic index of every insight on `type` for each report (on a store whose
    /// insight ids are all made from event ids) instead of reading each evaluation's slots.
    static let countsQuery: StaticString = """
        SELECT i.model_version, e.category, i.value, r.status, l.outcome, count(*), sum(e.created_at < ?5),
               i.slot - e.rowid * ?8 >= ?9 AS shadow, i.score_bin, e.source_platform, e.source_kit, e.source_version
        FROM callers c
        CROSS JOIN evaluations e ON e.caller_id = c.caller_id AND e.created_at >= ?3 AND e.created_at < ?4
        CROSS JOIN insights i ON i.slot BETWEEN e.rowid * ?8 AND e.rowid * ?8 + ?8 - 1
        LEFT JOIN consumption_reports r ON r.event_id = e.event_id
        LEFT JOIN labels l ON l.insight_id = CASE
                WHEN i.slot - e.rowid * ?8 < ?9
                THEN coalesce(i.insight_id, substr(e.event_id, 1, 35) || (i.slot - e.rowid * ?8 + 1))
                ELSE (SELECT coalesce(s.insight_id, substr(e.event_id, 1, 35) || (s.slot - e.rowid * ?8 + 1)) FROM insights s
                      WHERE s.slot BETWEEN e.rowid * ?8 AND e.rowid * ?8 + ?9 - 1 AND +s.type = ?7 ORDER BY s.slot LIMIT 1)
                END
            AND l.environment = e.environment
        WHERE c.tenant = ?1 AND c.environment = ?2 AND e.environment = ?2 AND (?6 IS NULL OR e.category = ?6)
          AND +i.type = ?7 AND i.value IS NOT NULL AND i.model_version IS NOT NULL
        GROUP BY i.model_version, e.category, i.value, r.status, l.outcome, shadow, i.score_bin,
                 e.source_platform, e.source_kit, e.source_version
        """
}
