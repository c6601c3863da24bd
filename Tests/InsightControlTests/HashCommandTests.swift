import Crypto
import DaemonTesting
import Foundation
import InsightApp
import InsightControl
import InsightDomain
import XCTest

/// `insightctl hash` on a hash key file as the daemon creates it at its first start.
final class HashCommandTests: XCTestCase {
    var directory: URL!
    var stateDirectory: String { directory.path }

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("insightctl-hash-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() { try? FileManager.default.removeItem(at: directory) }

    /// `insightctl hash` takes the identifier from standard input (`-`), so that it need never be
    /// on a command line (ps, shell history); the hashes are those of the identifier itself.
    func testInsightctlHashReadsTheIdentifierFromStandardInput() throws {
        var settings = Settings()
        settings.stateDirectory = stateDirectory
        let keyring = try KeyringFile.keyring(path: settings.resolvedHashKeyFile, createIfMissing: true, now: 1)
        let fromInput = withStandardInput("acct-STDIN-77\n") {
            captureStandardOutput {
                AdminCommand.main(
                    arguments: ["insightctl", "--state-dir", stateDirectory, "hash", "--kind", "account", "-"],
                    environment: [:])
            }
        }
        XCTAssertEqual(fromInput.status, 0, fromInput.output)
        let fromArgument = captureStandardOutput {
            AdminCommand.main(
                arguments: ["insightctl", "--state-dir", stateDirectory, "hash", "--kind", "account", "acct-STDIN-77"], environment: [:])
        }
        XCTAssertEqual(fromInput.output, fromArgument.output)
        let expected = Hex.encode(keyring.active.hash("acct-STDIN-77", kind: .account))
        XCTAssertTrue(fromInput.output.hasPrefix(expected), fromInput.output)
        let empty = withStandardInput("") {
            AdminCommand.main(arguments: ["insightctl", "--state-dir", stateDirectory, "hash", "--kind", "account", "-"], environment: [:])
        }
        XCTAssertEqual(empty, 1, "no identifier on standard input")
    }

    /// Each tenant hashes under keys of its own: the same identifier has another hash in another tenant.
    func testEachTenantHasItsOwnHashes() throws {
        var settings = Settings()
        settings.stateDirectory = stateDirectory
        let keyring = try KeyringFile.keyring(path: settings.resolvedHashKeyFile, createIfMissing: true, now: 1)
        func hash(_ tenant: String) -> (status: Int32, output: String) {
            captureStandardOutput {
                AdminCommand.main(
                    arguments: ["insightctl", "hash", "dev-1", "--kind", "device", "--tenant", tenant],
                    environment: ["INSIGHTD_STATE_DIR": stateDirectory])
            }
        }
        let acme = hash("acme")
        XCTAssertEqual(acme.status, 0)
        XCTAssertTrue(acme.output.hasPrefix(Hex.encode(keyring.forTenant("acme").active.hash("dev-1", kind: .device))), acme.output)
        XCTAssertNotEqual(acme.output, hash("default").output)
        XCTAssertEqual(hash("Not A Tenant").status, 1)
    }
}
