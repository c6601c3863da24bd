import CoachingModel
import InsightDomain
import JSON

/// One insight asked for in an evaluation. The type is kept as sent: an unknown type is an
/// insight-level error (`insightUnavailable`), not a failure of the whole request.
struct InsightRequest: Sendable, Equatable {
    var type: String
    var schemaVersion: Int
    var modelVersion: String?
}

/// The raw subject identifiers. They live only until they are hashed at the API edge.
struct RawSubject: Sendable {
    var account: String?
    var device: String?
    var counterparty: String?
}

/// What the client observed: timing events, or a feature summary computed on the device.
enum InteractionInput: Sendable {
    case none
    case events([InteractionEvent], DeviceFacts)
    /// The members of `interaction.summary`, in request order (the parser keeps names unique).
    case summary([(key: String, value: Double)], DeviceFacts)
}

/// A validated `POST /v1/evaluations` body.
struct EvaluationRequest: Sendable {
    var requestId: String?
    var category: OperationCategory
    var insights: [InsightRequest]
    var subject: RawSubject
    var interaction: InteractionInput
    var newCounterparty: Bool?
    var amountBand: AmountBand?

    enum AmountBand: String, CaseIterable, Sendable { case low, medium, high }

    static let maxInsights = 4
    static let maxRequestIdLength = 128
    static let maxIdentifierLength = 256
    static let maxSummaryFeatures = 64
    /// Largest event time: the feature extractor's session bound, checked at the edge so the
    /// error names the event.
    static let maxEventTime: Int64 = FeatureExtractor.maxSessionMs

    /// The members each object of the body may have (built once: a set per request showed in
    /// profiles).
    private enum Fields {
        static let root: Set<String> = ["requestId", "operationCategory", "insights", "subject", "interaction", "transaction"]
        static let insight: Set<String> = ["type", "schemaVersion", "modelVersion"]
        static let subject: Set<String> = ["account", "device", "counterparty"]
        static let transaction: Set<String> = ["newCounterparty", "amountBand"]
        static let interaction: Set<String> = ["events", "device", "summary"]
        static let device: Set<String> = ["activeCall", "callStartedBeforeSession", "screenSharing", "remoteAccessApp"]
    }

    /// Parses and validates a body, reading `interaction.events` straight from the bytes when
    /// `EventsReader` can (the result is the same as `decode(_:)` of the parsed body).
    static func decode(body: [UInt8]) throws(Problem) -> EvaluationRequest {
        var events: [InteractionEvent]?
        let value = try Problem.parseBody(body, intercepting: JSONInterception(path: ["interaction", "events"]) { bytes, start in
            guard let read = EventsReader.read(bytes, from: start) else { return nil }
            events = read.events
            return read.end
        })
        return try decode(value, events: events)
    }

    /// Validates a parsed body, naming the first offending field. `events` are the interaction's
    /// events when they were read from the bytes, and so are not in `body`.
    static func decode(_ body: JSONValue, events readEvents: [InteractionEvent]? = nil) throws(Problem) -> EvaluationRequest {
        let root = try ObjectReader(body, path: "",
                                    allowed: Fields.root)
        let requestId = try root.string("requestId", maxLength: maxRequestIdLength)
        // The one free string a caller controls: it must not carry personal data.
        if let requestId, let kind = PIIGuard.detect(requestId) {
            throw Problem.invalid("requestId", "looks like personal data (\(kind.description)); send an opaque transaction id")
        }
        let category = try root.enumeration("operationCategory", OperationCategory.self, required: true)!
        let insightValues = try root.array("insights", count: 1...maxInsights, required: true)!
        var insights: [InsightRequest] = []
        for (i, value) in insightValues.enumerated() {
            let item = try ObjectReader(value, path: "insights[\(i)]", allowed: Fields.insight)
            insights.append(InsightRequest(
                type: try item.string("type", maxLength: 64, required: true)!,
                schemaVersion: Int(try item.integer("schemaVersion", in: 0...1_000_000, required: true)!),
                modelVersion: try item.string("modelVersion", maxLength: 32)))
        }
        var subject = RawSubject()
        if let s = try root.object("subject", allowed: Fields.subject) {
            subject.account = try s.string("account", maxLength: maxIdentifierLength)
            subject.device = try s.string("device", maxLength: maxIdentifierLength)
            subject.counterparty = try s.string("counterparty", maxLength: maxIdentifierLength)
        }
        var newCounterparty: Bool?
        var amountBand: AmountBand?
        if let t = try root.object("transaction", allowed: Fields.transaction) {
            newCounterparty = try t.bool("newCounterparty")
            amountBand = try t.enumeration("amountBand", AmountBand.self)
        }
        return EvaluationRequest(requestId: requestId, category: category, insights: insights, subject: subject,
                                 interaction: try decodeInteraction(root, events: readEvents), newCounterparty: newCounterparty,
                                 amountBand: amountBand)
    }

    /// One event, decoded without the general reader: it runs up to 5,000 times per request,
    /// so field paths are built only when there is an error to report. Rules and messages are
    /// those of `ObjectReader`.
    private static func decodeEvent(_ value: JSONValue, index: Int) throws(Problem) -> InteractionEvent {
        func field(_ name: String) -> String { "interaction.events[\(index)].\(name)" }
        guard case .object(let object) = value else {
            throw Problem.invalid("interaction.events[\(index)]", "must be an object, not \(value.kindDescription)")
        }
        var t: Int64?, type: InteractionEventType?, eventField: InteractionField?
        for member in object.members {
            switch member.key {
            case "t":
                guard case .number(let number) = member.value else {
                    throw Problem.invalid(field("t"), "must be an integer, not \(member.value.kindDescription)")
                }
                guard number == number.rounded(), number >= 0, number <= Double(maxEventTime) else {
                    throw Problem.invalid(field("t"), "must be an integer from 0 to \(maxEventTime)")
                }
                t = Int64(number)
            case "type":
                guard case .string(let text) = member.value, let parsed = InteractionEventType(rawValue: text) else {
                    throw Problem.invalid(field("type"), "must be one of \(InteractionEventType.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                type = parsed
            case "field":
                guard case .string(let text) = member.value, let parsed = InteractionField(rawValue: text) else {
                    throw Problem.invalid(field("field"), "must be one of \(InteractionField.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                eventField = parsed
            default:
                throw Problem.invalid(field(member.key), "is not a known field")
            }
        }
        guard let t else { throw Problem.invalid(field("t"), "is required") }
        guard let type else { throw Problem.invalid(field("type"), "is required") }
        return InteractionEvent(t: t, type: type, field: eventField)
    }

    private static func decodeInteraction(_ root: ObjectReader, events readEvents: [InteractionEvent]?) throws(Problem) -> InteractionInput {
        guard let interaction = try root.object("interaction", allowed: Fields.interaction) else { return .none }
        var device = DeviceFacts()
        let hasDevice = interaction.value("device") != nil
        if let d = try interaction.object("device", allowed: Fields.device) {
            device.activeCall = try d.bool("activeCall")
            device.callStartedBeforeSession = try d.bool("callStartedBeforeSession")
            device.screenSharing = try d.bool("screenSharing")
            device.remoteAccessApp = try d.bool("remoteAccessApp")
        }
        let eventValues = try interaction.array("events", count: 0...FeatureExtractor.maxEvents)
        let summaryValue = interaction.value("summary")
        if (eventValues != nil || readEvents != nil) && summaryValue != nil {
            throw Problem.invalid("interaction", "must carry either events or summary, not both")
        }
        if let summaryValue {
            guard case .object(let object) = summaryValue else {
                throw Problem.invalid("interaction.summary", "must be an object, not \(summaryValue.kindDescription)")
            }
            guard object.members.count <= maxSummaryFeatures else {
                throw Problem.invalid("interaction.summary", "must have at most \(maxSummaryFeatures) features")
            }
            var summary: [(key: String, value: Double)] = []
            summary.reserveCapacity(object.members.count)
            for member in object.members {
                guard case .number(let number) = member.value else {
                    throw Problem.invalid("interaction.summary.\(member.key.prefix(64))", "must be a number")
                }
                summary.append((key: member.key, value: number))
            }
            return .summary(summary, device)
        }
        if let readEvents { return .events(readEvents, device) }
        // Device facts without timing are evidence of their own: they go to the model as a
        // summary with every timing feature missing.
        guard let eventValues else { return hasDevice ? .summary([], device) : .none }
        var events: [InteractionEvent] = []
        events.reserveCapacity(eventValues.count)
        var previous: Int64 = 0
        for (i, value) in eventValues.enumerated() {
            let event = try decodeEvent(value, index: i)
            if event.t < previous {
                throw Problem.invalid("interaction.events[\(i)].t", "must not be earlier than the previous event's t (events are in time order)")
            }
            previous = event.t
            events.append(event)
        }
        return .events(events, device)
    }
}
