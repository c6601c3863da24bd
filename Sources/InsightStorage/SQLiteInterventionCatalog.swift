import InsightDomain
import SQLiteClient
import Synchronization

/// The intervention catalogue (migration 0025) on SQLite: reads through its own connection,
/// writes through the group-commit writer, ordered with the reports that name its entries.
public final class SQLiteInterventionCatalog: InterventionCatalog {
    private let reader: Mutex<SQLiteConnection>
    private let writer: GroupCommitWriter

    public init(path: String, writer: GroupCommitWriter) throws {
        reader = Mutex(try Database.open(path: path, create: false))
        self.writer = writer
    }

    public func templates(tenant: String, environment: Environment) throws -> [InterventionTemplate] {
        try reader.withLock { try Self.templates(tenant: tenant, environment: environment, in: $0) }
    }

    public func add(
        _ template: InterventionTemplate, completion: @escaping @Sendable (Result<TemplateAddResult, StoreFailure>) -> Void
    ) {
        writer.submit(
            { db in
                if let existing = try Self.template(template.tenant, template.environment, template.reference, in: db) {
                    return existing.sameContent(as: template) ? .unchanged(existing) : .conflict(existing)
                }
                try db.cached(
                    """
                    INSERT INTO intervention_templates
                        (tenant, environment, template_id, version, kind, scam_types, description, created_at, retired_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)
                    """
                )
                .run(
                    template.tenant, template.environment.rawValue, template.id, Int64(template.version), template.kind.rawValue,
                    template.storedScamTypes, template.description, template.createdAt)
                return .added(template)
            }, completion: completion)
    }

    public func retire(
        tenant: String, environment: Environment, reference: TemplateReference, at time: Milliseconds,
        completion: @escaping @Sendable (Result<InterventionTemplate?, StoreFailure>) -> Void
    ) {
        writer.submit(
            { db in
                try db.cached(
                    """
                    UPDATE intervention_templates SET retired_at = ?
                    WHERE tenant = ? AND environment = ? AND template_id = ? AND version = ? AND retired_at IS NULL
                    """
                )
                .run(time, tenant, environment.rawValue, reference.id, Int64(reference.version))
                return try Self.template(tenant, environment, reference, in: db)
            }, completion: completion)
    }

    static func templates(tenant: String, environment: Environment, in db: SQLiteConnection) throws -> [InterventionTemplate] {
        try db.cached(
            """
            SELECT tenant, environment, template_id, version, kind, scam_types, description, created_at, retired_at
            FROM intervention_templates WHERE tenant = ? AND environment = ? ORDER BY template_id, version
            """
        )
        .query([tenant, environment.rawValue], row: row)
    }

    static func template(
        _ tenant: String, _ environment: Environment, _ reference: TemplateReference, in db: SQLiteConnection
    ) throws -> InterventionTemplate? {
        try db.cached(
            """
            SELECT tenant, environment, template_id, version, kind, scam_types, description, created_at, retired_at
            FROM intervention_templates WHERE tenant = ? AND environment = ? AND template_id = ? AND version = ?
            """
        )
        .first([tenant, environment.rawValue, reference.id, Int64(reference.version)], row: row)
    }

    static func row(_ row: SQLiteStatement) throws -> InterventionTemplate {
        guard let environment = Environment(rawValue: row.text(1) ?? ""), let kind = InterventionKind(rawValue: row.text(4) ?? "")
        else { throw StoreError.invalid("an intervention template of an unknown environment or kind") }
        return InterventionTemplate(
            tenant: row.text(0) ?? "", environment: environment, id: row.text(2) ?? "", version: row.int(3), kind: kind,
            scamTypes: InterventionTemplate.scamTypes(stored: row.text(5) ?? ""), description: row.text(6) ?? "",
            createdAt: row.int64(7), retiredAt: row.optionalInt64(8))
    }
}
