import CoachingModel
@testable import InsightAPI
import JSON
import XCTest

/// `EvaluationRequest.decode(body:)` reads events straight from the bytes where it can; it must
/// give exactly what parsing the body and decoding the tree gives — the same request or the
/// same problem — for well-formed, unusual and broken bodies alike.
final class EventsReaderTests: XCTestCase {
    private func body(_ events: String, interaction extra: String = "", root extra2: String = "") -> [UInt8] {
        Array(#"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"interaction":{"events":\#(events)\#(extra)}\#(extra2)}"#.utf8)
    }

    /// The outcome of decoding, as text that can be compared.
    private func outcome(_ decode: () throws(Problem) -> EvaluationRequest) -> String {
        do {
            let request = try decode()
            switch request.interaction {
            case .events(let events, let device):
                return "events \(events.map { "\($0.t):\($0.type.rawValue):\($0.field?.rawValue ?? "-")" }) \(device)"
            case .summary(let summary, let device): return "summary \(summary.map { "\($0.key)=\($0.value)" }) \(device)"
            case .none: return "none"
            }
        } catch {
            return "problem \(error.status) \(error.code) \(error.field ?? "-") \(error.detail)"
        }
    }

    private func assertSame(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        let fast = outcome { () throws(Problem) in try EvaluationRequest.decode(body: bytes) }
        let slow = outcome { () throws(Problem) in try EvaluationRequest.decode(try Problem.parseBody(bytes)) }
        XCTAssertEqual(fast, slow, String(decoding: bytes, as: UTF8.self), file: file, line: line)
    }

    func testReadsWellFormedEventsLikeTheTree() throws {
        let bytes = body(#"[{"t":0,"type":"sessionStart"},{"t":1051,"type":"scroll"},{"field":"payee","t":2678,"type":"fieldFocus"}, { "t" : 2678 , "type" : "paste" , "field" : "payee" } ]"#)
        assertSame(bytes)
        let read = bytes.withUnsafeBufferPointer { buffer in
            EventsReader.read(buffer, from: Array(#"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"interaction":{"events":"#.utf8).count)
        }
        XCTAssertEqual(read?.events.count, 4, "the reader declined a well-formed array")
        XCTAssertEqual(read?.events.last, InteractionEvent(t: 2678, type: .paste, field: .payee))
        assertSame(body("[]"))
        assertSame(body(" [ ] "))
    }

    func testDeclinesAndLeavesTheSameAnswerForEverythingElse() {
        let events = [
            // JSON the reader does not read itself
            #"[{"t":1.0,"type":"tap"}]"#, #"[{"t":1e3,"type":"tap"}]"#, #"[{"t":"5","type":"tap"}]"#,
            #"[{"t":1,"type":"t\u0061p"}]"#, #"[{"\u0074":1,"type":"tap"}]"#, #"[{"t":1,"type":"tap","field":null}]"#,
            // invalid requests the tree path names
            #"[{"t":-1,"type":"tap"}]"#, #"[{"t":99999999999999999,"type":"tap"}]"#, #"[{"t":3600001,"type":"tap"}]"#,
            #"[{"t":1,"type":"wave"}]"#, #"[{"t":1,"type":"tap","field":"pin"}]"#, #"[{"t":1}]"#, #"[{"type":"tap"}]"#,
            #"[{}]"#, #"[{"t":1,"type":"tap","x":1}]"#, #"[{"t":5,"type":"tap"},{"t":4,"type":"tap"}]"#, #"[1]"#, #"[[]]"#,
            #"[{"t":1,"type":"tap","t":2}]"#, #"[{"t":1,"type":"tap"},]"#, #"[{"t":01,"type":"tap"}]"#,
            #"[{"t":1,"type":"TAP"}]"#, #"{"t":1}"#, #""events""#, #"null"#,
            // broken JSON
            #"[{"t":1,"type":"tap"}"#, #"[{"t":1,"type":"tap"]"#, #"[{"t":1,"type":"tap}]"#, #"[{"t":1 "type":"tap"}]"#,
        ]
        for text in events { assertSame(body(text)) }
        // events beside a summary, a duplicate events member, trailing garbage, over the limit
        assertSame(body(#"[{"t":0,"type":"sessionStart"}]"#, interaction: #","summary":{"keystrokeCount":1}"#))
        assertSame(body(#"[{"t":0,"type":"sessionStart"}]"#, interaction: #","events":[]"#))
        assertSame(body(#"[{"t":0,"type":"sessionStart"}]"#, interaction: #","device":{"activeCall":true}"#))
        assertSame(body(#"[{"t":0,"type":"sessionStart"}]"#, root: #","requestId":"jane.doe@example.com""#))
        assertSame(body(#"[{"t":0,"type":"sessionStart"}]"#) + Array("x".utf8))
        let many = (0...FeatureExtractor.maxEvents).map { #"{"t":\#($0),"type":"tap"}"# }
        assertSame(body("[" + many.joined(separator: ",") + "]"))
        assertSame(body("[" + many.dropLast().joined(separator: ",") + "]"))
        // "events" elsewhere in the document is not intercepted
        assertSame(Array(#"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"events":[{"t":1,"type":"tap"}]}"#.utf8))
    }

    /// Random mutations of a well-formed body: whatever the reader makes of them, the answer
    /// is the tree's.
    func testMutatedBodiesAnswerTheSame() {
        var generator = SystemRandomNumberGenerator()
        let base = body(#"[{"t":0,"type":"sessionStart"},{"t":10,"type":"fieldFocus","field":"amount"},{"t":25,"type":"keyDown","field":"amount"}]"#)
        let alphabet = Array(#"{}[]":,.-+eE0123456789 \tatyp"#.utf8)
        for _ in 0..<3_000 {
            var bytes = base
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let i = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes[i] = alphabet.randomElement(using: &generator)!
                case 1: bytes.remove(at: i)
                default: bytes.insert(alphabet.randomElement(using: &generator)!, at: i)
                }
            }
            assertSame(bytes)
        }
    }
}
