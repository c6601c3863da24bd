import Crypto
import DaemonTesting
import Foundation
import InsightControl
import InsightDomain
import JSON
import SQLiteClient
import XCTest

/// The log of heads per tenant and environment (docs/api.md, "Receipts", "`GET /v1/receipts/heads`"),
/// on a real daemon and SQLite file: a tenant's heads cover only its own answers and it reads
/// only its own chains, so another tenant's volume and timing stay hidden; a page costs a
/// token; `insightctl receipts verify` walks heads made before the chains were split beside the
/// new ones.
final class ReceiptHeadsTests: XCTestCase {
    var daemon: TestDaemon!

    override func setUpWithError() throws { daemon = try TestDaemon(.inProcess) }
    override func tearDown() { daemon = nil }

    static let body = #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}]}"#

    /// The heads `key` reads: the latest of each chain, and each chain's page.
    func heads(_ key: String) throws -> (latest: [JSONValue], pages: [JSONValue]) {
        let latest = try daemon.request("GET", "/v1/receipts/heads", key: key)
        XCTAssertEqual(latest.status, 200, String(decoding: latest.body, as: UTF8.self))
        let heads = try XCTUnwrap(JSONParser.parse(latest.body)["heads"]?.arrayValue)
        var pages: [JSONValue] = []
        for head in heads {
            let instance = try XCTUnwrap(head["instance"]?.stringValue)
            let page = try daemon.request("GET", "/v1/receipts/heads?instance=\(instance)&limit=1000", key: key)
            XCTAssertEqual(page.status, 200)
            pages += try XCTUnwrap(JSONParser.parse(page.body)["heads"]?.arrayValue)
        }
        return (heads, pages)
    }

    func testASecondTenantSeesNoneOfTheFirstTenantsHeads() throws {
        let (_, acme) = try daemon.createCaller(roles: [.evaluate], name: "acme-payments", tenant: "acme")
        let (_, globex) = try daemon.createCaller(roles: [.evaluate], name: "globex-payments", tenant: "globex")
        var acmeHeads: Set<String> = []
        for _ in 0..<3 {
            let r = try daemon.request("POST", "/v1/evaluations", key: acme, json: Self.body)
            XCTAssertEqual(r.status, 200)
            let receipt = try XCTUnwrap(r.headers["insight-receipt"])
            let jws = try XCTUnwrap(receipt.split(separator: "\"").dropFirst().first.map(String.init))
            let head = try XCTUnwrap(SignedHead(jws: jws)?.head)
            XCTAssertEqual(head.tenant, "acme", "the head names its tenant")
            XCTAssertEqual(head.environment, "production", "and its environment")
            acmeHeads.insert(jws)
        }
        // Before globex evaluates: it reads no head at all.
        XCTAssertEqual(try heads(globex).latest.count, 0, "no chain of globex yet, and no other's")
        let own = try daemon.request("POST", "/v1/evaluations", key: globex, json: Self.body)
        XCTAssertEqual(own.status, 200)
        let seen = try heads(globex)
        XCTAssertEqual(seen.latest.count, 1, "globex's one chain on this instance")
        XCTAssertEqual(seen.pages.count, 1, "one head: globex's one answer")
        for head in seen.latest + seen.pages {
            XCTAssertEqual(head["tenant"]?.stringValue, "globex")
            XCTAssertEqual(head["environment"]?.stringValue, "production")
            XCTAssertEqual(head["sequence"]?.intValue, 0, "globex's chain is its own: acme's heads are not counted")
            XCTAssertEqual(head["size"]?.intValue, 1, "its tree holds globex's answer only")
            XCTAssertFalse(acmeHeads.contains(head["head"]?.stringValue ?? ""), "no head of acme's")
        }
        // acme sees its three, numbered from 0, and none of globex's.
        let acmeSeen = try heads(acme)
        XCTAssertEqual(acmeSeen.pages.compactMap { $0["head"]?.stringValue }.count, acmeHeads.count)
        XCTAssertEqual(Set(acmeSeen.pages.compactMap { $0["head"]?.stringValue }), acmeHeads)
        XCTAssertEqual(acmeSeen.pages.compactMap { $0["size"]?.intValue }.reduce(0, +), 3)
        // A sandbox key of acme's reads none of acme's production chain.
        let (_, sandbox) = try daemon.createCaller(roles: [.evaluate], environment: .sandbox, name: "acme-test", tenant: "acme")
        XCTAssertEqual(try heads(sandbox).latest.count, 0, "no sandbox chain of acme's")
        // Naming another tenant's chain is not a way in: the instance's name pages the caller's own.
        let instance = try XCTUnwrap(seen.latest.first?["instance"]?.stringValue)
        let page = try daemon.request("GET", "/v1/receipts/heads?instance=\(instance)&from=0", key: sandbox)
        XCTAssertEqual(try JSONParser.parse(page.body)["heads"]?.arrayValue?.count, 0)
    }

    func testAPageOfHeadsCostsAToken() throws {
        let (_, key) = try daemon.createCaller(roles: [.evaluate], rate: 0.01, burst: 3)
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: Self.body).status, 200, "one token")
        let latest = try daemon.request("GET", "/v1/receipts/heads", key: key)
        XCTAssertEqual(latest.status, 200)
        XCTAssertEqual(latest.headers["ratelimit"].map { $0.hasPrefix("\"caller\";r=1;") }, true, latest.headers["ratelimit"] ?? "none")
        let instance = try XCTUnwrap(JSONParser.parse(latest.body)["heads"]?[0]?["instance"]?.stringValue)
        let page = try daemon.request("GET", "/v1/receipts/heads?instance=\(instance)&limit=1000", key: key)
        XCTAssertEqual(page.status, 200)
        XCTAssertEqual(page.headers["ratelimit"].map { $0.hasPrefix("\"caller\";r=0;") }, true, page.headers["ratelimit"] ?? "none")
        let refused = try daemon.request("GET", "/v1/receipts/heads", key: key)
        XCTAssertEqual(refused.status, 429, "a page with the bucket empty")
        XCTAssertEqual(refused.code, "rateLimitExceeded")
        XCTAssertNotNil(refused.headers["retry-after"])
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: Self.body).status, 429, "the same bucket")
    }

    /// `from` and `limit` page the chains' latest heads as they page one chain: without
    /// `instance`, in the order of instance names, with `next` while more follow (the document
    /// allows them without `instance`, so they are answered, never refused).
    func testFromAndLimitWithoutAnInstancePageTheChains() throws {
        let (_, key) = try daemon.createCaller(roles: [.evaluate])
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: Self.body).status, 200)
        let own = try String(contentsOfFile: daemon.service.settings.stateDirectory + "/instance", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        // The chains of two more instances of the caller's tenant and environment, as a shared
        // store holds them.
        let db = try SQLiteConnection(path: daemon.service.settings.databasePath)
        for instance in ["0-other-1", "zz-other-2"] {
            let head = ReceiptHead(
                instance: instance, tenant: "default", environment: "production", sequence: 0, size: 1,
                root: MerkleTree.leafHash(of: [1]), previous: nil, time: 1_796_522_664_107)
            let jws = "e30." + Base64URL.encode(head.payload) + ".c2ln"
            try db.prepare(
                "INSERT INTO receipt_heads (instance, sequence, made_at, jws, leaves, tenant, environment) VALUES (?, 0, 1, ?, x'', 'default', 'production')"
            )
            .run(instance, jws)
        }
        func page(_ query: String) throws -> (instances: [String], next: String?) {
            let r = try daemon.request("GET", "/v1/receipts/heads" + query, key: key)
            XCTAssertEqual(r.status, 200, "\(query): \(String(decoding: r.body, as: UTF8.self))")
            let body = try JSONParser.parse(r.body)
            return (try XCTUnwrap(body["heads"]?.arrayValue).compactMap { $0["instance"]?.stringValue }, body["next"]?.stringValue)
        }
        let all = try page("")
        let names = [own, "0-other-1", "zz-other-2"].sorted()
        XCTAssertEqual(all.instances, names, "every chain, in the order of instance names")
        XCTAssertNil(all.next)
        XCTAssertEqual(try page("?limit=100").instances, all.instances)
        let first = try page("?limit=2")
        XCTAssertEqual(first.instances, Array(names[0..<2]))
        XCTAssertEqual(first.next, "/v1/receipts/heads?from=2&limit=2")
        let second = try page(String(try XCTUnwrap(first.next).dropFirst("/v1/receipts/heads".count)))
        XCTAssertEqual(second.instances, [names[2]])
        XCTAssertNil(second.next, "the last page")
        XCTAssertEqual(try page("?from=1").instances, Array(names[1...]))
        XCTAssertEqual(try page("?from=3").instances, [], "past the last chain: an empty page")
        XCTAssertEqual(try page("?from=9223372036854775807&limit=1000").instances, [])
        // Out of range is still refused, with or without an instance.
        for query in ["?limit=0", "?limit=1001", "?from=-1", "?instance=" + own + "&limit=0"] {
            let r = try daemon.request("GET", "/v1/receipts/heads" + query, key: key)
            XCTAssertEqual(r.status, 422, query)
            XCTAssertEqual(r.code, "contextInvalid", query)
        }
    }

    /// Heads made before the chains were split (no tenant, one chain per instance) stay in the
    /// store as they are; `insightctl receipts verify` walks them beside the new chains.
    func testInsightctlVerifiesHeadsOfNoTenantBesideTheTenantsChains() throws {
        let (_, key) = try daemon.createCaller(roles: [.evaluate], tenant: "acme")
        for _ in 0..<2 { XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: Self.body).status, 200) }
        let instance = try String(contentsOfFile: daemon.service.settings.stateDirectory + "/instance", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        // Heads as this instance made them before migration 0024, signed by its key.
        let old = ReceiptIssuer(instance: instance, keys: daemon.service.signingKeys, clock: SystemClock())
        daemon.service.stop()
        let db = try SQLiteConnection(path: daemon.service.settings.databasePath)
        for k in 0..<3 {
            let batch = try XCTUnwrap(old.issue(leafHashes: [MerkleTree.leafHash(of: [UInt8(k)])]))
            XCTAssertNil(batch.head.head.tenant)
            old.committed(batch)
            try db.prepare("INSERT INTO receipt_heads (instance, sequence, made_at, jws, leaves) VALUES (?, ?, ?, ?, ?)")
                .run(instance, batch.head.head.sequence, batch.head.head.time, batch.head.jws, batch.leaves)
        }
        let output = captureStandardOutput {
            AdminCommand.main(
                arguments: ["insightctl", "--state-dir", daemon.service.settings.stateDirectory, "receipts", "verify"], environment: [:])
        }
        XCTAssertEqual(output.status, 0, output.output)
        XCTAssertTrue(output.output.contains("chain \(instance): heads 0-2 verified from the chain's start, 3 heads"), output.output)
        XCTAssertTrue(
            output.output.contains("chain \(instance)/acme/production: heads 0-1 verified from the chain's start, 2 heads"), output.output)
        let one = captureStandardOutput {
            AdminCommand.main(
                arguments: [
                    "insightctl", "--state-dir", daemon.service.settings.stateDirectory, "receipts", "verify", "--tenant", "acme", "--json"
                ], environment: [:])
        }
        let reports = try XCTUnwrap(JSONParser.parse(Array(one.output.utf8)).arrayValue)
        XCTAssertEqual(reports.count, 1, one.output)
        XCTAssertEqual(reports.first?["tenant"]?.stringValue, "acme")
        XCTAssertEqual(reports.first?["environment"]?.stringValue, "production")
    }
}
