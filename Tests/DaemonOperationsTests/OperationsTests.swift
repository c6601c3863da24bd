import DaemonTesting
import Foundation
import InsightApp
import InsightControl
import SQLiteClient
import XCTest

/// Operating the daemon: one instance per state directory, online backup and restore.
final class OperationsTests: XCTestCase {
    func testASecondInstanceOnTheSameStateDirectoryIsRefused() throws {
        let daemon = try TestDaemon(.inProcess)
        XCTAssertThrowsError(
            try InsightService.start(
                settings: daemon.service.settings,
                logger: Logger(
                    minimumLevel: .error,
                    sink: FileHandle(forWritingAtPath: "/dev/null")!))
        ) { error in
            XCTAssertTrue("\(error)".contains("another insightd"), "\(error)")
            XCTAssertTrue("\(error)".contains("\(getpid())"), "\(error)")
        }
        // The first keeps serving.
        XCTAssertEqual(try daemon.request("GET", "/livez").status, 200)
    }

    func testBackupWhileBusyIsConsistentAndRestores() throws {
        let daemon = try TestDaemon(.inProcess)
        let key = try daemon.createCaller(roles: [.evaluate]).key
        let body = #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}]}"#
        for _ in 0..<20 { XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: body).status, 200) }
        // Keep writing while the backup runs.
        let stop = StatusBox()
        let writers = DispatchGroup()
        DispatchQueue.global().async(group: writers) {
            while stop.values.isEmpty { _ = try? daemon.request("POST", "/v1/evaluations", key: key, json: body) }
        }
        let copy = daemon.directory.appendingPathComponent("backup.db").path
        let stateDir = daemon.service.settings.stateDirectory
        XCTAssertEqual(AdminCommand.main(arguments: ["insightctl", "--state-dir", stateDir, "backup", copy], environment: [:]), 0)
        stop.append(1)
        writers.wait()
        XCTAssertNotEqual(
            AdminCommand.main(arguments: ["insightctl", "--state-dir", stateDir, "backup", copy], environment: [:]), 0,
            "an existing file must not be overwritten")
        let backup = try SQLiteConnection(path: copy)
        XCTAssertEqual(try backup.scalarText("PRAGMA integrity_check"), "ok")
        let copied = Int(try backup.scalarText("SELECT count(*) FROM evaluations") ?? "0") ?? 0
        XCTAssertGreaterThanOrEqual(copied, 20)

        // Restore as docs/operations.md says: stop, replace the database, start.
        daemon.service.stop()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: daemon.service.settings.databasePath + suffix) }
        try FileManager.default.copyItem(atPath: copy, toPath: daemon.service.settings.databasePath)
        try daemon.restart()
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: body).status, 200)
        let restored = try SQLiteConnection(path: daemon.service.settings.databasePath).scalarText("SELECT count(*) FROM evaluations")
        XCTAssertEqual(restored, String(copied + 1))
    }
}
