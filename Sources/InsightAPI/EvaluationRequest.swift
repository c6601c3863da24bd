import CoachingModel
import InsightDomain
import InsightServices
import JSON

/// Decoding an evaluation body (`decode(body:)`), driven by `EvaluationSchema`.
extension EvaluationRequest {
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
        var events: EventsReader.Read?
        var summary: SummaryFeatures?
        // Positions in `interaction` of the members read here (the interception is offered
        // each member of `interaction` in order), for the positions errors name.
        var member = 0, readAt: [Int] = []
        let value = try Problem.parseBody(
            body,
            intercepting: JSONInterception(path: ["interaction"]) { key, bytes, start in
                defer { member += 1 }
                switch key {
                case "events":
                    guard let read = EventsReader.read(bytes, from: start) else { return nil }
                    events = read
                    readAt.append(member)
                    // The array, and each event with its t, type and field if it has one.
                    return (read.end, read.values)
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
    static func decode(
        _ body: JSONValue, events readEvents: EventsReader.Read? = nil,
        summary readSummary: SummaryFeatures? = nil,
        interactionReadAt: [Int] = []
    ) throws(Problem) -> EvaluationRequest {
        let root = try ObjectReader(body, path: "", allowed: EvaluationSchema.root.names)
        var request = try EvaluationSchema.root.decodeMembers(root)
        let source: SourceMember?
        (request.interaction, source, request.skippedEvents) = try decodeInteraction(
            root, events: readEvents, summary: readSummary,
            readAt: interactionReadAt)
        (request.source, request.droppedEvents) = (source?.source, source?.droppedEvents)
        return request
    }

    /// The interaction, the source it names (nil when it names none) and the events skipped.
    private static func decodeInteraction(
        _ root: ObjectReader, events readEvents: EventsReader.Read?, summary readSummary: SummaryFeatures?,
        readAt: [Int]
    ) throws(Problem) -> (InteractionInput, SourceMember?, Int) {
        let schema = EvaluationSchema.interaction
        guard let interaction = try root.object("interaction", allowed: schema.names, readElsewhere: readAt) else {
            return (.none, nil, 0)
        }
        // The device facts and the source; events and summary have the rules below.
        let parts = try schema.decodeMembers(interaction)
        let (input, skipped) = try decodeObservations(interaction, parts: parts, events: readEvents, summary: readSummary)
        return (input, parts.source, skipped)
    }

    /// The events or summary of `interaction`, with the device facts in `parts`, and the events
    /// skipped (of types this version does not know).
    private static func decodeObservations(
        _ interaction: ObjectReader, parts: InteractionParts, events readEvents: EventsReader.Read?,
        summary readSummary: SummaryFeatures?
    ) throws(Problem) -> (InteractionInput, Int) {
        let device = parts.device ?? DeviceFacts()
        let eventValues = try interaction.array("events", count: EvaluationSchema.eventCount)
        let summaryValue = interaction.value("summary")
        if (eventValues != nil || readEvents != nil) && (summaryValue != nil || readSummary != nil) {
            throw Problem.invalid("interaction", "must carry either events or summary, not both")
        }
        if let readSummary { return (.summary(readSummary, device), 0) }
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
                // A feature sent as null is absent (a name that is no feature is refused whatever its value).
                if member.value == .null, Feature(name: member.key) != nil { continue }
                guard case .number(let number) = member.value else {
                    // A name that is no feature is refused as such (its value does not matter),
                    // and never named: only a feature's own name goes into `field`.
                    guard let feature = Feature(name: member.key) else { summary.append(name: member.key, value: 0); continue }
                    throw Problem.invalid("interaction.summary.\(feature.name)", "must be a number")
                }
                summary.append(name: member.key, value: number)
            }
            return (.summary(summary, device), 0)
        }
        if let readEvents { return (.events(readEvents.events, device), readEvents.skipped) }
        guard let eventValues else { return (parts.input ?? .none, 0) }  // device facts alone, or nothing
        var events: [InteractionEvent] = []
        events.reserveCapacity(eventValues.count)
        var skipped = 0, previous: Int64?
        let path = interaction.field("events")
        for (i, value) in eventValues.enumerated() {
            let wire = try EvaluationSchema.event.decode(value, path: "\(path)[\(i)]", from: EvaluationSchema.event(after: previous))
            previous = wire.event.t
            if wire.skipped { skipped += 1 } else { events.append(wire.event) }
        }
        return (.events(events, device), skipped)
    }
}
