import Crypto
import Foundation
import XCTest

@testable import CoachingModel

final class ModelRegistryTests: XCTestCase {
    func testTheCommittedModelsLoad() throws {
        let r = try registry()
        XCTAssertEqual(r.currentVersion, "2.0")
        XCTAssertEqual(r.newestVersion, "2.0")
        XCTAssertEqual(r.versions.map(\.version), ["1.0", "2.0"])
        XCTAssertEqual(r.model(version: nil)?.version, "2.0")
        let v1 = try XCTUnwrap(r.model(version: "1.0"))
        XCTAssertFalse(v1.withdrawn)
        XCTAssertLessThan(
            v1.features.count, try XCTUnwrap(r.model(version: "2.0")).features.count,
            "1.0 uses the smaller feature set")
        XCTAssertNil(r.model(version: "3.0"))
        XCTAssertNil(r.model(version: ""))
        for model in r.versions {
            XCTAssertLessThanOrEqual(model.treeCount, 200)
            XCTAssertEqual(Set(model.thresholds.keys), Set(CoachingModelVersion.categories))
            for t in model.thresholds.values { XCTAssertLessThan(t.medium, t.high) }
        }
    }

    func testTheCurrentVersionCanBeChosenByConfiguration() throws {
        let r = try ModelRegistry.load(directory: repositoryModels, current: "1.0")
        XCTAssertEqual(r.currentVersion, "1.0")
        XCTAssertEqual(r.model(version: nil)?.version, "1.0")
        XCTAssertEqual(r.newestVersion, "2.0")
        let error = try XCTUnwrap(loadError(repositoryModels, current: "9.9"))
        XCTAssertTrue(error.description.contains("9.9"), error.description)
    }

    func testAWithdrawnVersionIsListedButMarked() throws {
        let dir = try temporaryModelsCopy()
        defer { removeTemporary(dir) }
        try edit("\(dir)/1.0/manifest.json", "\"status\": \"active\"", "\"status\": \"withdrawn\"")
        let r = try ModelRegistry.load(directory: dir)
        XCTAssertEqual(r.model(version: "1.0")?.withdrawn, true)
        XCTAssertEqual(r.model(version: "2.0")?.withdrawn, false)
        XCTAssertEqual(r.currentVersion, "2.0")

        // The current version cannot be a withdrawn one.
        try edit("\(dir)/2.0/manifest.json", "\"status\": \"active\"", "\"status\": \"withdrawn\"")
        let error = try XCTUnwrap(loadError(dir))
        XCTAssertTrue(error.description.contains("withdrawn"), error.description)
    }

    func testATamperedModelIsRefusedNamingTheFile() throws {
        let dir = try temporaryModelsCopy()
        defer { removeTemporary(dir) }
        let path = "\(dir)/2.0/model.json"
        var bytes = [UInt8](try XCTUnwrap(FileManager.default.contents(atPath: path)))
        // Change one digit of a leaf value: still valid JSON, a different model.
        let k = try XCTUnwrap(bytes.lastIndex(where: { $0 >= 0x31 && $0 <= 0x38 }))
        bytes[k] += 1
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let error = try XCTUnwrap(loadError(dir))
        XCTAssertEqual(error.path, path)
        XCTAssertTrue(error.problem.contains("sha256"), error.description)
        XCTAssertTrue(error.problem.contains("does not match"), error.description)
    }

    func testAMalformedModelWithAMatchingHashIsRefused() throws {
        let cases: [(String, String)] = [
            ("{\"format\": \"insightd.tree-ensemble/1\", ", "invalid JSON"),
            ("[1, 2, 3]", "not a JSON object"),
            ("{\"format\": \"something-else\"}", "format"),
            (
                #"{"format":"insightd.tree-ensemble/1","objective":"binary","scoreTransform":"sigmoid","featureNames":["sessionSeconds"],"trees":[{"splits":[[0,1.5,0,2,0,-1,0.1]],"leaves":[1,2]}]}"#,
                "invalid child split"
            ),
            (
                #"{"format":"insightd.tree-ensemble/1","objective":"binary","scoreTransform":"sigmoid","featureNames":["sessionSeconds"],"trees":[{"splits":[[3,1.5,0,2,-1,-2,0.1]],"leaves":[1,2]}]}"#,
                "uses feature 3"
            )
        ]
        for (content, message) in cases {
            let dir = try temporaryModelsCopy()
            defer { removeTemporary(dir) }
            let path = "\(dir)/2.0/model.json"
            let manifest = "\(dir)/2.0/manifest.json"
            let old = try XCTUnwrap(try ModelRegistry.load(directory: repositoryModels).model(version: "2.0")).modelSHA256
            try Data(content.utf8).write(to: URL(fileURLWithPath: path))
            try edit(manifest, old, SHA256.hexDigest(Array(content.utf8)))
            let error = try XCTUnwrap(loadError(dir), content)
            XCTAssertEqual(error.path, path)
            XCTAssertTrue(error.problem.contains(message), "\(message): \(error.description)")
        }
    }

    func testMalformedManifestsAreRefusedNamingTheFile() throws {
        let cases: [(String, String, String)] = [
            ("\"schemaVersion\": 1", "\"schemaVersion\": 1,,", "invalid JSON"),
            ("\"schemaVersion\": 1", "\"schemaVersion\": 2", "schemaVersion"),
            ("\"version\": \"2.0\"", "\"version\": \"2.1\"", "directory name"),
            ("\"sessionSeconds\",", "\"sessionMinutes\",", "known feature"),
            ("\"status\": \"active\"", "\"status\": \"retired\"", "status")
        ]
        for (from, to, message) in cases {
            let dir = try temporaryModelsCopy()
            defer { removeTemporary(dir) }
            let manifest = "\(dir)/2.0/manifest.json"
            try edit(manifest, from, to)
            let error = try XCTUnwrap(loadError(dir), to)
            XCTAssertEqual(error.path, manifest)
            XCTAssertTrue(error.problem.contains(message), "\(message): \(error.description)")
        }
    }

    func testBadDirectoriesAndRegistriesAreRefused() throws {
        XCTAssertTrue(try XCTUnwrap(loadError("/nonexistent/models")).description.contains("does not exist"))

        let dir = try temporaryModelsCopy()
        defer { removeTemporary(dir) }
        try Data("{\"insightType\": \"isLikelyBeingCoached\", \"current\": \"7.0\"}".utf8)
            .write(to: URL(fileURLWithPath: "\(dir)/registry.json"))
        XCTAssertTrue(try XCTUnwrap(loadError(dir)).description.contains("7.0"))
        try Data("{\"current\": ".utf8).write(to: URL(fileURLWithPath: "\(dir)/registry.json"))
        let error = try XCTUnwrap(loadError(dir))
        XCTAssertTrue(error.path.hasSuffix("registry.json"), error.description)

        // Without registry.json the newest version that is not withdrawn is current.
        try FileManager.default.removeItem(atPath: "\(dir)/registry.json")
        XCTAssertEqual(try ModelRegistry.load(directory: dir).currentVersion, "2.0")
        // A missing model file is named.
        try FileManager.default.removeItem(atPath: "\(dir)/1.0/model.json")
        XCTAssertTrue(try XCTUnwrap(loadError(dir)).path.hasSuffix("1.0/model.json"))
    }

    func testVersionsSortNumerically() {
        XCTAssertTrue(ModelRegistry.compareVersions("2.0", "10.0"))
        XCTAssertTrue(ModelRegistry.compareVersions("1.9", "1.10"))
        XCTAssertFalse(ModelRegistry.compareVersions("2.0", "2.0"))
        XCTAssertTrue(ModelRegistry.isVersionString("2.0"))
        XCTAssertFalse(ModelRegistry.isVersionString("2..0"))
        XCTAssertFalse(ModelRegistry.isVersionString(".git"))
    }

    private func edit(_ path: String, _ from: String, _ to: String) throws {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertTrue(text.contains(from), "\(path) lacks \(from)")
        try text.replacingOccurrences(of: from, with: to).write(toFile: path, atomically: false, encoding: .utf8)
    }
}
