import DaemonTesting
import Foundation
import InsightApp
import InsightDomain
import InsightStorage
import XCTest

#if canImport(Glibc)
    import Glibc
#endif

/// Authentication under hostile input: one identity per request, and a cache that random key
/// ids cannot flush.
final class CredentialTests: XCTestCase {
    func testTwoAuthorizationHeadersAreRefused() throws {
        let daemon = try TestDaemon(.inProcess)
        let key = try daemon.createCaller(roles: [.evaluate]).key
        let other = try daemon.createCaller(roles: [.evaluate]).key
        for second in [other, key] {
            let r = try daemon.request("GET", "/v1/insights", key: key, headers: ["authorization": "Bearer \(second)"])
            XCTAssertEqual(r.status, 400)
            XCTAssertEqual(r.code, "malformedRequest")
            XCTAssertEqual(r.string("field"), "Authorization")
        }
        XCTAssertEqual(try daemon.request("GET", "/v1/insights", key: key).status, 200)
    }

    /// A real caller's key stays cached while a flood of random key ids passes: the key is
    /// revoked in the store behind the cache's back, so a lookup after a flushed cache would
    /// answer 401.
    func testAFloodOfRandomKeyIdsDoesNotFlushTheCache() throws {
        // Pipelined on one connection: 12,000 requests in a few round trips.
        let daemon = try TestDaemon(.live) { $0.credentialCacheSeconds = 60 }
        let (_, key) = try daemon.createCaller(roles: [.evaluate])
        XCTAssertEqual(try daemon.request("GET", "/v1/insights", key: key).status, 200)
        let db = try Database.open(path: daemon.service.settings.databasePath)
        try CallerRegistry(db).revokeKey(keyId: try XCTUnwrap(APIKey(token: key)).keyId, now: 1)

        let flood = 12_000
        var requests: [UInt8] = []
        for _ in 0..<flood {
            let token = APIKey.generate().token
            requests += Array("GET /v1/insights HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n\r\n".utf8)
        }
        XCTAssertEqual(try daemon.pipeline(requests, expecting: flood).filter { $0 == 401 }.count, flood)
        XCTAssertEqual(
            try daemon.request("GET", "/v1/insights", key: key).status, 200,
            "the real caller's cached key was flushed by random key ids")
    }
}

extension TestDaemon {
    /// Sends `bytes` (pipelined requests) on one connection and returns the statuses of the
    /// first `count` responses.
    func pipeline(_ bytes: [UInt8], expecting count: Int) throws -> [Int] {
        let fd = try connectedSocket(receiveTimeout: 30)
        defer { close(fd) }
        // Written by a thread of its own: the server stops reading while its answers wait to be read.
        let writer = Thread {
            var sent = 0
            while sent < bytes.count {
                let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { break }
                sent += n
            }
        }
        writer.start()
        var statuses: [Int] = []
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while statuses.count < count {
            let n = recv(fd, &buffer, buffer.count, 0)
            guard n > 0 else { throw AppError("connection ended after \(statuses.count) responses") }
            pending += buffer[0..<n]
            while let response = Self.parse(pending) {
                statuses.append(response.status)
                let headEnd = Self.headerLength(pending)
                pending.removeFirst(headEnd + response.body.count)
            }
        }
        return statuses
    }

    /// The length of the head (through the blank line) at the start of `bytes`.
    static func headerLength(_ bytes: [UInt8]) -> Int {
        let separator: [UInt8] = [13, 10, 13, 10]
        return (0..<max(0, bytes.count - 3)).first { Array(bytes[$0..<$0 + 4]) == separator }.map { $0 + 4 } ?? 0
    }
}
