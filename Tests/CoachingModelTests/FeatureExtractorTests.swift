import XCTest

@testable import CoachingModel

/// A session exercising every feature; the expected values are worked out by hand in
/// docs/features.md terms.
let workedExampleSession: [InteractionEvent] = [
    ev(0, .sessionStart),
    ev(1000, .tap),
    ev(1100, .fieldFocus, .payee),
    ev(1300, .keyDown, .payee),
    ev(1500, .keyDown, .payee),  // 200 ms: rhythm
    ev(1700, .keyDown, .payee),  // 200 ms: rhythm
    ev(4700, .keyDown, .payee),  // 3 s: segment pause
    ev(4900, .delete, .payee),  // 200 ms: rhythm
    ev(5100, .keyDown, .payee),  // 200 ms: rhythm
    ev(5200, .fieldBlur, .payee),
    ev(5300, .appBackground),
    ev(15300, .appForeground),  // 10 s away
    ev(15400, .fieldFocus, .amount),
    ev(15600, .paste, .amount),
    ev(15800, .fieldBlur, .amount),
    ev(16000, .fieldFocus, .payee),  // revisit
    ev(16100, .keyDown, .payee),  // new run: a focus came between
    ev(16200, .fieldBlur, .payee),
    ev(16300, .callStart),
    ev(17000, .proximityNear),
    ev(20000, .proximityFar),  // 3 s at the ear
    ev(20500, .orientationChange),
    ev(21000, .fieldFocus, .otp),
    ev(24000, .keyDown, .otp),  // 3 s to start the OTP
    ev(24100, .fieldBlur, .otp),
    ev(30100, .submit)  // 6.1 s after the last input, a 6 s idle gap
]

final class FeatureExtractorTests: XCTestCase {
    let session = workedExampleSession

    func testEveryFeatureOfAWorkedExample() throws {
        let f = try FeatureExtractor.extract(events: session, device: DeviceFacts())
        let expected: [Feature: Double] = [
            .sessionSeconds: 30.1, .userActionCount: 19, .firstInputSeconds: 1.3,
            .keystrokeCount: 8, .keyIntervalMeanMs: 200, .keyIntervalCV: 0, .meanBurstLength: 2,
            .segmentPauseCount: 1, .segmentPauseShare: 0.2, .segmentPauseMeanMs: 3000,
            .longPauseCount: 1,
            .longestPauseSeconds: 6.0, .submitHesitationSeconds: 6.1, .deletionCount: 1,
            .deletionRatio: 0.125, .payeePasted: 0, .amountPasted: 1, .fieldRevisits: 1,
            .appSwitchCount: 1, .backgroundSeconds: 10, .backgroundShare: 10000.0 / 30100.0,
            .activeCall: 1, .callStartedBeforeSession: 0, .proximityNearShare: 3000.0 / 30100.0,
            .orientationChanges: 1, .otpEntryDelaySeconds: 3.0
        ]
        for feature in Feature.allCases {
            if let value = expected[feature] {
                XCTAssertEqual(f[feature], value, feature.name)
            } else {
                XCTAssertTrue(f.isMissing(feature), "\(feature.name) should be missing, is \(f[feature])")
            }
        }
        XCTAssertEqual(
            Set(expected.keys).union([.screenSharing, .remoteAccessApp]).count,
            Feature.allCases.count, "every feature is checked")
        XCTAssertEqual(f["keyIntervalMeanMs"], 200)
        XCTAssertNil(f["noSuchFeature"])
    }

    struct Hostile {
        var name: String
        var events: [InteractionEvent]
        var field: String
        var messageContains: String
    }

    func testHostileEventListsAreRefusedNamingTheProblem() {
        let start = ev(0, .sessionStart)
        let cases: [Hostile] = [
            Hostile(name: "empty", events: [], field: "interaction.events", messageContains: "sessionStart"),
            Hostile(
                name: "too many", events: [start] + (1...5000).map { ev(Int64($0), .tap) },
                field: "interaction.events", messageContains: "5001 events"),
            Hostile(
                name: "no sessionStart", events: [ev(0, .tap), ev(5, .submit)],
                field: "interaction.events[0].type", messageContains: "sessionStart"),
            Hostile(
                name: "sessionStart late", events: [ev(7, .sessionStart), ev(9, .tap)],
                field: "interaction.events[0].t", messageContains: "t = 0"),
            Hostile(
                name: "second sessionStart", events: [start, ev(5, .tap), ev(6, .sessionStart)],
                field: "interaction.events[2].type", messageContains: "exactly one"),
            Hostile(
                name: "negative", events: [start, ev(-1, .tap)],
                field: "interaction.events[1].t", messageContains: "negative"),
            Hostile(
                name: "most negative", events: [start, ev(.min, .tap)],
                field: "interaction.events[1].t", messageContains: "negative"),
            Hostile(
                name: "past the cap", events: [start, ev(3_600_001, .submit)],
                field: "interaction.events[1].t", messageContains: "3600000"),
            Hostile(
                name: "huge", events: [start, ev(.max, .submit)],
                field: "interaction.events[1].t", messageContains: "cap"),
            Hostile(
                name: "unsorted", events: [start, ev(900, .tap), ev(500, .keyDown, .payee), ev(950, .submit)],
                field: "interaction.events[2].t", messageContains: "earlier than the previous event")
        ]
        for c in cases {
            guard let error = extractionError(c.events) else {
                XCTFail("\(c.name): accepted")
                continue
            }
            XCTAssertEqual(error.field, c.field, c.name)
            XCTAssertTrue(error.message.contains(c.messageContains), "\(c.name): \(error.message)")
            XCTAssertEqual(error.description, "\(error.field): \(error.message)")
        }
    }

    func testLimitsThemselvesAreAccepted() throws {
        let full = [ev(0, .sessionStart)] + (1...4999).map { ev(Int64($0) * 700, .keyDown, .payee) }
        XCTAssertEqual(full.count, FeatureExtractor.maxEvents)
        let f = try FeatureExtractor.extract(events: full, device: DeviceFacts())
        XCTAssertEqual(f[.keystrokeCount], 4999)
        XCTAssertEqual(f[.keyIntervalMeanMs], 700)

        let hour = try FeatureExtractor.extract(
            events: [ev(0, .sessionStart), ev(3_600_000, .submit)], device: DeviceFacts())
        XCTAssertEqual(hour[.sessionSeconds], 3600)
        // Equal times are in order.
        XCTAssertNil(extractionError([ev(0, .sessionStart), ev(0, .tap), ev(0, .submit)]))
    }

    func testOnlySessionStartLeavesRatiosMissing() throws {
        let f = try FeatureExtractor.extract(events: [ev(0, .sessionStart)], device: DeviceFacts())
        XCTAssertEqual(f[.sessionSeconds], 0)
        XCTAssertEqual(f[.userActionCount], 0)
        for feature: Feature in [
            .backgroundShare, .proximityNearShare, .firstInputSeconds,
            .keyIntervalMeanMs, .keyIntervalCV, .meanBurstLength,
            .segmentPauseShare, .segmentPauseMeanMs, .longestPauseSeconds,
            .submitHesitationSeconds, .deletionRatio, .otpEntryDelaySeconds,
            .activeCall, .callStartedBeforeSession, .screenSharing,
            .remoteAccessApp
        ] {
            XCTAssertTrue(f.isMissing(feature), feature.name)
        }
    }

    func testStatesOpenAtTheEndRunToTheEnd() throws {
        let f = try FeatureExtractor.extract(
            events: [
                ev(0, .sessionStart), ev(1000, .appBackground), ev(1500, .appBackground),
                ev(3000, .proximityNear), ev(4000, .submit)
            ], device: DeviceFacts())
        XCTAssertEqual(f[.appSwitchCount], 1, "a repeated appBackground is not a second switch")
        XCTAssertEqual(f[.backgroundSeconds], 3.0)
        XCTAssertEqual(f[.backgroundShare], 0.75)
        XCTAssertEqual(f[.proximityNearShare], 0.25)
    }

    func testProximityFarFirstMeansAtTheEarFromTheStart() throws {
        let f = try FeatureExtractor.extract(
            events: [
                ev(0, .sessionStart), ev(2000, .proximityFar), ev(4000, .submit)
            ], device: DeviceFacts())
        XCTAssertEqual(f[.proximityNearShare], 0.5)
    }

    func testCallFactsCombineEventsAndDevice() throws {
        func flags(_ events: [InteractionEvent], _ device: DeviceFacts) throws -> [Double] {
            let f = try FeatureExtractor.extract(
                events: [ev(0, .sessionStart)] + events + [ev(9000, .submit)],
                device: device)
            return [f[.activeCall], f[.callStartedBeforeSession], f[.screenSharing], f[.remoteAccessApp]]
        }
        func same(_ a: [Double], _ b: [Double], _ note: String) {
            XCTAssertTrue(zip(a, b).allSatisfy { $0 == $1 || ($0.isNaN && $1.isNaN) }, "\(note): \(a) vs \(b)")
        }
        let nan = Double.nan
        same(try flags([], DeviceFacts()), [nan, nan, nan, nan], "nothing reported")
        same(
            try flags([], DeviceFacts(activeCall: false, screenSharing: false, remoteAccessApp: false)),
            [0, 0, 0, 0], "explicit no")
        same(try flags([], DeviceFacts(activeCall: true)), [1, nan, nan, nan], "call of unknown start")
        same(try flags([ev(100, .callEnd)], DeviceFacts()), [1, 1, nan, nan], "callEnd first")
        same(
            try flags([ev(100, .callStart)], DeviceFacts(activeCall: false)), [1, 0, nan, nan],
            "an event wins over a false fact")
        same(
            try flags([], DeviceFacts(callStartedBeforeSession: true)), [1, 1, nan, nan],
            "a call before the session is a call")
        same(
            try flags([ev(100, .screenShareStart)], DeviceFacts(screenSharing: false)), [nan, nan, 1, nan],
            "share event")
    }

    func testFieldChangesAndRepeatedFocus() throws {
        let f = try FeatureExtractor.extract(
            events: [
                ev(0, .sessionStart),
                ev(100, .fieldFocus, .payee), ev(150, .fieldFocus, .payee),  // duplicate, not a revisit
                ev(200, .keyDown, .payee), ev(300, .keyDown, .amount),  // other field: no interval
                ev(400, .keyDown), ev(500, .keyDown),  // no field: its own run
                ev(600, .fieldBlur, .payee), ev(700, .fieldFocus, .payee),  // blur then back: revisit
                ev(800, .paste, .payee), ev(900, .submit)
            ], device: DeviceFacts())
        XCTAssertEqual(f[.fieldRevisits], 1)
        XCTAssertEqual(f[.keyIntervalMeanMs], 100)
        XCTAssertEqual(f[.meanBurstLength], 4.0 / 3.0)
        XCTAssertEqual(f[.payeePasted], 1)
        XCTAssertEqual(f[.submitHesitationSeconds], 0.1)
        XCTAssertTrue(f.isMissing(.keyIntervalCV), "one rhythm interval has no variation")
    }
}
