import DaemonTesting
import Foundation
import InsightDomain
import XCTest

@testable import InsightAPI

/// `Expect: 100-continue` against a live daemon: `100 Continue` only for a request that gets
/// past its route, method and key; anything else gets its final answer at once and the
/// connection closes (the body, if the client sends it anyway, is never read as a request).
final class ContinueDecisionTests: XCTestCase {
    static let body = #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}]}"#

    static func head(_ method: String, _ path: String, key: String?, length: Int = body.utf8.count) -> String {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        if let key { head += "Authorization: Bearer \(key)\r\n" }
        return head + "Expect: 100-continue\r\nContent-Length: \(length)\r\n\r\n"
    }

    func testABadKeyGets401WithoutContinue() throws {
        let daemon = try TestDaemon(.live)
        for key in [nil, "not-a-key", "ik_0123456789abcdef.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"] {
            let connection = try WireConnection(port: daemon.port)
            try connection.send(Self.head("POST", "/v1/evaluations", key: key))
            let answer = try connection.readResponse()
            XCTAssertEqual(answer.status, 401, "key \(key ?? "none"): not the final answer first")
            XCTAssertEqual(answer.code, "unauthorized")
            XCTAssertEqual(answer.headers["www-authenticate"], #"Bearer realm="insightd""#)
            XCTAssertEqual(answer.headers["connection"], "close")
            // A body sent anyway is discarded, and the connection ends.
            try? connection.send(Self.body)
            XCTAssertTrue(try connection.readsEndOfStream())
        }
        // Counted and logged like any other answer.
        let metrics = try daemon.scrape()
        XCTAssertTrue(
            metrics.contains(#"insightd_http_request_duration_seconds_count{route="/v1/evaluations",method="POST",status="401"} 3"#),
            metrics)
    }

    func testAGoodKeyGetsContinueThenTheAnswer() throws {
        let daemon = try TestDaemon(.live)
        let key = try daemon.createCaller(roles: [.evaluate]).key
        let connection = try WireConnection(port: daemon.port)
        try connection.send(Self.head("POST", "/v1/evaluations", key: key))
        XCTAssertEqual(try connection.readResponse().status, 100)
        try connection.send(Self.body)
        let answer = try connection.readResponse()
        XCTAssertEqual(answer.status, 200)
        XCTAssertNotNil(answer.string("eventId"))
        XCTAssertNil(answer.headers["connection"], "the connection stays open for the next request")
    }

    func testAKeyWithoutTheRoleGets403AndUnknownPathsAndMethodsTheirAnswers() throws {
        let daemon = try TestDaemon(.live)
        let labelsOnly = try daemon.createCaller(roles: [.labels]).key
        for (method, path, status, code) in [
            ("POST", "/v1/evaluations", 403, "forbidden"), ("POST", "/v2/nothing", 404, "notFound"),
            ("PUT", "/v1/evaluations", 405, "methodNotAllowed")
        ] {
            let connection = try WireConnection(port: daemon.port)
            try connection.send(Self.head(method, path, key: labelsOnly))
            let answer = try connection.readResponse()
            XCTAssertEqual(answer.status, status, "\(method) \(path)")
            XCTAssertEqual(answer.code, code, "\(method) \(path)")
            XCTAssertTrue(try connection.readsEndOfStream(), "\(method) \(path)")
        }
    }

    /// `Route.access` must say what each endpoint's own `authenticate` call requires: for every
    /// route, a request with the expectation is refused (or let through) exactly as the same
    /// request without it is.
    func testEveryRouteDecidesAsItsEndpointAuthenticates() throws {
        let daemon = try TestDaemon(.live)
        var keys: [Role: String] = [:]
        for role in Role.allCases {
            keys[role] = try daemon.createCaller(roles: Set(Role.allCases).subtracting([role])).key
        }
        let routes: [Route] = [
            .evaluations, .consumption(eventId: "e"), .labels, .authorization, .authorizationQuery, .insights,
            .livez, .readyz, .adminCallers, .adminCaller(callerId: "c"),
            .adminRateLimit(callerId: "c"), .adminRateLimitReset(callerId: "c")
        ]
        for route in routes {
            let path = route.name.replacingOccurrences(of: "{eventId}", with: "e").replacingOccurrences(of: "{callerId}", with: "c")
            XCTAssertEqual(Route.match(path), route)
            let method = route.allowedMethods[0]
            // Without a key, and with a key holding every role but one.
            var cases: [(key: String?, refusal: Int?)] = []
            switch route.access {
            case .open: cases = [(nil, nil)]
            case .anyCaller: cases = [(nil, 401)] + Role.allCases.map { (keys[$0], nil) }
            case .role(let role): cases = [(nil, 401), (keys[role], 403)]
            case .anyRole: cases = [(nil, 401)]
            }
            for (key, refusal) in cases {
                let connection = try WireConnection(port: daemon.port)
                try connection.send(Self.head(method, path, key: key, length: 2))
                let first = try connection.readResponse()
                let plain = try daemon.request(method, path, key: key, json: "{}")
                let label = "\(method) \(path) key \(key == nil ? "none" : "lacking a role")"
                if let refusal {
                    XCTAssertEqual(first.status, refusal, label)
                    XCTAssertEqual(plain.status, refusal, "\(label): the endpoint answers otherwise")
                } else {
                    XCTAssertEqual(first.status, 100, label)
                    XCTAssertFalse([401, 403].contains(plain.status), "\(label): the endpoint refuses it (\(plain.status))")
                }
            }
        }
    }
}
