/// The features of the coaching model, in the fixed order of `FeatureVector.names`.
/// docs/features.md defines each one; training/features.py is the Python port used to train.
public enum Feature: Int, CaseIterable, Sendable {
    case sessionSeconds
    case userActionCount
    case firstInputSeconds
    case keystrokeCount
    case keyIntervalMeanMs
    case keyIntervalCV
    case meanBurstLength
    case segmentPauseCount
    case segmentPauseShare
    case segmentPauseMeanMs
    case longPauseCount
    case longestPauseSeconds
    case submitHesitationSeconds
    case deletionCount
    case deletionRatio
    case payeePasted
    case amountPasted
    case fieldRevisits
    case appSwitchCount
    case backgroundSeconds
    case backgroundShare
    case activeCall
    case callStartedBeforeSession
    case proximityNearShare
    case orientationChanges
    case screenSharing
    case remoteAccessApp
    case otpEntryDelaySeconds

    /// The documented name, as used in `interaction.summary`, manifests and fixtures.
    public var name: String { Feature.names[rawValue] }

    /// The feature named `name`, if there is one.
    public init?(name: String) {
        guard let feature = Feature.byName.value(name) else { return nil }
        self = feature
    }

    /// The feature whose name is these UTF-8 bytes, if there is one.
    public init?(utf8 name: UnsafeBufferPointer<UInt8>) {
        guard let feature = Feature.byName.value(name) else { return nil }
        self = feature
    }

    private static let byName = NameTable(allCases.map { (name: $0.name, value: $0) })

    // Spelled out rather than derived by reflection, so a renamed case cannot silently change
    // the wire name that summaries, manifests and fixtures depend on.
    static let names: [String] = [
        "sessionSeconds", "userActionCount", "firstInputSeconds", "keystrokeCount",
        "keyIntervalMeanMs", "keyIntervalCV", "meanBurstLength", "segmentPauseCount",
        "segmentPauseShare", "segmentPauseMeanMs", "longPauseCount", "longestPauseSeconds",
        "submitHesitationSeconds",
        "deletionCount", "deletionRatio", "payeePasted", "amountPasted", "fieldRevisits",
        "appSwitchCount", "backgroundSeconds", "backgroundShare", "activeCall",
        "callStartedBeforeSession", "proximityNearShare", "orientationChanges", "screenSharing",
        "remoteAccessApp", "otpEntryDelaySeconds"
    ]

    /// The reason code reported when this feature drives a `medium` or `high` value, or nil for
    /// features that inform the score but name no signal a person could act on.
    public var reasonCode: String? {
        switch self {
        case .sessionSeconds: "longSession"
        case .userActionCount, .keystrokeCount: nil
        case .firstInputSeconds: "delayedFirstInput"
        case .keyIntervalMeanMs, .keyIntervalCV: "unusualTypingRhythm"
        case .meanBurstLength, .segmentPauseCount, .segmentPauseShare, .segmentPauseMeanMs:
            "segmentedTyping"
        case .longPauseCount, .longestPauseSeconds: "longPauses"
        case .submitHesitationSeconds: "longHesitation"
        case .deletionCount, .deletionRatio: "frequentCorrections"
        case .payeePasted: "pastedPayee"
        case .amountPasted: "pastedAmount"
        case .fieldRevisits: "fieldRevisits"
        case .appSwitchCount, .backgroundSeconds, .backgroundShare: "frequentAppSwitching"
        case .activeCall: "activeCallDuringSession"
        case .callStartedBeforeSession: "callStartedBeforeSession"
        case .proximityNearShare: "phoneAtEar"
        case .orientationChanges: "orientationChanges"
        case .screenSharing: "screenSharing"
        case .remoteAccessApp: "remoteAccessApp"
        case .otpEntryDelaySeconds: "delayedOtpEntry"
        }
    }

    /// What values a summary may carry for this feature.
    enum Domain {
        case seconds  // [0, 3600]
        case count  // whole numbers in [0, 5000]
        case share  // [0, 1]
        case flag  // 0 or 1
        case range(Double, Double)
    }

    var domain: Domain {
        switch self {
        case .sessionSeconds, .firstInputSeconds, .longestPauseSeconds, .submitHesitationSeconds,
            .backgroundSeconds, .otpEntryDelaySeconds:
            .seconds
        case .userActionCount, .keystrokeCount, .segmentPauseCount, .longPauseCount,
            .deletionCount, .fieldRevisits, .appSwitchCount, .orientationChanges:
            .count
        case .segmentPauseShare, .deletionRatio, .backgroundShare, .proximityNearShare:
            .share
        case .payeePasted, .amountPasted, .activeCall, .callStartedBeforeSession, .screenSharing,
            .remoteAccessApp:
            .flag
        // Only gaps up to the typing-gap limit enter the mean.
        case .keyIntervalMeanMs: .range(0, Double(FeatureExtractor.typingGapMaxMs))
        // The coefficient of variation of n values in [0, 1000] is at most sqrt(n - 1) < 71.
        case .keyIntervalCV: .range(0, 100)
        case .meanBurstLength: .range(1, Double(FeatureExtractor.maxEvents))
        // Only gaps between the typing-gap limit and the segment-pause limit are segment pauses.
        case .segmentPauseMeanMs:
            .range(Double(FeatureExtractor.typingGapMaxMs), Double(FeatureExtractor.segmentPauseMaxMs))
        }
    }
}

/// A feature vector: one `Double` per `Feature`, NaN where the feature is missing (LightGBM
/// routes missing values down each tree's learned default branch).
public struct FeatureVector: Sendable, Equatable {
    /// All feature names, in the fixed order of `values`.
    public static let names: [String] = Feature.names

    /// The values in `names` order; NaN = missing.
    public internal(set) var values: [Double]

    /// A vector with every feature missing.
    public init() {
        values = [Double](repeating: .nan, count: Feature.allCases.count)
    }

    /// Internal: the trainer's fixtures and tests hand in raw vectors; callers go through
    /// `FeatureExtractor`, which validates.
    init(values: [Double]) {
        precondition(values.count == Feature.allCases.count)
        self.values = values
    }

    /// The value of `feature` (NaN if missing).
    public subscript(feature: Feature) -> Double {
        get { values[feature.rawValue] }
        set { values[feature.rawValue] = newValue }
    }

    /// The value of the feature named `name`: nil for an unknown name, NaN if missing.
    public subscript(name: String) -> Double? {
        guard let feature = Feature(name: name) else { return nil }
        return values[feature.rawValue]
    }

    /// Whether `feature` is missing.
    public func isMissing(_ feature: Feature) -> Bool { values[feature.rawValue].isNaN }

    /// Equal when every feature is equal or missing in both.
    public static func == (a: FeatureVector, b: FeatureVector) -> Bool {
        zip(a.values, b.values).allSatisfy { $0 == $1 || ($0.isNaN && $1.isNaN) }
    }
}
