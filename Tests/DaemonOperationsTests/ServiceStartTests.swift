import DaemonTesting
import Foundation
import InsightApp
import InsightStorage
import SQLiteClient
import XCTest

/// What start-up creates, and what it refuses.
final class ServiceStartTests: XCTestCase {
    var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("start-\(UUID().uuidString)")
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: directory) }

    func settings() -> Settings {
        var s = Settings()
        s.listenPort = 0
        s.metricsListen = nil
        s.stateDirectory = directory.appendingPathComponent("state").path
        s.modelsDirectory = directory.appendingPathComponent("models").path
        return s
    }

    func start(_ s: Settings) throws -> InsightService {
        try InsightService.start(
            settings: s,
            logger: Logger(
                minimumLevel: .error,
                sink: FileHandle(forWritingAtPath: "/dev/null")!))
    }

    /// A metrics listener that cannot bind stops the start, saying which listener, and leaves
    /// nothing running (the API's port is free again).
    func testAMetricsPortInUseStopsTheStartNamingTheListener() throws {
        let other = try TestDaemon(.live)
        var s = settings()
        s.metricsListen = ListenAddress(host: "127.0.0.1", port: try XCTUnwrap(other.service.metricsPort))
        XCTAssertThrowsError(try start(s)) { XCTAssertTrue("\($0)".contains("INSIGHTD_METRICS_LISTEN"), "\($0)") }
        s.metricsListen = nil
        try start(s).stop()
    }

    func testFirstStartCreatesStateDatabaseAndPrivateHashKey() throws {
        let s = settings()
        let service = try start(s)
        service.stop()
        let key = try Data(contentsOf: URL(fileURLWithPath: s.resolvedHashKeyFile))
        let entries = try KeyringFile.load(path: s.resolvedHashKeyFile, createIfMissing: false, now: 0)
        XCTAssertEqual(entries.count, 1)
        XCTAssertEqual(entries[0].key.count, 32)
        let keyMode = try FileManager.default.attributesOfItem(atPath: s.resolvedHashKeyFile)[.posixPermissions] as? Int
        XCTAssertEqual(keyMode, 0o600)
        let dirMode = try FileManager.default.attributesOfItem(atPath: s.stateDirectory)[.posixPermissions] as? Int
        XCTAssertEqual(dirMode, 0o700)
        XCTAssertEqual(try SQLiteConnection(path: s.databasePath).scalarText("PRAGMA journal_mode"), "wal")
        // A second start reuses the same key.
        try start(s).stop()
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: s.resolvedHashKeyFile)), key)
    }

    func testStartIsRefusedWhenAnAppliedMigrationWasEdited() throws {
        let s = settings()
        try start(s).stop()
        let db = try SQLiteConnection(path: s.databasePath)
        try db.execute("UPDATE schema_migrations SET checksum = 'edited' WHERE version = 1")
        XCTAssertThrowsError(try start(s)) { error in
            XCTAssertTrue("\(error)".contains("was edited after it was applied"), "\(error)")
        }
    }

    func testStartIsRefusedForABadHashKeyOrMissingExplicitModels() throws {
        var s = settings()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let shortKey = directory.appendingPathComponent("short.key")
        try Data(repeating: 1, count: 16).write(to: shortKey)
        s.hashKeyFile = shortKey.path
        XCTAssertThrowsError(try start(s)) { XCTAssertTrue("\($0)".contains("at least 32"), "\($0)") }
        s.hashKeyFile = directory.appendingPathComponent("absent.key").path
        XCTAssertThrowsError(try start(s)) { XCTAssertTrue("\($0)".contains("does not exist"), "\($0)") }
        s = settings()
        s.modelsDirectoryExplicit = true
        XCTAssertThrowsError(try start(s)) { XCTAssertTrue("\($0)".contains("models directory"), "\($0)") }
    }

    func testABusyPortIsAClearError() throws {
        let first = try start(settings())
        defer { first.stop() }
        var s = settings()
        s.stateDirectory = directory.appendingPathComponent("state2").path
        s.listenPort = first.boundPort
        XCTAssertThrowsError(try start(s)) { XCTAssertTrue("\($0)".contains("in use"), "\($0)") }
    }
}
