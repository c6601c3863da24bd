import Foundation
import InsightApp
import InsightDomain
import XCTest

/// Secret files are created private (0600 whatever the umask), never replace a file they must
/// not, and leave no temporary file behind.
final class PrivateFileTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("private-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func mode(_ path: String) throws -> Int {
        try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int ?? -1
    }

    private func withUmask<T>(_ mask: mode_t, _ body: () throws -> T) rethrows -> T {
        let old = umask(mask)
        defer { umask(old) }
        return try body()
    }

    func testTheKeyringIsWrittenPrivateUnderAnOpenUmask() throws {
        let path = directory + "/hash.key"
        let entries = try withUmask(0) { try KeyringFile.load(path: path, createIfMissing: true, now: 1) }
        XCTAssertEqual(try mode(path), 0o600)
        try withUmask(0) { _ = try KeyringFile.rotate(path: path, now: 2) }
        XCTAssertEqual(try mode(path), 0o600)
        XCTAssertEqual(try KeyringFile.load(path: path, createIfMissing: false, now: 3).first, entries.first)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory), ["hash.key"])
    }

    func testWriteReplacesAFileWhole() throws {
        let path = directory + "/file"
        try PrivateFile.write(Array("first".utf8), to: path)
        try PrivateFile.write(Array("second".utf8), to: path)
        XCTAssertEqual(FileManager.default.contents(atPath: path), Data("second".utf8))
        XCTAssertEqual(try mode(path), 0o600)
    }

    func testCreateNeverReplacesAFile() throws {
        let path = directory + "/backup.db"
        try withUmask(0) { try PrivateFile.create(path) { try Data("copy".utf8).write(to: URL(fileURLWithPath: $0)) } }
        XCTAssertEqual(try mode(path), 0o600)
        XCTAssertThrowsError(try PrivateFile.create(path) { _ in XCTFail("filled although the file exists") })
        XCTAssertEqual(FileManager.default.contents(atPath: path), Data("copy".utf8))
        // A failing fill leaves nothing behind.
        XCTAssertThrowsError(try PrivateFile.create(directory + "/other") { _ in throw AppError("broken") })
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory), ["backup.db"])
    }
}
