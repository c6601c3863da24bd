import JSON
import XCTest

@testable import CoachingModel

final class AssessmentTests: XCTestCase {
    /// A two-feature model small enough to work out by hand:
    /// tree 0: activeCall <= 0.5 (NaN -> right) ? -1.0 : (sessionSeconds <= 60 ? 1.0 : 2.5)
    /// tree 1: the constant 0.25
    static let tinyModel = #"""
        {"format":"insightd.tree-ensemble/1","objective":"binary","scoreTransform":"sigmoid",
         "featureNames":["activeCall","sessionSeconds"],
         "trees":[{"splits":[[0,0.5,0,2,-1,1,0.1],[1,60.0,1,0,-2,-3,0.5]],"leaves":[-1.0,1.0,2.5]},
                  {"splits":[],"leaves":[0.25]}]}
        """#

    func tiny() throws -> CoachingModelVersion {
        let ensemble = try TreeEnsemble(json: try JSONParser.parse(Array(AssessmentTests.tinyModel.utf8)))
        let t = CoachingThresholds(medium: 1.25, high: 2.0)
        return CoachingModelVersion(
            version: "0.1", withdrawn: false, inputs: [.activeCall, .sessionSeconds], ensemble: ensemble,
            thresholds: Dictionary(uniqueKeysWithValues: CoachingModelVersion.categories.map { ($0, t) })
                .merging(["account": CoachingThresholds(medium: 0.0, high: 1.0)]) { $1 },
            evidence: EvidenceRule(
                minUserActions: 3, minSessionSeconds: 2,
                deviceSignals: [.activeCall, .screenSharing, .remoteAccessApp]),
            maxReasons: 4, minContribution: 0.2, modelSHA256: String(repeating: "0", count: 64))
    }

    func vector(activeCall: Double, seconds: Double, actions: Double = 10) -> FeatureVector {
        var f = FeatureVector()
        f[.activeCall] = activeCall
        f[.sessionSeconds] = seconds
        f[.userActionCount] = actions
        return f
    }

    func testThresholdsMapScoresToLevels() throws {
        let m = try tiny()
        // raw = tree 0 + 0.25
        let table: [(Double, Double, String, Double, CoachingLevel)] = [
            (0, 30, "payment", -0.75, .unknown),
            (1, 30, "payment", 1.25, .unknown),  // exactly on medium: not above it
            (1, 90, "payment", 2.75, .high),
            (1, 30, "account", 1.25, .high),  // the account thresholds are lower
            (1, 30, "nonsense", 1.25, .unknown),  // unknown category: the "other" thresholds
            (.nan, 90, "payment", 2.75, .high),  // NaN activeCall takes the default (right) branch
            (1, .nan, "payment", 1.25, .unknown)  // missingType None: NaN counts as 0 <= 60
        ]
        for (call, seconds, category, raw, level) in table {
            let f = vector(activeCall: call, seconds: seconds)
            XCTAssertEqual(m.rawScore(f), raw, "\(call) \(seconds)")
            let a = m.assess(f, category: category)
            XCTAssertEqual(a.level, level, "\(call) \(seconds) \(category)")
            XCTAssertEqual(a.score, 1 / (1 + exp(-raw)), accuracy: 1e-15)
        }
    }

    func testReasonsComeFromPathContributions() throws {
        let m = try tiny()
        let f = vector(activeCall: 1, seconds: 90)
        let c = m.contributions(f)
        XCTAssertEqual(c["activeCall"]!, 0.4, accuracy: 1e-12)  // 0.1 -> 0.5
        XCTAssertEqual(c["sessionSeconds"]!, 2.0, accuracy: 1e-12)  // 0.5 -> 2.5
        XCTAssertEqual(m.assess(f, category: "payment").reasons, ["longSession", "activeCallDuringSession"])
        // A missing feature names no reason, whatever its default branch added.
        let g = vector(activeCall: .nan, seconds: 90)
        XCTAssertEqual(m.assess(g, category: "payment").reasons, ["longSession"])
    }

    /// Codes with equal totals are named in name order, whatever the order of the inputs.
    func testReasonsWithEqualTotalsAreOrderedByName() throws {
        // One tree: activeCall <= 0.5 ? -1 : (sessionSeconds <= 60 ? 0.5 : 2); node values 0 and
        // 1, so the path to 2 credits each feature exactly 1.
        let json = #"""
            {"format":"insightd.tree-ensemble/1","objective":"binary","scoreTransform":"sigmoid",
             "featureNames":["sessionSeconds","activeCall"],
             "trees":[{"splits":[[1,0.5,0,0,-1,1,0.0],[0,60.0,0,0,-2,-3,1.0]],"leaves":[-1.0,0.5,2.0]}]}
            """#
        let ensemble = try TreeEnsemble(json: try JSONParser.parse(Array(json.utf8)))
        let t = CoachingThresholds(medium: 0.5, high: 1.5)
        let m = CoachingModelVersion(
            version: "0.1", withdrawn: false, inputs: [.sessionSeconds, .activeCall], ensemble: ensemble,
            thresholds: Dictionary(uniqueKeysWithValues: CoachingModelVersion.categories.map { ($0, t) }),
            evidence: EvidenceRule(minUserActions: 3, minSessionSeconds: 2, deviceSignals: []),
            maxReasons: 4, minContribution: 0.2, modelSHA256: String(repeating: "0", count: 64))
        let f = vector(activeCall: 1, seconds: 90)
        XCTAssertEqual(m.contributions(f), ["sessionSeconds": 1.0, "activeCall": 1.0])
        let a = m.assess(f, category: "payment")
        XCTAssertEqual(a.level, .high)
        XCTAssertEqual(a.reasons, ["activeCallDuringSession", "longSession"])
    }

    func testTooLittleEvidenceIsUnknownWhateverTheScore() throws {
        let m = try tiny()
        var f = vector(activeCall: .nan, seconds: 90, actions: 2)
        XCTAssertEqual(m.rawScore(f), 2.75)
        XCTAssertFalse(m.hasSufficientEvidence(f))
        XCTAssertEqual(
            m.assess(f, category: "payment"),
            CoachingAssessment(level: .unknown, score: m.assess(f, category: "payment").score, reasons: []))
        f[.screenSharing] = 1  // a device fact that speaks on its own
        XCTAssertEqual(m.assess(f, category: "payment").level, .high)
        var g = vector(activeCall: .nan, seconds: 1.5, actions: 10)
        XCTAssertEqual(m.assess(g, category: "payment").level, .unknown, "too short")
        g[.sessionSeconds] = 2
        XCTAssertTrue(m.hasSufficientEvidence(g))
    }

    func testMissingTypeZeroAndTheZeroBand() throws {
        // activeCall: missingType Zero, default left -> 0.5; otherwise <= 0.5 left, else right -0.5.
        let json = #"""
            {"format":"insightd.tree-ensemble/1","objective":"binary","scoreTransform":"sigmoid",
             "featureNames":["activeCall"],"trees":[{"splits":[[0,-0.25,1,1,-1,-2,0.0]],"leaves":[0.5,-0.5]}]}
            """#
        let e = try TreeEnsemble(json: try JSONParser.parse(Array(json.utf8)))
        XCTAssertEqual(e.rawScore([0]), 0.5, "zero is missing: default left")
        XCTAssertEqual(e.rawScore([.nan]), 0.5, "NaN counts as zero when missing values are zeros")
        XCTAssertEqual(e.rawScore([TreeEnsemble.prepare(1e-36)]), 0.5, "inside the zero band")
        XCTAssertEqual(e.rawScore([1]), -0.5)
        XCTAssertEqual(e.rawScore([-1]), 0.5, "-1 <= -0.25 goes left")
        // LightGBM's 1e300 stands for an infinite bound: everything finite goes left.
        let inf = #"""
            {"format":"insightd.tree-ensemble/1","objective":"binary","scoreTransform":"sigmoid",
             "featureNames":["sessionSeconds"],"trees":[{"splits":[[0,1e300,0,2,-1,-2,0.0]],"leaves":[1,2]}]}
            """#
        let f = try TreeEnsemble(json: try JSONParser.parse(Array(inf.utf8)))
        XCTAssertEqual(f.rawScore([1.0000000000000002e300]), 1)
        XCTAssertEqual(f.rawScore([.nan]), 2)
    }

    /// A short, fluent session: 14 keys with human jitter, about 11 s in all.
    func shortFluentSession() -> [InteractionEvent] {
        var events: [InteractionEvent] = [ev(0, .sessionStart)]
        var t: Int64 = 2000
        let jitter: [Double] = [0.7, 1.3, 0.9, 1.6, 0.8, 1.1, 0.6]
        for (field, count) in [(InteractionField.payee, 10), (.amount, 4)] {
            events += [ev(t, .tap), ev(t + 100, .fieldFocus, field)]
            t += 400
            for i in 0..<count {
                events.append(ev(t, .keyDown, field))
                t += Int64(280 * jitter[i % 7])
            }
            events.append(ev(t, .fieldBlur, field))
            t += 500
        }
        return events + [ev(t + 3000, .tap), ev(t + 3100, .submit)]
    }

    /// Device facts count on their own (the interaction constraints of training/train.py): a
    /// call with screen sharing or a remote-access app is flagged even in a short, fluent
    /// session that the behaviour alone would call genuine.
    func testDeviceFactsCountWhateverTheSessionLooksLike() throws {
        let model = try XCTUnwrap(try registry().model(version: nil))
        let events = shortFluentSession()
        let plain = try FeatureExtractor.extract(events: events, device: DeviceFacts(activeCall: false, screenSharing: false))
        XCTAssertEqual(model.assess(plain, category: "payment").level, .unknown)
        for device in [
            DeviceFacts(activeCall: true, callStartedBeforeSession: true, screenSharing: true),
            DeviceFacts(activeCall: true, callStartedBeforeSession: true, remoteAccessApp: true)
        ] {
            let f = try FeatureExtractor.extract(events: events, device: device)
            let a = model.assess(f, category: "payment")
            XCTAssertNotEqual(a.level, .unknown, "\(device)")
            XCTAssertTrue(a.reasons.contains("screenSharing") || a.reasons.contains("remoteAccessApp"), "\(a.reasons)")
        }
    }

    /// The committed current model on sessions written by hand from the scenario descriptions.
    func testTheCurrentModelOnRecognisableSessions() throws {
        let model = try XCTUnwrap(try registry().model(version: nil))
        // Authority impersonation: a call running since before the session, an account number
        // read out in chunks, a long wait before confirming.
        var coached: [InteractionEvent] = [ev(0, .sessionStart), ev(14000, .tap), ev(14100, .fieldFocus, .payee)]
        var t: Int64 = 16000
        for chunk in 0..<6 {
            for _ in 0..<3 {
                coached.append(ev(t, .keyDown, .payee))
                t += 260
            }
            t += chunk % 2 == 0 ? 3200 : 2700
        }
        coached += [
            ev(t, .fieldBlur, .payee), ev(t + 900, .fieldFocus, .amount), ev(t + 1200, .keyDown, .amount),
            ev(t + 1500, .keyDown, .amount), ev(t + 1800, .keyDown, .amount), ev(t + 1900, .fieldBlur, .amount),
            ev(t + 41900, .tap), ev(t + 42000, .submit)
        ]
        let f = try FeatureExtractor.extract(
            events: coached,
            device: DeviceFacts(
                activeCall: true, callStartedBeforeSession: true,
                screenSharing: false))
        let a = model.assess(f, category: "payment")
        XCTAssertEqual(a.level, .high, "\(a)")
        XCTAssertFalse(a.reasons.isEmpty)
        XCTAssertTrue(
            a.reasons.contains("callStartedBeforeSession") || a.reasons.contains("activeCallDuringSession"),
            "\(a.reasons)")

        // A routine payment: quick, fluent, no call.
        var routine: [InteractionEvent] = [
            ev(0, .sessionStart), ev(1200, .tap), ev(2000, .tap),
            ev(2100, .fieldFocus, .amount)
        ]
        t = 2300
        for _ in 0..<3 {
            routine.append(ev(t, .keyDown, .amount))
            t += 210
        }
        routine += [ev(t, .fieldBlur, .amount), ev(t + 2500, .tap), ev(t + 2600, .submit)]
        let g = try FeatureExtractor.extract(
            events: routine, device: DeviceFacts(activeCall: false, screenSharing: false))
        let b = model.assess(g, category: "payment")
        XCTAssertEqual(b.level, .unknown, "\(b)")
        XCTAssertEqual(b.reasons, [])

        // Almost nothing observed: unknown by the evidence rule.
        let h = try FeatureExtractor.extract(events: [ev(0, .sessionStart), ev(600, .submit)], device: DeviceFacts())
        XCTAssertFalse(model.hasSufficientEvidence(h))
        XCTAssertEqual(model.assess(h, category: "payment").level, .unknown)
    }
}
