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
struct InsightAnswerer: Sendable {
    let registry: ModelRegistry?
    /// Features of the interaction, extracted once for all insights of the evaluation;
    /// nil when the caller sent no interaction (no evidence).
    let features: FeatureVector?
    /// Outcomes forced by a sandbox caller, by insight type.
    let override: SandboxOverride?
    /// The client platform the capture kit named (`interaction.source.platform`): the models
    /// judge it with its own thresholds where their manifests have them; nil, the category's.
    let platform: ClientPlatform?

    /// The schema versions of `isLikelyBeingCoached` this server answers.
    static let supportedSchemaVersions = [1]

    /// Extracts the features, turning a hostile or inconsistent interaction into `contextInvalid`.
    init(
        registry: ModelRegistry?, interaction: InteractionInput, platform: ClientPlatform? = nil,
        override: SandboxOverride? = nil
    ) throws(Rejection) {
        self.registry = registry
        self.override = override
        self.platform = platform
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

    /// The stored and returned record of one requested insight; `admitted` says whether its
    /// unit of quota was taken (asked only of insights for which `asksQuota` is true).
    func answer(_ request: InsightRequest, category: OperationCategory, insightId: String, admitted: Bool = true) -> InsightRecord {
        var answer = modelAnswer(request, category: category, insightId: insightId, admitted: admitted)
        // A sandbox override replaces the outcome but keeps ids and versions as they were.
        if let forced = override?.insights[request.type] { answer.outcome = forced }
        return answer
    }

    /// Whether answering `request` consults a model, and so takes a unit of its type's quota:
    /// every insight but those refused before (unknown type or version, no model).
    func asksQuota(_ request: InsightRequest) -> Bool {
        if case .model = serving(request) { return true }
        return false
    }

    /// The model that answers `request`, or why none does.
    private enum Serving {
        case model(CoachingModelVersion, newest: String)
        case refused(modelVersion: String?, newest: String?, InsightOutcome)
    }

    private func serving(_ request: InsightRequest) -> Serving {
        guard InsightType(rawValue: request.type) != nil else {
            return .refused(
                modelVersion: nil, newest: nil,
                .error(.insightUnavailable, detail: "This server offers no insight of that type."))
        }
        guard Self.supportedSchemaVersions.contains(request.schemaVersion) else {
            return .refused(
                modelVersion: request.modelVersion, newest: registry?.currentVersion,
                .error(.insightVersionIncompatible, detail: "This schema version is not supported; supported: 1."))
        }
        guard let registry else {
            return .refused(
                modelVersion: request.modelVersion, newest: nil,
                .error(.insightUnavailable, detail: "No model is loaded for this insight type."))
        }
        let newest = registry.currentVersion
        guard let model = registry.model(version: request.modelVersion), !model.withdrawn else {
            return .refused(
                modelVersion: request.modelVersion, newest: newest,
                .error(.insightVersionUnavailable, detail: "That model version is unknown or withdrawn; current is \(newest)."))
        }
        return .model(model, newest: newest)
    }

    private func modelAnswer(
        _ request: InsightRequest, category: OperationCategory, insightId: String,
        admitted: Bool
    ) -> InsightRecord {
        func record(_ modelVersion: String?, _ newest: String?, _ outcome: InsightOutcome) -> InsightRecord {
            InsightRecord(
                insightId: insightId, type: request.type, schemaVersion: request.schemaVersion,
                modelVersion: modelVersion, newestModelVersion: newest, outcome: outcome)
        }
        let model: CoachingModelVersion, newest: String
        switch serving(request) {
        case .refused(let modelVersion, let newest, let outcome): return record(modelVersion, newest, outcome)
        case .model(let served, let current): (model, newest) = (served, current)
        }
        guard admitted else {
            return record(
                model.version, newest,
                .error(.rateLimitError, detail: "The quota for this insight type is used up; the other insights still answer."))
        }
        guard let features else {
            // No interaction at all: no evidence, which is `unknown`, never a guess.
            return record(model.version, newest, .value(.unknown, reasons: []))
        }
        var answer = record(model.version, newest, .value(.unknown, reasons: []))
        (answer.outcome, answer.scoreBin) = Self.assess(model, features, category: category, platform: platform)
        return answer
    }

    /// The answers of the registry's shadow versions for an evaluation whose served
    /// `isLikelyBeingCoached` insight (among `served`) was answered by a model and that sent an
    /// interaction, on the features extracted for it; none otherwise — not where the served one
    /// failed (a quota used up, an unknown version), so that the report compares the versions on
    /// the same evaluations. They take no quota and no sandbox override: they are the models' own
    /// answers, kept for comparison (docs/operations.md "Shadow versions") and never answered.
    /// Their ids are made from `eventId` at the positions after the served ones
    /// (`EvaluationIdentifiers`).
    func shadowAnswers(served: [InsightRecord], category: OperationCategory, eventId: String) -> [InsightRecord] {
        guard let registry, !registry.shadows.isEmpty, let features,
            served.contains(where: { insight in
                guard insight.type == InsightType.isLikelyBeingCoached.rawValue, case .value = insight.outcome else { return false }
                return true
            })
        else { return [] }
        return registry.shadows.enumerated().map { k, model in
            let position = EvaluationRecord.maxServedInsights + k
            var answer = InsightRecord(
                insightId: EvaluationIdentifiers.insightId(eventId: eventId, position: position) ?? "\(eventId)-shadow\(k)",
                type: InsightType.isLikelyBeingCoached.rawValue, schemaVersion: 1, modelVersion: model.version,
                newestModelVersion: registry.currentVersion, outcome: .value(.unknown, reasons: []))
            (answer.outcome, answer.scoreBin) = Self.assess(model, features, category: category, platform: platform)
            return answer
        }
    }

    /// `model`'s value, reasons and score bin for `features` in `category` from `platform`.
    private static func assess(
        _ model: CoachingModelVersion, _ features: FeatureVector,
        category: OperationCategory, platform: ClientPlatform?
    ) -> (InsightOutcome, Int?) {
        let assessment = model.assess(features, category: category.rawValue, platform: platform?.rawValue)
        let value: InsightValue
        switch assessment.level {
        case .unknown: value = .unknown
        case .medium: value = .medium
        case .high: value = .high
        }
        return (.value(value, reasons: assessment.reasons), assessment.scoreBin)
    }
}
