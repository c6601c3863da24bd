internal import Glibc

/// An incremental HTTP/1.1 request parser: a pure state machine over bytes, with no I/O.
///
/// Feed it contiguous byte runs as they arrive. Each call reports how many bytes it consumed
/// and one outcome: it needs more bytes (it then always consumed everything it was given,
/// keeping any partial line itself), the client expects `100 Continue`, a complete request, or
/// a protocol error. Bytes after a complete request are left unconsumed, so pipelined requests
/// stay with the caller until it asks for the next one.
///
/// It reads `UnsafeRawBufferPointer`s so bytes are parsed where libevent holds them; only a head
/// or line split across reads is copied, into `pending`.
///
/// Line endings (RFC 9112 §2.2): only CRLF is accepted, in the request line, header fields,
/// chunk-size lines and trailers. A bare LF or a bare CR is a 400. RFC 9112 lets a recipient
/// accept a bare LF, but framing that one hop reads differently from the next is how requests
/// are smuggled, and the daemon's clients are programs that always send CRLF.
///
/// Other choices, each an RFC 9112 option taken on the strict side:
/// - Empty lines before a request line are skipped (§2.2, "SHOULD ignore at least one").
/// - The header limit counts the request line, the fields and the final empty line.
/// - obs-fold, whitespace before the colon, and invalid token characters in a field name are
///   400s; so is a field value with a control character other than HTAB.
/// - Content-Length: digits only; repeated fields or list members must all be equal (§6.3);
///   a value over the body limit, however long, is a 413.
/// - Transfer-Encoding with Content-Length, or in an HTTP/1.0 request, is a 400 (§6.1);
///   any coding other than a single `chunked` is a 501.
/// - An HTTP/1.1 request needs exactly one Host field (§3.2).
/// - Chunk extensions are checked for control characters and skipped; trailer fields are
///   checked like header fields, count against the same limits, and are discarded.
struct HTTPRequestParser {
    /// The limits the parser enforces.
    struct Limits: Sendable, Equatable {
        var maxHeaderBytes: Int
        var maxHeaderCount: Int
        var maxBodyBytes: Int
    }

    /// A complete request with the connection-level facts taken from its head.
    struct ParsedRequest: Sendable {
        var request: HTTPRequest
        /// Whether the connection may stay open after the response (version and Connection).
        var keepAlive: Bool
        /// 0 for HTTP/1.0, 1 for HTTP/1.1.
        var minorVersion: Int
    }

    /// What one `parse` call found.
    enum Outcome: Sendable {
        /// Every byte given was consumed; call again with more.
        case needMore
        /// The head is complete and asks for `100 Continue` before the body is sent; keep feeding.
        case expectContinue
        /// A complete request; the bytes after it were not consumed.
        case request(ParsedRequest)
        /// The request is invalid; the connection must answer and close.
        case error(HTTPProtocolError)
    }

    /// The result of one `parse` call.
    struct Step: Sendable {
        var consumed: Int
        var outcome: Outcome
    }

    /// The longest chunk-size line (size plus extensions) accepted.
    static let maxChunkLineBytes = 4096

    private enum State {
        case head
        case fixedBody(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd(sawCR: Bool)
        case trailers
        case failed(HTTPProtocolError)
    }

    /// Where scanning of the head stopped, so a head split across calls is scanned only once.
    private struct HeadScan {
        /// Start of the request line (after skipped empty lines).
        var headStart = 0
        /// Start of the line being scanned.
        var lineStart = 0
        /// Next byte to scan.
        var position = 0
        var sawRequestLine = false
    }

    private enum HeadScanResult {
        case incomplete
        case complete(end: Int)
        case bareLineFeed
    }

    let limits: Limits
    private var state: State = .head
    /// Bytes of a head, chunk-size line or trailer line that arrived split across calls.
    private var pending: [UInt8] = []
    private var scan = HeadScan()
    /// The head of the request whose body is being read.
    private var current: ParsedRequest?
    /// The body length that head declares (nil: chunked).
    private var declaredLength: Int?
    private var body: [UInt8] = []
    private var trailerBytes = 0
    private var trailerCount = 0

    init(limits: Limits) {
        self.limits = limits
    }

    /// Whether any byte of a request (beyond empty lines between requests) has been consumed
    /// and the request is not yet complete: the request timeout runs while this is true.
    var hasStarted: Bool {
        switch state {
        case .head:
            let kept = pending.count - scan.headStart
            return kept > 1 || (kept == 1 && pending[scan.headStart] != cr)
        default:
            return true
        }
    }

    /// Whether the head of the request being parsed is complete and its body is being read
    /// (the header timeout is over, the request timeout runs).
    var isReadingBody: Bool { current != nil }

    /// After `.expectContinue`: the request's head (its body empty) and the body length it
    /// declares (nil when chunked). Nil while no body is being read.
    var headAwaitingBody: (request: HTTPRequest, declaredBodyLength: Int?)? {
        current.map { ($0.request, declaredLength) }
    }

    /// Consumes bytes from the start of `bytes` and reports what they completed.
    mutating func parse(_ bytes: UnsafeRawBufferPointer) -> Step {
        var offset = 0
        while true {
            switch state {
            case .failed(let error):
                return Step(consumed: offset, outcome: .error(error))

            case .head:
                if let outcome = parseHead(bytes, &offset) {
                    if case .error(let error) = outcome { state = .failed(error) }
                    return Step(consumed: offset, outcome: outcome)
                }

            case .fixedBody(let remaining):
                let take = min(remaining, bytes.count - offset)
                if take > 0 {
                    appendBytes(bytes, from: offset, count: take, to: &body)
                    offset += take
                }
                if take == remaining {
                    return Step(consumed: offset, outcome: .request(finishRequest()))
                }
                state = .fixedBody(remaining: remaining - take)
                return Step(consumed: offset, outcome: .needMore)

            case .chunkSize:
                guard let line = takeLine(bytes, &offset, limit: Self.maxChunkLineBytes) else {
                    return Step(consumed: offset, outcome: .needMore)
                }
                let room = limits.maxBodyBytes - body.count
                let size: Result<Int, HTTPProtocolError>
                switch line {
                case .direct(let start, let end):
                    size = Self.chunkSize(UnsafeRawBufferPointer(rebasing: bytes[start..<end]), room: room)
                case .pending:
                    size = pending.withUnsafeBytes { Self.chunkSize($0, room: room) }
                    pending.removeAll(keepingCapacity: true)
                case .tooLong:
                    size = .failure(.malformedRequest("chunk size line too long"))
                }
                switch size {
                case .failure(.bodyTooLarge):
                    state = .failed(.bodyTooLarge(limit: limits.maxBodyBytes))
                case .failure(let error):
                    state = .failed(error)
                case .success(0):
                    trailerBytes = 0
                    trailerCount = 0
                    state = .trailers
                case .success(let size):
                    state = .chunkData(remaining: size)
                }

            case .chunkData(let remaining):
                let take = min(remaining, bytes.count - offset)
                if take > 0 {
                    appendBytes(bytes, from: offset, count: take, to: &body)
                    offset += take
                }
                if take < remaining {
                    state = .chunkData(remaining: remaining - take)
                    return Step(consumed: offset, outcome: .needMore)
                }
                state = .chunkDataEnd(sawCR: false)

            case .chunkDataEnd(let sawCR):
                guard offset < bytes.count else { return Step(consumed: offset, outcome: .needMore) }
                let byte = bytes[offset]
                offset += 1
                if !sawCR && byte == cr {
                    state = .chunkDataEnd(sawCR: true)
                } else if sawCR && byte == lf {
                    state = .chunkSize
                } else {
                    state = .failed(.malformedRequest("chunk data not followed by CRLF"))
                }

            case .trailers:
                guard let line = takeLine(bytes, &offset, limit: limits.maxHeaderBytes - trailerBytes) else {
                    return Step(consumed: offset, outcome: .needMore)
                }
                let result: Result<Bool, HTTPProtocolError>
                switch line {
                case .direct(let start, let end):
                    trailerBytes += end - start + 1
                    result = Self.trailerLine(UnsafeRawBufferPointer(rebasing: bytes[start..<end]))
                case .pending:
                    trailerBytes += pending.count + 1
                    result = pending.withUnsafeBytes { Self.trailerLine($0) }
                    pending.removeAll(keepingCapacity: true)
                case .tooLong:
                    result = .failure(.headersTooLarge)
                }
                switch result {
                case .failure(let error):
                    state = .failed(error)
                case .success(true):
                    return Step(consumed: offset, outcome: .request(finishRequest()))
                case .success(false):
                    trailerCount += 1
                    if trailerCount > limits.maxHeaderCount { state = .failed(.headersTooLarge) }
                }
            }
        }
    }

    // MARK: - Head

    /// Advances through the header section; nil means the head is complete and a body follows.
    private mutating func parseHead(_ bytes: UnsafeRawBufferPointer, _ offset: inout Int) -> Outcome? {
        let available = bytes.count - offset
        if pending.isEmpty {
            // Fast path: the whole head usually arrives in one read; parse it where it lies.
            let region = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            var fresh = HeadScan()
            switch Self.scanHead(region, &fresh) {
            case .bareLineFeed:
                return .error(.malformedRequest("line not terminated by CRLF"))
            case .complete(let end):
                if end - fresh.headStart > limits.maxHeaderBytes { return .error(.headersTooLarge) }
                let outcome = headParsed(
                    Self.parseHeadSection(
                        UnsafeRawBufferPointer(rebasing: region[fresh.headStart..<end]), limits: limits))
                offset += end
                return outcome
            case .incomplete:
                if available - fresh.headStart > limits.maxHeaderBytes { return .error(.headersTooLarge) }
                // Keep the partial head, minus skipped empty lines, for the next call.
                pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: region[fresh.headStart...]))
                fresh.position -= fresh.headStart
                fresh.lineStart -= fresh.headStart
                fresh.headStart = 0
                scan = fresh
                offset += available
                return .needMore
            }
        }

        // Slow path: continue a head that started in an earlier call.
        let oldCount = pending.count
        let room = limits.maxHeaderBytes - (oldCount - scan.headStart) + 1
        let appended = min(available, max(room, 0))
        pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + appended)]))
        let result = pending.withUnsafeBytes { Self.scanHead($0, &scan) }
        switch result {
        case .bareLineFeed:
            return .error(.malformedRequest("line not terminated by CRLF"))
        case .complete(let end):
            if end - scan.headStart > limits.maxHeaderBytes { return .error(.headersTooLarge) }
            let headStart = scan.headStart
            let limits = self.limits
            let parsed = pending.withUnsafeBytes {
                Self.parseHeadSection(UnsafeRawBufferPointer(rebasing: $0[headStart..<end]), limits: limits)
            }
            offset += end - oldCount
            pending.removeAll(keepingCapacity: true)
            scan = HeadScan()
            return headParsed(parsed)
        case .incomplete:
            if pending.count - scan.headStart > limits.maxHeaderBytes { return .error(.headersTooLarge) }
            offset += appended
            if !scan.sawRequestLine && scan.headStart > 0 {
                // Only empty lines so far: forget them so they cannot pile up.
                pending.removeFirst(scan.headStart)
                scan.position -= scan.headStart
                scan.lineStart -= scan.headStart
                scan.headStart = 0
            }
            return .needMore
        }
    }

    /// Moves to the body state the head calls for.
    private mutating func headParsed(_ result: HeadResult) -> Outcome? {
        switch result {
        case .failure(let error):
            return .error(error)
        case .success(let head):
            current = ParsedRequest(
                request: head.request, keepAlive: head.keepAlive,
                minorVersion: head.minorVersion)
            body = []
            switch head.framing {
            case .none:
                return .request(finishRequest())
            case .length(let length):
                body.reserveCapacity(length)
                declaredLength = length
                state = .fixedBody(remaining: length)
            case .chunked:
                declaredLength = nil
                state = .chunkSize
            }
            return head.expectContinue ? .expectContinue : nil
        }
    }

    private mutating func finishRequest() -> ParsedRequest {
        var parsed = current.take()!  // moved out, not copied
        parsed.request.body = body
        body = []
        state = .head
        return parsed
    }

    /// Finds the empty line that ends a head, resuming where the last scan of `buffer` stopped.
    private static func scanHead(_ buffer: UnsafeRawBufferPointer, _ scan: inout HeadScan) -> HeadScanResult {
        guard let base = buffer.baseAddress else { return .incomplete }
        let count = buffer.count
        while scan.position < count {
            guard let found = memchr(base + scan.position, Int32(lf), count - scan.position) else {
                scan.position = count
                return .incomplete
            }
            let index = base.distance(to: UnsafeRawPointer(found))
            guard index > scan.lineStart, buffer[index - 1] == cr else { return .bareLineFeed }
            if index - 1 == scan.lineStart {
                if !scan.sawRequestLine {
                    scan.headStart = index + 1
                } else {
                    return .complete(end: index + 1)
                }
            } else {
                scan.sawRequestLine = true
            }
            scan.lineStart = index + 1
            scan.position = index + 1
        }
        return .incomplete
    }

    enum Framing: Equatable {
        case none
        case length(Int)
        case chunked
    }

    typealias HeadResult = Result<ParsedHead, HTTPProtocolError>

    /// What the head says, before the body is read.
    struct ParsedHead {
        var request: HTTPRequest
        var keepAlive: Bool
        var minorVersion: Int
        var framing: Framing
        var expectContinue: Bool
    }

    /// Parses a complete head: request line, fields and the final empty line, all CRLF-terminated.
    static func parseHeadSection(_ head: UnsafeRawBufferPointer, limits: Limits) -> HeadResult {
        // The request line; scanHead guaranteed every line ends in CRLF.
        let firstLF = lineFeed(in: head, from: 0)
        let line = UnsafeRawBufferPointer(rebasing: head[0..<(firstLF - 1)])
        let requestLine: RequestLine
        switch parseRequestLine(line) {
        case .success(let parsed): requestLine = parsed
        case .failure(let error): return .failure(error)
        }

        var headers = HTTPHeaders()
        headers.fields.reserveCapacity(12)
        var contentLength: Int?
        var contentLengthTooLarge = false
        var transferEncodings: [Substring] = []
        var sawTransferEncoding = false
        var hostCount = 0
        var connectionClose = false
        var connectionKeepAlive = false
        var expectContinue = false

        var lineStart = firstLF + 1
        while true {
            let lineEnd = Self.lineFeed(in: head, from: lineStart) - 1
            if lineEnd == lineStart { break }
            if headers.count == limits.maxHeaderCount { return .failure(.headersTooLarge) }
            let field: (name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)
            switch parseFieldLine(UnsafeRawBufferPointer(rebasing: head[lineStart..<lineEnd])) {
            case .success(let parsed): field = parsed
            case .failure(let error): return .failure(error)
            }
            let name = String(decoding: field.name, as: UTF8.self)
            let value = String(decoding: field.value, as: UTF8.self)
            headers.fields.append((name: name, value: value))

            switch field.name.count {
            case 4 where equalsLowercase(field.name, "host"):
                hostCount += 1
            case 6 where equalsLowercase(field.name, "expect"):
                if value.equalsIgnoringASCIICase("100-continue") { expectContinue = true }
            case 10 where equalsLowercase(field.name, "connection"):
                for token in value.split(separator: ",") {
                    let token = token.trimmingOWS()
                    if token.equalsIgnoringASCIICase("close") { connectionClose = true }
                    if token.equalsIgnoringASCIICase("keep-alive") { connectionKeepAlive = true }
                }
            case 14 where equalsLowercase(field.name, "content-length"):
                switch parseContentLength(field.value, limit: limits.maxBodyBytes) {
                case .invalid:
                    return .failure(.malformedRequest("invalid Content-Length"))
                case .tooLarge:
                    contentLengthTooLarge = true
                case .value(let length):
                    if let previous = contentLength, previous != length {
                        return .failure(.malformedRequest("conflicting Content-Length values"))
                    }
                    contentLength = length
                }
            case 17 where equalsLowercase(field.name, "transfer-encoding"):
                sawTransferEncoding = true
                for coding in value.split(separator: ",", omittingEmptySubsequences: true) {
                    let coding = coding.trimmingOWS()
                    if !coding.isEmpty { transferEncodings.append(coding) }
                }
            default:
                break
            }
            lineStart = lineEnd + 2
        }

        let minor = requestLine.minorVersion
        if minor == 1 {
            if hostCount == 0 { return .failure(.malformedRequest("missing Host field")) }
        }
        if hostCount > 1 { return .failure(.malformedRequest("more than one Host field")) }

        var framing = Framing.none
        if sawTransferEncoding {
            if contentLength != nil || contentLengthTooLarge {
                return .failure(.malformedRequest("both Content-Length and Transfer-Encoding"))
            }
            if minor == 0 { return .failure(.malformedRequest("Transfer-Encoding in an HTTP/1.0 request")) }
            if transferEncodings.isEmpty { return .failure(.malformedRequest("empty Transfer-Encoding")) }
            guard transferEncodings.allSatisfy({ $0.equalsIgnoringASCIICase("chunked") }) else {
                return .failure(.unsupportedTransferEncoding)
            }
            if transferEncodings.count > 1 { return .failure(.malformedRequest("chunked applied more than once")) }
            framing = .chunked
        } else if contentLengthTooLarge {
            return .failure(.bodyTooLarge(limit: limits.maxBodyBytes))
        } else if let length = contentLength, length > 0 {
            framing = .length(length)
        }

        let keepAlive = minor == 1 ? !connectionClose : (connectionKeepAlive && !connectionClose)
        let request = HTTPRequest(
            method: requestLine.method, path: requestLine.path,
            query: requestLine.query, headers: headers)
        return .success(
            ParsedHead(
                request: request, keepAlive: keepAlive, minorVersion: minor,
                framing: framing,
                expectContinue: expectContinue && minor == 1 && framing != .none))
    }

    /// The index of the next LF at or after `start`, in a head that scanHead found complete.
    private static func lineFeed(in head: UnsafeRawBufferPointer, from start: Int) -> Int {
        let base = head.baseAddress!
        return base.distance(to: UnsafeRawPointer(memchr(base + start, Int32(lf), head.count - start)!))
    }

    struct RequestLine {
        var method: String
        var path: String
        var query: String?
        var minorVersion: Int
    }

    /// Parses `method SP request-target SP HTTP-version` (without the CRLF).
    static func parseRequestLine(_ line: UnsafeRawBufferPointer) -> Result<RequestLine, HTTPProtocolError> {
        guard let firstSpace = line.firstIndex(of: space), firstSpace > 0 else {
            return .failure(.malformedRequest("invalid request line"))
        }
        guard let secondSpace = line[(firstSpace + 1)...].firstIndex(of: space),
            secondSpace > firstSpace + 1
        else {
            return .failure(.malformedRequest("invalid request line"))
        }
        let method = UnsafeRawBufferPointer(rebasing: line[0..<firstSpace])
        guard method.allSatisfy(isTokenByte) else {
            return .failure(.malformedRequest("invalid method"))
        }
        let version = UnsafeRawBufferPointer(rebasing: line[(secondSpace + 1)...])
        guard version.count == 8, version.starts(with: "HTTP/".utf8),
            isDigit(version[5]), version[6] == UInt8(ascii: "."), isDigit(version[7])
        else {
            return .failure(.malformedRequest("invalid HTTP version"))
        }
        guard version[5] == UInt8(ascii: "1"), version[7] == UInt8(ascii: "0") || version[7] == UInt8(ascii: "1") else {
            return .failure(.unsupportedVersion)
        }
        let target = UnsafeRawBufferPointer(rebasing: line[(firstSpace + 1)..<secondSpace])
        guard target.allSatisfy({ $0 > space && $0 != 0x7F }) else {
            return .failure(.malformedRequest("invalid request target"))
        }
        let methodString = String(decoding: method, as: UTF8.self)

        var pathBytes = target
        let first = target[0]
        if first == UInt8(ascii: "*") {
            guard target.count == 1, methodString == "OPTIONS" else {
                return .failure(.malformedRequest("invalid request target"))
            }
        } else if first != UInt8(ascii: "/") {
            if methodString == "CONNECT" {
                return .success(
                    RequestLine(
                        method: methodString, path: String(decoding: target, as: UTF8.self),
                        query: nil, minorVersion: Int(version[7] - UInt8(ascii: "0"))))
            }
            // absolute-form (RFC 9112 §3.2.2): keep the path and query, drop scheme and authority.
            guard let schemeEnd = absoluteFormAuthorityStart(target) else {
                return .failure(.malformedRequest("invalid request target"))
            }
            let rest = UnsafeRawBufferPointer(rebasing: target[schemeEnd...])
            if let slash = rest.firstIndex(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") }) {
                pathBytes = UnsafeRawBufferPointer(rebasing: rest[slash...])
            } else {
                pathBytes = UnsafeRawBufferPointer(start: nil, count: 0)
            }
        }

        var path: String
        var query: String?
        if let mark = pathBytes.firstIndex(of: UInt8(ascii: "?")) {
            path = String(decoding: UnsafeRawBufferPointer(rebasing: pathBytes[..<mark]), as: UTF8.self)
            query = String(decoding: UnsafeRawBufferPointer(rebasing: pathBytes[(mark + 1)...]), as: UTF8.self)
        } else {
            path = String(decoding: pathBytes, as: UTF8.self)
        }
        if path.isEmpty { path = "/" }
        return .success(
            RequestLine(
                method: methodString, path: path, query: query,
                minorVersion: Int(version[7] - UInt8(ascii: "0"))))
    }

    /// The index just after `http://` or `https://` (any case), or nil for other targets.
    private static func absoluteFormAuthorityStart(_ target: UnsafeRawBufferPointer) -> Int? {
        for scheme in ["http://", "https://"] {
            let scheme = scheme.utf8
            if target.count > scheme.count,
                zip(target, scheme).allSatisfy({ asciiLowercased($0) == $1 })
            {
                return scheme.count
            }
        }
        return nil
    }

    /// Splits `name ":" OWS value OWS`, checking the name's token characters and the value's bytes.
    static func parseFieldLine(_ line: UnsafeRawBufferPointer)
        -> Result<(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer), HTTPProtocolError>
    {
        let first = line[0]
        if first == space || first == tab {
            return .failure(.malformedRequest("obsolete line folding"))
        }
        var colon = 0
        while colon < line.count, line[colon] != UInt8(ascii: ":") {
            guard isTokenByte(line[colon]) else {
                return .failure(.malformedRequest("invalid header field name"))
            }
            colon += 1
        }
        guard colon < line.count, colon > 0 else {
            return .failure(.malformedRequest("invalid header field"))
        }
        var start = colon + 1
        var end = line.count
        while start < end, line[start] == space || line[start] == tab { start += 1 }
        while end > start, line[end - 1] == space || line[end - 1] == tab { end -= 1 }
        for index in start..<end {
            let byte = line[index]
            if byte < space && byte != tab || byte == 0x7F {
                return .failure(.malformedRequest("invalid character in header field value"))
            }
        }
        return .success(
            (
                UnsafeRawBufferPointer(rebasing: line[0..<colon]),
                UnsafeRawBufferPointer(rebasing: line[start..<end])
            ))
    }

    enum ContentLength: Equatable {
        case value(Int)
        case tooLarge
        case invalid
    }

    /// Parses a Content-Length value: 1*DIGIT, or a list of equal ones (RFC 9110 §8.6).
    static func parseContentLength(_ value: UnsafeRawBufferPointer, limit: Int) -> ContentLength {
        var result: ContentLength?
        var index = 0
        while true {
            while index < value.count, value[index] == space || value[index] == tab { index += 1 }
            var number = 0
            var digits = 0
            var tooLarge = false
            while index < value.count, isDigit(value[index]) {
                if !tooLarge {
                    number = number * 10 + Int(value[index] - UInt8(ascii: "0"))
                    if number > limit { tooLarge = true }
                }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return .invalid }
            let element: ContentLength = tooLarge ? .tooLarge : .value(number)
            if let result, result != element {
                // Unequal members: both over the limit still conflict unless textually equal,
                // but either way the request cannot be served.
                if result == .tooLarge && element == .tooLarge { return .tooLarge }
                return .invalid
            }
            result = element
            while index < value.count, value[index] == space || value[index] == tab { index += 1 }
            if index == value.count { return result! }
            guard value[index] == UInt8(ascii: ",") else { return .invalid }
            index += 1
        }
    }

    // MARK: - Chunked body

    private enum Line {
        /// The line (without its LF) lies in the caller's bytes at `start..<end`.
        case direct(start: Int, end: Int)
        /// The line (without its LF) is in `pending`.
        case pending
        /// The line is longer than the limit.
        case tooLong
    }

    /// Takes the next LF-terminated line, joining it with bytes kept from earlier calls;
    /// nil means every byte was kept and more are needed.
    private mutating func takeLine(_ bytes: UnsafeRawBufferPointer, _ offset: inout Int, limit: Int) -> Line? {
        let available = bytes.count - offset
        guard available > 0, let base = bytes.baseAddress else { return nil }
        guard let found = memchr(base + offset, Int32(lf), available) else {
            if pending.count + available > limit { return .tooLong }
            pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset...]))
            offset = bytes.count
            return nil
        }
        let lineFeed = base.distance(to: UnsafeRawPointer(found))
        let start = offset
        offset = lineFeed + 1
        if pending.count + (lineFeed - start) > limit { return .tooLong }
        if pending.isEmpty { return .direct(start: start, end: lineFeed) }
        pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<lineFeed]))
        return .pending
    }

    /// Parses `chunk-size [chunk-ext] CR` (the LF already removed).
    /// A size over `room` (what is left of the body limit) is a `bodyTooLarge` whose limit the
    /// caller fills in.
    static func chunkSize(_ line: UnsafeRawBufferPointer, room: Int) -> Result<Int, HTTPProtocolError> {
        guard let last = line.last, last == cr else {
            return .failure(.malformedRequest("line not terminated by CRLF"))
        }
        let content = UnsafeRawBufferPointer(rebasing: line[..<(line.count - 1)])
        var size = 0
        var index = 0
        while index < content.count, let digit = hexValue(content[index]) {
            size = size * 16 + digit
            if size > room { return .failure(.bodyTooLarge(limit: room)) }
            index += 1
        }
        guard index > 0 else { return .failure(.malformedRequest("invalid chunk size")) }
        while index < content.count, content[index] == space || content[index] == tab { index += 1 }
        if index < content.count {
            guard content[index] == UInt8(ascii: ";") else {
                return .failure(.malformedRequest("invalid chunk size"))
            }
            for byte in content[index...] where byte < space && byte != tab || byte == 0x7F {
                return .failure(.malformedRequest("invalid chunk extension"))
            }
        }
        return .success(size)
    }

    /// Checks one trailer line (the LF already removed); true for the empty line that ends them.
    static func trailerLine(_ line: UnsafeRawBufferPointer) -> Result<Bool, HTTPProtocolError> {
        guard let last = line.last, last == cr else {
            return .failure(.malformedRequest("line not terminated by CRLF"))
        }
        if line.count == 1 { return .success(true) }
        switch parseFieldLine(UnsafeRawBufferPointer(rebasing: line[..<(line.count - 1)])) {
        case .success: return .success(false)
        case .failure(let error): return .failure(error)
        }
    }
}

// MARK: - Byte helpers

let cr = UInt8(ascii: "\r")
let lf = UInt8(ascii: "\n")
let space = UInt8(ascii: " ")
let tab = UInt8(ascii: "\t")

/// Whether `byte` may appear in a token (RFC 9110 §5.6.2): methods and field names.
@inline(__always)
func isTokenByte(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "0")...UInt8(ascii: "9"):
        return true
    case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
        UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
        UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
        return true
    default:
        return false
    }
}

@inline(__always)
private func isDigit(_ byte: UInt8) -> Bool {
    byte &- UInt8(ascii: "0") < 10
}

@inline(__always)
private func hexValue(_ byte: UInt8) -> Int? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte - UInt8(ascii: "0"))
    case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte - UInt8(ascii: "a") + 10)
    case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(byte - UInt8(ascii: "A") + 10)
    default: nil
    }
}

/// Compares raw bytes with a lowercase ASCII literal, ignoring the bytes' case.
@inline(__always)
private func equalsLowercase(_ bytes: UnsafeRawBufferPointer, _ lowercase: StaticString) -> Bool {
    guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
    let literal = lowercase.utf8Start
    for index in 0..<bytes.count where asciiLowercased(bytes[index]) != literal[index] {
        return false
    }
    return true
}

/// Appends `count` bytes of `source` starting at `offset` to `array` with one copy.
@inline(__always)
private func appendBytes(_ source: UnsafeRawBufferPointer, from offset: Int, count: Int, to array: inout [UInt8]) {
    // The bytes are plain octets in libevent's buffer; viewing them as UInt8 is what they are.
    let start = source.baseAddress!.advanced(by: offset).assumingMemoryBound(to: UInt8.self)
    array.append(contentsOf: UnsafeBufferPointer(start: start, count: count))
}

extension Substring {
    /// The substring without leading and trailing spaces and tabs (HTTP's optional whitespace),
    /// by bytes: it runs on header values of every request.
    public func trimmingOWS() -> Substring {
        var result = self
        while let first = result.utf8.first, first == space || first == tab { result = result.dropFirst() }
        while let last = result.utf8.last, last == space || last == tab { result = result.dropLast() }
        return result
    }

    /// ASCII case-insensitive comparison with a string.
    func equalsIgnoringASCIICase(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        return zip(utf8, other.utf8).allSatisfy { asciiLowercased($0) == asciiLowercased($1) }
    }
}
