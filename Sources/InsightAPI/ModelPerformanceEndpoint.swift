import HTTPServer
import InsightDomain
import InsightServices
import JSON

/// `GET /admin/v1/model-performance` (role `admin`): how each model version performs on the
/// tenant's own traffic over a period (docs/api.md "GET /admin/v1/model-performance",
/// `ModelPerformanceService`).
extension InsightAPIHandler {
    /// `GET /admin/v1/model-performance?from=YYYY-MM-DD&to=YYYY-MM-DD[&environment=…][&category=…]`
    func modelPerformance(_ exchange: Exchange) throws {
        let admin = try exchange.authenticated()
        let parameters = try QueryParameters(exchange.request.query, allowed: ["environment", "from", "to", "category"])
        let environment =
            try parameters.value("environment").map { text throws(Problem) in
                guard let environment = Environment(rawValue: text) else {
                    throw Problem.invalid("environment", "must be production or sandbox")
                }
                return environment
            } ?? admin.environment
        let category = try parameters.value("category").map { text throws(Problem) in
            guard let category = OperationCategory(rawValue: text) else {
                throw Problem.invalid("category", "must be one of \(OperationCategory.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            return category
        }
        guard let from = parameters.value("from") else { throw Problem.invalid("from", "is required (YYYY-MM-DD)") }
        guard let to = parameters.value("to") else { throw Problem.invalid("to", "is required (YYYY-MM-DD)") }
        let period = ModelPerformanceService.Period(environment: environment, from: from, to: to, category: category)
        let answered = exchange
        try useCases.performance.report(period, of: admin, resume: exchange.resume) { result in
            answered.complete(result) { Self.json(200, Self.render($0)) }
        }
    }

    /// The report as the API and `insightctl models report --json` show it.
    public static func render(_ answer: ModelPerformanceService.Answer) -> JSONValue {
        var object = JSONObject()
        object.append("environment", .string(answer.period.environment.rawValue))
        object.append("from", .string(answer.period.from))
        object.append("to", .string(answer.period.to))
        object.append("category", answer.period.category.map { .string($0.rawValue) } ?? .null)
        object.append("maturityDays", .number(Double(answer.maturityDays)))
        object.append("matureBefore", .string(Timestamp.format(answer.matureBefore)))
        object.append("mature", .bool(answer.report.mature))
        object.append("versions", .array(answer.report.rows.map(render)))
        return .object(object)
    }

    /// A row of the report: its version, category and role, its figures, then the same figures
    /// per capture kit.
    static func render(_ row: ModelPerformanceRow) -> JSONValue {
        var object = JSONObject()
        object.append("modelVersion", .string(row.modelVersion))
        object.append("category", .string(row.category.rawValue))
        object.append("role", .string(row.role.rawValue))
        appendFigures(of: row, to: &object)
        object.append(
            "bySource",
            .array(
                row.bySource.map { source in
                    var object = JSONObject()
                    object.append("platform", source.source.map { .string($0.platform.rawValue) } ?? .null)
                    object.append("kit", source.source.map { .string($0.kit) } ?? .null)
                    object.append("kitVersion", source.source.map { .string($0.version) } ?? .null)
                    appendFigures(of: source, to: &object)
                    return .object(object)
                }))
        return .object(object)
    }

    private static func appendFigures(of row: ModelPerformanceRow, to object: inout JSONObject) {
        func values(_ counts: [InsightValue: Int]) -> JSONValue {
            .object(JSONObject(InsightValue.allCases.map { (key: $0.rawValue, value: .number(Double(counts[$0] ?? 0))) }))
        }
        var consumption = JSONObject(
            ConsumptionStatus.allCases.map { (key: $0.rawValue, value: .number(Double(row.consumption[$0] ?? 0))) })
        consumption.append("notReported", .number(Double(row.consumption[nil] ?? 0)))
        object.append("evaluations", .number(Double(row.evaluations)))
        object.append("values", values(row.values))
        object.append("consumption", .object(consumption))
        object.append(
            "labelled", .object(JSONObject(LabelOutcome.allCases.map { (key: $0.rawValue, value: values(row.labelled[$0] ?? [:])) })))
        object.append("precision", .object(["mediumOrHigh": render(row.precisionMediumOrHigh), "high": render(row.precisionHigh)]))
        object.append("recall", .object(["mediumOrHigh": render(row.recallMediumOrHigh), "high": render(row.recallHigh)]))
        object.append("matureShare", .number(row.matureShare))
        object.append("psi", row.psi.map { .object(["value": .number($0.psi), "sample": .number(Double($0.sample))]) } ?? .null)
    }

    static func render(_ proportion: Proportion) -> JSONValue {
        var object = JSONObject()
        object.append("value", proportion.value.map { .number($0) } ?? .null)
        object.append("successes", .number(Double(proportion.successes)))
        object.append("sample", .number(Double(proportion.sample)))
        object.append("interval", proportion.interval.map { .object(["low": .number($0.low), "high": .number($0.high)]) } ?? .null)
        return .object(object)
    }
}

/// A request's query string as `name=value` pairs: each name at most once and known, values
/// plain (dates, enumerations, numbers, instance names: nothing to percent-decode, so a `%` is
/// refused with the rest).
struct QueryParameters {
    private var values: [String: String] = [:]

    init(_ query: String?, allowed: Set<String>) throws(Problem) {
        guard let query, !query.isEmpty else { return }
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = String(parts[0])
            guard allowed.contains(name) else {
                throw Problem.invalid("(query)", "knows only the parameters \(allowed.sorted().joined(separator: ", "))")
            }
            guard values[name] == nil else { throw Problem.invalid(name, "must be given once") }
            let value = parts.count == 2 ? String(parts[1]) : ""
            guard value.utf8.count <= 64,
                value.utf8.allSatisfy({
                    $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
                        || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
                })
            else {
                throw Problem.invalid(name, "must be a date, a number or a name of letters, digits, dots and dashes")
            }
            values[name] = value
        }
    }

    func value(_ name: String) -> String? { values[name] }
}
