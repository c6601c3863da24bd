import CoachingModel
@testable import InsightAPI
import InsightServices
import InsightTesting
import XCTest

/// `EvaluationBodyReader` reads whole evaluation bodies from their bytes. Whatever it accepts must
/// be exactly what the parser and the tree path make of the same body; whatever the tree path
/// refuses it must decline (so the problem named is the tree path's); and it must accept the
/// plain bodies clients send, or it saves nothing.
final class EvaluationBodyReaderTests: XCTestCase {
    static let summary = #"{"sessionSeconds":73.32,"keyIntervalCV":0.6672111637794805,"payeePasted":1,"appSwitchCount":2}"#
    static let events =
        #"[{"t":0,"type":"sessionStart"},{"t":10,"type":"fieldFocus","field":"amount"},{"t":25,"type":"keyDown","field":"amount"}]"#

    /// A full body, every member present, in the order clients usually send them.
    static func body(
        requestId: String = #""tx-1""#, category: String = #""payment""#,
        insights: String = #"[{"type":"isLikelyBeingCoached","schemaVersion":1}]"#,
        subject: String = #"{"account":"acct-1","device":"dev-1","counterparty":"payee-1"}"#,
        interaction: String = #"{"summary":\#(summary),"device":{"activeCall":true,"screenSharing":false}}"#,
        transaction: String = #"{"newCounterparty":true,"amountBand":"medium"}"#
    ) -> String {
        #"{"requestId":\#(requestId),"operationCategory":\#(category),"insights":\#(insights),"subject":\#(subject),"interaction":\#(interaction),"transaction":\#(transaction)}"#
    }

    enum Expectation { case read, declined, either }

    /// Holds the reader to the tree path for `text`; `expect` says whether it must read it.
    private func check(_ text: String, _ expect: Expectation = .either, file: StaticString = #filePath, line: UInt = #line) {
        let bytes = Array(text.utf8)
        let fast = EvaluationBodyReader.read(bytes)
        let tree: Result<EvaluationRequest, Problem>
        do { tree = .success(try EvaluationRequest.decodeParsing(bytes)) } catch { tree = .failure(error) }
        if let fast {
            switch tree {
            case .success(let request):
                XCTAssertEqual(String(describing: fast), String(describing: request), text, file: file, line: line)
            case .failure(let problem):
                XCTFail("read what the tree path refuses (\(problem.detail)): \(text)", file: file, line: line)
            }
        }
        switch expect {
        case .read: XCTAssertNotNil(fast, "declined: \(text)", file: file, line: line)
        case .declined: XCTAssertNil(fast, "read: \(text)", file: file, line: line)
        case .either: break
        }
    }

    func testReadsPlainBodiesExactlyAsTheTreePathDoes() {
        check(Self.body(), .read)
        check(Self.body(interaction: #"{"events":\#(Self.events),"device":{"remoteAccessApp":false}}"#), .read)
        check(Self.body(interaction: #"{"device":{}}"#), .read)
        check(Self.body(interaction: "{}"), .read)
        check(Self.body(interaction: #"{"events":[]}"#), .read)
        check(Self.body(subject: "{}", transaction: "{}"), .read)
        check(
            Self.body(
                insights:
                    #"[{"type":"isLikelyBeingCoached","schemaVersion":0,"modelVersion":"2.0"},{"type":"unknownKind","schemaVersion":1000000}]"#
            ), .read)
        check(Self.body(requestId: "\"" + String(repeating: "r", count: 128) + "\""), .read)
        check(Self.body(subject: #"{"account":" !#$%&'()*+,-./09:;<=>?@AZ[]^_`az{|}~"}"#), .read)
        for category in ["payment", "account", "resourceUse", "communication", "other"] {
            check(Self.body(category: "\"\(category)\""), .read)
        }
        // Members in another order, optional ones left out, whitespace everywhere JSON allows it.
        check(#"{"insights":[{"schemaVersion":1,"type":"x"}],"operationCategory":"other"}"#, .read)
        check(
            " \n\t{ \"operationCategory\" : \"payment\" ,\r\n \"insights\" : [ { \"type\" : \"x\" , \"schemaVersion\" : 1 } ] , \"transaction\" : { \"amountBand\" : \"low\" } } \n",
            .read)
    }

    /// `null` for an optional member means absent, on both paths; events of types this version
    /// does not know are skipped and counted, on both paths.
    func testNullIsAbsentAndUnknownEventTypesAreSkipped() throws {
        check(Self.body(requestId: "null"), .read)
        check(Self.body(subject: "null"), .read)
        check(Self.body(subject: #"{"account":"a","device":null}"#), .read)
        check(Self.body(interaction: #"{"device":{"activeCall":null},"summary":null,"source":null}"#), .read)
        check(Self.body(interaction: #"{"events":[{"t":0,"type":"sessionStart","field":null}]}"#), .read)
        check(Self.body(interaction: #"{"summary":{"sessionSeconds":12.5,"payeePasted":null}}"#), .either)
        let summary = try EvaluationRequest.decode(
            body: Array(Self.body(interaction: #"{"summary":{"sessionSeconds":12.5,"payeePasted":null}}"#).utf8))
        guard case .summary(let features, _) = summary.interaction else { return XCTFail("no summary") }
        XCTAssertEqual(features.features.count, 1, "a feature sent as null is absent")
        let absent = try EvaluationRequest.decode(body: Array(Self.body(subject: #"{"account":"a"}"#).utf8))
        let null = try EvaluationRequest.decode(body: Array(Self.body(requestId: "null", subject: #"{"account":"a","device":null}"#).utf8))
        XCTAssertNil(null.requestId)
        XCTAssertNil(null.subject.device)
        XCTAssertEqual(null.subject.account, absent.subject.account)
        let newer =
            #"{"events":[{"t":0,"type":"sessionStart"},{"t":3,"type":"pointerHover","field":"payee"},{"t":5,"type":"tap"},{"t":6,"type":"stylusPressure"}]}"#
        check(Self.body(interaction: newer), .read)
        let request = try EvaluationRequest.decode(body: Array(Self.body(interaction: newer).utf8))
        XCTAssertEqual(request.skippedEvents, 2)
        guard case .events(let events, _) = request.interaction else { return XCTFail("no events") }
        XCTAssertEqual(events.map(\.type), [.sessionStart, .tap], "the known events, in order")
        XCTAssertEqual(try EvaluationRequest.decodeParsing(Array(Self.body(interaction: newer).utf8)).skippedEvents, 2)
        XCTAssertEqual(try EvaluationRequest.decode(try Problem.parseBody(Array(Self.body(interaction: newer).utf8))).skippedEvents, 2)
        // A name with digits and . _ + - is one too (the tree path reads it).
        let dotted = #"{"events":[{"t":0,"type":"sessionStart"},{"t":1,"type":"stylus.pressure_2+b-1"}]}"#
        check(Self.body(interaction: dotted), .either)
        XCTAssertEqual(try EvaluationRequest.decode(body: Array(Self.body(interaction: dotted).utf8)).skippedEvents, 1)
    }

    func testDeclinesWhatTheTreePathRefusesOrReadsDifferently() {
        let declined = [
            Self.body(requestId: #""""#), Self.body(requestId: "7"),
            Self.body(requestId: "\"" + String(repeating: "r", count: 129) + "\""),
            Self.body(requestId: #""alice@example.com""#),  // personal data: the tree path names it
            Self.body(requestId: #""4111 1111 1111 1111""#),
            Self.body(requestId: #""tx\u002d1""#), Self.body(requestId: #""tx\"1""#), Self.body(requestId: #""tx-é""#),
            Self.body(category: #""paying""#), Self.body(category: "null"), Self.body(category: #""Payment""#),
            Self.body(insights: "[]"), Self.body(insights: "{}"),
            Self.body(insights: "[" + Array(repeating: #"{"type":"x","schemaVersion":1}"#, count: 5).joined(separator: ",") + "]"),
            Self.body(insights: #"[{"type":"x"}]"#), Self.body(insights: #"[{"schemaVersion":1}]"#),
            Self.body(insights: #"[{"type":"x","schemaVersion":1.0}]"#), Self.body(insights: #"[{"type":"x","schemaVersion":-1}]"#),
            Self.body(insights: #"[{"type":"x","schemaVersion":1000001}]"#), Self.body(insights: #"[{"type":"x","schemaVersion":1e2}]"#),
            Self.body(insights: #"[{"type":"x","schemaVersion":01}]"#),
            Self.body(insights: #"[{"type":"x","schemaVersion":1,"modelVersion":"\#(String(repeating: "9", count: 33))"}]"#),
            Self.body(insights: #"[{"type":"x","schemaVersion":1,"type":"y"}]"#),
            Self.body(insights: #"[{"type":"x","schemaVersion":1,"extra":1}]"#),
            Self.body(subject: #"{"account":"a","account":"b"}"#), Self.body(subject: #"{"email":"a"}"#),
            Self.body(subject: #"{"account":""}"#), Self.body(subject: #"{"account":1}"#),
            Self.body(subject: "{\"device\":\"" + String(repeating: "d", count: 257) + "\"}"),
            Self.body(interaction: #"{"events":\#(Self.events),"summary":\#(Self.summary)}"#),
            Self.body(interaction: #"{"summary":\#(Self.summary),"events":[]}"#),
            Self.body(interaction: #"{"device":{"activeCall":"yes"}}"#), Self.body(insights: #"[{"type":null,"schemaVersion":1}]"#),
            Self.body(interaction: #"{"device":{"camera":true}}"#),
            Self.body(interaction: #"{"device":{"activeCall":true,"activeCall":false}}"#),
            Self.body(interaction: #"{"other":1}"#), Self.body(interaction: "[]"),
            Self.body(interaction: #"{"summary":{"sessionSeconds":"long"}}"#),  // the tree path names the feature
            Self.body(interaction: #"{"events":[{"t":5,"type":"scroll"},{"t":1,"type":"scroll"}]}"#),
            Self.body(interaction: #"{"events":[{"t":0,"type":"sessionStart"},{"t":1,"type":"two words"}]}"#),
            Self.body(interaction: #"{"events":[{"t":0,"type":"sessionStart"},{"t":1,"type":""}]}"#),
            Self.body(interaction: #"{"events":[{"t":0,"type":"sessionStart"},{"t":1,"type":"\#(String(repeating: "z", count: 65))"}]}"#),
            Self.body(transaction: #"{"amountBand":"huge"}"#), Self.body(transaction: #"{"newCounterparty":1}"#),
            Self.body(transaction: #"{"newCounterparty":truex}"#),
            Self.body(transaction: #"{"newCounterparty":true,"newCounterparty":true}"#),
            Self.body() + "x", Self.body() + "{}", "[" + Self.body() + "]", "", " ", "{}", "null",
            #"{"operationCategory":"payment","insights":[{"type":"x","schemaVersion":1}],"requestId":"a","requestId":"b"}"#,
            #"{"operationCategory":"payment","insights":[{"type":"x","schemaVersion":1}],"unknown":true}"#,
            #"{"operationCategory":"payment"}"#, #"{"insights":[{"type":"x","schemaVersion":1}]}"#,
            #"{"operationCategory":"payment","insights":[{"type":"x","schemaVersion":1}],}"#,
            #"{"operationCategory":"payment",,"insights":[{"type":"x","schemaVersion":1}]}"#,
            #"{"operationCategory":"payment" "insights":[{"type":"x","schemaVersion":1}]}"#
        ]
        for text in declined { check(text, .declined) }
    }

    /// Random edits of plain bodies: whatever the reader makes of them agrees with the tree path.
    func testMutatedBodiesAreReadAsTheTreePathReadsThem() {
        var generator = SystemRandomNumberGenerator()
        let bases = [
            Self.body(), Self.body(interaction: #"{"events":\#(Self.events)}"#),
            #"{"insights":[{"schemaVersion":1,"type":"x","modelVersion":"1.0"}],"operationCategory":"other","subject":{"device":"d"}}"#
        ].map { Array($0.utf8) }
        let alphabet = Array(#"{}[]":,.-+eE0123456789 \tatypnulfrsSC\é"#.utf8)
        var read = 0
        for _ in 0..<6_000 {
            let bytes = RandomEdits.applied(to: bases.randomElement(using: &generator)!, alphabet: alphabet, using: &generator)
            let text = String(decoding: bytes, as: UTF8.self)
            check(text)
            if EvaluationBodyReader.read(Array(text.utf8)) != nil { read += 1 }
        }
        // Some edits keep a body valid and plain (a changed letter in a value, added whitespace).
        XCTAssertGreaterThan(read, 100, "the reader should still read lightly edited bodies")
    }
}
