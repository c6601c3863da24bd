import CoachingModel
import InsightDomain
import InsightServices

/// The contract's limits on an evaluation body (the identifier and insight limits are shared by
/// the other endpoints that take subjects and insight ids).
extension EvaluationRequest {
    /// The store keeps as many served insights per evaluation (the rest of its slots hold shadows).
    static let maxInsights = EvaluationRecord.maxServedInsights
    static let maxRequestIdLength = 128
    static let maxIdentifierLength = 256
    static let maxSummaryFeatures = 64
    /// Largest event time: the feature extractor's session bound, checked at the edge so the
    /// error names the event.
    static let maxEventTime: Int64 = FeatureExtractor.maxSessionMs
}

/// The `POST /v1/evaluations` body, member by member: names, nesting, limits, enumerations and
/// which members are required, each stated once. Both decoders are driven from it:
/// `EvaluationBodyReader` (and `EventsReader` per event) reads the bytes through
/// `BodyObject.read`, and the tree path (`EvaluationRequest.decode(_:)`) takes its known-field
/// lists, limits and error paths from `BodyObject.decode`. A member added here is read, limited
/// and named by both; `EvaluationSchemaTests` walks the table and holds both to each limit.
///
/// Members are listed in the contract's order, which is also the order the tree path checks
/// them in; `interaction` has rules of its own (events or summary, device facts alone) and is
/// checked after the others by `EvaluationRequest.decodeInteraction`.
enum EvaluationSchema {
    static let root = BodyObject(
        start: EvaluationRequest(
            requestId: nil, category: .other, insights: [],
            subject: RawSubject(), interaction: .none),
        [
            // The one free string a caller controls: it must not carry personal data.
            .string(
                "requestId", maxLength: EvaluationRequest.maxRequestIdLength,
                refuse: { _, id in
                    PIIGuard.detect(id).map { "looks like personal data (\($0.description)); send an opaque transaction id" }
                }
            ) { $0.requestId = $1 },
            .enumeration("operationCategory", OperationCategory.self, required: true) { $0.category = $1 },
            .array("insights", of: insight, count: 1...EvaluationRequest.maxInsights, required: true) { $0.insights = $1 },
            .object("subject", subject) { $0.subject = $1 },
            .custom("interaction", kind: .object(interaction.fields)) { cursor, request in
                guard let parts = interaction.read(&cursor), let input = parts.input else { return false }
                request.interaction = input
                request.source = parts.source?.source
                request.droppedEvents = parts.source?.droppedEvents
                request.skippedEvents = parts.skippedEvents
                return true
            },
            // Facts for the decision policy: closed values only, never amounts or names.
            .object("transaction", transaction) { $0.transaction = $1 },
            .object("initiator", initiator) { $0.initiator = $1 }
        ])

    static let insight = BodyObject(
        start: InsightRequest(type: "", schemaVersion: 0),
        [
            .string("type", maxLength: 64, required: true) { $0.type = $1 },
            .integer("schemaVersion", in: 0...1_000_000, required: true) { $0.schemaVersion = Int($1) },
            .string("modelVersion", maxLength: 32) { $0.modelVersion = $1 }
        ])

    static let subject = BodyObject(
        start: RawSubject(),
        [
            .string("account", maxLength: EvaluationRequest.maxIdentifierLength) { $0.account = $1 },
            .string("device", maxLength: EvaluationRequest.maxIdentifierLength) { $0.device = $1 },
            .string("counterparty", maxLength: EvaluationRequest.maxIdentifierLength) { $0.counterparty = $1 }
        ])

    static let transaction = BodyObject(
        start: TransactionFacts(),
        [
            .boolean("newCounterparty") { $0.newCounterparty = $1 },
            .enumeration("amountBand", TransactionFacts.AmountBand.self) { $0.amountBand = $1 }
        ])

    /// Who chose the operation (docs/agents.md): closed values only, never a tool's name or text.
    static let initiator = BodyObject(
        start: Initiator(),
        [
            .enumeration("kind", InitiatorKind.self) { $0.kind = $1 },
            .object("agent", agent) { $0.agent = $1 }
        ])

    static let agent = BodyObject(
        start: AgentFacts(),
        [
            .boolean("userRequested") { $0.userRequested = $1 },
            .enumerations("untrustedContext", UntrustedSource.self) { $0.untrustedContext = CaseSet($1) },
            .boolean("argumentsFromUntrustedContext") { $0.argumentsFromUntrustedContext = $1 },
            .enumerations("sideEffects", SideEffect.self) { $0.sideEffects = CaseSet($1) }
        ])

    /// `interaction`: `events` and `summary` are read from the bytes by `EventsReader` and
    /// `SummaryReader` (also when the rest of the body is parsed).
    static let interaction = BodyObject(
        start: InteractionParts(),
        [
            .custom("events", kind: .array(of: event.fields, count: eventCount)) { cursor, parts in
                guard let read = EventsReader.read(cursor.bytes, from: cursor.index) else { return false }
                parts.events = read.events
                parts.skippedEvents = read.skipped
                cursor.index = read.end
                return true
            },
            .object("device", device) { $0.device = $1 },
            .custom("summary", kind: .features(max: EvaluationRequest.maxSummaryFeatures)) { cursor, parts in
                guard let read = SummaryReader.read(cursor.bytes, from: cursor.index) else { return false }
                parts.summary = read.summary
                cursor.index = read.end
                return true
            },
            .object("source", source) { $0.source = $1 }
        ])

    /// Which capture kit produced the interaction: names and a version number, never text.
    static let source = BodyObject(
        start: SourceMember(source: InteractionSource(kit: "", version: "", platform: .other)),
        [
            .token("kit", maxLength: InteractionSource.maxKitLength, required: true) { $0.source.kit = $1 },
            .token("version", maxLength: InteractionSource.maxVersionLength, required: true) { $0.source.version = $1 },
            .enumeration("platform", ClientPlatform.self, required: true) { $0.source.platform = $1 },
            .integer("droppedEvents", in: 0...InteractionSource.maxDroppedEvents) { $0.droppedEvents = $1 }
        ])

    static let eventCount = 0...FeatureExtractor.maxEvents
    static let eventTimes: ClosedRange<Int64> = 0...EvaluationRequest.maxEventTime

    /// The members of an event, by name. `EventsReader` reads events from the bytes by hand
    /// (there may be 5,000 of them) with these names and limits; a member added to `event` is
    /// declined there until it reads it too, which `EvaluationSchemaTests` shows.
    enum EventMember {
        static let t: StaticString = "t"
        static let type: StaticString = "type"
        static let field: StaticString = "field"
    }

    /// The longest event type name: a type this version does not know is a name of at most
    /// this many token characters, and its event is skipped.
    static let maxEventTypeLength = 64

    /// One event, decoded from `event(after:)`: it starts with the previous event's `t`, which
    /// its own must not be earlier than. An event of a type this version does not know (a newer
    /// capture kit's) is skipped: validated like any, then neither scored, stored nor echoed,
    /// only counted (`skippedEvents`), so that a newer kit never breaks an older daemon.
    static let event = BodyObject(
        start: event(after: nil),
        [
            .integer(
                EventMember.t, in: eventTimes, required: true,
                refuse: { previous, t in
                    t < previous.event.t ? "must not be earlier than the previous event's t (events are in time order)" : nil
                }
            ) { $0.event.t = $1 },
            .enumerationOrSkipped(
                EventMember.type, InteractionEventType.self, maxLength: maxEventTypeLength, required: true,
                skip: { $0.skipped = true }
            ) { $0.event.type = $1 },
            .enumeration(EventMember.field, InteractionField.self) { $0.event.field = $1 }
        ])

    /// The start of the event after one at `previous` (the first event when nil).
    static func event(after previous: Int64?) -> WireEvent {
        WireEvent(event: InteractionEvent(t: previous ?? 0, type: .sessionStart))
    }

    static let device = BodyObject(
        start: DeviceFacts(),
        [
            .boolean("activeCall") { $0.activeCall = $1 },
            .boolean("callStartedBeforeSession") { $0.callStartedBeforeSession = $1 },
            .boolean("screenSharing") { $0.screenSharing = $1 },
            .boolean("remoteAccessApp") { $0.remoteAccessApp = $1 }
        ])
}

/// An event as sent: the event, or one of a type this version does not know, to skip.
struct WireEvent: Sendable {
    var event: InteractionEvent
    var skipped = false
}

/// The members of `interaction` as read, before its rules make an `InteractionInput` of them.
struct InteractionParts: Sendable {
    var events: [InteractionEvent]?
    /// Events of types this version does not know, left out of `events`.
    var skippedEvents = 0
    var summary: SummaryFeatures?
    var device: DeviceFacts?
    var source: SourceMember?

    /// The input they make; nil when both events and a summary came (the tree path names that).
    /// Device facts without timing are evidence of their own: they go to the model as a summary
    /// with every timing feature missing.
    var input: InteractionInput? {
        switch (events, summary) {
        case (.some, .some): return nil
        case (_, .some(let summary)): return .summary(summary, device ?? DeviceFacts())
        case (.some(let events), _): return .events(events, device ?? DeviceFacts())
        case (nil, nil): return device.map { .summary(SummaryFeatures(), $0) } ?? InteractionInput.none
        }
    }
}

/// `interaction.source` as read: the kit, stored with the evaluation, and what it says it
/// dropped, which is only counted.
struct SourceMember: Sendable {
    var source: InteractionSource
    var droppedEvents: Int64?
}

extension OperationCategory: BodyEnumeration {}
extension TransactionFacts.AmountBand: BodyEnumeration {}
extension InitiatorKind: BodyEnumeration {}
extension UntrustedSource: BodyEnumeration {}
extension SideEffect: BodyEnumeration {}
extension InteractionEventType: BodyEnumeration {}
extension InteractionField: BodyEnumeration {}
extension ClientPlatform: BodyEnumeration {}
