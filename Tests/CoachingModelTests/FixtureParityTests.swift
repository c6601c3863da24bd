import JSON
import Foundation
import XCTest

@testable import CoachingModel

/// Replays every row of every committed models/<version>/fixtures.json: the Swift extractor must
/// reproduce training/features.py, and the Swift tree walk must reproduce LightGBM's raw score,
/// level and reasons, each to within 1e-9.
final class FixtureParityTests: XCTestCase {
    static let tolerance = 1e-9

    struct Row {
        var category: String
        /// The client platform of a web-profile row (judged with that platform's thresholds).
        var platform: String?
        var events: [InteractionEvent]?
        var device: DeviceFacts
        var features: [Double]
        var raw: Double
        var level: String
        var reasons: [String]
    }

    static func parseFixtures(_ version: String) throws -> [Row] {
        let path = "\(modelsUnderTest)/\(version)/fixtures.json"
        let bytes = try XCTUnwrap(FileManager.default.contents(atPath: path), "cannot read \(path)")
        let root = try XCTUnwrap(try JSONParser.parse([UInt8](bytes), limits: .trusted).objectValue)
        XCTAssertEqual(root["format"]?.stringValue, "insightd.coaching-fixtures/1")
        XCTAssertEqual(root["version"]?.stringValue, version)
        let names = try XCTUnwrap(root["featureNames"]?.arrayValue).compactMap(\.stringValue)
        XCTAssertEqual(names, FeatureVector.names, "fixture feature order differs from Swift's")
        let types = try XCTUnwrap(root["eventTypes"]?.arrayValue).map {
            InteractionEventType(rawValue: $0.stringValue ?? "")
        }
        let fields = try XCTUnwrap(root["fields"]?.arrayValue).map {
            InteractionField(rawValue: $0.stringValue ?? "")
        }
        XCTAssertEqual(
            root["deviceKeys"]?.arrayValue?.compactMap(\.stringValue),
            ["activeCall", "callStartedBeforeSession", "screenSharing", "remoteAccessApp"])
        var rows: [Row] = []
        for item in try XCTUnwrap(root["rows"]?.arrayValue) {
            let o = try XCTUnwrap(item.objectValue)
            var events: [InteractionEvent]?
            if let flat = o["events"]?.arrayValue {
                var list: [InteractionEvent] = []
                var t: Int64 = 0
                var k = 0
                while k + 2 < flat.count {
                    t += Int64(try XCTUnwrap(flat[k].intValue))
                    let type = try XCTUnwrap(types[try XCTUnwrap(flat[k + 1].intValue)])
                    let f = try XCTUnwrap(flat[k + 2].intValue)
                    list.append(InteractionEvent(t: t, type: type, field: f < 0 ? nil : fields[f]))
                    k += 3
                }
                events = list
            }
            let d = o["device"]?.arrayValue ?? [.null, .null, .null, .null]
            let device = DeviceFacts(
                activeCall: d[0].boolValue, callStartedBeforeSession: d[1].boolValue,
                screenSharing: d[2].boolValue, remoteAccessApp: d[3].boolValue)
            let features = try XCTUnwrap(o["features"]?.arrayValue).map { $0.numberValue ?? .nan }
            rows.append(
                Row(
                    category: try XCTUnwrap(o["category"]?.stringValue), platform: o["platform"]?.stringValue,
                    events: events, device: device,
                    features: features, raw: try XCTUnwrap(o["raw"]?.numberValue),
                    level: try XCTUnwrap(o["level"]?.stringValue),
                    reasons: try XCTUnwrap(o["reasons"]?.arrayValue).compactMap(\.stringValue)))
        }
        return rows
    }

    /// Parsed once per version for the whole suite: the files are 1.5 MB each.
    static let cache: [String: Result<[Row], any Error>] = {
        var out: [String: Result<[Row], any Error>] = [:]
        for version in (try? registryUnderTest.get().versions.map(\.version)) ?? [] {
            out[version] = Result { try parseFixtures(version) }
        }
        return out
    }()

    func loadFixtures(_ version: String) throws -> [Row] {
        guard let cached = FixtureParityTests.cache[version] else {
            return try FixtureParityTests.parseFixtures(version)
        }
        return try cached.get()
    }

    func close(_ a: Double, _ b: Double) -> Bool {
        (a.isNaN && b.isNaN) || abs(a - b) <= FixtureParityTests.tolerance
    }

    func testEveryVersionHasAtLeast2000FixtureRowsFromEvents() throws {
        for model in try registry(underTest: true).versions {
            let rows = try loadFixtures(model.version)
            XCTAssertGreaterThanOrEqual(rows.filter { $0.events != nil }.count, 2000, model.version)
        }
    }

    func testFeatureExtractionMatchesPythonOnEveryFixtureRow() throws {
        for model in try registry(underTest: true).versions {
            var checked = 0
            for (i, row) in try loadFixtures(model.version).enumerated() {
                guard let events = row.events else { continue }
                let vector = try FeatureExtractor.extract(events: events, device: row.device)
                for (j, name) in FeatureVector.names.enumerated() where !close(vector.values[j], row.features[j]) {
                    XCTFail("\(model.version) row \(i) \(name): Swift \(vector.values[j]), Python \(row.features[j])")
                }
                // The model's score from Swift-extracted features equals LightGBM's.
                XCTAssertTrue(close(model.rawScore(vector), row.raw), "\(model.version) row \(i)")
                checked += 1
            }
            XCTAssertGreaterThanOrEqual(checked, 2000)
        }
    }

    func testTreeWalkMatchesLightGBMOnEveryFixtureRow() throws {
        for model in try registry(underTest: true).versions {
            let rows = try loadFixtures(model.version)
            var worst = 0.0
            for (i, row) in rows.enumerated() {
                let vector = FeatureVector(values: row.features)
                let raw = model.rawScore(vector)
                worst = max(worst, abs(raw - row.raw))
                XCTAssertTrue(close(raw, row.raw), "\(model.version) row \(i): \(raw) vs LightGBM \(row.raw)")
                let assessment = model.assess(vector, category: row.category, platform: row.platform)
                XCTAssertEqual(assessment.level.rawValue, row.level, "\(model.version) row \(i)")
                XCTAssertEqual(assessment.reasons, row.reasons, "\(model.version) row \(i)")
            }
            XCTAssertLessThanOrEqual(worst, FixtureParityTests.tolerance)
        }
    }

    /// The web-profile rows (what the web capture kit emits) are judged with the web thresholds,
    /// and some of them land where the web and the category thresholds disagree.
    func testWebProfileRowsAreJudgedWithTheWebThresholds() throws {
        for model in try registry(underTest: true).versions where model.platformThresholds["web"] != nil {
            let rows = try loadFixtures(model.version).filter { $0.platform == "web" }
            XCTAssertGreaterThanOrEqual(rows.count, 300, model.version)
            XCTAssertTrue(rows.allSatisfy { $0.events != nil && $0.device == DeviceFacts() }, "web rows carry events and no device facts")
            XCTAssertTrue(rows.contains { $0.level != "unknown" }, model.version)
            let web = try XCTUnwrap(model.platformThresholds["web"])
            XCTAssertNotEqual(web, model.thresholds, "\(model.version): the web thresholds are set on their own sessions")
            // Rows whose level the category's thresholds would get wrong: the replay above then
            // fails for a scorer that ignores the platform.
            let differing = rows.filter {
                model.assess(FeatureVector(values: $0.features), category: $0.category).level.rawValue != $0.level
            }
            XCTAssertFalse(differing.isEmpty, model.version)
        }
    }

    func testFixturesCoverEveryLevelAndMissingValues() throws {
        let rows = try loadFixtures(try registry(underTest: true).currentVersion)
        for level in CoachingLevel.allCases {
            XCTAssertTrue(rows.contains { $0.level == level.rawValue }, "no fixture row is \(level)")
        }
        XCTAssertTrue(rows.contains { $0.features.contains { $0.isNaN } })
        XCTAssertTrue(
            rows.filter { $0.level == "high" }.allSatisfy { !$0.reasons.isEmpty },
            "every high fixture row names its reasons")
    }
}
