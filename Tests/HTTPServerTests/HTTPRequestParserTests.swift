import XCTest

@testable import HTTPServer

/// Feeds `input` to a parser the way a connection does: in arrival pieces of `piece` bytes,
/// re-feeding unconsumed bytes after each complete request.
private struct ParseRun {
    var requests: [HTTPRequestParser.ParsedRequest] = []
    var error: HTTPProtocolError?
    var continues = 0
    var leftover = 0
}

private func feed(_ input: [UInt8], piece: Int, limits: HTTPRequestParser.Limits = testLimits) -> ParseRun {
    var parser = HTTPRequestParser(limits: limits)
    var result = ParseRun()
    var buffer: [UInt8] = []
    var next = 0
    while next < input.count {
        let end = min(next + piece, input.count)
        buffer.append(contentsOf: input[next..<end])
        next = end
        while !buffer.isEmpty {
            let step = buffer.withUnsafeBytes { parser.parse($0) }
            let fed = buffer.count
            buffer.removeFirst(step.consumed)
            switch step.outcome {
            case .needMore:
                precondition(step.consumed == fed, "needMore must consume everything")
            case .expectContinue:
                result.continues += 1
            case .request(let parsed):
                result.requests.append(parsed)
            case .error(let error):
                result.error = error
                return result
            }
        }
    }
    result.leftover = buffer.count
    return result
}

private let testLimits = HTTPRequestParser.Limits(maxHeaderBytes: 1024, maxHeaderCount: 10, maxBodyBytes: 64)

private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// Every case is run whole, byte by byte, and in 7-byte pieces: the outcome must not depend on
/// how the bytes arrive.
private let pieceSizes = [Int.max, 1, 7]

final class HTTPRequestParserTests: XCTestCase {
    struct Valid {
        let name: String
        let input: String
        let method: String
        let path: String
        var query: String? = nil
        var body: String = ""
        var keepAlive = true
        var continues = 0
    }

    let validCases: [Valid] = [
        Valid(name: "simple GET", input: "GET / HTTP/1.1\r\nHost: a\r\n\r\n", method: "GET", path: "/"),
        Valid(
            name: "query", input: "GET /a/b%20c?x=1&y=2 HTTP/1.1\r\nHost: a\r\n\r\n",
            method: "GET", path: "/a/b%20c", query: "x=1&y=2"),
        Valid(name: "empty query", input: "GET /a? HTTP/1.1\r\nHost: a\r\n\r\n", method: "GET", path: "/a", query: ""),
        Valid(
            name: "POST with Content-Length",
            input: "POST /e HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
            method: "POST", path: "/e", body: "hello"),
        Valid(
            name: "Content-Length 0", input: "POST /e HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
            method: "POST", path: "/e"),
        Valid(
            name: "equal repeated Content-Length",
            input: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\ncontent-length: 3, 3\r\n\r\nabc",
            method: "POST", path: "/", body: "abc"),
        Valid(
            name: "chunked with extensions and trailers",
            input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "5;name=value\r\nhello\r\n6 ; x=\"y z\"\r\n world\r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\nY: u\r\n\r\n",
            method: "POST", path: "/", body: "hello world0123456789"),
        Valid(
            name: "chunked, case-insensitive coding",
            input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:  Chunked \r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            method: "POST", path: "/", body: "abc"),
        Valid(
            name: "HTTP/1.0 closes by default", input: "GET / HTTP/1.0\r\n\r\n", method: "GET", path: "/",
            keepAlive: false),
        Valid(
            name: "HTTP/1.0 keep-alive", input: "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n",
            method: "GET", path: "/"),
        Valid(
            name: "HTTP/1.1 Connection: close",
            input: "GET / HTTP/1.1\r\nHost: a\r\nConnection: foo, close\r\n\r\n", method: "GET", path: "/",
            keepAlive: false),
        Valid(
            name: "absolute-form target", input: "GET http://example.com:80/p/q?r=s HTTP/1.1\r\nHost: x\r\n\r\n",
            method: "GET", path: "/p/q", query: "r=s"),
        Valid(
            name: "absolute-form without path", input: "GET HTTPS://example.com HTTP/1.1\r\nHost: x\r\n\r\n",
            method: "GET", path: "/"),
        Valid(name: "asterisk-form", input: "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", method: "OPTIONS", path: "*"),
        Valid(
            name: "empty lines before the request line", input: "\r\n\r\nGET /x HTTP/1.1\r\nHost: a\r\n\r\n",
            method: "GET", path: "/x"),
        Valid(
            name: "expect 100-continue",
            input: "PUT /u HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok",
            method: "PUT", path: "/u", body: "ok", continues: 1),
        Valid(
            name: "expect without body is not announced",
            input: "GET / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n", method: "GET", path: "/"),
        Valid(
            name: "expect ignored for HTTP/1.0",
            input: "POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx",
            method: "POST", path: "/", body: "x", keepAlive: false),
        Valid(
            name: "obs-text in a value", input: "GET / HTTP/1.1\r\nHost: a\r\nX: caf\u{E9}\r\n\r\n",
            method: "GET", path: "/"),
        Valid(
            name: "body at the limit",
            input: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 64\r\n\r\n" + String(repeating: "b", count: 64),
            method: "POST", path: "/", body: String(repeating: "b", count: 64))
    ]

    func testValidRequests() {
        for valid in validCases {
            for piece in pieceSizes {
                let result = feed(bytes(valid.input), piece: piece)
                let label = "\(valid.name) (pieces of \(piece))"
                XCTAssertNil(result.error, label)
                XCTAssertEqual(result.requests.count, 1, label)
                XCTAssertEqual(result.leftover, 0, label)
                XCTAssertEqual(result.continues, valid.continues, label)
                guard let parsed = result.requests.first else { continue }
                XCTAssertEqual(parsed.request.method, valid.method, label)
                XCTAssertEqual(parsed.request.path, valid.path, label)
                XCTAssertEqual(parsed.request.query, valid.query, label)
                XCTAssertEqual(parsed.request.body, bytes(valid.body), label)
                XCTAssertEqual(parsed.keepAlive, valid.keepAlive, label)
            }
        }
    }

    func testHeadersKeepOrderAndSpellingAndTrimWhitespace() {
        let input = "GET / HTTP/1.1\r\nHost: a\r\nX-One:  1 \t\r\nx-two:2\r\nX-One: again\r\nEmpty:\r\n\r\n"
        let parsed = feed(bytes(input), piece: .max).requests[0].request
        XCTAssertEqual(parsed.headers.map(\.name), ["Host", "X-One", "x-two", "X-One", "Empty"])
        XCTAssertEqual(parsed.headers["x-one"], "1")
        XCTAssertEqual(parsed.headers["X-TWO"], "2")
        XCTAssertEqual(parsed.headers.values("X-One"), ["1", "again"])
        XCTAssertEqual(parsed.headers["empty"], "")
        XCTAssertNil(parsed.headers["missing"])
    }

    func testNamesCompareWithoutASCIICaseOnly() {
        let same = [
            ("Content-Type", "content-type"), ("AUTHORIZATION", "authorization"), ("a", "A"), ("", ""),
            ("X-Über", "x-Über"), ("0-9_~", "0-9_~")
        ]
        for (a, b) in same { XCTAssertTrue(a.equalsIgnoringASCIICase(b), "\(a) \(b)") }
        let different = [
            ("Content-Type", "Content-Typ"), ("a", "b"), ("X-Über", "x-über"), ("@", "`"), ("[", "{"),
            ("Content-Type", "Content_Type"), ("ab", "a")
        ]
        for (a, b) in different { XCTAssertFalse(a.equalsIgnoringASCIICase(b), "\(a) \(b)") }
    }

    struct Invalid {
        let name: String
        let input: String
        let error: HTTPProtocolError
    }

    static func malformed(_ name: String, _ input: String) -> Invalid {
        Invalid(name: name, input: input, error: .malformedRequest(""))
    }

    let invalidCases: [Invalid] = [
        malformed("bare LF", "GET / HTTP/1.1\nHost: a\n\n"),
        malformed("bare LF in a field", "GET / HTTP/1.1\r\nHost: a\nX: y\r\n\r\n"),
        malformed("bare CR in a value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n"),
        malformed("NUL in a value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\u{0}b\r\n\r\n"),
        malformed("double space", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n"),
        malformed("missing version", "GET /\r\nHost: a\r\n\r\n"),
        malformed("trailing space", "GET / HTTP/1.1 \r\nHost: a\r\n\r\n"),
        malformed("bad method token", "G(T / HTTP/1.1\r\nHost: a\r\n\r\n"),
        malformed("bad version syntax", "GET / HTTX/1.1\r\nHost: a\r\n\r\n"),
        malformed("bad version digits", "GET / HTTP/1.x\r\nHost: a\r\n\r\n"),
        malformed("control character in target", "GET /a\u{7}b HTTP/1.1\r\nHost: a\r\n\r\n"),
        malformed("relative target", "GET a/b HTTP/1.1\r\nHost: a\r\n\r\n"),
        malformed("asterisk with GET", "GET * HTTP/1.1\r\nHost: a\r\n\r\n"),
        malformed("obs-fold", "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n  folded\r\n\r\n"),
        malformed("space in field name", "GET / HTTP/1.1\r\nHost: a\r\nBad Name: x\r\n\r\n"),
        malformed("space before colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n"),
        malformed("quote in field name", "GET / HTTP/1.1\r\nHost: a\r\nNa\"me: x\r\n\r\n"),
        malformed("empty field name", "GET / HTTP/1.1\r\nHost: a\r\n: x\r\n\r\n"),
        malformed("field without colon", "GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n"),
        malformed("missing Host", "GET / HTTP/1.1\r\n\r\n"),
        malformed("two Host fields", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
        malformed("non-numeric Content-Length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: abc\r\n\r\n"),
        malformed("negative Content-Length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n"),
        malformed("signed Content-Length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n"),
        malformed("empty Content-Length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \r\n\r\n"),
        malformed(
            "conflicting Content-Length fields",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!"),
        malformed("conflicting Content-Length list", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 6\r\n\r\n"),
        malformed(
            "Content-Length with Transfer-Encoding",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"),
        malformed("Transfer-Encoding in HTTP/1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"),
        malformed("chunked twice", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n"),
        malformed("empty Transfer-Encoding", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: ,\r\n\r\n"),
        malformed(
            "bad chunk size",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n"),
        malformed(
            "chunk size with junk",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5 x\r\nhello\r\n0\r\n\r\n"),
        malformed(
            "chunk data too long",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n0\r\n\r\n"),
        malformed(
            "bare LF after chunk size",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n"),
        malformed(
            "bare LF after chunk data",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\n0\r\n\r\n"),
        malformed(
            "control character in chunk extension",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3;a\u{1}\r\nabc\r\n0\r\n\r\n"),
        malformed(
            "bad trailer",
            "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nBad Trailer: x\r\n\r\n"),
        Invalid(name: "HTTP/2.0", input: "GET / HTTP/2.0\r\nHost: a\r\n\r\n", error: .unsupportedVersion),
        Invalid(name: "HTTP/0.9", input: "GET / HTTP/0.9\r\n\r\n", error: .unsupportedVersion),
        Invalid(name: "HTTP/1.2", input: "GET / HTTP/1.2\r\nHost: a\r\n\r\n", error: .unsupportedVersion),
        Invalid(
            name: "gzip", input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n",
            error: .unsupportedTransferEncoding),
        Invalid(
            name: "gzip then chunked",
            input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n",
            error: .unsupportedTransferEncoding),
        Invalid(
            name: "Content-Length over the limit",
            input: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 65\r\n\r\n", error: .bodyTooLarge(limit: 64)),
        Invalid(
            name: "Content-Length that overflows",
            input: "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 999999999999999999999999999\r\n\r\n",
            error: .bodyTooLarge(limit: 64)),
        Invalid(
            name: "one chunk over the limit",
            input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFFFFFFFF\r\n",
            error: .bodyTooLarge(limit: 64)),
        Invalid(
            name: "chunks adding up over the limit",
            input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n20\r\n"
                + String(repeating: "x", count: 32) + "\r\n21\r\n",
            error: .bodyTooLarge(limit: 64)),
        Invalid(
            name: "header section over the limit",
            input: "GET / HTTP/1.1\r\nHost: a\r\nX: " + String(repeating: "v", count: 1100) + "\r\n\r\n",
            error: .headersTooLarge),
        Invalid(
            name: "request line over the limit",
            input: "GET /" + String(repeating: "p", count: 1100) + " HTTP/1.1\r\nHost: a\r\n\r\n",
            error: .headersTooLarge),
        Invalid(
            name: "too many fields",
            input: "GET / HTTP/1.1\r\nHost: a\r\n" + (1...10).map { "X-\($0): v\r\n" }.joined() + "\r\n",
            error: .headersTooLarge),
        Invalid(
            name: "trailers over the limit",
            input: "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: "
                + String(repeating: "t", count: 1100) + "\r\n\r\n",
            error: .headersTooLarge)
    ]

    func testInvalidRequests() {
        for invalid in invalidCases {
            for piece in pieceSizes {
                let result = feed(bytes(invalid.input), piece: piece)
                let label = "\(invalid.name) (pieces of \(piece))"
                XCTAssertTrue(result.requests.isEmpty, label)
                guard let error = result.error else {
                    XCTFail("no error: \(label)")
                    continue
                }
                if case .malformedRequest = invalid.error {
                    guard case .malformedRequest(let reason) = error else {
                        XCTFail("\(error) instead of a malformed request: \(label)")
                        continue
                    }
                    XCTAssertFalse(reason.isEmpty, label)
                } else {
                    XCTAssertEqual(error, invalid.error, label)
                }
                XCTAssertEqual(error.status, invalid.error.status, label)
            }
        }
    }

    func testHeaderSectionExactlyAtTheLimitIsAccepted() {
        let prefix = "GET / HTTP/1.1\r\nHost: a\r\nX: "
        let filler = String(repeating: "v", count: 1024 - prefix.utf8.count - 4)
        let input = prefix + filler + "\r\n\r\n"
        XCTAssertEqual(input.utf8.count, 1024)
        for piece in pieceSizes {
            XCTAssertEqual(feed(bytes(input), piece: piece).requests.count, 1)
        }
        for piece in pieceSizes {
            XCTAssertEqual(feed(bytes(prefix + filler + "v\r\n\r\n"), piece: piece).error, .headersTooLarge)
        }
    }

    func testPipelinedRequestsComeOutInOrderAndLeaveTheRestUnconsumed() {
        let input =
            "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n"
            + "POST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc"
            + "POST /3 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nz\r\n0\r\n\r\n"
            + "GET /4 HTTP/1.1\r\nHost: a\r\n\r\n"
        for piece in pieceSizes {
            let result = feed(bytes(input), piece: piece)
            XCTAssertNil(result.error)
            XCTAssertEqual(result.requests.map(\.request.path), ["/1", "/2", "/3", "/4"])
            XCTAssertEqual(result.requests.map(\.request.body), [[], bytes("abc"), bytes("z"), []])
        }

        var parser = HTTPRequestParser(limits: testLimits)
        let whole = bytes(input)
        let step = whole.withUnsafeBytes { parser.parse($0) }
        guard case .request(let first) = step.outcome else { return XCTFail("no request") }
        XCTAssertEqual(first.request.path, "/1")
        XCTAssertEqual(step.consumed, "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n".utf8.count)
    }

    func testHasStartedTracksTheFirstByteOfARequest() {
        var parser = HTTPRequestParser(limits: testLimits)
        XCTAssertFalse(parser.hasStarted)
        _ = bytes("\r\n").withUnsafeBytes { parser.parse($0) }
        XCTAssertFalse(parser.hasStarted, "empty lines between requests do not start one")
        _ = bytes("\r").withUnsafeBytes { parser.parse($0) }
        XCTAssertFalse(parser.hasStarted)
        _ = bytes("\nG").withUnsafeBytes { parser.parse($0) }
        XCTAssertTrue(parser.hasStarted)
        let step = bytes("ET / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n").withUnsafeBytes { parser.parse($0) }
        guard case .needMore = step.outcome else { return XCTFail("body expected") }
        XCTAssertTrue(parser.hasStarted)
        let done = bytes("hi").withUnsafeBytes { parser.parse($0) }
        guard case .request(let parsed) = done.outcome else { return XCTFail("no request") }
        XCTAssertEqual(parsed.request.body, bytes("hi"))
        XCTAssertFalse(parser.hasStarted)
    }

    func testErrorIsSticky() {
        var parser = HTTPRequestParser(limits: testLimits)
        let first = bytes("BAD\r\n\r\n").withUnsafeBytes { parser.parse($0) }
        guard case .error = first.outcome else { return XCTFail("expected an error") }
        let again = bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\n").withUnsafeBytes { parser.parse($0) }
        guard case .error = again.outcome else { return XCTFail("expected the error again") }
        XCTAssertEqual(again.consumed, 0)
    }

    func testContentLengthParsing() {
        func parse(_ text: String) -> HTTPRequestParser.ContentLength {
            bytes(text).withUnsafeBytes { HTTPRequestParser.parseContentLength($0, limit: 100) }
        }
        XCTAssertEqual(parse("0"), .value(0))
        XCTAssertEqual(parse("100"), .value(100))
        XCTAssertEqual(parse("007"), .value(7))
        XCTAssertEqual(parse("7 , 7"), .value(7))
        XCTAssertEqual(parse("101"), .tooLarge)
        XCTAssertEqual(parse("1e3"), .invalid)
        XCTAssertEqual(parse("7,"), .invalid)
        XCTAssertEqual(parse(",7"), .invalid)
        XCTAssertEqual(parse("0x10"), .invalid)
    }
}

final class HTTPHeadersTests: XCTestCase {
    func testLookupIsCaseInsensitiveAndOrderIsKept() {
        var headers = HTTPHeaders([("Content-Type", "text/plain"), ("X-A", "1")])
        headers.add("x-a", "2")
        XCTAssertEqual(headers["content-type"], "text/plain")
        XCTAssertEqual(headers["X-A"], "1")
        XCTAssertEqual(headers.values("x-A"), ["1", "2"])
        XCTAssertEqual(headers.map(\.name), ["Content-Type", "X-A", "x-a"])
        headers.set("X-a", "3")
        XCTAssertEqual(headers.values("x-a"), ["3"])
        headers.remove("CONTENT-TYPE")
        XCTAssertFalse(headers.contains("content-type"))
        XCTAssertEqual(headers.count, 1)
        let literal: HTTPHeaders = ["A": "1", "B": "2"]
        XCTAssertEqual(literal.map(\.value), ["1", "2"])
        XCTAssertNil(HTTPHeaders()["a"])
        XCTAssertNil(literal["AA"])
    }
}

final class HTTPResponseEncoderTests: XCTestCase {
    private func encode(
        _ response: HTTPResponse, close: Bool = false, http10: Bool = false,
        head: Bool = false
    ) -> (String, Bool) {
        var encoder = HTTPResponseEncoder()
        let sendBody = encoder.encodeHead(
            response, close: close, http10KeepAlive: http10, isHead: head,
            now: 784_111_777)
        return (String(decoding: encoder.head, as: UTF8.self), sendBody)
    }

    func testHeadHasStatusLineLengthDateAndConnection() {
        var headers = HTTPHeaders([("Content-Type", "application/problem+json")])
        headers.add("Content-Length", "999")
        headers.add("Connection", "keep-alive")
        headers.add("X-Evil", "a\r\nInjected: yes")
        let (head, sendBody) = encode(
            HTTPResponse(status: 413, headers: headers, body: Array("{}".utf8)),
            close: true)
        XCTAssertEqual(
            head,
            "HTTP/1.1 413 Content Too Large\r\nContent-Type: application/problem+json\r\n"
                + "Content-Length: 2\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nConnection: close\r\n\r\n")
        XCTAssertTrue(sendBody)
    }

    /// Long values are searched another way than short ones (`memchr`): a CR, LF or NUL
    /// anywhere in one drops the field all the same, and a clean one goes out whole.
    func testLongFieldValuesWithCRLFOrNULAreDropped() {
        let clean = String(repeating: "a", count: 1_000)
        for length in [31, 32, 33, 1_000] {
            for position in [0, length / 2, length - 1] {
                for bad in ["\r", "\n", "\u{0}"] {
                    var value = Array(String(repeating: "b", count: length))
                    value[position] = Character(bad)
                    let headers = HTTPHeaders([("X-Long", String(value)), ("X-Clean", clean)])
                    let (head, _) = encode(HTTPResponse(status: 200, headers: headers))
                    XCTAssertFalse(head.contains("X-Long"), "length \(length), \(bad.debugDescription) at \(position)")
                    XCTAssertTrue(head.contains("X-Clean: \(clean)\r\n"))
                }
            }
        }
    }

    func testNoBodyForHeadAnd204() {
        let (head, sendBody) = encode(HTTPResponse(status: 200, body: [1, 2, 3]), http10: true, head: true)
        XCTAssertTrue(head.contains("Content-Length: 3\r\n"))
        XCTAssertTrue(head.contains("Connection: keep-alive\r\n"))
        XCTAssertFalse(sendBody)
        let (noContent, sendNoContent) = encode(HTTPResponse(status: 204, body: [1]))
        XCTAssertTrue(noContent.hasPrefix("HTTP/1.1 204 No Content\r\n"))
        XCTAssertFalse(noContent.contains("Content-Length"))
        XCTAssertFalse(sendNoContent)
        let (zero, _) = encode(HTTPResponse(status: 200))
        XCTAssertTrue(zero.contains("Content-Length: 0\r\n"))
    }

    func testReasonPhrasesAndOddStatuses() {
        XCTAssertTrue(encode(HTTPResponse(status: 431)).0.hasPrefix("HTTP/1.1 431 Request Header Fields Too Large\r\n"))
        XCTAssertTrue(encode(HTTPResponse(status: 599)).0.hasPrefix("HTTP/1.1 599 Server Error\r\n"))
        XCTAssertTrue(encode(HTTPResponse(status: 42)).0.hasPrefix("HTTP/1.1 500 Internal Server Error\r\n"))
        XCTAssertTrue(
            encode(HTTPResponse(status: 1_234_567, body: Array(repeating: 0, count: 1_234_567))).0
                .contains("Content-Length: 1234567\r\n"))
    }

    func testIMFFixdate() {
        XCTAssertEqual(
            String(decoding: HTTPResponseEncoder.imfFixdate(0), as: UTF8.self), "Thu, 01 Jan 1970 00:00:00 GMT")
        XCTAssertEqual(
            String(decoding: HTTPResponseEncoder.imfFixdate(1_709_251_199), as: UTF8.self),
            "Thu, 29 Feb 2024 23:59:59 GMT")
    }
}

final class HTTPResponderTests: XCTestCase {
    func testCallbackResponderDeliversOnlyTheFirstResponse() {
        final class Box: @unchecked Sendable {
            // @unchecked: written and read on the test's own thread only.
            var statuses: [Int] = []
        }
        let box = Box()
        let responder = HTTPResponder { box.statuses.append($0.status) }
        responder.send(HTTPResponse(status: 201))
        responder.send(HTTPResponse(status: 500))
        XCTAssertEqual(box.statuses, [201])
    }

    func testProtocolErrorStatuses() {
        XCTAssertEqual(HTTPProtocolError.malformedRequest("x").status, 400)
        XCTAssertEqual(HTTPProtocolError.headersTooLarge.status, 431)
        XCTAssertEqual(HTTPProtocolError.bodyTooLarge(limit: 1).status, 413)
        XCTAssertEqual(HTTPProtocolError.unsupportedTransferEncoding.status, 501)
        XCTAssertEqual(HTTPProtocolError.unsupportedVersion.status, 505)
        XCTAssertEqual(HTTPProtocolError.requestTimeout.status, 408)
    }
}
