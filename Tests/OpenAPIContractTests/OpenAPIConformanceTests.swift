import CoachingModel
import DaemonTesting
import Foundation
import InsightAPI
import InsightDomain
import InsightStorage
import JSON
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// Keeps `openapi/openapi.json` true: routes, statuses, problem codes, headers,
/// response bodies and vocabularies are checked against a live daemon and against the sources,
/// so a change to the code or to the document without the other fails here.
final class OpenAPIConformanceTests: XCTestCase {
    private var spec: OpenAPISpec!
    var daemon: TestDaemon!
    /// A caller with the `evaluate` and `labels` roles.
    var key = ""

    override func setUpWithError() throws {
        spec = try OpenAPISpec.load()
        daemon = try TestDaemon(.live)
        (_, key) = try daemon.createCaller(roles: [.evaluate, .labels])
    }

    override func tearDown() {
        daemon = nil
        spec = nil
    }

    static let sampleEventId = "00000000-0000-4000-8000-000000000000"
    static let probeMethods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

    // MARK: (a) Routes

    /// Every documented path answers its documented methods (never 404/405), every other
    /// method of it 405 with `Allow` listing exactly the documented ones, and every other path 404.
    func testRouterAnswersExactlyTheDocumentedPathsAndMethods() throws {
        // The router names each route by its path template (Route.name): those are the documented paths.
        let router = try String(
            contentsOf: OpenAPISpec.packageRoot.appendingPathComponent("Sources/InsightAPI/Router.swift"), encoding: .utf8)
        let routes = SourceScanner.caseStrings(after: "var name: String {", in: router)
        XCTAssertFalse(routes.isEmpty, "no route names found in Router.swift")
        XCTAssertEqual(Set(spec.paths), Set(routes), "documented paths vs Route.name")
        for path in spec.paths {
            let documented = spec.methods(at: path)
            XCTAssertFalse(documented.isEmpty, path)
            let notAllowed = try XCTUnwrap(spec.pathItem(path)["x-method-not-allowed"], "\(path): x-method-not-allowed")
            let concretePaths =
                path.contains("{eventId}")
                ? ["x", Self.sampleEventId, String(repeating: "e", count: 65)].map { path.replacingOccurrences(of: "{eventId}", with: $0) }
                : [path, path + "?probe=1"]
            for concrete in concretePaths {
                for method in Self.probeMethods {
                    let r = try send(method, concrete, key: nil, json: ["GET", "HEAD"].contains(method) ? nil : "{}")
                    let context = "\(method) \(concrete)"
                    if let op = spec.operation(method, path) {
                        XCTAssertFalse([404, 405].contains(r.status), "\(context) is documented but answered \(r.status)")
                        XCTAssertEqual(r.status, op.isSecured ? 401 : 200, "\(context) without credentials")
                        check(r, op: op, context: context)
                    } else {
                        XCTAssertEqual(r.status, 405, "\(context) is not documented but answered \(r.status)")
                        let allowed = Set((r.headers["allow"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
                        XCTAssertEqual(allowed, documented, "\(context): Allow")
                        check(r, response: spec.resolve(notAllowed), method: method, context: context)
                        if method != "HEAD" { XCTAssertEqual(r.code, "methodNotAllowed", context) }
                    }
                }
            }
        }
        let notFound = try XCTUnwrap(spec.root["x-unmatched-path"], "x-unmatched-path")
        let undocumented = [
            "/", "/v1", "/v1/", "/v1/evaluations/", "/v1/evaluations/x", "/v1/evaluations//consumption",
            "/v1/evaluations/x/consumption/", "/v1/evaluations/x/consumption/extra", "/v1/evaluations/x/y",
            "/v1/labels/", "/v1/insights/", "/v1/insights/isLikelyBeingCoached", "/livez/", "/readyz/x",
            "/V1/evaluations", "/v2/evaluations", "/metrics", "/metrics/", "/v1/signing-keys/", "/v1/signing-keys/x", "/v1/authorization/",
            "/v1/authorization/x", "/admin/v1/callers/",
            "/admin/v1/callers/x/rate-limit/extra", "/admin/v1/callers/x/y", "/admin/v2/callers", "/admin"
        ]
        for path in undocumented {
            for method in Self.probeMethods {
                let r = try send(method, path, key: key, json: ["GET", "HEAD"].contains(method) ? nil : "{}")
                XCTAssertEqual(r.status, 404, "\(method) \(path)")
                check(r, response: spec.resolve(notFound), method: method, context: "\(method) \(path)")
                if method != "HEAD" { XCTAssertEqual(r.code, "notFound", "\(method) \(path)") }
            }
        }
    }

    /// `x-required-role` and `security` say which credentials each operation takes.
    func testRolesAndSecurityAreAsDocumented() throws {
        var keys: [Role: String] = [:]
        var allBut: [Role: String] = [:]
        for role in Role.allCases {
            keys[role] = try daemon.createCaller(roles: [role]).key
            allBut[role] = try daemon.createCaller(roles: Set(Role.allCases).subtracting([role])).key
        }
        for op in spec.operations {
            let path = op.path.replacingOccurrences(of: "{eventId}", with: Self.sampleEventId)
            let body = op.method == "POST" ? "{}" : nil
            let headers = op.path == "/v1/labels" ? ["Idempotency-Key": "roles"] : [:]
            guard op.isSecured else {
                XCTAssertEqual(try send(op.method, path, key: nil, json: body).status, 200, op.id)
                continue
            }
            XCTAssertEqual(try send(op.method, path, key: nil, json: body, headers: headers).status, 401, op.id)
            let role = op.value["x-required-role"]
            XCTAssertNotNil(role, "\(op.id): x-required-role (null for any role, a list for any of its roles)")
            if let names = role?.oaArray?.compactMap(\.stringValue) {
                for role in Role.allCases {
                    let r = try send(op.method, path, key: keys[role], json: body, headers: headers)
                    if names.contains(role.rawValue) {
                        XCTAssertFalse([401, 403].contains(r.status), "\(op.id) with only \(role.rawValue)")
                    } else {
                        XCTAssertEqual(r.status, 403, "\(op.id) with only \(role.rawValue)")
                        check(r, op: op, context: "\(op.id) with only \(role.rawValue)")
                    }
                }
            } else if let name = role?.stringValue {
                let required = try XCTUnwrap(Role(rawValue: name), "\(op.id): unknown role \(name)")
                let refused = try send(op.method, path, key: allBut[required], json: body, headers: headers)
                XCTAssertEqual(refused.status, 403, "\(op.id) without \(name)")
                check(refused, op: op, context: "\(op.id) without \(name)")
                let admitted = try send(op.method, path, key: keys[required], json: body, headers: headers)
                XCTAssertFalse([401, 403].contains(admitted.status), "\(op.id) with only \(name)")
            } else {
                for role in Role.allCases {
                    let r = try send(op.method, path, key: keys[role], json: body, headers: headers)
                    XCTAssertFalse([401, 403].contains(r.status), "\(op.id) with only \(role.rawValue)")
                }
            }
        }
    }

    // MARK: (b) Statuses, (d) bodies

    /// A table of live requests: each answer's status must be the one listed and documented for
    /// its operation (with its code, headers and body shape), and every documented status that
    /// is not transport-level must be produced by some request here.
    func testEveryStatusIsDocumentedAndEveryDocumentedStatusOccurs() throws {
        let overloaded = try TestDaemon(.live) { $0.writeQueueCapacity = 0 }
        let busyKey = try overloaded.createCaller(roles: [.evaluate, .labels]).key
        let evaluateOnly = try daemon.createCaller(roles: [.evaluate]).key
        let labelsOnly = try daemon.createCaller(roles: [.labels]).key
        let sandbox = try daemon.createCaller(roles: [.evaluate], environment: .sandbox).key
        let adminOnly = try daemon.createCaller(roles: [.admin]).key
        let broken = try daemon.createCaller(roles: [.evaluate, .labels])
        try corruptCaller(broken.callerId)
        // One token each: the first write goes through, the next is refused.
        let scarce = try daemon.createCaller(roles: [.evaluate, .labels], rate: 0.001, burst: 1).key
        let scarceLabels = try daemon.createCaller(roles: [.labels], rate: 0.001, burst: 1).key
        let scarceQuery = try daemon.createCaller(roles: [.evaluate], rate: 0.001, burst: 1).key
        // A transparency page costs five: one page, then the refusal.
        let scarcePages = try daemon.createCaller(roles: [.evaluate], rate: 0.001, burst: 9).key
        let scarceAdmin = try daemon.createCaller(roles: [.admin], rate: 0.001, burst: 1).key
        // A model-performance report costs five; a reset one.
        let scarceReports = try daemon.createCaller(roles: [.admin], rate: 0.001, burst: 5).key
        let scarceResets = try daemon.createCaller(roles: [.admin], rate: 0.001, burst: 1).key
        let sandboxAdmin = try daemon.createCaller(roles: [.admin], environment: .sandbox).key
        let cramped = try TestDaemon(.live) { $0.maxDenialsPerTenant = 1 }
        let crampedKey = try cramped.createCaller(roles: [.evaluate]).key

        let E = "POST /v1/evaluations", C = "POST /v1/evaluations/{eventId}/consumption", L = "POST /v1/labels"
        let ins = #"{"type":"isLikelyBeingCoached","schemaVersion":1}"#
        func body(_ extra: String = "", insights: String = ins) -> String {
            #"{"operationCategory":"payment","insights":[\#(insights)]\#(extra)}"#
        }
        func chars(_ n: Int, _ c: Character = "x") -> String { String(repeating: c, count: n) }
        func events(_ n: Int, lastT: Int = 0) -> String {
            ([#"{"t":0,"type":"sessionStart"}"#]
                + (1..<max(n, 1)).map { i in
                    #"{"t":\#(i == n - 1 ? max(lastT, i) : i),"type":"tap"}"#
                }).prefix(n).joined(separator: ",")
        }
        let request = "#/components/schemas/EvaluationRequest/properties"
        let interaction = "#/components/schemas/Interaction/properties"
        let maxRequestId = try spec.int("\(request)/requestId/maxLength")
        let maxIdentifier = try spec.int("#/components/schemas/Subject/properties/account/maxLength")
        let maxInsights = try spec.int("\(request)/insights/maxItems")
        let maxType = try spec.int("#/components/schemas/InsightRequest/properties/type/maxLength")
        let maxModel = try spec.int("#/components/schemas/InsightRequest/properties/modelVersion/maxLength")
        let minSchema = try spec.int("#/components/schemas/InsightRequest/properties/schemaVersion/minimum")
        let maxSchema = try spec.int("#/components/schemas/InsightRequest/properties/schemaVersion/maximum")
        let maxEvents = try spec.int("\(interaction)/events/maxItems")
        let maxT = try spec.int("#/components/schemas/InteractionEvent/properties/t/maximum")
        let maxFeatures = try spec.int("\(interaction)/summary/maxProperties")
        let maxUsed = try spec.int("#/components/schemas/ConsumptionReport/properties/insightIdsUsed/maxItems")
        let maxLabels = try spec.int("#/components/schemas/LabelSubmission/properties/labels/maxItems")
        let maxInsightId = try spec.int("#/components/schemas/Label/properties/insightId/maxLength")
        let maxKey = try spec.int("#/paths/~1v1~1labels/post/parameters/0/schema/maxLength")

        // Evaluations the consumption and label requests refer to.
        func evaluation(_ key: String) throws -> (eventId: String, insightId: String) {
            let r = try daemon.request("POST", "/v1/evaluations", key: key, json: body())
            XCTAssertEqual(r.status, 200)
            return (try XCTUnwrap(r.json?["eventId"]?.stringValue), try XCTUnwrap(r.json?["insights"]?[0]?["insightId"]?.stringValue))
        }
        let (eventId, insightId) = try evaluation(key)
        let (secondEventId, _) = try evaluation(key)
        let (othersEventId, _) = try evaluation(evaluateOnly)
        let (_, labelInsight) = try evaluation(key)
        // An answer whose requestId is then sent again: as a retry, and with other bytes.
        let retried = body(#","requestId":"probe-retry""#)
        XCTAssertEqual(try daemon.request("POST", "/v1/evaluations", key: key, json: retried).status, 200)
        let consume = "/v1/evaluations/\(eventId)/consumption"

        let label = { (id: String, rest: String) in #"{"insightId":"\#(id)",\#(rest)}"# }
        let legit = #""outcome":"confirmedLegitimate","discoveredAt":"2026-11-16""#
        let fraud = #""outcome":"confirmedFraud","fraudType":"authorityImpersonation","discoveredAt":"2026-11-15""#
        // (item, expected result, whether the schema can express the rule that decides it)
        let items: [(String, String, Bool)] = [
            (label(labelInsight, fraud), "accepted", true),
            (label(labelInsight, fraud), "duplicate", true),
            (label(labelInsight, legit), "conflict", true),
            (label("5d1e0000-0000-4000-8000-000000000000", fraud), "unknownInsight", true),
            (label(chars(maxInsightId), legit), "unknownInsight", true),
            (label(chars(maxInsightId + 1), legit), "invalid", true),
            (label(labelInsight, fraud + #","note":"free text""#), "invalid", true),
            (label(labelInsight, #""outcome":"confirmedFraud","discoveredAt":"2026-11-15""#), "invalid", true),
            (label(labelInsight, #""outcome":"confirmedLegitimate","fraudType":"other","discoveredAt":"2026-11-15""#), "invalid", true),
            (label(labelInsight, #""outcome":"confirmedLegit","discoveredAt":"2026-11-15""#), "invalid", true),
            (label(labelInsight, #""outcome":"confirmedLegitimate","discoveredAt":"2026/11/15""#), "invalid", true),
            (label(labelInsight, #""outcome":"confirmedLegitimate""#), "invalid", true),
            (#""not an object""#, "invalid", true),
            // Calendar validity and "not in the future" are beyond the schema (format: date only annotates).
            (label(labelInsight, #""outcome":"confirmedLegitimate","discoveredAt":"2026-02-30""#), "invalid", false),
            (label(labelInsight, #""outcome":"confirmedLegitimate","discoveredAt":"2999-01-01""#), "invalid", false)
        ]
        let mixedLabels = #"{"labels":[\#(items.map(\.0).joined(separator: ","))]}"#
        let oneLabel = #"{"labels":[\#(label("7c1e0000-0000-4000-8000-000000000000", legit))]}"#
        let labelList = { (n: Int) in #"{"labels":[\#(Array(repeating: label("x", legit), count: n).joined(separator: ","))]}"# }
        let summary = { (n: Int) in #"{"summary":{\#((0..<n).map { #""f\#($0)":1"# }.joined(separator: ","))}}"# }
        let tooManyIds = (0...maxUsed).map { #""id-\#($0)""# }.joined(separator: ",")

        var table: [Probe] = [
            // POST /v1/evaluations
            Probe(E, "/v1/evaluations", 200, nil, "minimal", key: key, json: body()),
            Probe(E, "/v1/evaluations", 200, nil, "a retry", key: key, json: retried),
            Probe(
                E, "/v1/evaluations", 422, "idempotencyKeyReused", "requestId again with other bytes", key: key,
                json: body(#","requestId":"probe-retry","subject":{"account":"other"}"#)),
            Probe(
                E, "/v1/evaluations", 200, nil, "every member", key: key,
                json: body(
                    #","requestId":"txn-1","subject":{"account":"a","device":"d","counterparty":"c"},"interaction":{"events":[{"t":0,"type":"sessionStart"},{"t":1800,"type":"fieldFocus","field":"payee"},{"t":2100,"type":"paste","field":"payee"},{"t":64000,"type":"submit"}],"device":{"activeCall":true,"callStartedBeforeSession":true,"screenSharing":false,"remoteAccessApp":false}},"transaction":{"newCounterparty":true,"amountBand":"high"},"initiator":{"kind":"agent","agent":{"userRequested":false,"untrustedContext":["email","web"],"argumentsFromUntrustedContext":true,"sideEffects":["financial","destructive"]}}"#,
                    insights: ins + #",{"type":"isLikelyBeingCoached","schemaVersion":1,"modelVersion":"1.0"}"#)),
            Probe(
                E, "/v1/evaluations", 200, nil, "summary and device", key: key,
                json: body(
                    #","interaction":{"summary":{"sessionSeconds":95.5,"keystrokeCount":14,"proximityNearShare":0.8},"device":{"activeCall":true}}"#
                )),
            Probe(E, "/v1/evaluations", 200, nil, "empty interaction", key: key, json: body(#","interaction":{}"#)),
            Probe(
                E, "/v1/evaluations", 200, nil, "insight-level errors", key: key,
                json: body(
                    insights: #"{"type":"isLikelyBeingPhished","schemaVersion":1},{"type":"isLikelyBeingCoached","schemaVersion":2}"#)),
            Probe(E, "/v1/evaluations", 200, nil, "charset utf-8", key: key, json: body(), contentType: "application/json; charset=utf-8"),
            Probe(E, "/v1/evaluations", 200, nil, "+json media type", key: key, json: body(), contentType: "application/vnd.insightd+json"),
            Probe(
                E, "/v1/evaluations", 200, nil, "limits reached", key: key,
                json: body(
                    #","requestId":"\#(chars(maxRequestId))","subject":{"account":"\#(chars(maxIdentifier))","device":"\#(chars(maxIdentifier))","counterparty":"\#(chars(maxIdentifier))"}"#,
                    insights: ([
                        ins, #"{"type":"\#(chars(maxType))","schemaVersion":1}"#,
                        #"{"type":"isLikelyBeingCoached","schemaVersion":\#(minSchema),"modelVersion":"\#(chars(maxModel))"}"#,
                        #"{"type":"isLikelyBeingCoached","schemaVersion":\#(maxSchema)}"#
                    ]
                        + Array(repeating: ins, count: max(0, maxInsights - 4))).joined(separator: ","))),
            Probe(
                E, "/v1/evaluations", 200, nil, "most events, latest t", key: key,
                json: body(#","interaction":{"events":[\#(events(maxEvents, lastT: maxT))]}"#)),
            Probe(
                E, "/v1/evaluations", 200, nil, "sandbox forced value", key: sandbox, json: body(),
                headers: ["Insight-Override": "isLikelyBeingCoached=high"]),
            Probe(
                E, "/v1/evaluations", 200, nil, "sandbox forced insight error", key: sandbox, json: body(),
                headers: ["Insight-Override": "isLikelyBeingCoached=error:insightEvaluationFailed"]),
            Probe(
                E, "/v1/evaluations", 400, "contextInvalid", "malformed override", key: sandbox, json: body(),
                headers: ["Insight-Override": "isLikelyBeingCoached=low"]),
            Probe(
                E, "/v1/evaluations", 403, "overrideNotAllowed", "override from production", key: key, json: body(),
                headers: ["Insight-Override": "isLikelyBeingCoached=high"]),
            Probe(
                E, "/v1/evaluations", 403, "denied", "forced denied", key: sandbox, json: body(),
                headers: ["Insight-Override": "evaluation=error:denied"]),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "forced contextInvalid", key: sandbox, json: body(),
                headers: ["Insight-Override": "evaluation=error:contextInvalid"], schema: .notExpressible),
            Probe(
                E, "/v1/evaluations", 429, "rateLimitExceeded", "forced rate limit", key: sandbox, json: body(),
                headers: ["Insight-Override": "evaluation=error:rateLimitExceeded"]),
            Probe(
                E, "/v1/evaluations", 503, "serverError", "forced server error", key: sandbox, json: body(),
                headers: ["Insight-Override": "evaluation=error:serverError"]),
            Probe(E, "/v1/evaluations", 400, "contextInvalid", "not an object", key: key, json: "[1,2]"),
            Probe(E, "/v1/evaluations", 400, "contextInvalid", "not JSON", key: key, json: #"{"operationCategory":"#),
            Probe(E, "/v1/evaluations", 400, "contextInvalid", "empty body", key: key, json: ""),
            Probe(E, "/v1/evaluations", 401, "unauthorized", "no key", key: nil, json: body()),
            Probe(E, "/v1/evaluations", 401, "unauthorized", "malformed key", key: "not-a-key", json: body()),
            Probe(E, "/v1/evaluations", 401, "unauthorized", "forged key", key: String(key.prefix(20)) + chars(43, "A"), json: body()),
            Probe(
                E, "/v1/evaluations", 401, "unauthorized", "Basic", key: nil, json: body(), headers: ["Authorization": "Basic dXNlcjpwYXNz"]
            ),
            Probe(E, "/v1/evaluations", 403, "forbidden", "labels role only", key: labelsOnly, json: body()),
            Probe(E, "/v1/evaluations", 415, "unsupportedMediaType", "no Content-Type", key: key, json: body(), contentType: nil),
            Probe(E, "/v1/evaluations", 415, "unsupportedMediaType", "text/plain", key: key, json: body(), contentType: "text/plain"),
            Probe(
                E, "/v1/evaluations", 415, "unsupportedMediaType", "latin1", key: key, json: body(),
                contentType: "application/json; charset=latin1"),
            Probe(E, "/v1/evaluations", 422, "contextInvalid", "no operationCategory", key: key, json: #"{"insights":[\#(ins)]}"#),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "unknown category", key: key,
                json: body().replacingOccurrences(of: "payment", with: "wire")),
            Probe(E, "/v1/evaluations", 422, "contextInvalid", "no insights", key: key, json: #"{"operationCategory":"payment"}"#),
            Probe(E, "/v1/evaluations", 422, "contextInvalid", "zero insights", key: key, json: body(insights: "")),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "too many insights", key: key,
                json: body(insights: Array(repeating: ins, count: maxInsights + 1).joined(separator: ","))),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "requestId too long", key: key,
                json: body(#","requestId":"\#(chars(maxRequestId + 1))""#)),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "requestId control character", key: key,
                json: body(#","requestId":"a\u0007b""#)),
            Probe(E, "/v1/evaluations", 422, "contextInvalid", "requestId empty", key: key, json: body(#","requestId":"""#)),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "identifier too long", key: key,
                json: body(#","subject":{"account":"\#(chars(maxIdentifier + 1))"}"#)),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "unknown subject member", key: key, json: body(#","subject":{"email":"x"}"#)),
            Probe(E, "/v1/evaluations", 422, "contextInvalid", "subject not an object", key: key, json: body(#","subject":"acct""#)),
            Probe(E, "/v1/evaluations", 422, "contextInvalid", "type missing", key: key, json: body(insights: #"{"schemaVersion":1}"#)),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "type too long", key: key,
                json: body(insights: #"{"type":"\#(chars(maxType + 1))","schemaVersion":1}"#)),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "schemaVersion a string", key: key,
                json: body(insights: #"{"type":"isLikelyBeingCoached","schemaVersion":"1"}"#)),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "schemaVersion fractional", key: key,
                json: body(insights: #"{"type":"isLikelyBeingCoached","schemaVersion":1.5}"#)),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "schemaVersion too large", key: key,
                json: body(insights: #"{"type":"isLikelyBeingCoached","schemaVersion":\#(maxSchema + 1)}"#)),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "schemaVersion too small", key: key,
                json: body(insights: #"{"type":"isLikelyBeingCoached","schemaVersion":\#(minSchema - 1)}"#)),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "modelVersion too long", key: key,
                json: body(insights: #"{"type":"isLikelyBeingCoached","schemaVersion":1,"modelVersion":"\#(chars(maxModel + 1))"}"#)),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "unknown insight member", key: key,
                json: body(insights: #"{"type":"isLikelyBeingCoached","schemaVersion":1,"extra":1}"#)),
            Probe(E, "/v1/evaluations", 422, "contextInvalid", "unknown member", key: key, json: body(#","color":"blue""#)),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "unknown amountBand", key: key,
                json: body(#","transaction":{"amountBand":"huge"}"#)),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "unknown side effect", key: key,
                json: body(#","initiator":{"kind":"agent","agent":{"sideEffects":["teleport"]}}"#)),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "events and summary", key: key,
                json: body(#","interaction":{"events":[\#(events(1))],"summary":{}}"#)),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "too many events", key: key,
                json: body(#","interaction":{"events":[\#(events(maxEvents + 1))]}"#)),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "negative t", key: key,
                json: body(#","interaction":{"events":[\#(events(1)),{"t":-1,"type":"tap"}]}"#)),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "t not an integer", key: key,
                json: body(#","interaction":{"events":[\#(events(1)),{"t":1.5,"type":"tap"}]}"#)),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "events out of order", key: key,
                json: body(#","interaction":{"events":[\#(events(1)),{"t":5,"type":"tap"},{"t":4,"type":"tap"}]}"#), schema: .notExpressible
            ),
            Probe(
                E, "/v1/evaluations", 200, nil, "an event type of a newer kit, skipped", key: key,
                json: body(#","interaction":{"events":[\#(events(2)),{"t":1,"type":"typedCharacter"}]}"#)),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "an event type that is no name", key: key,
                json: body(#","interaction":{"events":[\#(events(1)),{"t":1,"type":"typed character"}]}"#)),
            Probe(
                E, "/v1/evaluations", 200, nil, "null for optional members", key: key,
                json: body(#","requestId":null,"subject":{"account":"a","device":null},"interaction":{"device":{"activeCall":null}}"#)),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "unknown field", key: key,
                json: body(#","interaction":{"events":[\#(events(1)),{"t":1,"type":"tap","field":"iban"}]}"#)),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "typed characters", key: key,
                json: body(#","interaction":{"events":[\#(events(1)),{"t":1,"type":"keyDown","chars":"1234"}]}"#)),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "device fact not a boolean", key: key,
                json: body(#","interaction":{"events":[\#(events(1))],"device":{"activeCall":"yes"}}"#)),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "summary value not a number", key: key,
                json: body(#","interaction":{"summary":{"sessionSeconds":"long"}}"#)),
            Probe(
                E, "/v1/evaluations", 422, "contextInvalid", "too many summary members", key: key,
                json: body(#","interaction":\#(summary(maxFeatures + 1))"#)),
            Probe(E, "/v1/evaluations", 503, "serverError", "write queue full", key: busyKey, json: body(), target: .overloaded),
            Probe(E, "/v1/evaluations", 503, "serverError", "credentials cannot be checked", key: broken.key, json: body()),

            // POST /v1/evaluations/{eventId}/consumption
            Probe(C, consume, 422, "contextInvalid", "unknown status", key: key, json: #"{"status":"usedMoreFriction"}"#),
            Probe(C, consume, 422, "contextInvalid", "no status", key: key, json: #"{"insightIdsUsed":[]}"#),
            Probe(C, consume, 422, "contextInvalid", "unknown member", key: key, json: #"{"status":"notUsedError","note":"x"}"#),
            Probe(C, consume, 422, "contextInvalid", "id not a string", key: key, json: #"{"status":"notUsedError","insightIdsUsed":[1]}"#),
            Probe(
                C, consume, 422, "contextInvalid", "too many ids", key: key,
                json: #"{"status":"notUsedError","insightIdsUsed":[\#(tooManyIds)]}"#),
            Probe(
                C, consume, 422, "contextInvalid", "repeated id", key: key,
                json: #"{"status":"notUsedError","insightIdsUsed":["\#(insightId)","\#(insightId)"]}"#),
            Probe(
                C, consume, 422, "contextInvalid", "id of no insight of the evaluation", key: key,
                json: #"{"status":"notUsedError","insightIdsUsed":["nope"]}"#, schema: .notExpressible),
            Probe(C, consume, 400, "contextInvalid", "not an object", key: key, json: "[1]"),
            Probe(C, consume, 401, "unauthorized", "no key", key: nil, json: #"{"status":"notUsedError"}"#),
            Probe(C, consume, 403, "forbidden", "labels role only", key: labelsOnly, json: #"{"status":"notUsedError"}"#),
            Probe(
                C, consume, 415, "unsupportedMediaType", "text/plain", key: key, json: #"{"status":"notUsedError"}"#,
                contentType: "text/plain"),
            Probe(
                C, "/v1/evaluations/\(Self.sampleEventId)/consumption", 404, "evaluationNotFound", "no such evaluation",
                key: key, json: #"{"status":"notUsedError"}"#),
            Probe(
                C, "/v1/evaluations/\(chars(65, "e"))/consumption", 404, "evaluationNotFound", "id too long to exist",
                key: key, json: #"{"status":"notUsedError"}"#),
            Probe(
                C, "/v1/evaluations/\(othersEventId)/consumption", 404, "evaluationNotFound", "another caller's evaluation",
                key: key, json: #"{"status":"notUsedError"}"#),
            Probe(
                C, consume, 204, nil, "recorded", key: key, json: #"{"status":"usedIncreasedFriction","insightIdsUsed":["\#(insightId)"]}"#),
            Probe(
                C, consume, 204, nil, "the same again", key: key,
                json: #"{"status":"usedIncreasedFriction","insightIdsUsed":["\#(insightId)"]}"#),
            Probe(C, consume, 409, "consumptionConflict", "another status", key: key, json: #"{"status":"notUsedNotNeeded"}"#),
            Probe(
                C, consume, 409, "consumptionConflict", "the same status, other ids", key: key, json: #"{"status":"usedIncreasedFriction"}"#
            ),
            Probe(
                C, "/v1/evaluations/\(secondEventId)/consumption", 204, nil, "status only", key: key,
                json: #"{"status":"usedEvaluationOnly"}"#),
            Probe(
                C, "/v1/evaluations/\(Self.sampleEventId)/consumption", 503, "serverError", "write queue full",
                key: busyKey, json: #"{"status":"notUsedError"}"#, target: .overloaded),
            Probe(C, consume, 503, "serverError", "credentials cannot be checked", key: broken.key, json: #"{"status":"notUsedError"}"#),

            // POST /v1/labels
            Probe(
                L, "/v1/labels", 200, nil, "per-item results", key: key, json: mixedLabels, headers: ["Idempotency-Key": "mixed-1"],
                labelResults: items.map { ($0.1, $0.2) }),
            Probe(
                L, "/v1/labels", 200, nil, "replayed", key: key, json: mixedLabels, headers: ["Idempotency-Key": "mixed-1"],
                labelResults: items.map { ($0.1, $0.2) }, replayed: true),
            Probe(
                L, "/v1/labels", 422, "idempotencyKeyReused", "key reused with another body", key: key, json: oneLabel,
                headers: ["Idempotency-Key": "mixed-1"]),
            Probe(L, "/v1/labels", 200, nil, "longest key", key: key, json: oneLabel, headers: ["Idempotency-Key": chars(maxKey, "k")]),
            Probe(
                L, "/v1/labels", 200, nil, "most labels", key: key, json: labelList(maxLabels), headers: ["Idempotency-Key": "most"],
                labelResults: Array(repeating: ("unknownInsight", true), count: maxLabels)),
            Probe(L, "/v1/labels", 400, "contextInvalid", "no Idempotency-Key", key: key, json: oneLabel),
            Probe(
                L, "/v1/labels", 400, "contextInvalid", "Idempotency-Key too long", key: key, json: oneLabel,
                headers: ["Idempotency-Key": chars(maxKey + 1, "k")]),
            Probe(
                L, "/v1/labels", 400, "contextInvalid", "Idempotency-Key not visible ASCII", key: key, json: oneLabel,
                headers: ["Idempotency-Key": "a b"]),
            Probe(L, "/v1/labels", 400, "contextInvalid", "not an object", key: key, json: "[]", headers: ["Idempotency-Key": "e0"]),
            Probe(L, "/v1/labels", 401, "unauthorized", "no key", key: nil, json: oneLabel, headers: ["Idempotency-Key": "e1"]),
            Probe(
                L, "/v1/labels", 403, "forbidden", "evaluate role only", key: evaluateOnly, json: oneLabel,
                headers: ["Idempotency-Key": "e1"]),
            Probe(
                L, "/v1/labels", 415, "unsupportedMediaType", "no Content-Type", key: key, json: oneLabel, contentType: nil,
                headers: ["Idempotency-Key": "e1"]),
            Probe(
                L, "/v1/labels", 422, "contextInvalid", "no labels", key: key, json: #"{"labels":[]}"#, headers: ["Idempotency-Key": "e2"]),
            Probe(
                L, "/v1/labels", 422, "contextInvalid", "too many labels", key: key, json: labelList(maxLabels + 1),
                headers: ["Idempotency-Key": "e3"]),
            Probe(
                L, "/v1/labels", 422, "contextInvalid", "unknown member", key: key, json: #"{"labels":[],"comment":"hi"}"#,
                headers: ["Idempotency-Key": "e4"]),
            Probe(
                L, "/v1/labels", 422, "contextInvalid", "labels not an array", key: key, json: #"{"labels":{}}"#,
                headers: ["Idempotency-Key": "e5"]),
            Probe(L, "/v1/labels", 200, nil, "within the quota", key: scarceLabels, json: oneLabel, headers: ["Idempotency-Key": "q1"]),
            Probe(
                L, "/v1/labels", 429, "rateLimitExceeded", "quota used up", key: scarceLabels, json: oneLabel,
                headers: ["Idempotency-Key": "q2"]),
            Probe(
                L, "/v1/labels", 503, "serverError", "write queue full", key: busyKey, json: oneLabel,
                headers: ["Idempotency-Key": "busy"], target: .overloaded),
            Probe(
                L, "/v1/labels", 503, "serverError", "credentials cannot be checked", key: broken.key, json: oneLabel,
                headers: ["Idempotency-Key": "e6"])
        ]
        // Subject authorization.
        let A = "PUT /v1/authorization", Q = "POST /v1/authorization/query"
        table += [
            Probe(A, "/v1/authorization", 200, nil, "deny", key: key, json: #"{"subject":{"account":"probe-1"},"status":"denied"}"#),
            Probe(
                A, "/v1/authorization", 200, nil, "allow device", key: key, json: #"{"subject":{"device":"probe-d"},"status":"authorized"}"#
            ),
            Probe(A, "/v1/authorization", 400, "contextInvalid", "not JSON", key: key, json: "{"),
            Probe(A, "/v1/authorization", 401, "unauthorized", "no key", key: nil, json: #"{"subject":{"account":"a"},"status":"denied"}"#),
            Probe(
                A, "/v1/authorization", 403, "forbidden", "labels role only", key: labelsOnly,
                json: #"{"subject":{"account":"a"},"status":"denied"}"#),
            Probe(A, "/v1/authorization", 415, "unsupportedMediaType", "text/plain", key: key, json: "{}", contentType: "text/plain"),
            Probe(
                A, "/v1/authorization", 422, "contextInvalid", "both identifiers", key: key,
                json: #"{"subject":{"account":"a","device":"d"},"status":"denied"}"#),
            Probe(
                A, "/v1/authorization", 422, "contextInvalid", "unknown status", key: key,
                json: #"{"subject":{"account":"a"},"status":"off"}"#),
            Probe(A, "/v1/authorization", 422, "contextInvalid", "no subject", key: key, json: #"{"status":"denied"}"#),
            Probe(
                A, "/v1/authorization", 200, nil, "within the quota", key: scarce,
                json: #"{"subject":{"account":"a"},"status":"authorized"}"#),
            Probe(
                A, "/v1/authorization", 429, "rateLimitExceeded", "quota used up", key: scarce,
                json: #"{"subject":{"account":"a"},"status":"authorized"}"#),
            Probe(
                A, "/v1/authorization", 200, nil, "the tenant's one denial", key: crampedKey,
                json: #"{"subject":{"account":"a"},"status":"denied"}"#, target: .cramped),
            Probe(
                A, "/v1/authorization", 429, "rateLimitExceeded", "no room for another denial", key: crampedKey,
                json: #"{"subject":{"account":"b"},"status":"denied"}"#, target: .cramped),
            Probe(
                A, "/v1/authorization", 503, "serverError", "write queue full", key: busyKey,
                json: #"{"subject":{"account":"a"},"status":"denied"}"#, target: .overloaded),
            Probe(
                A, "/v1/authorization", 503, "serverError", "credentials cannot be checked", key: broken.key,
                json: #"{"subject":{"account":"a"},"status":"denied"}"#),
            Probe(Q, "/v1/authorization/query", 200, nil, "query", key: key, json: #"{"subject":{"account":"probe-1"}}"#),
            Probe(
                Q, "/v1/authorization/query", 200, nil, "the other identifier null", key: key,
                json: #"{"subject":{"account":"probe-1","device":null}}"#),
            Probe(Q, "/v1/authorization/query", 400, "contextInvalid", "not JSON", key: key, json: "["),
            Probe(Q, "/v1/authorization/query", 401, "unauthorized", "no key", key: nil, json: #"{"subject":{"account":"a"}}"#),
            Probe(
                Q, "/v1/authorization/query", 403, "forbidden", "labels role only", key: labelsOnly, json: #"{"subject":{"account":"a"}}"#),
            Probe(Q, "/v1/authorization/query", 415, "unsupportedMediaType", "no Content-Type", key: key, json: "{}", contentType: nil),
            Probe(
                Q, "/v1/authorization/query", 422, "contextInvalid", "status in a query", key: key,
                json: #"{"subject":{"account":"a"},"status":"denied"}"#),
            Probe(
                Q, "/v1/authorization/query", 503, "serverError", "credentials cannot be checked", key: broken.key,
                json: #"{"subject":{"account":"a"}}"#),
            Probe(Q, "/v1/authorization/query", 200, nil, "within the quota", key: scarceQuery, json: #"{"subject":{"account":"a"}}"#),
            Probe(
                Q, "/v1/authorization/query", 429, "rateLimitExceeded", "quota used up", key: scarceQuery,
                json: #"{"subject":{"account":"b"}}"#)
        ]
        // The admin API.
        let admin = try daemon.createCaller(roles: [.admin])
        let busyAdmin = try overloaded.createCaller(roles: [.admin])
        // The person's view.
        let T = "POST /v1/subjects/transparency", X = "POST /v1/subjects/erasure"
        table += [
            Probe(T, "/v1/subjects/transparency", 200, nil, "an account", key: key, json: #"{"subject":{"account":"probe-1"}}"#),
            Probe(
                T, "/v1/subjects/transparency", 200, nil, "a counterparty, one a page", key: key,
                json: #"{"subject":{"counterparty":"probe-c"},"limit":1}"#),
            Probe(T, "/v1/subjects/transparency", 400, "contextInvalid", "not JSON", key: key, json: "{"),
            Probe(T, "/v1/subjects/transparency", 401, "unauthorized", "no key", key: nil, json: #"{"subject":{"account":"a"}}"#),
            Probe(
                T, "/v1/subjects/transparency", 403, "forbidden", "admin role only", key: adminOnly, json: #"{"subject":{"account":"a"}}"#),
            Probe(
                T, "/v1/subjects/transparency", 415, "unsupportedMediaType", "text/plain", key: key, json: "{}", contentType: "text/plain"),
            Probe(
                T, "/v1/subjects/transparency", 422, "contextInvalid", "two kinds", key: key,
                json: #"{"subject":{"account":"a","device":"d"}}"#),
            Probe(
                T, "/v1/subjects/transparency", 422, "contextInvalid", "a cursor not handed out", key: key,
                json: #"{"subject":{"account":"a"},"cursor":"x"}"#),
            Probe(
                T, "/v1/subjects/transparency", 503, "serverError", "credentials cannot be checked", key: broken.key,
                json: #"{"subject":{"account":"a"}}"#),
            Probe(T, "/v1/subjects/transparency", 200, nil, "five of nine tokens", key: scarcePages, json: #"{"subject":{"account":"a"}}"#),
            Probe(
                T, "/v1/subjects/transparency", 429, "rateLimitExceeded", "four left, a page costs five", key: scarcePages,
                json: #"{"subject":{"account":"b"}}"#),
            Probe(
                X, "/v1/subjects/erasure", 200, nil, "an account and a device", key: admin.key,
                json: #"{"subject":{"account":"probe-erased","device":"probe-erased-d"}}"#),
            Probe(X, "/v1/subjects/erasure", 400, "contextInvalid", "not JSON", key: admin.key, json: "["),
            Probe(X, "/v1/subjects/erasure", 401, "unauthorized", "no key", key: nil, json: #"{"subject":{"account":"a"}}"#),
            Probe(X, "/v1/subjects/erasure", 403, "forbidden", "no admin role", key: key, json: #"{"subject":{"account":"a"}}"#),
            Probe(X, "/v1/subjects/erasure", 415, "unsupportedMediaType", "no Content-Type", key: admin.key, json: "{}", contentType: nil),
            Probe(X, "/v1/subjects/erasure", 422, "contextInvalid", "no identifier", key: admin.key, json: #"{"subject":{}}"#),
            Probe(
                X, "/v1/subjects/erasure", 422, "contextInvalid", "another tenant", key: admin.key,
                json: #"{"subject":{"account":"a"},"tenant":"elsewhere"}"#, schema: .notExpressible),
            Probe(
                X, "/v1/subjects/erasure", 503, "serverError", "write queue full", key: busyAdmin.key,
                json: #"{"subject":{"account":"a"}}"#, target: .overloaded),
            Probe(X, "/v1/subjects/erasure", 200, nil, "within the quota", key: scarceAdmin, json: #"{"subject":{"account":"a"}}"#),
            Probe(
                X, "/v1/subjects/erasure", 429, "rateLimitExceeded", "quota used up", key: scarceAdmin,
                json: #"{"subject":{"account":"b"}}"#)
        ]
        let callerPath = "/admin/v1/callers/\(admin.callerId)", missingPath = "/admin/v1/callers/caller_0000000000000000"
        for method in ["GET", "HEAD"] {
            for (path, template) in [
                ("/admin/v1/callers", "/admin/v1/callers"), (callerPath, "/admin/v1/callers/{callerId}"),
                (callerPath + "/rate-limit", "/admin/v1/callers/{callerId}/rate-limit")
            ] {
                let op = "\(method) \(template)"
                // The main daemon holds a deliberately corrupted caller, which a full listing cannot read.
                let listing = template == "/admin/v1/callers"
                table += [
                    Probe(
                        op, path, 200, nil, "admin", key: listing ? busyAdmin.key : admin.key,
                        target: listing ? .overloaded : .main),
                    Probe(op, path, 401, "unauthorized", "no key", key: nil),
                    Probe(op, path, 403, "forbidden", "no admin role", key: key),
                    Probe(op, path, 503, "serverError", "credentials cannot be checked", key: broken.key)
                ]
                if template != "/admin/v1/callers" {
                    table.append(
                        Probe(
                            op, path.replacingOccurrences(of: callerPath, with: missingPath), 404, "callerNotFound",
                            "unknown caller", key: admin.key))
                }
            }
        }
        for method in ["GET", "HEAD"] {
            let D = "\(method) /admin/v1/decisions"
            table += [
                Probe(D, "/admin/v1/decisions", 200, nil, "admin", key: admin.key),
                Probe(D, "/admin/v1/decisions?days=30", 200, nil, "a period", key: admin.key),
                Probe(D, "/admin/v1/decisions", 401, "unauthorized", "no key", key: nil),
                Probe(D, "/admin/v1/decisions", 403, "forbidden", "no admin role", key: key),
                Probe(D, "/admin/v1/decisions?days=0", 422, "contextInvalid", "an empty period", key: admin.key),
                Probe(D, "/admin/v1/decisions", 503, "serverError", "credentials cannot be checked", key: broken.key)
            ]
            let op = "\(method) /admin/v1/model-performance", path = "/admin/v1/model-performance"
            table += [
                Probe(op, path + "?from=2026-01-01&to=2026-01-31", 200, nil, "a month", key: admin.key),
                Probe(
                    op, path + "?environment=sandbox&from=2026-01-01&to=2026-01-01&category=payment", 200, nil,
                    "a day, sandbox, one category", key: sandboxAdmin),
                Probe(
                    op, path + "?environment=sandbox&from=2026-01-01&to=2026-01-01", 403, "forbidden",
                    "the other environment", key: admin.key),
                Probe(op, path + "?from=2026-01-01&to=2026-01-31", 401, "unauthorized", "no key", key: nil),
                Probe(op, path + "?from=2026-01-01&to=2026-01-31", 403, "forbidden", "no admin role", key: key),
                Probe(op, path + "?from=2026-01-01", 422, "contextInvalid", "no to", key: admin.key),
                Probe(op, path + "?from=2026-02-30&to=2026-03-01", 422, "contextInvalid", "not a date", key: admin.key),
                Probe(op, path + "?from=2026-03-01&to=2026-02-01", 422, "contextInvalid", "to before from", key: admin.key),
                Probe(op, path + "?from=2026-01-01&to=2026-06-01", 422, "contextInvalid", "over 92 days", key: admin.key),
                Probe(
                    op, path + "?from=2026-01-01&to=2026-01-02&tenant=x", 422, "contextInvalid", "unknown parameter",
                    key: admin.key),
                Probe(
                    op, path + "?from=2026-01-01&to=2026-01-02&category=x", 422, "contextInvalid", "unknown category",
                    key: admin.key),
                Probe(
                    op, path + "?from=2026-01-01&to=2026-01-31", 503, "serverError", "credentials cannot be checked",
                    key: broken.key)
            ]
            if method == "GET" {
                table.append(Probe(op, path + "?from=2026-01-01&to=2026-01-01", 200, nil, "within the quota", key: scarceReports))
            }
            table.append(
                Probe(op, path + "?from=2026-01-01&to=2026-01-01", 429, "rateLimitExceeded", "quota used up", key: scarceReports))
        }
        // The console's views and its key revocation.
        let victim = try daemon.createCaller(roles: [.evaluate])
        let victimKeyId = String(victim.key.split(separator: "_")[1])
        let busyKeyId = String(busyAdmin.key.split(separator: "_")[1])
        for method in ["GET", "HEAD"] {
            for path in ["/admin/v1/rate-limits", "/admin/v1/models", "/admin/v1/velocity", "/admin/v1/health"] {
                let op = "\(method) \(path)"
                // The main daemon holds a deliberately corrupted caller, which a full listing cannot read.
                let listing = path == "/admin/v1/rate-limits"
                table += [
                    Probe(op, path, 200, nil, "admin", key: listing ? busyAdmin.key : admin.key, target: listing ? .overloaded : .main),
                    Probe(op, path, 401, "unauthorized", "no key", key: nil),
                    Probe(op, path, 403, "forbidden", "no admin role", key: key),
                    Probe(op, path, 503, "serverError", "credentials cannot be checked", key: broken.key)
                ]
            }
            let K = "\(method) /admin/v1/callers/{callerId}/keys"
            table += [
                Probe(K, "/admin/v1/callers/\(victim.callerId)/keys", 200, nil, "admin", key: admin.key),
                Probe(K, "/admin/v1/callers/\(victim.callerId)/keys", 401, "unauthorized", "no key", key: nil),
                Probe(K, "/admin/v1/callers/\(victim.callerId)/keys", 403, "forbidden", "no admin role", key: key),
                Probe(K, missingPath + "/keys", 404, "callerNotFound", "unknown caller", key: admin.key),
                Probe(K, "/admin/v1/callers/\(victim.callerId)/keys", 503, "serverError", "credentials cannot be checked", key: broken.key)
            ]
            let etag = try XCTUnwrap(try send("GET", "/console/", key: nil, json: nil).headers["etag"], "the console's ETag")
            let W = "\(method) /console/"
            table += [
                Probe(W, "/console/", 200, nil, "the page", key: nil),
                Probe(W, "/console/", 200, nil, "credentials ignored", key: "not-a-key"),
                Probe(W, "/console/", 200, nil, "another entity tag", key: nil, headers: ["If-None-Match": #""0""#]),
                Probe(W, "/console/", 304, nil, "current copy", key: nil, headers: ["If-None-Match": etag])
            ]
        }
        let V = "POST /admin/v1/callers/{callerId}/keys/{keyId}/revoke"
        table += [
            Probe(V, "/admin/v1/callers/\(victim.callerId)/keys/\(victimKeyId)/revoke", 200, nil, "revoke", key: admin.key),
            Probe(V, "/admin/v1/callers/\(victim.callerId)/keys/\(victimKeyId)/revoke", 200, nil, "again", key: admin.key),
            Probe(V, "/admin/v1/callers/\(victim.callerId)/keys/\(victimKeyId)/revoke", 401, "unauthorized", "no key", key: nil),
            Probe(V, "/admin/v1/callers/\(victim.callerId)/keys/\(victimKeyId)/revoke", 403, "forbidden", "no admin role", key: key),
            Probe(V, missingPath + "/keys/\(victimKeyId)/revoke", 404, "callerNotFound", "unknown caller", key: admin.key),
            Probe(
                V, "/admin/v1/callers/\(victim.callerId)/keys/0000000000000000/revoke", 404, "keyNotFound", "unknown key",
                key: admin.key),
            Probe(
                V, "/admin/v1/callers/\(admin.callerId)/keys/\(victimKeyId)/revoke", 404, "keyNotFound", "another caller's key",
                key: admin.key),
            Probe(
                V, "/admin/v1/callers/\(busyAdmin.callerId)/keys/\(busyKeyId)/revoke", 503, "serverError", "write queue full",
                key: busyAdmin.key, target: .overloaded)
        ]
        let P = "PATCH /admin/v1/callers/{callerId}", RR = "POST /admin/v1/callers/{callerId}/rate-limit/reset"
        table += [
            Probe(P, callerPath, 200, nil, "rate and burst", key: admin.key, json: #"{"rate":50000,"burst":50000}"#),
            Probe(P, callerPath, 200, nil, "rate only", key: admin.key, json: #"{"rate":20000.5}"#),
            Probe(P, callerPath, 200, nil, "rate, and null for the others", key: admin.key, json: #"{"rate":20000.5,"burst":null}"#),
            Probe(P, callerPath, 422, "contextInvalid", "only nulls: nothing to change", key: admin.key, json: #"{"rate":null}"#),
            Probe(P, callerPath, 400, "contextInvalid", "not JSON", key: admin.key, json: "{"),
            Probe(P, callerPath, 401, "unauthorized", "no key", key: nil, json: #"{"rate":1}"#),
            Probe(P, callerPath, 403, "forbidden", "no admin role", key: key, json: #"{"rate":1}"#),
            Probe(P, missingPath, 404, "callerNotFound", "unknown caller", key: admin.key, json: #"{"rate":1}"#),
            Probe(
                P, callerPath, 415, "unsupportedMediaType", "text/plain", key: admin.key, json: #"{"rate":1}"#, contentType: "text/plain"),
            Probe(P, callerPath, 422, "contextInvalid", "negative rate", key: admin.key, json: #"{"rate":-1}"#),
            Probe(P, callerPath, 422, "contextInvalid", "zero burst", key: admin.key, json: #"{"burst":0}"#),
            Probe(P, callerPath, 422, "contextInvalid", "nothing to set", key: admin.key, json: "{}"),
            Probe(P, callerPath, 422, "contextInvalid", "unknown member", key: admin.key, json: #"{"rate":1,"name":"x"}"#),
            Probe(
                P, "/admin/v1/callers/\(busyAdmin.callerId)", 503, "serverError", "write queue full", key: busyAdmin.key,
                json: #"{"rate":1}"#, target: .overloaded),
            Probe(RR, callerPath + "/rate-limit/reset", 200, nil, "reset", key: admin.key),
            Probe(RR, callerPath + "/rate-limit/reset", 401, "unauthorized", "no key", key: nil),
            Probe(RR, callerPath + "/rate-limit/reset", 403, "forbidden", "no admin role", key: key),
            Probe(RR, missingPath + "/rate-limit/reset", 404, "callerNotFound", "unknown caller", key: admin.key),
            Probe(RR, callerPath + "/rate-limit/reset", 200, nil, "within the quota", key: scarceResets),
            Probe(RR, callerPath + "/rate-limit/reset", 429, "rateLimitExceeded", "quota used up", key: scarceResets),
            Probe(
                RR, "/admin/v1/callers/\(busyAdmin.callerId)/rate-limit/reset", 503, "serverError", "write queue full",
                key: busyAdmin.key, target: .overloaded)
        ]
        // The intervention catalogue, and consumption reports that name it (docs/api.md "Interventions").
        let entry = #"{"templateId":"w-openapi","version":1,"kind":"scamWarning","scamTypes":["romance"],"description":"Romance warning"}"#
        let retiredEntry = entry.replacingOccurrences(of: "w-openapi", with: "w-retired")
        XCTAssertEqual(try send("POST", "/admin/v1/interventions", key: admin.key, json: retiredEntry).status, 201)
        XCTAssertEqual(try send("POST", "/admin/v1/interventions/w-retired/versions/1/retire", key: admin.key, json: nil).status, 200)
        let (reportedEvent, _) = try evaluation(key)
        let report = "/v1/evaluations/\(reportedEvent)/consumption", shownNow = Timestamp.format(SystemClock().now() + 1_000)
        func intervention(_ members: String) -> String { #"{"status":"usedIncreasedFriction","intervention":{\#(members)}}"# }
        let warned = #""kind":"scamWarning","templateId":"w-openapi","templateVersion":1,"shownAt":"\#(shownNow)","response":"abandoned""#
        let IA = "POST /admin/v1/interventions", IR = "POST /admin/v1/interventions/{templateId}/versions/{version}/retire"
        let retirePath = "/admin/v1/interventions/w-openapi/versions/1/retire"
        for method in ["GET", "HEAD"] {
            let IL = "\(method) /admin/v1/interventions"
            table += [
                Probe(IL, "/admin/v1/interventions", 200, nil, "admin", key: admin.key),
                Probe(IL, "/admin/v1/interventions", 401, "unauthorized", "no key", key: nil),
                Probe(IL, "/admin/v1/interventions", 403, "forbidden", "no admin role", key: key),
                Probe(IL, "/admin/v1/interventions", 503, "serverError", "credentials cannot be checked", key: broken.key)
            ]
        }
        table += [
            Probe(IA, "/admin/v1/interventions", 201, nil, "added", key: admin.key, json: entry),
            Probe(IA, "/admin/v1/interventions", 200, nil, "the same again", key: admin.key, json: entry),
            Probe(
                IA, "/admin/v1/interventions", 409, "interventionTemplateConflict", "other content", key: admin.key,
                json: entry.replacingOccurrences(of: "Romance warning", with: "Other words")),
            Probe(IA, "/admin/v1/interventions", 400, "contextInvalid", "not JSON", key: admin.key, json: "{"),
            Probe(IA, "/admin/v1/interventions", 401, "unauthorized", "no key", key: nil, json: entry),
            Probe(IA, "/admin/v1/interventions", 403, "forbidden", "no admin role", key: key, json: entry),
            Probe(
                IA, "/admin/v1/interventions", 415, "unsupportedMediaType", "text/plain", key: admin.key, json: entry,
                contentType: "text/plain"),
            Probe(
                IA, "/admin/v1/interventions", 422, "contextInvalid", "unknown scam type", key: admin.key,
                json: entry.replacingOccurrences(of: "romance", with: "lottery")),
            Probe(
                IA, "/admin/v1/interventions", 422, "contextInvalid", "kind none", key: admin.key,
                json: entry.replacingOccurrences(of: "scamWarning", with: "none")),
            Probe(
                IA, "/admin/v1/interventions", 503, "serverError", "write queue full", key: busyAdmin.key, json: entry,
                target: .overloaded),
            Probe(
                C, report, 422, "interventionTemplateUnknown", "unknown template", key: key,
                json: intervention(warned.replacingOccurrences(of: "w-openapi", with: "w-none")), schema: .notExpressible),
            Probe(
                C, report, 422, "interventionKindMismatch", "another kind", key: key,
                json: intervention(warned.replacingOccurrences(of: "scamWarning", with: "questionnaire")), schema: .notExpressible),
            Probe(
                C, report, 422, "interventionTemplateRetired", "retired template", key: key,
                json: intervention(warned.replacingOccurrences(of: "w-openapi", with: "w-retired")), schema: .notExpressible),
            Probe(
                C, report, 422, "interventionTimeInvalid", "shown before the evaluation", key: key,
                json: intervention(warned.replacingOccurrences(of: shownNow, with: "2001-01-01T00:00:00Z")), schema: .notExpressible),
            Probe(
                C, report, 422, "contextInvalid", "a warning without its template", key: key,
                json: intervention(#""kind":"scamWarning","shownAt":"\#(shownNow)","response":"abandoned""#)),
            Probe(
                C, report, 422, "contextInvalid", "unknown response", key: key,
                json: intervention(#""kind":"callBack","shownAt":"\#(shownNow)","response":"fine""#)),
            Probe(C, report, 204, nil, "with an intervention", key: key, json: intervention(warned)),
            Probe(C, report, 204, nil, "the same again", key: key, json: intervention(warned)),
            Probe(
                C, report, 409, "consumptionConflict", "another response", key: key,
                json: intervention(warned.replacingOccurrences(of: "abandoned", with: "proceeded"))),
            Probe(IR, retirePath, 200, nil, "retire", key: admin.key),
            Probe(IR, retirePath, 200, nil, "again", key: admin.key),
            Probe(IR, retirePath, 401, "unauthorized", "no key", key: nil),
            Probe(IR, retirePath, 403, "forbidden", "no admin role", key: key),
            Probe(
                IR, "/admin/v1/interventions/w-openapi/versions/9/retire", 404, "interventionTemplateNotFound", "unknown version",
                key: admin.key),
            Probe(
                IR, "/admin/v1/interventions/w-openapi/versions/1/retire", 503, "serverError", "write queue full", key: busyAdmin.key,
                target: .overloaded)
        ]
        let jwksTag = try XCTUnwrap(try send("GET", "/v1/signing-keys", key: nil, json: nil).headers["etag"], "the key set's ETag")
        let instance = try String(contentsOfFile: daemon.service.settings.stateDirectory + "/instance", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        for method in ["GET", "HEAD"] {
            let R = "\(method) /v1/receipts/heads", path = "/v1/receipts/heads"
            // A page costs a token: one page, then the refusal.
            let scarceHeads = try daemon.createCaller(roles: [.evaluate], rate: 0.001, burst: 1).key
            table += [
                Probe(R, path, 200, nil, "within the quota", key: scarceHeads),
                Probe(R, path, 429, "rateLimitExceeded", "quota used up", key: scarceHeads),
                Probe(R, path, 200, nil, "each instance's latest head", key: key),
                Probe(R, path, 200, nil, "an admin", key: adminOnly),
                Probe(R, path + "?instance=\(instance)&from=0&limit=1", 200, nil, "a chain, a page", key: key),
                Probe(R, path + "?instance=another", 200, nil, "an instance without heads", key: key),
                Probe(R, path, 401, "unauthorized", "no key", key: nil),
                Probe(R, path, 403, "forbidden", "neither evaluate nor admin", key: labelsOnly),
                Probe(R, path + "?limit=10", 200, nil, "a limit without an instance: the chains", key: key),
                Probe(R, path + "?from=1&limit=1", 200, nil, "a page of the chains", key: key),
                Probe(R, path + "?limit=0", 422, "contextInvalid", "no chain at all", key: key),
                Probe(R, path + "?instance=\(instance)&limit=1001", 422, "contextInvalid", "a page too long", key: key),
                Probe(R, path + "?instance=\(instance)&from=-1", 422, "contextInvalid", "a negative sequence", key: key),
                Probe(R, path + "?instance=a%20b", 422, "contextInvalid", "an encoded name", key: key),
                Probe(R, path, 503, "serverError", "credentials cannot be checked", key: broken.key)
            ]
        }
        for method in ["GET", "HEAD"] {
            let I = "\(method) /v1/insights"
            table += [
                Probe(I, "/v1/insights", 200, nil, "catalog", key: key),
                Probe(I, "/v1/insights", 200, nil, "any role", key: adminOnly),
                Probe(I, "/v1/insights", 401, "unauthorized", "no key", key: nil),
                Probe(I, "/v1/insights", 401, "unauthorized", "malformed key", key: "ik_x"),
                Probe(I, "/v1/insights", 503, "serverError", "credentials cannot be checked", key: broken.key),
                Probe("\(method) /livez", "/livez", 200, nil, "alive", key: nil),
                Probe("\(method) /livez", "/livez", 200, nil, "credentials ignored", key: "not-a-key"),
                Probe("\(method) /readyz", "/readyz", 200, nil, "ready", key: nil),
                Probe("\(method) /v1/signing-keys", "/v1/signing-keys", 200, nil, "public keys", key: nil),
                Probe("\(method) /v1/signing-keys", "/v1/signing-keys", 200, nil, "credentials ignored", key: "not-a-key"),
                Probe(
                    "\(method) /v1/signing-keys", "/v1/signing-keys", 200, nil, "another entity tag", key: nil,
                    headers: ["If-None-Match": #""0""#]),
                Probe(
                    "\(method) /v1/signing-keys", "/v1/signing-keys", 304, nil, "the set held is current", key: nil,
                    headers: ["If-None-Match": jwksTag])
            ]
        }

        var produced: [String: Set<Int>] = [:]
        var producedCodes: [String: Set<String>] = [:]
        func run(_ probe: Probe) throws {
            guard let op = spec.operation(id: probe.op) else { return XCTFail("\(probe.op) is not documented") }
            let daemon =
                switch probe.target {
                case .main: self.daemon!;
                case .overloaded: overloaded;
                case .cramped: cramped
                }
            let r = try send(
                op.method, probe.path, key: probe.key, json: probe.json, contentType: probe.contentType,
                headers: probe.headers, daemon: daemon)
            let context = "\(probe.op) [\(probe.why)]"
            XCTAssertEqual(r.status, probe.status, "\(context): \(String(decoding: r.body, as: UTF8.self))")
            if op.method != "HEAD" { XCTAssertEqual(r.code, probe.code, context) }
            check(r, op: op, context: context)
            produced[op.id, default: []].insert(r.status)
            if let code = r.code { producedCodes["\(op.id) \(r.status)", default: []].insert(code) }
            if probe.status == 200, op.path == "/v1/labels" {
                XCTAssertEqual(r.headers["idempotent-replayed"], probe.replayed ? "true" : nil, context)
            }
            checkRequestSchema(probe, op: op, response: r, context: context)
        }
        for probe in table { try run(probe) }
        daemon.service.readiness.set(false)
        for method in ["GET", "HEAD"] {
            try run(Probe("\(method) /readyz", "/readyz", 503, "serverError", "not ready", key: nil))
        }
        daemon.service.readiness.set(true)

        // Every documented status that is not transport-level occurs above.
        for op in spec.operations {
            for (status, response) in spec.responses(of: op) {
                let codes = Set(response["x-problem-codes"]?.oaArray?.compactMap(\.stringValue) ?? [])
                if Self.isTransportOnly(response) { continue }
                if status == 500 {
                    // The catch-all for unexpected errors: no request triggers it on purpose.
                    XCTAssertEqual(codes, ["serverError"], "\(op.id) 500")
                    continue
                }
                XCTAssertTrue(produced[op.id, default: []].contains(status), "\(op.id) documents \(status), which no request produced")
                // Answers to HEAD carry no problem body, so their codes cannot be seen.
                guard op.method != "HEAD" else { continue }
                let expected = codes.subtracting(Self.transportCodes)
                XCTAssertEqual(
                    producedCodes["\(op.id) \(status)", default: []], expected, "\(op.id) \(status): codes produced vs x-problem-codes")
            }
        }
    }

    /// The transport-level errors answer any request, on every documented operation.
    func testTransportErrorsAreDocumentedForEveryOperation() throws {
        let transport = try TestDaemon(.live) { $0.requestTimeout = 1 }
        let expected: [Int: String] = [
            400: "malformedRequest", 408: "requestTimeout", 413: "payloadTooLarge",
            431: "headersTooLarge", 501: "notImplemented", 505: "httpVersionNotSupported"
        ]
        var slow: [(op: OpenAPISpec.Operation, fd: Int32)] = []
        for op in spec.operations {
            let path = op.path.replacingOccurrences(of: "{eventId}", with: Self.sampleEventId)
            let documented = spec.responses(of: op)
            for (status, code) in expected {
                let response = try XCTUnwrap(documented.first { $0.0 == status }?.1, "\(op.id) does not document \(status)")
                let codes = response["x-problem-codes"]?.oaArray?.compactMap(\.stringValue) ?? []
                XCTAssertTrue(codes.contains(code), "\(op.id) \(status): x-problem-codes lacks \(code)")
            }
            let head = "\(op.method) \(path) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
            let requests: [(Int, String)] = [
                (400, head + "Bad Header\r\n\r\n"),
                (413, head + "Content-Type: application/json\r\nContent-Length: \(transport.service.settings.maxBodyBytes + 1)\r\n\r\n"),
                (431, head + "X-Fill: \(String(repeating: "a", count: transport.service.settings.maxHeaderBytes))\r\n\r\n"),
                (501, head + "Transfer-Encoding: gzip\r\n\r\n"),
                (505, "\(op.method) \(path) HTTP/2.0\r\nHost: localhost\r\n\r\n")
            ]
            for (status, bytes) in requests {
                let r = try transport.exchange(Array(bytes.utf8))
                XCTAssertEqual(r.status, status, "\(op.id) transport \(status)")
                XCTAssertEqual(r.code, expected[status], "\(op.id) transport \(status)")
                check(r, op: op, context: "\(op.id) transport \(status)")
            }
            // Started now, answered 408 after the request timeout; read below, all at once.
            let fd = try RawHTTP.connect(port: transport.port)
            RawHTTP.send(fd, Array((head + "Content-Type: application/json\r\nContent-Length: 10\r\n\r\n{").utf8))
            slow.append((op, fd))
        }
        for (op, fd) in slow {
            defer { close(fd) }
            let r = try XCTUnwrap(RawHTTP.parse(RawHTTP.readToEnd(fd), bodyless: false), "\(op.id): no 408 answer")
            XCTAssertEqual(r.status, 408, op.id)
            XCTAssertEqual(r.code, "requestTimeout", op.id)
            check(r, op: op, context: "\(op.id) transport 408")
        }
    }

    // MARK: (c) Problem codes

    /// The document's `Problem.code` enum is exactly the `ProblemCode` cases declared in
    /// Problem.swift; every code appears in some response's `x-problem-codes` or is reserved.
    func testProblemCodesMatchTheSource() throws {
        let source = try String(
            contentsOf: OpenAPISpec.packageRoot.appendingPathComponent("Sources/InsightAPI/Problem.swift"), encoding: .utf8)
        let declared = SourceScanner.enumCases("ProblemCode", in: source)
        XCTAssertFalse(declared.isEmpty, "no cases of enum ProblemCode found in Problem.swift")
        XCTAssertEqual(Set(declared), Set(ProblemCode.allCases.map(\.rawValue)), "the source scan disagrees with ProblemCode.allCases")
        let code = spec.root.oaPointer("#/components/schemas/Problem/properties/code")
        let documented = code?["enum"]?.oaArray?.compactMap(\.stringValue) ?? []
        XCTAssertEqual(documented.count, Set(documented).count, "duplicate codes in the document")
        XCTAssertEqual(Set(documented), Set(declared), "Problem.code enum vs ProblemCode")
        let reserved = Set(code?["x-reserved-codes"]?.oaArray?.compactMap(\.stringValue) ?? [])
        var used = Set<String>()
        spec.root.oaVisit { object in
            for code in object["x-problem-codes"]?.oaArray ?? [] { used.insert(code.stringValue ?? "?") }
        }
        XCTAssertTrue(used.isSubset(of: Set(documented)), "x-problem-codes not in the enum: \(used.subtracting(documented))")
        XCTAssertTrue(reserved.isDisjoint(with: used), "reserved codes that responses list: \(reserved.intersection(used))")
        XCTAssertEqual(used.union(reserved), Set(documented), "codes neither listed by a response nor reserved")
        XCTAssertEqual(
            spec.root.oaPointer("#/components/schemas/Problem/properties/type/pattern")?.stringValue,
            "^urn:insightd:problem:[A-Za-z]+$")
    }

    // MARK: Vocabularies and limits

    /// Enumerations and limits of the document are those of the code.
    func testVocabulariesAndModelLimitsMatchTheCode() throws {
        func enumeration(_ pointer: String) -> [String] {
            spec.root.oaPointer(pointer)?["enum"]?.oaArray?.compactMap(\.stringValue) ?? []
        }
        let schemas = "#/components/schemas"
        XCTAssertEqual(enumeration("\(schemas)/OperationCategory"), OperationCategory.allCases.map(\.rawValue))
        XCTAssertEqual(enumeration("\(schemas)/InsightValue"), InsightValue.allCases.map(\.rawValue))
        XCTAssertEqual(enumeration("\(schemas)/InsightErrorCode"), InsightErrorCode.allCases.map(\.rawValue))
        XCTAssertEqual(enumeration("\(schemas)/ConsumptionStatus"), ConsumptionStatus.allCases.map(\.rawValue))
        XCTAssertEqual(enumeration("\(schemas)/LabelOutcome"), LabelOutcome.allCases.map(\.rawValue))
        XCTAssertEqual(enumeration("\(schemas)/FraudType"), FraudType.allCases.map(\.rawValue))
        XCTAssertEqual(enumeration("\(schemas)/LabelResultStatus"), LabelResultStatus.allCases.map(\.rawValue))
        XCTAssertEqual(enumeration("\(schemas)/Environment"), Environment.allCases.map(\.rawValue))
        XCTAssertEqual(enumeration("\(schemas)/InsightCatalogEntry/properties/type"), InsightType.allCases.map(\.rawValue))
        XCTAssertEqual(enumeration("\(schemas)/InteractionSource/properties/platform"), ClientPlatform.allCases.map(\.rawValue))
        // The models' manifests name the same platforms for thresholds of their own.
        XCTAssertEqual(CoachingModelVersion.platforms, ClientPlatform.allCases.map(\.rawValue))
        XCTAssertEqual(
            spec.root.oaPointer("\(schemas)/InteractionSource/properties/kit/maxLength")?.numberValue,
            Double(InteractionSource.maxKitLength))
        XCTAssertEqual(
            spec.root.oaPointer("\(schemas)/InteractionSource/properties/version/maxLength")?.numberValue,
            Double(InteractionSource.maxVersionLength))
        XCTAssertEqual(
            spec.root.oaPointer("\(schemas)/InteractionSource/properties/droppedEvents/maximum")?.numberValue,
            Double(InteractionSource.maxDroppedEvents))
        XCTAssertEqual(
            spec.root.oaPointer("\(schemas)/LabelSummary/required")?.oaArray?.compactMap(\.stringValue),
            LabelResultStatus.allCases.map(\.rawValue))

        // The coaching model validates events and summaries (FeatureExtractor): the document
        // states its rules, so hold them to its source.
        let model = OpenAPISpec.packageRoot.appendingPathComponent("Sources/CoachingModel")
        let events = try String(contentsOf: model.appendingPathComponent("InteractionEvent.swift"), encoding: .utf8)
        let extractor = try String(contentsOf: model.appendingPathComponent("FeatureExtractor.swift"), encoding: .utf8)
        let vector = try String(contentsOf: model.appendingPathComponent("FeatureVector.swift"), encoding: .utf8)
        XCTAssertEqual(
            enumeration("\(schemas)/InteractionEvent/properties/type/anyOf/0"), SourceScanner.enumCases("InteractionEventType", in: events))
        XCTAssertEqual(enumeration("\(schemas)/InteractionEvent/properties/field"), SourceScanner.enumCases("InteractionField", in: events))
        XCTAssertEqual(
            spec.root.oaPointer("\(schemas)/Interaction/properties/events/maxItems")?.numberValue,
            SourceScanner.integer(after: "static let maxEvents = ", in: extractor).map(Double.init))
        XCTAssertEqual(
            spec.root.oaPointer("\(schemas)/InteractionEvent/properties/t/maximum")?.numberValue,
            SourceScanner.integer(after: "static let maxSessionMs: Int64 = ", in: extractor).map(Double.init))
        let features = spec.root.oaPointer("\(schemas)/Interaction/properties/summary/properties")?.oaMembers?.map(\.key) ?? []
        XCTAssertEqual(features, SourceScanner.stringArray(after: "static let names: [String] = [", in: vector))
        XCTAssertEqual(spec.root.oaPointer("\(schemas)/Interaction/properties/summary/additionalProperties"), .bool(false))
    }

    /// The interaction rules the coaching model enforces (FeatureExtractor: first event, session
    /// cap, feature names and domains) are the document's: every summary feature's documented
    /// bounds are accepted and the values just outside them refused, by both.
    func testModelLevelInteractionRulesAreAsDocumented() throws {
        let validator = SchemaValidator(spec: spec)
        let schema = try XCTUnwrap(spec.root.oaPointer("#/components/schemas/EvaluationRequest"))
        func evaluate(_ interaction: String) throws -> (TestDaemon.Response, Bool) {
            let json =
                #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"interaction":\#(interaction)}"#
            let r = try daemon.request("POST", "/v1/evaluations", key: key, json: json)
            return (r, validator.errors(try JSONParser.parse(json), schema).isEmpty)
        }
        let maxT = try spec.int("#/components/schemas/InteractionEvent/properties/t/maximum")
        var cases: [(String, Bool)] = [
            (#"{"device":{"activeCall":true}}"#, true),
            (#"{"events":[]}"#, false),
            (#"{"events":[{"t":0,"type":"tap"}]}"#, false),
            (#"{"events":[{"t":1,"type":"sessionStart"}]}"#, false),
            (#"{"events":[{"t":0,"type":"sessionStart"},{"t":1,"type":"sessionStart"}]}"#, false),
            (#"{"events":[{"t":0,"type":"sessionStart"},{"t":\#(maxT),"type":"submit"}],"device":{"screenSharing":false}}"#, true),
            (#"{"events":[{"t":0,"type":"sessionStart"},{"t":\#(maxT + 1),"type":"submit"}]}"#, false),
            (#"{"summary":{}}"#, true),
            (#"{"summary":{"typedText":1}}"#, false),
            (#"{"source":{"kit":"insight-capture-web","version":"1.0.0+b2","platform":"web","droppedEvents":0}}"#, true),
            (#"{"summary":{},"source":{"kit":"k","version":"1","platform":"android"}}"#, true),
            (#"{"source":{"kit":"insight capture","version":"1","platform":"web"}}"#, false),
            (#"{"source":{"kit":"k","version":"\#(String(repeating: "1", count: 33))","platform":"web"}}"#, false),
            (#"{"source":{"kit":"k","version":"1","platform":"tv"}}"#, false),
            (#"{"source":{"kit":"k","version":"1"}}"#, false),
            (#"{"source":{"kit":"k","version":"1","platform":"ios","droppedEvents":-1}}"#, false)
        ]
        for (name, feature) in spec.root.oaPointer("#/components/schemas/Interaction/properties/summary/properties")?.oaMembers ?? [] {
            if let values = feature["enum"]?.oaArray?.compactMap(\.numberValue) {
                cases += values.map { (#"{"summary":{"\#(name)":\#($0)}}"#, true) }
                cases.append((#"{"summary":{"\#(name)":\#((values.max() ?? 0) + 1)}}"#, false))
                continue
            }
            let low = try XCTUnwrap(feature["minimum"]?.numberValue, name), high = try XCTUnwrap(feature["maximum"]?.numberValue, name)
            cases += [
                (#"{"summary":{"\#(name)":\#(low)}}"#, true), (#"{"summary":{"\#(name)":\#(high)}}"#, true),
                (#"{"summary":{"\#(name)":\#(low - 0.5)}}"#, false), (#"{"summary":{"\#(name)":\#(high + 0.5)}}"#, false)
            ]
            if feature["type"]?.stringValue == "integer" { cases.append((#"{"summary":{"\#(name)":\#(low + 0.5)}}"#, false)) }
        }
        for (interaction, valid) in cases {
            let (r, accepted) = try evaluate(interaction)
            XCTAssertEqual(r.status, valid ? 200 : 422, "\(interaction): \(String(decoding: r.body, as: UTF8.self))")
            XCTAssertEqual(accepted, valid, "\(interaction): the schema \(accepted ? "accepts" : "refuses") it")
            if !valid { XCTAssertEqual(r.code, "contextInvalid", interaction) }
        }
    }

    /// With the committed models loaded, answers carry values, reasons and model versions:
    /// they too match the documented schemas.
    func testModelBackedAnswersMatchTheSchemas() throws {
        let models = OpenAPISpec.packageRoot.appendingPathComponent("models").path
        let served = try TestDaemon(.live) {
            $0.modelsDirectory = models
            $0.modelsDirectoryExplicit = true
        }
        let key = try served.createCaller(roles: [.evaluate]).key
        let catalogOp = try XCTUnwrap(spec.operation("GET", "/v1/insights"))
        let catalog = try served.request("GET", "/v1/insights", key: key)
        XCTAssertEqual(catalog.status, 200)
        check(catalog, op: catalogOp, context: "catalog with models")
        let entry = try XCTUnwrap(catalog.json?["insights"]?[0])
        let newest = try XCTUnwrap(entry["newestModelVersion"]?.stringValue)
        let versions = (entry["modelVersions"]?.oaArray ?? []).compactMap { $0["version"]?.stringValue }
        XCTAssertTrue(versions.contains(newest))

        let op = try XCTUnwrap(spec.operation("POST", "/v1/evaluations"))
        let insights =
            [#"{"type":"isLikelyBeingCoached","schemaVersion":1}"#]
            + versions.prefix(2).map { #"{"type":"isLikelyBeingCoached","schemaVersion":1,"modelVersion":"\#($0)"}"# }
            + [#"{"type":"isLikelyBeingCoached","schemaVersion":1,"modelVersion":"0.0-none"}"#]
        let interactions = [
            "",
            #","interaction":{"events":[{"t":0,"type":"sessionStart"},{"t":200,"type":"proximityNear"},{"t":9000,"type":"fieldFocus","field":"payee"},{"t":9200,"type":"keyDown","field":"payee"},{"t":13400,"type":"keyDown","field":"payee"},{"t":13600,"type":"keyDown","field":"payee"},{"t":60000,"type":"submit"}],"device":{"activeCall":true,"callStartedBeforeSession":true}}"#,
            #","interaction":{"summary":{"sessionSeconds":60,"activeCall":1,"callStartedBeforeSession":1,"proximityNearShare":0.9,"segmentPauseCount":6}}"#
        ]
        var outcomes = Set<String>()
        for interaction in interactions {
            for category in ["payment", "account"] {
                let json = #"{"operationCategory":"\#(category)","insights":[\#(insights.joined(separator: ","))]\#(interaction)}"#
                let r = try served.request("POST", "/v1/evaluations", key: key, json: json)
                XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
                check(r, op: op, context: "evaluation with models \(category)\(interaction)")
                for insight in r.json?["insights"]?.oaArray ?? [] {
                    let value = insight["outcome"]?["value"]?.stringValue
                    XCTAssertEqual(value != nil, insight["reasons"] != nil, "reasons are present exactly with a value")
                    outcomes.insert(value ?? insight["outcome"]?["error"]?["code"]?.stringValue ?? "?")
                    if let model = insight["modelVersion"]?.stringValue, let newest = insight["newestModelVersion"]?.stringValue {
                        XCTAssertEqual(insight["isUsingCurrentModel"], .bool(model == newest))
                    }
                }
            }
        }
        XCTAssertTrue(outcomes.contains("unknown"), "\(outcomes)")
        XCTAssertTrue(outcomes.contains("insightVersionUnavailable"), "\(outcomes)")
    }

    /// The document's examples satisfy its schemas and are accepted by the daemon.
    func testDocumentExamplesAreValidAndAccepted() throws {
        let validator = SchemaValidator(spec: spec)
        var eventId = "", insightIds: [JSONValue] = []
        let admin = try daemon.createCaller(roles: [.admin])
        for op in spec.operations where ["POST", "PATCH", "PUT"].contains(op.method) {
            // Operations without a body (an admin reset) have no request example to check.
            guard let body = op.value["requestBody"] else { continue }
            let content = try XCTUnwrap(body["content"]?["application/json"], op.id)
            let schema = try XCTUnwrap(content["schema"], op.id)
            let examples = try XCTUnwrap(content["examples"]?.oaMembers, "\(op.id) has no request examples")
            for (name, example) in examples {
                var value = try XCTUnwrap(example["value"], "\(op.id) example \(name)")
                XCTAssertEqual(validator.errors(value, schema), [], "\(op.id) example \(name)")
                var path = op.path, headers: [String: String] = [:]
                if op.path.contains("{eventId}") {
                    path = path.replacingOccurrences(of: "{eventId}", with: eventId)
                    value = value.oaReplacing("insightIdsUsed", with: .array(insightIds))
                    // An intervention is shown after its evaluation (the example's time becomes now's),
                    // and reported on an evaluation of its own (one report each).
                    if let intervention = value.oaMembers?.first(where: { $0.key == "intervention" })?.value {
                        let now = JSONValue.string(Timestamp.format(SystemClock().now()))
                        value = value.oaReplacing("intervention", with: intervention.oaReplacing("shownAt", with: now))
                        let own = try daemon.request(
                            "POST", "/v1/evaluations", key: key,
                            json: #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}]}"#)
                        path = op.path.replacingOccurrences(of: "{eventId}", with: own.json?["eventId"]?.stringValue ?? "")
                        value = value.oaReplacing("insightIdsUsed", with: .array([]))
                    }
                }
                if op.path == "/v1/labels" { headers["Idempotency-Key"] = "example-\(name)" }
                var credential = key
                if op.path.contains("{callerId}") {
                    path = path.replacingOccurrences(of: "{callerId}", with: admin.callerId)
                    credential = admin.key
                }
                if op.value["x-required-role"]?.stringValue == "admin" { credential = admin.key }
                let r = try daemon.request(op.method, path, key: credential, json: JSONWriter.string(value), headers: headers)
                XCTAssertTrue(
                    (200..<300).contains(r.status), "\(op.id) example \(name): \(r.status) \(String(decoding: r.body, as: UTF8.self))")
                check(r, op: op, context: "\(op.id) example \(name)")
                if op.path == "/v1/evaluations", eventId.isEmpty {
                    eventId = r.json?["eventId"]?.stringValue ?? ""
                    insightIds = (r.json?["insights"]?.oaArray ?? []).compactMap { $0["insightId"] }
                }
            }
        }
        for op in spec.operations {
            for (status, response) in spec.responses(of: op) {
                for (media, content) in response["content"]?.oaMembers ?? [] {
                    guard let example = content["example"], let schema = content["schema"] else { continue }
                    XCTAssertEqual(validator.errors(example, schema), [], "\(op.id) \(status) \(media) example")
                }
            }
        }
    }

    // MARK: Links

    /// Every link names an operation of the document and parameters that operation has, gives
    /// every path parameter, and takes its values from places the source's answer has (issue 20,
    /// item 8: generic tools chain real ids through them).
    func testLinksNameRealOperationsAndParameters() throws {
        let links = spec.links
        let chains = Set(
            links.map { "\($0.source.value["operationId"]?.stringValue ?? "?") -> \($0.value["operationId"]?.stringValue ?? "?")" })
        // The catalog link lets a stateful fuzzer reach an evaluation from an operation it starts
        // chains with (schemathesis does not start one with createEvaluation: it reads `requestId`
        // as a reference to a resource no operation returns).
        let expected: Set = [
            "listInsights -> createEvaluation", "createEvaluation -> reportConsumption", "createEvaluation -> submitLabels"
        ]
        XCTAssertTrue(chains.isSuperset(of: expected), "\(chains)")
        XCTAssertEqual(LinkChecker(spec: spec).errors(), [])
    }

    /// The check above refuses a link that names an unknown operation or parameter, puts a
    /// parameter in the wrong place, leaves a path parameter unset, reads a member the answer
    /// does not have, gives a body to an operation without one, or uses an unknown expression.
    func testLinkCheckerRefusesBrokenLinks() throws {
        let link = "#/paths/~1v1~1evaluations/post/responses/200/links/reportConsumption"
        let catalogLink = "#/paths/~1v1~1insights/get/responses/200/links/createEvaluation"
        let broken: [(String, JSONValue, String)] = [
            ("\(link)/operationId", .string("reportConsumptions"), "unknown operationId reportConsumptions"),
            (
                "\(link)/parameters", .object(["path.eventIdentifier": .string("$response.body#/eventId")]),
                "no path parameter eventIdentifier"
            ),
            ("\(link)/parameters", .object(["query.eventId": .string("$response.body#/eventId")]), "no query parameter eventId"),
            ("\(link)/parameters", .object([:]), "leaves path parameter eventId unset"),
            ("\(link)/parameters", .object(["eventId": .string("$response.body#/eventIdentifier")]), "not in the response schema"),
            (
                "\(link)/requestBody", .object(["insightIdsUsed": .array([.string("{$response.body#/insights/0/id}")])]),
                "not in the response schema"
            ),
            ("\(link)/parameters", .object(["eventId": .string("$response.bodies#/eventId")]), "unsupported runtime expression"),
            ("\(link)/requestbody", .object([:]), "unknown member requestbody"),
            ("\(catalogLink)/operationId", .string("listInsights"), "a request body for listInsights, which takes none")
        ]
        for (pointer, value, expected) in broken {
            let doctored = OpenAPISpec(root: try XCTUnwrap(spec.root.oaSetting(pointer, to: value), pointer))
            let errors = LinkChecker(spec: doctored).errors()
            XCTAssertTrue(
                errors.contains { $0.contains(expected) }, "\(pointer) = \(JSONWriter.string(value)): expected '\(expected)' in \(errors)")
        }
    }

    /// Following each link from a live answer reaches its target with ids that exist: the
    /// request it builds is valid for the target and answered 2xx (a consumption report 204,
    /// labels `accepted`, an evaluation 200).
    func testLinksChainRealIdentifiers() throws {
        let checker = LinkChecker(spec: spec)
        let validator = SchemaValidator(spec: spec)
        for (index, link) in spec.links.enumerated() {
            let source = link.source
            let example = source.value["requestBody"]?["content"]?["application/json"]?["examples"]?.oaMembers?.first?.value["value"]
            let answer = try daemon.request(source.method, source.path, key: key, json: example.map { JSONWriter.string($0) })
            XCTAssertEqual(answer.status, Int(link.status), "\(link.context): the source answered \(answer.status)")
            let response = try XCTUnwrap(answer.json, link.context)
            let target = try XCTUnwrap(checker.target(of: link), link.context)
            var path = target.path
            for (name, expression) in link.value["parameters"]?.oaMembers ?? [] {
                let value = try XCTUnwrap(RuntimeExpression.evaluate(expression, response: response), "\(link.context): \(name)")
                let text = value.stringValue ?? JSONWriter.string(value)
                path = path.replacingOccurrences(of: "{\(name.split(separator: ".").last.map(String.init) ?? name)}", with: text)
            }
            var headers: [String: String] = [:]
            for parameter in spec.parameters(of: target) where parameter["in"] == .string("header") && parameter["required"] == .bool(true)
            {
                headers[parameter["name"]?.stringValue ?? ""] = "link-\(index)-\(UUID().uuidString)"
            }
            var body: String?
            if let template = link.value["requestBody"] {
                let value = try XCTUnwrap(RuntimeExpression.evaluate(template, response: response), "\(link.context): requestBody")
                let schema = try XCTUnwrap(target.value["requestBody"]?["content"]?["application/json"]?["schema"], link.context)
                XCTAssertEqual(validator.errors(value, schema), [], "\(link.context): the body it builds")
                body = JSONWriter.string(value)
            }
            let r = try daemon.request(target.method, path, key: key, json: body, headers: headers)
            XCTAssertTrue(
                (200..<300).contains(r.status),
                "\(link.context): \(target.id) answered \(r.status) \(String(decoding: r.body, as: UTF8.self))")
            check(r, op: target, context: link.context)
            for result in r.json?["results"]?.oaArray ?? [] {
                XCTAssertEqual(result["status"], .string("accepted"), "\(link.context): \(JSONWriter.string(result))")
            }
        }
    }

    // MARK: Checks

    static let transportCodes: Set<String> = [
        "malformedRequest", "requestTimeout", "payloadTooLarge", "headersTooLarge",
        "notImplemented", "httpVersionNotSupported"
    ]
    static let watchedHeaders = ["Allow", "Retry-After", "WWW-Authenticate", "Idempotent-Replayed", "Insight-Receipt"]

    /// The answer must be documented for `op`; then as `check(_:response:method:context:)`.
    private func check(_ r: TestDaemon.Response, op: OpenAPISpec.Operation, context: String) {
        guard let response = spec.responses(of: op).first(where: { $0.0 == r.status })?.1 else {
            return XCTFail("\(context): status \(r.status) is not documented for \(op.id)")
        }
        check(r, response: response, method: op.method, context: context)
    }

    /// Whether only the transport layer gives this response (all its codes are transport codes).
    static func isTransportOnly(_ response: JSONValue) -> Bool {
        let codes = Set(response["x-problem-codes"]?.oaArray?.compactMap(\.stringValue) ?? [])
        return !codes.isEmpty && codes.isSubset(of: transportCodes)
    }

    /// The answer matches the documented `response`: media type, body schema, problem code, headers.
    /// Answers to HEAD carry no body, except transport errors, which are answered before the method counts.
    private func check(_ r: TestDaemon.Response, response: JSONValue, method: String, context: String) {
        let validator = SchemaValidator(spec: spec)
        let content = response["content"]?.oaMembers ?? []
        let bodyless = method == "HEAD" && !Self.isTransportOnly(response)
        if bodyless || content.isEmpty {
            XCTAssertTrue(r.body.isEmpty, "\(context): a body where none is documented")
        } else {
            let media = r.headers["content-type"] ?? ""
            if let schema = content.first(where: { $0.key == media })?.value["schema"] {
                if media.hasPrefix("text/plain") || media.hasPrefix("text/html") {
                    // The Prometheus exposition or the console's page: a string schema; MetricsTests
                    // parses the one, ConsoleTests and e2e/console.sh check the other.
                    XCTAssertEqual(schema["type"]?.stringValue, "string", context)
                    XCTAssertFalse(r.body.isEmpty && method != "HEAD", "\(context): empty text")
                } else if let value = r.json {
                    XCTAssertEqual(validator.errors(value, schema), [], "\(context): body vs \(media) schema")
                } else {
                    XCTFail("\(context): the body is not JSON")
                }
            } else {
                XCTFail("\(context): Content-Type \(media) is not documented (\(content.map(\.key)))")
            }
        }
        if r.headers["content-type"] == "application/problem+json", let body = r.object {
            let code = r.code ?? ""
            XCTAssertTrue(spec.problemCodes.contains(code), "\(context): code \(code) is not in Problem.code")
            let listed = response["x-problem-codes"]?.oaArray?.compactMap(\.stringValue) ?? []
            XCTAssertTrue(listed.contains(code), "\(context): code \(code) not in x-problem-codes \(listed)")
            XCTAssertEqual(body["status"]?.numberValue, Double(r.status), "\(context): problem status")
            XCTAssertEqual(body["type"]?.stringValue, "urn:insightd:problem:\(code)", context)
            XCTAssertEqual(body["title"]?.stringValue, ProblemCode(rawValue: code)?.title, context)
        } else if r.status >= 400, !bodyless {
            XCTFail("\(context): an error without a problem body")
        }
        let headers = response["headers"]?.oaMembers ?? []
        for (name, header) in headers {
            let header = spec.resolve(header)
            let value = r.headers[name.lowercased()]
            if header["required"] == .bool(true) { XCTAssertNotNil(value, "\(context): documented header \(name) missing") }
            if let value, let schema = header["schema"] {
                let typed: JSONValue =
                    schema["type"]?.stringValue == "integer" ? (Double(value).map(JSONValue.number) ?? .string(value)) : .string(value)
                XCTAssertEqual(validator.errors(typed, schema), [], "\(context): header \(name): \(value)")
            }
        }
        for name in Self.watchedHeaders where r.headers[name.lowercased()] != nil {
            XCTAssertTrue(headers.contains { $0.key.lowercased() == name.lowercased() }, "\(context): header \(name) is not documented")
        }
    }

    /// Request bodies the code accepts satisfy the documented request schema, and bodies it
    /// refuses as `contextInvalid` 422 do not (unless the probe names a rule the schema cannot state).
    private func checkRequestSchema(_ probe: Probe, op: OpenAPISpec.Operation, response r: TestDaemon.Response, context: String) {
        guard let json = probe.json, case .object? = try? JSONParser.parse(json),
            let schema = op.value["requestBody"]?["content"]?["application/json"]?["schema"]
        else { return }
        let validator = SchemaValidator(spec: spec)
        let value = try! JSONParser.parse(json)
        let accepted = validator.errors(value, schema).isEmpty
        if let expected = probe.labelResults {
            let results = r.json?["results"]?.oaArray ?? []
            XCTAssertEqual(results.compactMap { $0["status"]?.stringValue }, expected.map(\.0), "\(context): per-item results")
            let itemSchema = spec.resolve(schema)["properties"]?["labels"]?["items"] ?? .null
            for (i, item) in (value["labels"]?.oaArray ?? []).enumerated() where i < expected.count {
                let valid = validator.errors(item, itemSchema).isEmpty
                if expected[i].1 {
                    XCTAssertEqual(valid, expected[i].0 != "invalid", "\(context): labels[\(i)] schema vs result \(expected[i].0)")
                } else {
                    XCTAssertTrue(valid, "\(context): labels[\(i)] now refused by the schema; mark it expressible")
                }
            }
            return
        }
        switch (r.status, probe.schema) {
        case (200..<300, _):
            XCTAssertTrue(accepted, "\(context): accepted by the code, refused by the schema: \(validator.errors(value, schema))")
        case (422, .matchesStatus) where r.code == "contextInvalid":
            XCTAssertFalse(accepted, "\(context): refused by the code (field \(r.string("field") ?? "?")), accepted by the schema")
        case (422, .notExpressible):
            XCTAssertTrue(accepted, "\(context): the schema now expresses this rule; mark the probe matchesStatus")
        default:
            break
        }
    }

    /// One request; HEAD goes through a client that expects no body.
    private func send(
        _ method: String, _ path: String, key: String?, json: String?, contentType: String? = "application/json",
        headers: [String: String] = [:], daemon: TestDaemon? = nil
    ) throws -> TestDaemon.Response {
        let daemon = daemon ?? self.daemon!
        guard method == "HEAD" else {
            return try daemon.request(method, path, key: key, json: json, contentType: contentType, headers: headers)
        }
        var head = "HEAD \(path) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
        if let key { head += "Authorization: Bearer \(key)\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        let fd = try RawHTTP.connect(port: daemon.port)
        defer { close(fd) }
        RawHTTP.send(fd, Array((head + "\r\n").utf8))
        return try XCTUnwrap(RawHTTP.parse(RawHTTP.readToEnd(fd), bodyless: true), "HEAD \(path): no answer")
    }

    /// Makes a caller's row unreadable to the credential lookup, so authenticating its key fails
    /// with a store error (503), as a broken store would.
    private func corruptCaller(_ callerId: String) throws {
        let db = try Database.open(path: daemon.service.settings.databasePath)
        try db.execute("PRAGMA ignore_check_constraints = ON")
        try db.execute("UPDATE callers SET environment = 'nowhere' WHERE caller_id = '\(callerId)'")
    }
}

/// One row of the status table.
private struct Probe {
    enum Target { case main, overloaded, cramped }
    /// Whether the request schema decides this request the way the code does.
    enum SchemaAgreement { case matchesStatus, notExpressible }

    var op: String
    var path: String
    var status: Int
    var code: String?
    var why: String
    var key: String?
    var json: String?
    var contentType: String?
    var headers: [String: String]
    var target: Target
    var schema: SchemaAgreement
    /// For label submissions: each item's expected result and whether the schema can state its rule.
    var labelResults: [(String, Bool)]?
    var replayed: Bool

    init(
        _ op: String, _ path: String, _ status: Int, _ code: String?, _ why: String, key: String?, json: String? = nil,
        contentType: String? = "application/json", headers: [String: String] = [:], target: Target = .main,
        schema: SchemaAgreement = .matchesStatus, labelResults: [(String, Bool)]? = nil, replayed: Bool = false
    ) {
        self.op = op
        self.path = path
        self.status = status
        self.code = code
        self.why = why
        self.key = key
        self.json = json
        self.contentType = contentType
        self.headers = headers
        self.target = target
        self.schema = schema
        self.labelResults = labelResults
        self.replayed = replayed
    }
}

// MARK: - Source scanning

/// Reads declarations out of Swift sources the test target cannot import.
private enum SourceScanner {
    /// The case names of `enum name`, in order (comma lists and continuation lines included).
    static func enumCases(_ name: String, in source: String) -> [String] {
        guard let start = source.range(of: "enum \(name)") else { return [] }
        var names: [String] = []
        var continuing = false
        for line in source[start.upperBound...].split(separator: "\n").dropFirst() {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.isEmpty || text.hasPrefix("//") { continue }
            var list: Substring
            if text.hasPrefix("case "), !text.contains("."), !text.contains(":") {
                list = text.dropFirst(5)[...]
            } else if continuing {
                list = text[...]
            } else {
                break
            }
            continuing = list.hasSuffix(",")
            for item in list.split(separator: ",") {
                let name = item.split(whereSeparator: { "=( ".contains($0) }).first.map(String.init) ?? ""
                if !name.isEmpty { names.append(name) }
            }
        }
        return names
    }

    /// The string literal of each `case … "literal"` line of the switch that follows `prefix`.
    static func caseStrings(after prefix: String, in source: String) -> [String] {
        guard let start = source.range(of: prefix) else { return [] }
        var strings: [String] = []
        for line in source[start.upperBound...].split(separator: "\n") {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text == "}" { break }
            guard text.hasPrefix("case "), let open = text.firstIndex(of: "\""), let close = text.lastIndex(of: "\""),
                open < close
            else { continue }
            strings.append(String(text[text.index(after: open)..<close]))
        }
        return strings
    }

    /// The integer literal (underscores allowed) right after `prefix`.
    static func integer(after prefix: String, in source: String) -> Int? {
        guard let range = source.range(of: prefix) else { return nil }
        return Int(String(source[range.upperBound...].prefix { $0.isNumber || $0 == "_" }.filter { $0 != "_" }))
    }

    /// The string literals of the array literal that starts right after `prefix`.
    static func stringArray(after prefix: String, in source: String) -> [String] {
        guard let range = source.range(of: prefix), let end = source[range.upperBound...].firstIndex(of: "]") else { return [] }
        return source[range.upperBound..<end].split(separator: "\"", omittingEmptySubsequences: false)
            .enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }
}

// MARK: - A raw HTTP client for HEAD and slow requests

private enum RawHTTP {
    static func connect(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw AppErrorForTests("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw AppErrorForTests("connect failed")
        }
        return fd
    }

    static func send(_ fd: Int32, _ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            sent += n
        }
    }

    /// Everything until the server closes (requests say `Connection: close`) or 10 s pass.
    static func readToEnd(_ fd: Int32) -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { return received }
            received.append(contentsOf: buffer[0..<n])
        }
    }

    /// The response in `bytes`; `bodyless` for answers to HEAD, which carry none.
    static func parse(_ bytes: [UInt8], bodyless: Bool) -> TestDaemon.Response? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = (0..<max(0, bytes.count - 3)).first(where: { Array(bytes[$0..<$0 + 4]) == separator }) else { return nil }
        let head = String(decoding: bytes[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = head[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let rest = Array(bytes[(end + 4)...])
        let length = Int(headers["content-length"] ?? "") ?? rest.count
        return TestDaemon.Response(status: status, headers: headers, body: bodyless ? [] : Array(rest.prefix(length)))
    }
}

private struct AppErrorForTests: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

// MARK: - Links

/// One link of the document: `name` among the links of `source`'s response `status`.
private struct OpenAPILink {
    let source: OpenAPISpec.Operation
    let status: String
    let name: String
    let value: JSONValue
    var context: String { "\(source.id) \(status) link \(name)" }
}

extension OpenAPISpec {
    /// Every link of every operation's responses, references followed.
    fileprivate var links: [OpenAPILink] {
        operations.flatMap { op in
            (op.value["responses"]?.oaMembers ?? []).flatMap { status, response in
                (resolve(response)["links"]?.oaMembers ?? []).map {
                    OpenAPILink(source: op, status: status, name: $0.key, value: resolve($0.value))
                }
            }
        }
    }

    /// The operation's parameters and those of its path item, references followed.
    fileprivate func parameters(of op: Operation) -> [JSONValue] {
        ((op.value["parameters"]?.oaArray ?? []) + (pathItem(op.path)["parameters"]?.oaArray ?? [])).map(resolve)
    }
}

/// Checks the links of the document against it: targets, parameters, expressions, bodies.
private struct LinkChecker {
    let spec: OpenAPISpec
    static let members: Set<String> = ["operationId", "operationRef", "parameters", "requestBody", "description", "server"]
    static let locations: Set<String> = ["path", "query", "header", "cookie"]

    func errors() -> [String] { spec.links.flatMap(errors(of:)) }

    /// The operation a link leads to (by `operationId` or a local `operationRef`).
    func target(of link: OpenAPILink) -> OpenAPISpec.Operation? {
        if let id = link.value["operationId"]?.stringValue {
            return spec.operations.first { $0.value["operationId"]?.stringValue == id }
        }
        guard let ref = link.value["operationRef"]?.stringValue, let target = spec.root.oaPointer(ref) else { return nil }
        return spec.operations.first { $0.value == target }
    }

    func errors(of link: OpenAPILink) -> [String] {
        let context = link.context
        var errors: [String] = []
        if link.name.isEmpty || link.name.contains(where: { !($0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0))) }) {
            errors.append("\(context): a link name must match ^[a-zA-Z0-9._-]+$")
        }
        for (member, _) in link.value.oaMembers ?? [] where !member.hasPrefix("x-") && !Self.members.contains(member) {
            errors.append("\(context): unknown member \(member)")
        }
        switch (link.value["operationId"]?.stringValue, link.value["operationRef"]?.stringValue) {
        case (nil, nil): return errors + ["\(context): names no operation (operationId or operationRef)"]
        case (.some, .some): return errors + ["\(context): has both operationId and operationRef"]
        case (let id?, nil) where target(of: link) == nil: return errors + ["\(context): unknown operationId \(id)"]
        case (nil, let ref?) where target(of: link) == nil: return errors + ["\(context): operationRef \(ref) is not an operation"]
        default: break
        }
        guard let target = target(of: link) else { return errors }
        let parameters = spec.parameters(of: target)
        var given: Set<String> = []
        for (key, expression) in link.value["parameters"]?.oaMembers ?? [] {
            let parts = key.split(separator: ".", maxSplits: 1).map(String.init)
            let (location, name) = parts.count == 2 && Self.locations.contains(parts[0]) ? (parts[0] as String?, parts[1]) : (nil, key)
            let matching = parameters.filter { $0["name"]?.stringValue == name && (location == nil || $0["in"]?.stringValue == location) }
            if matching.isEmpty {
                errors.append("\(context): \(target.id) has no \(location.map { "\($0) " } ?? "")parameter \(name)")
            }
            if let location = matching.first?["in"]?.stringValue { given.insert("\(location).\(name)") }
            errors += expressionErrors(in: expression, link: link, at: "parameters.\(key)")
        }
        for placeholder in Self.placeholders(in: target.path) where !given.contains("path.\(placeholder)") {
            errors.append("\(context): leaves path parameter \(placeholder) unset")
        }
        if let body = link.value["requestBody"] {
            if target.value["requestBody"] == nil {
                errors.append("\(context): a request body for \(target.value["operationId"]?.stringValue ?? target.id), which takes none")
            }
            errors += expressionErrors(in: body, link: link, at: "requestBody")
        }
        return errors
    }

    /// The `{name}` placeholders of a path template.
    static func placeholders(in path: String) -> [String] {
        path.split(separator: "{").dropFirst().compactMap { $0.split(separator: "}").first.map(String.init) }
    }

    /// Problems with the runtime expressions in a link value (strings anywhere inside it).
    func expressionErrors(in value: JSONValue, link: OpenAPILink, at place: String) -> [String] {
        switch value {
        case .string(let text):
            return RuntimeExpression.expressions(in: text).flatMap { expressionErrors($0, link: link, at: place) }
        case .array(let elements):
            return elements.enumerated().flatMap { expressionErrors(in: $0.element, link: link, at: "\(place)[\($0.offset)]") }
        case .object(let object):
            return object.members.flatMap { expressionErrors(in: $0.value, link: link, at: "\(place).\($0.key)") }
        default:
            return []
        }
    }

    /// One expression: `$response.body#/pointer` must lead into the source response's schema,
    /// `$request.…` and `$response.header.…` to what the source operation declares.
    func expressionErrors(_ expression: String, link: OpenAPILink, at place: String) -> [String] {
        let context = "\(link.context) \(place): \(expression)"
        let response = spec.resolve(link.source.value["responses"]?[link.status] ?? .null)
        if ["$url", "$method", "$statusCode"].contains(expression) { return [] }
        if expression == "$response.body" || expression.hasPrefix("$response.body#") {
            let schema = response["content"]?["application/json"]?["schema"]
            return schema.flatMap { self.schema(at: RuntimeExpression.pointer(expression, after: "$response.body"), in: $0) } == nil
                ? ["\(context) is not in the response schema"] : []
        }
        if expression == "$request.body" || expression.hasPrefix("$request.body#") {
            let schema = link.source.value["requestBody"]?["content"]?["application/json"]?["schema"]
            return schema.flatMap { self.schema(at: RuntimeExpression.pointer(expression, after: "$request.body"), in: $0) } == nil
                ? ["\(context) is not in the request schema"] : []
        }
        if expression.hasPrefix("$response.header.") {
            let name = expression.dropFirst("$response.header.".count).lowercased()
            return (response["headers"]?.oaMembers ?? []).contains { $0.key.lowercased() == name }
                ? [] : ["\(context): the response has no such header"]
        }
        for location in ["path", "query", "header"] where expression.hasPrefix("$request.\(location).") {
            let name = String(expression.dropFirst("$request.\(location).".count))
            return spec.parameters(of: link.source).contains { $0["name"]?.stringValue == name && $0["in"]?.stringValue == location }
                ? [] : ["\(context): \(link.source.id) has no \(location) parameter \(name)"]
        }
        return ["\(context): unsupported runtime expression"]
    }

    /// The subschema a JSON pointer leads to (`properties` by name, `items` by index, through
    /// references and the branches of `allOf`/`oneOf`/`anyOf`), or nil.
    func schema(at pointer: String?, in schema: JSONValue) -> JSONValue? {
        guard let pointer else { return nil }
        var current = schema
        for token in pointer.split(separator: "/", omittingEmptySubsequences: false).dropFirst() {
            guard let next = step(current, String(token)) else { return nil }
            current = next
        }
        return current
    }

    private func step(_ schema: JSONValue, _ token: String) -> JSONValue? {
        let schema = spec.resolve(schema)
        if Int(token) != nil, let items = schema["items"] { return items }
        if let property = schema["properties"]?[token] { return property }
        for keyword in ["allOf", "oneOf", "anyOf"] {
            for branch in schema[keyword]?.oaArray ?? [] {
                if let found = step(branch, token) { return found }
            }
        }
        return nil
    }
}

/// OpenAPI runtime expressions, as links use them: a whole string (`$response.body#/eventId`)
/// or `{…}` parts embedded in one.
private enum RuntimeExpression {
    static func expressions(in text: String) -> [String] {
        if text.hasPrefix("$") { return [text] }
        var found: [String] = []
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            let inner = rest[rest.index(after: open)..<close]
            if inner.hasPrefix("$") { found.append(String(inner)) }
            rest = rest[rest.index(after: close)...]
        }
        return found
    }

    /// The JSON pointer of `$response.body#/a/b` (empty for the whole body), or nil.
    static func pointer(_ expression: String, after prefix: String) -> String? {
        let rest = expression.dropFirst(prefix.count)
        if rest.isEmpty { return "" }
        return rest.hasPrefix("#") ? String(rest.dropFirst()) : nil
    }

    /// `value` with its `$response.body` expressions replaced by what they select in `response`
    /// (a whole-string expression keeps the selected value's type); nil if one selects nothing.
    static func evaluate(_ value: JSONValue, response: JSONValue) -> JSONValue? {
        switch value {
        case .string(let text):
            if text.hasPrefix("$") || (text.hasPrefix("{$") && text.hasSuffix("}") && expressions(in: text).count == 1) {
                let expression = text.hasPrefix("$") ? text : String(text.dropFirst().dropLast())
                guard let pointer = pointer(expression, after: "$response.body") else { return nil }
                return response.oaPointer("#" + pointer)
            }
            var result = text
            for expression in expressions(in: text) {
                guard let pointer = pointer(expression, after: "$response.body"), let part = response.oaPointer("#" + pointer) else {
                    return nil
                }
                result = result.replacingOccurrences(of: "{\(expression)}", with: part.stringValue ?? JSONWriter.string(part))
            }
            return .string(result)
        case .array(let elements):
            var evaluated: [JSONValue] = []
            for element in elements {
                guard let value = evaluate(element, response: response) else { return nil }
                evaluated.append(value)
            }
            return .array(evaluated)
        case .object(let object):
            var evaluated = JSONObject()
            for member in object.members {
                guard let value = evaluate(member.value, response: response) else { return nil }
                evaluated.append(member.key, value)
            }
            return .object(evaluated)
        default:
            return value
        }
    }
}

// MARK: - JSON helpers (TestDaemon.swift defines the subscripts, `string` and `number`)

extension JSONValue {
    /// Calls `body` with every object in the document, depth first.
    fileprivate func oaVisit(_ body: (JSONObject) -> Void) {
        switch self {
        case .object(let object):
            body(object)
            for member in object.members { member.value.oaVisit(body) }
        case .array(let elements):
            for element in elements { element.oaVisit(body) }
        default:
            break
        }
    }

    /// A copy with the value at a local JSON pointer set (a missing last member is added); nil
    /// if the pointer leads through something that is not there.
    fileprivate func oaSetting(_ pointer: String, to value: JSONValue) -> JSONValue? {
        guard pointer.hasPrefix("#") else { return nil }
        let tokens = pointer.dropFirst().split(separator: "/", omittingEmptySubsequences: true).map {
            $0.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
        }
        return oaSetting(tokens[...], to: value)
    }

    private func oaSetting(_ tokens: ArraySlice<String>, to value: JSONValue) -> JSONValue? {
        guard let key = tokens.first else { return value }
        switch self {
        case .object(let object):
            if let member = object[key] {
                guard let changed = member.oaSetting(tokens.dropFirst(), to: value) else { return nil }
                return .object(JSONObject(object.members.map { $0.key == key ? (key: key, value: changed) : $0 }))
            }
            guard tokens.count == 1 else { return nil }
            var copy = object
            copy.append(key, value)
            return .object(copy)
        case .array(var elements):
            guard let index = Int(key), elements.indices.contains(index),
                let changed = elements[index].oaSetting(tokens.dropFirst(), to: value)
            else { return nil }
            elements[index] = changed
            return .array(elements)
        default:
            return nil
        }
    }

    /// This object with member `key` set to `value` (only if it was present).
    fileprivate func oaReplacing(_ key: String, with value: JSONValue) -> JSONValue {
        guard case .object(let object) = self, object[key] != nil else { return self }
        return .object(JSONObject(object.members.map { $0.key == key ? (key: key, value: value) : $0 }))
    }
}
