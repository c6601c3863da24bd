import CoachingModel
@testable import InsightAPI
import InsightDomain
import InsightServices
import InsightTesting
import JSON
import XCTest

/// `EvaluationRequest.decode(body:)` reads events and summaries straight from the bytes where it
/// can; it must give exactly what parsing the body and decoding the tree gives — the same
/// request or the same problem — for well-formed, unusual and broken bodies alike.
final class InteractionReaderTests: XCTestCase {
    private func body(_ events: String, interaction extra: String = "", root extra2: String = "") -> [UInt8] {
        Array(
            #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"interaction":{"events":\#(events)\#(extra)}\#(extra2)}"#
                .utf8)
    }

    /// The outcome of decoding, as text that can be compared.
    private func outcome(_ decode: () throws(Problem) -> EvaluationRequest) -> String {
        do {
            let request = try decode()
            let source = request.source.map { "\($0) dropped \(request.droppedEvents.map { String($0) } ?? "-")" } ?? "no source"
            switch request.interaction {
            case .events(let events, let device):
                return "events \(events.map { "\($0.t):\($0.type.rawValue):\($0.field?.rawValue ?? "-")" }) \(device) \(source)"
            case .summary(let summary, let device):
                return
                    "summary \(summary.features.map { "\($0.0.name)=\($0.1.bitPattern)" }) \(summary.unknown.map { "\($0.name)@\($0.position)" } ?? "-") \(device) \(source)"
            case .none: return "none \(source)"
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
        let bytes = body(
            #"[{"t":0,"type":"sessionStart"},{"t":1051,"type":"scroll"},{"field":"payee","t":2678,"type":"fieldFocus"}, { "t" : 2678 , "type" : "paste" , "field" : "payee" } ]"#
        )
        assertSame(bytes)
        let read = bytes.withUnsafeBufferPointer { buffer in
            EventsReader.read(
                buffer,
                from: Array(
                    #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"interaction":{"events":"#
                        .utf8
                ).count)
        }
        XCTAssertEqual(read?.events.count, 4, "the reader declined a well-formed array")
        XCTAssertEqual(read?.events.last, InteractionEvent(t: 2678, type: .paste, field: .payee))
        assertSame(body("[]"))
        assertSame(body(" [ ] "))
    }

    /// Values read from the bytes count towards the parser's limit as parsed ones do: a body
    /// breaks it at the same byte whichever path reads its events or summary.
    func testTheValueLimitIsBrokenAtTheSameByteWhicheverPathReads() {
        let events =
            "["
            + ([#"{"t":0,"type":"sessionStart"}"#] + (1..<5_000).map { #"{"t":\#($0),"type":"keyDown","field":"payee"}"# })
            .joined(separator: ",") + "]"
        let pad = { (n: Int) in "[" + Array(repeating: "0", count: n).joined(separator: ",") + "]" }
        // 7 values before `interaction`'s members; the events are 20,001.
        let cases = [
            ("", #","pad":\#(pad(30_000))"#, "more than 50000 values"),  // over in the pad
            (#""pad":\#(pad(45_000)),"#, "", "more than 50000 values"),  // over in the events
            ("", #","pad":\#(pad(29_000))"#, "'pad' is not a known field of interaction")
        ]  // within: the pad is unknown
        for (before, after, expected) in cases {
            let bytes = Array(
                #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"interaction":{\#(before)"events":\#(events)\#(after)}}"#
                    .utf8)
            assertSame(bytes)
            let answer = outcome { () throws(Problem) in try EvaluationRequest.decode(body: bytes) }
            XCTAssertTrue(answer.contains(expected), answer)
        }
        // Over in the summary (the 50,001st value is its second feature).
        let summary = Array(
            #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"interaction":{"pad":\#(pad(49_990)),"summary":{"sessionSeconds":1,"userActionCount":2}}}"#
                .utf8)
        assertSame(summary)
        let answer = outcome { () throws(Problem) in try EvaluationRequest.decode(body: summary) }
        XCTAssertTrue(answer.contains("more than 50000 values at byte \(summary.count - 4)"), answer)
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
            #"[{"t":1,"type":"tap"}"#, #"[{"t":1,"type":"tap"]"#, #"[{"t":1,"type":"tap}]"#, #"[{"t":1 "type":"tap"}]"#
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
        assertSame(
            Array(
                #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"events":[{"t":1,"type":"tap"}]}"#
                    .utf8))
    }

    /// `interaction.source` beside events, a summary or alone: read the same way by every path,
    /// and each malformed source refused by all of them with the member it names.
    func testSourceIsReadLikeTheTreeAndRefusedNamingItsMember() {
        let events = #"[{"t":0,"type":"sessionStart"},{"t":5,"type":"keyDown","field":"payee"}]"#
        let good = #""source":{"kit":"insight-capture-web","version":"1.0.0","platform":"web","droppedEvents":3}"#
        assertSame(body(events, interaction: "," + good))
        assertSame(summaryBody(#"{"sessionSeconds":1}"#, interaction: "," + good))
        let alone = Array(
            #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"interaction":{\#(good)}}"#.utf8
        )
        assertSame(alone)
        let read = try? EvaluationRequest.decode(body: alone)
        XCTAssertEqual(read?.source, InteractionSource(kit: "insight-capture-web", version: "1.0.0", platform: .web))
        XCTAssertEqual(read?.droppedEvents, 3)
        XCTAssertNotNil(EvaluationBodyReader.read(alone), "the byte reader declined a well-formed source")
        let refused: [(String, String)] = [
            (#"{"kit":"my kit","version":"1","platform":"web"}"#, "interaction.source.kit"),
            (#"{"kit":"k","version":"1.0 beta","platform":"web"}"#, "interaction.source.version"),
            (#"{"kit":"k","version":"\#(String(repeating: "9", count: 33))","platform":"web"}"#, "interaction.source.version"),
            (#"{"kit":"k","version":"1","platform":"tv"}"#, "interaction.source.platform"),
            (#"{"kit":"k","version":"1","platform":"Web"}"#, "interaction.source.platform"),
            (#"{"kit":"k","version":"1"}"#, "interaction.source.platform"),
            (#"{"version":"1","platform":"web"}"#, "interaction.source.kit"),
            (#"{"kit":"k","version":"1","platform":"web","droppedEvents":-1}"#, "interaction.source.droppedEvents"),
            (#"{"kit":"k","version":"1","platform":"web","droppedEvents":1.5}"#, "interaction.source.droppedEvents"),
            (#"{"kit":"k","version":"1","platform":"web","userAgent":"Mozilla"}"#, "interaction.source.userAgent"),
            (#"{"kit":"k x","version":"1","platform":"web"}"#, "interaction.source.kit"),
            (#""web""#, "interaction.source")
        ]
        for (source, field) in refused {
            let bytes = body(events, interaction: #","source":\#(source)"#)
            assertSame(bytes)
            let answer = outcome { () throws(Problem) in try EvaluationRequest.decode(body: bytes) }
            XCTAssertTrue(answer.hasPrefix("problem 422 contextInvalid \(field) "), "\(source): \(answer)")
        }
    }

    private func summaryBody(_ summary: String, interaction extra: String = "") -> [UInt8] {
        Array(
            #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"interaction":{"summary":\#(summary)\#(extra)}}"#
                .utf8)
    }

    func testReadsWellFormedSummariesLikeTheTree() throws {
        let text =
            #"{"sessionSeconds":73.32,"keyIntervalMeanMs":283.2834645669291,"deletionRatio":0.044444444444444446, "payeePasted" : 1 ,"backgroundShare":8.273322422258593e-2,"orientationChanges":0,"keyIntervalCV":-0.0}"#
        let bytes = summaryBody(text)
        assertSame(bytes)
        let prefix = Array(
            #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"interaction":{"summary":"#.utf8
        ).count
        let read = bytes.withUnsafeBufferPointer { SummaryReader.read($0, from: prefix) }
        XCTAssertEqual(read?.summary.features.count, 7, "the reader declined a well-formed summary")
        XCTAssertEqual(read?.summary.features.first?.0, .sessionSeconds)
        XCTAssertEqual(read?.summary.features[1].1, 283.2834645669291)
        XCTAssertEqual(read?.summary.features[2].1, 0.044444444444444446, "17 digits: the parser's slow path")
        XCTAssertEqual(read?.end, bytes.count - 2)
        assertSame(summaryBody("{}"))
        assertSame(summaryBody(" { } "))
        let all = Feature.allCases.map { #""\#($0.name)":\#($0.rawValue % 2)"# }.joined(separator: ",")
        assertSame(summaryBody("{" + all + "}"))
    }

    func testDeclinesSummariesItDoesNotReadAndLeavesTheSameAnswer() {
        let summaries = [
            // JSON the reader does not read itself
            #"{"sessionSeconds":"5"}"#, #"{"session\u0053econds":5}"#, #"{"sessionSeconds":null}"#,
            #"{"sessionSeconds":true}"#, #"{"sessionSeconds":[1]}"#, #"{"sessionSeconds":{}}"#,
            // invalid requests the tree path names
            #"{"noSuchFeature":1}"#, #"{"zzz":1,"aaa":2,"sessionSeconds":-1}"#, #"{"sessionSeconds":-1,"zzz":1}"#,
            #"{"sessionSeconds":1,"sessionSeconds":2}"#, #"{"sessionSeconds":1e400}"#, #"{"sessionSeconds":01}"#,
            #"{"sessionSeconds":.5}"#, #"{"sessionSeconds":5.}"#, #"{"sessionSeconds":-}"#, #"{"keystrokeCount":2.5}"#,
            #"{"activeCall":0.5}"#, #"{"SessionSeconds":1}"#, #"{"sessionSeconds ":1}"#, #"[]"#, #"1"#, #"null"#,
            // broken JSON
            #"{"sessionSeconds":1"#, #"{"sessionSeconds":1,}"#, #"{"sessionSeconds" 1}"#, #"{sessionSeconds:1}"#,
            #"{"sessionSeconds":1 "keystrokeCount":2}"#
        ]
        for text in summaries { assertSame(summaryBody(text)) }
        // a summary beside events, a repeated summary member, device facts, too many members
        assertSame(summaryBody(#"{"sessionSeconds":1}"#, interaction: #","events":[]"#))
        assertSame(summaryBody(#"{"sessionSeconds":1}"#, interaction: #","summary":{}"#))
        assertSame(summaryBody(#"{"sessionSeconds":1}"#, interaction: #","device":{"activeCall":true}"#))
        let many = (0...EvaluationRequest.maxSummaryFeatures).map { #""f\#($0)":1"# }.joined(separator: ",")
        assertSame(summaryBody("{" + many + "}"))
        // "summary" elsewhere in the document is not intercepted
        assertSame(
            Array(
                #"{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"summary":{"sessionSeconds":1}}"#
                    .utf8))
    }

    /// Random mutations of well-formed bodies: whatever the readers make of them, the answer
    /// is the tree's.
    func testMutatedBodiesAnswerTheSame() {
        var generator = SystemRandomNumberGenerator()
        let bases = [
            body(
                #"[{"t":0,"type":"sessionStart"},{"t":10,"type":"fieldFocus","field":"amount"},{"t":25,"type":"keyDown","field":"amount"}]"#
            ),
            summaryBody(#"{"sessionSeconds":73.32,"keyIntervalCV":0.6672111637794805,"payeePasted":1,"appSwitchCount":2}"#)
        ]
        let alphabet = Array(#"{}[]":,.-+eE0123456789 \tatypsSC"#.utf8)
        for _ in 0..<6_000 {
            assertSame(RandomEdits.applied(to: bases.randomElement(using: &generator)!, alphabet: alphabet, using: &generator))
        }
    }
}
