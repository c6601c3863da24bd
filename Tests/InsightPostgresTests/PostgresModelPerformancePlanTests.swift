import Foundation
import InsightDomain
@testable import InsightPostgres
import PostgresClient
import PostgresTesting
import XCTest

/// On PostgreSQL too, a model performance report reads the period's evaluations of the tenant's
/// callers through evaluations_by_caller_created and their insights by primary key, on a table
/// big enough that a sequential scan would be the planner's choice for a whole year.
final class PostgresModelPerformancePlanTests: XCTestCase {
    static let day: Int64 = 86_400_000

    func testAWeekIsARangeOfTheCallersIndex() throws {
        let server = try TemporaryPostgres.shared()
        let settings = PostgresSettings(url: server.url(database: try server.createDatabase()))
        let (store, _) = try PostgresStore.open(settings: settings, now: 1, receipts: .withEphemeralKey())
        defer { store.stop() }
        let db = try PostgresConnection(url: settings.url)
        // 100,000 evaluations over 365 days by 5 callers (c4 of tenant acme), insight ids made
        // from the event ids; every 3rd reported, every 7th labelled.
        try db.query(
            """
            INSERT INTO callers (caller_id, name, environment, roles, rate, burst, created_at, tenant)
                SELECT 'c' || i, 'caller ' || i, 'production', 'evaluate', 10, 20, 1,
                       CASE WHEN i = 4 THEN 'acme' ELSE 'default' END FROM generate_series(0, 4) i
            """)
        try db.query(
            """
            INSERT INTO evaluations (event_id, caller_id, environment, category, created_at, report_by, hash_key_id)
                SELECT '0190aaaa-0000-7000-8000-' || lpad(i::text, 11, '0') || '0', 'c' || (i % 5), 'production',
                       CASE WHEN i % 4 = 0 THEN 'account' ELSE 'payment' END, i::bigint * 315360, i::bigint * 315360 + 60000, 'k1'
                FROM generate_series(1, 100000) i
            """)
        try db.query(
            """
            INSERT INTO insights (slot, type, schema_version, model_version, value)
                SELECT number * 8, 'isLikelyBeingCoached', 1, CASE WHEN number % 2 = 0 THEN '2.0' ELSE '1.0' END,
                       CASE number % 3 WHEN 0 THEN 'high' WHEN 1 THEN 'medium' ELSE 'unknown' END FROM evaluations
            """)
        try db.query(
            """
            INSERT INTO consumption_reports (event_id, status, insight_ids, reported_at, timeliness)
                SELECT event_id, 'usedIncreasedFriction', '', created_at + 1000, 'onTime' FROM evaluations WHERE number % 3 = 0
            """)
        try db.query(
            """
            INSERT INTO labels (insight_id, environment, caller_id, outcome, discovered_at, received_at)
                SELECT left(event_id, 35) || '1', 'production', 'ops',
                       CASE WHEN number % 2 = 0 THEN 'confirmedFraud' ELSE 'confirmedLegitimate' END, '2027-01-01', created_at
                FROM evaluations WHERE number % 7 = 0
            """)
        try db.query("ANALYZE")
        let from = 100 * Self.day, to = 107 * Self.day
        let explain =
            "EXPLAIN "
            + PostgresModelPerformance.sql
            .replacingOccurrences(of: "$1::text", with: "'default'")
            .replacingOccurrences(of: "$2::text", with: "'production'")
            .replacingOccurrences(of: "$3::bigint", with: "\(from)")
            .replacingOccurrences(of: "$4::bigint", with: "\(to)")
            .replacingOccurrences(of: "$5::bigint", with: "\(to)")
            .replacingOccurrences(of: "$6::text", with: "NULL::text")
            .replacingOccurrences(of: "$7::text", with: "'isLikelyBeingCoached'")
        let plan = try db.query(explain).map { $0.text(0) ?? "" }.joined(separator: "\n")
        XCTAssertTrue(
            plan.contains("Index Scan using evaluations_by_caller_created on evaluations e")
                || plan.contains("Bitmap Index Scan on evaluations_by_caller_created"), plan)
        XCTAssertTrue(plan.contains("Index Scan using insights_pkey on insights i"), plan)
        XCTAssertTrue(plan.contains("Index Scan using consumption_reports_pkey on consumption_reports r"), plan)
        XCTAssertTrue(plan.contains("Index Scan using labels_pkey on labels l"), plan)
        XCTAssertFalse(
            plan.contains("Seq Scan on evaluations") || plan.contains("Seq Scan on insights")
                || plan.contains("Seq Scan on consumption_reports") || plan.contains("Seq Scan on labels"), plan)

        let cells = try store.administration.modelPerformanceCounts(
            ModelPerformanceQuery(
                tenant: "default", environment: .production, from: from, to: to, matureBefore: to))
        let expected = (1...100_000).filter { $0 % 5 != 4 && Int64($0) * 315_360 >= from && Int64($0) * 315_360 < to }
        XCTAssertEqual(cells.map(\.count).reduce(0, +), expected.count)
        XCTAssertEqual(
            cells.filter { $0.label == .confirmedFraud }.map(\.count).reduce(0, +),
            expected.filter { $0 % 7 == 0 && $0 % 2 == 0 }.count)
    }
}
