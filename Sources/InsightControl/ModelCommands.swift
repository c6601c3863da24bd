import Foundation
import InsightApp
import JSON

/// `insightctl models list | set-current | withdraw | report`: the model versions of the models
/// directory, checked by loading it as the daemon does, and how each performs (through the daemon).
enum ModelCommands: CommandGroup {
    static let modelsDirectory = Option("models-dir", "DIR", "the models directory (else $INSIGHTD_MODELS_DIR, else ./models)")
    static let version = Operand("VERSION", "the model version (models list shows them)")
    static let from = Option("from", "YYYY-MM-DD", "the first day of the period").asRequired
    static let to = Option("to", "YYYY-MM-DD", "the last day of the period").asRequired
    static let environment = Option("environment", "E", "production or sandbox (default: the admin key's own, the only one it may read)")
    static let category = Option("category", "C", "only this operation category")

    static let commands = [
        Command(
            "models", "list", options: [modelsDirectory, CommonOptions.json],
            summary: "the model versions: status, current, shadow, trees, features", run: list),
        Command(
            "models", "set-current", operands: [version], options: [modelsDirectory],
            summary: "make VERSION current in registry.json (then reload: SIGHUP)", run: setCurrent),
        Command(
            "models", "withdraw", operands: [version], options: [modelsDirectory],
            summary: "mark VERSION withdrawn in its manifest (then reload: SIGHUP)", run: withdraw),
        Command(
            "models", "report", options: [from, to, environment, category] + DaemonConnection.options + [CommonOptions.json],
            summary: "how each model version performs on the tenant's traffic (a key with role admin)", run: report)
    ]

    static func directory(_ invocation: Invocation, _ context: CommandContext) -> String {
        invocation.value(modelsDirectory) ?? context.environment["INSIGHTD_MODELS_DIR"] ?? Settings().modelsDirectory
    }

    /// INSIGHTD_MODEL_SHADOW, checked as the daemon checks it.
    static func shadowModels(_ context: CommandContext) throws -> [String] {
        try context.setting("INSIGHTD_MODEL_SHADOW") { $0.shadowModels }
    }

    static func list(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        // The shadow versions as the daemon reads INSIGHTD_MODEL_SHADOW (and refuses them).
        let registry = try ModelsDirectory.load(
            directory(invocation, context), current: context.environment["INSIGHTD_MODEL_CURRENT"],
            shadow: try shadowModels(context))
        let shadows = Set(registry.shadows.map(\.version))
        let rows = registry.versions.map { model in
            (
                model.version, model.withdrawn ? "withdrawn" : "active", model.version == registry.currentVersion,
                shadows.contains(model.version), model.treeCount, model.features.count, model.modelSHA256
            )
        }
        if invocation.json {
            print(
                JSONWriter.string(
                    .array(
                        rows.map { row in
                            .object([
                                "version": .string(row.0), "status": .string(row.1), "current": .bool(row.2), "shadow": .bool(row.3),
                                "trees": .number(Double(row.4)), "features": .number(Double(row.5)), "sha256": .string(row.6)
                            ])
                        })))
        } else {
            Table.print(
                ["VERSION", "STATUS", "CURRENT", "SHADOW", "TREES", "FEATURES", "MODEL SHA-256"],
                rows.map {
                    [$0.0, $0.1, $0.2 ? "current" : "", $0.3 ? "shadow" : "", String($0.4), String($0.5), $0.6]
                })
        }
        return 0
    }

    static func setCurrent(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        let version = invocation.operand(0), directory = directory(invocation, context)
        // The daemon refuses a version that is both current and a shadow (at its next reload).
        if try shadowModels(context).contains(version) {
            throw AppError(
                "model version \(version) runs as a shadow (INSIGHTD_MODEL_SHADOW), and the daemon refuses a "
                    + "version that is both: take it out of INSIGHTD_MODEL_SHADOW first")
        }
        try ModelsDirectory.setCurrent(version, in: directory)
        print("model version \(version) is current in \(directory)/registry.json; reload the daemon to serve it (SIGHUP)")
        if let pinned = context.environment["INSIGHTD_MODEL_CURRENT"], !pinned.isEmpty, pinned != version {
            print("note: INSIGHTD_MODEL_CURRENT=\(pinned) is set here; where the daemon has it, it overrides registry.json")
        }
        return 0
    }

    static func withdraw(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        let version = invocation.operand(0), directory = directory(invocation, context)
        try ModelsDirectory.withdraw(version, in: directory)
        print(
            "model version \(version) is withdrawn in \(directory); reload the daemon (SIGHUP): requests naming it then answer insightVersionUnavailable"
        )
        return 0
    }

    static func report(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        var query = "from=\(invocation.required(from))&to=\(invocation.required(to))"
        if let environment = invocation.value(Self.environment) { query += "&environment=\(environment)" }
        if let category = invocation.value(Self.category) { query += "&category=\(category)" }
        // The values go into a URL: only what a date or a name holds, the daemon checks the rest.
        guard query.allSatisfy({ $0.isLetter || $0.isNumber || "-=&".contains($0) }) else {
            throw AppError("--from, --to, --environment and --category take dates and names only")
        }
        let report = try context.daemon(invocation).send("GET", "admin/v1/model-performance?" + query, body: nil)
        print(invocation.json ? JSONWriter.string(report) : renderModelPerformance(report))
        return 0
    }

    /// The model performance report as a table: each proportion as value [95 % interval] of its
    /// sample; under each row, a row per capture kit (`· web insight-capture-web 1.0.0`).
    static func renderModelPerformance(_ v: JSONValue) -> String {
        func n(_ value: JSONValue?) -> String { value?.numberValue.map(Table.format) ?? "-" }
        func proportion(_ p: JSONValue?) -> String {
            guard let p, let value = p["value"]?.numberValue, let low = p["interval"]?["low"]?.numberValue,
                let high = p["interval"]?["high"]?.numberValue
            else { return "- of 0" }
            func f(_ x: Double) -> String { String(format: "%.2f", x) }
            return "\(f(value)) [\(f(low))-\(f(high))] of \(n(p["sample"]))"
        }
        let mature = v["mature"] == .bool(true)
        var lines = [
            "\(v["environment"]?.stringValue ?? "?") \(v["from"]?.stringValue ?? "?") to \(v["to"]?.stringValue ?? "?"): "
                + (mature ? "mature" : "not mature: labels may still come (maturity \(n(v["maturityDays"])) days)")
        ]
        let rows = v["versions"]?.arrayValue ?? []
        guard !rows.isEmpty else { return (lines + ["no evaluations"]).joined(separator: "\n") }
        let header = [
            "VERSION", "ROLE", "CATEGORY", "EVALUATIONS", "HIGH", "MEDIUM", "UNKNOWN", "LABELLED FRAUD", "LABELLED LEGIT",
            "PRECISION M|H", "RECALL M|H", "PRECISION H", "RECALL H", "MATURE", "PSI"
        ]
        // Each row, then the same figures per capture kit under it (version and role left blank).
        let rowsAndKits = rows.flatMap { row in
            [(row, "")]
                + (row["bySource"]?.arrayValue ?? []).map { source in
                    let kit = [source["platform"], source["kit"], source["kitVersion"]].compactMap { $0?.stringValue }
                    return (source, "· " + (kit.isEmpty ? "no source" : kit.joined(separator: " ")))
                }
        }
        let table = rowsAndKits.map { row, source -> [String] in
            func labelled(_ outcome: String) -> String {
                Table.format((row["labelled"]?[outcome]?.objectValue?.members ?? []).compactMap { $0.value.numberValue }.reduce(0, +))
            }
            // The drift index with its sample, or "-" when the version has no reference.
            let psi = row["psi"]?["value"]?.numberValue.map { String(format: "%.3f of ", $0) + n(row["psi"]?["sample"]) } ?? "-"
            let identity =
                source.isEmpty
                ? [row["modelVersion"]?.stringValue ?? "?", row["role"]?.stringValue ?? "served", row["category"]?.stringValue ?? "?"]
                : ["", "", source]
            return identity + [
                n(row["evaluations"]),
                n(row["values"]?["high"]), n(row["values"]?["medium"]), n(row["values"]?["unknown"]),
                labelled("confirmedFraud"), labelled("confirmedLegitimate"),
                proportion(row["precision"]?["mediumOrHigh"]), proportion(row["recall"]?["mediumOrHigh"]),
                proportion(row["precision"]?["high"]), proportion(row["recall"]?["high"]),
                String(format: "%.0f%%", (row["matureShare"]?.numberValue ?? 0) * 100), psi
            ]
        }
        let widths = header.indices.map { column in ([header] + table).map { $0[column].count }.max() ?? 0 }
        for row in [header] + table {
            // Trailing blanks only: a kit's row starts blank, under its version's category.
            var line = row.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }
                .joined(separator: "  ")
            while line.last == " " { line.removeLast() }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }
}
