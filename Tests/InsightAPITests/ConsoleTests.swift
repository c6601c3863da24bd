import DaemonTesting
import Foundation
import InsightDomain
import JSON
import XCTest

/// The admin console (issue 25): its files served from the binary with their headers, and the
/// admin API's views it reads — each scoped to the admin's tenant. The browser test is
/// e2e/console.sh.
final class ConsoleTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    func testEveryFileOfConsoleIsServedAsItIsWithItsHeaders() throws {
        let daemon = try TestDaemon(.inProcess)
        let folder = Self.root.appendingPathComponent("console")
        let files = try XCTUnwrap(FileManager.default.enumerator(atPath: folder.path)).compactMap { $0 as? String }
            .filter { !$0.hasPrefix(".") && !$0.contains("/.") }
            .filter {
                var d: ObjCBool = false;
                return FileManager.default.fileExists(atPath: folder.appendingPathComponent($0).path, isDirectory: &d) && !d.boolValue
            }
        XCTAssertTrue(files.contains("index.html") && files.contains("app.js"), "\(files)")
        let types = [
            "html": "text/html; charset=utf-8", "css": "text/css; charset=utf-8",
            "js": "text/javascript; charset=utf-8", "svg": "image/svg+xml; charset=utf-8"
        ]
        for file in files {
            let r = try daemon.request("GET", "/console/\(file)")
            XCTAssertEqual(r.status, 200, file)
            XCTAssertEqual(r.body, Array(try Data(contentsOf: folder.appendingPathComponent(file))), "\(file): the bytes in the binary")
            XCTAssertEqual(r.headers["content-type"], types[(file as NSString).pathExtension], file)
            let policy = try XCTUnwrap(r.headers["content-security-policy"], file)
            for directive in [
                "default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'",
                "object-src 'none'"
            ] {
                XCTAssertTrue(policy.contains(directive), "\(file): \(policy)")
            }
            XCTAssertFalse(policy.contains("unsafe"), policy)
            XCTAssertEqual(r.headers["x-content-type-options"], "nosniff", file)
            let etag = try XCTUnwrap(r.headers["etag"], file)
            let again = try daemon.request("GET", "/console/\(file)", headers: ["If-None-Match": "\"other\", \(etag)"])
            XCTAssertEqual(again.status, 304, file)
            XCTAssertEqual(again.body, [], file)
            XCTAssertEqual(again.headers["etag"], etag, file)
        }
        XCTAssertEqual(try daemon.request("GET", "/console/").body, try daemon.request("GET", "/console/index.html").body)
        let bare = try daemon.request("GET", "/console")
        XCTAssertEqual(bare.status, 301)
        XCTAssertEqual(bare.headers["location"], "/console/")
        for missing in ["/console/nope.js", "/console/pages/", "/console/../Package.swift", "/console/%2e%2e/Package.swift"] {
            let r = try daemon.request("GET", missing)
            XCTAssertEqual(r.status, 404, missing)
            XCTAssertEqual(r.json?["code"]?.stringValue, "notFound", missing)
        }
        XCTAssertEqual(try daemon.request("POST", "/console/", json: "{}").status, 405)
    }

    /// What the console loads names only the daemon itself: no other origin, no inline script or style.
    func testTheConsoleLoadsNothingFromElsewhere() throws {
        let folder = Self.root.appendingPathComponent("console")
        let html = try String(contentsOf: folder.appendingPathComponent("index.html"), encoding: .utf8)
        XCTAssertFalse(html.contains("<script>") || html.contains("style=") || html.contains("<style"), "inline script or style")
        for file in try FileManager.default.subpathsOfDirectory(atPath: folder.path) where !file.hasSuffix(".svg") {
            // The SVG namespace is a name, not a place anything is loaded from.
            let text = ((try? String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)) ?? "")
                .replacingOccurrences(of: "http://www.w3.org/2000/svg", with: "")
            XCTAssertFalse(text.contains("http://") || text.contains("https://") || text.contains("//cdn"), "\(file) names another origin")
            XCTAssertFalse(text.contains("localStorage") || text.contains("document.cookie"), "\(file): the key stays in sessionStorage")
            XCTAssertFalse(text.contains("innerHTML") || text.contains("eval("), "\(file): text is set as text")
        }
    }

    func testRateLimitsListsTheAdminsTenantWithLiveState() throws {
        let daemon = try TestDaemon(.inProcess)
        let admin = try daemon.createCaller(roles: [.admin], name: "ops", tenant: "acme").key
        let caller = try daemon.createCaller(roles: [.evaluate], name: "payments", tenant: "acme", rate: 1, burst: 3)
        let other = try daemon.createCaller(roles: [.evaluate], name: "elsewhere", tenant: "globex")
        for _ in 0..<2 {
            XCTAssertEqual(
                try daemon.request("POST", "/v1/evaluations", key: caller.key, json: RequestBodies.subjectEvaluation()).status, 200)
        }
        let r = try daemon.request("GET", "/admin/v1/rate-limits", key: admin)
        XCTAssertEqual(r.status, 200)
        let entries = try XCTUnwrap(r.json?["callers"]?.arrayValue)
        XCTAssertEqual(entries.compactMap { $0["caller"]?["name"]?.stringValue }.sorted(), ["ops", "payments"])
        XCTAssertFalse(String(decoding: r.body, as: UTF8.self).contains(other.callerId))
        let payments = try XCTUnwrap(entries.first { $0["caller"]?["callerId"]?.stringValue == caller.callerId })
        XCTAssertEqual(payments["rateLimit"]?["tokens"]?.numberValue ?? 99, 1, accuracy: 0.5, "two of three tokens used")
        XCTAssertEqual(payments["rateLimit"]?["policy"]?["burst"]?.numberValue, 3)
    }

    func testKeysAreListedAndRevokedWithinTheTenantOnly() throws {
        let daemon = try TestDaemon(.inProcess)
        let admin = try daemon.createCaller(roles: [.admin], tenant: "acme").key
        let globexAdmin = try daemon.createCaller(roles: [.admin], tenant: "globex").key
        let caller = try daemon.createCaller(roles: [.evaluate], tenant: "acme")
        let keyId = String(caller.key.split(separator: "_")[1])
        let keys = try daemon.request("GET", "/admin/v1/callers/\(caller.callerId)/keys", key: admin)
        XCTAssertEqual(keys.status, 200)
        XCTAssertEqual(keys.json?["keys"]?[0]?["keyId"]?.stringValue, keyId)
        XCTAssertEqual(keys.json?["keys"]?[0]?["revokedAt"], .null)
        XCTAssertFalse(String(decoding: keys.body, as: UTF8.self).contains(String(caller.key.suffix(43))), "never the secret")
        // Another tenant's admin: as if the caller did not exist, and the key still works.
        let foreign = try daemon.request("GET", "/admin/v1/callers/\(caller.callerId)/keys", key: globexAdmin)
        XCTAssertEqual(foreign.status, 404)
        XCTAssertEqual(foreign.json?["code"]?.stringValue, "callerNotFound")
        let revokeURL = "/admin/v1/callers/\(caller.callerId)/keys/\(keyId)/revoke"
        XCTAssertEqual(try daemon.request("POST", revokeURL, key: globexAdmin).json?["code"]?.stringValue, "callerNotFound")
        XCTAssertEqual(
            try daemon.request("POST", "/admin/v1/callers/\(caller.callerId)/keys/0123456789abcdef/revoke", key: admin)
                .json?["code"]?.stringValue, "keyNotFound")
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: caller.key, json: RequestBodies.subjectEvaluation()).status, 200)
        // The admin of its tenant revokes it: refused from then on (the test daemon caches no key).
        let revoked = try daemon.request("POST", revokeURL, key: admin)
        XCTAssertEqual(revoked.status, 200)
        let at = try XCTUnwrap(revoked.json?["revokedAt"]?.stringValue)
        XCTAssertEqual(try daemon.request("POST", revokeURL, key: admin).json?["revokedAt"]?.stringValue, at, "again: unchanged")
        let deadline = Date().addingTimeInterval(10)
        while try daemon.request("POST", "/v1/evaluations", key: caller.key, json: RequestBodies.subjectEvaluation()).status != 401 {
            XCTAssertLessThan(Date(), deadline, "the revoked key is still accepted")
            if Date() > deadline { break }
            Thread.sleep(forTimeInterval: 0.2)
        }
    }

    func testModelsListsVersionsWithCurrentAndShadowFlags() throws {
        let daemon = try TestDaemon(.inProcess) { $0.modelsDirectory = TestDaemon.committedModels }
        let admin = try daemon.createCaller(roles: [.admin]).key
        let r = try daemon.request("GET", "/admin/v1/models", key: admin)
        XCTAssertEqual(r.status, 200)
        let versions = try XCTUnwrap(r.json?["versions"]?.arrayValue)
        XCTAssertFalse(versions.isEmpty)
        let current = try XCTUnwrap(r.json?["currentVersion"]?.stringValue)
        XCTAssertEqual(versions.filter { $0["current"] == .bool(true) }.compactMap { $0["version"]?.stringValue }, [current])
        XCTAssertTrue(versions.allSatisfy { $0["shadow"] == .bool(false) }, "no shadow is configured")
        let none = try TestDaemon(.inProcess)
        let empty = try none.request("GET", "/admin/v1/models", key: try none.createCaller(roles: [.admin]).key)
        XCTAssertEqual(empty.json?["currentVersion"], .null)
        XCTAssertEqual(empty.json?["versions"]?.arrayValue?.count, 0)
    }

    func testVelocityCountsAreTheAdminsTenantsOnly() throws {
        let daemon = try TestDaemon(.inProcess) { $0.modelsDirectory = TestDaemon.committedModels }
        let acmeAdmin = try daemon.createCaller(roles: [.admin], tenant: "acme").key
        let globexAdmin = try daemon.createCaller(roles: [.admin], tenant: "globex").key
        let acme = try daemon.createCaller(roles: [.evaluate], tenant: "acme").key
        for _ in 0..<10 {
            XCTAssertEqual(
                try daemon.request("POST", "/v1/evaluations", key: acme, json: RequestBodies.subjectEvaluation(account: "busy")).status, 200
            )
        }
        let mine = try daemon.request("GET", "/admin/v1/velocity", key: acmeAdmin)
        XCTAssertEqual(mine.status, 200)
        XCTAssertEqual(mine.json?["scope"]?.stringValue, "instance")
        XCTAssertNotNil(mine.json?["startedAt"]?.stringValue)
        let rules = try XCTUnwrap(mine.json?["rules"]?.arrayValue)
        XCTAssertEqual(rules.first { $0["rule"]?.stringValue == "accountVelocity" }?["count"]?.numberValue, 1)
        XCTAssertEqual(rules.first?["mode"]?.stringValue, "enforce")
        let theirs = try daemon.request("GET", "/admin/v1/velocity", key: globexAdmin)
        XCTAssertEqual(theirs.json?["rules"]?.arrayValue?.count, 0, "another tenant's rule hits are not shown")
    }

    /// The health view counts no tenant's writes (issue 45): another tenant's admin reads the same
    /// answer before and after a tenant's evaluations, and the instance-wide commit counts are on
    /// the metrics listener only.
    func testHealthTellsNoTenantAnotherTenantsWrites() throws {
        let daemon = try TestDaemon(.inProcess)
        let acme = try daemon.createCaller(roles: [.evaluate], tenant: "acme").key
        let globexAdmin = try daemon.createCaller(roles: [.admin], tenant: "globex").key
        func store() throws -> JSONValue? { try daemon.request("GET", "/admin/v1/health", key: globexAdmin).json?["store"] }
        let before = try store()
        for _ in 0..<3 {
            XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: acme, json: RequestBodies.subjectEvaluation()).status, 200)
        }
        XCTAssertEqual(try store(), before, "acme's evaluations show in globex's health view")
        XCTAssertNil(before?["writesCommitted"])
        XCTAssertNil(before?["commits"])
        let metrics = try daemon.scrape()
        XCTAssertTrue(metrics.contains("insightd_store_commit_batch_size_count"), "the operator's figures went")
    }

    func testHealthReportsReadinessAndTheStoresWrites() throws {
        let daemon = try TestDaemon(.inProcess)
        let admin = try daemon.createCaller(roles: [.admin]).key
        let caller = try daemon.createCaller(roles: [.evaluate]).key
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: caller, json: RequestBodies.subjectEvaluation()).status, 200)
        let r = try daemon.request("GET", "/admin/v1/health", key: admin)
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.json?["ready"], .bool(true))
        XCTAssertEqual(r.json?["store"]?["reachable"], .bool(true))
        XCTAssertEqual(r.json?["store"]?["writeFailures"]?.numberValue, 0)
        XCTAssertEqual(r.json?["store"]?["queueDepth"]?.numberValue, 0)
        daemon.service.readiness.set(false)
        let draining = try daemon.request("GET", "/admin/v1/health", key: admin)
        XCTAssertEqual(draining.status, 200, "health answers while not ready, and says so")
        XCTAssertEqual(draining.json?["ready"], .bool(false))
        daemon.service.readiness.set(true)
    }
}
