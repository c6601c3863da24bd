import RedisClient
import XCTest

final class RedisURLTests: XCTestCase {
    func testTheFormsOfTheURL() throws {
        XCTAssertEqual(try RedisURL("redis://cache"), RedisURL(host: "cache"))
        XCTAssertEqual(try RedisURL("REDIS://10.0.0.5:6380/2"), RedisURL(host: "10.0.0.5", port: 6380, database: 2))
        XCTAssertEqual(try RedisURL("redis://:secret@cache:6379/"), RedisURL(host: "cache", password: "secret"))
        XCTAssertEqual(
            try RedisURL("redis://insightd:p%40ss%3Aw%2Frd@cache:7000/1"),
            RedisURL(host: "cache", port: 7000, username: "insightd", password: "p@ss:w/rd", database: 1))
        XCTAssertEqual(try RedisURL("redis://[::1]:6390"), RedisURL(host: "::1", port: 6390))
        XCTAssertEqual(try RedisURL("redis://[fd00::7]"), RedisURL(host: "fd00::7"))
    }

    func testTheDescriptionLeavesThePasswordOut() throws {
        let url = try RedisURL("redis://insightd:hunter2@cache:6380/4")
        XCTAssertEqual("\(url)", "redis://insightd:***@cache:6380/4")
        XCTAssertEqual("\(try RedisURL("redis://:hunter2@[::1]"))", "redis://:***@[::1]:6379/0")
        XCTAssertEqual("\(try RedisURL("redis://cache"))", "redis://cache:6379/0")
    }

    func testABadURLIsRefusedWithoutQuotingIt() {
        let bad = [
            "http://hunter2@cache", "rediss://:hunter2@cache", "redis://", "redis://:hunter2@",
            "redis://:hunter2@cache:0", "redis://:hunter2@cache:65536", "redis://:hunter2@cache:63x",
            "redis://:hunter2@cache/db0", "redis://hunter2@cache", "redis://:hunter2@cache?timeout=1",
            "redis://:hunter2%zz@cache", "redis://:hunter2@[::1", "redis://:hunter2@cache:"
        ]
        for text in bad {
            XCTAssertThrowsError(try RedisURL(text), text) { error in
                guard case RedisError.invalidURL = error else { return XCTFail("\(text): \(error)") }
                XCTAssertFalse("\(error)".contains("hunter2"), "\(error)")
            }
        }
    }
}
