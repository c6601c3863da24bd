import PostgresClient
import XCTest

/// libpq's multi-host form goes through the same reading as a single host: the password's
/// reserved characters must be escaped, every port is checked, and `target_session_attrs` may
/// only ask for the server that takes writes.
final class PostgresURLMultiHostTests: XCTestCase {
    func testTheMultiHostFormIsRead() throws {
        let url = try PostgresURL(
            parsing:
                "postgres://insightd:p%40ss%2Fw%3F@db1.internal:5432,db2.internal:5433,[fd00::7]:5432/insightd?target_session_attrs=read-write&sslmode=verify-full"
        )
        XCTAssertEqual(url.hostCount, 3)
        XCTAssertEqual(url.password, "p@ss/w?")
        XCTAssertEqual(try PostgresURL(parsing: "postgres://insightd@a,b/insightd").hostCount, 2, "ports may be left out")
        XCTAssertEqual(try PostgresURL(parsing: "postgres://insightd@a:5432/insightd").hostCount, 1)
        XCTAssertNoThrow(try PostgresURL(parsing: "postgresql://u@a:1,b:2/d?target_session_attrs=primary"))
        XCTAssertNoThrow(try PostgresURL(parsing: "postgresql://u@a:1,b:2/d?sslmode=require&connect_timeout=2"))
    }

    func testOnlyTheServerThatTakesWritesMayBeAskedFor() {
        for attributes in ["any", "read-only", "standby", "prefer-standby", "READ-WRITE", ""] {
            for url in [
                "postgres://insightd:hunter2@a:5432,b:5432/insightd?target_session_attrs=\(attributes)",
                "postgres://insightd:hunter2@a:5432/insightd?sslmode=require&target%5Fsession%5Fattrs=\(attributes)",
                "postgres://insightd:hunter2@a,b/insightd?target_session_attrs=read-write&target_session_attrs=\(attributes)"
            ] {
                XCTAssertThrowsError(try PostgresURL(parsing: url), url) { error in
                    XCTAssertEqual(error as? PostgresURL.Problem, .targetSessionAttributes, url)
                    XCTAssertFalse("\(error)".contains("hunter2"))
                }
            }
        }
    }

    func testAMultiHostURLIsRefusedAsASingleOneIs() {
        let cases: [(String, PostgresURL.Problem)] = [
            ("postgres://insightd:hun/ter2@a:5432,b:5432/insightd", .unescapedUserInformation),
            ("postgres://insightd:hun@ter2@a:5432,b:5432/insightd", .unescapedUserInformation),
            ("postgres://insightd:hunter2@a:5432,b:0/insightd", .port),
            ("postgres://insightd:hunter2@a:5432,b:65536/insightd", .port),
            ("postgres://insightd:hunter2@a:5432,b:/insightd", .port)
        ]
        for (url, problem) in cases {
            XCTAssertThrowsError(try PostgresURL(parsing: url), url) { error in
                XCTAssertEqual(error as? PostgresURL.Problem, problem, url)
                XCTAssertFalse("\(error)".contains("hun"), url)
            }
        }
    }
}
