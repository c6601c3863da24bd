import DaemonTesting
import Foundation
import InsightControl
import JSON
import XCTest

/// `insightctl interventions add | list | retire` on a real SQLite store (docs/operations.md
/// "Interventions"): per tenant and environment, entries that never change, retirement kept.
final class InterventionCommandTests: XCTestCase {
    var directory: URL!
    var stateDirectory: String { directory.appendingPathComponent("state").path }

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("insightctl-iv-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    func ctl(_ words: String...) -> (status: Int32, output: String) {
        captureStandardOutput { AdminCommand.main(arguments: ["insightctl", "--state-dir", stateDirectory] + words, environment: [:]) }
    }

    func testAddListRetirePerTenantAndEnvironment() throws {
        XCTAssertEqual(ctl("init").status, 0)
        let add = [
            "interventions", "add", "warn-romance", "--version", "2", "--kind", "scamWarning", "--scam-types", "romance,investment",
            "--description", "Romance scam: someone you met online asks for money", "--tenant", "acme"
        ]
        var r = captureStandardOutput {
            AdminCommand.main(arguments: ["insightctl", "--state-dir", stateDirectory] + add, environment: [:])
        }
        XCTAssertEqual(r.status, 0)
        XCTAssertEqual(r.output, "template warn-romance version 2 (scamWarning) of tenant acme, production: added\n")
        r = captureStandardOutput { AdminCommand.main(arguments: ["insightctl", "--state-dir", stateDirectory] + add, environment: [:]) }
        XCTAssertTrue(r.output.hasSuffix("already there, unchanged\n"), r.output)
        r = ctl(
            "interventions", "add", "warn-romance", "--version", "2", "--kind", "scamWarning", "--scam-types", "romance",
            "--description", "Other words", "--tenant", "acme")
        XCTAssertEqual(r.status, 1, "other content under the same version")
        let listed = try JSONParser.parse(Array(ctl("interventions", "list", "--tenant", "acme", "--json").output.utf8))
        XCTAssertEqual(listed[0]?["scamTypes"]?.arrayValue?.compactMap(\.stringValue), ["investment", "romance"])
        XCTAssertEqual(listed[0]?["retiredAt"], .null)
        XCTAssertEqual(ctl("interventions", "list", "--json").output, "[]\n", "tenant default's catalogue")
        XCTAssertEqual(ctl("interventions", "list", "--tenant", "acme", "--environment", "sandbox", "--json").output, "[]\n")
        XCTAssertEqual(ctl("interventions", "retire", "warn-romance", "--version", "2").status, 1, "another tenant's")
        r = ctl("interventions", "retire", "warn-romance", "--version", "2", "--tenant", "acme", "--json")
        XCTAssertEqual(r.status, 0)
        XCTAssertNotNil(try JSONParser.parse(Array(r.output.utf8))["retiredAt"]?.stringValue)
    }

    func testBadValuesAreRefused() {
        XCTAssertEqual(ctl("init").status, 0)
        for bad in [
            ["-x", "--version", "1", "--kind", "scamWarning", "--scam-types", "romance", "--description", "d"],
            ["w", "--version", "0", "--kind", "scamWarning", "--scam-types", "romance", "--description", "d"],
            ["w", "--version", "1", "--kind", "none", "--scam-types", "romance", "--description", "d"],
            ["w", "--version", "1", "--kind", "scamWarning", "--scam-types", "romance,lottery", "--description", "d"],
            ["w", "--version", "1", "--kind", "scamWarning", "--scam-types", "romance,romance", "--description", "d"],
            ["w", "--version", "1", "--kind", "scamWarning", "--scam-types", "romance", "--description", "a\nb"],
            ["w", "--version", "1", "--kind", "scamWarning", "--scam-types", "romance", "--description", "d", "--environment", "test"]
        ] {
            let r = captureStandardOutput {
                AdminCommand.main(
                    arguments: ["insightctl", "--state-dir", stateDirectory, "interventions", "add"] + bad, environment: [:])
            }
            XCTAssertEqual(r.status, 1, "\(bad)")
        }
        XCTAssertEqual(ctl("interventions", "list", "--json").output, "[]\n")
    }
}
