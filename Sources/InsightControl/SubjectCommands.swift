import InsightApp
import InsightDomain
import JSON

/// `insightctl subjects show | erase`: a person's access and erasure requests (docs/privacy.md),
/// through the running daemon, since velocity and opt-outs live in its memory.
enum SubjectCommands: CommandGroup {
    static let identifiers = IdentifierKind.allCases.map {
        Option(
            $0.rawValue, "VALUE",
            "the person's \($0.rawValue) identifier; - reads it from standard input (one line), so that it appears neither in the shell's history nor in ps"
        )
    }
    static let tenant = CommonOptions.tenant.with(help: "the tenant (default: the key's); a key of another tenant is refused")
    static let limit = Option("limit", "N", "at most N evaluations on a page")
    static let cursor = Option("cursor", "C", "the next page (the previous page ends with it)")

    static let commands = [
        Command(
            "subjects", "show", options: identifiers + [tenant, limit, cursor] + DaemonConnection.options + [CommonOptions.json],
            choice: .exactlyOne(identifiers.map(\.name)),
            summary:
                "the evaluations that carried a person, and their opt-out (a key with role evaluate: its tenant and environment are searched)",
            run: show),
        Command(
            "subjects", "erase", options: identifiers + [tenant] + DaemonConnection.options + [CommonOptions.json],
            choice: .atLeastOne(identifiers.map(\.name)),
            summary: "unlink a person everywhere (store, opt-outs, velocity; a key with role admin)", run: erase)
    ]

    static func show(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        var body = try request(invocation)
        if let limit = invocation.value(Self.limit) {
            guard let n = Int(limit) else { throw AppError("--limit must be a whole number") }
            body.append("limit", .number(Double(n)))
        }
        if let cursor = invocation.value(Self.cursor) { body.append("cursor", .string(cursor)) }
        let answer = try context.daemon(invocation).send("POST", "v1/subjects/transparency", body: JSONWriter.string(.object(body)))
        print(invocation.json ? JSONWriter.string(answer) : renderTransparency(answer))
        return 0
    }

    static func erase(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        let body = try request(invocation)
        let answer = try context.daemon(invocation).send("POST", "v1/subjects/erasure", body: JSONWriter.string(.object(body)))
        print(invocation.json ? JSONWriter.string(answer) : renderErasure(answer))
        return 0
    }

    /// The request's subject (each identifier read from standard input when it is `-`) and tenant.
    static func request(_ invocation: Invocation) throws -> JSONObject {
        var subject = JSONObject()
        for option in identifiers {
            if let value = invocation.value(option) { subject.append(option.name, .string(try HashCommand.identifier(value))) }
        }
        var body = JSONObject()
        body.append("subject", .object(subject))
        if let tenant = invocation.value(Self.tenant) { body.append("tenant", .string(tenant)) }
        return body
    }

    /// A subject's evaluations as an operator reads them to a person, newest first.
    static func renderTransparency(_ v: JSONValue) -> String {
        var lines: [String] = []
        let status = v["authorization"]?["status"]?.stringValue
        lines.append("insights for this person: " + (status.map { $0 == "authorized" ? "on" : $0 } ?? "not applicable (counterparty)"))
        let entries = v["evaluations"]?.arrayValue ?? []
        lines.append(entries.isEmpty ? "no evaluations" : "evaluations, newest first:")
        for entry in entries {
            let insights = (entry["insights"]?.arrayValue ?? []).map { insight in
                let outcome = insight["value"]?.stringValue ?? insight["error"]?.stringValue ?? "-"
                return "\(insight["type"]?.stringValue ?? "?")=\(outcome)"
                    + (insight["modelVersion"]?.stringValue.map { " (model \($0))" } ?? "")
            }
            let decision = entry["decision"]?.stringValue.map { "  decision \($0)" } ?? ""
            lines.append(
                "  \(entry["createdAt"]?.stringValue ?? "-")  \(entry["category"]?.stringValue ?? "-")  by \(entry["callerName"]?.stringValue ?? "(deleted caller)")  \(insights.joined(separator: ", "))\(decision)"
            )
        }
        if let cursor = v["cursor"]?.stringValue { lines.append("more: --cursor \(cursor)") }
        return lines.joined(separator: "\n")
    }

    static func renderErasure(_ v: JSONValue) -> String {
        func n(_ key: String) -> String { v[key]?.numberValue.map(Table.format) ?? "-" }
        return "erased in tenant \(v["tenant"]?.stringValue ?? "?"): \(n("evaluations")) evaluations unlinked, "
            + "\(n("authorizations")) opt-outs deleted, \(n("trainingVectors")) training vectors deleted, under \(n("hashKeys")) hash keys"
    }
}
