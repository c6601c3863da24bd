import Foundation
import InsightControl
import XCTest

/// `insightctl models list | set-current | withdraw` on a copy of models/, without a daemon (the
/// changes served by a live daemon: InsightAPITests' ModelsCommandTests).
final class ModelsCommandTests: XCTestCase {
    /// The repository's models/.
    static let modelsDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("models").path

    var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("models-\(UUID().uuidString)")
        try FileManager.default.copyItem(atPath: Self.modelsDirectory, toPath: directory.path)
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(at: directory) }

    func insightctl(_ words: String...) -> Int32 {
        AdminCommand.main(arguments: ["insightctl"] + words + ["--models-dir", directory.path], environment: [:])
    }

    func testADirectoryTheDaemonWouldRefuseIsLeftAlone() throws {
        // A broken version directory: the whole directory no longer loads, so nothing is changed.
        let registryBefore = try Data(contentsOf: directory.appendingPathComponent("registry.json"))
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("3.0"), withIntermediateDirectories: true)
        try Data("{}".utf8).write(to: directory.appendingPathComponent("3.0/manifest.json"))
        XCTAssertEqual(insightctl("models", "set-current", "1.0"), 1)
        XCTAssertEqual(insightctl("models", "list"), 1)
        XCTAssertEqual(try Data(contentsOf: directory.appendingPathComponent("registry.json")), registryBefore)
    }
}
