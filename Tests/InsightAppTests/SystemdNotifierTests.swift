import Foundation
import InsightApp
import XCTest

final class SystemdNotifierTests: XCTestCase {
    func testSendsStateToNotifySocket() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("notify-\(getpid()).sock").path
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd); unlink(path) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (i, byte) in path.utf8.enumerated() { buffer[i] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        XCTAssertEqual(bound, 0)
        SystemdNotifier(environment: ["NOTIFY_SOCKET": path]).notify("READY=1")
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        XCTAssertEqual(n, 7)
        XCTAssertEqual(String(decoding: buffer.prefix(max(n, 0)), as: UTF8.self), "READY=1")
        // Without NOTIFY_SOCKET nothing is sent and nothing fails.
        SystemdNotifier(environment: [:]).notify("READY=1")
    }
}
