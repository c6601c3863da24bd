#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// How each model version performs on the tenant's own traffic (docs/operations.md
/// "Model performance"): the store counts, grouped, what the coaching insights of a period
/// answered, how callers used them and what was later labelled; `ModelPerformanceReport` turns the
/// counts into the report.
public protocol ModelPerformanceSource: Sendable {
    /// The counts of `query`: one cell per (model version, category, value, consumption status,
    /// label outcome) that occurs among the insights of type `isLikelyBeingCoached` that answered
    /// a value, of the evaluations created in `[query.from, query.to)` by the callers of
    /// `query.tenant` registered in `query.environment` (and of `query.category`, when given).
    /// In no particular order.
    func modelPerformanceCounts(_ query: ModelPerformanceQuery) throws -> [ModelPerformanceCell]
}

/// What `ModelPerformanceSource` is asked.
public struct ModelPerformanceQuery: Sendable, Equatable {
    public var tenant: String
    public var environment: Environment
    /// The period's first millisecond.
    public var from: Milliseconds
    /// After the period's last millisecond (exclusive).
    public var to: Milliseconds
    public var category: OperationCategory?
    /// Evaluations created before this are mature (`ModelPerformanceCell.mature`).
    public var matureBefore: Milliseconds

    public init(
        tenant: String, environment: Environment, from: Milliseconds, to: Milliseconds,
        category: OperationCategory? = nil, matureBefore: Milliseconds
    ) {
        self.tenant = tenant
        self.environment = environment
        self.from = from
        self.to = to
        self.category = category
        self.matureBefore = matureBefore
    }
}

/// The insights of one combination of model version, category, value, consumption status and
/// label outcome.
public struct ModelPerformanceCell: Sendable, Hashable {
    public var modelVersion: String
    public var category: OperationCategory
    public var value: InsightValue
    /// The evaluation's consumption report's status; nil when none was reported.
    public var consumption: ConsumptionStatus?
    /// The insight's label; nil when it has none.
    public var label: LabelOutcome?
    /// Insights in the cell.
    public var count: Int
    /// Those of evaluations created before `ModelPerformanceQuery.matureBefore`.
    public var mature: Int
    /// Whether these are shadow answers (`INSIGHTD_MODEL_SHADOW`): stored, never answered,
    /// labelled through their evaluation's served insight of the same type.
    public var shadow: Bool
    /// The bin of the version's reference distribution the scores fell in; nil: none stored.
    public var scoreBin: Int?
    /// The capture kit of the evaluations (`interaction.source`); nil: they named none.
    public var source: InteractionSource?

    public init(
        modelVersion: String, category: OperationCategory, value: InsightValue, consumption: ConsumptionStatus?,
        label: LabelOutcome?, count: Int, mature: Int, shadow: Bool = false, scoreBin: Int? = nil,
        source: InteractionSource? = nil
    ) {
        self.shadow = shadow
        self.source = source
        self.scoreBin = scoreBin
        self.modelVersion = modelVersion
        self.category = category
        self.value = value
        self.consumption = consumption
        self.label = label
        self.count = count
        self.mature = mature
    }

    /// The cells of `cells` with equal keys added together, sorted by key (to compare stores).
    public static func merged(_ cells: [ModelPerformanceCell]) -> [ModelPerformanceCell] {
        var byKey: [String: ModelPerformanceCell] = [:]
        for cell in cells {
            let key = cell.sortKey
            if var existing = byKey[key] {
                existing.count += cell.count
                existing.mature += cell.mature
                byKey[key] = existing
            } else {
                byKey[key] = cell
            }
        }
        return byKey.keys.sorted().compactMap { byKey[$0] }
    }

    /// The key cells are merged and sorted by.
    public var sortKey: String {
        [
            modelVersion, category.rawValue, value.rawValue, consumption?.rawValue ?? "", label?.rawValue ?? "",
            shadow ? "shadow" : "", scoreBin.map { String($0) } ?? "", source?.platform.rawValue ?? "", source?.kit ?? "",
            source?.version ?? ""
        ]
        .joined(separator: "\u{1}")
    }
}

/// A proportion with its sample size and its 95 % Wilson score interval.
public struct Proportion: Sendable, Equatable {
    /// The successes over `sample`; nil when the sample is empty.
    public var value: Double?
    public var successes: Int
    public var sample: Int
    /// The 95 % Wilson score interval; nil when the sample is empty.
    public var interval: (low: Double, high: Double)?

    public init(successes: Int, of sample: Int) {
        self.successes = successes
        self.sample = sample
        value = sample == 0 ? nil : Double(successes) / Double(sample)
        interval = Self.wilson(successes: successes, of: sample)
    }

    /// The two-sided 95 % normal quantile.
    public static let z = 1.959963984540054

    /// The Wilson score interval of `successes` out of `sample` at 95 %; nil for an empty sample.
    public static func wilson(successes: Int, of sample: Int) -> (low: Double, high: Double)? {
        guard sample > 0 else { return nil }
        let n = Double(sample), p = Double(successes) / n, z2 = z * z
        let centre = (p + z2 / (2 * n)) / (1 + z2 / n)
        let half = z / (1 + z2 / n) * (p * (1 - p) / n + z2 / (4 * n * n)).squareRoot()
        return (max(0, centre - half), min(1, centre + half))
    }

    public static func == (a: Proportion, b: Proportion) -> Bool {
        a.successes == b.successes && a.sample == b.sample
    }
}

/// Whether a version's answers were returned to callers or only stored beside them.
public enum ModelRole: String, Sendable, CaseIterable {
    /// Answered to callers (the current version, or one a caller named).
    case served
    /// Scored beside every coaching insight and stored, never answered (`INSIGHTD_MODEL_SHADOW`).
    case shadow
}

/// The population stability index of a version's scores against its reference distribution.
public struct ScoreStability: Sendable, Equatable {
    /// Σ (actual − expected) × ln(actual / expected) over the reference's bins, each share at
    /// least `PopulationStability.epsilon`.
    public var psi: Double
    /// The scores it was computed over.
    public var sample: Int
}

/// The population stability index (PSI): how far a distribution over bins has moved from a
/// reference one. Rules of thumb: below 0.1 stable, 0.1 to 0.2 moderate, above 0.2 a shift.
public enum PopulationStability {
    /// The share an empty bin counts as, on either side, so that the logarithm is finite.
    public static let epsilon = 0.0001

    /// The index of `counts` (scores per bin) against `expected` (the reference share of each
    /// bin); nil when no score falls in the reference's bins or `expected` is empty. Counts past
    /// the reference's bins are not counted.
    public static func index(counts: [Int], expected: [Double]) -> ScoreStability? {
        guard !expected.isEmpty else { return nil }
        var sample = 0
        for k in expected.indices where k < counts.count { sample += counts[k] }
        guard sample > 0 else { return nil }
        var psi = 0.0
        for (k, e) in expected.enumerated() {
            let actual = max(Double(k < counts.count ? counts[k] : 0) / Double(sample), epsilon), reference = max(e, epsilon)
            psi += (actual - reference) * log(actual / reference)
        }
        return ScoreStability(psi: psi, sample: sample)
    }
}

/// The reference shares of each model version's score bins, by version and category
/// (the manifests' `scoreReference`); a version or category missing has no drift figure.
public typealias ScoreReferences = [String: [OperationCategory: ReferenceShares]]

/// The expected share of each score bin of one version and category: over the mix of sessions
/// the thresholds were set on, and over the sessions of the platforms that have their own
/// profile (web), against which the scores of that platform's capture kits are measured.
public struct ReferenceShares: Sendable, Equatable, ExpressibleByArrayLiteral {
    public var shares: [Double]
    public var byPlatform: [ClientPlatform: [Double]]

    public init(shares: [Double], byPlatform: [ClientPlatform: [Double]] = [:]) {
        self.shares = shares
        self.byPlatform = byPlatform
    }

    /// The mix's shares.
    public init(arrayLiteral shares: Double...) { self.init(shares: shares) }

    /// The shares the scores of `platform`'s clients are expected to fall in.
    public func shares(for platform: ClientPlatform?) -> [Double] {
        platform.flatMap { byPlatform[$0] } ?? shares
    }
}

/// The report of one model version on one category over a period (docs/operations.md
/// "Model performance").
public struct ModelPerformanceRow: Sendable, Equatable {
    public var modelVersion: String
    public var category: OperationCategory
    /// Served or shadow; a version may have a row of each.
    public var role: ModelRole
    /// Drift of its scores against its manifest's reference; nil when it has none, or no score
    /// of the period fell in a bin.
    public var psi: ScoreStability?
    /// Insights that answered a value.
    public var evaluations: Int
    public var values: [InsightValue: Int]
    /// Per consumption status; `nil` counts the insights whose evaluation has no report.
    public var consumption: [ConsumptionStatus?: Int]
    /// Labelled insights per label outcome and value.
    public var labelled: [LabelOutcome: [InsightValue: Int]]
    /// Of the labelled `medium` or `high`, the share confirmed fraud.
    public var precisionMediumOrHigh: Proportion
    /// Of the labelled `high`, the share confirmed fraud.
    public var precisionHigh: Proportion
    /// Of the confirmed fraud, the share answered `medium` or `high`.
    public var recallMediumOrHigh: Proportion
    /// Of the confirmed fraud, the share answered `high`.
    public var recallHigh: Proportion
    /// The share of `evaluations` created before the maturity cutoff.
    public var matureShare: Double
    /// In a row of `bySource`: the capture kit of its evaluations (nil: they named none).
    public var source: InteractionSource?
    /// The same figures per capture kit (`interaction.source`: platform, kit and kit version),
    /// most evaluations first, so that a kit version that moves the scores (its `psi`, its share
    /// of `medium` and `high`) stands out beside the others; empty when no evaluation of the row
    /// named a source. Callers choose the names, so past `ModelPerformanceReport.maxSources`
    /// rows the least used kits are added up per platform (and those that named none) under
    /// kit and version `other`: at most `maxSources - 1` named rows and one per platform.
    public var bySource: [ModelPerformanceRow] = []
}

/// The report over a period: one row per model version and category, by version then category.
public struct ModelPerformanceReport: Sendable, Equatable {
    /// The most capture kits a row is split by (`ModelPerformanceRow.bySource`).
    public static let maxSources = 20

    public var rows: [ModelPerformanceRow]
    /// Whether the whole period is older than the label maturity (`ModelPerformanceQuery.matureBefore`).
    public var mature: Bool

    public init(cells: [ModelPerformanceCell], query: ModelPerformanceQuery, references: ScoreReferences = [:]) {
        mature = query.to <= query.matureBefore
        var grouped: [String: [ModelPerformanceCell]] = [:]
        for cell in cells {
            grouped[cell.modelVersion + "\u{1}" + cell.category.rawValue + (cell.shadow ? "\u{1}shadow" : ""), default: []].append(cell)
        }
        rows = grouped.values.map { Self.row($0, references: references, splittingBySource: true) }.sorted {
            ($0.modelVersion, $0.category.rawValue, $0.role.rawValue) < ($1.modelVersion, $1.category.rawValue, $1.role.rawValue)
        }
    }

    static func row(_ cells: [ModelPerformanceCell], references: ScoreReferences, splittingBySource: Bool) -> ModelPerformanceRow {
        var bins: [Int] = []
        for cell in cells {
            guard let bin = cell.scoreBin, bin >= 0, bin < 1_000 else { continue }
            if bins.count <= bin { bins += [Int](repeating: 0, count: bin + 1 - bins.count) }
            bins[bin] += cell.count
        }
        // A capture kit's scores against its platform's own reference where there is one.
        let expected = references[cells[0].modelVersion]?[cells[0].category]?
            .shares(for: splittingBySource ? nil : cells[0].source?.platform)
        let psi = expected.flatMap { PopulationStability.index(counts: bins, expected: $0) }
        var values: [InsightValue: Int] = [:]
        var consumption: [ConsumptionStatus?: Int] = [:]
        var labelled: [LabelOutcome: [InsightValue: Int]] = [:]
        var evaluations = 0, mature = 0
        for cell in cells {
            evaluations += cell.count
            mature += cell.mature
            values[cell.value, default: 0] += cell.count
            consumption[cell.consumption, default: 0] += cell.count
            if let label = cell.label { labelled[label, default: [:]][cell.value, default: 0] += cell.count }
        }
        let fraud = labelled[.confirmedFraud] ?? [:], legitimate = labelled[.confirmedLegitimate] ?? [:]
        let fraudHigh = fraud[.high] ?? 0, fraudMedium = fraud[.medium] ?? 0
        let legitimateHigh = legitimate[.high] ?? 0, legitimateMedium = legitimate[.medium] ?? 0
        let allFraud = fraud.values.reduce(0, +)
        return ModelPerformanceRow(
            modelVersion: cells[0].modelVersion, category: cells[0].category, role: cells[0].shadow ? .shadow : .served, psi: psi,
            evaluations: evaluations, values: values,
            consumption: consumption, labelled: labelled,
            precisionMediumOrHigh: Proportion(
                successes: fraudHigh + fraudMedium,
                of: fraudHigh + fraudMedium + legitimateHigh + legitimateMedium),
            precisionHigh: Proportion(successes: fraudHigh, of: fraudHigh + legitimateHigh),
            recallMediumOrHigh: Proportion(successes: fraudHigh + fraudMedium, of: allFraud),
            recallHigh: Proportion(successes: fraudHigh, of: allFraud),
            matureShare: evaluations == 0 ? 0 : Double(mature) / Double(evaluations),
            source: splittingBySource ? nil : cells[0].source,
            bySource: splittingBySource ? bySource(cells, references: references) : [])
    }

    /// `cells` split by capture kit, most evaluations first (then by platform, kit and version),
    /// the kits past `maxSources` added up per platform as kit and version `other` (after the
    /// others); empty when none of them named a kit.
    static func bySource(_ cells: [ModelPerformanceCell], references: ScoreReferences) -> [ModelPerformanceRow] {
        guard cells.contains(where: { $0.source != nil }) else { return [] }
        var groups: [InteractionSource?: [ModelPerformanceCell]] = [:]
        for cell in cells { groups[cell.source, default: []].append(cell) }
        func evaluations(_ cells: [ModelPerformanceCell]) -> Int { cells.reduce(0) { $0 + $1.count } }
        func key(_ source: InteractionSource?) -> [String] {
            [source?.platform.rawValue ?? "", source?.kit ?? "", source?.version ?? ""]
        }
        var ranked = groups.map { (source: $0.key, cells: $0.value, evaluations: evaluations($0.value)) }
        ranked.sort { a, b in
            a.evaluations != b.evaluations ? a.evaluations > b.evaluations : key(a.source).lexicographicallyPrecedes(key(b.source))
        }
        if ranked.count > maxSources {
            // Past the cap, what callers named is folded per platform: the platforms are closed.
            var folded: [InteractionSource?: [ModelPerformanceCell]] = [:]
            for group in ranked[(maxSources - 1)...] {
                let source = group.source.map { InteractionSource(kit: "other", version: "other", platform: $0.platform) }
                folded[source, default: []] += group.cells.map { cell in
                    var cell = cell
                    cell.source = source
                    return cell
                }
            }
            ranked = Array(ranked[..<(maxSources - 1)])
            ranked += folded.map { (source: $0.key, cells: $0.value, evaluations: evaluations($0.value)) }
                .sorted { key($0.source).lexicographicallyPrecedes(key($1.source)) }
        }
        return ranked.map { row($0.cells, references: references, splittingBySource: false) }
    }
}
