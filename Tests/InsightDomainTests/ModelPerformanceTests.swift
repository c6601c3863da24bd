import InsightDomain
import XCTest

/// The report's arithmetic: Wilson intervals and the folding of the store's counts.
final class ModelPerformanceTests: XCTestCase {
    func testWilsonIntervalsMatchPublishedValues() throws {
        // Reference values (z = 1.96): Newcombe (1998), Table I, and the closed form at 0 and n.
        let cases: [(Int, Int, Double, Double)] = [
            (81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605),
            (0, 20, 0, 0.1611), (0, 10, 0, 0.2775), (10, 10, 0.7225, 1),
            (5, 10, 0.2366, 0.7634)
        ]
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
        func cell(
            _ version: String, _ value: InsightValue, _ label: LabelOutcome?, _ count: Int, mature: Int = 0,
            consumption: ConsumptionStatus? = nil, category: OperationCategory = .payment
        ) -> ModelPerformanceCell {
            ModelPerformanceCell(
                modelVersion: version, category: category, value: value, consumption: consumption, label: label,
                count: count, mature: mature)
        }
        let query = ModelPerformanceQuery(tenant: "default", environment: .production, from: 0, to: 1_000, matureBefore: 1_000)
        let report = ModelPerformanceReport(
            cells: [
                cell("2.0", .high, .confirmedFraud, 6, mature: 6), cell("2.0", .high, .confirmedLegitimate, 2, mature: 1),
                cell("2.0", .medium, .confirmedFraud, 1), cell("2.0", .medium, .confirmedLegitimate, 3),
                cell("2.0", .unknown, .confirmedFraud, 2, consumption: .usedEvaluationOnly), cell("2.0", .unknown, nil, 10, mature: 3),
                cell("1.0", .unknown, nil, 4, category: .account)
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
        XCTAssertEqual(row.bySource, [], "no evaluation named a capture kit: nothing to split")
    }

    /// Each row splits by capture kit with the same figures, its index against the same
    /// reference, most evaluations first; past the cap the least used kits add up per platform.
    func testRowsSplitByCaptureKitAndFoldTheLeastUsedKits() throws {
        let query = ModelPerformanceQuery(tenant: "default", environment: .production, from: 0, to: 10, matureBefore: 0)
        func web(_ version: String) -> InteractionSource { InteractionSource(kit: "insight-capture-web", version: version, platform: .web) }
        func cell(_ value: InsightValue, _ count: Int, _ source: InteractionSource?, bin: Int, label: LabelOutcome? = nil)
            -> ModelPerformanceCell
        {
            ModelPerformanceCell(
                modelVersion: "2.0", category: .payment, value: value, consumption: nil, label: label, count: count,
                mature: 0, scoreBin: bin, source: source)
        }
        let report = ModelPerformanceReport(
            cells: [
                cell(.unknown, 40, web("1.0.0"), bin: 0), cell(.high, 2, web("1.0.0"), bin: 1, label: .confirmedFraud),
                cell(.high, 30, web("1.1.0"), bin: 1), cell(.unknown, 5, nil, bin: 0)
            ], query: query, references: ["2.0": [.payment: [0.5, 0.5]]])
        let row = try XCTUnwrap(report.rows.first)
        XCTAssertEqual(row.evaluations, 77)
        XCTAssertEqual(row.bySource.map(\.source), [web("1.0.0"), web("1.1.0"), nil])
        XCTAssertEqual(row.bySource.map(\.evaluations), [42, 30, 5])
        XCTAssertEqual(row.bySource[0].recallHigh, Proportion(successes: 2, of: 2))
        XCTAssertEqual(row.bySource[0].psi, PopulationStability.index(counts: [40, 2], expected: [0.5, 0.5]))
        XCTAssertEqual(row.bySource[1].psi, PopulationStability.index(counts: [0, 30], expected: [0.5, 0.5]), "the kit that moved")
        XCTAssertTrue(row.bySource.allSatisfy { $0.bySource.isEmpty && $0.modelVersion == "2.0" })
        // Where the manifest has its platform's own shares, a kit is measured against those.
        let own = ModelPerformanceReport(
            cells: [
                cell(.unknown, 40, web("1.0.0"), bin: 0), cell(.high, 2, web("1.0.0"), bin: 1),
                cell(.unknown, 5, nil, bin: 0)
            ],
            query: query, references: ["2.0": [.payment: ReferenceShares(shares: [0.5, 0.5], byPlatform: [.web: [0.9, 0.1]])]])
        let ownRow = try XCTUnwrap(own.rows.first)
        XCTAssertEqual(ownRow.psi, PopulationStability.index(counts: [45, 2], expected: [0.5, 0.5]), "the row: every evaluation, the mix")
        XCTAssertEqual(ownRow.bySource[0].psi, PopulationStability.index(counts: [40, 2], expected: [0.9, 0.1]))
        XCTAssertEqual(ownRow.bySource[1].psi, PopulationStability.index(counts: [5, 0], expected: [0.5, 0.5]))

        // 30 kit versions, on two platforms: the 19 most used keep their names, the rest add up per platform.
        var cells: [ModelPerformanceCell] = []
        for k in 0..<30 {
            let platform: ClientPlatform = k % 2 == 0 ? .web : .android
            cells.append(cell(.unknown, 100 - k, InteractionSource(kit: "kit", version: "1.\(k)", platform: platform), bin: 0))
        }
        let folded = try XCTUnwrap(ModelPerformanceReport(cells: cells, query: query).rows.first).bySource
        let cap = ModelPerformanceReport.maxSources
        XCTAssertEqual(folded.count, cap + 1)
        XCTAssertEqual(folded.prefix(cap - 1).map { $0.source?.version }, (0..<(cap - 1)).map { "1.\($0)" })
        XCTAssertEqual(
            folded.suffix(2).map(\.source),
            [
                InteractionSource(kit: "other", version: "other", platform: .android),
                InteractionSource(kit: "other", version: "other", platform: .web)
            ])
        XCTAssertEqual(folded.reduce(0) { $0 + $1.evaluations }, (0..<30).reduce(0) { $0 + 100 - $1 })
        XCTAssertEqual(folded.last?.evaluations, stride(from: cap - 1, to: 30, by: 1).filter { $0 % 2 == 0 }.reduce(0) { $0 + 100 - $1 })
    }
}

final class PopulationStabilityTests: XCTestCase {
    func testTheIndexOfKnownDistributions() throws {
        // Equal distributions: 0.
        XCTAssertEqual(try XCTUnwrap(PopulationStability.index(counts: [10, 10, 20], expected: [0.25, 0.25, 0.5])).psi, 0, accuracy: 1e-12)
        // (0.4 − 0.25) ln(0.4 / 0.25) + (0.1 − 0.25) ln(0.1 / 0.25) + (0.5 − 0.5) ln 1, worked by hand.
        let moved = try XCTUnwrap(PopulationStability.index(counts: [40, 10, 50], expected: [0.25, 0.25, 0.5]))
        XCTAssertEqual(moved.psi, 0.15 * log(1.6) + 0.15 * log(2.5), accuracy: 1e-12)
        XCTAssertEqual(moved.sample, 100)
        // An empty bin counts as 0.0001 on either side, so the index stays finite.
        let empty = try XCTUnwrap(PopulationStability.index(counts: [0, 10], expected: [0.5, 0.5]))
        XCTAssertEqual(empty.psi, (0.0001 - 0.5) * log(0.0001 / 0.5) + 0.5 * log(2), accuracy: 1e-12)
        XCTAssertEqual(
            try XCTUnwrap(PopulationStability.index(counts: [5, 5], expected: [1, 0])).psi,
            (0.5 - 1) * log(0.5) + (0.5 - 0.0001) * log(0.5 / 0.0001), accuracy: 1e-12)
        // Counts beyond the reference's bins are not counted; no sample, no index.
        XCTAssertEqual(PopulationStability.index(counts: [10, 10, 7], expected: [0.5, 0.5])?.sample, 20)
        XCTAssertNil(PopulationStability.index(counts: [], expected: [0.5, 0.5]))
        XCTAssertNil(PopulationStability.index(counts: [0, 0, 3], expected: [0.5, 0.5]))
        XCTAssertNil(PopulationStability.index(counts: [3], expected: []))
    }

    func testTheReportGivesEachVersionAndRoleItsOwnRowAndIndex() {
        let query = ModelPerformanceQuery(tenant: "default", environment: .production, from: 0, to: 10, matureBefore: 0)
        let cells = [
            ModelPerformanceCell(
                modelVersion: "2.0", category: .payment, value: .high, consumption: nil, label: nil, count: 3, mature: 0, scoreBin: 0),
            ModelPerformanceCell(
                modelVersion: "2.0", category: .payment, value: .unknown, consumption: nil, label: nil, count: 1, mature: 0, scoreBin: 1),
            ModelPerformanceCell(
                modelVersion: "2.0", category: .payment, value: .unknown, consumption: nil, label: nil, count: 2, mature: 0),
            ModelPerformanceCell(
                modelVersion: "2.0", category: .payment, value: .high, consumption: nil, label: nil, count: 4, mature: 0,
                shadow: true, scoreBin: 1),
            ModelPerformanceCell(
                modelVersion: "3.0", category: .payment, value: .high, consumption: nil, label: nil, count: 4, mature: 0,
                shadow: true, scoreBin: 1)
        ]
        let report = ModelPerformanceReport(cells: cells, query: query, references: ["2.0": [.payment: [0.5, 0.5]]])
        XCTAssertEqual(report.rows.map { "\($0.modelVersion) \($0.role)" }, ["2.0 served", "2.0 shadow", "3.0 shadow"])
        XCTAssertEqual(report.rows[0].evaluations, 6)
        XCTAssertEqual(
            report.rows[0].psi, PopulationStability.index(counts: [3, 1], expected: [0.5, 0.5]), "unbinned insights are not in it")
        XCTAssertEqual(report.rows[0].psi?.sample, 4)
        XCTAssertEqual(report.rows[1].psi, PopulationStability.index(counts: [0, 4], expected: [0.5, 0.5]))
        XCTAssertNil(report.rows[2].psi, "3.0 has no reference")
    }
}
