import InsightDomain
import PostgresClient

/// The rows of one evaluation (its `evaluations` row and its insights' rows) as the PostgreSQL
/// store writes them: alone, by one statement of its own (`statement`), or with the other
/// evaluations of a batch, by one statement for all of them (`statement(merging:)`).
///
/// Both write the same rows. The merged statement exists because much of PostgreSQL's cost of
/// such an insert is per statement (the executor's start-up and end) rather than per row: one
/// statement of arrays for a batch costs the server less CPU per evaluation than one statement
/// per evaluation (docs/performance.md).
struct EvaluationRows: Sendable {
    /// The 18 values of the `evaluations` row, in `PostgresLedger.recordSQL`'s order.
    static let evaluationColumns = 18
    let evaluation: [PostgresValue?]
    /// The insights: each one's position (0 to 3 served, 4 to 7 shadow) and its 8 values.
    let insights: [(position: Int, values: [PostgresValue?])]
    /// How many served and shadow insights: which per-evaluation statement writes them.
    let served: Int
    let shadows: Int
    /// The values above as elements of the merged statement's arrays, spelled on the caller's
    /// thread so that the writer's thread only joins them.
    private let evaluationElements: [String]
    private let insightElements: [[String]]

    init(_ e: EvaluationRecord) throws {
        let firstShadow = PostgresLedger.firstShadow
        guard e.insights.count <= firstShadow, e.shadowInsights.count <= PostgresLedger.slotsPerEvaluation - firstShadow else {
            throw PostgresStoreError("an evaluation holds at most \(firstShadow) insights and as many shadow answers")
        }
        evaluation = [
            .text(e.eventId), .text(e.callerId), .text(e.environment.rawValue), .text(e.category.rawValue),
            .int64(e.createdAt), .int64(e.reportConsumptionBy), e.subject.keyId.map { .text($0) },
            e.subject.account.map { .bytea($0) }, e.subject.device.map { .bytea($0) },
            e.subject.counterparty.map { .bytea($0) },
            e.trackedValue.map { .text($0.rawValue) }, .int64(e.raisedByVelocity ? 1 : 0),
            e.decision.map { .int64(Int64($0.action.code)) },
            e.decision.flatMap { $0.reasons.isEmpty ? nil : .text($0.reasons.joined(separator: ",")) },
            e.decision.map { .text($0.policyVersion) },
            e.source.map { .text($0.platform.rawValue) }, e.source.map { .text($0.kit) }, e.source.map { .text($0.version) }
        ]
        let positioned =
            e.insights.enumerated().map { ($0.offset, $0.element) }
            + e.shadowInsights.enumerated().map { (firstShadow + $0.offset, $0.element) }
        insights = positioned.map { position, insight in
            var value: String?, errorCode: String?, reasons = ""
            switch insight.outcome {
            case .value(let v, let r): value = v.rawValue; reasons = r.joined(separator: ",")
            case .error(let code, _): errorCode = code.rawValue
            }
            let stored =
                EvaluationIdentifiers.isMade(insight.insightId, eventId: e.eventId, position: position)
                ? nil : insight.insightId
            return (
                position,
                [
                    stored.map { .text($0) }, .text(insight.type), .int64(Int64(insight.schemaVersion)),
                    insight.modelVersion.map { .text($0) }, value.map { .text($0) }, errorCode.map { .text($0) },
                    .text(reasons), insight.scoreBin.map { .int64(Int64($0)) }
                ]
            )
        }
        served = e.insights.count
        shadows = e.shadowInsights.count
        evaluationElements = evaluation.map(SQLValues.arrayElement)
        insightElements = insights.map { [String($0.position)] + $0.values.map(SQLValues.arrayElement) }
    }

    /// The statement that writes this evaluation alone.
    var statement: WriteStatement {
        WriteStatement(
            name: "insightd_record_\(served)_\(shadows)", sql: PostgresLedger.recordSQL[served][shadows],
            parameters: evaluation + insights.flatMap(\.values))
    }

    /// The statement that writes every evaluation of `all`: each column of the evaluations, then
    /// of the insights, as one array, the insights naming their evaluation by its index in the
    /// arrays. One SQL text whatever the batch, so it is prepared once per connection.
    static func statement(merging all: [EvaluationRows]) -> WriteStatement {
        var parameters: [PostgresValue?] = (0..<evaluationColumns).map { column in
            SQLValues.arrayLiteral(all.map { $0.evaluationElements[column] })
        }
        let insights = all.enumerated().flatMap { index, rows in rows.insightElements.map { (index + 1, $0) } }
        parameters.append(SQLValues.arrayLiteral(insights.map { String($0.0) }))
        for column in 0..<9 { parameters.append(SQLValues.arrayLiteral(insights.map { $0.1[column] })) }
        return WriteStatement(name: "insightd_record_merged", sql: mergedSQL, parameters: parameters)
    }

    /// $1…$18 the evaluations' columns (as `recordSQL`); $19 each insight's evaluation (its index
    /// in $1, from 1), $20 its position, $21…$28 its columns. The insights find their evaluation's
    /// number through its event id, which the insert returns with it.
    static let mergedSQL = """
        WITH e AS (
            INSERT INTO evaluations (event_id, caller_id, environment, category, created_at, report_by, hash_key_id,
                                     account_hash, device_hash, counterparty_hash, tracked_value, raised_by_velocity,
                                     decision_action, decision_reasons, policy_version, source_platform, source_kit,
                                     source_version)
            SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::text[],
                                 $8::bytea[], $9::bytea[], $10::bytea[], $11::text[], $12::bigint[], $13::bigint[],
                                 $14::text[], $15::text[], $16::text[], $17::text[], $18::text[])
            RETURNING event_id, number)
        INSERT INTO insights (slot, insight_id, type, schema_version, model_version, value, error_code, reasons, score_bin)
        SELECT e.number * \(PostgresLedger.slotsPerEvaluation) + v.position, v.insight_id, v.type, v.schema_version,
               v.model_version, v.value, v.error_code, v.reasons, v.score_bin
        FROM unnest($19::bigint[], $20::bigint[], $21::text[], $22::text[], $23::bigint[], $24::text[], $25::text[],
                    $26::text[], $27::text[], $28::bigint[])
            AS v(evaluation, position, insight_id, type, schema_version, model_version, value, error_code, reasons, score_bin)
        JOIN e ON e.event_id = ($1::text[])[v.evaluation]
        """
}
