import Crypto
import DaemonTesting
import Foundation
import InsightApp
import InsightControl
import InsightDomain
import JSON
import SQLiteClient
import Synchronization
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// Receipts (docs/api.md "Receipts") on a real daemon and real key files: every
/// `200` of `POST /v1/evaluations` carries an `Insight-Receipt` whose head verifies against
/// `GET /v1/signing-keys` and whose path leads from the body to the head's root — checked by
/// Python's `cryptography` and `hashlib`, an implementation independent of the daemon's — and keeps
/// verifying across rotation until its key's publication ends.
final class ReceiptsTests: XCTestCase {
    var daemon: TestDaemon!
    var key = ""
    var stateDirectory: String { daemon.service.settings.stateDirectory }
    var keyDirectory: String { daemon.service.settings.resolvedSigningKeyDirectory }

    override func setUpWithError() throws {
        daemon = try TestDaemon(.inProcess)
        (_, key) = try daemon.createCaller(roles: [.evaluate], environment: .sandbox)
    }

    override func tearDown() { daemon = nil }

    static let verifier = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("e2e/verify_receipt.py").path
    static let body = #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}]}"#

    /// An evaluation: its body bytes and `Insight-Receipt`.
    func answer(override: String? = nil, key: String? = nil) throws -> (body: [UInt8], receipt: String) {
        let r = try daemon.request(
            "POST", "/v1/evaluations", key: key ?? self.key, json: Self.body,
            headers: override.map { ["Insight-Override": $0] } ?? [:])
        XCTAssertEqual(r.status, 200)
        XCTAssertNil(r.headers["insight-signature"], "no signature of its own")
        return (r.body, try XCTUnwrap(r.headers["insight-receipt"], "a 200 without Insight-Receipt"))
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

    /// Python's verdict: the kid when `receipt` proves `body` under `jwks`, nil otherwise (with
    /// its reason in `reason`).
    func pythonVerifies(jwks: [UInt8], body: [UInt8], receipt: String, options: [String] = []) throws -> (kid: String?, reason: String) {
        let directory = daemon.directory
        let jwksFile = directory.appendingPathComponent("jwks-\(UUID().uuidString).json")
        let bodyFile = directory.appendingPathComponent("body-\(UUID().uuidString).json")
        try Data(jwks).write(to: jwksFile)
        try Data(body).write(to: bodyFile)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Self.verifier, jwksFile.path, bodyFile.path, receipt] + options
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let printed = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let reason = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertFalse(reason.contains("ModuleNotFoundError"), "python3-cryptography is missing: make deps-test installs it")
        let kid = printed.split(separator: " ").last.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        return process.terminationStatus == 0 ? (kid, reason) : (nil, reason)
    }

    /// The members of a receipt (parsed the simple way: the daemon writes them in this order).
    func members(of receipt: String) throws -> (head: String, index: Int, path: [String]) {
        let parts = receipt.components(separatedBy: ", ")
        XCTAssertEqual(parts.count, 3, receipt)
        let head = String(try XCTUnwrap(parts.first?.dropFirst(#"head=""#.count).dropLast()))
        let index = try XCTUnwrap(Int(parts[1].dropFirst("index=".count)))
        let path = parts[2].dropFirst("path=(".count).dropLast().split(separator: " ").map(String.init)
        return (head, index, path)
    }

    func receiptHeader(head: String, index: Int, path: [String]) -> String {
        #"head="\#(head)", index=\#(index), path=(\#(path.joined(separator: " ")))"#
    }

    /// The key id a receipt's head names.
    func keyId(of receipt: String) throws -> String {
        let head = try members(of: receipt).head
        let header = try XCTUnwrap(Base64URL.decode(head.prefix { $0 != "." }))
        XCTAssertEqual(
            String(decoding: header, as: UTF8.self),
            JWSSigner.protectedHeader(
                keyId: try XCTUnwrap(
                    JSONParser.parse(header)["kid"]?.stringValue)), "the header is exactly {alg, kid}")
        return try XCTUnwrap(JSONParser.parse(header)["kid"]?.stringValue)
    }

    func testEveryAnswerVerifiesWithPythonsCryptographyAndATamperedOneDoesNot() throws {
        let keys = try jwks()
        // Ordinary answers and sandbox overrides: every 200 carries a receipt.
        for override in [nil, "isLikelyBeingCoached=high", "isLikelyBeingCoached=error:insightEvaluationFailed"] {
            let (body, receipt) = try answer(override: override)
            let verdict = try pythonVerifies(
                jwks: keys, body: body, receipt: receipt,
                options: ["--tenant", "default", "--environment", "sandbox"])
            XCTAssertEqual(verdict.kid, try keyId(of: receipt), "\(override ?? "plain"): \(verdict.reason)")
        }
        let (body, receipt) = try answer()
        var tampered = body
        let index = try XCTUnwrap(tampered.firstIndex(of: UInt8(ascii: "x")) ?? tampered.indices.last)
        tampered[index] ^= 0x01
        XCTAssertNil(try pythonVerifies(jwks: keys, body: tampered, receipt: receipt).kid, "a tampered body verified")
        XCTAssertNil(
            try pythonVerifies(jwks: keys, body: body + [UInt8(ascii: " ")], receipt: receipt).kid,
            "one byte more verified: the leaf is the exact bytes")
        let parts = try members(of: receipt)
        var badHead = Array(parts.head.utf8)
        badHead[badHead.count - 5] = badHead[badHead.count - 5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        XCTAssertNil(
            try pythonVerifies(
                jwks: keys, body: body,
                receipt: receiptHeader(
                    head: String(decoding: badHead, as: UTF8.self), index: parts.index, path: parts.path)
            ).kid, "a forged signature")
        XCTAssertNil(
            try pythonVerifies(
                jwks: keys, body: body,
                receipt: receiptHeader(
                    head: parts.head, index: parts.index + 1, path: parts.path)
            ).kid, "another index")
        // The answer binds its tenant and environment: it is no production answer, nor another tenant's.
        XCTAssertNil(try pythonVerifies(jwks: keys, body: body, receipt: receipt, options: ["--environment", "production"]).kid)
        XCTAssertNil(try pythonVerifies(jwks: keys, body: body, receipt: receipt, options: ["--tenant", "globex"]).kid)
        let answer = try JSONParser.parse(body)
        XCTAssertEqual(answer["tenant"]?.stringValue, "default")
        XCTAssertEqual(answer["environment"]?.stringValue, "sandbox")
        // Errors are not answers: no receipt on a problem.
        let refused = try daemon.request("POST", "/v1/evaluations", key: key, json: "{}")
        XCTAssertEqual(refused.status, 422)
        XCTAssertNil(refused.headers["insight-receipt"])
    }

    /// A retry (docs/api.md, "Retries") gets the first answer's bytes and the first answer's
    /// receipt, which Python verifies against the retry's body.
    func testARetrysAnswerVerifiesWithTheFirstReceipt() throws {
        let keys = try jwks()
        let body =
            #"{"requestId":"txn-receipt-1","operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}]}"#
        let first = try daemon.request("POST", "/v1/evaluations", key: key, json: body)
        let again = try daemon.request("POST", "/v1/evaluations", key: key, json: body)
        XCTAssertEqual(first.status, 200)
        XCTAssertEqual(again.status, 200)
        XCTAssertEqual(again.headers["idempotent-replayed"], "true")
        XCTAssertNil(first.headers["idempotent-replayed"])
        XCTAssertEqual(again.body, first.body, "the first answer, byte for byte")
        let receipts = try [first, again].map { try XCTUnwrap($0.headers["insight-receipt"]) }
        XCTAssertEqual(receipts[1], receipts[0], "the first answer's receipt")
        for receipt in receipts {
            let verdict = try pythonVerifies(
                jwks: keys, body: again.body, receipt: receipt,
                options: ["--tenant", "default", "--environment", "sandbox"])
            XCTAssertNotNil(verdict.kid, verdict.reason)
        }
    }

    /// Answers committed together share a tree: a swapped path fails, and the heads of one
    /// instance chain; a head that names a forged `previous`, or another instance's, does not
    /// pass as the next one.
    func testPathsOfOneTreeAndTheChainOfHeads() throws {
        let keys = try jwks()
        // Concurrent answers, so that some are committed in one batch.
        let answers = Mutex<[(body: [UInt8], receipt: String)]>([])
        let daemon = self.daemon!, key = self.key
        DispatchQueue.concurrentPerform(iterations: 16) { _ in
            guard let r = try? daemon.request("POST", "/v1/evaluations", key: key, json: Self.body), r.status == 200,
                let receipt = r.headers["insight-receipt"]
            else { return }
            answers.withLock { $0.append((r.body, receipt)) }
        }
        let all = answers.withLock { $0 }
        XCTAssertEqual(all.count, 16)
        for made in all {
            XCTAssertNotNil(try pythonVerifies(jwks: keys, body: made.body, receipt: made.receipt).kid)
        }
        let shared = Dictionary(grouping: all) { (try? members(of: $0.receipt).head) ?? "" }.values.first { $0.count > 1 }
        if let shared {
            // Two answers of one tree: each one's path is the other's no proof.
            let a = try members(of: shared[0].receipt), b = try members(of: shared[1].receipt)
            XCTAssertNil(
                try pythonVerifies(jwks: keys, body: shared[0].body, receipt: receiptHeader(head: a.head, index: a.index, path: b.path))
                    .kid,
                "a swapped path verified")
        }
        // A tree of five answers made here with the daemon's key, so that paths of several hashes
        // exist whatever the batches were: each verifies, its path reordered or another's does not.
        let signer = try XCTUnwrap(daemon.service.signingKeys.set.current(at: Milliseconds(Date().timeIntervalSince1970 * 1000))?.signer)
        let bodies = (0..<5).map { Array(#"{"eventId":"e\#($0)","tenant":"default","environment":"sandbox"}"#.utf8) }
        let tree = try XCTUnwrap(MerkleTree(leafHashes: bodies.map(MerkleTree.leafHash(of:))))
        let made = try XCTUnwrap(
            signer.compactSerialization(
                of: ReceiptHead(
                    instance: "made-here", sequence: 0, size: 5, root: tree.root,
                    previous: nil, time: 1
                ).payload))
        func encoded(_ path: [[UInt8]]) -> [String] { path.map { ":" + Base64.encode($0) + ":" } }
        for i in 0..<5 {
            XCTAssertNotNil(
                try pythonVerifies(
                    jwks: keys, body: bodies[i],
                    receipt: receiptHeader(
                        head: made, index: i, path: encoded(tree.auditPath(for: i)))
                ).kid, "leaf \(i)")
        }
        XCTAssertNil(
            try pythonVerifies(
                jwks: keys, body: bodies[1],
                receipt: receiptHeader(
                    head: made, index: 1, path: encoded(tree.auditPath(for: 1).reversed()))
            ).kid, "a path in another order verified")
        XCTAssertNil(
            try pythonVerifies(
                jwks: keys, body: bodies[1],
                receipt: receiptHeader(
                    head: made, index: 1, path: encoded(tree.auditPath(for: 2)))
            ).kid, "another leaf's path verified")

        var swapped = try members(of: all[0].receipt)
        if swapped.path.count > 1 {
            swapped.path.swapAt(0, 1)
            XCTAssertNil(
                try pythonVerifies(
                    jwks: keys, body: all[0].body,
                    receipt: receiptHeader(
                        head: swapped.head, index: swapped.index, path: swapped.path)
                ).kid, "a path in another order verified")
        }

        // The chain, from the log: each head verifies after the one before it.
        let latest = try daemon.request("GET", "/v1/receipts/heads", key: key)
        XCTAssertEqual(latest.status, 200, String(decoding: latest.body, as: UTF8.self))
        let instance = try XCTUnwrap(JSONParser.parse(latest.body)["heads"]?[0]?["instance"]?.stringValue)
        let page = try daemon.request("GET", "/v1/receipts/heads?instance=\(instance)&limit=1000", key: key)
        XCTAssertEqual(page.status, 200, String(decoding: page.body, as: UTF8.self))
        let heads = try XCTUnwrap(JSONParser.parse(page.body)["heads"]?.arrayValue).compactMap { $0["head"]?.stringValue }
        XCTAssertGreaterThanOrEqual(heads.count, 2)
        let lastHead = try members(of: all.last!.receipt).head
        let position = try XCTUnwrap(heads.firstIndex(of: lastHead), "the answer's head is in the log")
        if position > 0 {
            let previous = heads[position - 1]
            XCTAssertNotNil(
                try pythonVerifies(
                    jwks: keys, body: all.last!.body, receipt: all.last!.receipt,
                    options: ["--previous", previous]
                ).kid, "the head follows its predecessor")
            if position > 1 {
                XCTAssertNil(
                    try pythonVerifies(
                        jwks: keys, body: all.last!.body, receipt: all.last!.receipt,
                        options: ["--previous", heads[position - 2]]
                    ).kid, "not the one before that")
            }
        }
        // A head signed by the same key for another instance, or naming a forged previous: refused.
        let stored = try XCTUnwrap(SignedHead(jws: lastHead)).head
        let other = ReceiptHead(
            instance: "another-instance", sequence: stored.sequence, size: stored.size, root: stored.root,
            previous: stored.previous, time: stored.time)
        let forged = ReceiptHead(
            instance: instance, sequence: stored.sequence, size: stored.size, root: stored.root,
            previous: Array(repeating: 7, count: 32), time: stored.time)
        let parts = try members(of: all.last!.receipt)
        for (head, why) in [(other, "another instance's head"), (forged, "a forged previous")] where position > 0 {
            let jws = try XCTUnwrap(signer.compactSerialization(of: head.payload))
            let verdict = try pythonVerifies(
                jwks: keys, body: all.last!.body, receipt: receiptHeader(head: jws, index: parts.index, path: parts.path),
                options: ["--previous", heads[position - 1]])
            XCTAssertNil(verdict.kid, why)
            XCTAssertFalse(verdict.reason.isEmpty)
        }
    }

    /// `insightctl receipts verify` walks the stored chain and reports its first break; an
    /// erasure leaves the chain whole (the leaf hashes stay, the answers' rows are unlinked).
    func testInsightctlVerifiesTheStoredChainAndReportsItsFirstBreak() throws {
        let (_, admin) = try daemon.createCaller(roles: [.admin])
        let account = "acct-receipts-\(UUID().uuidString.prefix(8))"
        for k in 0..<4 {
            let body =
                #"{"operationCategory":"payment","subject":{"account":"\#(account)"},"insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"n":\#(k)}"#
            let r = try daemon.request("POST", "/v1/evaluations", key: key, json: body.replacingOccurrences(of: #","n":\#(k)"#, with: ""))
            XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
        }
        XCTAssertEqual(
            try daemon.request("POST", "/v1/subjects/erasure", key: admin, json: #"{"subject":{"account":"\#(account)"}}"#).status, 200)
        func verify(_ words: String...) -> (status: Int32, output: String) {
            captureStandardOutput {
                AdminCommand.main(arguments: ["insightctl", "--state-dir", stateDirectory, "receipts", "verify"] + words, environment: [:])
            }
        }
        var result = verify()
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertTrue(result.output.contains("heads 0-3 verified from the chain's start, 4 heads, 4 answers"), result.output)
        let instance = try String(contentsOfFile: stateDirectory + "/instance", encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines)
        result = verify("--instance", instance, "--from", "2", "--json")
        XCTAssertEqual(result.status, 0, result.output)
        let report = try XCTUnwrap(JSONParser.parse(Array(result.output.utf8))[0])
        XCTAssertEqual(report["first"]?.intValue, 2)
        XCTAssertEqual(report["heads"]?.intValue, 2)
        XCTAssertEqual(report["brokenAt"], .null)
        XCTAssertEqual(verify("--from", "1").status, 1, "--from needs --instance")
        XCTAssertEqual(verify("--instance", instance, "--from", "-1").status, 1)

        // Breaks, made in the database: a leaf changed, then a head gone.
        daemon.service.stop()
        let db = try SQLiteConnection(path: daemon.service.settings.databasePath)
        try db.execute("UPDATE receipt_heads SET leaves = zeroblob(32) WHERE sequence = 2")
        result = verify()
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.output.contains("heads 0-1 verified"), result.output)
        XCTAssertTrue(result.output.contains("head 2 breaks the chain: its stored leaves do not give its root"), result.output)
        try db.execute("DELETE FROM receipt_heads WHERE sequence = 2")
        result = verify()
        XCTAssertTrue(result.output.contains("head 3 breaks the chain: head 2 is missing: the next stored is 3"), result.output)
        // From any point: the chain after the gap still verifies on its own.
        result = verify("--instance", instance, "--from", "3")
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertTrue(result.output.contains("heads 3-3 verified (the first names a head before it)"), result.output)
    }

    func testRotationKeepsEarlierAnswersVerifiableAndRetiredKeysLeaveAfterTheirPeriod() throws {
        let before = try answer()
        let oldKid = try keyId(of: before.receipt)
        XCTAssertEqual(try publishedKeyIds(), [oldKid])
        // A verifier that keeps the set asks with its entity tag: 304 while it is unchanged.
        let tag = try XCTUnwrap(try daemon.request("GET", "/v1/signing-keys").headers["etag"])
        XCTAssertEqual(try daemon.request("GET", "/v1/signing-keys", headers: ["If-None-Match": tag]).status, 304)

        XCTAssertEqual(
            AdminCommand.main(
                arguments: ["insightctl", "--state-dir", stateDirectory, "signing-keys", "rotate"],
                environment: [:]), 0)
        daemon.service.reloadSigningKeysIfChanged()
        let after = try answer()
        let newKid = try keyId(of: after.receipt)
        XCTAssertNotEqual(newKid, oldKid, "the rotated key signs (embedded mode: at once)")
        XCTAssertEqual(Set(try publishedKeyIds()), [oldKid, newKid])
        let changed = try daemon.request("GET", "/v1/signing-keys", headers: ["If-None-Match": tag])
        XCTAssertEqual(changed.status, 200, "a new key changes the set's entity tag")
        XCTAssertNotEqual(changed.headers["etag"], tag)
        let keysAfterRotation = try jwks()
        XCTAssertEqual(
            try pythonVerifies(jwks: keysAfterRotation, body: before.body, receipt: before.receipt).kid, oldKid,
            "an answer proven before the rotation verifies after it")
        XCTAssertEqual(try pythonVerifies(jwks: keysAfterRotation, body: after.body, receipt: after.receipt).kid, newKid)

        // The current key cannot be retired; the old one can, and stays published for the
        // retention (1 s here), then leaves the JWKS.
        XCTAssertNotEqual(
            AdminCommand.main(
                arguments: ["insightctl", "--state-dir", stateDirectory, "signing-keys", "retire", newKid],
                environment: [:]), 0)
        XCTAssertEqual(
            AdminCommand.main(
                arguments: ["insightctl", "--state-dir", stateDirectory, "signing-keys", "retire", oldKid],
                environment: ["INSIGHTD_SIGNING_KEY_RETENTION": "2"]), 0)
        daemon.service.reloadSigningKeysIfChanged()
        let retiredAt = Date()
        let stillPublished = try publishedKeyIds()
        if Date().timeIntervalSince(retiredAt) < 1.5 {
            XCTAssertEqual(Set(stillPublished), [oldKid, newKid], "a retired key stays published for its period")
        }
        XCTAssertEqual(try keyId(of: try answer().receipt), newKid)
        let deadline = Date().addingTimeInterval(30)
        while try publishedKeyIds().contains(oldKid), Date() < deadline { usleep(100_000) }
        XCTAssertEqual(try publishedKeyIds(), [newKid], "a retired key leaves the JWKS once its period ends")
        XCTAssertNil(try pythonVerifies(jwks: try jwks(), body: before.body, receipt: before.receipt).kid)
        // Its file goes with the next change insightctl makes.
        XCTAssertEqual(
            AdminCommand.main(
                arguments: ["insightctl", "--state-dir", stateDirectory, "signing-keys", "rotate"],
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
        XCTAssertEqual(
            AdminCommand.main(
                arguments: ["insightctl", "--state-dir", stateDirectory, "signing-keys", "rotate"],
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
        let kid = try keyId(of: try answer().receipt)
        let intruder = keyDirectory + "/broken.key"
        _ = FileManager.default.createFile(atPath: intruder, contents: Data("not a key\n".utf8))
        daemon.service.reloadSigningKeysIfChanged()
        XCTAssertEqual(try keyId(of: try answer().receipt), kid, "a broken directory leaves the keys in use")
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
        let first = try keyId(of: try answer().receipt)
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
        XCTAssertEqual(try keyId(of: try answer().receipt), first, "and does not sign yet")

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
        XCTAssertEqual(
            ctl("signing-keys", "rotate", env: ["INSIGHTD_DATABASE_URL": "postgres://u@127.0.0.1:1/x"]).status, 1,
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
