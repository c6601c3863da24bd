/// Training capture (docs/privacy.md "Training capture: what is kept and why"):
/// the model's input of an evaluation, kept for a limited time when its caller opted in, so that
/// an operator can train a model version on their own labelled traffic.

/// What is kept of one evaluation: its feature vector and the served coaching insight it
/// answered. Never events, identifiers or subject hashes.
public struct TrainingVector: Sendable, Equatable {
    /// The served coaching insight: the id labels name, so that the export joins them.
    public var insightId: String
    /// The model version that answered it.
    public var modelVersion: String
    /// The tenant of the caller (exports are per tenant).
    public var tenant: String
    /// One value per feature in the coaching model's feature order (`FeatureVector.names`);
    /// NaN where a feature is missing.
    public var features: [Double]

    public init(insightId: String, modelVersion: String, tenant: String, features: [Double]) {
        self.insightId = insightId
        self.modelVersion = modelVersion
        self.tenant = tenant
        self.features = features
    }

    /// Equal when every feature is equal or missing in both.
    public static func == (a: TrainingVector, b: TrainingVector) -> Bool {
        a.insightId == b.insightId && a.modelVersion == b.modelVersion && a.tenant == b.tenant
            && sameFeatures(a.features, b.features)
    }

    /// Equal when of one length and every feature is equal or missing in both.
    public static func sameFeatures(_ a: [Double], _ b: [Double]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { $0 == $1 || ($0.isNaN && $1.isNaN) }
    }

    /// The features as stored: each value's IEEE 754 bits, little-endian, 8 bytes a feature.
    public static func encode(_ features: [Double]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(features.count * 8)
        for value in features {
            let bits = value.bitPattern
            for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        }
        return bytes
    }

    /// The features of stored bytes; nil when their length is not a whole number of features.
    public static func decode(_ bytes: [UInt8]) -> [Double]? {
        guard bytes.count % 8 == 0 else { return nil }
        return stride(from: 0, to: bytes.count, by: 8).map { start in
            var bits: UInt64 = 0
            for i in 0..<8 { bits |= UInt64(bytes[start + i]) << UInt64(8 * i) }
            return Double(bitPattern: bits)
        }
    }
}

/// Which captured vectors an export reads.
public struct TrainingExportQuery: Sendable, Equatable {
    /// Created at or after this time.
    public var from: Milliseconds
    /// Created before this time.
    public var until: Milliseconds
    public var environment: Environment
    /// One tenant's vectors; nil: every tenant's.
    public var tenant: String?

    public init(from: Milliseconds, until: Milliseconds, environment: Environment, tenant: String?) {
        self.from = from
        self.until = until
        self.environment = environment
        self.tenant = tenant
    }
}

/// One captured vector as the export reads it: what is kept, joined with the label of its
/// insight if there is one. It carries no identifier (the insight id stays in the store).
public struct CapturedVector: Sendable, Equatable {
    public var features: [Double]
    public var category: String
    public var modelVersion: String
    public var createdAt: Milliseconds
    /// The label's outcome; nil when the insight has none.
    public var label: LabelOutcome?

    public init(features: [Double], category: String, modelVersion: String, createdAt: Milliseconds, label: LabelOutcome?) {
        self.features = features
        self.category = category
        self.modelVersion = modelVersion
        self.createdAt = createdAt
        self.label = label
    }

    public static func == (a: CapturedVector, b: CapturedVector) -> Bool {
        a.category == b.category && a.modelVersion == b.modelVersion && a.createdAt == b.createdAt && a.label == b.label
            && TrainingVector.sameFeatures(a.features, b.features)
    }
}

/// The captured vectors of a period, for `insightctl training export`.
public protocol TrainingVectorSource {
    /// Hands each vector `query` selects to `each`, oldest first, reading the store in batches.
    func trainingVectors(_ query: TrainingExportQuery, _ each: (CapturedVector) throws -> Void) throws
}
