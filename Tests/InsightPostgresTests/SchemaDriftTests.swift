import Foundation
import InsightPostgres
import InsightStorage
import PostgresClient
import PostgresTesting
import SQLiteClient
import XCTest

/// The two engines' migrations cannot drift: after all of them, SQLite and PostgreSQL hold the
/// same tables with the same columns (types mapped), primary keys, unique constraints and
/// indexes. Each engine's schema is read from its catalog as lines such as
/// `callers: column 9 tenant text not null`, and every line one engine has and the other lacks
/// is a failure naming it.
final class SchemaDriftTests: XCTestCase {
    func testSQLiteAndPostgreSQLEndAtTheSameSchema() throws {
        XCTAssertEqual(
            try PostgresMigrator.bundled().map(\.name), try Migrator.bundled().map(\.name),
            "the engines' migrations have the same names and numbering")

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("drift-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let (sqlite, _) = try Database.openMigrated(path: directory.appendingPathComponent("insightd.db").path, now: 1)

        let server = try TemporaryPostgres.shared()
        let postgres = try server.connect(database: try server.createDatabase())
        try PostgresMigrator(migrations: PostgresMigrator.bundled()).migrate(postgres, now: 1)

        let sqliteSchema = try Self.schema(sqlite)
        let postgresSchema = try Self.schema(postgres)
        XCTAssertTrue(sqliteSchema.contains("insights: primary key (slot)"), "the catalog was read")
        for line in sqliteSchema.subtracting(postgresSchema).subtracting(Self.sqliteOnly).sorted() {
            XCTFail("SQLite has, PostgreSQL lacks: \(line)")
        }
        for line in postgresSchema.subtracting(sqliteSchema).subtracting(Self.postgresOnly).sorted() {
            XCTFail("PostgreSQL has, SQLite lacks: \(line)")
        }
        XCTAssertTrue(Self.postgresOnly.isSubset(of: postgresSchema), "the exceptions are still needed")
        XCTAssertTrue(Self.sqliteOnly.isSubset(of: sqliteSchema), "SQLite's exceptions are still needed")
    }

    /// What PostgreSQL has and SQLite has not, on purpose: the evaluation's number that makes its
    /// insights' slots (migration 0010), which SQLite's implicit rowid is, indexed as the rowid is;
    /// the subject hashes' indexes (0012), which SQLite keeps in the side file of its subject
    /// index, off the writer's commits; the writers' commit marks (0020), which resolve a commit
    /// whose answer a lost connection took, and which SQLite's writer in the process never needs;
    /// the retry entries' unique key and expiry index (0019), which SQLite's one process per
    /// database keeps in memory (0021, `RetryKeyIndex`); the receipt heads' index by time, which
    /// SQLite's retention does without (0022: its one writer stores heads in time order, while
    /// PostgreSQL's writers interleave theirs).
    static let postgresOnly: Set<String> = [
        "table writer_commits",
        "retry_entries: primary key (request_key)",
        "retry_entries: index retry_entries_by_expiry (expires_at)",
        "receipt_heads: index receipt_heads_by_time (made_at)",
        "evaluations: column 13 number bigint not null",
        "evaluations: index evaluations_by_number (number) unique",
        "evaluations: index evaluations_by_account (account_hash, created_at) partial",
        "evaluations: index evaluations_by_device (device_hash, created_at) partial",
        "evaluations: index evaluations_by_counterparty (counterparty_hash, created_at) partial"
    ]

    /// What SQLite has and PostgreSQL has not, on purpose: the retry entries' number (0021), the
    /// order they are stored and swept in, which the daemon's in-memory key index names.
    static let sqliteOnly: Set<String> = [
        "retry_entries: column 6 entry bigint not null",
        "retry_entries: primary key (entry)"
    ]

    /// Whole tables PostgreSQL has on purpose (in `postgresOnly` as `table NAME`): their columns
    /// are not compared.
    static let postgresOnlyTables: Set<String> = ["writer_commits"]

    static let mappedTypes = ["INTEGER": "bigint", "TEXT": "text", "BLOB": "bytea", "REAL": "double precision"]

    static func schema(_ db: SQLiteConnection) throws -> Set<String> {
        var lines: Set<String> = []
        let tables = try db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
            .query { $0.text(0) ?? "" }
        for table in tables {
            lines.insert("table \(table)")
            let columns = try db.prepare("SELECT name, type, \"notnull\", pk FROM pragma_table_info(?) ORDER BY cid")
                .query([table]) { (name: $0.text(0) ?? "", type: $0.text(1) ?? "", notNull: $0.int(2) != 0, pk: $0.int(3)) }
            // The columns after an SQLite-only one are numbered as PostgreSQL numbers them.
            var skipped = 0
            for (position, column) in columns.enumerated() {
                let type = mappedTypes[column.type.uppercased()] ?? "unmapped \(column.type)"
                // A primary key is never null in PostgreSQL; SQLite's pragma says so only when declared.
                let nullability = column.notNull || column.pk > 0 ? " not null" : ""
                let line = "\(table): column \(position + 1 - skipped) \(column.name) \(type)\(nullability)"
                lines.insert(line)
                if sqliteOnly.contains(line) { skipped += 1 }
            }
            let key = columns.filter { $0.pk > 0 }.sorted { $0.pk < $1.pk }.map(\.name)
            if !key.isEmpty { lines.insert("\(table): primary key (\(key.joined(separator: ", ")))") }
            let indexes = try db.prepare("SELECT name, \"unique\", origin, partial FROM pragma_index_list(?)")
                .query([table]) { (name: $0.text(0) ?? "", unique: $0.int(1) != 0, origin: $0.text(2) ?? "", partial: $0.int(3) != 0) }
            for index in indexes where index.origin != "pk" {
                let indexColumns = try db.prepare("SELECT name FROM pragma_index_info(?) ORDER BY seqno")
                    .query([index.name]) { $0.text(0) ?? "" }.joined(separator: ", ")
                if index.origin == "u" {
                    lines.insert("\(table): unique (\(indexColumns))")
                } else {
                    lines.insert(
                        "\(table): index \(index.name) (\(indexColumns))"
                            + (index.unique ? " unique" : "") + (index.partial ? " partial" : ""))
                }
            }
        }
        return lines
    }

    static func schema(_ db: PostgresConnection) throws -> Set<String> {
        var lines: Set<String> = []
        let tables = try db.query(
            """
            SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'
            """
        ).map { $0.text(0) ?? "" }
        for table in tables {
            lines.insert("table \(table)")
            if postgresOnlyTables.contains(table) { continue }
            let columns = try db.query(
                """
                SELECT column_name, data_type, is_nullable FROM information_schema.columns
                WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position
                """, [.text(table)])
            // The columns after a PostgreSQL-only one are numbered as SQLite numbers them.
            var skipped = 0
            for (position, column) in columns.enumerated() {
                let nullability = column.text(2) == "NO" ? " not null" : ""
                let line = "\(table): column \(position + 1 - skipped) \(column.text(0) ?? "") \(column.text(1) ?? "")\(nullability)"
                lines.insert(line)
                if postgresOnly.contains(line) { skipped += 1 }
            }
            let indexes = try db.query(
                """
                SELECT c.relname, i.indisunique, i.indpred IS NOT NULL, i.indisprimary,
                       EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid AND k.contype = 'u'),
                       (SELECT string_agg(a.attname, ', ' ORDER BY k.ord)
                        FROM unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
                        JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum)
                FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                WHERE i.indrelid = $1::regclass
                """, [.text(table)])
            for index in indexes {
                let name = index.text(0) ?? "", columns = index.text(5) ?? ""
                if index.bool(3) == true {
                    lines.insert("\(table): primary key (\(columns))")
                } else if index.bool(4) == true {
                    lines.insert("\(table): unique (\(columns))")
                } else {
                    lines.insert(
                        "\(table): index \(name) (\(columns))"
                            + (index.bool(1) == true ? " unique" : "") + (index.bool(2) == true ? " partial" : ""))
                }
            }
        }
        return lines
    }
}
