import InsightDomain
import PostgresClient

/// The captured training vectors of a period, joined with their insights' labels
/// (`insightctl training export`), read on a connection of its own in batches ordered by
/// (creation time, evaluation) through `training_vectors_by_created`.
public struct PostgresTrainingVectors: TrainingVectorSource {
    let db: PostgresConnection

    /// Rows read per query.
    static let batchSize = 1000

    init(_ db: PostgresConnection) { self.db = db }

    public func trainingVectors(_ query: TrainingExportQuery, _ each: (CapturedVector) throws -> Void) throws {
        // A label names the insight id; labels only name insights of their own tenant (PostgresLedger).
        let statement = try db.prepare(
            "insightd_training_export",
            """
            SELECT t.created_at, t.evaluation, t.features, t.category, t.model_version, l.outcome
            FROM training_vectors t LEFT JOIN labels l ON l.insight_id = t.insight_id AND l.environment = t.environment
            WHERE (t.created_at, t.evaluation) > ($1::bigint, $2::bigint) AND t.created_at < $3::bigint
              AND t.environment = $4::text AND ($5::text IS NULL OR t.tenant = $5::text)
            ORDER BY t.created_at, t.evaluation LIMIT $6::bigint
            """)
        var after: (Milliseconds, Int64) = (query.from, .min)
        while true {
            let result = try db.query(
                statement,
                [
                    .int64(after.0), .int64(after.1), .int64(query.until),
                    .text(query.environment.rawValue), query.tenant.map { .text($0) },
                    .int64(Int64(Self.batchSize))
                ])
            var last: (Milliseconds, Int64)?
            for row in result {
                guard let features = TrainingVector.decode(row.bytea(2) ?? []) else {
                    throw PostgresStoreError("a training vector's features are not whole 8-byte values")
                }
                let createdAt = row.int64(0) ?? 0
                try each(
                    CapturedVector(
                        features: features, category: row.text(3) ?? "", modelVersion: row.text(4) ?? "",
                        createdAt: createdAt, label: row.text(5).flatMap(LabelOutcome.init(rawValue:))))
                last = (createdAt, row.int64(1) ?? 0)
            }
            guard result.count == Self.batchSize, let last else { return }
            after = last
        }
    }
}
