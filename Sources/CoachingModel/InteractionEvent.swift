/// The event types of `interaction.events` (docs/features.md). Declaration order is the order of
/// the wire contract and of the `eventTypes` table in the model fixtures.
public enum InteractionEventType: String, CaseIterable, Sendable {
    case sessionStart, fieldFocus, fieldBlur, keyDown, delete, paste, tap, scroll, appBackground,
        appForeground, callStart, callEnd, screenShareStart, screenShareEnd, orientationChange,
        proximityNear, proximityFar, submit

    /// The type whose wire name is these UTF-8 bytes, if there is one.
    public init?(utf8 name: UnsafeBufferPointer<UInt8>) {
        guard let type = Self.byName.value(name) else { return nil }
        self = type
    }

    private static let byName = NameTable(allCases.map { (name: $0.rawValue, value: $0) })
}

/// The form fields an event may name. Only the kind of field travels, never its content.
public enum InteractionField: String, CaseIterable, Sendable {
    case payee, amount, reference, otp, password, other

    /// The field whose wire name is these UTF-8 bytes, if there is one.
    public init?(utf8 name: UnsafeBufferPointer<UInt8>) {
        guard let field = Self.byName.value(name) else { return nil }
        self = field
    }

    private static let byName = NameTable(allCases.map { (name: $0.rawValue, value: $0) })

    /// One bit per field, for the small "fields seen" sets of the extractor.
    var bit: UInt8 {
        switch self {
        case .payee: 1
        case .amount: 2
        case .reference: 4
        case .otp: 8
        case .password: 16
        case .other: 32
        }
    }
}

/// One observed event: `t` milliseconds after `sessionStart`, its type and optional field.
public struct InteractionEvent: Sendable, Equatable {
    /// Milliseconds since `sessionStart`.
    public var t: Int64
    /// What happened.
    public var type: InteractionEventType
    /// The field it happened in, for field events (focus, blur, keys, paste, tap).
    public var field: InteractionField?

    /// An event at `t` ms of type `type` in `field`.
    public init(t: Int64, type: InteractionEventType, field: InteractionField? = nil) {
        self.t = t
        self.type = type
        self.field = field
    }
}

/// Platform facts the client reports in `interaction.device`. `nil` means "not reported", which
/// the model treats as missing, never as false.
public struct DeviceFacts: Sendable, Equatable {
    /// A phone call is (or was, during the session) active.
    public var activeCall: Bool?
    /// The call was already running when the session started.
    public var callStartedBeforeSession: Bool?
    /// The screen is being shared or captured.
    public var screenSharing: Bool?
    /// A remote-access app is installed or running (Android accessibility-service check).
    public var remoteAccessApp: Bool?

    /// Facts as reported; omitted ones are unknown.
    public init(
        activeCall: Bool? = nil, callStartedBeforeSession: Bool? = nil,
        screenSharing: Bool? = nil, remoteAccessApp: Bool? = nil
    ) {
        self.activeCall = activeCall
        self.callStartedBeforeSession = callStartedBeforeSession
        self.screenSharing = screenSharing
        self.remoteAccessApp = remoteAccessApp
    }
}
