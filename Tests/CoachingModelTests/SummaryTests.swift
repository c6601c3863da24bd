import XCTest

@testable import CoachingModel

final class SummaryTests: XCTestCase {
    func testAValidSummaryBecomesTheVectorAndAbsentFeaturesAreMissing() throws {
        let f = try FeatureExtractor.fromSummary(
            [
                "sessionSeconds": 64, "keystrokeCount": 12, "keyIntervalCV": 0.4, "payeePasted": 1,
                "backgroundShare": 0.25
            ],
            device: DeviceFacts())
        XCTAssertEqual(f[.sessionSeconds], 64)
        XCTAssertEqual(f[.keystrokeCount], 12)
        XCTAssertEqual(f[.keyIntervalCV], 0.4)
        XCTAssertEqual(f[.payeePasted], 1)
        XCTAssertEqual(f[.backgroundShare], 0.25)
        XCTAssertTrue(f.isMissing(.submitHesitationSeconds))
        XCTAssertTrue(f.isMissing(.activeCall))
    }

    func testEveryFeatureIsFoundByItsNameAndNothingElseIs() {
        for feature in Feature.allCases {
            XCTAssertEqual(Feature(name: feature.name), feature)
            // Near misses: a prefix, an extension, another case, a non-ASCII look-alike.
            XCTAssertNil(Feature(name: String(feature.name.dropLast())))
            XCTAssertNil(Feature(name: feature.name + "s"))
            XCTAssertNil(Feature(name: feature.name.uppercased()))
            XCTAssertNil(Feature(name: "é" + feature.name.dropFirst()))
        }
        XCTAssertNil(Feature(name: ""))
        XCTAssertNil(Feature(name: String(repeating: "x", count: 10_000)))
    }

    func testWireNamesAreFoundFromTheirBytesAndNothingElseIs() {
        func bytes<T>(_ text: String, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> T {
            Array(text.utf8).withUnsafeBufferPointer(body)
        }
        for type in InteractionEventType.allCases {
            XCTAssertEqual(bytes(type.rawValue) { InteractionEventType(utf8: $0) }, type)
            XCTAssertNil(bytes(type.rawValue + "x") { InteractionEventType(utf8: $0) })
            XCTAssertNil(bytes(String(type.rawValue.dropLast())) { InteractionEventType(utf8: $0) })
        }
        for field in InteractionField.allCases {
            XCTAssertEqual(bytes(field.rawValue) { InteractionField(utf8: $0) }, field)
            XCTAssertNil(bytes(field.rawValue.uppercased()) { InteractionField(utf8: $0) })
        }
        for feature in Feature.allCases {
            XCTAssertEqual(bytes(feature.name) { Feature(utf8: $0) }, feature)
        }
        XCTAssertNil(bytes("") { InteractionEventType(utf8: $0) })
        XCTAssertNil(bytes("payee") { InteractionEventType(utf8: $0) }, "a field is no event type")
        XCTAssertNil(bytes("tap") { InteractionField(utf8: $0) })
    }

    func testInvalidSummariesAreRefusedNamingTheFeature() {
        let cases: [(String, Double, String)] = [
            ("noSuchFeature", 1, "not a known feature"),
            ("sessionSeconds", -1, "between 0 and 3600"),
            ("sessionSeconds", 3600.5, "between 0 and 3600"),
            ("sessionSeconds", .nan, "finite"),
            ("longestPauseSeconds", .infinity, "finite"),
            ("keystrokeCount", 2.5, "whole number"),
            ("appSwitchCount", 5001, "whole number"),
            ("activeCall", 0.5, "0 or 1"),
            ("backgroundShare", 1.01, "between 0 and 1"),
            ("keyIntervalMeanMs", 1000.5, "between 0 and 1000"),
            ("keyIntervalCV", 101, "between 0 and 100"),
            ("meanBurstLength", 0.5, "between 1 and 5000")
        ]
        for (name, value, message) in cases {
            var summary = ["userActionCount": 10.0]
            summary[name] = value
            guard let error = summaryError(summary) else {
                XCTFail("\(name) = \(value) accepted")
                continue
            }
            // A feature is named, and so is a plain name that is none (a misspelt feature).
            XCTAssertEqual(error.field, "interaction.summary.\(name)")
            XCTAssertTrue(error.message.contains(message), "\(name): \(error.message)")
        }
        XCTAssertEqual(summaryError(["noSuchFeature": 1])?.message, "'noSuchFeature' is not a known feature; docs/features.md lists them")
    }

    /// A name that is not plain may be a value sent as a name: it is never repeated, the
    /// problem gives its position instead (the first unknown in name order).
    func testAnUnknownNameThatIsNotPlainIsNamedByItsPosition() {
        for name in ["acct-4111111111111111", "jane.doe@example.com", "_private", "1st", String(repeating: "a", count: 65), "é"] {
            let members: KeyValuePairs<String, Double> = ["userActionCount": 10.0, name: 1]
            var error: FeatureExtractionError?
            do throws(FeatureExtractionError) { _ = try FeatureExtractor.fromSummary(members, device: DeviceFacts()) } catch let refused {
                error = refused
            }
            XCTAssertEqual(error?.field, "interaction.summary", name)
            XCTAssertEqual(
                error?.message, "has a member that is not a known feature (member 2, counting from 1); docs/features.md lists them",
                name)
            XCTAssertFalse(error?.description.contains(name) ?? true, name)
        }
        let longest = String(repeating: "a", count: 64)
        XCTAssertEqual(summaryError(["userActionCount": 10.0, longest: 1])?.field, "interaction.summary." + longest)
    }

    func testDeviceFactsCombineWithTheSummary() throws {
        let a = try FeatureExtractor.fromSummary(["activeCall": 0], device: DeviceFacts(activeCall: true))
        XCTAssertEqual(a[.activeCall], 1, "a true from either side wins")
        XCTAssertEqual(a[.callStartedBeforeSession].isNaN, true)
        let b = try FeatureExtractor.fromSummary([:], device: DeviceFacts(activeCall: false, remoteAccessApp: true))
        XCTAssertEqual(b[.activeCall], 0)
        XCTAssertEqual(b[.callStartedBeforeSession], 0, "no call at all: none began before")
        XCTAssertEqual(b[.remoteAccessApp], 1)
        let c = try FeatureExtractor.fromSummary(["callStartedBeforeSession": 1], device: DeviceFacts())
        XCTAssertEqual(c[.activeCall], 1)
        let d = try FeatureExtractor.fromSummary(["screenSharing": 1], device: DeviceFacts(screenSharing: false))
        XCTAssertEqual(d[.screenSharing], 1)
    }

    /// A client that computes the documented features on the device and sends them as a summary
    /// gets exactly the assessment the events would have given.
    func testASummaryOfExtractedFeaturesAssessesLikeTheEvents() throws {
        let events = workedExampleSession
        let device = DeviceFacts(activeCall: true, callStartedBeforeSession: false, screenSharing: false)
        let fromEvents = try FeatureExtractor.extract(events: events, device: device)
        var summary: [String: Double] = [:]
        for feature in Feature.allCases where !fromEvents.isMissing(feature) {
            summary[feature.name] = fromEvents[feature]
        }
        let fromSummary = try FeatureExtractor.fromSummary(summary, device: device)
        XCTAssertEqual(fromSummary, fromEvents)
        let model = try XCTUnwrap(try registry().model(version: nil))
        XCTAssertEqual(
            model.assess(fromSummary, category: "payment"),
            model.assess(fromEvents, category: "payment"))
    }
}
