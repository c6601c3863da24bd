/// An insight type this client models with typed values, like ``IsLikelyBeingCoached``. Obtain
/// typed results with ``InsightEvaluation/insights(_:)``.
public protocol TrustInsight: Sendable {
    /// The insight's value type; values a later schema may add must still be representable.
    associatedtype Value: Sendable & Hashable
    /// The value schemas of this insight type.
    associatedtype SchemaVersion: RawRepresentable & Sendable where SchemaVersion.RawValue == Int
    /// The type identifier on the wire.
    static var typeIdentifier: String { get }
    /// The insight's id: name it in consumption reports and offline labels.
    var insightID: String { get }
    /// The model version that answered (or was asked for, when it failed).
    var modelVersion: String? { get }
    /// The newest model version the service serves.
    var newestModelVersion: String? { get }
    /// Whether the answer came from the newest model.
    var isUsingCurrentModel: Bool { get }
    /// The value, or why this insight could not be answered.
    var outcome: Result<Value, InsightError> { get }
    /// The typed view of a raw result, or `nil` when the result is of another type.
    init?(_ result: InsightResult)
}

/// One insight of an evaluation as the service answered it, whatever its type.
public struct InsightResult: Sendable, Hashable {
    /// The insight's id: name it in consumption reports and offline labels.
    public let insightID: String
    /// The requested type identifier, as sent.
    public let type: String
    /// The requested schema version, as sent.
    public let schemaVersion: Int
    /// The model version that answered (or was asked for, when it failed); `nil` when no model
    /// applies.
    public let modelVersion: String?
    /// The service's newest model version, when models are loaded.
    public let newestModelVersion: String?
    /// Whether ``modelVersion`` is ``newestModelVersion``.
    public let isUsingCurrentModel: Bool
    /// The raw value (`unknown`, `medium`, `high` for `isLikelyBeingCoached` schema 1) or the
    /// insight-level error.
    public let outcome: Result<String, InsightError>
    /// The service's explanation of an insight error, for logs; do not parse it.
    public let errorDetail: String?
    /// The signals behind a value, e.g. `activeCallDuringSession`; empty for `unknown` and for
    /// errors. New reason codes may appear: ignore the ones you do not know.
    public let reasons: [String]

    /// Creates a result; the client builds these from the service's response.
    public init(
        insightID: String, type: String, schemaVersion: Int, modelVersion: String?,
        newestModelVersion: String?, isUsingCurrentModel: Bool, outcome: Result<String, InsightError>,
        errorDetail: String? = nil, reasons: [String] = []
    ) {
        self.insightID = insightID
        self.type = type
        self.schemaVersion = schemaVersion
        self.modelVersion = modelVersion
        self.newestModelVersion = newestModelVersion
        self.isUsingCurrentModel = isUsingCurrentModel
        self.outcome = outcome
        self.errorDetail = errorDetail
        self.reasons = reasons
    }
}

/// Is the person likely being coached by a third party (a scammer on the phone, a fake support
/// agent sharing the screen) while performing this operation?
public struct IsLikelyBeingCoached: TrustInsight, Hashable {
    /// The values of `isLikelyBeingCoached`. There is no "low": ``unknown`` means *no evidence*,
    /// never "low risk".
    ///
    /// Keep a branch for ``unrecognized(_:)``: the service only returns values of the schema
    /// version you asked for, but a value may be added to a schema this client version models.
    public enum Value: Sendable, Hashable, CustomStringConvertible {
        /// No evidence either way. Never treat it as "low risk" or as a pass.
        case unknown
        /// Some evidence of coaching: consider friction — a warning, a delay, extra verification.
        case medium
        /// Significant evidence of coaching: inform the person of the risk before proceeding.
        case high
        /// A value this client version does not know; handle it like an insight error (fall back
        /// to your other risk checks).
        case unrecognized(String)

        /// Parses a wire value.
        public init(rawValue: String) {
            switch rawValue {
            case "unknown": self = .unknown
            case "medium": self = .medium
            case "high": self = .high
            default: self = .unrecognized(rawValue)
            }
        }

        /// The wire value.
        public var rawValue: String {
            switch self {
            case .unknown: return "unknown"
            case .medium: return "medium"
            case .high: return "high"
            case .unrecognized(let raw): return raw
            }
        }

        /// The wire value.
        public var description: String { rawValue }
    }

    /// The value schemas of `isLikelyBeingCoached`.
    public struct SchemaVersion: RawRepresentable, Hashable, Sendable {
        /// The schema number on the wire.
        public let rawValue: Int
        /// Wraps a schema number.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Schema 1: `unknown`, `medium`, `high`.
        public static let version1 = SchemaVersion(rawValue: 1)
    }

    /// `isLikelyBeingCoached`.
    public static let typeIdentifier = "isLikelyBeingCoached"

    /// The raw result this view wraps.
    public let result: InsightResult
    /// The insight's id: name it in consumption reports and offline labels.
    public var insightID: String { result.insightID }
    /// The schema version the value belongs to.
    public var schemaVersion: SchemaVersion { SchemaVersion(rawValue: result.schemaVersion) }
    /// The model version that answered (or was asked for, when it failed).
    public var modelVersion: String? { result.modelVersion }
    /// The newest model version the service serves.
    public var newestModelVersion: String? { result.newestModelVersion }
    /// Whether the answer came from the newest model.
    public var isUsingCurrentModel: Bool { result.isUsingCurrentModel }
    /// The signals behind the value (empty for `unknown` and errors).
    public var reasons: [String] { result.reasons }
    /// The value, or why it could not be produced.
    public var outcome: Result<Value, InsightError> { result.outcome.map(Value.init(rawValue:)) }

    /// The typed view of a raw result, or `nil` when it is not an `isLikelyBeingCoached` result.
    public init?(_ result: InsightResult) {
        guard result.type == Self.typeIdentifier else { return nil }
        self.result = result
    }
}

/// Why one insight of an evaluation has no value. One failing insight never fails the others or
/// the evaluation.
public enum InsightError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The model failed on this input. A retry may succeed.
    case insightEvaluationFailed
    /// The insight type is unknown, or no model is loaded for it.
    case insightUnavailable
    /// The requested schema version is not supported.
    case insightVersionIncompatible
    /// The requested model version is unknown or was withdrawn.
    case insightVersionUnavailable
    /// The quota for this insight type is exhausted.
    case rateLimitError
    /// An insight error code this client version does not know.
    case unknown(code: String)

    /// Parses a wire code.
    public init(code: String) {
        switch code {
        case "insightEvaluationFailed": self = .insightEvaluationFailed
        case "insightUnavailable": self = .insightUnavailable
        case "insightVersionIncompatible": self = .insightVersionIncompatible
        case "insightVersionUnavailable": self = .insightVersionUnavailable
        case "rateLimitError": self = .rateLimitError
        default: self = .unknown(code: code)
        }
    }

    /// The wire code.
    public var code: String {
        switch self {
        case .insightEvaluationFailed: return "insightEvaluationFailed"
        case .insightUnavailable: return "insightUnavailable"
        case .insightVersionIncompatible: return "insightVersionIncompatible"
        case .insightVersionUnavailable: return "insightVersionUnavailable"
        case .rateLimitError: return "rateLimitError"
        case .unknown(let code): return code
        }
    }

    /// The wire code.
    public var description: String { code }
}
