// What a caller did with an evaluation (docs/api.md "Interventions"): the intervention, the
// operator's template of the specific warning or questionnaire shown, when, and the person's
// response. Closed codes, operator template ids and times only: nothing a person typed.

/// What the caller put in front of the person.
public enum InterventionKind: String, Sendable, CaseIterable {
    case scamWarning, confirmation, callBack, hold, questionnaire, block, none

    /// Kinds that show the person something specific to the scam, so a report must name the
    /// catalogue's template of it (UK reimbursement counts a warning only when it is specific).
    public var needsTemplate: Bool { self == .scamWarning || self == .questionnaire }
}

/// What the person did after the intervention.
public enum InterventionResponse: String, Sendable, CaseIterable {
    /// Went ahead with the operation as it was.
    case proceeded
    /// Gave the operation up.
    case abandoned
    /// Went ahead with another payee (or account, or recipient).
    case changedPayee
    /// Completed the call back the caller asked for.
    case calledBack
    /// A hold ended and the operation was released.
    case released
    /// Did not answer (the session ended or timed out).
    case noResponse
}

/// The scam types a catalogue entry targets (UK Finance's APP-scam categories, and the scams of
/// the labels' `FraudType`).
public enum ScamType: String, Sendable, CaseIterable {
    case purchase, investment, romance, advanceFee, invoiceRedirection, ceoFraud,
        impersonationPolice, impersonationBank, impersonationOther, techSupport, familyEmergency
}

/// A hold on the operation: when it started, when it ended, and when the person was told.
public struct InterventionHold: Sendable, Equatable {
    public var startedAt: Milliseconds
    public var endedAt: Milliseconds
    public var toldAt: Milliseconds

    public init(startedAt: Milliseconds, endedAt: Milliseconds, toldAt: Milliseconds) {
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.toldAt = toldAt
    }
}

/// A template of the catalogue, named by its operator id and version.
public struct TemplateReference: Sendable, Equatable, Hashable {
    public var id: String
    public var version: Int

    public init(id: String, version: Int) {
        self.id = id
        self.version = version
    }

    /// 1–64 characters of `A–Z a–z 0–9 . _ -`, starting with a letter or digit: an operator's
    /// code, never text about a person.
    public static func isValidId(_ id: String) -> Bool {
        let bytes = Array(id.utf8)
        guard (1...64).contains(bytes.count), let first = bytes.first, isAlphanumeric(first) else { return false }
        return bytes.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }
    }

    public static let versions: ClosedRange<Int> = 1...1_000_000

    private static func isAlphanumeric(_ b: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(b) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(b)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b)
    }
}

/// The intervention a consumption report records. `none` carries nothing else; every other
/// kind has `shownAt` and `response`; a hold has its `hold`.
public struct RecordedIntervention: Sendable, Equatable {
    public var kind: InterventionKind
    public var template: TemplateReference?
    public var shownAt: Milliseconds?
    public var response: InterventionResponse?
    public var hold: InterventionHold?

    public init(
        kind: InterventionKind, template: TemplateReference? = nil, shownAt: Milliseconds? = nil,
        response: InterventionResponse? = nil, hold: InterventionHold? = nil
    ) {
        self.kind = kind
        self.template = template
        self.shownAt = shownAt
        self.response = response
        self.hold = hold
    }

    /// How far a caller's clock may run ahead of or behind the store's: a time is sane from the
    /// evaluation's creation minus this to the report's receipt plus this.
    public static let clockTolerance: Milliseconds = 30_000

    /// The first of this intervention's times that falls outside the evaluation's life
    /// (`createdAt`, with the tolerance, to `reportedAt`), or a hold that ends before it starts,
    /// as the member's path under `intervention`; nil when every time is sane.
    public func insaneTime(createdAt: Milliseconds, reportedAt: Milliseconds) -> String? {
        let sane = (createdAt - Self.clockTolerance)...(reportedAt + Self.clockTolerance)
        if let shownAt, !sane.contains(shownAt) { return "shownAt" }
        guard let hold else { return nil }
        if !sane.contains(hold.startedAt) { return "hold.startedAt" }
        if !sane.contains(hold.endedAt) || hold.endedAt < hold.startedAt { return "hold.endedAt" }
        if !sane.contains(hold.toldAt) { return "hold.toldAt" }
        return nil
    }
}

/// Why a report's intervention was refused by the store (docs/api.md, consumption report).
public enum InterventionRefusal: Sendable, Equatable {
    /// No such template id and version in the catalogue of the caller's tenant and environment.
    case unknownTemplate
    /// The template is of another kind than the report's intervention.
    case kindMismatch(template: InterventionKind)
    /// The template was retired before the intervention was shown.
    case retired
    /// A time before the evaluation or after the report (the member's path), or a hold ending before it starts.
    case timeOutOfRange(field: String)
}

/// One entry of a tenant's intervention catalogue (docs/api.md "Intervention catalogue").
/// Entries are never changed once added: a new wording is a new version, an old one is retired,
/// so a report (and, later, an evidence bundle) always finds the entry it named.
public struct InterventionTemplate: Sendable, Equatable {
    public var tenant: String
    public var environment: Environment
    public var id: String
    public var version: Int
    public var kind: InterventionKind
    /// Distinct, in the vocabulary's order.
    public var scamTypes: [ScamType]
    public var description: String
    public var createdAt: Milliseconds
    public var retiredAt: Milliseconds?

    public init(
        tenant: String, environment: Environment, id: String, version: Int, kind: InterventionKind,
        scamTypes: [ScamType], description: String, createdAt: Milliseconds, retiredAt: Milliseconds? = nil
    ) {
        self.tenant = tenant
        self.environment = environment
        self.id = id
        self.version = version
        self.kind = kind
        self.scamTypes = ScamType.allCases.filter(scamTypes.contains)
        self.description = description
        self.createdAt = createdAt
        self.retiredAt = retiredAt
    }

    public var reference: TemplateReference { TemplateReference(id: id, version: version) }

    /// The longest description, in characters.
    public static let maxDescription = 200

    /// A description is 1–200 characters on one line, without control characters: what the
    /// template says, for the operator's reading, never about a person.
    public static func isValidDescription(_ text: String) -> Bool {
        let count = text.unicodeScalars.count
        return (1...maxDescription).contains(count)
            && text.unicodeScalars.allSatisfy { !$0.properties.generalCategory.breaksALine }
    }

    /// The same entry: what a repeated `add` compares (the creation time aside).
    public func sameContent(as other: InterventionTemplate) -> Bool {
        tenant == other.tenant && environment == other.environment && id == other.id && version == other.version
            && kind == other.kind && scamTypes == other.scamTypes && description == other.description
    }

    /// Kinds a template may be of: one that shows something (`none` shows nothing).
    public static let kinds = InterventionKind.allCases.filter { $0 != .none }

    /// The scam types as stored: comma-separated codes.
    public var storedScamTypes: String { scamTypes.map(\.rawValue).joined(separator: ",") }

    public static func scamTypes(stored: String) -> [ScamType] {
        stored.split(separator: ",").compactMap { ScamType(rawValue: String($0)) }
    }
}

/// What adding a catalogue entry did.
public enum TemplateAddResult: Sendable, Equatable {
    case added(InterventionTemplate)
    /// The same id and version with the same content was there: nothing changes.
    case unchanged(InterventionTemplate)
    /// The same id and version with other content was there: entries never change.
    case conflict(InterventionTemplate)
}

/// A tenant's intervention catalogue, per environment (docs/api.md "Intervention catalogue").
public protocol InterventionCatalog: Sendable {
    /// The entries of `tenant` in `environment`, by id then version.
    func templates(tenant: String, environment: Environment) throws -> [InterventionTemplate]
    /// Adds `template` unless its id and version are there.
    func add(_ template: InterventionTemplate, completion: @escaping @Sendable (Result<TemplateAddResult, StoreFailure>) -> Void)
    /// Retires one entry at `time` (kept, refused for interventions shown from then on); nil when
    /// there is no such entry; an entry retired before keeps its first time.
    func retire(
        tenant: String, environment: Environment, reference: TemplateReference, at time: Milliseconds,
        completion: @escaping @Sendable (Result<InterventionTemplate?, StoreFailure>) -> Void)
}

extension Unicode.GeneralCategory {
    /// A control character (U+0000–U+001F, U+007F–U+009F) or a line or paragraph separator, as
    /// the document's pattern for a description states it.
    fileprivate var breaksALine: Bool {
        switch self {
        case .control, .lineSeparator, .paragraphSeparator: true
        default: false
        }
    }
}

extension InterventionRefusal {
    /// The refusal of `intervention` against the entry its template names, as stored (nil: no
    /// such entry of the reporter's tenant and environment; unread when it names none), for
    /// an evaluation created at `createdAt` and a report received at `reportedAt`; nil when it
    /// is accepted. Every store applies this one rule.
    public static func check(
        _ intervention: RecordedIntervention, template: (kind: InterventionKind, retiredAt: Milliseconds?)?,
        createdAt: Milliseconds, reportedAt: Milliseconds
    ) -> InterventionRefusal? {
        if let field = intervention.insaneTime(createdAt: createdAt, reportedAt: reportedAt) { return .timeOutOfRange(field: field) }
        guard intervention.template != nil else { return nil }
        guard let stored = template else { return .unknownTemplate }
        if stored.kind != intervention.kind { return .kindMismatch(template: stored.kind) }
        if let retiredAt = stored.retiredAt, let shownAt = intervention.shownAt, shownAt >= retiredAt { return .retired }
        return nil
    }
}

extension RecordedIntervention {
    /// The intervention of a report as its columns store it (docs: migrations 0025): nil when
    /// the report recorded none, or one of a kind this binary does not know.
    public init?(
        storedKind: String?, templateId: String?, templateVersion: Int64?, shownAt: Int64?, response: String?,
        holdStartedAt: Int64?, holdEndedAt: Int64?, holdToldAt: Int64?
    ) {
        guard let storedKind, let kind = InterventionKind(rawValue: storedKind) else { return nil }
        self.init(
            kind: kind,
            template: templateId.flatMap { id in templateVersion.map { TemplateReference(id: id, version: Int($0)) } },
            shownAt: shownAt, response: response.flatMap(InterventionResponse.init(rawValue:)),
            hold: holdStartedAt.flatMap { start in
                holdEndedAt.flatMap { end in holdToldAt.map { InterventionHold(startedAt: start, endedAt: end, toldAt: $0) } }
            })
    }
}
