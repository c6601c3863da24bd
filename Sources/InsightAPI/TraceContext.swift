import Crypto

/// W3C Trace Context (`traceparent: 00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`):
/// the trace id of a well-formed header is kept so log lines join a caller's trace; anything
/// else gets a fresh random id.
enum TraceContext {
    static func traceId(_ header: String?) -> String {
        if let header {
            let parts = header.split(separator: "-", omittingEmptySubsequences: false)
            if parts.count >= 4, parts[0].count == 2, parts[0] != "ff", parts[1].count == 32, parts[2].count == 16,
                parts[1].allSatisfy(\.isLowercaseHex), parts[2].allSatisfy(\.isLowercaseHex),
                parts[1] != Substring(String(repeating: "0", count: 32))
            {
                return String(parts[1])
            }
        }
        return SecureRandom.hexIdentifier(bytes: 16)
    }
}

extension Character {
    var isLowercaseHex: Bool { ("0"..."9").contains(self) || ("a"..."f").contains(self) }
}
