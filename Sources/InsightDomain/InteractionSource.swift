/// The platform a capture kit runs on (`interaction.source.platform`). It selects the model's
/// thresholds where they differ per platform, and splits the model-performance report and drift.
public enum ClientPlatform: String, Sendable, CaseIterable {
    case web, ios, android, other
}

/// Which capture produced an interaction (`interaction.source`): the kit's name and version as
/// short tokens the caller chooses, and its platform. Stored with the evaluation (never the
/// events), so that a kit version that moves the scores shows in the report and in drift.
public struct InteractionSource: Sendable, Hashable {
    /// The longest kit name, and the longest version: a name and a version number, not text.
    public static let maxKitLength = 32
    public static let maxVersionLength = 32
    /// The most events a kit may say it dropped (`interaction.source.droppedEvents`, which is
    /// counted in a metric and not stored).
    public static let maxDroppedEvents: Int64 = 10_000_000

    /// The kit's name, e.g. `insight-capture-web`.
    public var kit: String
    /// The kit's version, e.g. `1.0.0`.
    public var version: String
    public var platform: ClientPlatform

    public init(kit: String, version: String, platform: ClientPlatform) {
        self.kit = kit
        self.version = version
        self.platform = platform
    }

    /// Whether `text` is a token as `kit` and `version` must be: letters, digits and `.`, `_`,
    /// `+`, `-` (what a name or a version number needs, and nothing a sentence would).
    public static func isToken<Bytes: Sequence>(_ utf8: Bytes) -> Bool where Bytes.Element == UInt8 {
        utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "+"),
                UInt8(ascii: "-"):
                return true
            default:
                return false
            }
        }
    }
}

extension InteractionSource {
    /// The source a store row holds: nil unless all three columns hold a known platform and
    /// tokens (rows stored before sources existed hold none).
    public static func stored(platform: String?, kit: String?, version: String?) -> InteractionSource? {
        guard let platform = platform.flatMap(ClientPlatform.init(rawValue:)), let kit, let version else { return nil }
        return InteractionSource(kit: kit, version: version, platform: platform)
    }
}
