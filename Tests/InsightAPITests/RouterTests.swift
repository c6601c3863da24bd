import XCTest

@testable import InsightAPI

final class RouterTests: XCTestCase {
    func testEveryRouteIsMatchedByItsPath() {
        let cases: [(String, Route)] = [
            ("/v1/evaluations", .evaluations),
            ("/v1/evaluations/ev-1/consumption", .consumption(eventId: "ev-1")),
            ("/v1/labels", .labels),
            ("/v1/authorization", .authorization),
            ("/v1/authorization/query", .authorizationQuery),
            ("/v1/insights", .insights),
            ("/livez", .livez),
            ("/readyz", .readyz),
            ("/v1/signing-keys", .signingKeys),
            ("/admin/v1/callers", .adminCallers),
            ("/admin/v1/callers/c-1", .adminCaller(callerId: "c-1")),
            ("/admin/v1/callers/c-1/rate-limit", .adminRateLimit(callerId: "c-1")),
            ("/admin/v1/callers/c-1/rate-limit/reset", .adminRateLimitReset(callerId: "c-1"))
        ]
        for (path, route) in cases {
            XCTAssertEqual(Route.match(path), route, path)
        }
    }

    func testNearMissesAreNotRoutes() {
        for path in [
            "", "/", "v1/evaluations", "/v1/evaluations/", "//v1/evaluations", "/v1//evaluations",
            "/V1/evaluations", "/v1/evaluations/ev-1", "/v1/evaluations//consumption",
            "/v1/evaluations/ev-1/consumption/", "/v1/labels/x", "/livez/", "/metrics", "/v1/signing-keys/", "/admin/v1/callers/",
            "/admin/v1/callers//rate-limit", "/admin/v1/callers/c-1/rate-limit/reset/x", "/v2/evaluations"
        ] {
            XCTAssertNil(Route.match(path), path)
        }
    }
}
