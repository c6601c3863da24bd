import Foundation
import InsightDomain
import InsightPostgres
import PostgresClient
import PostgresTesting
import Synchronization
import XCTest

/// The PostgreSQL migrations and their migrator against a real PostgreSQL 15 (one server for
/// the suite, a database per test).
final class PostgresMigratorTests: XCTestCase {
    var server: TemporaryPostgres!
    var database: String!

    override func setUpWithError() throws {
        server = try TemporaryPostgres.shared()
        database = try server.createDatabase()
    }

    func connect() throws -> PostgresConnection { try server.connect(database: database) }

    func count(_ db: PostgresConnection, _ sql: String) throws -> Int64 {
        try XCTUnwrap(db.query(sql).first?.int64(0))
    }

    func testAnEmptyDatabaseGetsEveryMigrationOnceAndTheirChecksums() throws {
        let db = try connect()
        let migrations = try PostgresMigrator.bundled()
        XCTAssertEqual(migrations.count, 10)
        let applied = try PostgresMigrator(migrations: migrations).migrate(db, now: 1)
        XCTAssertEqual(applied, migrations.map(\.name))
        XCTAssertEqual(try PostgresMigrator(migrations: migrations).migrate(db, now: 2), [])
        let history = try PostgresMigrator(migrations: migrations).applied(db)
        XCTAssertEqual(history.map(\.checksum), migrations.map(\.checksum))
        XCTAssertEqual(history.map(\.appliedAt), Array(repeating: 1, count: 10))
        // The lock is released at the end of the run: another session takes it at once.
        let other = try connect()
        XCTAssertTrue(try other.tryAdvisoryLock(PostgresMigrator.lockKey))
        XCTAssertTrue(try other.advisoryUnlock(PostgresMigrator.lockKey))
    }

    func testAnEditedMigrationIsRefused() throws {
        let db = try connect()
        let migrations = try PostgresMigrator.bundled()
        try PostgresMigrator(migrations: migrations).migrate(db, now: 1)
        try db.execute("UPDATE schema_migrations SET checksum = 'ab' || checksum WHERE version = 3")
        XCTAssertThrowsError(try PostgresMigrator(migrations: migrations).migrate(db, now: 2)) { error in
            XCTAssertTrue("\(error)".contains("migration 0003_privacy was edited after it was applied"), "\(error)")
        }
    }

    func testAMigrationUnknownToTheBinaryIsRefused() throws {
        let db = try connect()
        let migrations = try PostgresMigrator.bundled()
        try PostgresMigrator(migrations: migrations).migrate(db, now: 1)
        try db.execute("INSERT INTO schema_migrations VALUES (9999, '9999_future', 'x', 2)")
        XCTAssertThrowsError(try PostgresMigrator(migrations: migrations).migrate(db, now: 2)) { error in
            XCTAssertTrue("\(error)".contains("9999_future, which this binary does not know"), "\(error)")
        }
    }

    func testAFailingMigrationLeavesNoTraceAndReleasesTheLock() throws {
        let db = try connect()
        let broken = try [Migration(name: "0001_broken", sql: "CREATE TABLE a (x bigint); CREATE TABLE a (y bigint);")]
        XCTAssertThrowsError(try PostgresMigrator(migrations: broken).migrate(db, now: 1))
        XCTAssertEqual(try PostgresMigrator(migrations: broken).applied(db), [])
        XCTAssertEqual(try count(db, "SELECT count(*) FROM pg_tables WHERE tablename = 'a'"), 0)
        let other = try connect()
        XCTAssertTrue(try other.tryAdvisoryLock(PostgresMigrator.lockKey))
    }

    /// Instances starting together on an empty database: the first takes the lock and applies
    /// everything; the others wait, then find nothing to do.
    func testInstancesStartingTogetherApplyEachMigrationOnce() throws {
        let migrations = try PostgresMigrator.bundled()
        let instances = 3
        let outcomes = Mutex<[Result<[String], any Error>]>([])
        let ready = DispatchSemaphore(value: 0)
        let go = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        let server = server!, database = database!
        for _ in 0..<instances {
            done.enter()
            Thread.detachNewThread {
                defer { done.leave() }
                let outcome: Result<[String], any Error>
                do {
                    let db = try server.connect(database: database)
                    ready.signal()
                    go.wait()
                    outcome = .success(try PostgresMigrator(migrations: migrations).migrate(db, now: 1))
                } catch {
                    ready.signal()
                    outcome = .failure(error)
                }
                outcomes.withLock { $0.append(outcome) }
            }
        }
        for _ in 0..<instances { ready.wait() }
        for _ in 0..<instances { go.signal() }
        XCTAssertEqual(done.wait(timeout: .now() + 120), .success)

        let results = outcomes.withLock { $0 }
        XCTAssertEqual(results.count, instances)
        var appliedNow: [String] = []
        for result in results {
            switch result {
            case .success(let names): appliedNow += names
            case .failure(let error): XCTFail("an instance failed: \(error)")
            }
        }
        XCTAssertEqual(appliedNow.sorted(), migrations.map(\.name))
        let db = try connect()
        XCTAssertEqual(try count(db, "SELECT count(*) FROM schema_migrations"), Int64(migrations.count))
        XCTAssertEqual(try count(db, "SELECT count(DISTINCT version) FROM schema_migrations"), Int64(migrations.count))
    }
}
