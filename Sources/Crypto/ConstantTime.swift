internal import COpenSSL

/// Comparisons whose duration does not depend on where two secrets differ.
public enum ConstantTime {
    /// True when `a` and `b` are equal; the time taken depends only on their lengths.
    public static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress, y.baseAddress, a.count) == 0 }
        }
    }
}
