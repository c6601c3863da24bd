import DaemonTesting
import Foundation
import InsightDomain
import JSON
import XCTest

/// An admin key administers its own tenant and environment only (issue 45: a sandbox admin key
/// lowered a production caller's rate, read production decisions and model performance, and
/// erased a production subject's evaluations). One row per operation of the admin API and the
/// erasure, each checking what a sandbox admin key gets of production and that it still gets
/// the sandbox; the table must name every such operation of openapi/openapi.json, so that a new
/// admin route cannot be added without saying how it is scoped.
final class AdminEnvironmentScopeTests: XCTestCase {
    /// What a row checks, against the world below.
    typealias Check = @Sendable (World) throws -> Void

    /// One daemon with a production and a sandbox side of tenant `default`: an admin key and an
    /// evaluating caller of each, both callers having evaluated the same account (ten times in
    /// production, so that the velocity rule fires there, once in the sandbox).
    struct World {
        let daemon: TestDaemon
        let sandboxAdmin: String, productionAdmin: String
        let production: (callerId: String, key: String), sandbox: (callerId: String, key: String)

        init() throws {
            daemon = try TestDaemon(.inProcess) { $0.modelsDirectory = TestDaemon.committedModels }
            sandboxAdmin = try daemon.createCaller(roles: [.admin], environment: .sandbox, name: "sandbox-admin").key
            productionAdmin = try daemon.createCaller(roles: [.admin], name: "production-admin").key
            production = try daemon.createCaller(roles: [.evaluate], name: "production-app")
            sandbox = try daemon.createCaller(roles: [.evaluate], environment: .sandbox, name: "sandbox-app")
            for (key, times) in [(production.key, 10), (sandbox.key, 1)] {
                for _ in 0..<times {
                    let r = try daemon.request(
                        "POST", "/v1/evaluations", key: key, json: RequestBodies.subjectEvaluation(account: "acct-scope"))
                    XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
                }
            }
        }

        func get(_ path: String, as key: String) throws -> TestDaemon.Response { try daemon.request("GET", path, key: key) }

        /// The caller ids a list answer names (`callers[].callerId` or `callers[].caller.callerId`).
        func callerIds(_ response: TestDaemon.Response) -> Set<String> {
            Set(
                (response.json?["callers"]?.arrayValue ?? []).compactMap {
                    $0["callerId"]?.stringValue ?? $0["caller"]?["callerId"]?.stringValue
                })
        }

        /// A production caller's route as the sandbox admin gets it: `404 callerNotFound`.
        func notFound(_ method: String, _ path: String, json: String? = nil) throws {
            let r = try daemon.request(method, path, key: sandboxAdmin, json: json)
            XCTAssertEqual(r.status, 404, "\(method) \(path): \(String(decoding: r.body, as: UTF8.self))")
            XCTAssertEqual(r.string("code"), "callerNotFound", "\(method) \(path)")
        }

        /// The production caller's `rate`, as the production admin reads it.
        func productionRate() throws -> Double? {
            try get("/admin/v1/callers/\(production.callerId)", as: productionAdmin).json?["rate"]?.numberValue
        }

        /// The production caller's first key id.
        func productionKeyId() throws -> String {
            try XCTUnwrap(
                get("/admin/v1/callers/\(production.callerId)/keys", as: productionAdmin).json?["keys"]?[0]?["keyId"]?.stringValue)
        }
    }

    static let rows: [String: Check] = [
        "GET /admin/v1/callers": { w in
            let ids = w.callerIds(try w.get("/admin/v1/callers", as: w.sandboxAdmin))
            XCTAssertTrue(ids.contains(w.sandbox.callerId))
            XCTAssertFalse(ids.contains(w.production.callerId), "a production caller in the sandbox admin's list")
            XCTAssertTrue(w.callerIds(try w.get("/admin/v1/callers", as: w.productionAdmin)).contains(w.production.callerId))
            XCTAssertFalse(w.callerIds(try w.get("/admin/v1/callers", as: w.productionAdmin)).contains(w.sandbox.callerId))
        },
        "GET /admin/v1/callers/{callerId}": { w in
            try w.notFound("GET", "/admin/v1/callers/\(w.production.callerId)")
            XCTAssertEqual(try w.get("/admin/v1/callers/\(w.sandbox.callerId)", as: w.sandboxAdmin).status, 200)
        },
        "PATCH /admin/v1/callers/{callerId}": { w in
            let before = try w.productionRate()
            try w.notFound("PATCH", "/admin/v1/callers/\(w.production.callerId)", json: #"{"rate":0.001}"#)
            XCTAssertEqual(try w.productionRate(), before, "the production caller's rate changed")
            let patched = try w.daemon.request(
                "PATCH", "/admin/v1/callers/\(w.sandbox.callerId)", key: w.sandboxAdmin, json: #"{"burst":50}"#)
            XCTAssertEqual(patched.status, 200)
        },
        "GET /admin/v1/callers/{callerId}/rate-limit": { w in
            try w.notFound("GET", "/admin/v1/callers/\(w.production.callerId)/rate-limit")
            XCTAssertEqual(try w.get("/admin/v1/callers/\(w.sandbox.callerId)/rate-limit", as: w.sandboxAdmin).status, 200)
        },
        "POST /admin/v1/callers/{callerId}/rate-limit/reset": { w in
            try w.notFound("POST", "/admin/v1/callers/\(w.production.callerId)/rate-limit/reset")
            XCTAssertEqual(
                try w.daemon.request("POST", "/admin/v1/callers/\(w.sandbox.callerId)/rate-limit/reset", key: w.sandboxAdmin).status, 200)
        },
        "GET /admin/v1/rate-limits": { w in
            let ids = w.callerIds(try w.get("/admin/v1/rate-limits", as: w.sandboxAdmin))
            XCTAssertTrue(ids.contains(w.sandbox.callerId))
            XCTAssertFalse(ids.contains(w.production.callerId), "a production caller's rate limit in the sandbox admin's list")
        },
        "GET /admin/v1/callers/{callerId}/keys": { w in
            try w.notFound("GET", "/admin/v1/callers/\(w.production.callerId)/keys")
            XCTAssertEqual(try w.get("/admin/v1/callers/\(w.sandbox.callerId)/keys", as: w.sandboxAdmin).status, 200)
        },
        "POST /admin/v1/callers/{callerId}/keys/{keyId}/revoke": { w in
            let keyId = try w.productionKeyId()
            try w.notFound("POST", "/admin/v1/callers/\(w.production.callerId)/keys/\(keyId)/revoke")
            let keys = try w.get("/admin/v1/callers/\(w.production.callerId)/keys", as: w.productionAdmin)
            XCTAssertEqual(keys.json?["keys"]?[0]?["revokedAt"], .null, "the production key was revoked")
        },
        "GET /admin/v1/decisions": { w in
            let ids = w.callerIds(try w.get("/admin/v1/decisions", as: w.sandboxAdmin))
            XCTAssertTrue(ids.contains(w.sandbox.callerId), "\(ids)")
            XCTAssertFalse(ids.contains(w.production.callerId), "production decisions in the sandbox admin's report")
            XCTAssertEqual(w.callerIds(try w.get("/admin/v1/decisions", as: w.productionAdmin)), [w.production.callerId])
        },
        "GET /admin/v1/interventions": { w in
            let entry = #"{"templateId":"w-prod","version":1,"kind":"scamWarning","scamTypes":["romance"],"description":"Romance"}"#
            XCTAssertEqual(try w.daemon.request("POST", "/admin/v1/interventions", key: w.productionAdmin, json: entry).status, 201)
            XCTAssertEqual(try w.get("/admin/v1/interventions", as: w.sandboxAdmin).json?["interventions"]?.arrayValue?.count, 0)
            XCTAssertEqual(try w.get("/admin/v1/interventions", as: w.productionAdmin).json?["interventions"]?.arrayValue?.count, 1)
        },
        "POST /admin/v1/interventions": { w in
            let entry = #"{"templateId":"w-sb","version":1,"kind":"scamWarning","scamTypes":["romance"],"description":"Romance"}"#
            let added = try w.daemon.request("POST", "/admin/v1/interventions", key: w.sandboxAdmin, json: entry)
            XCTAssertEqual(added.status, 201)
            XCTAssertEqual(added.json?["environment"]?.stringValue, "sandbox", "a sandbox key adds to the sandbox's catalogue")
            XCTAssertEqual(try w.get("/admin/v1/interventions", as: w.productionAdmin).json?["interventions"]?.arrayValue?.count, 0)
            // A production report cannot name the sandbox's template.
            let eventId = try XCTUnwrap(
                try w.daemon.request("POST", "/v1/evaluations", key: w.production.key, json: RequestBodies.subjectEvaluation(account: "a"))
                    .json?["eventId"]?.stringValue)
            let report = try w.daemon.request(
                "POST", "/v1/evaluations/\(eventId)/consumption", key: w.production.key,
                json:
                    #"{"status":"usedIncreasedFriction","intervention":{"kind":"scamWarning","templateId":"w-sb","templateVersion":1,"shownAt":"\#(Timestamp.format(SystemClock().now()))","response":"abandoned"}}"#
            )
            XCTAssertEqual(report.string("code"), "interventionTemplateUnknown")
        },
        "POST /admin/v1/interventions/{templateId}/versions/{version}/retire": { w in
            let entry = #"{"templateId":"w-prod","version":1,"kind":"scamWarning","scamTypes":["romance"],"description":"Romance"}"#
            XCTAssertEqual(try w.daemon.request("POST", "/admin/v1/interventions", key: w.productionAdmin, json: entry).status, 201)
            let path = "/admin/v1/interventions/w-prod/versions/1/retire"
            XCTAssertEqual(try w.daemon.request("POST", path, key: w.sandboxAdmin).string("code"), "interventionTemplateNotFound")
            XCTAssertEqual(try w.get("/admin/v1/interventions", as: w.productionAdmin).json?["interventions"]?[0]?["retiredAt"], .null)
            XCTAssertEqual(try w.daemon.request("POST", path, key: w.productionAdmin).status, 200)
        },
        "GET /admin/v1/model-performance": { w in
            let today = String(Timestamp.format(SystemClock().now()).prefix(10))
            let asked = try w.get("/admin/v1/model-performance?from=\(today)&to=\(today)&environment=production", as: w.sandboxAdmin)
            XCTAssertEqual(asked.status, 403, String(decoding: asked.body, as: UTF8.self))
            XCTAssertEqual(asked.string("code"), "forbidden")
            XCTAssertEqual(asked.string("field"), "environment")
            let own = try w.get("/admin/v1/model-performance?from=\(today)&to=\(today)", as: w.sandboxAdmin)
            XCTAssertEqual(own.status, 200)
            XCTAssertEqual(own.string("environment"), "sandbox")
            let served = own.json?["versions"]?.arrayValue?.filter { $0["role"]?.stringValue == "served" } ?? []
            XCTAssertEqual(served.reduce(0) { $0 + ($1["evaluations"]?.numberValue ?? 0) }, 1, "the sandbox's one evaluation")
        },
        "GET /admin/v1/models": { w in
            // The versions this instance loaded: nobody's data.
            XCTAssertEqual(
                try w.get("/admin/v1/models", as: w.sandboxAdmin).json, try w.get("/admin/v1/models", as: w.productionAdmin).json)
        },
        "GET /admin/v1/velocity": { w in
            func rules(_ key: String) throws -> [String] {
                try w.get("/admin/v1/velocity", as: key).json?["rules"]?.arrayValue?.compactMap { $0["rule"]?.stringValue } ?? []
            }
            XCTAssertTrue(try rules(w.productionAdmin).contains("accountVelocity"), "production's ten evaluations of one account")
            XCTAssertEqual(try rules(w.sandboxAdmin), [], "production's velocity counts in the sandbox admin's view")
        },
        "GET /admin/v1/health": { w in
            // Readiness and write failures: nobody's data (the writes committed are the operator's).
            XCTAssertEqual(
                try w.get("/admin/v1/health", as: w.sandboxAdmin).json?["store"],
                try w.get("/admin/v1/health", as: w.productionAdmin).json?["store"])
        },
        "POST /v1/subjects/erasure": { w in
            func transparency(_ key: String) throws -> Int? {
                let page = try w.daemon.request(
                    "POST", "/v1/subjects/transparency", key: key, json: #"{"subject":{"account":"acct-scope"}}"#)
                return page.json?["evaluations"]?.arrayValue?.count
            }
            let erased = try w.daemon.request(
                "POST", "/v1/subjects/erasure", key: w.sandboxAdmin, json: #"{"subject":{"account":"acct-scope"}}"#)
            XCTAssertEqual(erased.status, 200)
            XCTAssertEqual(erased.json?["evaluations"]?.numberValue, 1, "the sandbox's one evaluation, not production's ten")
            XCTAssertEqual(try transparency(w.production.key), 10, "the production subject's evaluations were erased")
            XCTAssertEqual(try transparency(w.sandbox.key), 0)
        }
    ]

    /// Every row, each on a world of its own (a row may change it).
    func testASandboxAdminKeyAdministersTheSandboxOnly() throws {
        for (operation, check) in Self.rows.sorted(by: { $0.key < $1.key }) {
            do { try check(try World()) } catch { XCTFail("\(operation): \(error)") }
        }
    }

    /// The table names every operation of the admin API and the erasure (HEAD goes with GET).
    func testTheTableCoversEveryAdminOperation() throws {
        let spec = try OpenAPISpec.load()
        let operations = Set(
            spec.operations.filter { ($0.path.hasPrefix("/admin/") || $0.path == "/v1/subjects/erasure") && $0.method != "HEAD" }
                .map(\.id))
        XCTAssertEqual(Set(Self.rows.keys), operations, "an admin operation without a row, or a row without an operation")
    }
}
