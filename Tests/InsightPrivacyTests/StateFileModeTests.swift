import DaemonTesting
import Foundation
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// Every file of the state directory is its owner's alone (0600, directories 0700), whatever
/// the umask the daemon was started with: the database and its WAL hold hashes and decisions,
/// the keys are secrets.
final class StateFileModeTests: XCTestCase {
    func testStateFilesArePrivateWhateverTheUmask() throws {
        let previous = umask(0)
        defer { umask(previous) }
        let daemon = try TestDaemon(.inProcess)
        let key = try daemon.createCaller(roles: [.evaluate]).key
        XCTAssertEqual(
            try daemon.request(
                "POST", "/v1/evaluations", key: key,
                json:
                    #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"subject":{"account":"a-1"}}"#
            ).status, 200)
        XCTAssertEqual(
            try daemon.request("POST", "/v1/subjects/transparency", key: key, json: #"{"subject":{"account":"a-1"}}"#).status, 200)
        let root = daemon.service.settings.stateDirectory
        let names = try XCTUnwrap(FileManager.default.subpathsOfDirectory(atPath: root))
        XCTAssertTrue(names.contains("insightd.db") && names.contains("insightd.db-wal"), "\(names)")
        for name in names + [""] {
            var info = stat()
            let path = name.isEmpty ? root : (root as NSString).appendingPathComponent(name)
            guard lstat(path, &info) == 0 else { continue }  // gone since listed (a WAL at close)
            XCTAssertEqual(
                info.st_mode & 0o077, 0, "\(name.isEmpty ? "the state directory" : name) has mode \(String(info.st_mode & 0o777, radix: 8))"
            )
        }
    }
}
