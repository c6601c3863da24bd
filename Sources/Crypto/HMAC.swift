internal import COpenSSL

/// HMAC-SHA256 (RFC 2104) over OpenSSL's one-shot `HMAC`.
public enum HMACSHA256 {
    /// The 32-byte tag of `message` under `key`.
    public static func authenticationCode(for message: [UInt8], key: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let result = key.withUnsafeBytes { keyBytes in
            message.withUnsafeBytes { messageBytes in
                out.withUnsafeMutableBytes { output in
                    // An empty buffer has a nil base address; OpenSSL wants a valid pointer.
                    HMAC(EVP_sha256(), keyBytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!,
                         Int32(keyBytes.count),
                         messageBytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                         messageBytes.count,
                         output.baseAddress!.assumingMemoryBound(to: UInt8.self), &length)
                }
            }
        }
        precondition(result != nil && length == 32, "HMAC-SHA256 failed")
        return out
    }
}
