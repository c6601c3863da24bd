import HTTPServer
import XCTest

@testable import InsightAPI

/// The request headers read on every call, read from bytes, against the plain definitions they
/// replaced.
final class HeaderReadingTests: XCTestCase {
    /// The reading `bearerToken` keeps: split once at a space (empty pieces dropped), the
    /// scheme compared without case, the rest trimmed of spaces and tabs.
    static func referenceBearerToken(_ header: String) -> String? {
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return String(parts[1].trimmingOWS())
    }

    func testBearerTokenReadsAsTheSplitDid() {
        let cases = [
            "Bearer ik_abc.def", "bearer ik_abc", "BEARER ik_abc", "BeArEr\tik_abc", "Bearer", "Bearer ",
            "Bearer  ", "Bearer \t ", "  Bearer ik_abc", "Bearer   ik_abc  ", "Bearer ik_abc\t", "Bearer a b",
            "Basic ik_abc", "Bearerx ik_abc", "Beare ik_abc", "", " ", "Bearer é", "Béarer ik", "Bearer\u{0} x",
            "Bearer ik_🙂", "bearer\t", "Bearer\tik_abc def", "\tBearer ik"
        ]
        for header in cases {
            XCTAssertEqual(Authenticator.bearerToken(header), Self.referenceBearerToken(header), "\(header.debugDescription)")
        }
        XCTAssertEqual(Authenticator.bearerToken("Bearer ik_abc"), "ik_abc")
        XCTAssertNil(Authenticator.bearerToken("Token ik_abc"))
    }

    func testContentTypeFastPathAgreesWithTheGeneralReading() {
        let json = [
            "application/json", "Application/JSON", "APPLICATION/JSON", "application/json; charset=utf-8",
            "application/json;charset=\"UTF-8\"", " application/json ", "application/problem+json",
            "application/json; charset=utf8", "application/json; version=2"
        ]
        let notJSON = [
            "application/jsonx", "application/jso", "text/json", "application/json; charset=latin1",
            "application/xml", "", "application/json\u{0}", "applicatioN/jsoñ", "multipart/form-data"
        ]
        for value in json { XCTAssertTrue(InsightAPIHandler.isJSON(value), value.debugDescription) }
        for value in notJSON { XCTAssertFalse(InsightAPIHandler.isJSON(value), value.debugDescription) }
    }

    /// The RateLimit fields are written digit by digit; they must read as interpolation wrote them.
    func testRateLimitItemsReadAsInterpolationWroteThem() {
        let values = [0, 1, 9, 10, 99, 100, 12_345, 999_999, -1, -10, Int.max, Int.min, 1 << 40]
        for a in values {
            for b in values {
                XCTAssertEqual(Throttling.item("\"caller\";q=", a, ";w=", b), "\"caller\";q=\(a);w=\(b)")
            }
        }
    }
}
