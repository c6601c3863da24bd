import InsightDomain
import Telemetry

/// What the use cases count (Prometheus names `insightd_*`). Label values come from closed
/// vocabularies and operator-chosen tenant names only, so no identifier can reach a label.
public final class ServiceMetrics: Sendable {
    let evaluations: CounterFamily
    let insightErrors: CounterFamily
    let consumptionReports: CounterFamily
    let throttled: CounterFamily
    let labels: CounterFamily
    let velocityRules: CounterFamily
    let erasures: CounterFamily
    let erasedRows: CounterFamily
    let decisions: CounterFamily
    let shadowDisagreements: CounterFamily
    let trainingVectors: CounterFamily
    let retries: CounterFamily
    let droppedEvents: CounterFamily
    let skippedEvents: CounterFamily
    private let registry: MetricsRegistry

    public init(registry: MetricsRegistry) {
        self.registry = registry
        evaluations = registry.counter(
            "insightd_evaluations_total",
            help: "Insights answered with a value, by tenant, category, environment, model version and value.",
            labels: ["tenant", "category", "environment", "model_version", "value"])
        insightErrors = registry.counter(
            "insightd_insight_errors_total", help: "Insights answered with an error, by code.",
            labels: ["code"])
        consumptionReports = registry.counter(
            "insightd_consumption_reports_total",
            help: "Consumption reports recorded, by status and timeliness (repeats not counted).",
            labels: ["status", "timeliness"])
        throttled = registry.counter(
            "insightd_throttled_requests_total", help: "Requests refused by a rate limit, by reason.",
            labels: ["reason"])
        labels = registry.counter(
            "insightd_labels_total", help: "Label items processed, by tenant, outcome and result.",
            labels: ["tenant", "outcome", "result"])
        velocityRules = registry.counter(
            "insightd_velocity_rules_total",
            help: "Velocity rules that fired, by tenant, environment, reason code and mode (enforce, shadow).",
            labels: ["tenant", "environment", "rule", "mode"])
        erasures = registry.counter(
            "insightd_subject_erasures_total", help: "Subject erasures carried out, by tenant.",
            labels: ["tenant"])
        erasedRows = registry.counter(
            "insightd_subject_erased_rows_total",
            help: "Rows an erasure unlinked from a subject, by tenant and table (evaluations, authorizations, training_vectors).",
            labels: ["tenant", "table"])
        decisions = registry.counter(
            "insightd_decisions_total",
            help: "Decisions answered, by environment, category, initiator (person, agent) and action.",
            labels: ["environment", "category", "initiator", "action"])
        shadowDisagreements = registry.counter(
            "insightd_decision_shadow_disagreements_total",
            help:
                "Evaluations whose shadow decision policy answered another action or other reasons than the policy in force, by tenant, environment, each rule of the shadow's answer (none: no rule held) and the two actions.",
            labels: ["tenant", "environment", "rule", "shadow_action", "action"])
        trainingVectors = registry.counter(
            "insightd_training_vectors_captured_total",
            help: "Feature vectors kept for training (callers with training capture on), by tenant and environment.",
            labels: ["tenant", "environment"])
        retries = registry.counter(
            "insightd_evaluation_retries_total",
            help:
                "Evaluation requests repeating an earlier requestId, by tenant and outcome (replayed: answered with the stored answer; refused: other bytes, 422 idempotencyKeyReused).",
            labels: ["tenant", "outcome"])
        skippedEvents = registry.counter(
            "insightd_interaction_skipped_events_total",
            help:
                "Events of types this version does not know (a newer capture kit's), skipped, by the kit's platform (unknown: no interaction.source).",
            labels: ["platform"])
        droppedEvents = registry.counter(
            "insightd_interaction_dropped_events_total",
            help: "Events capture kits said they left out at the event limit (interaction.source.droppedEvents), by platform.",
            labels: ["platform"])
    }

    func retried(tenant: String, replayed: Bool) { retries.increment(tenant, replayed ? "replayed" : "refused") }

    func evaluated(_ record: EvaluationRecord, tenant: String) {
        for insight in record.insights {
            switch insight.outcome {
            case .value(let value, _):
                evaluations.increment(
                    tenant, record.category.rawValue, record.environment.rawValue,
                    insight.modelVersion ?? "none", value.rawValue)
            case .error(let code, _):
                insightErrors.increment(code.rawValue)
            }
        }
    }

    /// Counts the training vector the evaluation kept, if any.
    func captured(_ record: EvaluationRecord) {
        guard let vector = record.trainingVector else { return }
        trainingVectors.increment(vector.tenant, record.environment.rawValue)
    }

    /// Counts the events a capture kit said it dropped, by its platform (the count comes in the
    /// source, so there is always one with it).
    func dropped(_ count: Int64?, by source: InteractionSource?) {
        guard let count, count > 0, let source else { return }
        droppedEvents.increment(source.platform.rawValue, by: Double(count))
    }

    /// Counts the events of unknown types an evaluation skipped.
    func skipped(_ count: Int, by source: InteractionSource?) {
        guard count > 0 else { return }
        skippedEvents.increment(source?.platform.rawValue ?? "unknown", by: Double(count))
    }

    func consumed(_ status: ConsumptionStatus, _ timeliness: Timeliness) {
        consumptionReports.increment(status.rawValue, timeliness.rawValue)
    }

    func velocityFired(_ escalation: Escalation, tenant: String, environment: Environment) {
        for rule in escalation.reasons { velocityRules.increment(tenant, environment.rawValue, rule, "enforce") }
        for rule in escalation.shadowReasons { velocityRules.increment(tenant, environment.rawValue, rule, "shadow") }
    }

    func erased(_ report: SubjectErasureReport, tenant: String) {
        erasures.increment(tenant)
        erasedRows.increment(tenant, "evaluations", by: Double(report.evaluations))
        erasedRows.increment(tenant, "authorizations", by: Double(report.authorizations))
        erasedRows.increment(tenant, "training_vectors", by: Double(report.trainingVectors))
    }

    func decided(_ action: DecisionAction, _ record: EvaluationRecord, initiator: InitiatorKind) {
        decisions.increment(record.environment.rawValue, record.category.rawValue, initiator.rawValue, action.rawValue)
    }

    /// Counts a shadow decision that differs from the live one, once per rule of the shadow's answer.
    func shadowDecided(_ shadow: Decision, live: Decision, tenant: String, environment: Environment) {
        guard shadow.action != live.action || shadow.reasons != live.reasons else { return }
        let (environment, shadowAction, action) = (environment.rawValue, shadow.action.rawValue, live.action.rawValue)
        if shadow.reasons.isEmpty { shadowDisagreements.increment(tenant, environment, "none", shadowAction, action) }
        for rule in shadow.reasons { shadowDisagreements.increment(tenant, environment, rule, shadowAction, action) }
    }

    func throttled(_ reason: ThrottleReason) { throttled.increment(reason.rawValue) }

    /// The velocity rules that fired and the shadow policy's disagreements counted for `tenant`
    /// in `environment` on this instance since it started, most frequent first: one tenant's
    /// admin sees its own counts of its own environment only.
    func velocityCounts(tenant: String, environment: Environment) -> TenantVelocityCounts {
        func ofTenant(_ name: String) -> [MetricsRegistry.Sample] {
            // Ties in the order of their labels, so that the view does not reorder between reads.
            func order(_ sample: MetricsRegistry.Sample) -> String {
                sample.labels.sorted { $0.key < $1.key }.map(\.value).joined(separator: "\u{1}")
            }
            return registry.samples(name).filter {
                $0.labels["tenant"] == tenant && $0.labels["environment"] == environment.rawValue && $0.value > 0
            }
            .sorted { ($0.value, order($1)) > ($1.value, order($0)) }
        }
        return TenantVelocityCounts(
            rules: ofTenant(velocityRules.name).map { sample in
                .init(rule: sample.labels["rule"] ?? "", mode: sample.labels["mode"] ?? "", count: sample.value)
            },
            shadowPolicyDisagreements: ofTenant(shadowDisagreements.name).map { sample in
                .init(
                    rule: sample.labels["rule"] ?? "", shadowAction: sample.labels["shadow_action"] ?? "",
                    action: sample.labels["action"] ?? "", count: sample.value)
            })
    }

    func labelled(_ items: [Label?], _ results: [LabelResultStatus], tenant: String) {
        for (item, result) in zip(items, results) {
            labels.increment(tenant, item?.outcome.rawValue ?? "invalid", result.rawValue)
        }
    }
}

/// One tenant's velocity counts on this instance (the admin's velocity view).
public struct TenantVelocityCounts: Sendable {
    public struct Rule: Sendable {
        public var rule: String
        public var mode: String
        public var count: Double
    }

    public struct Disagreement: Sendable {
        public var rule: String
        public var shadowAction: String
        public var action: String
        public var count: Double
    }

    public var rules: [Rule]
    public var shadowPolicyDisagreements: [Disagreement]
}
