import DaemonTesting
import Foundation
import InsightControl
import JSON
import XCTest

/// `insightctl` on a real SQLite store in a temporary state directory (issue 40, item 4): it
/// never creates a store unless asked, changes a caller's quota and says what it changed, keeps
/// caller names unique within a tenant, and prints one command's help.
final class InsightctlTests: XCTestCase {
    var directory: URL!
    var stateDirectory: String { directory.appendingPathComponent("state").path }
    var database: String { directory.appendingPathComponent("state/insightd.db").path }

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("insightctl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    func ctl(_ words: String...) -> (status: Int32, output: String) {
        captureStandardOutput { AdminCommand.main(arguments: ["insightctl", "--state-dir", stateDirectory] + words, environment: [:]) }
    }

    func testAStateDirectoryWithoutAStoreIsRefusedUnlessAsked() throws {
        for words in [
            ["callers", "list"], ["callers", "create", "--name", "a", "--roles", "evaluate", "--environment", "sandbox"],
            ["migrate"], ["keys", "list", "--caller", "x"], ["tenants", "list"], ["purge", "--older-than", "30"]
        ] {
            XCTAssertEqual(
                captureStandardOutput {
                    AdminCommand.main(arguments: ["insightctl", "--state-dir", stateDirectory] + words, environment: [:])
                }.status, 1, "\(words)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: database), "\(words) created a store")
        }
        let created = ctl("--create", "callers", "create", "--name", "app", "--roles", "evaluate", "--environment", "sandbox", "--json")
        XCTAssertEqual(created.status, 0)
        XCTAssertTrue(FileManager.default.fileExists(atPath: database))
        XCTAssertEqual(ctl("callers", "list").status, 0, "the store exists now")
    }

    func testInitCreatesTheStoreAndSaysSo() {
        let first = ctl("init")
        XCTAssertEqual(first.status, 0)
        XCTAssertTrue(first.output.hasPrefix("created the store at \(database); applied: 0001_initial"), first.output)
        let again = ctl("init")
        XCTAssertEqual(again.output, "the store at \(database) exists; schema is up to date\n")
    }

    func testCallersUpdateChangesRateAndBurstAndSaysWhat() throws {
        XCTAssertEqual(ctl("init").status, 0)
        let created = ctl("callers", "create", "--name", "app", "--roles", "evaluate", "--environment", "sandbox", "--json")
        let callerId = try XCTUnwrap(JSONParser.parse(Array(created.output.utf8))["callerId"]?.stringValue)
        let updated = ctl("callers", "update", callerId, "--rate", "5", "--burst", "7")
        XCTAssertEqual(updated.status, 0)
        XCTAssertTrue(updated.output.contains("changed: rate 50/s -> 5/s; burst 100 -> 7"), updated.output)
        let shown = try JSONParser.parse(Array(ctl("callers", "show", callerId, "--json").output.utf8))
        XCTAssertEqual(shown["rate"]?.numberValue, 5)
        XCTAssertEqual(shown["burst"]?.numberValue, 7)
        XCTAssertTrue(ctl("callers", "update", callerId, "--burst", "7").output.contains("nothing changed"))
        // Capped at the tenant's ceiling, which it says.
        XCTAssertEqual(ctl("tenants", "update", "default", "--max-rate", "2").status, 0)
        let capped = ctl("callers", "update", callerId, "--rate", "10")
        XCTAssertTrue(capped.output.contains("changed: rate 2/s -> 2/s (10/s asked: the tenant's ceiling)"), capped.output)
        XCTAssertEqual(try JSONParser.parse(Array(ctl("callers", "show", callerId, "--json").output.utf8))["rate"]?.numberValue, 2)
        XCTAssertEqual(ctl("tenants", "update", "default", "--max-rate", "none").status, 0)
        XCTAssertTrue(ctl("callers", "update", callerId, "--rate", "3").output.contains("changed: rate 2/s -> 3/s"))
        XCTAssertEqual(ctl("callers", "update", callerId).status, 1, "nothing asked")
        XCTAssertEqual(ctl("callers", "update", callerId, "--rate", "0").status, 1)
        XCTAssertEqual(ctl("callers", "update", "caller_nobody", "--rate", "3").status, 1)
    }

    func testCallerNamesAreUniqueWithinATenant() {
        XCTAssertEqual(ctl("init").status, 0)
        let create = { (tenant: String) in
            self.ctl("callers", "create", "--name", "payments", "--tenant", tenant, "--roles", "evaluate", "--environment", "production")
                .status
        }
        XCTAssertEqual(create("default"), 0)
        XCTAssertEqual(create("default"), 1, "a second caller named payments in tenant default")
        XCTAssertEqual(create("acme"), 0, "another tenant may use the name")
        XCTAssertEqual(ctl("callers", "list", "--json").output.components(separatedBy: "\"payments\"").count - 1, 2)
    }

    func testHelpPerCommand() {
        let callers = captureStandardOutput { AdminCommand.main(arguments: ["insightctl", "callers", "--help"], environment: [:]) }
        XCTAssertEqual(callers.status, 0)
        XCTAssertTrue(callers.output.contains("callers create --name NAME"), callers.output)
        XCTAssertTrue(callers.output.contains("callers update CALLER_ID [--rate R] [--burst B]"), callers.output)
        XCTAssertFalse(callers.output.contains("hash-keys"), "the whole page: \(callers.output)")
        XCTAssertFalse(callers.output.contains("tenants list"))
        let rate = captureStandardOutput { AdminCommand.main(arguments: ["insightctl", "rate-limit", "reset", "--help"], environment: [:]) }
        XCTAssertTrue(rate.output.contains("rate-limit reset CALLER_ID"), rate.output)
        XCTAssertFalse(rate.output.contains("callers create"))
        let whole = captureStandardOutput { AdminCommand.main(arguments: ["insightctl", "--help"], environment: [:]) }
        XCTAssertTrue(whole.output.contains("hash-keys") && whole.output.contains("callers create"))
    }
}
