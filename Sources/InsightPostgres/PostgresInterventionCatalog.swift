import InsightDomain
import PostgresClient

/// The intervention catalogue (migration 0025) on PostgreSQL: reads through the read pool,
/// writes through the writer, each one statement. Instances of a cluster share it.
public final class PostgresInterventionCatalog: InterventionCatalog {
    private let reads: PostgresReadPool
    private let writer: PostgresWriter

    init(reads: PostgresReadPool, writer: PostgresWriter) {
        self.reads = reads
        self.writer = writer
    }

    static let columns = "tenant, environment, template_id, version, kind, scam_types, description, created_at, retired_at"

    public func templates(tenant: String, environment: Environment) throws -> [InterventionTemplate] {
        try reads.read { db in
            try db.query(
                db.prepare(
                    "insightd_intervention_templates",
                    """
                    SELECT \(Self.columns) FROM intervention_templates WHERE tenant = $1::text AND environment = $2::text
                    ORDER BY template_id COLLATE "C", version
                    """), [.text(tenant), .text(environment.rawValue)]
            )
            .map(Self.row)
        }
    }

    /// One statement: the entry inserted now (`added` true), or the one of that id and version
    /// that was there.
    public func add(
        _ template: InterventionTemplate, completion: @escaping @Sendable (Result<TemplateAddResult, StoreFailure>) -> Void
    ) {
        writer.submit(
            {
                [
                    WriteStatement(
                        name: "insightd_add_intervention_template",
                        sql: """
                            WITH inserted AS (
                                INSERT INTO intervention_templates (\(Self.columns))
                                VALUES ($1::text, $2::text, $3::text, $4::bigint, $5::text, $6::text, $7::text, $8::bigint, NULL)
                                ON CONFLICT (tenant, environment, template_id, version) DO NOTHING
                                RETURNING \(Self.columns))
                            SELECT \(Self.columns), true FROM inserted
                            UNION ALL
                            SELECT \(Self.columns), false FROM intervention_templates
                            WHERE tenant = $1::text AND environment = $2::text AND template_id = $3::text AND version = $4::bigint
                              AND NOT EXISTS (SELECT 1 FROM inserted)
                            """,
                        parameters: [
                            .text(template.tenant), .text(template.environment.rawValue), .text(template.id),
                            .int64(Int64(template.version)), .text(template.kind.rawValue), .text(template.storedScamTypes),
                            .text(template.description), .int64(template.createdAt)
                        ])
                ]
            },
            decode: { results in
                // Empty only when another instance inserted the same id and version in the
                // same moment (this statement's snapshot does not see it): adding again answers.
                guard let row = results.first?.first else { throw PostgresStoreError("an entry was added beside this one; retry") }
                let stored = try Self.row(row)
                if row.bool(9) == true { return .added(stored) }
                return stored.sameContent(as: template) ? .unchanged(stored) : .conflict(stored)
            }, completion: completion)
    }

    public func retire(
        tenant: String, environment: Environment, reference: TemplateReference, at time: Milliseconds,
        completion: @escaping @Sendable (Result<InterventionTemplate?, StoreFailure>) -> Void
    ) {
        writer.submit(
            {
                [
                    WriteStatement(
                        name: "insightd_retire_intervention_template",
                        sql: """
                            UPDATE intervention_templates SET retired_at = coalesce(retired_at, $5::bigint)
                            WHERE tenant = $1::text AND environment = $2::text AND template_id = $3::text AND version = $4::bigint
                            RETURNING \(Self.columns)
                            """,
                        parameters: [
                            .text(tenant), .text(environment.rawValue), .text(reference.id), .int64(Int64(reference.version)),
                            .int64(time)
                        ])
                ]
            }, decode: { results in try results.first?.first.map(Self.row) }, completion: completion)
    }

    static func row(_ row: PostgresRow) throws -> InterventionTemplate {
        guard let environment = Environment(rawValue: row.text(1) ?? ""), let kind = InterventionKind(rawValue: row.text(4) ?? "")
        else { throw PostgresStoreError("an intervention template of an unknown environment or kind") }
        return InterventionTemplate(
            tenant: row.text(0) ?? "", environment: environment, id: row.text(2) ?? "", version: Int(row.int64(3) ?? 0),
            kind: kind, scamTypes: InterventionTemplate.scamTypes(stored: row.text(5) ?? ""), description: row.text(6) ?? "",
            createdAt: row.int64(7) ?? 0, retiredAt: row.int64(8))
    }
}
