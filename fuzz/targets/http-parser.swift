// Fuzz target: the HTTP/1.1 request parser (HTTPServer's internal HTTPRequestParser, reached
// with @testable import). Input: the first byte sets the size of the pieces the rest arrives in
// (1 to 256 bytes, as reads from a socket), the rest is the byte stream of a connection.
// Invariants: no crash; `needMore` consumed everything it was given; a step never consumes more
// than it was given; a complete request's body is within the limit; the parser always ends.
@testable import HTTPServer

private let limits = HTTPRequestParser.Limits(maxHeaderBytes: 16_384, maxHeaderCount: 100, maxBodyBytes: 65_536)

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let piece = Int(data[0]) + 1
    let input = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    var parser = HTTPRequestParser(limits: limits)
    var buffer: [UInt8] = []
    var next = 0
    var steps = 0
    while next < input.count {
        let end = min(next + piece, input.count)
        buffer.append(contentsOf: input[next..<end])
        next = end
        while !buffer.isEmpty {
            steps += 1
            precondition(steps < 1_000_000, "parser does not make progress")
            let fed = buffer.count
            let step = buffer.withUnsafeBytes { parser.parse($0) }
            precondition(step.consumed >= 0 && step.consumed <= fed, "consumed \(step.consumed) of \(fed)")
            buffer.removeFirst(step.consumed)
            switch step.outcome {
            case .needMore:
                precondition(step.consumed == fed, "needMore left \(fed - step.consumed) bytes unconsumed")
            case .expectContinue:
                break
            case .request(let parsed):
                precondition(parsed.request.body.count <= limits.maxBodyBytes, "body over the limit")
                precondition(parsed.minorVersion == 0 || parsed.minorVersion == 1, "HTTP/1.\(parsed.minorVersion)")
                // The parser is reused for the next request on the connection, as Connection does.
            case .error:
                return 0
            }
            if step.consumed == 0, case .needMore = step.outcome { break }
        }
    }
    return 0
}
