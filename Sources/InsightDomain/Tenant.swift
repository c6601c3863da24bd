/// A tenant: one organisation or app whose callers trust each other (docs/api.md, "Tenants").
/// Inside a tenant and environment, callers share labels, opt-outs and device limits; across
/// tenants nothing is shared, affected or revealed, and identifier hashes differ (each tenant
/// hashes under keys derived from the keyring, `HashKeyring.forTenant`).
public enum Tenant {
    /// The tenant of every caller created without one, and of every caller that existed
    /// before tenants: it hashes under the keyring's own keys, so earlier data stays valid.
    public static let defaultName = "default"

    /// Longest tenant name.
    public static let maxNameLength = 63

    /// A tenant name: 1 to 63 of `a-z 0-9 - _ .`, starting with a letter or digit. Names are
    /// chosen by the operator, appear in metric labels and logs, and must not carry personal data.
    public static func isValidName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= maxNameLength, isLetterOrDigit(first) else { return false }
        return bytes.allSatisfy { isLetterOrDigit($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".") }
    }

    private static func isLetterOrDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}

/// The highest rate and burst the operator lets a tenant's admins give any of the tenant's
/// callers (`insightctl tenants update NAME --max-rate --max-burst`); nil: no ceiling on it. An
/// admin key can change its tenant's callers' quotas, itself included, but not past this.
public struct TenantCeiling: Sendable, Equatable {
    public var maxRate: Double?
    public var maxBurst: Int?

    public init(maxRate: Double? = nil, maxBurst: Int? = nil) {
        self.maxRate = maxRate
        self.maxBurst = maxBurst
    }

    /// No ceiling at all.
    public var isNone: Bool { maxRate == nil && maxBurst == nil }
}
