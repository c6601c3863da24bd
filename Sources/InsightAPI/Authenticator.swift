import HTTPServer
import InsightDomain
import InsightServices

/// Reads the key a request carries (`Authorization: Bearer <key>`); `CredentialCheck` decides
/// whose it is.
enum Authenticator {
    /// The key in `headers`, or the 400/401 problem. A request with two `Authorization` fields
    /// is refused: components that read the first and the last would disagree about who is calling.
    static func token(in headers: HTTPHeaders) throws(Problem) -> String {
        var authorization: String?
        for field in headers where field.name.equalsIgnoringASCIICase("Authorization") {
            guard authorization == nil else {
                throw Problem(
                    400, .malformedRequest, "Send one 'Authorization' header; this request has several.",
                    field: "Authorization")
            }
            authorization = field.value
        }
        guard let authorization, let token = bearerToken(authorization) else {
            throw Problem(.unauthorized(detail: "Send an API key as 'Authorization: Bearer <key>'."))
        }
        return token
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
}

extension InsightAPIHandler {
    /// The caller behind a request of `route`, checked against `route.access` (the one place
    /// that says who may call what); nil for an open route.
    func authenticate(_ request: HTTPRequest, route: Route) throws(Problem) -> Caller? {
        let role: Role?
        var oneOf: [Role] = []
        switch route.access {
        case .open: return nil
        case .anyCaller: role = nil
        case .role(let required): role = required
        case .anyRole(let roles): (role, oneOf) = (nil, roles)
        }
        let token = try Authenticator.token(in: request.headers)
        let caller: Caller
        do { caller = try useCases.credentials.caller(for: token, requiring: role) } catch { throw Problem(error) }
        if let first = oneOf.first, !oneOf.contains(where: caller.roles.contains) { throw Problem(.forbidden(missing: first)) }
        return caller
    }
}
