/// The rule that keeps every instance hashing like the stored data: the store registers the key
/// ids it has seen (a key id is a one-way fingerprint of its key), and a keyring may serve the
/// store only if it holds one of them — the same key file, or a rotation of it that keeps the
/// old key as a previous one. A store that knows no key yet takes the keyring's.
public enum KeyringAgreement {
    /// The key ids of `keyring` the store must add, given the ids it has registered; throws
    /// when the keyring shares none of them.
    public static func keysToRegister(_ keyring: HashKeyring, registered: Set<String>) throws(KeyringMismatch) -> [String] {
        let ids = keyring.all.map(\.keyId)
        guard registered.isEmpty || ids.contains(where: registered.contains) else {
            throw KeyringMismatch(keyring: ids, registered: registered.sorted())
        }
        return ids.filter { !registered.contains($0) }
    }
}

/// A keyring that shares no key with the store's.
public struct KeyringMismatch: Error, CustomStringConvertible, Sendable, Equatable {
    public let keyring: [String]
    public let registered: [String]

    public var description: String {
        "the hash keyring (keys \(keyring.joined(separator: ", "))) shares no key with the store's "
            + "(keys \(registered.joined(separator: ", "))): every instance must read the same hash key file, "
            + "and a rotation must keep the old key (insightctl hash-keys rotate)"
    }
}
