import HTTPServer
import InsightDomain
import InsightServices

/// The sandbox's `Insight-Override` header: forced outcomes, so that callers can exercise
/// every branch of their decision logic without crafting sessions that happen to score so.
///
/// Syntax: comma-separated items, each `<insightType>=<value>`, `<insightType>=error:<insightErrorCode>`
/// or `evaluation=error:<code>` with code `rateLimitExceeded`, `serverError`, `denied` or
/// `contextInvalid`. Only sandbox credentials may send it.
struct SandboxOverride: Sendable, Equatable {
    /// The header's name.
    static let header = "Insight-Override"
    static let maxItems = 8
    /// The reason attached to a forced value, so a forced answer can never pass for a real one.
    static let reason = "sandboxOverride"

    enum EvaluationError: String, CaseIterable, Sendable {
        case rateLimitExceeded, serverError, denied, contextInvalid
    }

    var evaluationError: EvaluationError?
    var insights: [String: InsightOutcome] = [:]

    /// Parses the header; a malformed one is `contextInvalid` naming the header.
    static func parse(_ text: String) throws(Problem) -> SandboxOverride {
        func invalid(_ detail: String) -> Problem {
            Problem(400, .contextInvalid, detail, field: header)
        }
        var result = SandboxOverride()
        var seen: Set<String> = []
        let items = text.split(separator: ",", omittingEmptySubsequences: false)
        guard items.count <= maxItems else { throw invalid("At most \(maxItems) items are allowed.") }
        for item in items {
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else {
                throw invalid("Each item is name=value, e.g. isLikelyBeingCoached=high or evaluation=error:serverError.")
            }
            let name = String(parts[0].trimmingOWS()), value = String(parts[1].trimmingOWS())
            guard seen.insert(name).inserted else { throw invalid("An item is named twice.") }
            if name == "evaluation" {
                guard value.hasPrefix("error:"), let error = EvaluationError(rawValue: String(value.dropFirst(6))) else {
                    throw invalid("evaluation takes error:<code> with code one of \(EvaluationError.allCases.map(\.rawValue).joined(separator: ", ")).")
                }
                result.evaluationError = error
            } else if InsightType(rawValue: name) != nil {
                if value.hasPrefix("error:") {
                    guard let code = InsightErrorCode(rawValue: String(value.dropFirst(6))) else {
                        throw invalid("An insight error is one of \(InsightErrorCode.allCases.map(\.rawValue).joined(separator: ", ")).")
                    }
                    result.insights[name] = .error(code, detail: "Forced by the sandbox \(header) header.")
                } else if let forced = InsightValue(rawValue: value) {
                    result.insights[name] = .value(forced, reasons: [reason])
                } else {
                    throw invalid("An insight value is one of \(InsightValue.allCases.map(\.rawValue).joined(separator: ", ")), or error:<code>.")
                }
            } else {
                throw invalid("Items name an insight type (\(InsightType.allCases.map(\.rawValue).joined(separator: ", "))) or evaluation.")
            }
        }
        return result
    }

    /// The evaluation-level problem to answer instead, with the status and headers the real
    /// error carries.
    func forcedProblem(quota: QuotaStatus, view: RateLimitView, compliance: CompliancePolicy) -> Problem? {
        guard let evaluationError else { return nil }
        let forced = "Forced by the sandbox \(Self.header) header."
        switch evaluationError {
        case .rateLimitExceeded:
            var exhausted = quota
            exhausted.remaining = 0
            var problem = Throttling.callerProblem(.callerRate, exhausted, retryAfter: 1, view: view, compliance: compliance)
            problem.detail = "\(forced) \(problem.detail)"
            return problem
        case .serverError:
            var problem = Problem(503, .serverError, "\(forced) The request could not be stored, so nothing was recorded; retry.")
            problem.headers = [("Retry-After", "1")]
            return problem
        case .denied:
            return Problem(403, .denied, "\(forced) The subject has switched insights off.")
        case .contextInvalid:
            return Problem(422, .contextInvalid, "\(forced) The request is invalid.", field: "(sandboxOverride)")
        }
    }
}
