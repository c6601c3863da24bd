import InsightDomain
import SQLiteClient

/// The captured training vectors of a period, joined with their insights' labels
/// (`insightctl training export`), read on a connection of its own in batches ordered by
/// (creation time, evaluation) through `training_vectors_by_created`.
public struct SQLiteTrainingVectors: TrainingVectorSource {
    let db: SQLiteConnection

    /// Rows read per query.
    static let batchSize = 1000

    public init(_ db: SQLiteConnection) { self.db = db }

    public func trainingVectors(_ query: TrainingExportQuery, _ each: (CapturedVector) throws -> Void) throws {
        // A label names the insight id; labels only name insights of their own tenant (SQLiteLedger).
        let statement = try db.prepare(
            """
            SELECT t.created_at, t.evaluation, t.features, t.category, t.model_version, l.outcome
            FROM training_vectors t LEFT JOIN labels l ON l.insight_id = t.insight_id AND l.environment = t.environment
            WHERE (t.created_at, t.evaluation) > (?, ?) AND t.created_at < ? AND t.environment = ?
              AND (? IS NULL OR t.tenant = ?)
            ORDER BY t.created_at, t.evaluation LIMIT ?
            """)
        var after: (Milliseconds, Int64) = (query.from, .min)
        while true {
            let rows = try statement.query([
                after.0, after.1, query.until, query.environment.rawValue, query.tenant, query.tenant,
                Self.batchSize
            ]) { row -> (Milliseconds, Int64, CapturedVector) in
                guard let features = TrainingVector.decode(row.blob(2) ?? []) else {
                    throw StoreError.invalid("a training vector's features are not whole 8-byte values")
                }
                return (
                    row.int64(0), row.int64(1),
                    CapturedVector(
                        features: features, category: row.text(3) ?? "", modelVersion: row.text(4) ?? "",
                        createdAt: row.int64(0), label: row.text(5).flatMap(LabelOutcome.init(rawValue:)))
                )
            }
            for row in rows { try each(row.2) }
            guard rows.count == Self.batchSize, let last = rows.last else { return }
            after = (last.0, last.1)
        }
    }
}
