import HTTPServer
import InsightDomain
import InsightServices
import JSON

extension InsightAPIHandler {
    static let maxLabels = 1000
    static let maxIdempotencyKeyLength = 255
    /// The earliest discovery date accepted.
    static let earliestDiscovery = Timestamp.parseDate("2000-01-01")!

    /// `POST /v1/labels`: decodes the batch item by item (an invalid item is reported, the
    /// others go on); `LabelService` records it under its idempotency key.
    func labels(_ exchange: Exchange) throws {
        let request = exchange.request
        let caller = try exchange.authenticated()
        guard let key = request.headers["Idempotency-Key"] else {
            throw Problem(400, .contextInvalid, "Send an 'Idempotency-Key' header so retries are safe.", field: "Idempotency-Key")
        }
        guard !key.isEmpty, key.utf8.count <= Self.maxIdempotencyKeyLength,
            key.utf8.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E })
        else {
            throw Problem(
                400, .contextInvalid, "The Idempotency-Key must be 1 to \(Self.maxIdempotencyKeyLength) visible ASCII characters.",
                field: "Idempotency-Key")
        }
        let root = try ObjectReader(try jsonBody(request), path: "", allowed: ["labels"])
        let values = try root.array("labels", count: 1...Self.maxLabels, required: true)!
        let today = useCases.clock.now()
        var items: [Label?] = []
        var problems: [Int: (field: String, detail: String)] = [:]
        for (i, value) in values.enumerated() {
            do {
                items.append(try Self.decodeLabel(value, path: "labels[\(i)]", now: today))
            } catch {
                items.append(nil)
                problems[i] = (error.field ?? "labels[\(i)]", error.detail)
            }
        }
        let answered = exchange, decoded = items, itemProblems = problems
        useCases.labels.submit(items, idempotencyKey: key, body: request.body, by: caller, resume: exchange.resume) { result in
            answered.complete(result) { outcome in
                Self.json(
                    200, Self.render(outcome.statuses, items: decoded, problems: itemProblems),
                    headers: outcome.replayed ? [("Idempotent-Replayed", "true")] : [])
            }
        }
    }

    static func decodeLabel(_ value: JSONValue, path: String, now: Milliseconds) throws(Problem) -> Label {
        let item = try ObjectReader(value, path: path, allowed: ["insightId", "outcome", "fraudType", "discoveredAt"])
        let insightId = try item.string("insightId", maxLength: EvaluationIdentifiers.maxLength, required: true)!
        let outcome = try item.enumeration("outcome", LabelOutcome.self, required: true)!
        let fraudType = try item.enumeration("fraudType", FraudType.self)
        switch (outcome, fraudType) {
        case (.confirmedFraud, nil):
            throw Problem.invalid(item.field("fraudType"), "is required when outcome is confirmedFraud (use 'other' if unknown)")
        case (.confirmedLegitimate, .some):
            throw Problem.invalid(item.field("fraudType"), "must be absent when outcome is confirmedLegitimate")
        default: break
        }
        let discoveredAt = try item.string("discoveredAt", maxLength: 10, required: true)!
        guard let day = Timestamp.parseDate(discoveredAt) else {
            throw Problem.invalid(item.field("discoveredAt"), "must be a date as YYYY-MM-DD")
        }
        // One day of slack for time zones ahead of UTC.
        guard day >= earliestDiscovery, day <= now + 86_400_000 else {
            throw Problem.invalid(item.field("discoveredAt"), "must be a date from 2000-01-01 to today")
        }
        return Label(insightId: insightId, outcome: outcome, fraudType: fraudType, discoveredAt: discoveredAt)
    }

    /// The per-item results. An item's `insightId` is repeated only when the item named an
    /// insight of the caller's (accepted, duplicate, conflict): then it is an id the daemon made,
    /// and any other string the caller sent, which may carry anything, is never echoed.
    static func render(
        _ statuses: [LabelResultStatus], items: [Label?],
        problems: [Int: (field: String, detail: String)]
    ) -> JSONValue {
        var results: [JSONValue] = []
        var counts: [LabelResultStatus: Int] = [:]
        for (i, status) in statuses.enumerated() {
            counts[status, default: 0] += 1
            var object = JSONObject()
            object.append("index", .number(Double(i)))
            if status == .accepted || status == .duplicate || status == .conflict, let id = items[i]?.insightId {
                object.append("insightId", .string(id))
            }
            object.append("status", .string(status.rawValue))
            if status == .invalid, let problem = problems[i] {
                object.append("field", .string(problem.field))
                object.append("detail", .string(problem.detail))
            }
            results.append(.object(object))
        }
        var summary = JSONObject()
        for status in LabelResultStatus.allCases { summary.append(status.rawValue, .number(Double(counts[status] ?? 0))) }
        return .object(["results": .array(results), "summary": .object(summary)])
    }
}
