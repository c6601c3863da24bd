import Foundation
import InsightApp
import InsightDomain
import XCTest

/// The signing key directory on real files: creation, modes, rotation, retirement, expiry, and
/// every way a file or directory can be unusable.
final class SigningKeyDirectoryTests: XCTestCase {
    private var root: String!
    private var directory: String { root + "/signing-keys" }
    private let t0: Milliseconds = 1_796_000_000_000

    override func setUpWithError() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("insightd-sk-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: root)
    }

    private func mode(_ path: String) throws -> Int {
        try XCTUnwrap(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }

    private func files() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).sorted()
    }

    func testFirstLoadCreatesAPrivateKeyThatSignsAtOnce() throws {
        let old = umask(0o022)
        defer { umask(old) }
        let set = try SigningKeyDirectory.keySet(directory: directory, createIfEmpty: true, now: t0)
        XCTAssertEqual(set.keys.count, 1)
        let key = try XCTUnwrap(set.current(at: t0))
        XCTAssertEqual(try files(), [key.keyId + ".key"])
        XCTAssertEqual(try mode(directory), 0o700)
        XCTAssertEqual(try mode(directory + "/" + key.keyId + ".key"), 0o600)
        // Loading again reads the same key; nothing new is created.
        let again = try SigningKeyDirectory.keySet(directory: directory, createIfEmpty: true, now: t0 + 1)
        XCTAssertEqual(again.keys.map(\.keyId), [key.keyId])
        XCTAssertEqual(again.keys[0].publicKey, key.publicKey)
    }

    func testWithoutCreationAnEmptyOrMissingDirectoryIsRefused() throws {
        XCTAssertThrowsError(try SigningKeyDirectory.keySet(directory: directory, createIfEmpty: false, now: t0)) {
            XCTAssertTrue("\($0)".contains("holds no signing key; create one with insightctl signing-keys rotate"), "\($0)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory), "nothing is created")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        XCTAssertThrowsError(try SigningKeyDirectory.keySet(directory: directory, createIfEmpty: false, now: t0))
        // A file where the directory should be.
        let file = root + "/file"
        _ = FileManager.default.createFile(atPath: file, contents: Data())
        XCTAssertThrowsError(try SigningKeyDirectory.keySet(directory: file, createIfEmpty: true, now: t0)) {
            XCTAssertTrue("\($0)".contains("is not a directory"), "\($0)")
        }
    }

    func testRotationPublishesAtOnceAndSignsAfterTheDelay() throws {
        let first = try SigningKeyDirectory.rotate(directory: directory, now: t0, activateAfter: 300)
        XCTAssertEqual(first.activatesAt, t0, "the first key signs at once: there is no key to hand over from")
        let second = try SigningKeyDirectory.rotate(directory: directory, now: t0 + 1000, activateAfter: 300)
        XCTAssertEqual(second.activatesAt, t0 + 301_000)
        let set = try SigningKeyDirectory.keySet(directory: directory, createIfEmpty: false, now: t0 + 2000)
        XCTAssertEqual(set.published(at: t0 + 2000).map(\.keyId), [first.keyId, second.keyId])
        XCTAssertEqual(set.current(at: t0 + 2000)?.keyId, first.keyId)
        XCTAssertEqual(set.status(of: set.keys[1], at: t0 + 2000), .next)
        XCTAssertEqual(set.current(at: t0 + 301_000)?.keyId, second.keyId)
        XCTAssertEqual(set.status(of: set.keys[0], at: t0 + 301_000), .previous)
        XCTAssertEqual(set.status(of: set.keys[1], at: t0 + 301_000), .current)
        for file in try files() { XCTAssertEqual(try mode(directory + "/" + file), 0o600, file) }
    }

    func testRetirementKeepsAKeyPublishedForItsPeriodThenItsFileIsDeleted() throws {
        let first = try SigningKeyDirectory.rotate(directory: directory, now: t0, activateAfter: 0)
        XCTAssertThrowsError(try SigningKeyDirectory.retire(keyId: first.keyId, directory: directory, now: t0, retention: 60)) {
            XCTAssertTrue("\($0)".contains("is the current key; rotate first"), "\($0)")
        }
        let second = try SigningKeyDirectory.rotate(directory: directory, now: t0 + 1, activateAfter: 0)
        let retired = try SigningKeyDirectory.retire(keyId: first.keyId, directory: directory, now: t0 + 2, retention: 60)
        XCTAssertEqual(retired.retiredAt, t0 + 2)
        XCTAssertEqual(retired.publishedUntil, t0 + 60_002)
        XCTAssertThrowsError(try SigningKeyDirectory.retire(keyId: first.keyId, directory: directory, now: t0 + 3, retention: 60)) {
            XCTAssertTrue("\($0)".contains("already retired"), "\($0)")
        }
        XCTAssertThrowsError(try SigningKeyDirectory.retire(keyId: "nope", directory: directory, now: t0 + 3, retention: 60)) {
            XCTAssertTrue("\($0)".contains("no signing key nope"), "\($0)")
        }

        let set = try SigningKeyDirectory.keySet(directory: directory, createIfEmpty: false, now: t0 + 3)
        XCTAssertEqual(set.current(at: t0 + 3)?.keyId, second.keyId)
        XCTAssertEqual(set.published(at: t0 + 60_001).map(\.keyId), [first.keyId, second.keyId])
        XCTAssertEqual(set.status(of: set.keys[0], at: t0 + 60_001), .retired)
        XCTAssertEqual(set.published(at: t0 + 60_002).map(\.keyId), [second.keyId], "gone once its period ends")
        XCTAssertEqual(set.status(of: set.keys[0], at: t0 + 60_002), .expired)

        XCTAssertEqual(try SigningKeyDirectory.removeExpired(directory: directory, now: t0 + 60_001), [])
        XCTAssertEqual(try files().count, 2)
        XCTAssertEqual(try SigningKeyDirectory.removeExpired(directory: directory, now: t0 + 60_002), [first.keyId])
        XCTAssertEqual(try files(), [second.keyId + ".key"])
    }

    func testASetWhoseEveryKeyIsRetiredCannotSign() throws {
        let first = try SigningKeyDirectory.rotate(directory: directory, now: t0, activateAfter: 0)
        let file = directory + "/" + first.keyId + ".key"
        var text = try String(contentsOfFile: file, encoding: .utf8)
        text = text.replacingOccurrences(of: "seed", with: "retired \(t0) until \(t0 + 1000)\nseed")
        try text.write(toFile: file, atomically: false, encoding: .utf8)
        XCTAssertThrowsError(try SigningKeyDirectory.keySet(directory: directory, createIfEmpty: true, now: t0 + 1)) {
            XCTAssertTrue("\($0)".contains("holds no key that can sign: every key is retired"), "\($0)")
        }
        // A rotation then signs at once, whatever the delay asked: nothing signs before it.
        let second = try SigningKeyDirectory.rotate(directory: directory, now: t0 + 2, activateAfter: 300)
        XCTAssertEqual(second.activatesAt, t0 + 2)
    }

    func testMalformedFilesAreRefusedNamingTheProblem() throws {
        let good = try SigningKeyDirectory.rotate(directory: directory, now: t0, activateAfter: 0)
        let goodText = try String(contentsOfFile: directory + "/" + good.keyId + ".key", encoding: .utf8)
        let seedLine = try XCTUnwrap(goodText.split(separator: "\n").first { $0.hasPrefix("seed ") })
        let cases: [(String, String)] = [
            ("not a signing key\n", "the first line is not"),
            ("insightd-signing-key 1\ncreated 1\nactivates 1\nsecret x\n\(seedLine)\n", "line 4 is not one of"),
            ("insightd-signing-key 1\nactivates 1\n\(seedLine)\n", "'created <ms>' and 'activates <ms>' are required"),
            ("insightd-signing-key 1\ncreated x\nactivates 1\n\(seedLine)\n", "'created <ms>' and 'activates <ms>' are required"),
            ("insightd-signing-key 1\ncreated 1\nactivates 1\nseed abcd\n", "'seed' must be 64 hex digits"),
            (
                "insightd-signing-key 1\ncreated 1\nactivates 1\nseed \(String(repeating: "zz", count: 32))\n",
                "'seed' must be 64 hex digits"
            ),
            ("insightd-signing-key 1\ncreated 1\nactivates 1\nretired 2 until x\n\(seedLine)\n", "is not 'retired <ms> until <ms>'")
        ]
        let intruder = directory + "/\(good.keyId).key"
        for (text, message) in cases {
            try Data(text.utf8).write(to: URL(fileURLWithPath: intruder))
            XCTAssertThrowsError(try SigningKeyDirectory.keySet(directory: directory, createIfEmpty: false, now: t0), message) {
                XCTAssertTrue("\($0)".contains(message), "\($0) lacks \(message)")
                XCTAssertFalse("\($0)".contains(String(seedLine.dropFirst(5))), "an error must never quote the key")
            }
        }
        // A key under another key's name.
        try Data(goodText.utf8).write(to: URL(fileURLWithPath: directory + "/other.key"))
        try Data(goodText.utf8).write(to: URL(fileURLWithPath: intruder))
        XCTAssertThrowsError(try SigningKeyDirectory.keySet(directory: directory, createIfEmpty: false, now: t0)) {
            XCTAssertTrue("\($0)".contains("holds key \(good.keyId); name it \(good.keyId).key"), "\($0)")
        }
        try FileManager.default.removeItem(atPath: directory + "/other.key")
        // What a mounted Kubernetes Secret adds beside the files, and other names, are ignored.
        try FileManager.default.createDirectory(atPath: directory + "/..2026_12_05", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: directory + "/..data", withDestinationPath: "..2026_12_05")
        _ = FileManager.default.createFile(atPath: directory + "/README", contents: Data("x".utf8))
        XCTAssertEqual(try SigningKeyDirectory.keySet(directory: directory, createIfEmpty: false, now: t0).keys.map(\.keyId), [good.keyId])
    }

    /// `insightd --check-config`: an embedded daemon creates its first key, several instances
    /// never do; a broken directory is a problem in either mode.
    func testCheckConfigurationSaysWhatTheStartWouldFind() throws {
        var settings = Settings()
        settings.stateDirectory = root
        XCTAssertNil(SigningKeyDirectory.problem(settings, now: t0), "embedded, no key yet: one will be created")
        var shared = settings
        shared.databaseURL = "postgres://u@db/x"
        shared.signingKeyDirectory = directory
        XCTAssertEqual(
            SigningKeyDirectory.problem(shared, now: t0),
            "signing key directory \(directory) holds no signing key; create one with insightctl signing-keys rotate")
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory), "checking creates nothing")
        try SigningKeyDirectory.rotate(directory: directory, now: t0, activateAfter: 0)
        XCTAssertNil(SigningKeyDirectory.problem(shared, now: t0))
        _ = FileManager.default.createFile(atPath: directory + "/bad.key", contents: Data("x\n".utf8))
        XCTAssertTrue(SigningKeyDirectory.problem(settings, now: t0)?.contains("bad.key: the first line is not") ?? false)
        XCTAssertTrue(SigningKeyDirectory.problem(shared, now: t0)?.contains("bad.key") ?? false)
    }

    /// A key file others can read, or a group other than insightd's, is refused wherever keys
    /// are read (start, reload, --check-config); one its own group reads (a Kubernetes Secret
    /// mounted 0440 with the pod's fsGroup) is not.
    func testExposedKeyFilesAreRefused() throws {
        let key = try SigningKeyDirectory.rotate(directory: directory, now: t0, activateAfter: 0)
        let file = directory + "/" + key.keyId + ".key"
        let hashKey = root + "/hash.key"
        _ = try KeyringFile.keyring(path: hashKey, createIfMissing: true, now: t0)
        for path in [file, hashKey] {
            let load = { () throws -> Void in
                if path == file {
                    _ = try SigningKeyDirectory.keySet(directory: self.directory, createIfEmpty: false, now: self.t0)
                } else {
                    _ = try KeyringFile.keyring(path: hashKey, createIfMissing: false, now: self.t0)
                }
            }
            XCTAssertNoThrow(try load())
            chmod(path, 0o604)
            XCTAssertThrowsError(try load()) { XCTAssertTrue("\($0)".contains("readable by other users"), "\($0)") }
            chmod(path, 0o640)
            XCTAssertNoThrow(try load(), "the daemon's own group")
            XCTAssertEqual(chown(path, getuid(), getegid() &+ 4242), 0)
            XCTAssertThrowsError(try load()) { XCTAssertTrue("\($0)".contains("readable by its group"), "\($0)") }
            chmod(path, 0o600)
            XCTAssertNoThrow(try load(), "a group that cannot read it")
        }
        var settings = Settings()
        settings.stateDirectory = root
        XCTAssertNil(SigningKeyDirectory.problem(settings, now: t0))
        chmod(file, 0o644)
        XCTAssertTrue(SigningKeyDirectory.problem(settings, now: t0)?.contains("readable by other users") ?? false, "--check-config")
    }
}
