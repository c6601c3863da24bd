// Deterministic, plausible request bodies: the micro-benchmarks parse and score them, and
// `insightd-bench bodies DIR` writes them for the wrk workloads of bench/run.sh, so both
// measure the same bytes.
import CoachingModel

/// SplitMix64: small, fast, and the same sequence on every machine.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }

    /// Uniform integer in `range`.
    mutating func int(_ range: ClosedRange<Int64>) -> Int64 {
        range.lowerBound + Int64(next() % UInt64(range.upperBound - range.lowerBound + 1))
    }

    /// True with probability `p`.
    mutating func chance(_ p: Double) -> Bool { unit() < p }
}

/// A payment session as a phone SDK would report it: the screen opens, the person scrolls and
/// taps, pastes the payee, types the amount in dictated chunks, types a reference with a human
/// rhythm (word gaps, corrections, a thinking pause now and then), switches to a messages app
/// to read the one-time code, types it, hesitates, and submits — during a phone call.
enum SessionGenerator {
    /// Events that are not keystrokes in the reference field.
    private static let fixedEvents = 15 + 6

    /// A session of exactly `count` events (at least 30).
    static func events(count: Int, seed: UInt64 = 0x1A51_6470) -> [InteractionEvent] {
        precondition(count >= 30, "a generated session has at least 30 events")
        var rng = SplitMix64(seed: seed)
        var out: [InteractionEvent] = []
        out.reserveCapacity(count)
        var t: Int64 = 0
        func add(_ type: InteractionEventType, _ field: InteractionField? = nil) {
            out.append(InteractionEvent(t: t, type: type, field: field))
        }
        func wait(_ range: ClosedRange<Int64>) { t += rng.int(range) }
        /// A typing gap: mostly 90–320 ms, sometimes a slower key.
        func keyGap() -> Int64 { rng.chance(0.1) ? rng.int(350...800) : rng.int(90...320) }

        let keystrokes = count - fixedEvents
        let amountKeys = Int(min(8, max(4, keystrokes / 20)))
        let referenceKeys = keystrokes - amountKeys

        add(.sessionStart)
        wait(700...1600); add(.scroll)
        wait(400...1200); add(.tap)
        // Payee: pasted from elsewhere.
        wait(500...1500); add(.fieldFocus, .payee)
        wait(600...1400); add(.paste, .payee)
        wait(300...900); add(.fieldBlur, .payee)
        // Amount: digits in chunks, as when someone reads them out.
        wait(400...1100); add(.fieldFocus, .amount)
        wait(500...1500)
        for k in 0..<amountKeys {
            if k > 0 { t += (k % 3 == 0) ? rng.int(1500...4000) : keyGap() }
            add(.keyDown, .amount)
        }
        wait(300...900); add(.fieldBlur, .amount)
        // Reference: words, corrections and pauses.
        wait(500...1300); add(.fieldFocus, .reference)
        wait(400...1200)
        var wordLeft = rng.int(3...8)
        for k in 0..<referenceKeys {
            if k > 0 {
                if k % 45 == 0 {
                    t += rng.int(2500...7000)  // thinking
                } else if wordLeft == 0 {
                    t += rng.int(250...1200)  // between words
                    wordLeft = rng.int(3...8)
                } else {
                    t += keyGap()
                }
            }
            wordLeft -= 1
            add(rng.chance(0.05) ? .delete : .keyDown, .reference)
        }
        wait(300...900); add(.fieldBlur, .reference)
        // The one-time code, read in another app.
        wait(800...2000); add(.appBackground)
        wait(4000...9000); add(.appForeground)
        wait(300...900); add(.fieldFocus, .otp)
        wait(600...1500)
        for k in 0..<6 {
            if k > 0 { t += keyGap() }
            add(.keyDown, .otp)
        }
        wait(200...600); add(.fieldBlur, .otp)
        wait(1500...6000); add(.submit)
        precondition(out.count == count && t <= FeatureExtractor.maxSessionMs)
        return out
    }

    /// What the device reported alongside the events.
    static let device = DeviceFacts(
        activeCall: true, callStartedBeforeSession: false,
        screenSharing: false)
    static let deviceJSON = #"{"activeCall":true,"callStartedBeforeSession":false,"screenSharing":false}"#

    /// The placeholder the wrk scripts replace per request with a fresh identifier.
    static let idPlaceholder = "@ID@"

    /// The common head of an evaluation body, up to `"interaction":`.
    private static func head(id: String) -> String {
        #"{"requestId":"bench-"# + id + #"","operationCategory":"payment","#
            + #""insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"#
            + #""subject":{"account":"acct-"# + id + #"","device":"dev-"# + id
            + #"","counterparty":"payee-"# + id + #""},"#
    }
    private static let tail = #","transaction":{"newCounterparty":true,"amountBand":"medium"}}"#

    /// A `POST /v1/evaluations` body carrying `events`.
    static func eventsBody(_ events: [InteractionEvent], id: String = idPlaceholder) -> String {
        var body = head(id: id) + #""interaction":{"events":["#
        for (i, e) in events.enumerated() {
            if i > 0 { body += "," }
            body += #"{"t":"# + String(e.t) + #","type":""# + e.type.rawValue + "\""
            if let field = e.field { body += #","field":""# + field.rawValue + "\"" }
            body += "}"
        }
        return body + #"],"device":"# + deviceJSON + "}" + tail
    }

    /// The feature summary the extractor computes for `events`: a W2 body sends what a client
    /// computing features on the device would have sent for the same session.
    static func summary(of events: [InteractionEvent]) throws -> [(String, Double)] {
        let vector = try FeatureExtractor.extract(events: events, device: device)
        var out: [(String, Double)] = []
        for (name, value) in zip(FeatureVector.names, vector.values) where !value.isNaN {
            out.append((name, value))
        }
        return out
    }

    /// A `POST /v1/evaluations` body carrying `interaction.summary`.
    static func summaryBody(_ summary: [(String, Double)], id: String = idPlaceholder) -> String {
        var body = head(id: id) + #""interaction":{"summary":{"#
        for (i, (name, value)) in summary.enumerated() {
            if i > 0 { body += "," }
            let number = value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : "\(value)"
            body += "\"" + name + "\":" + number
        }
        return body + #"},"device":"# + deviceJSON + "}" + tail
    }
}
