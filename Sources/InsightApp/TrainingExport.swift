import CoachingModel
import InsightDomain
import JSON

/// `insightctl training export` (docs/operations.md, "Training on your own traffic"): the
/// captured vectors of a period that have a label, one JSON object a line, in the format
/// `training/train.py --from-export` reads:
///
///     {"label":"confirmedFraud","category":"payment","modelVersion":"2.0","date":"2026-12-01",
///      "features":{"sessionSeconds":41.2,…,"otpEntryDelaySeconds":null}}
///
/// `features` holds every feature by name in the coaching model's order (`FeatureVector.names`,
/// which each manifest's `features` is a subset of), null where missing. With
/// `presumeGenuineBefore`, unlabelled vectors created before it are added as `presumedGenuine`:
/// past the label maturity, a fraud would most likely have been labelled. No line carries an
/// identifier: not the insight id, the event id or any hash (the store keeps none of the latter
/// with a vector), and the time only as its day.
public enum TrainingExport {
    /// How many lines of each kind an export wrote, and the unlabelled vectors it left out.
    public struct Summary: Sendable, Equatable {
        public var confirmedFraud = 0
        public var confirmedLegitimate = 0
        public var presumedGenuine = 0
        /// Unlabelled vectors not written (too recent to presume, or not asked to).
        public var unlabelled = 0

        public init() {}

        public var lines: Int { confirmedFraud + confirmedLegitimate + presumedGenuine }
    }

    /// The label of a presumed-genuine line.
    public static let presumedGenuine = "presumedGenuine"

    /// Writes the lines of `query`'s vectors through `write`; answers what it wrote.
    public static func run(
        _ source: any TrainingVectorSource, query: TrainingExportQuery,
        presumeGenuineBefore: Milliseconds?, write: (String) throws -> Void
    ) throws -> Summary {
        var summary = Summary()
        try source.trainingVectors(query) { vector in
            let label: String
            switch vector.label {
            case .confirmedFraud?:
                label = LabelOutcome.confirmedFraud.rawValue
                summary.confirmedFraud += 1
            case .confirmedLegitimate?:
                label = LabelOutcome.confirmedLegitimate.rawValue
                summary.confirmedLegitimate += 1
            case nil:
                guard let before = presumeGenuineBefore, vector.createdAt < before else {
                    summary.unlabelled += 1
                    return
                }
                label = presumedGenuine
                summary.presumedGenuine += 1
            }
            try write(JSONWriter.string(line(vector, label: label)) + "\n")
        }
        return summary
    }

    /// One line: the label, what the vector was captured with, and its features by name.
    static func line(_ vector: CapturedVector, label: String) -> JSONValue {
        var features = JSONObject()
        for (index, name) in FeatureVector.names.enumerated() {
            let value = index < vector.features.count ? vector.features[index] : .nan
            features.append(name, value.isFinite ? .number(value) : .null)
        }
        var object = JSONObject()
        object.append("label", .string(label))
        object.append("category", .string(vector.category))
        object.append("modelVersion", .string(vector.modelVersion))
        object.append("date", .string(String(Timestamp.format(vector.createdAt).prefix(10))))
        object.append("features", .object(features))
        return .object(object)
    }
}
