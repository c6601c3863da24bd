import Foundation
import JSON
import XCTest

@testable import CoachingModel

/// Shadow versions (`ModelRegistry.load(shadow:)`) and the reference distribution of a
/// manifest (`scoreReference`, drift), each refusal with a message naming what is wrong.
final class ShadowAndReferenceTests: XCTestCase {
    func shadowError(_ directory: String, _ shadow: [String], current: String? = nil) -> ModelLoadError? {
        do throws(ModelLoadError) {
            _ = try ModelRegistry.load(directory: directory, current: current, shadow: shadow)
            return nil
        } catch {
            return error
        }
    }

    func testAShadowExistsIsNotWithdrawnAndIsNotCurrent() throws {
        let r = try ModelRegistry.load(directory: repositoryModels, shadow: ["1.0"])
        XCTAssertEqual(r.shadows.map(\.version), ["1.0"])
        XCTAssertEqual(r.currentVersion, "2.0")
        XCTAssertEqual(try ModelRegistry.load(directory: repositoryModels).shadows.count, 0)

        for (shadow, current, expected) in [
            (["3.0"], nil, "shadow version 3.0 is not among the versions found (1.0, 2.0)"),
            (["2.0"], nil, "shadow version 2.0 is the current version"),
            (["2.0"], "2.0", "shadow version 2.0 is the current version"),
            (["1.0", "1.0"], nil, "shadow version 1.0 is named twice"),
            (["1.0", "1.0", "1.0", "1.0", "1.0"], nil, "at most 4 shadow versions, 5 given")
        ] as [([String], String?, String)] {
            let error = try XCTUnwrap(shadowError(repositoryModels, shadow, current: current), "\(shadow)")
            XCTAssertEqual(error.problem, expected)
        }

        let dir = try temporaryModelsCopy()
        defer { removeTemporary(dir) }
        try edit("\(dir)/1.0/manifest.json", "\"status\": \"active\"", "\"status\": \"withdrawn\"")
        XCTAssertEqual(shadowError(dir, ["1.0"])?.problem, "shadow version 1.0 is withdrawn")
    }

    func testTheCommittedVersionsCarryAReferencePerCategory() throws {
        for model in try ModelRegistry.load(directory: repositoryModels).versions {
            let reference = try XCTUnwrap(model.reference, model.version)
            XCTAssertEqual(Set(reference.bins.keys), Set(CoachingModelVersion.categories))
            for (category, bins) in reference.bins {
                XCTAssertEqual(bins.shares.count, 10, "\(model.version) \(category): deciles")
                XCTAssertEqual(bins.shares.reduce(0, +), 1, accuracy: 0.001)
                for share in bins.shares { XCTAssertEqual(share, 0.1, accuracy: 0.01, "\(model.version) \(category)") }
            }
        }
    }

    /// The bin `assess` gives is the number of edges at or below the raw score, on every fixture
    /// row of every version (counted here by a plain scan).
    func testAssessmentsGiveTheBinOfTheirRawScore() throws {
        for model in try registry(underTest: true).versions {
            let reference = try XCTUnwrap(model.reference)
            var seen = Set<Int>()
            for row in try FixtureParityTests.parseFixtures(model.version) {
                let vector = FeatureVector(values: row.features)
                let raw = model.rawScore(vector)
                let expected = try XCTUnwrap(reference.bins[row.category]).edges.filter { $0 <= raw }.count
                XCTAssertEqual(model.assess(vector, category: row.category).scoreBin, expected)
                seen.insert(expected)
            }
            XCTAssertEqual(seen, Set(0..<10), "\(model.version): the fixtures reach every bin")
        }
        let edges = ScoreReference.Bins(edges: [-1, 0, 2], shares: [0.25, 0.25, 0.25, 0.25])
        XCTAssertEqual([-5, -1, -0.5, 0, 1.99, 2, 9].map(edges.bin(of:)), [0, 1, 1, 2, 2, 3, 3])
    }

    /// The committed versions carry the web profile's own shares over the same bins, and its
    /// thresholds: a request from the web kit is judged with those, one without a source (or
    /// from a platform without its own) with the category's.
    func testTheWebProfileHasItsOwnSharesAndThresholds() throws {
        for model in try ModelRegistry.load(directory: repositoryModels).versions {
            let reference = try XCTUnwrap(model.reference, model.version)
            for (category, bins) in reference.bins {
                let web = try XCTUnwrap(bins.platformShares["web"], "\(model.version) \(category)")
                XCTAssertEqual(web.count, bins.shares.count)
                XCTAssertEqual(web.reduce(0, +), 1, accuracy: 0.001)
                XCTAssertEqual(bins.shares(for: "web"), web)
                XCTAssertEqual(bins.shares(for: "ios"), bins.shares)
                XCTAssertEqual(bins.shares(for: nil), bins.shares)
            }
            XCTAssertEqual(Set(model.platformThresholds.keys), ["web"])
            for category in CoachingModelVersion.categories {
                XCTAssertEqual(model.thresholds(category: category, platform: "web"), model.platformThresholds["web"]?[category])
                XCTAssertEqual(model.thresholds(category: category, platform: "android"), model.thresholds[category])
                XCTAssertEqual(model.thresholds(category: category, platform: nil), model.thresholds[category])
            }
        }
    }

    /// A manifest's platform thresholds are checked as the category ones are; absent, every
    /// platform takes the category's.
    func testPlatformThresholdsAreCheckedOrAbsent() throws {
        let cases: [(Any?, String?)] = [
            (nil, nil),
            (["tv": [:]], "platformThresholds names an unknown platform tv"),
            ("web", "platformThresholds is not an object"),
            (
                ["web": ["payment": ["medium": ["raw": 1], "high": ["raw": 2]]]],
                "platformThresholds.web.account lacks medium.raw and high.raw numbers"
            )
        ]
        for (value, expected) in cases {
            let dir = try temporaryModelsCopy()
            defer { removeTemporary(dir) }
            let url = URL(fileURLWithPath: "\(dir)/1.0/manifest.json")
            var manifest = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
            manifest["platformThresholds"] = value
            try JSONSerialization.data(withJSONObject: manifest).write(to: url)
            guard let expected else {
                let model = try XCTUnwrap(try ModelRegistry.load(directory: dir).model(version: "1.0"))
                XCTAssertEqual(model.platformThresholds.count, 0)
                XCTAssertEqual(model.thresholds(category: "payment", platform: "web"), model.thresholds["payment"])
                continue
            }
            let error = try XCTUnwrap(loadError(dir), expected)
            XCTAssertEqual(error.problem, expected)
        }
    }

    func testAManifestWithoutAReferenceLoadsWithNone() throws {
        let dir = try temporaryModelsCopy()
        defer { removeTemporary(dir) }
        try rewriteReference(dir, nil)
        let r = try ModelRegistry.load(directory: dir)
        XCTAssertNil(r.model(version: "1.0")?.reference)
        XCTAssertNotNil(r.model(version: "2.0")?.reference)
        XCTAssertNil(
            r.model(version: "1.0")?.assess(
                FeatureVector(values: [Double](repeating: .nan, count: FeatureVector.names.count)),
                category: "payment"
            ).scoreBin)
    }

    func testAMalformedReferenceIsRefusedNamingTheProblem() throws {
        let good: [String: Any] = ["edges": [-1, 1], "shares": [0.2, 0.5, 0.3]]
        let cases: [([String: Any], String)] = [
            (["scale": "probability", "bins": ["payment": good]], "scoreReference lacks scale \"raw\" and a bins object"),
            (["scale": "raw"], "scoreReference lacks scale \"raw\" and a bins object"),
            (["scale": "raw", "bins": ["shopping": good]], "scoreReference names an unknown category shopping"),
            (["scale": "raw", "bins": ["payment": ["edges": [-1, 1]]]], "scoreReference.payment lacks edges and shares lists"),
            (
                ["scale": "raw", "bins": ["payment": ["edges": [1, -1], "shares": [0.2, 0.5, 0.3]]]],
                "scoreReference.payment.edges are not strictly increasing numbers"
            ),
            (
                ["scale": "raw", "bins": ["payment": ["edges": [1, 1], "shares": [0.2, 0.5, 0.3]]]],
                "scoreReference.payment.edges are not strictly increasing numbers"
            ),
            (
                ["scale": "raw", "bins": ["payment": ["edges": [-1, "x"], "shares": [0.2, 0.5, 0.3]]]],
                "scoreReference.payment.edges are not strictly increasing numbers"
            ),
            (
                ["scale": "raw", "bins": ["payment": ["edges": [-1, 1], "shares": [0.5, 0.5]]]],
                "scoreReference.payment.shares are not one more than the edges (at most 100), each in [0, 1], adding up to 1"
            ),
            (
                ["scale": "raw", "bins": ["payment": ["edges": [-1, 1], "shares": [0.2, 0.5, 0.5]]]],
                "scoreReference.payment.shares are not one more than the edges (at most 100), each in [0, 1], adding up to 1"
            ),
            (
                ["scale": "raw", "bins": ["payment": ["edges": [-1, 1], "shares": [-0.2, 0.7, 0.5]]]],
                "scoreReference.payment.shares are not one more than the edges (at most 100), each in [0, 1], adding up to 1"
            ),
            (
                ["scale": "raw", "bins": ["payment": ["edges": [-1, 1], "shares": [0.2, 0.5, 0.3], "platformShares": ["web": [0.5, 0.5]]]]],
                "scoreReference.payment.platformShares.web are not shares of the edges' bins for a known platform"
            ),
            (
                [
                    "scale": "raw",
                    "bins": ["payment": ["edges": [-1, 1], "shares": [0.2, 0.5, 0.3], "platformShares": ["tv": [0.2, 0.5, 0.3]]]]
                ],
                "scoreReference.payment.platformShares.tv are not shares of the edges' bins for a known platform"
            ),
            (
                ["scale": "raw", "bins": ["payment": ["edges": [-1, 1], "shares": [0.2, 0.5, 0.3], "platformShares": [0.2, 0.5, 0.3]]]],
                "scoreReference.payment.platformShares is not an object"
            )
        ]
        for (reference, expected) in cases {
            let dir = try temporaryModelsCopy()
            defer { removeTemporary(dir) }
            try rewriteReference(dir, reference)
            let error = try XCTUnwrap(loadError(dir), expected)
            XCTAssertEqual(error.problem, expected)
            XCTAssertTrue(error.path.hasSuffix("1.0/manifest.json"), error.path)
        }
    }

    /// Replaces (nil: removes) 1.0's `scoreReference`.
    func rewriteReference(_ dir: String, _ reference: [String: Any]?) throws {
        let url = URL(fileURLWithPath: "\(dir)/1.0/manifest.json")
        var manifest = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        manifest["scoreReference"] = reference
        try JSONSerialization.data(withJSONObject: manifest).write(to: url)
    }

    func edit(_ path: String, _ from: String, _ to: String) throws {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        XCTAssertTrue(text.contains(from))
        try text.replacingOccurrences(of: from, with: to).write(toFile: path, atomically: false, encoding: .utf8)
    }
}
