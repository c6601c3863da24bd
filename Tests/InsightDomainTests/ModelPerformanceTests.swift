import InsightDomain
import XCTest

/// The report's arithmetic: Wilson intervals and the folding of the store's counts.
final class ModelPerformanceTests: XCTestCase {
    func testWilsonIntervalsMatchPublishedValues() throws {
        // Reference values (z = 1.96): Newcombe (1998), Table I, and the closed form at 0 and n.
        let cases: [(Int, Int, Double, Double)] = [(81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605),
                                                   (0, 20, 0, 0.1611), (0, 10, 0, 0.2775), (10, 10, 0.7225, 1),
                                                   (5, 10, 0.2366, 0.7634)]
        for (successes, sample, low, high) in cases {
            let interval = try XCTUnwrap(Proportion.wilson(successes: successes, of: sample))
            XCTAssertEqual(interval.low, low, accuracy: 0.00006, "\(successes)/\(sample)")
            XCTAssertEqual(interval.high, high, accuracy: 0.00006, "\(successes)/\(sample)")
        }
        XCTAssertNil(Proportion.wilson(successes: 0, of: 0))
        let empty = Proportion(successes: 0, of: 0)
        XCTAssertNil(empty.value)
        XCTAssertNil(empty.interval)
    }

    func testRowsFoldTheCellsOfEachVersionAndCategory() {
        func cell(_ version: String, _ value: InsightValue, _ label: LabelOutcome?, _ count: Int, mature: Int = 0,
                  consumption: ConsumptionStatus? = nil, category: OperationCategory = .payment) -> ModelPerformanceCell {
            ModelPerformanceCell(modelVersion: version, category: category, value: value, consumption: consumption, label: label,
                                 count: count, mature: mature)
        }
        let query = ModelPerformanceQuery(tenant: "default", environment: .production, from: 0, to: 1_000, matureBefore: 1_000)
        let report = ModelPerformanceReport(cells: [
            cell("2.0", .high, .confirmedFraud, 6, mature: 6), cell("2.0", .high, .confirmedLegitimate, 2, mature: 1),
            cell("2.0", .medium, .confirmedFraud, 1), cell("2.0", .medium, .confirmedLegitimate, 3),
            cell("2.0", .unknown, .confirmedFraud, 2, consumption: .usedEvaluationOnly), cell("2.0", .unknown, nil, 10, mature: 3),
            cell("1.0", .unknown, nil, 4, category: .account),
        ], query: query)
        XCTAssertTrue(report.mature)
        XCTAssertEqual(report.rows.map { "\($0.modelVersion) \($0.category.rawValue)" }, ["1.0 account", "2.0 payment"])
        let row = report.rows[1]
        XCTAssertEqual(row.evaluations, 24)
        XCTAssertEqual(row.values, [.high: 8, .medium: 4, .unknown: 12])
        XCTAssertEqual(row.consumption, [nil: 22, .usedEvaluationOnly: 2])
        XCTAssertEqual(row.labelled, [.confirmedFraud: [.high: 6, .medium: 1, .unknown: 2], .confirmedLegitimate: [.high: 2, .medium: 3]])
        XCTAssertEqual(row.precisionMediumOrHigh, Proportion(successes: 7, of: 12))
        XCTAssertEqual(row.precisionHigh, Proportion(successes: 6, of: 8))
        XCTAssertEqual(row.recallMediumOrHigh, Proportion(successes: 7, of: 9))
        XCTAssertEqual(row.recallHigh, Proportion(successes: 6, of: 9))
        XCTAssertEqual(row.matureShare, 10.0 / 24.0)
        XCTAssertEqual(report.rows[0].precisionHigh.sample, 0)
        XCTAssertNil(report.rows[0].recallHigh.value)
        // A period that ends after the cutoff is not mature.
        var young = query
        young.matureBefore = 999
        XCTAssertFalse(ModelPerformanceReport(cells: [], query: young).mature)
    }
}
