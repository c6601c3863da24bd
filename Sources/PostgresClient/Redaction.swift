/// The secrets a connection string carries, to be cut out of every message libpq gives: libpq
/// quotes parts of a URL it cannot parse (a bad percent-escape, an unterminated IPv6 address),
/// and those parts may be the password. (A URI libpq would misread is refused before it is
/// used: `PostgresURL`.)
struct Redaction: Sendable {
    private let secrets: [String]

    /// The password of `url`'s user information (`scheme://user:password@host`) and of any
    /// `password=` parameter, each as written and percent-decoded.
    init(connectionString url: String) {
        var found: [Substring] = []
        if let scheme = url.firstRange(of: "://") {
            let rest = url[scheme.upperBound...]
            let authority = rest.prefix { $0 != "/" && $0 != "?" }
            if let at = authority.lastIndex(of: "@") {
                let userInfo = authority[..<at]
                if let colon = userInfo.firstIndex(of: ":") {
                    found.append(userInfo[userInfo.index(after: colon)...])
                }
            }
        }
        // `password=…` in a URI query (`&`-separated) or a key/value string (space-separated).
        var searchFrom = url.startIndex
        while let key = url[searchFrom...].firstRange(of: "password=") {
            let value = url[key.upperBound...].prefix { $0 != "&" && $0 != " " }
            found.append(value)
            searchFrom = key.upperBound
        }
        var secrets: [String] = []
        for raw in found where !raw.isEmpty {
            secrets.append(String(raw))
            if let decoded = PostgresURL.percentDecoded(raw.utf8), decoded != String(raw), !decoded.isEmpty { secrets.append(decoded) }
        }
        // Longest first, so that a secret containing another is cut whole.
        self.secrets = secrets.sorted { $0.count > $1.count }
    }

    /// `text` with every secret replaced.
    func apply(_ text: String) -> String {
        var text = text
        for secret in secrets where text.contains(secret) { text = text.replacing(secret, with: "[redacted]") }
        return text
    }
}

/// The value of one hexadecimal digit, either case.
func hexDigitValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: nil
    }
}
