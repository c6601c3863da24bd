#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The values of `isLikelyBeingCoached` schema version 1. There is no "low": `unknown` means no
/// evidence of coaching (or too little data to tell), never "low risk".
public enum CoachingLevel: String, Sendable, CaseIterable {
    case unknown, medium, high
}

/// One assessment: the level, the model's probability-like score, and the reason codes of the
/// signals that drove a `medium` or `high` level (empty for `unknown`).
public struct CoachingAssessment: Sendable, Equatable {
    /// The level for the caller.
    public var level: CoachingLevel
    /// sigmoid(raw score) in [0, 1]; for metrics and logs, not a calibrated probability in the
    /// field (the simulator's class balance is not the world's).
    public var score: Double
    /// Reason codes (docs/features.md), strongest first.
    public var reasons: [String]
    /// The bin of the model's reference distribution for the category that the raw score falls
    /// in (`ScoreReference`); nil when the manifest has no reference for it.
    public var scoreBin: Int?

    /// An assessment.
    public init(level: CoachingLevel, score: Double, reasons: [String], scoreBin: Int? = nil) {
        self.level = level
        self.score = score
        self.reasons = reasons
        self.scoreBin = scoreBin
    }
}

/// The distribution of a model's raw scores on the trainer's held-out sessions, per category
/// (manifest `scoreReference`, written by training/train.py): the reference that drift is
/// measured against (population stability index, docs/operations.md "Drift"). Only the bin a
/// score falls in is stored with an insight, never the score itself.
public struct ScoreReference: Sendable, Equatable {
    /// One category's bins: `edges` strictly increasing raw scores; a score `s` falls in bin
    /// `k` = the number of edges `<= s`, so there are `edges.count + 1` bins, each expected to
    /// hold `shares[k]` of the scores.
    public struct Bins: Sendable, Equatable {
        public let edges: [Double]
        public let shares: [Double]
        /// The share of each bin over the held-out sessions of a client platform that has its
        /// own profile (`web`): the reference for the scores of that platform's traffic alone.
        public let platformShares: [String: [Double]]

        public init(edges: [Double], shares: [Double], platformShares: [String: [Double]] = [:]) {
            self.edges = edges
            self.shares = shares
            self.platformShares = platformShares
        }

        /// The expected shares for the scores of `platform`'s traffic (its own where the
        /// manifest has them, else the mix's).
        public func shares(for platform: String?) -> [Double] {
            platform.flatMap { platformShares[$0] } ?? shares
        }

        /// The bin of raw score `raw` (NaN is not a score any model gives; it falls in bin 0).
        public func bin(of raw: Double) -> Int {
            var low = 0, high = edges.count
            while low < high {
                let mid = (low + high) / 2
                if edges[mid] <= raw { low = mid + 1 } else { high = mid }
            }
            return low
        }
    }

    /// The most bins a category may have: the stored bin is a small integer.
    public static let maxBins = 100

    /// Bins per category name.
    public let bins: [String: Bins]

    public init(bins: [String: Bins]) { self.bins = bins }
}

/// The raw-score thresholds of one operation category: above `medium` is medium, above `high`
/// is high.
public struct CoachingThresholds: Sendable, Equatable {
    /// Raw-score (log-odds) threshold for `medium`.
    public var medium: Double
    /// Raw-score (log-odds) threshold for `high`.
    public var high: Double
}

/// The evidence rule: below it a session answers `unknown` whatever it scores.
struct EvidenceRule: Sendable {
    var minUserActions: Double
    var minSessionSeconds: Double
    var deviceSignals: [Feature]

    /// Behaviour was observed (enough actions over enough time), or a device fact that speaks on
    /// its own (active call, screen sharing, remote-access app) is present.
    func isSatisfied(by f: FeatureVector) -> Bool {
        let actions = f[.userActionCount], seconds = f[.sessionSeconds]
        if !actions.isNaN, actions >= minUserActions, !seconds.isNaN, seconds >= minSessionSeconds {
            return true
        }
        return deviceSignals.contains { f[$0] == 1 }
    }
}

/// One loaded model version: the tree ensemble, its feature order, per-category thresholds and
/// the evidence and reason rules from its manifest. Immutable, so shared freely across threads.
public final class CoachingModelVersion: Sendable {
    /// The operation categories every manifest must give thresholds for.
    public static let categories = ["payment", "account", "resourceUse", "communication", "other"]
    /// The client platforms a manifest may give thresholds of their own for
    /// (`interaction.source.platform`).
    public static let platforms = ["web", "ios", "android", "other"]

    /// The version string, e.g. "2.0".
    public let version: String
    /// Marked withdrawn in its manifest: callers asking for it get `insightVersionUnavailable`.
    public let withdrawn: Bool
    /// The model's input features, in its order (a subset of `FeatureVector.names`).
    public let features: [String]
    /// Thresholds per operation category.
    public let thresholds: [String: CoachingThresholds]
    /// Thresholds per client platform and operation category, for the platforms whose sessions
    /// score differently from the mix the `thresholds` were set on (the web capture kit's: no
    /// device facts, its own event granularity); a platform not listed takes `thresholds`.
    public let platformThresholds: [String: [String: CoachingThresholds]]
    /// Lowercase hex sha256 of model.json, as verified at load.
    public let modelSHA256: String
    /// Number of trees in the ensemble.
    public var treeCount: Int { ensemble.treeCount }
    /// The reference distribution of its scores, per category; nil when its manifest has none
    /// (then it has no drift figure).
    public let reference: ScoreReference?

    let ensemble: TreeEnsemble
    let inputs: [Feature]
    let evidence: EvidenceRule
    let maxReasons: Int
    let minContribution: Double
    // The distinct reason codes of the inputs, in input order, and each input's index into them
    // (-1: no code), so reasons are summed in flat arrays on the request path.
    private let reasonCodes: [String]
    private let reasonOfInput: [Int]
    /// Each code's place in the codes sorted as strings: ties between equal totals are broken by
    /// name, and comparing these costs less than comparing the names on every request.
    private let reasonCodeRank: [Int]

    init(
        version: String, withdrawn: Bool, inputs: [Feature], ensemble: TreeEnsemble,
        thresholds: [String: CoachingThresholds], evidence: EvidenceRule, maxReasons: Int,
        minContribution: Double, modelSHA256: String, reference: ScoreReference? = nil,
        platformThresholds: [String: [String: CoachingThresholds]] = [:]
    ) {
        self.reference = reference
        self.platformThresholds = platformThresholds
        self.version = version
        self.withdrawn = withdrawn
        self.inputs = inputs
        self.features = inputs.map(\.name)
        self.ensemble = ensemble
        self.thresholds = thresholds
        self.evidence = evidence
        self.maxReasons = maxReasons
        self.minContribution = minContribution
        self.modelSHA256 = modelSHA256
        var codes: [String] = []
        var reasonOfInput: [Int] = []
        for feature in inputs {
            guard let code = feature.reasonCode else {
                reasonOfInput.append(-1)
                continue
            }
            if let k = codes.firstIndex(of: code) {
                reasonOfInput.append(k)
            } else {
                codes.append(code)
                reasonOfInput.append(codes.count - 1)
            }
        }
        self.reasonCodes = codes
        self.reasonOfInput = reasonOfInput
        var rank = [Int](repeating: 0, count: codes.count)
        for (place, k) in codes.indices.sorted(by: { codes[$0] < codes[$1] }).enumerated() { rank[k] = place }
        self.reasonCodeRank = rank
    }

    /// The level, score and reasons for `features` in operation `category` (one of
    /// `categories`; anything else is judged with the `other` thresholds), from a client of
    /// `platform` (`interaction.source.platform`): its own thresholds where the manifest has
    /// them, else those of the category; nil, as for a request without a source, takes the
    /// category's.
    public func assess(_ features: FeatureVector, category: String, platform: String? = nil) -> CoachingAssessment {
        let x = input(features)
        let bins = reference?.bins[category]
        guard evidence.isSatisfied(by: features),
            let t = thresholds(category: category, platform: platform)
        else {
            let raw = ensemble.rawScore(x)
            return CoachingAssessment(level: .unknown, score: Self.sigmoid(raw), reasons: [], scoreBin: bins?.bin(of: raw))
        }
        // Reasons may be needed: score and attribute in one walk of the trees.
        let (raw, contributions) = ensemble.scoreAndContributions(x)
        let level: CoachingLevel = raw > t.high ? .high : raw > t.medium ? .medium : .unknown
        return CoachingAssessment(
            level: level, score: Self.sigmoid(raw),
            reasons: level == .unknown ? [] : reasons(x, contributions), scoreBin: bins?.bin(of: raw))
    }

    private static func sigmoid(_ raw: Double) -> Double { 1.0 / (1.0 + exp(-raw)) }

    /// The thresholds that judge `category` for `platform`.
    public func thresholds(category: String, platform: String?) -> CoachingThresholds? {
        if let platform, let table = platformThresholds[platform] { return table[category] ?? table["other"] }
        return thresholds[category] ?? thresholds["other"]
    }

    /// The raw score (log-odds) LightGBM would give `features`.
    public func rawScore(_ features: FeatureVector) -> Double {
        ensemble.rawScore(input(features))
    }

    /// Whether `features` carry enough evidence for anything but `unknown`.
    public func hasSufficientEvidence(_ features: FeatureVector) -> Bool {
        evidence.isSatisfied(by: features)
    }

    /// Per-feature Saabas contributions to the raw score, by feature name.
    public func contributions(_ features: FeatureVector) -> [String: Double] {
        let c = ensemble.contributions(input(features))
        return Dictionary(uniqueKeysWithValues: zip(self.features, c))
    }

    private func input(_ features: FeatureVector) -> [Double] {
        inputs.map { TreeEnsemble.prepare(features[$0]) }
    }

    /// Reason codes from the contributions: features grouped by code (a missing feature names
    /// nothing, whatever its default branch added), codes whose total reaches `minContribution`,
    /// strongest first, at most `maxReasons`; if none reaches it, the single strongest positive
    /// one, so a medium or high value names at least one signal whenever an observed, coded
    /// feature raised the score. training/train.py `reasons` is the same.
    private func reasons(_ x: [Double], _ c: [Double]) -> [String] {
        // Scratch space on the stack: this runs for every medium or high answer. Per code: the
        // sum of its inputs' contributions, and whether any of its inputs was observed.
        withUnsafeTemporaryAllocation(of: (total: Double, present: Bool).self, capacity: reasonCodes.count) { codes in
            withUnsafeTemporaryAllocation(of: Int.self, capacity: reasonCodes.count) { ranked in
                codes.initialize(repeating: (0, false))
                for j in 0..<inputs.count {
                    let k = reasonOfInput[j]
                    guard k >= 0, !x[j].isNaN else { continue }
                    codes[k].present = true
                    codes[k].total += c[j]
                }
                // Strongest first, ties by name: a total order, so insertion into the few codes
                // present gives what sorting gives.
                var count = 0
                for k in reasonCodes.indices where codes[k].present {
                    var at = count
                    while at > 0 {
                        let other = ranked[at - 1], total = codes[k].total, otherTotal = codes[other].total
                        let before = total != otherTotal ? total > otherTotal : reasonCodeRank[k] < reasonCodeRank[other]
                        if !before { break }
                        ranked[at] = other
                        at -= 1
                    }
                    ranked[at] = k
                    count += 1
                }
                var chosen: [String] = []
                for k in ranked[..<count] where codes[k].total >= minContribution && chosen.count < maxReasons {
                    chosen.append(reasonCodes[k])
                }
                if chosen.isEmpty, count > 0, codes[ranked[0]].total > 0, maxReasons > 0 { chosen = [reasonCodes[ranked[0]]] }
                return chosen
            }
        }
    }

}
