import InsightDomain
import Locking

/// Checks API keys against the credential directory. Results (including misses) are cached for
/// `cacheSeconds`, so a new caller or a revoked key takes effect within that time without a
/// restart, and repeated bad keys do not reach the database. Keys found and key ids not found
/// are cached apart, each bounded: a flood of random key ids can only flush the cache of
/// misses, never the keys of real callers.
public final class CredentialCheck: Sendable {
    /// A key and its caller as the directory had them. A class, so that the cache, its
    /// look-ups and their results share one copy instead of copying every string of both.
    private final class Credential: Sendable {
        let key: StoredKey
        let caller: Caller
        init(_ found: (key: StoredKey, caller: Caller)) { (key, caller) = found }
    }
    private struct Entry { let found: Credential?; let expires: Milliseconds }
    private struct Cache {
        var found: [String: Entry] = [:]
        var missing: [String: Entry] = [:]
    }
    private let directory: any CredentialDirectory
    private let clock: any Clock
    private let ttl: Milliseconds
    private let cache = Locked(Cache())
    /// Entries each half of the cache holds at most; when one is full, its expired entries go,
    /// and if none had expired, all of that half.
    static let maxCacheEntries = 10_000

    public init(directory: any CredentialDirectory, clock: any Clock, cacheSeconds: Double) {
        self.directory = directory
        self.clock = clock
        self.ttl = Milliseconds(cacheSeconds * 1000)
    }

    /// The caller holding `token` (the secret a client sends), if it holds `role` (nil: any).
    public func caller(for token: String, requiring role: Role?) throws(Rejection) -> Caller {
        guard let key = APIKey(token: token) else { throw .unauthorized(detail: "The API key is not valid.") }
        let found: Credential?
        do { found = try lookup(key.keyId) } catch { throw .credentialsUnavailable }
        guard let found, found.key.revokedAt == nil, key.matches(found.key.secretHash) else {
            throw .unauthorized(detail: "The API key is not valid.")
        }
        if let role, !found.caller.roles.contains(role) { throw .forbidden(missing: role) }
        return found.caller
    }

    private func lookup(_ keyId: String) throws -> Credential? {
        let now = clock.now()
        // Fresh for `ttl` from its reading. An entry expiring more than `ttl` from now was read
        // before the wall clock stepped back: read it again, or a key revoked since would stay
        // good for the length of the step.
        if let entry = cache.withLock({ $0.found[keyId] ?? $0.missing[keyId] }), entry.expires > now, entry.expires - now <= ttl {
            return entry.found
        }
        let found = try directory.credential(keyId: keyId).map(Credential.init)
        let entry = Entry(found: found, expires: now + ttl)
        cache.withLock { cache in
            if found != nil {
                cache.missing[keyId] = nil
                Self.insert(entry, keyId, into: &cache.found, now: now)
            } else {
                cache.found[keyId] = nil
                Self.insert(entry, keyId, into: &cache.missing, now: now)
            }
        }
        return found
    }

    private static func insert(_ entry: Entry, _ keyId: String, into entries: inout [String: Entry], now: Milliseconds) {
        if entries.count >= maxCacheEntries, entries[keyId] == nil {
            entries = entries.filter { $0.value.expires > now }
            if entries.count >= maxCacheEntries { entries.removeAll(keepingCapacity: true) }
        }
        entries[keyId] = entry
    }
}
