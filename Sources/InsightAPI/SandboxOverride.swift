import HTTPServer
import InsightDomain
import InsightServices

/// The sandbox's `Insight-Override` header, read into a `SandboxOverride`.
///
/// Syntax: comma-separated items, each `<insightType>=<value>`, `<insightType>=error:<insightErrorCode>`
/// or `evaluation=error:<code>` with code `rateLimitExceeded`, `serverError`, `denied` or
/// `contextInvalid`.
extension SandboxOverride {
    /// The header's name.
    static let header = "Insight-Override"
    static let maxItems = 8

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
                    throw invalid(
                        "evaluation takes error:<code> with code one of \(EvaluationError.allCases.map(\.rawValue).joined(separator: ", "))."
                    )
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
                    throw invalid(
                        "An insight value is one of \(InsightValue.allCases.map(\.rawValue).joined(separator: ", ")), or error:<code>.")
                }
            } else {
                throw invalid("Items name an insight type (\(InsightType.allCases.map(\.rawValue).joined(separator: ", "))) or evaluation.")
            }
        }
        return result
    }
}
