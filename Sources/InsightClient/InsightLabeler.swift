import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Submits offline fraud labels (`POST /v1/labels`): the verdicts of your investigations,
/// days or months after an evaluation, linked to it only by the insight id. Server to server,
/// with a key holding the `labels` role.
///
/// ```swift
/// let labeler = InsightLabeler(baseURL: url, apiKey: labelsKey)
/// let results = try await labeler.submit(
///     [.confirmedFraud(insightID: id, fraudType: .authorityImpersonation, discoveredAt: Date())],
///     idempotencyKey: batchID)
/// ```
public final class InsightLabeler: Sendable {
    let client: APIClient

    /// Creates a labeler.
    /// - Parameters:
    ///   - baseURL: the service's root URL.
    ///   - apiKey: a key with the `labels` role.
    ///   - session: the URL session to send requests with.
    ///   - retryPolicy: when a failed submission is retried. Submissions are idempotent by
    ///     their key, so a retry after a lost response replays the first answer.
    public init(baseURL: URL, apiKey: String, session: URLSession = .shared, retryPolicy: RetryPolicy = .default) {
        client = APIClient(baseURL: baseURL, apiKey: apiKey, session: session, retryPolicy: retryPolicy)
    }

    /// Submits 1–1,000 labels.
    ///
    /// - Parameters:
    ///   - labels: the labels; each gets its own result.
    ///   - idempotencyKey: 1–255 visible ASCII characters naming this batch. Sending the same
    ///     key and labels again returns the first answer; the same key with other labels throws
    ///     ``EvaluationError/idempotencyKeyReused``. ``newIdempotencyKey()`` makes one.
    ///   - options: per-request options.
    /// - Returns: one result per label, in order.
    /// - Throws: ``EvaluationError`` when the submission as a whole failed (e.g.
    ///   ``EvaluationError/contextInvalid(field:detail:)`` for a bad count or key,
    ///   ``EvaluationError/forbidden`` for a key without the `labels` role).
    public func submit(
        _ labels: [Label], idempotencyKey: String,
        options: RequestOptions = RequestOptions()
    ) async throws(EvaluationError) -> [LabelResult] {
        let body = try APIClient.encode(WireLabelSubmission(labels: labels.map(WireLabelSubmission.Item.init)))
        let response = try await client.send(
            "POST", [InsightEvaluator.apiVersion, "labels"], body: body,
            headers: [("Idempotency-Key", idempotencyKey)], options: options)
        let wire = try APIClient.decode(WireLabelResults.self, response.body)
        guard wire.results.count == labels.count else {
            throw .unexpectedResponse(detail: "\(wire.results.count) label results for \(labels.count) labels")
        }
        return wire.results.map {
            LabelResult(
                index: $0.index, insightID: $0.insightId, status: LabelResult.Status(rawValue: $0.status),
                field: $0.field, detail: $0.detail)
        }
    }

    /// A new random idempotency key (a UUID) for a batch of labels.
    public static func newIdempotencyKey() -> String { UUID().uuidString.lowercased() }
}

/// The verdict of an offline investigation of one insight. No field takes free text, so no
/// personal data can enter.
public struct Label: Sendable, Hashable {
    /// The investigation's conclusion.
    public struct Outcome: RawRepresentable, Hashable, Sendable {
        /// The wire value.
        public let rawValue: String
        /// Wraps a wire value.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The operation was fraud.
        public static let confirmedFraud = Outcome(rawValue: "confirmedFraud")
        /// The operation was legitimate.
        public static let confirmedLegitimate = Outcome(rawValue: "confirmedLegitimate")
    }

    /// The kind of fraud.
    public struct FraudType: RawRepresentable, Hashable, Sendable {
        /// The wire value.
        public let rawValue: String
        /// Wraps a wire value.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// A fake technical-support agent.
        public static let techSupportScam = FraudType(rawValue: "techSupportScam")
        /// Someone posing as a bank, the police or another authority.
        public static let authorityImpersonation = FraudType(rawValue: "authorityImpersonation")
        /// A fake relative in an emergency.
        public static let familyEmergency = FraudType(rawValue: "familyEmergency")
        /// A romance scam.
        public static let romanceScam = FraudType(rawValue: "romanceScam")
        /// A fake investment.
        public static let investmentScam = FraudType(rawValue: "investmentScam")
        /// A purchase of goods that never come.
        public static let purchaseScam = FraudType(rawValue: "purchaseScam")
        /// The account was taken over.
        public static let accountTakeover = FraudType(rawValue: "accountTakeover")
        /// Any other or unknown kind.
        public static let other = FraudType(rawValue: "other")
    }

    /// The insight the verdict is about (``InsightResult/insightID``).
    public let insightID: String
    /// The conclusion.
    public let outcome: Outcome
    /// The kind of fraud; present exactly for ``Outcome/confirmedFraud``.
    public let fraudType: FraudType?
    /// When the verdict was established; sent as its UTC calendar date.
    public let discoveredAt: Date

    /// A confirmed fraud of the given kind (use ``FraudType/other`` when unknown).
    public static func confirmedFraud(insightID: String, fraudType: FraudType, discoveredAt: Date) -> Label {
        Label(insightID: insightID, outcome: .confirmedFraud, fraudType: fraudType, discoveredAt: discoveredAt)
    }

    /// A confirmed legitimate operation.
    public static func confirmedLegitimate(insightID: String, discoveredAt: Date) -> Label {
        Label(insightID: insightID, outcome: .confirmedLegitimate, fraudType: nil, discoveredAt: discoveredAt)
    }
}

/// What the service did with one submitted label.
public struct LabelResult: Sendable, Hashable {
    /// The status of one label. The set is open: keep a default branch.
    public enum Status: Sendable, Hashable, CustomStringConvertible {
        /// Stored.
        case accepted
        /// The insight already had this same label.
        case duplicate
        /// The insight already had a different label; the first one stays.
        case conflict
        /// No insight with that id in your environment.
        case unknownInsight
        /// The label breaks the schema; ``LabelResult/field`` and ``LabelResult/detail`` say how.
        case invalid
        /// A status this client version does not know.
        case unrecognized(String)

        /// Parses a wire value.
        public init(rawValue: String) {
            switch rawValue {
            case "accepted": self = .accepted
            case "duplicate": self = .duplicate
            case "conflict": self = .conflict
            case "unknownInsight": self = .unknownInsight
            case "invalid": self = .invalid
            default: self = .unrecognized(rawValue)
            }
        }

        /// The wire value.
        public var description: String {
            switch self {
            case .accepted: return "accepted"
            case .duplicate: return "duplicate"
            case .conflict: return "conflict"
            case .unknownInsight: return "unknownInsight"
            case .invalid: return "invalid"
            case .unrecognized(let raw): return raw
            }
        }
    }

    /// The label's position in the submitted array.
    public let index: Int
    /// The label's insight id, when it names one of your insights (accepted, duplicate,
    /// conflict); otherwise nil, and ``index`` says which label this is.
    public let insightID: String?
    /// What happened to it.
    public let status: Status
    /// For ``Status/invalid``: the offending field, e.g. `labels[4].fraudType`.
    public let field: String?
    /// For ``Status/invalid``: what is wrong.
    public let detail: String?
}

// MARK: - Wire format

struct WireLabelSubmission: Encodable {
    struct Item: Encodable {
        let insightId: String
        let outcome: String
        let fraudType: String?
        let discoveredAt: String

        init(_ label: Label) {
            insightId = label.insightID
            outcome = label.outcome.rawValue
            fraudType = label.fraudType?.rawValue
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC")!
            let day = calendar.dateComponents([.year, .month, .day], from: label.discoveredAt)
            discoveredAt = String(format: "%04d-%02d-%02d", day.year ?? 0, day.month ?? 0, day.day ?? 0)
        }
    }
    let labels: [Item]
}

struct WireLabelResults: Decodable {
    struct Item: Decodable {
        let index: Int
        let insightId: String?
        let status: String
        let field: String?
        let detail: String?
    }
    let results: [Item]
}
