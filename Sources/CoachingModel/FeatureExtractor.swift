import JSON

/// Why an event list or summary was refused. `field` is the path of the offending value in the
/// request (`interaction.events[12].t`, `interaction.summary.keyIntervalCV`), ready for a
/// `contextInvalid` problem; `message` says what is wrong with it.
public struct FeatureExtractionError: Error, Sendable, Equatable, CustomStringConvertible {
    /// JSON-pointer-like path of the offending value.
    public var field: String
    /// What is wrong, in words a client developer can act on.
    public var message: String

    /// An error about `field`.
    public init(field: String, message: String) {
        self.field = field
        self.message = message
    }

    /// `field: message`.
    public var description: String { "\(field): \(message)" }
}

/// Turns `interaction.events` (or `interaction.summary`) plus `interaction.device` into the
/// model's `FeatureVector`. One pass over the events and no Foundation: it runs on the request
/// path.
///
/// training/features.py is a line-by-line port used to train; both compute every feature with
/// integer milliseconds and one final division (or the same sequential sum), so they agree
/// exactly, and the fixture tests hold them to it.
public enum FeatureExtractor {
    /// Most events a session may carry (docs/api.md, `POST /v1/evaluations`).
    public static let maxEvents = 5000
    /// Latest `t` accepted: one hour. A banking or checkout session does not run longer; a
    /// larger `t` is a client bug or hostile input, and refusing it bounds every duration.
    public static let maxSessionMs: Int64 = 3_600_000
    /// In-field keystroke gaps up to this are typing rhythm.
    public static let typingGapMaxMs: Int64 = 1000
    /// In-field gaps above `typingGapMaxMs` and up to this are segment pauses: the pause between
    /// chunks of a number someone reads out. Longer gaps are the person doing something else.
    public static let segmentPauseMaxMs: Int64 = 10_000
    /// Idle gaps between user actions (net of time in background) of at least this are long.
    public static let longPauseMs: Int64 = 5000

    /// Features from a raw event list. Refuses, naming the event, a list that is empty, longer
    /// than `maxEvents`, does not open with `sessionStart` at t = 0, repeats `sessionStart`, or
    /// has a `t` that is negative, past `maxSessionMs`, or earlier than the event before it.
    public static func extract(events: [InteractionEvent], device: DeviceFacts)
        throws(FeatureExtractionError) -> FeatureVector
    {
        try validate(events)
        var state = Sweep()
        for event in events { state.consume(event) }
        return state.finish(endMs: events[events.count - 1].t, device: device)
    }

    /// What is wrong with `value` for `feature`, or nil when it is within the feature's domain.
    private static func problem(_ feature: Feature, _ value: Double) -> String? {
        guard value.isFinite else { return "must be a finite number" }
        switch feature.domain {
        case .seconds:
            guard value >= 0, value <= Double(maxSessionMs) / 1000 else {
                return "must be between 0 and \(maxSessionMs / 1000) seconds"
            }
        case .count:
            guard value >= 0, value <= Double(maxEvents), value == value.rounded() else {
                return "must be a whole number between 0 and \(maxEvents)"
            }
        case .share:
            guard value >= 0, value <= 1 else { return "must be between 0 and 1" }
        case .flag:
            guard value == 0 || value == 1 else { return "must be 0 or 1" }
        case .range(let low, let high):
            guard value >= low, value <= high else { return "must be between \(clean(low)) and \(clean(high))" }
        }
        return nil
    }

    /// Features a client computed on the device (`interaction.summary`), as a dictionary or as the
    /// request's members in order (names unique). A value outside a feature's documented domain
    /// is refused with `interaction.summary.<name>`; an unknown name too when it is plain
    /// (`JSONMemberName.isPlain`), else with `interaction.summary` and its position (a name
    /// that is not plain may carry anything, so it is never repeated);
    /// absent features are missing. Device facts combine with the summary's flags: a true from
    /// either side wins, as it does for events.
    public static func fromSummary<Entries: Sequence>(_ summary: Entries, device: DeviceFacts)
        throws(FeatureExtractionError) -> FeatureVector where Entries.Element == (key: String, value: Double)
    {
        var features = SummaryFeatures()
        for (name, value) in summary { features.append(name: name, value: value) }
        return try fromSummary(features, device: device)
    }

    /// `fromSummary` of members whose names were already looked up.
    public static func fromSummary(_ summary: SummaryFeatures, device: DeviceFacts)
        throws(FeatureExtractionError) -> FeatureVector
    {
        var vector = FeatureVector()
        // Of several bad entries the one first in name order is reported, so the answer does
        // not depend on dictionary order; paths are built only for that one.
        var firstBad: (name: String, field: String, message: String)? = summary.unknown.map {
            JSONMemberName.isPlain($0.name)
                ? ($0.name, "interaction.summary.\($0.name)", "'\($0.name)' is not a known feature; docs/features.md lists them")
                : (
                    $0.name, "interaction.summary",
                    "has a member that is not a known feature (member \($0.position + 1), counting from 1); docs/features.md lists them"
                )
        }
        for (feature, value) in summary.features {
            if let bad = firstBad, bad.name < feature.name { continue }
            if let problem = problem(feature, value) {
                firstBad = (feature.name, "interaction.summary.\(feature.name)", problem)
            } else {
                vector[feature] = value == 0 ? 0 : value  // no -0.0
            }
        }
        if let bad = firstBad {
            throw FeatureExtractionError(field: bad.field, message: bad.message)
        }
        merge(&vector, .activeCall, device.activeCall)
        merge(&vector, .callStartedBeforeSession, device.callStartedBeforeSession)
        merge(&vector, .screenSharing, device.screenSharing)
        merge(&vector, .remoteAccessApp, device.remoteAccessApp)
        // The same implications the event path draws: a call that began before the session is
        // a call; no call at all means none began before the session.
        if vector[.callStartedBeforeSession] == 1 { vector[.activeCall] = 1 }
        if vector[.activeCall] == 0, vector.isMissing(.callStartedBeforeSession) {
            vector[.callStartedBeforeSession] = 0
        }
        return vector
    }

    private static func merge(_ vector: inout FeatureVector, _ feature: Feature, _ fact: Bool?) {
        guard let fact else { return }
        if fact { vector[feature] = 1 } else if vector.isMissing(feature) { vector[feature] = 0 }
    }

    private static func clean(_ x: Double) -> String {
        x == x.rounded() ? String(Int64(x)) : String(x)
    }

    static func validate(_ events: [InteractionEvent]) throws(FeatureExtractionError) {
        guard !events.isEmpty else {
            throw FeatureExtractionError(
                field: "interaction.events",
                message: "is empty; a session starts with a sessionStart event at t = 0")
        }
        guard events.count <= maxEvents else {
            throw FeatureExtractionError(
                field: "interaction.events",
                message: "has \(events.count) events; at most \(maxEvents) are accepted")
        }
        var previous: Int64 = 0
        for (i, event) in events.enumerated() {
            if i == 0 {
                guard event.type == .sessionStart else {
                    throw FeatureExtractionError(
                        field: "interaction.events[0].type",
                        message: "the first event must be sessionStart")
                }
                guard event.t == 0 else {
                    throw FeatureExtractionError(
                        field: "interaction.events[0].t", message: "sessionStart must have t = 0")
                }
            } else if event.type == .sessionStart {
                throw FeatureExtractionError(
                    field: "interaction.events[\(i)].type",
                    message: "a session has exactly one sessionStart")
            }
            guard event.t >= 0 else {
                throw FeatureExtractionError(
                    field: "interaction.events[\(i)].t",
                    message: "must not be negative (milliseconds since sessionStart)")
            }
            guard event.t <= maxSessionMs else {
                throw FeatureExtractionError(
                    field: "interaction.events[\(i)].t",
                    message: "exceeds the session cap of \(maxSessionMs) ms (one hour)")
            }
            guard event.t >= previous else {
                throw FeatureExtractionError(
                    field: "interaction.events[\(i)].t",
                    message: "must not be earlier than the previous event's t (events are in time order)")
            }
            previous = event.t
        }
    }
}

/// The running state of one pass over a validated event list. Mirrors `extract` in
/// training/features.py statement for statement; keep the two in step.
private struct Sweep {
    var userActions = 0
    var keystrokes = 0
    var deletions = 0
    var firstInput: Int64?
    var payeePasted = false
    var amountPasted = false

    // Typing rhythm: consecutive keystrokes in the same field with no run break between.
    var lastKeyT: Int64 = 0
    var lastKeyField: InteractionField?
    var runOpen = false
    var rhythmCount = 0
    var rhythmSum: Int64 = 0
    // Kept for the second pass of the standard deviation (see `finish`).
    var rhythmGaps: [Int64] = []
    var inFieldIntervals = 0
    var segmentPauses = 0
    var segmentSum: Int64 = 0

    var inBackground = false
    var backgroundStart: Int64 = 0
    var backgroundMs: Int64 = 0
    var appSwitches = 0

    var lastActionT: Int64?
    var lastActionBackground: Int64 = 0
    var longPauses = 0
    var longestPause: Int64?

    var lastInputT: Int64?
    var hesitation: Int64?

    var focused: InteractionField?
    var seenFields: UInt8 = 0
    var revisits = 0

    var callEvents = false
    var firstCallEventIsEnd = false
    var shareEvents = false

    var near = false
    var nearStart: Int64 = 0
    var nearMs: Int64 = 0
    var sawProximity = false
    var orientation = 0

    var otpFocusT: Int64?
    var otpDelay: Int64?

    mutating func consume(_ event: InteractionEvent) {
        let t = event.t
        let type = event.type
        let field = event.field
        let backgroundNow = backgroundMs + (inBackground ? t - backgroundStart : 0)

        if type.isUserAction {
            userActions += 1
            if let last = lastActionT {
                let gap = (t - last) - (backgroundNow - lastActionBackground)
                if gap >= FeatureExtractor.longPauseMs { longPauses += 1 }
                if longestPause == nil || gap > longestPause! { longestPause = gap }
            }
            lastActionT = t
            lastActionBackground = backgroundNow
        }

        if type.isInput {
            if firstInput == nil { firstInput = t }
            lastInputT = t
            if field == .otp, let focus = otpFocusT, otpDelay == nil { otpDelay = t - focus }
        }

        if type == .keyDown || type == .delete {
            keystrokes += 1
            if type == .delete { deletions += 1 }
            if runOpen && field == lastKeyField {
                let gap = t - lastKeyT
                inFieldIntervals += 1
                if gap <= FeatureExtractor.typingGapMaxMs {
                    rhythmCount += 1
                    rhythmSum += gap
                    rhythmGaps.append(gap)
                } else if gap <= FeatureExtractor.segmentPauseMaxMs {
                    segmentPauses += 1
                    segmentSum += gap
                }
            }
            lastKeyT = t
            lastKeyField = field
            runOpen = true
        } else if type.breaksTypingRun {
            runOpen = false
        }

        switch type {
        case .paste:
            if field == .payee { payeePasted = true } else if field == .amount { amountPasted = true }
        case .fieldFocus:
            if let field, field != focused {
                if seenFields & field.bit != 0 { revisits += 1 }
                seenFields |= field.bit
                focused = field
            }
            if field == .otp, otpFocusT == nil { otpFocusT = t }
        case .fieldBlur:
            if let field, field == focused { focused = nil }
        case .appBackground:
            if !inBackground {
                inBackground = true
                backgroundStart = t
                appSwitches += 1
            }
        case .appForeground:
            if inBackground {
                inBackground = false
                backgroundMs += t - backgroundStart
            }
        case .callStart, .callEnd:
            if !callEvents {
                callEvents = true
                firstCallEventIsEnd = type == .callEnd
            }
        case .screenShareStart, .screenShareEnd:
            shareEvents = true
        case .proximityNear, .proximityFar:
            if !sawProximity {
                sawProximity = true
                // Far first means the phone was at the ear from the start.
                if type == .proximityFar { nearMs += t }
            }
            if type == .proximityNear && !near {
                near = true
                nearStart = t
            } else if type == .proximityFar && near {
                near = false
                nearMs += t - nearStart
            }
        case .orientationChange:
            orientation += 1
        case .submit:
            if let last = lastInputT { hesitation = t - last }
        default:
            break
        }
    }

    mutating func finish(endMs: Int64, device: DeviceFacts) -> FeatureVector {
        if inBackground { backgroundMs += endMs - backgroundStart }
        if near { nearMs += endMs - nearStart }

        var f = FeatureVector()
        f[.sessionSeconds] = Double(endMs) / 1000.0
        f[.userActionCount] = Double(userActions)
        if let firstInput { f[.firstInputSeconds] = Double(firstInput) / 1000.0 }
        f[.keystrokeCount] = Double(keystrokes)
        if rhythmCount > 0 {
            let mean = Double(rhythmSum) / Double(rhythmCount)
            f[.keyIntervalMeanMs] = mean
            if rhythmCount >= 2 && mean > 0.0 {
                // Two passes (mean, then squared differences in event order), as
                // training/features.py computes it: a one-pass formula differs in the last bits.
                var squares = 0.0
                for gap in rhythmGaps {
                    let d = Double(gap) - mean
                    squares += d * d
                }
                f[.keyIntervalCV] = (squares / Double(rhythmCount)).squareRoot() / mean
            }
        }
        if keystrokes > 0 {
            let bursts = keystrokes - rhythmCount
            f[.meanBurstLength] = Double(keystrokes) / Double(bursts)
            f[.deletionRatio] = Double(deletions) / Double(keystrokes)
        }
        f[.segmentPauseCount] = Double(segmentPauses)
        if inFieldIntervals > 0 {
            f[.segmentPauseShare] = Double(segmentPauses) / Double(inFieldIntervals)
        }
        if segmentPauses > 0 {
            f[.segmentPauseMeanMs] = Double(segmentSum) / Double(segmentPauses)
        }
        f[.longPauseCount] = Double(longPauses)
        if let longestPause { f[.longestPauseSeconds] = Double(longestPause) / 1000.0 }
        if let hesitation { f[.submitHesitationSeconds] = Double(hesitation) / 1000.0 }
        f[.deletionCount] = Double(deletions)
        f[.payeePasted] = payeePasted ? 1 : 0
        f[.amountPasted] = amountPasted ? 1 : 0
        f[.fieldRevisits] = Double(revisits)
        f[.appSwitchCount] = Double(appSwitches)
        f[.backgroundSeconds] = Double(backgroundMs) / 1000.0
        if endMs > 0 {
            f[.backgroundShare] = Double(backgroundMs) / Double(endMs)
            f[.proximityNearShare] = Double(nearMs) / Double(endMs)
        }
        f[.orientationChanges] = Double(orientation)
        if let otpDelay { f[.otpEntryDelaySeconds] = Double(otpDelay) / 1000.0 }

        // A call seen in the events, or a device that says a call is (or was, before the
        // session) active, is a call; only an explicit false is "no call". A "true" from any
        // source wins over a "false".
        let active: Bool?
        if device.activeCall == true || callEvents || device.callStartedBeforeSession == true {
            active = true
        } else if device.activeCall == false {
            active = false
        } else {
            active = nil
        }
        let before: Bool?
        if device.callStartedBeforeSession == true || (callEvents && firstCallEventIsEnd) {
            before = true
        } else if device.callStartedBeforeSession == false || callEvents || active == false {
            before = false
        } else {
            before = nil
        }
        f[.activeCall] = flag(active)
        f[.callStartedBeforeSession] = flag(before)
        let sharing: Bool?
        if device.screenSharing == true || shareEvents {
            sharing = true
        } else if device.screenSharing == false {
            sharing = false
        } else {
            sharing = nil
        }
        f[.screenSharing] = flag(sharing)
        f[.remoteAccessApp] = flag(device.remoteAccessApp)
        return f
    }

    private func flag(_ value: Bool?) -> Double {
        guard let value else { return .nan }
        return value ? 1 : 0
    }
}

extension InteractionEventType {
    /// Something the person did in the app (as opposed to what the phone reported).
    var isUserAction: Bool {
        switch self {
        case .fieldFocus, .fieldBlur, .keyDown, .delete, .paste, .tap, .scroll, .submit: true
        default: false
        }
    }

    /// Text entry: keystrokes, deletions, pastes.
    var isInput: Bool { self == .keyDown || self == .delete || self == .paste }

    /// Events between two keystrokes after which the second starts a new typing run.
    var breaksTypingRun: Bool {
        switch self {
        case .fieldFocus, .fieldBlur, .appBackground, .appForeground, .paste, .submit: true
        default: false
        }
    }
}

/// The members of an `interaction.summary` with their names looked up: the known features in
/// request order (each at most once: the parser refuses repeated names), and of the names that
/// are no feature, the first in name order (the one an error reports).
public struct SummaryFeatures: Sendable {
    public var features: [(Feature, Double)] = []
    /// The first name in name order that is no feature, and its position (from 0) among the
    /// members added by `append(name:value:)`.
    public var unknown: (name: String, position: Int)?
    /// Members added by `append(name:value:)`.
    private var appended = 0

    public init() {}

    /// Adds the member called `name`, the next in the request.
    public mutating func append(name: String, value: Double) {
        if let feature = Feature(name: name) {
            features.append((feature, value))
        } else if unknown.map({ name < $0.name }) ?? true {
            unknown = (name, appended)
        }
        appended += 1
    }
}
