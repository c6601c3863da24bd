import InsightAPI
import InsightDomain
import InsightServices
import JSON

/// The daemon's log lines about what the API did, each written in one place. None holds an
/// identifier: a capture kit's name and version are the caller's tokens, never identifiers.
extension Logger {
    /// One line per answered request. Request lines may wait a moment to be written together;
    /// 5xx lines never do.
    func request(_ summary: RequestSummary) {
        log(summary.status >= 500 ? .error : .info, "request", deferred: summary.status < 500) { line in
            line.member("traceId", summary.traceId)
            line.member("method", summary.method)
            line.member("route", summary.route)
            line.member("status", Double(summary.status))
            line.member("durationMs", (summary.durationSeconds * 1000).rounded())
            if let code = summary.code { line.member("code", code) }
            if let caller = summary.callerId { line.member("callerId", caller) }
        }
    }

    /// The audit line of an erasure: who, which kinds, what it unlinked; never the identifier.
    func subjectErased(_ audit: ErasureAudit) {
        info(
            "subject erased",
            [
                ("tenant", .string(audit.tenant)), ("environment", .string(audit.environment.rawValue)),
                ("adminCallerId", .string(audit.adminCallerId)),
                ("kinds", .array(audit.kinds.map { .string($0.rawValue) })),
                ("evaluations", .number(Double(audit.report.evaluations))),
                ("authorizations", .number(Double(audit.report.authorizations))),
                ("hashKeys", .number(Double(audit.hashKeys)))
            ])
    }

    /// Drift of a version's scores on this instance's last hour or two, for a category and, when
    /// given, one capture kit.
    func scoreDrift(version: String, category: OperationCategory, source: InteractionSource?, stability: ScoreStability) {
        var fields: [(String, JSONValue)] = [("modelVersion", .string(version)), ("category", .string(category.rawValue))]
        if let source {
            fields += [
                ("platform", .string(source.platform.rawValue)), ("kit", .string(source.kit)),
                ("kitVersion", .string(source.version))
            ]
        }
        fields += [("psi", .number((stability.psi * 1000).rounded() / 1000)), ("sample", .number(Double(stability.sample)))]
        warning("model score drift: the population stability index passed 0.2", fields)
    }
}
