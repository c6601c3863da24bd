import Foundation
import InsightDomain
@testable import InsightPostgres
import PostgresClient
import PostgresTesting
import XCTest

/// On PostgreSQL too, a subject's history is a backward range of its kind's hash index
/// (migration 0012), on a table big enough that a sequential scan would be the planner's choice
/// without it (it is, with 0012 undone), and its insights are ranges of their primary key.
final class PostgresSubjectHistoryPlanTests: XCTestCase {
    func testEachKindIsARangeOfItsIndex() throws {
        let server = try TemporaryPostgres.shared()
        let settings = PostgresSettings(url: server.url(database: try server.createDatabase()))
        let (store, _) = try PostgresStore.open(settings: settings, now: 1, receipts: .withEphemeralKey())
        defer { store.stop() }
        let db = try PostgresConnection(url: settings.url)
        // 100,000 evaluations by 5 callers, random hashes (every other one without a
        // counterparty), every 1,000th with the account hash 00…00; one insight each.
        try db.query(
            """
            INSERT INTO callers (caller_id, name, environment, roles, rate, burst, created_at)
                SELECT 'c' || i, 'caller ' || i, 'production', 'evaluate', 10, 20, 1 FROM generate_series(0, 4) i
            """)
        try db.query(
            """
            INSERT INTO evaluations (event_id, caller_id, environment, category, created_at, report_by, hash_key_id,
                                     account_hash, device_hash, counterparty_hash)
                SELECT 'e' || i, 'c' || (i % 5), 'production', 'payment', 1000 + i / 3, 2000 + i, 'k1',
                       CASE WHEN i % 1000 = 0 THEN decode(repeat('00', 32), 'hex')
                            ELSE sha256(('a' || i)::bytea) END,
                       sha256(('d' || i)::bytea),
                       CASE WHEN i % 2 = 0 THEN sha256(('p' || i)::bytea) END
                FROM generate_series(1, 100000) i
            """)
        try db.query(
            """
            INSERT INTO insights (slot, type, schema_version, model_version, value)
                SELECT number * 8, 'isLikelyBeingCoached', 1, '2.0', 'high' FROM evaluations
            """)
        try db.query("ANALYZE")
        for kind in IdentifierKind.allCases {
            let sql = PostgresSubjectHistory.sql(kind)
            let explain =
                "EXPLAIN "
                + sql.replacingOccurrences(of: "$1::bytea", with: "decode(repeat('00', 32), 'hex')")
                .replacingOccurrences(of: "$2::text", with: "'production'")
                .replacingOccurrences(of: "$3::text", with: "'default'")
                .replacingOccurrences(of: "$4::bigint", with: "9223372036854775807")
                .replacingOccurrences(of: "$5::bigint", with: "9223372036854775807")
                .replacingOccurrences(of: "$6::bigint", with: "51")
            let plan = try db.query(explain).map { $0.text(0) ?? "" }.joined(separator: "\n")
            // An index scan (backward) or, for a subject with few rows, a bitmap of them: either
            // way the subject's rows only.
            XCTAssertTrue(
                plan.contains("Index Scan Backward using evaluations_by_\(kind.rawValue) on evaluations e")
                    || plan.contains("Bitmap Index Scan on evaluations_by_\(kind.rawValue)"), plan)
            XCTAssertTrue(plan.contains("Index Scan using insights_pkey on insights i"), plan)
            XCTAssertFalse(plan.contains("Seq Scan on evaluations") || plan.contains("Seq Scan on insights"), plan)
        }
        let page = try store.administration.subjectHistory(
            SubjectHistoryQuery(
                kind: .account, hashes: [[UInt8](repeating: 0, count: 32)], tenant: "default", environment: .production, limit: 500))
        XCTAssertEqual(page.entries.map(\.eventId), stride(from: 100_000, through: 1_000, by: -1_000).map { "e\($0)" })
        XCTAssertEqual(page.next, nil)
    }
}
