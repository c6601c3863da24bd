internal import Glibc

/// Renders response heads into bytes. One per loop thread: it reuses its buffer and its
/// formatted `Date`, so it is not thread-safe and needs none.
struct HTTPResponseEncoder {
    /// The head being built; kept between responses so its storage is reused.
    private(set) var head: [UInt8] = []
    private var dateSecond = Int.min
    private var date: [UInt8] = []

    init() {
        head.reserveCapacity(512)
    }

    /// Whether a response with this status carries no content (RFC 9110 §6.4.1).
    static func statusForbidsBody(_ status: Int) -> Bool {
        (100..<200).contains(status) || status == 204 || status == 304
    }

    /// Builds the head for `response` into `head` and reports whether the body is sent.
    ///
    /// The handler's `Content-Length`, `Date`, `Connection` and `Transfer-Encoding` fields are
    /// dropped (the server writes its own); so is any field whose name is not a token or whose
    /// value holds CR, LF or NUL, which would otherwise split the response.
    mutating func encodeHead(
        _ response: HTTPResponse,
        close: Bool,
        http10KeepAlive: Bool,
        isHead: Bool,
        now: Int
    ) -> Bool {
        head.removeAll(keepingCapacity: true)
        // A final response cannot be 1xx; a status outside the three-digit range is a bug.
        let status = (200...999).contains(response.status) ? response.status : 500
        append("HTTP/1.1 ")
        appendDecimal(status)
        head.append(space)
        append(Self.reasonPhrase(status))
        append("\r\n")

        for field in response.headers where Self.isAllowed(field) {
            head.append(contentsOf: field.name.utf8)
            append(": ")
            head.append(contentsOf: field.value.utf8)
            append("\r\n")
        }

        // 1xx and 204 must not carry Content-Length; 304 may omit it, and does (RFC 9110 §8.6).
        let noContent = Self.statusForbidsBody(status)
        if !noContent {
            append("Content-Length: ")
            appendDecimal(response.body.count)
            append("\r\n")
        }
        append("Date: ")
        refreshDate(now)
        head.append(contentsOf: date)
        append("\r\n")
        if close {
            append("Connection: close\r\n")
        } else if http10KeepAlive {
            append("Connection: keep-alive\r\n")
        }
        append("\r\n")
        return !noContent && !isHead && !response.body.isEmpty
    }

    private static func isAllowed(_ field: HTTPHeaders.Element) -> Bool {
        let name = field.name.utf8
        switch name.count {
        case 4 where field.name.equalsIgnoringASCIICase("date"),
            10 where field.name.equalsIgnoringASCIICase("connection"),
            14 where field.name.equalsIgnoringASCIICase("content-length"),
            17 where field.name.equalsIgnoringASCIICase("transfer-encoding"):
            return false
        case 0:
            return false
        default:
            break
        }
        return allBytes(field.name, satisfy: isTokenByte) && isSafeValue(field.value)
    }

    /// Whether `value` holds no CR, LF or NUL. Long values (an answer's `Insight-Receipt`, about
    /// 1 KB) are searched with `memchr`, which reads a vector register's width a step, where the
    /// byte loop costs several instructions a byte on every response.
    private static func isSafeValue(_ value: String) -> Bool {
        let searched = value.utf8.withContiguousStorageIfAvailable { bytes -> Bool? in
            guard bytes.count >= 32, let base = bytes.baseAddress else { return nil }
            return memchr(base, Int32(cr), bytes.count) == nil && memchr(base, Int32(lf), bytes.count) == nil
                && memchr(base, 0, bytes.count) == nil
        }
        if let searched, let result = searched { return result }
        return allBytes(value) { $0 != cr && $0 != lf && $0 != 0 }
    }

    /// Whether every UTF-8 byte of `text` passes `test`: from the string's storage when it is
    /// contiguous (native strings are), through the UTF-8 view otherwise (the view costs several
    /// times more a byte, and this runs on every header of every response).
    private static func allBytes(_ text: String, satisfy test: (UInt8) -> Bool) -> Bool {
        if let result = text.utf8.withContiguousStorageIfAvailable({ bytes in
            for byte in bytes where !test(byte) { return false }
            return true
        }) {
            return result
        }
        return text.utf8.allSatisfy(test)
    }

    private mutating func append(_ literal: StaticString) {
        literal.withUTF8Buffer { head.append(contentsOf: $0) }
    }

    private mutating func appendDecimal(_ value: Int) {
        var divisor = 1
        while divisor <= value / 10 { divisor *= 10 }
        while divisor > 0 {
            head.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
            divisor /= 10
        }
    }

    /// Formats `now` (seconds since the epoch) as an IMF-fixdate, once per second.
    private mutating func refreshDate(_ now: Int) {
        guard now != dateSecond else { return }
        dateSecond = now
        date = Self.imfFixdate(now)
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT` for the given second (RFC 9110 §5.6.7).
    static func imfFixdate(_ seconds: Int) -> [UInt8] {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        var out: [UInt8] = []
        out.reserveCapacity(29)
        func twoDigits(_ value: Int32) {
            out.append(UInt8(ascii: "0") + UInt8(value / 10 % 10))
            out.append(UInt8(ascii: "0") + UInt8(value % 10))
        }
        out.append(contentsOf: days[Int(parts.tm_wday)].utf8)
        out.append(contentsOf: ", ".utf8)
        twoDigits(parts.tm_mday)
        out.append(space)
        out.append(contentsOf: months[Int(parts.tm_mon)].utf8)
        out.append(space)
        let year = parts.tm_year + 1900
        twoDigits(year / 100)
        twoDigits(year % 100)
        out.append(space)
        twoDigits(parts.tm_hour)
        out.append(UInt8(ascii: ":"))
        twoDigits(parts.tm_min)
        out.append(UInt8(ascii: ":"))
        twoDigits(parts.tm_sec)
        out.append(contentsOf: " GMT".utf8)
        return out
    }

    /// The standard reason phrase for `status` (IANA HTTP Status Code Registry).
    static func reasonPhrase(_ status: Int) -> StaticString {
        switch status {
        case 100: "Continue"
        case 101: "Switching Protocols"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 203: "Non-Authoritative Information"
        case 204: "No Content"
        case 205: "Reset Content"
        case 206: "Partial Content"
        case 300: "Multiple Choices"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 402: "Payment Required"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 406: "Not Acceptable"
        case 407: "Proxy Authentication Required"
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 410: "Gone"
        case 411: "Length Required"
        case 412: "Precondition Failed"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 416: "Range Not Satisfiable"
        case 417: "Expectation Failed"
        case 421: "Misdirected Request"
        case 422: "Unprocessable Content"
        case 423: "Locked"
        case 424: "Failed Dependency"
        case 425: "Too Early"
        case 426: "Upgrade Required"
        case 428: "Precondition Required"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 451: "Unavailable For Legal Reasons"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        case 505: "HTTP Version Not Supported"
        case 507: "Insufficient Storage"
        case 511: "Network Authentication Required"
        default:
            switch status / 100 {
            case 1: "Informational"
            case 2: "Success"
            case 3: "Redirection"
            case 4: "Client Error"
            default: "Server Error"
            }
        }
    }
}
