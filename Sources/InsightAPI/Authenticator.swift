import HTTPServer
import InsightDomain
import InsightServices
import Synchronization

/// The caller behind a request, after its key was checked.
public struct AuthenticatedCaller: Sendable {
    public var caller: Caller
    public var keyId: String
}

/// Checks `Authorization: Bearer` keys against the credential directory. Results (including
/// misses) are cached for `cacheSeconds`, so a new caller or a revoked key takes effect
/// within that time without a restart, and repeated bad keys do not reach the database.
/// Keys found and key ids not found are cached apart, each bounded: a flood of random key ids
/// can only flush the cache of misses, never the keys of real callers.
final class Authenticator: Sendable {
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
    private let cache = Mutex(Cache())
    /// Entries each half of the cache holds at most; when one is full, its expired entries go,
    /// and if none had expired, all of that half.
    static let maxCacheEntries = 10_000

    init(directory: any CredentialDirectory, clock: any Clock, cacheSeconds: Double) {
        self.directory = directory
        self.clock = clock
        self.ttl = Milliseconds(cacheSeconds * 1000)
    }

    /// The authenticated caller holding `role`, or the 400/401/403 problem. A request with two
    /// `Authorization` fields is refused: components that read the first and the last would
    /// disagree about who is calling.
    func authenticate(_ headers: HTTPHeaders, requiring role: Role?) throws(Problem) -> AuthenticatedCaller {
        var authorization: String?
        for field in headers where field.name.equalsIgnoringASCIICase("Authorization") {
            guard authorization == nil else {
                throw Problem(400, .malformedRequest, "Send one 'Authorization' header; this request has several.",
                              field: "Authorization")
            }
            authorization = field.value
        }
        return try authenticate(authorization, requiring: role)
    }

    /// The authenticated caller holding `role` for the value of the `Authorization` field.
    private func authenticate(_ authorization: String?, requiring role: Role?) throws(Problem) -> AuthenticatedCaller {
        guard let authorization, let token = Self.bearerToken(authorization) else {
            throw Self.unauthorized("Send an API key as 'Authorization: Bearer <key>'.")
        }
        guard let key = APIKey(token: token) else { throw Self.unauthorized("The API key is not valid.") }
        let found: Credential?
        do { found = try lookup(key.keyId) } catch {
            var problem = Problem(503, .serverError, "Credentials cannot be checked right now; retry.")
            problem.headers = [("Retry-After", "1")]
            throw problem
        }
        guard let found, found.key.revokedAt == nil, key.matches(found.key.secretHash) else {
            throw Self.unauthorized("The API key is not valid.")
        }
        if let role, !found.caller.roles.contains(role) {
            throw Problem(403, .forbidden, "This credential lacks the '\(role.rawValue)' role.")
        }
        return AuthenticatedCaller(caller: found.caller, keyId: key.keyId)
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

    static func bearerToken(_ header: String) -> String? {
        // On the bytes, with no Substrings made or lowercased (this runs on every request).
        // Same reading as `split(separator: " ", maxSplits: 1)`: spaces before the
        // scheme are skipped, the scheme ends at the first space, and the token is the rest
        // after that one space, trimmed of spaces and tabs (empty when only blanks follow).
        let space = UInt8(ascii: " "), tab = UInt8(ascii: "\t")
        var header = header
        return header.withUTF8 { b -> String? in
            var i = 0
            while i < b.count && b[i] == space { i += 1 }
            let schemeStart = i
            while i < b.count && b[i] != space { i += 1 }
            guard i - schemeStart == 6, i + 1 < b.count else { return nil }
            for (k, letter) in "bearer".utf8.enumerated() where b[schemeStart + k] | 0x20 != letter {
                return nil
            }
            var start = i + 1, end = b.count
            while start < end && (b[start] == space || b[start] == tab) { start += 1 }
            while end > start && (b[end - 1] == space || b[end - 1] == tab) { end -= 1 }
            return String(decoding: UnsafeBufferPointer(rebasing: b[start..<end]), as: UTF8.self)
        }
    }

    static func unauthorized(_ detail: String) -> Problem {
        var problem = Problem(401, .unauthorized, detail)
        problem.headers = [("WWW-Authenticate", "Bearer realm=\"insightd\"")]
        return problem
    }
}

extension InsightAPIHandler {
    /// The caller behind a request of `route`, checked against `route.access` (the one place
    /// that says who may call what); nil for an open route.
    func authenticate(_ request: HTTPRequest, route: Route) throws(Problem) -> AuthenticatedCaller? {
        switch route.access {
        case .open: return nil
        case .anyCaller: return try authenticator.authenticate(request.headers, requiring: nil)
        case .role(let role): return try authenticator.authenticate(request.headers, requiring: role)
        }
    }

    /// The caller behind the exchange, which then names it in its log line.
    func authenticate(_ exchange: Exchange) throws(Problem) -> AuthenticatedCaller {
        guard let caller = try authenticate(exchange.request, route: exchange.route) else {
            // An open route's endpoint asked for a caller: a mistake of this code, not the client's.
            throw Problem(500, .serverError, "An unexpected error occurred; it was logged.")
        }
        exchange.callerId = caller.caller.callerId
        return caller
    }
}
