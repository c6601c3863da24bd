import CoachingModel
import InsightDomain
import Locking

/// Drift of each model version's scores on this instance's recent traffic
/// (`insightd_model_score_psi{version,category}`, docs/operations.md "Drift"): the score bins of
/// the coaching insights this instance stored (served and shadow), counted per version and
/// category in windows of `window` milliseconds; the index is computed over the last full
/// window and the current one against the version's reference distribution, once they hold
/// `minimumSample` scores. The same is counted apart per capture kit that evaluations name
/// (`interaction.source`; `insightd_model_score_source_psi`), so that a kit version that moves
/// the scores shows on its own. The first time in a window that a version and category (and
/// kit) pass `threshold`, `warn` is called once (the daemon logs a warning with no identifier).
public final class ScoreDrift: Sendable {
    /// The counts of one version and category.
    struct Counts {
        /// The window `current` counts (time / window).
        var window: Int64
        var current: [Int] = []
        /// The window before `window`.
        var previous: [Int] = []
        /// The last window in which the threshold was passed and reported.
        var warnedIn: Int64?
        /// Scores counted since the index was last checked against the threshold.
        var sinceCheck = 0
    }

    struct Key: Hashable {
        var version: String
        var category: OperationCategory
        /// The capture kit the counts are of; nil: every evaluation's.
        var source: InteractionSource?
    }

    /// Callers choose kit names and versions: at most this many distinct kits are counted under
    /// their own names at once (a kit with no score in the last two windows frees its place);
    /// the scores of any other are counted per platform as kit and version `other`.
    static let maxSources = 24

    private let models: InsightModels
    private let clock: any Clock
    private let window: Milliseconds
    private let minimumSample: Int
    private let threshold: Double
    private let warn:
        @Sendable (
            _ version: String, _ category: OperationCategory, _ source: InteractionSource?,
            _ stability: ScoreStability
        ) -> Void
    private let counts = Locked<[Key: Counts]>([:])

    /// The threshold is checked every `checkEvery` scores of a version and category (and at the
    /// minimum sample), so the request path does not compute logarithms for every evaluation.
    static let checkEvery = 50

    public init(
        models: InsightModels, clock: any Clock, window: Milliseconds = 3_600_000, minimumSample: Int = 500,
        threshold: Double = 0.2,
        warn:
            @escaping @Sendable (
                _ version: String, _ category: OperationCategory, _ source: InteractionSource?,
                _ stability: ScoreStability
            ) -> Void
    ) {
        self.models = models
        self.clock = clock
        self.window = window
        self.minimumSample = minimumSample
        self.threshold = threshold
        self.warn = warn
    }

    /// Counts the score bins of `record`'s coaching insights, served and shadow: for all
    /// evaluations, and for its capture kit's when it names one.
    func record(_ record: EvaluationRecord) {
        var keys: [(Key, Int)] = []
        func add(_ insights: [InsightRecord]) {
            for insight in insights {
                guard let bin = insight.scoreBin, bin >= 0, bin < ScoreReference.maxBins, let version = insight.modelVersion,
                    insight.type == InsightType.isLikelyBeingCoached.rawValue, case .value = insight.outcome
                else { continue }
                keys.append((Key(version: version, category: record.category), bin))
            }
        }
        add(record.insights)
        add(record.shadowInsights)
        guard !keys.isEmpty else { return }
        let now = clock.now() / window
        var due: [Key] = []
        let minimumSample = self.minimumSample
        counts.withLock { all in
            let source = record.source.map { Self.admitted($0, as: keys[0].0, among: all) }
            for (key, bin) in keys {
                if Self.count(bin, in: &all[key, default: Counts(window: now)], now: now, minimumSample: minimumSample) {
                    due.append(key)
                }
                guard let source else { continue }
                var kit = key
                kit.source = source
                if Self.count(bin, in: &all[kit, default: Counts(window: now)], now: now, minimumSample: minimumSample) {
                    due.append(kit)
                }
            }
        }
        for key in due { check(key) }
    }

    /// `source` if it is counted under its own name already or there is room for it, else its
    /// platform's `other`. The usual case, a kit already counted for `key`'s version and
    /// category, is one look-up; only a kit new there counts the names.
    private static func admitted(_ source: InteractionSource, as key: Key, among all: [Key: Counts]) -> InteractionSource {
        var kit = key
        kit.source = source
        if all[kit] != nil { return source }
        var named = Set<InteractionSource>()
        for key in all.keys {
            guard let kit = key.source else { continue }
            if kit == source { return source }
            named.insert(kit)
        }
        return named.count < maxSources ? source : InteractionSource(kit: "other", version: "other", platform: source.platform)
    }

    /// Counts one score in `bin` in place (the counts stay the dictionary's own, so no count
    /// array is copied on the request path); true when the threshold is due to be checked.
    private static func count(_ bin: Int, in c: inout Counts, now: Int64, minimumSample: Int) -> Bool {
        rotate(&c, to: now)
        if c.current.count <= bin { c.current += [Int](repeating: 0, count: bin + 1 - c.current.count) }
        c.current[bin] += 1
        c.sinceCheck += 1
        guard c.warnedIn != now, c.sinceCheck >= checkEvery || total(c) == minimumSample else { return false }
        c.sinceCheck = 0
        return true
    }

    /// The index of every version and category with enough scores now, as metric samples
    /// (labels: version, category).
    public func samples() -> [(labels: [String], value: Double)] {
        current().compactMap { key, stability in
            key.source == nil ? (labels: [key.version, key.category.rawValue], value: stability.psi) : nil
        }
    }

    /// The same per capture kit (labels: version, category, platform, kit, kit_version).
    public func sourceSamples() -> [(labels: [String], value: Double)] {
        current().compactMap { key, stability in
            key.source.map {
                (labels: [key.version, key.category.rawValue, $0.platform.rawValue, $0.kit, $0.version], value: stability.psi)
            }
        }
    }

    /// Every key's index now, where it has a reference and enough scores. Kits without a score
    /// in the two windows are forgotten, which frees their places.
    private func current() -> [(Key, ScoreStability)] {
        let registry = models.snapshot
        let now = clock.now() / window
        let all = counts.withLock { all in
            for key in all.keys {
                Self.rotate(&all[key]!, to: now)
                if key.source != nil, Self.total(all[key]!) == 0 { all[key] = nil }
            }
            return all
        }
        return all.compactMap { key, c in stability(key, c, registry).map { (key, $0) } }
    }

    /// The index of `version` and `category` now (of `source`'s scores only, when given), if it
    /// has a reference and enough scores.
    func stability(version: String, category: OperationCategory, source: InteractionSource? = nil) -> ScoreStability? {
        let key = Key(version: version, category: category, source: source), now = clock.now() / window
        guard
            let c = counts.withLock({ all -> Counts? in
                guard all[key] != nil else { return nil }
                Self.rotate(&all[key]!, to: now)
                return all[key]
            })
        else { return nil }
        return stability(key, c, models.snapshot)
    }

    private func stability(_ key: Key, _ c: Counts, _ registry: ModelRegistry?) -> ScoreStability? {
        guard Self.total(c) >= minimumSample,
            let bins = registry?.versions.first(where: { $0.version == key.version })?.reference?.bins[key.category.rawValue]
        else { return nil }
        // A capture kit's scores against its platform's own reference where the manifest has one.
        let shares = bins.shares(for: key.source?.platform.rawValue)
        return PopulationStability.index(counts: Self.sum(c.previous, c.current), expected: shares)
    }

    /// Warns once per window when `key` passes the threshold.
    private func check(_ key: Key) {
        let now = clock.now() / window
        guard let c = counts.withLock({ $0[key] }), c.warnedIn != now,
            let stability = stability(key, c, models.snapshot), stability.psi > threshold
        else { return }
        let first = counts.withLock { all -> Bool in
            guard all[key]?.warnedIn != now else { return false }
            all[key]?.warnedIn = now
            return true
        }
        if first { warn(key.version, key.category, key.source, stability) }
    }

    /// Moves `c` to window `now`: the current counts become the previous ones after one window,
    /// and both are dropped after two.
    private static func rotate(_ c: inout Counts, to now: Int64) {
        guard now > c.window else { return }
        c.previous = now == c.window + 1 ? c.current : []
        c.current = []
        c.window = now
    }

    private static func total(_ c: Counts) -> Int { c.previous.reduce(0, +) + c.current.reduce(0, +) }

    private static func sum(_ a: [Int], _ b: [Int]) -> [Int] {
        (0..<max(a.count, b.count)).map { (a.indices.contains($0) ? a[$0] : 0) + (b.indices.contains($0) ? b[$0] : 0) }
    }
}
