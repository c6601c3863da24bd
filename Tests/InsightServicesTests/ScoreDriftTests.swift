import CoachingModel
import InsightDomain
import InsightTesting
import Synchronization
import XCTest

@testable import InsightServices

/// `insightd_model_score_psi` and its warning (`ScoreDrift`): counts per bin in hourly windows,
/// the index over the last full window and the current one once they hold the minimum sample,
/// one warning per version, category and window past 0.2.
final class ScoreDriftTests: XCTestCase {
    final class Warnings: Sendable {
        let list = Mutex<[String]>([])
        func append(_ s: String) { list.withLock { $0.append(s) } }
        var all: [String] { list.withLock { $0 } }
    }

    static let models = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("models").path

    func record(
        _ bins: [Int?], shadow: Int? = nil, version: String = "2.0", category: OperationCategory = .payment,
        source: InteractionSource? = nil
    ) -> EvaluationRecord {
        func insight(_ bin: Int?, _ version: String) -> InsightRecord {
            InsightRecord(
                insightId: "i", type: "isLikelyBeingCoached", schemaVersion: 1, modelVersion: version,
                newestModelVersion: "2.0", outcome: .value(.unknown, reasons: []), scoreBin: bin)
        }
        return EvaluationRecord(
            eventId: "e", callerId: "c", environment: .production, category: category, createdAt: 0,
            reportConsumptionBy: 0, subject: HashedSubject(), insights: bins.map { insight($0, version) },
            shadowInsights: shadow.map { [insight($0, "1.0")] } ?? [], source: source)
    }

    func testTheIndexWaitsForTheSampleWarnsOncePerWindowAndForgetsOldWindows() throws {
        let registry = try ModelRegistry.load(directory: Self.models, shadow: ["1.0"])
        let shares = try XCTUnwrap(registry.model(version: "2.0")?.reference?.bins["payment"]?.shares)
        let clock = ManualClock(10 * 3_600_000)
        let warnings = Warnings()
        let drift = ScoreDrift(models: InsightModels(registry), clock: clock, minimumSample: 500) { version, category, _, stability in
            warnings.append("\(version) \(category.rawValue) \(stability.sample)")
        }
        for _ in 0..<499 { drift.record(record([0])) }
        XCTAssertTrue(drift.samples().isEmpty, "below the minimum sample")
        XCTAssertEqual(warnings.all, [])
        drift.record(record([0]))
        var expected = [Int](repeating: 0, count: shares.count)
        expected[0] = 500
        let samples = drift.samples()
        XCTAssertEqual(samples.map(\.labels), [["2.0", "payment"]])
        XCTAssertEqual(
            try XCTUnwrap(samples.first?.value), try XCTUnwrap(PopulationStability.index(counts: expected, expected: shares)).psi,
            accuracy: 1e-12)
        XCTAssertEqual(warnings.all, ["2.0 payment 500"], "all in one bin of ten is a shift")
        for _ in 0..<200 { drift.record(record([0])) }
        XCTAssertEqual(warnings.all.count, 1, "once per window")

        // The next hour: the last one still counts, and the warning may come again, once.
        clock.advance(ms: 3_600_000)
        XCTAssertEqual(drift.stability(version: "2.0", category: .payment)?.sample, 700)
        drift.record(record([0]))
        XCTAssertEqual(warnings.all, ["2.0 payment 500", "2.0 payment 701"])
        for _ in 0..<100 { drift.record(record([0])) }
        XCTAssertEqual(warnings.all.count, 2)

        // Two hours on, both windows are gone.
        clock.advance(ms: 2 * 3_600_000)
        XCTAssertTrue(drift.samples().isEmpty)
        XCTAssertNil(drift.stability(version: "2.0", category: .payment))
    }

    func testScoresSpreadLikeTheReferenceDoNotWarnAndShadowsAndUnbinnedAreCountedApart() throws {
        let registry = try ModelRegistry.load(directory: Self.models, shadow: ["1.0"])
        let clock = ManualClock(0)
        let warnings = Warnings()
        let drift = ScoreDrift(models: InsightModels(registry), clock: clock, minimumSample: 500) { version, category, _, _ in
            warnings.append("\(version) \(category.rawValue)")
        }
        for n in 0..<1_000 { drift.record(record([n % 10, nil], shadow: n % 10, category: .account)) }
        XCTAssertEqual(drift.stability(version: "2.0", category: .account)?.sample, 1_000, "the unbinned insight is not counted")
        XCTAssertEqual(drift.stability(version: "1.0", category: .account)?.sample, 1_000, "the shadow is counted as its own version")
        XCTAssertLessThan(try XCTUnwrap(drift.stability(version: "2.0", category: .account)).psi, 0.01)
        XCTAssertEqual(warnings.all, [])
        XCTAssertEqual(Set(drift.samples().map(\.labels)), [["2.0", "account"], ["1.0", "account"]])

        // A version without a reference has no index.
        let bare = ScoreDrift(models: InsightModels(nil), clock: clock, minimumSample: 1) { _, _, _, _ in }
        bare.record(record([3]))
        XCTAssertTrue(bare.samples().isEmpty)
    }

    /// A kit version whose scores moved shows on its own, beside the overall index, with a
    /// warning naming it; kits past the cap are counted as their platform's `other`, and a kit
    /// with no score in two windows frees its place.
    func testEachCaptureKitIsCountedApartAndTheirNumberIsBounded() throws {
        let registry = try ModelRegistry.load(directory: Self.models)
        let clock = ManualClock(0)
        let warnings = Warnings()
        let drift = ScoreDrift(models: InsightModels(registry), clock: clock, minimumSample: 500) { version, category, source, _ in
            warnings.append("\(version) \(category.rawValue) \(source.map { "\($0.platform.rawValue) \($0.kit) \($0.version)" } ?? "all")")
        }
        let steady = InteractionSource(kit: "insight-capture-web", version: "1.0.0", platform: .web)
        let moved = InteractionSource(kit: "insight-capture-web", version: "1.1.0", platform: .web)
        // The web kit's scores spread as the web profile's held-out sessions did (its own
        // reference), which is not how the mix of the reference spreads.
        let bins = try XCTUnwrap(registry.model(version: "2.0")?.reference?.bins["payment"])
        let web = try XCTUnwrap(bins.platformShares["web"])
        func webBin(_ n: Int, of count: Int) -> Int {
            var cumulative = 0.0
            for (k, share) in web.enumerated() {
                cumulative += share
                if (Double(n) + 0.5) / Double(count) < cumulative { return k }
            }
            return web.count - 1
        }
        for n in 0..<4_000 { drift.record(record([webBin(n * 2_357 % 4_000, of: 4_000)], source: steady)) }  // in no order
        for _ in 0..<500 { drift.record(record([9], source: moved)) }
        XCTAssertLessThan(
            try XCTUnwrap(drift.stability(version: "2.0", category: .payment, source: steady)).psi, 0.01,
            "measured against the web profile's reference")
        XCTAssertGreaterThan(
            try XCTUnwrap(
                PopulationStability.index(
                    counts: (0..<10).map { k in (0..<4_000).filter { webBin($0, of: 4_000) == k }.count },
                    expected: bins.shares)
            ).psi, 0.1,
            "against the mix the same scores would look shifted")
        XCTAssertGreaterThan(try XCTUnwrap(drift.stability(version: "2.0", category: .payment, source: moved)).psi, 1)
        XCTAssertEqual(drift.stability(version: "2.0", category: .payment)?.sample, 4_500, "the overall index counts every kit")
        let ios = InteractionSource(kit: "insight-capture-ios", version: "1.0.0", platform: .ios)
        for n in 0..<500 { drift.record(record([n % 10], source: ios)) }
        XCTAssertLessThan(
            try XCTUnwrap(drift.stability(version: "2.0", category: .payment, source: ios)).psi, 0.01,
            "a platform without a profile of its own is measured against the mix")
        // (The overall index, against the mix, may warn: this traffic is all web.)
        XCTAssertEqual(
            warnings.all.filter { !$0.hasSuffix(" all") }, ["2.0 payment web insight-capture-web 1.1.0"], "only the kit that moved")
        XCTAssertEqual(drift.samples().map(\.labels), [["2.0", "payment"]])
        XCTAssertEqual(
            Set(drift.sourceSamples().map(\.labels)),
            [
                ["2.0", "payment", "web", "insight-capture-web", "1.0.0"],
                ["2.0", "payment", "web", "insight-capture-web", "1.1.0"],
                ["2.0", "payment", "ios", "insight-capture-ios", "1.0.0"]
            ])

        // Names past the cap: their scores count as their platform's `other`.
        for k in 0..<(ScoreDrift.maxSources + 10) {
            drift.record(record([k % 10], source: InteractionSource(kit: "kit", version: "v\(k)", platform: .android)))
        }
        drift.record(record([0], source: steady))
        XCTAssertNotNil(drift.stability(version: "2.0", category: .payment, source: steady), "a kit already counted keeps its name")
        let other = InteractionSource(kit: "other", version: "other", platform: .android)
        for _ in 0..<500 { drift.record(record([1], source: InteractionSource(kit: "kit", version: "v99", platform: .android))) }
        XCTAssertGreaterThanOrEqual(drift.stability(version: "2.0", category: .payment, source: other)?.sample ?? 0, 500)
        XCTAssertNil(
            drift.stability(
                version: "2.0", category: .payment,
                source: InteractionSource(kit: "kit", version: "v99", platform: .android)))

        // Two windows later every kit is forgotten, and a new name is counted under its own again.
        clock.advance(ms: 2 * 3_600_000)
        XCTAssertTrue(drift.sourceSamples().isEmpty)
        for _ in 0..<500 { drift.record(record([2], source: InteractionSource(kit: "kit", version: "v99", platform: .android))) }
        XCTAssertEqual(
            drift.stability(
                version: "2.0", category: .payment,
                source: InteractionSource(kit: "kit", version: "v99", platform: .android))?.sample, 500)
    }
}
