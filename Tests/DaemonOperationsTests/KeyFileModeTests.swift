import DaemonTesting
import Foundation
import InsightApp
import InsightControl
import XCTest

/// The TLS private key and insightctl's `--key-file` are key files like the hash key
/// (docs/operations.md "Security notes", issue 45 item 7): refused when other users, or a group
/// that is not insightd's, can read them: at start, at every reload, by --check-config, and by
/// insightctl before it sends anything.
final class KeyFileModeTests: XCTestCase {
    var directory: URL!
    var certificate: String { directory.appendingPathComponent("tls.crt").path }
    var key: String { directory.appendingPathComponent("tls.key").path }

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("keymode-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: directory) }

    func settings() -> Settings {
        var s = Settings()
        s.listenPort = 0
        s.metricsListen = nil
        s.stateDirectory = directory.appendingPathComponent("state").path
        s.modelsDirectory = directory.appendingPathComponent("models").path
        s.tlsCertificate = certificate
        s.tlsPrivateKey = key
        return s
    }

    func start(_ s: Settings) throws -> InsightService {
        try InsightService.start(
            settings: s, logger: Logger(minimumLevel: .error, sink: FileHandle(forWritingAtPath: "/dev/null")!))
    }

    /// A self-signed certificate and its key, made by openssl (as e2e/e2e.sh makes one).
    func makeCertificate() throws {
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        openssl.arguments = [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
            "-subj", "/CN=localhost", "-keyout", key, "-out", certificate
        ]
        openssl.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try openssl.run()
        openssl.waitUntilExit()
        XCTAssertEqual(openssl.terminationStatus, 0, "openssl could not make a test certificate")
    }

    func mode(_ bits: mode_t) { XCTAssertEqual(chmod(key, bits), 0) }

    func tlsProblems(_ s: Settings) -> [String] { Daemon.configurationProblems(s).filter { $0.contains("TLS") } }

    func testATLSKeyOthersCanReadIsRefusedAtStartAtReloadAndByCheckConfig() throws {
        try makeCertificate()
        let s = settings()
        let exposed = "TLS private key file (INSIGHTD_TLS_KEY) \(key) is readable by other users (mode 644); chmod 600 it"
        mode(0o644)
        XCTAssertThrowsError(try start(s)) { XCTAssertEqual("\($0)", exposed) }
        XCTAssertFalse(FileManager.default.fileExists(atPath: s.stateDirectory), "refused before anything was created")
        XCTAssertEqual(tlsProblems(s), [exposed], "--check-config")
        // A group other than insightd's (chown needs root, as SigningKeyDirectoryTests does).
        mode(0o640)
        XCTAssertEqual(chown(key, getuid(), getegid() &+ 4242), 0)
        XCTAssertThrowsError(try start(s)) {
            XCTAssertTrue("\($0)".contains("\(key) is readable by its group, which is not insightd's (mode 640)"), "\($0)")
        }
        XCTAssertEqual(chown(key, getuid(), getegid()), 0)
        XCTAssertEqual(tlsProblems(s), [], "insightd's own group may read it (a Kubernetes Secret with fsGroup)")
        mode(0o600)
        XCTAssertEqual(tlsProblems(s), [])
        let service = try start(s)
        defer { service.stop() }
        XCTAssertTrue(try service.reloadTLS())
        // Made readable while the daemon runs: the reload refuses it and keeps the key in use.
        mode(0o604)
        XCTAssertThrowsError(try service.reloadTLS()) {
            XCTAssertTrue("\($0)".contains("\(key) is readable by other users (mode 604)"), "\($0)")
        }
        mode(0o600)
        XCTAssertTrue(try service.reloadTLS())
    }

    func testInsightctlRefusesAKeyFileOthersCanReadBeforeSendingIt() throws {
        let file = directory.appendingPathComponent("admin.key").path
        XCTAssertTrue(FileManager.default.createFile(atPath: file, contents: Data("isk_not_a_real_key\n".utf8)))
        func ctl() -> (status: Int32, output: String) {
            captureStandardError {
                AdminCommand.main(
                    arguments: [
                        "insightctl", "--state-dir", directory.appendingPathComponent("state").path, "rate-limit", "show", "caller_x",
                        "--url", "http://127.0.0.1:9", "--key-file", file
                    ], environment: [:])
            }
        }
        XCTAssertEqual(chmod(file, 0o644), 0)
        let refused = ctl()
        XCTAssertEqual(refused.status, 1)
        XCTAssertEqual(refused.output, "insightctl: --key-file \(file) is readable by other users (mode 644); chmod 600 it\n")
        XCTAssertFalse(refused.output.contains("isk_not_a_real_key"), "the key is never repeated")
        // At 0600 the key is read, and the command goes on to the connection (none in this build).
        XCTAssertEqual(chmod(file, 0o600), 0)
        let read = ctl()
        XCTAssertEqual(read.status, 1)
        XCTAssertTrue(read.output.contains("needs a connection to the daemon"), read.output)
    }
}
