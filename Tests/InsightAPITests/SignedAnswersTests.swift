import Crypto
import Foundation
import InsightApp
import InsightControl
import InsightDomain
import JSON
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Signed answers (PRODUCT.md §12) on a real daemon and real key files: every `200` of
/// `POST /v1/evaluations` verifies against `GET /v1/signing-keys` — checked by Python's
/// `cryptography`, an implementation independent of the daemon's OpenSSL calls — and keeps
/// verifying across rotation until its key's publication ends.
final class SignedAnswersTests: XCTestCase {
    var daemon: LiveDaemon!
    var key = ""
    var stateDirectory: String { daemon.service.settings.stateDirectory }
    var keyDirectory: String { daemon.service.settings.resolvedSigningKeyDirectory }

    override func setUpWithError() throws {
        daemon = try LiveDaemon()
        (_, key) = try daemon.createCaller(roles: [.evaluate], environment: .sandbox)
    }

    override func tearDown() { daemon = nil }

    static let verifier = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("e2e/verify_signature.py").path
    static let body = #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}]}"#

    /// An evaluation: its body bytes and `Insight-Signature`.
    func answer(override: String? = nil) throws -> (body: [UInt8], signature: String) {
        let r = try daemon.request("POST", "/v1/evaluations", key: key, json: Self.body,
                                   headers: override.map { ["Insight-Override": $0] } ?? [:])
        XCTAssertEqual(r.status, 200)
        return (r.body, try XCTUnwrap(r.headers["insight-signature"], "a 200 without Insight-Signature"))
    }

    func jwks() throws -> [UInt8] {
        let r = try daemon.request("GET", "/v1/signing-keys")
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.headers["cache-control"], "public, max-age=300")
        return r.body
    }

    func publishedKeyIds() throws -> [String] {
        try JSONParser.parse(try jwks())["keys"]?.arrayValue?.compactMap { $0["kid"]?.stringValue } ?? []
    }

    /// Python's verdict: the kid when `signature` verifies `body` under `jwks`, nil otherwise
    /// (with its reason in `reason`).
    func pythonVerifies(jwks: [UInt8], body: [UInt8], signature: String) throws -> (kid: String?, reason: String) {
        let directory = daemon.directory
        let jwksFile = directory.appendingPathComponent("jwks-\(UUID().uuidString).json")
        let bodyFile = directory.appendingPathComponent("body-\(UUID().uuidString).json")
        try Data(jwks).write(to: jwksFile)
        try Data(body).write(to: bodyFile)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Self.verifier, jwksFile.path, bodyFile.path, signature]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let printed = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let reason = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertFalse(reason.contains("ModuleNotFoundError"), "python3-cryptography is missing: make deps-test installs it")
        return process.terminationStatus == 0 ? (printed.trimmingCharacters(in: .whitespacesAndNewlines), reason) : (nil, reason)
    }

    /// The key id a signature's protected header names.
    func keyId(of signature: String) throws -> String {
        let header = try XCTUnwrap(Base64URL.decode(signature.prefix { $0 != "." }))
        XCTAssertEqual(String(decoding: header, as: UTF8.self), DetachedJWSSigner.protectedHeader(keyId: try XCTUnwrap(
            JSONParser.parse(header)["kid"]?.stringValue)), "the header is exactly {alg, kid}")
        return try XCTUnwrap(JSONParser.parse(header)["kid"]?.stringValue)
    }

    func testEveryAnswerVerifiesWithPythonsCryptographyAndATamperedOneDoesNot() throws {
        let keys = try jwks()
        // Ordinary answers and sandbox overrides: every 200 is signed.
        for override in [nil, "isLikelyBeingCoached=high", "isLikelyBeingCoached=error:insightEvaluationFailed"] {
            let (body, signature) = try answer(override: override)
            let verdict = try pythonVerifies(jwks: keys, body: body, signature: signature)
            XCTAssertEqual(verdict.kid, try keyId(of: signature), "\(override ?? "plain"): \(verdict.reason)")
        }
        let (body, signature) = try answer()
        var tampered = body
        let index = try XCTUnwrap(tampered.firstIndex(of: UInt8(ascii: "x")) ?? tampered.indices.last)
        tampered[index] ^= 0x01
        XCTAssertNil(try pythonVerifies(jwks: keys, body: tampered, signature: signature).kid, "a tampered body verified")
        XCTAssertNil(try pythonVerifies(jwks: keys, body: body + [UInt8(ascii: " ")], signature: signature).kid,
                     "one byte more verified: the signature is over the exact bytes")
        var badSignature = Array(signature.utf8)
        badSignature[badSignature.count - 5] = badSignature[badSignature.count - 5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        XCTAssertNil(try pythonVerifies(jwks: keys, body: body, signature: String(decoding: badSignature, as: UTF8.self)).kid)
        // Errors are not signed answers: no signature on a problem.
        let refused = try daemon.request("POST", "/v1/evaluations", key: key, json: "{}")
        XCTAssertEqual(refused.status, 422)
        XCTAssertNil(refused.headers["insight-signature"])
    }

    func testRotationKeepsEarlierAnswersVerifiableAndRetiredKeysLeaveAfterTheirPeriod() throws {
        let before = try answer()
        let oldKid = try keyId(of: before.signature)
        XCTAssertEqual(try publishedKeyIds(), [oldKid])
        // A verifier that keeps the set asks with its entity tag: 304 while it is unchanged.
        let tag = try XCTUnwrap(try daemon.request("GET", "/v1/signing-keys").headers["etag"])
        XCTAssertEqual(try daemon.request("GET", "/v1/signing-keys", headers: ["If-None-Match": tag]).status, 304)

        XCTAssertEqual(AdminCommand.main(arguments: ["insightctl", "--state-dir", stateDirectory, "signing-keys", "rotate"],
                                         environment: [:]), 0)
        daemon.service.reloadSigningKeysIfChanged()
        let after = try answer()
        let newKid = try keyId(of: after.signature)
        XCTAssertNotEqual(newKid, oldKid, "the rotated key signs (embedded mode: at once)")
        XCTAssertEqual(Set(try publishedKeyIds()), [oldKid, newKid])
        let changed = try daemon.request("GET", "/v1/signing-keys", headers: ["If-None-Match": tag])
        XCTAssertEqual(changed.status, 200, "a new key changes the set's entity tag")
        XCTAssertNotEqual(changed.headers["etag"], tag)
        let keysAfterRotation = try jwks()
        XCTAssertEqual(try pythonVerifies(jwks: keysAfterRotation, body: before.body, signature: before.signature).kid, oldKid,
                       "an answer signed before the rotation verifies after it")
        XCTAssertEqual(try pythonVerifies(jwks: keysAfterRotation, body: after.body, signature: after.signature).kid, newKid)

        // The current key cannot be retired; the old one can, and stays published for the
        // retention (1 s here), then leaves the JWKS.
        XCTAssertNotEqual(AdminCommand.main(arguments: ["insightctl", "--state-dir", stateDirectory, "signing-keys", "retire", newKid],
                                            environment: [:]), 0)
        XCTAssertEqual(AdminCommand.main(arguments: ["insightctl", "--state-dir", stateDirectory, "signing-keys", "retire", oldKid],
                                         environment: ["INSIGHTD_SIGNING_KEY_RETENTION": "2"]), 0)
        daemon.service.reloadSigningKeysIfChanged()
        let retiredAt = Date()
        let stillPublished = try publishedKeyIds()
        if Date().timeIntervalSince(retiredAt) < 1.5 {
            XCTAssertEqual(Set(stillPublished), [oldKid, newKid], "a retired key stays published for its period")
        }
        XCTAssertEqual(try keyId(of: try answer().signature), newKid)
        let deadline = Date().addingTimeInterval(30)
        while try publishedKeyIds().contains(oldKid), Date() < deadline { usleep(100_000) }
        XCTAssertEqual(try publishedKeyIds(), [newKid], "a retired key leaves the JWKS once its period ends")
        XCTAssertNil(try pythonVerifies(jwks: try jwks(), body: before.body, signature: before.signature).kid)
        // Its file goes with the next change insightctl makes.
        XCTAssertEqual(AdminCommand.main(arguments: ["insightctl", "--state-dir", stateDirectory, "signing-keys", "rotate"],
                                         environment: [:]), 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: keyDirectory + "/\(oldKid).key"))
    }

    func testKeysAreCreatedPrivateAndNeverReachTheLogOrTheDatabase() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: keyDirectory)
        XCTAssertEqual(files.count, 1, "a first key is created on first start")
        let path = keyDirectory + "/" + files[0]
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int, 0o600)
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: keyDirectory)[.posixPermissions] as? Int, 0o700)
        XCTAssertFalse(keyDirectory.hasPrefix(daemon.service.settings.databasePath))

        for _ in 0..<20 { _ = try answer() }
        XCTAssertEqual(AdminCommand.main(arguments: ["insightctl", "--state-dir", stateDirectory, "signing-keys", "rotate"],
                                         environment: [:]), 0)
        daemon.service.reloadSigningKeysIfChanged()
        for _ in 0..<5 { _ = try answer() }
        daemon.service.stop()  // everything written and checkpointed
        var stored = try daemon.logText()
        for suffix in ["", "-wal", "-shm"] {
            stored.append((try? Data(contentsOf: URL(fileURLWithPath: daemon.service.settings.databasePath + suffix))) ?? Data())
        }
        XCTAssertFalse(stored.isEmpty)
        for name in try FileManager.default.contentsOfDirectory(atPath: keyDirectory) {
            let text = try String(contentsOfFile: keyDirectory + "/" + name, encoding: .utf8)
            let hex = try XCTUnwrap(text.split(separator: "\n").first { $0.hasPrefix("seed ") }?.dropFirst(5))
            let seed = try XCTUnwrap(Hex.decode(String(hex)))
            for form in [Array(hex.utf8), seed, Array(Base64URL.encode(seed).utf8), Array(Hex.encode(seed).uppercased().utf8)] {
                XCTAssertNil(stored.range(of: Data(form)), "a signing key's private half is in the log or the database")
            }
        }
    }

    func testTheDaemonKeepsItsKeysWhenTheDirectoryBreaksAndRefusesToStartOnABrokenOne() throws {
        let kid = try keyId(of: try answer().signature)
        let intruder = keyDirectory + "/broken.key"
        _ = FileManager.default.createFile(atPath: intruder, contents: Data("not a key\n".utf8))
        daemon.service.reloadSigningKeysIfChanged()
        XCTAssertEqual(try keyId(of: try answer().signature), kid, "a broken directory leaves the keys in use")
        XCTAssertTrue(String(decoding: try daemon.logText(), as: UTF8.self).contains("cannot reload signing keys; keeping the keys in use"))
        XCTAssertThrowsError(try daemon.restart()) {
            XCTAssertTrue("\($0)".contains("broken.key: the first line is not"), "\($0)")
        }
    }

    func testInsightctlListsRotatesAndRetires() throws {
        let environment = ["INSIGHTD_STATE_DIR": stateDirectory]
        func ctl(_ words: String..., env: [String: String] = [:]) -> (status: Int32, output: String) {
            captureStandardOutput {
                AdminCommand.main(arguments: ["insightctl"] + words, environment: environment.merging(env) { $1 })
            }
        }
        let first = try keyId(of: try answer().signature)
        var listed = ctl("signing-keys", "list", "--json")
        XCTAssertEqual(listed.status, 0)
        var rows = try XCTUnwrap(JSONParser.parse(Array(listed.output.utf8)).arrayValue)
        XCTAssertEqual(rows.map { $0["keyId"]?.stringValue }, [first])
        XCTAssertEqual(rows.first?["status"]?.stringValue, "current")
        XCTAssertEqual(rows.first?["retiredUntil"], .null)

        // A delayed rotation: published at once, signing later.
        let rotated = ctl("signing-keys", "rotate", "--activate-after", "3600")
        XCTAssertEqual(rotated.status, 0)
        XCTAssertTrue(rotated.output.contains("published now, signs from "), rotated.output)
        listed = ctl("signing-keys", "list", "--json")
        rows = try XCTUnwrap(JSONParser.parse(Array(listed.output.utf8)).arrayValue)
        XCTAssertEqual(rows.map { $0["status"]?.stringValue }, ["next", "current"])
        let next = try XCTUnwrap(rows.first?["keyId"]?.stringValue)
        daemon.service.reloadSigningKeysIfChanged()
        XCTAssertEqual(Set(try publishedKeyIds()), [first, next], "a next key is published before it signs")
        XCTAssertEqual(try keyId(of: try answer().signature), first, "and does not sign yet")

        let table = ctl("signing-keys", "list")
        XCTAssertTrue(table.output.hasPrefix("KEY"), table.output)
        XCTAssertTrue(table.output.contains("next") && table.output.contains("current"), table.output)
        XCTAssertFalse(table.output.contains("seed"), "list never shows a key")

        // Error paths: each refused with status 1 and nothing changed.
        let before = try FileManager.default.contentsOfDirectory(atPath: keyDirectory).sorted()
        XCTAssertEqual(ctl("signing-keys", "retire", first).status, 1, "the current key")
        XCTAssertEqual(ctl("signing-keys", "retire", "no-such-key").status, 1)
        XCTAssertEqual(ctl("signing-keys", "retire", next, env: ["INSIGHTD_SIGNING_KEY_RETENTION": "soon"]).status, 1)
        XCTAssertEqual(ctl("signing-keys", "rotate", "--activate-after", "-1").status, 1)
        XCTAssertEqual(ctl("signing-keys", "rotate", "--activate-after", "86401").status, 1)
        XCTAssertEqual(ctl("signing-keys", "list", "--bogus").status, 1)
        XCTAssertEqual(ctl("signing-keys", "rotate", env: ["INSIGHTD_DATABASE_URL": "postgres://u@127.0.0.1:1/x"]).status, 1,
                       "several instances: the shared directory must be named")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: keyDirectory).sorted(), before)

        // Retiring the key that has not signed yet: the current key goes on.
        let retired = ctl("signing-keys", "retire", next, env: ["INSIGHTD_SIGNING_KEY_RETENTION": "600"])
        XCTAssertEqual(retired.status, 0)
        XCTAssertTrue(retired.output.contains("retired: it signs no more and stays published until"), retired.output)
        rows = try XCTUnwrap(JSONParser.parse(Array(ctl("signing-keys", "list", "--json").output.utf8)).arrayValue)
        XCTAssertEqual(rows.map { $0["status"]?.stringValue }, ["retired", "current"])
        XCTAssertNotNil(rows.first?["retiredUntil"]?.stringValue)

        // INSIGHTD_SIGNING_KEY_DIR names the directory.
        let elsewhere = daemon.directory.appendingPathComponent("elsewhere").path
        XCTAssertEqual(ctl("signing-keys", "rotate", env: ["INSIGHTD_SIGNING_KEY_DIR": elsewhere]).status, 0)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: elsewhere).count, 1)
    }
}

/// What `body` prints on standard output, with its result.
func captureStandardOutput(_ body: () -> Int32) -> (status: Int32, output: String) {
    fflush(nil)
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("stdout-\(UUID().uuidString)").path
    let file = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    let saved = dup(STDOUT_FILENO)
    dup2(file, STDOUT_FILENO)
    let status = body()
    fflush(nil)
    dup2(saved, STDOUT_FILENO)
    close(saved)
    close(file)
    let output = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    unlink(path)
    return (status, output)
}

/// Runs `body` with `text` as its standard input (a file in place of descriptor 0).
func withStandardInput<T>(_ text: String, _ body: () throws -> T) rethrows -> T {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("stdin-\(UUID().uuidString)").path
    _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
    defer { unlink(path) }
    let file = open(path, O_RDONLY)
    let saved = dup(STDIN_FILENO)
    dup2(file, STDIN_FILENO)
    defer {
        dup2(saved, STDIN_FILENO)
            close(saved)
        close(file)
    }
    return try body()
}
