import CoachingModel
import InsightDomain
import InsightServices

/// Reads a whole `POST /v1/evaluations` body straight from its bytes in the common, valid case,
/// so that its members do not become a `JSONValue` tree of keys and strings first and then get
/// decoded from it (which would be a sizeable share of an evaluation's work).
///
/// It accepts only what the tree path (`EvaluationRequest.decode(_:)`) would accept and read the
/// same way: an object of the known members, each at most once; strings of printable ASCII
/// without escapes, within their limits; `schemaVersion` as a plain integer; `true`/`false` for
/// flags; `interaction.events` and `.summary` as `EventsReader` and `SummaryReader` read them;
/// whitespace where JSON allows it and nothing after the object. Anything else — an unknown or
/// repeated member, a null, an escape, a non-ASCII or over-long string, an unknown category, a
/// request id that looks like personal data, any syntax error — makes it decline, and the parser
/// and the tree path take over and name the offending field. A differential test holds the two
/// paths to the same result.
enum EvaluationBodyReader {
    /// The request, or nil to decline.
    static func read(_ body: [UInt8]) -> EvaluationRequest? {
        body.withUnsafeBufferPointer { bytes in
            var cursor = ByteCursor(bytes: bytes, index: 0)
            guard let request = readRoot(&cursor) else { return nil }
            cursor.skipWhitespace()
            return cursor.index == bytes.count ? request : nil
        }
    }

    private static func readRoot(_ cursor: inout ByteCursor) -> EvaluationRequest? {
        cursor.skipWhitespace()
        var requestId: String??, category: OperationCategory?, insights: [InsightRequest]?
        var subject: RawSubject?, interaction: InteractionInput?, transaction: TransactionFacts?
        let complete = cursor.readObject { cursor in
            if requestId == nil, cursor.takeName("requestId") {
                guard cursor.takeColon(), let text = cursor.printableString(maxLength: EvaluationRequest.maxRequestIdLength),
                      PIIGuard.detect(text) == nil else { return false }
                requestId = .some(text)
            } else if category == nil, cursor.takeName("operationCategory") {
                guard cursor.takeColon(), let text = cursor.plainString(),
                      let value = OperationCategory(rawValue: String(decoding: text, as: UTF8.self)) else { return false }
                category = value
            } else if insights == nil, cursor.takeName("insights") {
                guard cursor.takeColon(), let value = readInsights(&cursor) else { return false }
                insights = value
            } else if subject == nil, cursor.takeName("subject") {
                guard cursor.takeColon(), let value = readSubject(&cursor) else { return false }
                subject = value
            } else if interaction == nil, cursor.takeName("interaction") {
                guard cursor.takeColon(), let value = readInteraction(&cursor) else { return false }
                interaction = value
            } else if transaction == nil, cursor.takeName("transaction") {
                guard cursor.takeColon(), let value = readTransaction(&cursor) else { return false }
                transaction = value
            } else {
                return false
            }
            return true
        }
        guard complete, let category, let insights else { return nil }
        return EvaluationRequest(requestId: requestId ?? nil, category: category, insights: insights,
                                 subject: subject ?? RawSubject(), interaction: interaction ?? .none,
                                 transaction: transaction ?? TransactionFacts())
    }

    private static func readInsights(_ cursor: inout ByteCursor) -> [InsightRequest]? {
        guard cursor.take(UInt8(ascii: "[")) else { return nil }
        var insights: [InsightRequest] = []
        repeat {
            cursor.skipWhitespace()
            guard insights.count < EvaluationRequest.maxInsights, let insight = readInsight(&cursor) else { return nil }
            insights.append(insight)
            cursor.skipWhitespace()
        } while cursor.take(UInt8(ascii: ","))
        return cursor.take(UInt8(ascii: "]")) ? insights : nil
    }

    private static func readInsight(_ cursor: inout ByteCursor) -> InsightRequest? {
        var type: String?, schemaVersion: Int64?, modelVersion: String?
        let complete = cursor.readObject { cursor in
            if type == nil, cursor.takeName("type") {
                guard cursor.takeColon(), let text = cursor.printableString(maxLength: 64) else { return false }
                type = text
            } else if schemaVersion == nil, cursor.takeName("schemaVersion") {
                guard cursor.takeColon(), let value = cursor.plainInteger(), value <= 1_000_000 else { return false }
                schemaVersion = value
            } else if modelVersion == nil, cursor.takeName("modelVersion") {
                guard cursor.takeColon(), let text = cursor.printableString(maxLength: 32) else { return false }
                modelVersion = text
            } else {
                return false
            }
            return true
        }
        guard complete, let type, let schemaVersion else { return nil }
        return InsightRequest(type: type, schemaVersion: Int(schemaVersion), modelVersion: modelVersion)
    }

    private static func readSubject(_ cursor: inout ByteCursor) -> RawSubject? {
        var subject = RawSubject()
        let limit = EvaluationRequest.maxIdentifierLength
        let complete = cursor.readObject { cursor in
            if subject.account == nil, cursor.takeName("account") {
                guard cursor.takeColon(), let text = cursor.printableString(maxLength: limit) else { return false }
                subject.account = text
            } else if subject.device == nil, cursor.takeName("device") {
                guard cursor.takeColon(), let text = cursor.printableString(maxLength: limit) else { return false }
                subject.device = text
            } else if subject.counterparty == nil, cursor.takeName("counterparty") {
                guard cursor.takeColon(), let text = cursor.printableString(maxLength: limit) else { return false }
                subject.counterparty = text
            } else {
                return false
            }
            return true
        }
        return complete ? subject : nil
    }

    private static func readInteraction(_ cursor: inout ByteCursor) -> InteractionInput? {
        var events: [InteractionEvent]?, summary: SummaryFeatures?, device: DeviceFacts?
        let complete = cursor.readObject { cursor in
            if events == nil, summary == nil, cursor.takeName("events") {
                guard cursor.takeColon(), let read = EventsReader.read(cursor.bytes, from: cursor.index) else { return false }
                events = read.events
                cursor.index = read.end
            } else if summary == nil, events == nil, cursor.takeName("summary") {
                guard cursor.takeColon(), let read = SummaryReader.read(cursor.bytes, from: cursor.index) else { return false }
                summary = read.summary
                cursor.index = read.end
            } else if device == nil, cursor.takeName("device") {
                guard cursor.takeColon(), let value = readDevice(&cursor) else { return false }
                device = value
            } else {
                return false  // includes events and summary both: the tree path names that
            }
            return true
        }
        guard complete else { return nil }
        if let summary { return .summary(summary, device ?? DeviceFacts()) }
        if let events { return .events(events, device ?? DeviceFacts()) }
        // Device facts without timing go to the model as a summary with every timing feature
        // missing (as in `EvaluationRequest.decodeInteraction`).
        return device.map { .summary(SummaryFeatures(), $0) } ?? InteractionInput.none
    }

    private static func readDevice(_ cursor: inout ByteCursor) -> DeviceFacts? {
        var device = DeviceFacts()
        let complete = cursor.readObject { cursor in
            if device.activeCall == nil, cursor.takeName("activeCall") {
                guard cursor.takeColon(), let flag = cursor.literalBool() else { return false }
                device.activeCall = flag
            } else if device.callStartedBeforeSession == nil, cursor.takeName("callStartedBeforeSession") {
                guard cursor.takeColon(), let flag = cursor.literalBool() else { return false }
                device.callStartedBeforeSession = flag
            } else if device.screenSharing == nil, cursor.takeName("screenSharing") {
                guard cursor.takeColon(), let flag = cursor.literalBool() else { return false }
                device.screenSharing = flag
            } else if device.remoteAccessApp == nil, cursor.takeName("remoteAccessApp") {
                guard cursor.takeColon(), let flag = cursor.literalBool() else { return false }
                device.remoteAccessApp = flag
            } else {
                return false
            }
            return true
        }
        return complete ? device : nil
    }

    private static func readTransaction(_ cursor: inout ByteCursor) -> TransactionFacts? {
        var newCounterparty: Bool?, amountBand: TransactionFacts.AmountBand?
        let complete = cursor.readObject { cursor in
            if newCounterparty == nil, cursor.takeName("newCounterparty") {
                guard cursor.takeColon(), let flag = cursor.literalBool() else { return false }
                newCounterparty = flag
            } else if amountBand == nil, cursor.takeName("amountBand") {
                guard cursor.takeColon(), let text = cursor.plainString(),
                      let band = TransactionFacts.AmountBand(rawValue: String(decoding: text, as: UTF8.self)) else { return false }
                amountBand = band
            } else {
                return false
            }
            return true
        }
        return complete ? TransactionFacts(newCounterparty: newCounterparty, amountBand: amountBand) : nil
    }
}
