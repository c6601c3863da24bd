import InsightDomain

/// Outcomes a sandbox caller forces (the API reads them from the `Insight-Override` header), so
/// that callers can exercise every branch of their decision logic without crafting sessions
/// that happen to score so. Only sandbox callers may send one.
public struct SandboxOverride: Sendable, Equatable {
    /// The reason attached to a forced value, so a forced answer can never pass for a real one.
    public static let reason = "sandboxOverride"

    /// The evaluation-level errors a sandbox caller may force.
    public enum EvaluationError: String, CaseIterable, Sendable {
        case rateLimitExceeded, serverError, denied, contextInvalid
    }

    public var evaluationError: EvaluationError?
    /// Forced outcomes by insight type.
    public var insights: [String: InsightOutcome] = [:]

    public init(evaluationError: EvaluationError? = nil, insights: [String: InsightOutcome] = [:]) {
        self.evaluationError = evaluationError
        self.insights = insights
    }
}
