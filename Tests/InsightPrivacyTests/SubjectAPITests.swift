import Crypto
import DaemonTesting
import Foundation
import InsightApp
import InsightDomain
import JSON
import XCTest

/// `POST /v1/subjects/transparency` and `POST /v1/subjects/erasure` on a real daemon (docs/api.md
/// "The person's view"): what a person is shown, and that erasure leaves none of the subject's
/// hashes in the state directory, the log or velocity.
final class SubjectAPITests: XCTestCase {
    static func evaluation(account: String, device: String? = nil, category: String = "payment") -> String {
        let device = device.map { #","device":"\#($0)""# } ?? ""
        return
            #"{"operationCategory":"\#(category)","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"subject":{"account":"\#(account)"\#(device)}}"#
    }

    func show(_ daemon: TestDaemon, _ key: String, _ body: String) throws -> TestDaemon.Response {
        try daemon.request("POST", "/v1/subjects/transparency", key: key, json: body)
    }

    func testAPersonSeesBothCallersEvaluationsAndIsThenErasedFromTheStateDirectory() throws {
        let daemon = try TestDaemon(.inProcess)
        let bank = try daemon.createCaller(roles: [.evaluate], name: "mobile-bank").key
        let web = try daemon.createCaller(roles: [.evaluate], name: "web-bank").key
        let admin = try daemon.createCaller(roles: [.admin]).key
        let account = "acct-ERASE-4711", device = "dev-ERASE-0815"
        var eventIds: [String] = []
        for (i, key) in [bank, web, bank].enumerated() {
            let r = try daemon.request(
                "POST", "/v1/evaluations", key: key,
                json: Self.evaluation(account: account, device: device, category: i == 1 ? "account" : "payment"))
            XCTAssertEqual(r.status, 200)
            eventIds.append(try XCTUnwrap(r.string("eventId")))
        }
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: bank, json: Self.evaluation(account: "acct-other")).status, 200)
        XCTAssertEqual(
            try daemon.request(
                "PUT", "/v1/authorization", key: web,
                json: #"{"subject":{"account":"\#(account)"},"status":"denied"}"#
            ).status, 200)

        // Transparency, two entries a page, newest first.
        var page = try show(daemon, web, #"{"subject":{"account":"\#(account)"},"limit":2}"#)
        XCTAssertEqual(page.status, 200, String(decoding: page.body, as: UTF8.self))
        let entries = try XCTUnwrap(page.json?["evaluations"]?.arrayValue)
        XCTAssertEqual(entries.map { $0["eventId"]?.stringValue }, [eventIds[2], eventIds[1]])
        XCTAssertEqual(entries.map { $0["callerName"]?.stringValue }, ["mobile-bank", "web-bank"])
        XCTAssertEqual(entries.map { $0["category"]?.stringValue }, ["payment", "account"])
        XCTAssertEqual(entries[0]["insights"]?[0]?["type"]?.stringValue, "isLikelyBeingCoached")
        XCTAssertEqual(entries[0]["insights"]?[0]?["error"]?.stringValue, "insightUnavailable", "this daemon has no models")
        XCTAssertNotNil(entries[0]["createdAt"]?.stringValue)
        XCTAssertEqual(entries[0]["decision"]?.stringValue, "proceed", "the action the default policy answered")
        XCTAssertEqual(page.json?["authorization"]?["status"]?.stringValue, "denialPending")
        let cursor = try XCTUnwrap(page.string("cursor"))
        page = try show(daemon, bank, #"{"subject":{"account":"\#(account)"},"limit":2,"cursor":"\#(cursor)"}"#)
        XCTAssertEqual(page.json?["evaluations"]?.arrayValue?.map { $0["eventId"]?.stringValue }, [eventIds[0]])
        XCTAssertNil(page.json?["cursor"], "no cursor on the last page")
        page = try show(daemon, bank, #"{"subject":{"device":"\#(device)"}}"#)
        XCTAssertEqual(page.json?["evaluations"]?.arrayValue?.count, 3)

        // Erasure of the account and the device, by the tenant's admin.
        let erased = try daemon.request(
            "POST", "/v1/subjects/erasure", key: admin,
            json: #"{"subject":{"account":"\#(account)","device":"\#(device)"},"tenant":"default"}"#)
        XCTAssertEqual(erased.status, 200, String(decoding: erased.body, as: UTF8.self))
        XCTAssertEqual(erased.json?["evaluations"]?.numberValue, 3)
        XCTAssertEqual(erased.json?["authorizations"]?.numberValue, 1)
        XCTAssertEqual(erased.json?["hashKeys"]?.numberValue, 1)
        XCTAssertEqual(erased.json?["tenant"]?.stringValue, "default")
        page = try show(daemon, bank, #"{"subject":{"account":"\#(account)"}}"#)
        XCTAssertEqual(page.json?["evaluations"]?.arrayValue?.count, 0)
        XCTAssertEqual(page.json?["authorization"]?["status"]?.stringValue, "authorized")
        let again = try daemon.request("POST", "/v1/subjects/erasure", key: admin, json: #"{"subject":{"account":"\#(account)"}}"#)
        XCTAssertEqual(again.json?["evaluations"]?.numberValue, 0, "idempotent")

        let metrics = try daemon.scrape()
        XCTAssertTrue(metrics.contains(#"insightd_subject_erasures_total{tenant="default"} 2"#), metrics)
        let log = String(decoding: try daemon.logText(), as: UTF8.self)
        XCTAssertTrue(log.contains(#""msg":"subject erased""#) || log.contains("subject erased"), "the audit line")

        let keyring = daemon.service.hashKeys.current
        let hashes = keyring.lookupHashes(account, kind: .account) + keyring.lookupHashes(device, kind: .device)
        daemon.service.stop()
        let bytes = try daemon.allStoredBytes()
        for hash in hashes {
            XCTAssertNil(bytes.range(of: Data(hash)), "an erased hash is still in the state directory or the log")
            XCTAssertFalse(String(decoding: bytes, as: UTF8.self).contains(Hex.encode(hash)), "an erased hash in hex")
        }
        for raw in [account, device] { XCTAssertNil(bytes.range(of: Data(raw.utf8))) }
    }

    /// A transparency cursor is sealed: it works for callers of the tenant and environment it
    /// was handed to, any change to it, a forged position or another tenant's use is 422, and it
    /// does not show the store's sequence (how many evaluations the store holds).
    func testTransparencyCursorsCannotBeForgedReadOrCarriedToAnotherTenant() throws {
        let daemon = try TestDaemon(.inProcess)
        let bank = try daemon.createCaller(roles: [.evaluate]).key
        let colleague = try daemon.createCaller(roles: [.evaluate]).key
        let sandbox = try daemon.createCaller(roles: [.evaluate], environment: .sandbox).key
        let other = try daemon.createCaller(roles: [.evaluate], tenant: "acme").key
        for _ in 0..<3 {
            XCTAssertEqual(
                try daemon.request("POST", "/v1/evaluations", key: bank, json: Self.evaluation(account: "acct-cursor")).status, 200)
        }
        let first = try show(daemon, bank, #"{"subject":{"account":"acct-cursor"},"limit":1}"#)
        let cursor = try XCTUnwrap(first.string("cursor"))
        XCTAssertEqual(cursor.count, 43)
        XCTAssertFalse(cursor.contains("00000000"), "a position in clear: \(cursor)")
        func next(_ key: String, _ cursor: String) throws -> TestDaemon.Response {
            try show(daemon, key, #"{"subject":{"account":"acct-cursor"},"limit":1,"cursor":"\#(cursor)"}"#)
        }
        XCTAssertEqual(try next(colleague, cursor).status, 200, "any caller of the tenant and environment")
        var altered = Array(cursor)
        altered[30] = altered[30] == "A" ? "B" : "A"
        let forged = [String(altered), "0000019391c5a8f0000000000000a3f1", String(repeating: "A", count: 43)]
        for text in forged {
            let refused = try next(bank, text)
            XCTAssertEqual(refused.status, 422, text)
            XCTAssertEqual(refused.string("field"), "cursor")
        }
        XCTAssertEqual(try next(other, cursor).status, 422, "another tenant")
        XCTAssertEqual(try next(sandbox, cursor).status, 422, "another environment")
    }

    func testVelocityAndTheOptOutsInMemoryForgetTheErasedAccount() throws {
        let daemon = try TestDaemon(.inProcess)
        let key = try daemon.createCaller(roles: [.evaluate]).key
        let admin = try daemon.createCaller(roles: [.admin]).key
        for _ in 0..<3 {
            XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: Self.evaluation(account: "acct-v")).status, 200)
        }
        XCTAssertEqual(
            try daemon.request(
                "PUT", "/v1/authorization", key: key,
                json: #"{"subject":{"account":"acct-v"},"status":"denied"}"#
            ).status, 200)
        func gauge(_ series: String) throws -> String? {
            try daemon.scrape()
                .split(separator: "\n").first { $0.hasPrefix(series + " ") }.map { String($0.dropFirst(series.count + 1)) }
        }
        XCTAssertEqual(try gauge("insightd_velocity_tracked_subjects"), "1")
        XCTAssertEqual(try gauge(#"insightd_denials{tenant="default",environment="production"}"#), "1")
        XCTAssertEqual(
            try daemon.request("POST", "/v1/subjects/erasure", key: admin, json: #"{"subject":{"account":"acct-v"}}"#).status, 200)
        XCTAssertEqual(try gauge("insightd_velocity_tracked_subjects"), "0")
        XCTAssertNil(try gauge(#"insightd_denials{tenant="default",environment="production"}"#))
    }

    func testEveryRefusalIsAProblemAndErasesNothing() throws {
        let daemon = try TestDaemon(.inProcess)
        let key = try daemon.createCaller(roles: [.evaluate]).key
        let admin = try daemon.createCaller(roles: [.admin]).key
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: Self.evaluation(account: "acct-1")).status, 200)
        let long = String(repeating: "x", count: 257)
        let cases: [(path: String, key: String?, body: String, status: Int, code: String, field: String?)] = [
            ("/v1/subjects/transparency", nil, #"{"subject":{"account":"acct-1"}}"#, 401, "unauthorized", nil),
            ("/v1/subjects/transparency", admin, #"{"subject":{"account":"acct-1"}}"#, 403, "forbidden", nil),
            ("/v1/subjects/erasure", key, #"{"subject":{"account":"acct-1"}}"#, 403, "forbidden", nil),
            ("/v1/subjects/transparency", key, #"{}"#, 422, "contextInvalid", "subject"),
            ("/v1/subjects/transparency", key, #"{"subject":{}}"#, 422, "contextInvalid", "subject"),
            ("/v1/subjects/transparency", key, #"{"subject":{"account":"a","device":"d"}}"#, 422, "contextInvalid", "subject"),
            ("/v1/subjects/transparency", key, #"{"subject":{"account":""}}"#, 422, "contextInvalid", "subject.account"),
            ("/v1/subjects/transparency", key, #"{"subject":{"account":"\#(long)"}}"#, 422, "contextInvalid", "subject.account"),
            ("/v1/subjects/transparency", key, #"{"subject":{"email":"a@b"}}"#, 422, "contextInvalid", "subject.email"),
            ("/v1/subjects/transparency", key, #"{"subject":{"account":"a"},"limit":0}"#, 422, "contextInvalid", "limit"),
            ("/v1/subjects/transparency", key, #"{"subject":{"account":"a"},"limit":501}"#, 422, "contextInvalid", "limit"),
            ("/v1/subjects/transparency", key, #"{"subject":{"account":"a"},"cursor":"nope"}"#, 422, "contextInvalid", "cursor"),
            ("/v1/subjects/transparency", key, #"{"subject":{"account":"a"},"cursor":7}"#, 422, "contextInvalid", "cursor"),
            ("/v1/subjects/transparency", key, #"{"subject":{"account":"a"},"name":"x"}"#, 422, "contextInvalid", "name"),
            ("/v1/subjects/transparency", key, #"{"subject":"#, 400, "contextInvalid", nil),
            ("/v1/subjects/erasure", admin, #"{"subject":{}}"#, 422, "contextInvalid", "subject"),
            ("/v1/subjects/erasure", admin, #"{"subject":{"account":"acct-1"},"tenant":"acme"}"#, 422, "contextInvalid", "tenant"),
            ("/v1/subjects/erasure", admin, #"{"subject":{"account":"acct-1"},"why":"x"}"#, 422, "contextInvalid", "why")
        ]
        for c in cases {
            let r = try daemon.request("POST", c.path, key: c.key, json: c.body)
            let text = String(decoding: r.body, as: UTF8.self)
            XCTAssertEqual(r.status, c.status, "\(c.path) \(c.body): \(text)")
            XCTAssertEqual(r.code, c.code, "\(c.path) \(c.body): \(text)")
            if let field = c.field { XCTAssertEqual(r.string("field"), field, "\(c.body): \(text)") }
            XCTAssertEqual(r.headers["content-type"], "application/problem+json")
        }
        let get = try daemon.request("GET", "/v1/subjects/transparency", key: key)
        XCTAssertEqual(get.status, 405)
        XCTAssertEqual(get.headers["allow"], "POST")
        let page = try show(daemon, key, #"{"subject":{"account":"acct-1"}}"#)
        XCTAssertEqual(page.json?["evaluations"]?.arrayValue?.count, 1, "nothing was erased by the refused requests")
    }
}
