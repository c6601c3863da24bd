/// What an evaluation asks of the rate limits and of velocity before its insights are answered,
/// in one question: may the caller make this request (a token of its quota), may this device
/// evaluate now (its hourly limit), may each insight that will consult a model take a unit of its
/// type's quota, and what does velocity know of the subject.
/// With state in memory the parts are separate calls (`SeparateCallsGate`); with state shared in
/// Redis they are one script, one round trip (InsightRedis's `RedisEvaluationGate`).
public protocol EvaluationGate: Sendable {
    /// Asks `request`. State in memory answers at once (and `answered` is not called); a shared
    /// backend answers nil and calls `answered` exactly once, later, on a thread of its own, so
    /// that no event loop waits for it.
    func pass(_ request: GateRequest, answered: @escaping @Sendable (GateAnswer) -> Void) -> GateAnswer?
    /// The answer when the gate gives it without waiting (state in memory); nil when only `pass`
    /// can (a shared backend). Asked first, so that an evaluation answered at once builds no
    /// continuation for a later answer (a closure holding the evaluation in progress).
    func answerAtOnce(_ request: GateRequest) -> GateAnswer?
}

extension EvaluationGate {
    /// A gate answers at once only through `pass` unless it says otherwise.
    public func answerAtOnce(_ request: GateRequest) -> GateAnswer? { nil }
}

public struct GateRequest: Sendable {
    public var caller: Caller
    /// Whether the caller's token for this request is taken here (`RateLimits.admit`).
    public var takesCallerToken: Bool
    public var environment: Environment
    /// The device's keyed hash; nil when the evaluation names no device.
    public var device: [UInt8]?
    /// The type of each insight that will take a unit of quota, in the order they are answered
    /// (a type asked twice takes two units).
    public var insightTypes: [String]
    /// What velocity is asked; nil when it is not asked (its counts are being rebuilt).
    public var velocity: VelocityQuery?

    public init(
        caller: Caller, takesCallerToken: Bool = false, environment: Environment, device: [UInt8]?,
        insightTypes: [String], velocity: VelocityQuery?
    ) {
        self.caller = caller
        self.takesCallerToken = takesCallerToken
        self.environment = environment
        self.device = device
        self.insightTypes = insightTypes
        self.velocity = velocity
    }
}

public struct GateAnswer: Sendable {
    /// The caller's admission when its token was asked (nil otherwise). A throttled caller takes
    /// nothing else: the other fields are then empty.
    public var caller: Admission?
    /// Seconds until the device may evaluate again; nil when it may now. A refused device takes
    /// no insight quota and reads no velocity (the other fields are then empty).
    public var deviceRetryAfter: Int?
    /// Per entry of `GateRequest.insightTypes`: whether its unit of quota was taken.
    public var insightsAdmitted: [Bool]
    /// Velocity's signals; nil when velocity was not asked or could not answer.
    public var signals: VelocitySignals?

    public init(caller: Admission? = nil, deviceRetryAfter: Int?, insightsAdmitted: [Bool], signals: VelocitySignals?) {
        self.caller = caller
        self.deviceRetryAfter = deviceRetryAfter
        self.insightsAdmitted = insightsAdmitted
        self.signals = signals
    }
}

/// The gate as calls on the two ports, one after the other: the in-memory backends answer each
/// in a few hundred nanoseconds, so nothing is gained by asking them at once.
public struct SeparateCallsGate: EvaluationGate {
    public let limits: any RateLimits
    public let velocity: any VelocityState

    public init(limits: any RateLimits, velocity: any VelocityState) {
        self.limits = limits
        self.velocity = velocity
    }

    public func pass(_ request: GateRequest, answered: @escaping @Sendable (GateAnswer) -> Void) -> GateAnswer? {
        pass(request)
    }

    public func answerAtOnce(_ request: GateRequest) -> GateAnswer? { pass(request) }

    /// The answer, at once.
    public func pass(_ request: GateRequest) -> GateAnswer {
        let admission = request.takesCallerToken ? limits.admit(request.caller) : nil
        if case .throttled = admission {
            return GateAnswer(caller: admission, deviceRetryAfter: nil, insightsAdmitted: [], signals: nil)
        }
        if let device = request.device,
            let retryAfter = limits.admitDevice(device, environment: request.environment, caller: request.caller)
        {
            return GateAnswer(caller: admission, deviceRetryAfter: retryAfter, insightsAdmitted: [], signals: nil)
        }
        let admitted = request.insightTypes.map { limits.admitInsight($0, caller: request.caller) }
        return GateAnswer(
            caller: admission, deviceRetryAfter: nil, insightsAdmitted: admitted,
            signals: request.velocity.map { velocity.signals(for: $0) })
    }
}
