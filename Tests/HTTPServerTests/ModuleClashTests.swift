// Regression: libevent's event-config.h defines _GNU_SOURCE, which used to make fd_set clash
// between the C module and Glibc when a module imported both beside Foundation and Dispatch.
// This file imports them all together; it only has to compile and run.
import Dispatch
import Foundation
import Glibc
import HTTPServer
import Synchronization
import XCTest

final class ModuleClashTests: XCTestCase {
    func testFoundationDispatchAndHTTPServerImportTogether() {
        let headers = HTTPHeaders([("Content-Type", "application/json")])
        let data = Data(headers["content-type"]!.utf8)
        let group = DispatchGroup()
        let mutex = Mutex(0)
        group.enter()
        DispatchQueue.global().async {
            mutex.withLock { $0 = data.count }
            group.leave()
        }
        group.wait()
        XCTAssertEqual(mutex.withLock { $0 }, "application/json".utf8.count)
        XCTAssertEqual(HTTPProtocolError.headersTooLarge.status, 431)
    }
}
