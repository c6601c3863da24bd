/// What the SQLite and PostgreSQL stores share of their schema: both engines' migrations
/// (`migrations/sqlite/`, `migrations/postgresql/`) give the tables the same names and
/// columns, so a value's stored form, and a query written in the SQL both engines accept, is
/// written here once. Engine-specific SQL stays in its store.
public enum StoreSchema {
    /// `callers.roles`: the roles in `Role`'s order, joined with commas.
    public static func encode(_ roles: Set<Role>) -> String { roles.sorted().map(\.rawValue).joined(separator: ",") }

    /// The roles `encode` stored (a name this binary does not know is left out).
    public static func decodeRoles(_ text: String) -> Set<Role> {
        Set(text.split(separator: ",").compactMap { Role(rawValue: String($0)) })
    }

    /// `label_submissions.results`: the items' statuses in order, joined with commas.
    public static func encode(_ results: [LabelResultStatus]) -> String { results.map(\.rawValue).joined(separator: ",") }

    /// The statuses `encode` stored (a name this binary does not know is left out).
    public static func decodeLabelResults(_ text: String) -> [LabelResultStatus] {
        text.split(separator: ",").compactMap { LabelResultStatus(rawValue: String($0)) }
    }

    /// The columns both stores read a `Caller` from, in the order their row readers take them.
    public static let callerColumns = "SELECT caller_id, name, environment, roles, rate, burst, created_at, tenant, training_capture"

    /// `every_caller(id)`: each distinct caller_id of `evaluations`, found by one seek of
    /// evaluations_by_caller_created per caller (a loose index scan) rather than by reading the
    /// index through: neither engine has an index on created_at alone. Evaluations, not the
    /// callers table, say who has evaluations: one whose caller row were missing must still be
    /// found (retention must delete it).
    public static let everyCaller = """
        WITH RECURSIVE every_caller(id) AS (
            SELECT (SELECT min(caller_id) FROM evaluations)
            UNION ALL
            SELECT (SELECT min(caller_id) FROM evaluations WHERE caller_id > every_caller.id)
            FROM every_caller WHERE every_caller.id IS NOT NULL)
        """

    /// The recorded migrations (`AppliedMigration`'s columns), oldest first.
    public static let migrationHistory = "SELECT version, name, checksum, applied_at FROM schema_migrations ORDER BY version"
}
