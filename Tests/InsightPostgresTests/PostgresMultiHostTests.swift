import Foundation
@testable import InsightPostgres
import PostgresClient
import PostgresTesting
import XCTest

/// Every connection of the store asks for the server that takes writes, so a multi-host URL
/// finds the primary among servers of which the others refuse writes (as a standby does), and a
/// URL where none takes writes fails saying so, without the password.
final class PostgresMultiHostTests: XCTestCase {
    func testTheStoreConnectsToTheHostThatTakesWrites() throws {
        let primary = try TemporaryPostgres.shared()
        let readOnly = try TemporaryPostgres()
        defer { readOnly.destroy() }
        // The same role on both, as a standby has its primary's; one server refuses writes.
        let password = "mh-\(UInt32.random(in: 0...UInt32.max))"
        for server in [primary, readOnly] {
            try server.connect().execute("DROP ROLE IF EXISTS multihost; CREATE ROLE multihost LOGIN PASSWORD '\(password)'")
        }
        let admin = try readOnly.connect()
        try admin.execute("ALTER SYSTEM SET default_transaction_read_only = on")
        try admin.execute("SELECT pg_reload_conf()")
        Thread.sleep(forTimeInterval: 0.3)

        let url = "postgres://multihost:\(password)@127.0.0.1:\(readOnly.port),127.0.0.1:\(primary.port)/postgres"
        XCTAssertNoThrow(try PostgresURL(parsing: url))
        let connection = try PostgresSettings(url: url).connect()
        XCTAssertEqual(
            try connection.query("SELECT inet_server_port()").first?.int64(0), Int64(primary.port),
            "the first host refuses writes: the second is kept")

        let nowhere = "postgres://multihost:\(password)@127.0.0.1:\(readOnly.port)/postgres"
        XCTAssertThrowsError(try PostgresSettings(url: nowhere).connect()) { error in
            XCTAssertTrue("\(error)".contains("read-only"), "\(error)")
            XCTAssertFalse("\(error)".contains(password), "\(error)")
        }
    }
}
