/// HMAC-SHA256 (RFC 2104).
public enum HMACSHA256 {
    /// The 32-byte tag of `message` under `key`. For many messages under one key, make an
    /// `HMACSHA256Key` once instead: this prepares the key on every call.
    public static func authenticationCode(for message: [UInt8], key: [UInt8]) -> [UInt8] {
        HMACSHA256Key(key).authenticationCode(for: message)
    }
}

/// An HMAC-SHA256 key prepared once: the SHA-256 states after absorbing the key's inner and
/// outer pads (RFC 2104 §2), so each tag costs only the message's own compressions plus one.
///
/// Why not OpenSSL's one-shot `HMAC()`: in OpenSSL 3 every call fetches the MAC and digest
/// implementations by name (string compares under a process-wide lock, contended across
/// threads) and rebuilds the pads, on each of an evaluation's several tags.
/// The states are plain values (`SHA256.State`), copied for each tag: immutable after `init`,
/// so one key serves any number of threads. (A class: its stored states are of a type from an
/// internally imported C module, whose layout other modules must not have to know.)
public final class HMACSHA256Key: Sendable {
    private let inner: SHA256.State
    private let outer: SHA256.State

    /// SHA-256's block size: keys are padded (or first hashed) to it.
    private static let blockSize = 64

    public init(_ key: [UInt8]) {
        var block = key.count > Self.blockSize ? SHA256.digest(key) : key
        block.append(contentsOf: repeatElement(0, count: Self.blockSize - block.count))
        inner = Self.absorbing(block.map { $0 ^ 0x36 })
        outer = Self.absorbing(block.map { $0 ^ 0x5C })
    }

    private static func absorbing(_ pad: [UInt8]) -> SHA256.State {
        var state = SHA256.State()
        pad.withUnsafeBytes { state.absorb($0) }
        return state
    }

    /// The 32-byte tag of `message`.
    public func authenticationCode(for message: [UInt8]) -> [UInt8] {
        message.withUnsafeBytes { authenticationCode(for: $0) }
    }

    /// The 32-byte tag of the message made of `parts`, one after another (no copy joins them).
    public func authenticationCode(for parts: UnsafeRawBufferPointer...) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: 32) { tag, count in
            let digest = tag.baseAddress!
            // Inner: H((K ^ ipad) || message); outer: H((K ^ opad) || inner).
            var state = inner
            for part in parts { state.absorb(part) }
            state.finish(into: digest)
            state = outer
            state.absorb(UnsafeRawBufferPointer(start: digest, count: 32))
            state.finish(into: digest)
            count = 32
        }
    }
}
