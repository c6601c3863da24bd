import InsightDomain
import PostgresClient

/// Model performance counts on PostgreSQL (`ModelPerformanceSource`), grouped in one statement:
/// the tenant's callers of the environment, each caller's evaluations of the period (a range of
/// evaluations_by_caller_created), their insights (a range of slots), the evaluation's
/// consumption report and each insight's label (primary keys; an insight's id is made from the
/// event id unless one is stored). No index is added for it.
enum PostgresModelPerformance {
    static func counts(_ query: ModelPerformanceQuery, in db: PostgresConnection) throws -> [ModelPerformanceCell] {
        let statement = try db.prepare("insightd_model_performance", sql)
        return try db.query(
            statement,
            [
                .text(query.tenant), .text(query.environment.rawValue), .int64(query.from),
                .int64(query.to), .int64(query.matureBefore), query.category.map { .text($0.rawValue) },
                .text(InsightType.isLikelyBeingCoached.rawValue)
            ]
        ).map { row in
            guard let category = OperationCategory(rawValue: row.text(1) ?? ""),
                let value = InsightValue(rawValue: row.text(2) ?? "")
            else {
                throw PostgresStoreError("an insight has an unknown category or value")
            }
            return ModelPerformanceCell(
                modelVersion: row.text(0) ?? "", category: category, value: value,
                consumption: row.text(3).flatMap(ConsumptionStatus.init(rawValue:)),
                label: row.text(4).flatMap(LabelOutcome.init(rawValue:)),
                count: Int(row.int64(5) ?? 0), mature: Int(row.int64(6) ?? 0),
                shadow: row.bool(7) ?? false, scoreBin: row.int64(8).map { Int($0) },
                source: InteractionSource.stored(platform: row.text(9), kit: row.text(10), version: row.text(11)))
        }
    }

    /// $1 tenant, $2 environment, [$3, $4) the period, $5 the maturity cutoff, $6 the category or
    /// NULL, $7 the insight type. Each caller's period is a parameterised range of
    /// evaluations_by_caller_created (`OFFSET 0` keeps the planner from flattening the lateral
    /// subquery back into a join, which it then answered with a scan of every evaluation) and each
    /// evaluation's insights a range of slots, number * 8 to number * 8 + 7 (`LIMIT 8` tells the
    /// planner so: it estimated thousands of insights an evaluation from the range, and then
    /// hashed every consumption report and label). The report and the label are lateral too,
    /// each one lookup of its primary key (`LIMIT 1`: at most one exists), never a hash of the
    /// whole table, which the planner chooses while those tables are small. A shadow answer
    /// (position 4 to 7, migration 0015) takes the label of its evaluation's first served insight
    /// of the type (positions 0 to 3).
    static let sql = """
        SELECT i.model_version, e.category, i.value, r.status, l.outcome, count(*)::bigint,
               count(*) FILTER (WHERE e.created_at < $5::bigint)::bigint, i.slot - e.number * 8 >= 4 AS shadow, i.score_bin,
               e.source_platform, e.source_kit, e.source_version
        FROM callers c
        CROSS JOIN LATERAL (
            SELECT e.number, e.event_id, e.environment, e.category, e.created_at, e.source_platform, e.source_kit, e.source_version
            FROM evaluations e
            WHERE e.caller_id = c.caller_id AND e.created_at >= $3::bigint AND e.created_at < $4::bigint
              AND e.environment = $2::text AND ($6::text IS NULL OR e.category = $6::text)
            OFFSET 0) e
        CROSS JOIN LATERAL (
            SELECT i.slot, i.insight_id, i.model_version, i.value, i.score_bin FROM insights i
            WHERE i.slot BETWEEN e.number * 8 AND e.number * 8 + 7
              AND i.type = $7::text AND i.value IS NOT NULL AND i.model_version IS NOT NULL
            LIMIT 8) i
        LEFT JOIN LATERAL (
            SELECT r.status FROM consumption_reports r WHERE r.event_id = e.event_id LIMIT 1) r ON true
        LEFT JOIN LATERAL (
            SELECT l.outcome FROM labels l
            WHERE l.insight_id = CASE
                    WHEN i.slot - e.number * 8 < 4
                    THEN coalesce(i.insight_id, left(e.event_id, 35) || (i.slot - e.number * 8 + 1)::text)
                    ELSE (SELECT coalesce(s.insight_id, left(e.event_id, 35) || (s.slot - e.number * 8 + 1)::text)
                          FROM insights s WHERE s.slot BETWEEN e.number * 8 AND e.number * 8 + 3 AND s.type = $7::text
                          ORDER BY s.slot LIMIT 1)
                    END
              AND l.environment = e.environment
            LIMIT 1) l ON true
        WHERE c.tenant = $1::text AND c.environment = $2::text
        GROUP BY i.model_version, e.category, i.value, r.status, l.outcome, shadow, i.score_bin,
                 e.source_platform, e.source_kit, e.source_version
        """
}
