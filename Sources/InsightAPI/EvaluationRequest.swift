import CoachingModel
import InsightDomain
import InsightServices
import JSON

/// The contract's limits on an evaluation body, and its decoding (`decode(body:)`).
extension EvaluationRequest {
    static let maxInsights = 4
    static let maxRequestIdLength = 128
    static let maxIdentifierLength = 256
    static let maxSummaryFeatures = 64
    /// Largest event time: the feature extractor's session bound, checked at the edge so the
    /// error names the event.
    static let maxEventTime: Int64 = FeatureExtractor.maxSessionMs

    /// Parses and validates a body: read whole from the bytes when `EvaluationBodyReader` can,
    /// otherwise parsed, with `interaction.events` or `interaction.summary` read from the bytes
    /// when `EventsReader` or `SummaryReader` can (the result is the same as `decode(_:)` of the
    /// parsed body either way).
    static func decode(body: [UInt8]) throws(Problem) -> EvaluationRequest {
        if let request = EvaluationBodyReader.read(body) { return request }
        return try decodeParsing(body)
    }

    /// `decode(body:)` through the parser and the tree path (still reading the interaction from
    /// the bytes when it can): what `EvaluationBodyReader` declines, and its reference in tests.
    static func decodeParsing(_ body: [UInt8]) throws(Problem) -> EvaluationRequest {
        var events: [InteractionEvent]?
        var summary: SummaryFeatures?
        // Positions in `interaction` of the members read here (the interception is offered
        // each member of `interaction` in order), for the positions errors name.
        var member = 0, readAt: [Int] = []
        let value = try Problem.parseBody(body, intercepting: JSONInterception(path: ["interaction"]) { key, bytes, start in
            defer { member += 1 }
            switch key {
            case "events":
                guard let read = EventsReader.read(bytes, from: start) else { return nil }
                events = read.events
                readAt.append(member)
                // The array, and each event with its t, type and field if it has one.
                return (read.end, read.events.reduce(1) { $0 + ($1.field == nil ? 3 : 4) })
            case "summary":
                guard let read = SummaryReader.read(bytes, from: start) else { return nil }
                summary = read.summary
                readAt.append(member)
                return (read.end, 1 + read.summary.features.count)
            default:
                return nil
            }
        })
        return try decode(value, events: events, summary: summary, interactionReadAt: readAt)
    }

    /// Validates a parsed body, naming the first offending field. `events` and `summary` are the
    /// interaction's when they were read from the bytes, and so are not in `body`;
    /// `interactionReadAt` are their positions among the members of `interaction`.
    static func decode(_ body: JSONValue, events readEvents: [InteractionEvent]? = nil,
                       summary readSummary: SummaryFeatures? = nil,
                       interactionReadAt: [Int] = []) throws(Problem) -> EvaluationRequest {
        let root = try ObjectReader(body, path: "",
                                    allowed: ["requestId", "operationCategory", "insights", "subject", "interaction", "transaction"])
        let requestId = try root.string("requestId", maxLength: maxRequestIdLength)
        // The one free string a caller controls: it must not carry personal data.
        if let requestId, let kind = PIIGuard.detect(requestId) {
            throw Problem.invalid("requestId", "looks like personal data (\(kind.description)); send an opaque transaction id")
        }
        let category = try root.enumeration("operationCategory", OperationCategory.self, required: true)!
        let insightValues = try root.array("insights", count: 1...maxInsights, required: true)!
        var insights: [InsightRequest] = []
        for (i, value) in insightValues.enumerated() {
            let item = try ObjectReader(value, path: "insights[\(i)]", allowed: ["type", "schemaVersion", "modelVersion"])
            insights.append(InsightRequest(
                type: try item.string("type", maxLength: 64, required: true)!,
                schemaVersion: Int(try item.integer("schemaVersion", in: 0...1_000_000, required: true)!),
                modelVersion: try item.string("modelVersion", maxLength: 32)))
        }
        var subject = RawSubject()
        if let s = try root.object("subject", allowed: ["account", "device", "counterparty"]) {
            subject.account = try s.string("account", maxLength: maxIdentifierLength)
            subject.device = try s.string("device", maxLength: maxIdentifierLength)
            subject.counterparty = try s.string("counterparty", maxLength: maxIdentifierLength)
        }
        var transaction = TransactionFacts()
        if let t = try root.object("transaction", allowed: ["newCounterparty", "amountBand"]) {
            transaction.newCounterparty = try t.bool("newCounterparty")
            transaction.amountBand = try t.enumeration("amountBand", TransactionFacts.AmountBand.self)
        }
        return EvaluationRequest(requestId: requestId, category: category, insights: insights, subject: subject,
                                 interaction: try decodeInteraction(root, events: readEvents, summary: readSummary,
                                                                    readAt: interactionReadAt), transaction: transaction)
    }

    private static func decodeInteraction(_ root: ObjectReader, events readEvents: [InteractionEvent]?,
                                          summary readSummary: SummaryFeatures?, readAt: [Int]) throws(Problem) -> InteractionInput {
        guard let interaction = try root.object("interaction", allowed: ["events", "device", "summary"], readElsewhere: readAt) else {
            return .none
        }
        var device = DeviceFacts()
        let hasDevice = interaction.value("device") != nil
        if let d = try interaction.object("device", allowed: ["activeCall", "callStartedBeforeSession", "screenSharing", "remoteAccessApp"]) {
            device.activeCall = try d.bool("activeCall")
            device.callStartedBeforeSession = try d.bool("callStartedBeforeSession")
            device.screenSharing = try d.bool("screenSharing")
            device.remoteAccessApp = try d.bool("remoteAccessApp")
        }
        let eventValues = try interaction.array("events", count: 0...FeatureExtractor.maxEvents)
        let summaryValue = interaction.value("summary")
        if (eventValues != nil || readEvents != nil) && (summaryValue != nil || readSummary != nil) {
            throw Problem.invalid("interaction", "must carry either events or summary, not both")
        }
        if let readSummary { return .summary(readSummary, device) }
        if let summaryValue {
            guard case .object(let object) = summaryValue else {
                throw Problem.invalid("interaction.summary", "must be an object, not \(summaryValue.kindDescription)")
            }
            guard object.members.count <= maxSummaryFeatures else {
                throw Problem.invalid("interaction.summary", "must have at most \(maxSummaryFeatures) features")
            }
            var summary = SummaryFeatures()
            summary.features.reserveCapacity(object.members.count)
            for member in object.members {
                guard case .number(let number) = member.value else {
                    // A name that is no feature is refused as such (its value does not matter),
                    // and never named: only a feature's own name goes into `field`.
                    guard let feature = Feature(name: member.key) else { summary.append(name: member.key, value: 0); continue }
                    throw Problem.invalid("interaction.summary.\(feature.name)", "must be a number")
                }
                summary.append(name: member.key, value: number)
            }
            return .summary(summary, device)
        }
        if let readEvents { return .events(readEvents, device) }
        // Device facts without timing are evidence of their own: they go to the model as a
        // summary with every timing feature missing.
        guard let eventValues else { return hasDevice ? .summary(SummaryFeatures(), device) : .none }
        var events: [InteractionEvent] = []
        events.reserveCapacity(eventValues.count)
        var previous: Int64 = 0
        for (i, value) in eventValues.enumerated() {
            let event = try ObjectReader(value, path: "interaction.events[\(i)]", allowed: ["t", "type", "field"])
            let t = try event.integer("t", in: 0...maxEventTime, required: true)!
            if t < previous {
                throw Problem.invalid(event.field("t"), "must not be earlier than the previous event's t (events are in time order)")
            }
            previous = t
            events.append(InteractionEvent(t: t, type: try event.enumeration("type", InteractionEventType.self, required: true)!,
                                           field: try event.enumeration("field", InteractionField.self)))
        }
        return .events(events, device)
    }
}
