import CoachingModel
import InsightDomain
import Locking

/// The loaded coaching models, replaceable at run time (SIGHUP) without dropping requests:
/// each evaluation takes one snapshot of the registry and uses it throughout.
public final class InsightModels: Sendable {
    private let registry: Locked<ModelRegistry?>

    /// Models from `registry`; nil means no model is loaded and every coaching insight
    /// answers `insightUnavailable`.
    public init(_ registry: ModelRegistry?) { self.registry = Locked(registry) }

    /// Swaps in a newly loaded registry.
    public func replace(_ registry: ModelRegistry?) { self.registry.withLock { $0 = registry } }

    /// The registry in use now.
    public var snapshot: ModelRegistry? { registry.withLock { $0 } }
}

/// Answers the insights of one evaluation from one registry snapshot.
struct InsightAnswerer {
    let registry: ModelRegistry?
    /// Features of the interaction, extracted once for all insights of the evaluation;
    /// nil when the caller sent no interaction (no evidence).
    let features: FeatureVector?
    /// Outcomes forced by a sandbox caller, by insight type.
    let override: SandboxOverride?
    /// Takes one unit of the caller's quota for an insight type; false when it is used up.
    let admitInsight: (String) -> Bool

    /// The schema versions of `isLikelyBeingCoached` this server answers.
    static let supportedSchemaVersions = [1]

    /// Extracts the features, turning a hostile or inconsistent interaction into `contextInvalid`.
    init(registry: ModelRegistry?, interaction: InteractionInput, override: SandboxOverride? = nil,
         admitInsight: @escaping (String) -> Bool = { _ in true }) throws(Rejection) {
        self.registry = registry
        self.override = override
        self.admitInsight = admitInsight
        do {
            switch interaction {
            case .none: features = nil
            case .events(let events, let device): features = try FeatureExtractor.extract(events: events, device: device)
            case .summary(let summary, let device): features = try FeatureExtractor.fromSummary(summary, device: device)
            }
        } catch {
            throw .invalid(field: error.field, detail: error.message)
        }
    }

    /// The stored and returned record of one requested insight.
    func answer(_ request: InsightRequest, category: OperationCategory, insightId: String) -> InsightRecord {
        var answer = modelAnswer(request, category: category, insightId: insightId)
        // A sandbox override replaces the outcome but keeps ids and versions as they were.
        if let forced = override?.insights[request.type] { answer.outcome = forced }
        return answer
    }

    private func modelAnswer(_ request: InsightRequest, category: OperationCategory, insightId: String) -> InsightRecord {
        func record(_ modelVersion: String?, _ newest: String?, _ outcome: InsightOutcome) -> InsightRecord {
            InsightRecord(insightId: insightId, type: request.type, schemaVersion: request.schemaVersion,
                          modelVersion: modelVersion, newestModelVersion: newest, outcome: outcome)
        }
        guard InsightType(rawValue: request.type) != nil else {
            return record(nil, nil, .error(.insightUnavailable, detail: "This server offers no insight of that type."))
        }
        guard Self.supportedSchemaVersions.contains(request.schemaVersion) else {
            return record(request.modelVersion, registry?.currentVersion,
                          .error(.insightVersionIncompatible, detail: "This schema version is not supported; supported: 1."))
        }
        guard let registry else {
            return record(request.modelVersion, nil,
                          .error(.insightUnavailable, detail: "No model is loaded for this insight type."))
        }
        let newest = registry.currentVersion
        guard let model = registry.model(version: request.modelVersion), !model.withdrawn else {
            return record(request.modelVersion, newest,
                          .error(.insightVersionUnavailable, detail: "That model version is unknown or withdrawn; current is \(newest)."))
        }
        guard admitInsight(request.type) else {
            return record(model.version, newest,
                          .error(.rateLimitError, detail: "The quota for this insight type is used up; the other insights still answer."))
        }
        guard let features else {
            // No interaction at all: no evidence, which is `unknown`, never a guess.
            return record(model.version, newest, .value(.unknown, reasons: []))
        }
        let assessment = model.assess(features, category: category.rawValue)
        let value: InsightValue
        switch assessment.level {
        case .unknown: value = .unknown
        case .medium: value = .medium
        case .high: value = .high
        }
        return record(model.version, newest, .value(value, reasons: assessment.reasons))
    }
}
