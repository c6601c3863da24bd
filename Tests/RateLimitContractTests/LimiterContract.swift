import Dispatch
import InsightDomain
import Locking

/// One backend of the rate limits and of the evaluation's gate, fresh for a case: the limits
/// and a gate over those same limits (and a velocity state of the same backend).
struct Limiters {
    var limits: any RateLimits
    var gate: any EvaluationGate
}

/// A broken expectation of the contract: the case's name, the line and what differed.
struct LimiterContractFailure: Error, CustomStringConvertible {
    var description: String
}

/// One behaviour every backend of `RateLimits` and `EvaluationGate` must have.
struct LimiterContractCase: Sendable {
    let name: String
    /// The settings the backend is made with.
    let settings: RateLimitSettings
    let body: @Sendable (Limiters) throws -> Void
}

/// The behaviour of the rate limits (`RateLimits`) and of the evaluation's gate
/// (`EvaluationGate`), stated once for every backend, as `StoreContract` states the stores':
/// the in-memory `RateLimiter` and `SeparateCallsGate` of one instance, and InsightRedis's
/// `RedisRateLimiter` and `RedisEvaluationGate` that several instances share, must answer alike.
/// Rates are slow enough (a token every 1,000 s) that no token comes back during a case, so the
/// answers do not depend on the machine's pace or on whose clock decides.
enum LimiterContract {
    /// Runs every case, each on limiters from `make`; answers the failures, each naming its case
    /// (empty: all passed).
    static func runAll(make: (RateLimitSettings) throws -> Limiters) -> [String] {
        cases.compactMap { contractCase in
            do {
                try contractCase.body(try make(contractCase.settings))
                return nil
            } catch {
                return "\(contractCase.name): \(error)"
            }
        }
    }

    static let cases: [LimiterContractCase] = [
        LimiterContractCase(name: "a caller's burst is admitted, then it is throttled by its rate", settings: .init()) { l in
            let who = caller(rate: 0.001, burst: 3)
            for expected in [2, 1, 0] {
                guard case .allowed(let status) = l.limits.admit(who) else { throw failure("admission refused within the burst") }
                try expect(status.remaining == expected, "remaining \(status.remaining), expected \(expected)")
            }
            guard case .throttled(.callerRate, let status, let retryAfter) = l.limits.admit(who) else {
                throw failure("the request past the burst was not throttled by the caller's rate")
            }
            try expect(status.remaining == 0, "a throttled answer says \(status.remaining) remain")
            try expect(retryAfter >= 1, "retry after \(retryAfter) s")
            let view = l.limits.view(who)
            try expect(view.throttledCount == 1, "throttled count \(view.throttledCount)")
            try expect(view.lastThrottleReason == .callerRate, "last reason \(String(describing: view.lastThrottleReason))")
        },
        LimiterContractCase(name: "a costly request takes several tokens, and a refused one takes none", settings: .init()) { l in
            let who = caller(rate: 0.001, burst: 12)
            guard case .allowed(let first) = l.limits.admit(who, cost: 5) else { throw failure("the first page was refused") }
            try expect(first.remaining == 7, "remaining \(first.remaining) after 5 of 12")
            guard case .allowed(let second) = l.limits.admit(who, cost: 5) else { throw failure("the second page was refused") }
            try expect(second.remaining == 2, "remaining \(second.remaining) after 10 of 12")
            guard case .throttled(.callerRate, _, _) = l.limits.admit(who, cost: 5) else { throw failure("two tokens bought a page") }
            guard case .allowed(let last) = l.limits.admit(who, cost: 2) else { throw failure("the two tokens left were refused") }
            try expect(last.remaining == 0, "remaining \(last.remaining) after 12 of 12")
        },
        LimiterContractCase(name: "the status takes nothing", settings: .init()) { l in
            let who = caller(rate: 0.001, burst: 4)
            for _ in 0..<3 { try expect(l.limits.status(who).remaining == 4, "the status of a full bucket took a token") }
            guard case .allowed = l.limits.admit(who) else { throw failure("the first request was refused") }
            let status = l.limits.status(who)
            try expect(status.remaining == 3, "remaining \(status.remaining) after one of 4")
            try expect(
                status.configured == GCRA(rate: 0.001, burst: 4) && status.effective == status.configured,
                "policies \(status.configured) and \(status.effective)")
            try expect(status.penaltyStep == 0, "step \(status.penaltyStep) without reporting counts")
        },
        LimiterContractCase(name: "a device has its hourly limit per environment", settings: devices(perHour: 2)) { l in
            let who = caller(rate: 100, burst: 100)
            let device = hash("device"), other = hash("other-device")
            try expect(l.limits.admitDevice(device, environment: .production, caller: who) == nil, "first of the hour refused")
            try expect(l.limits.admitDevice(device, environment: .production, caller: who) == nil, "second of the hour refused")
            let retry = l.limits.admitDevice(device, environment: .production, caller: who)
            try expect(
                retry.map { (1700...1800).contains($0) } == true, "retry after \(String(describing: retry)), not 1,800 s of an hour for 2")
            try expect(l.limits.admitDevice(device, environment: .sandbox, caller: who) == nil, "the sandbox shares production's bucket")
            try expect(l.limits.admitDevice(other, environment: .production, caller: who) == nil, "another device shares the bucket")
            let view = l.limits.view(who)
            try expect(view.lastThrottleReason == .deviceRate, "last reason \(String(describing: view.lastThrottleReason))")
            try expect(view.throttledCount == 1, "throttled count \(view.throttledCount)")
        },
        LimiterContractCase(name: "each insight type has its quota, a multiple of the caller's", settings: .init()) { l in
            let who = caller(rate: 0.001, burst: 2)  // factor 2: 4 at once
            let answers = (0..<5).map { _ in l.limits.admitInsight("isLikelyBeingCoached", caller: who) }
            try expect(answers == [true, true, true, true, false], "answers \(answers)")
            try expect(l.limits.admitInsight("isLikelyBeingPhished", caller: who), "another type shares the quota")
            guard case .allowed = l.limits.admit(who) else { throw failure("the insight quota took the caller's tokens") }
        },
        LimiterContractCase(name: "overdue reports cut the rate by penalty steps, and a reset clears them", settings: .init()) { l in
            let who = caller(rate: 10, burst: 10)
            // 1,000 evaluations, 61 overdue: allowance 20, step 3 (x0.125: rate 1.25, burst 1).
            l.limits.update([who.callerId: ReportingStats(evaluations: 1000, onTime: 939, overdue: 61)])
            let status = l.limits.status(who)
            try expect(status.penaltyStep == 3, "step \(status.penaltyStep)")
            try expect(status.effective == GCRA(rate: 1.25, burst: 1), "effective \(status.effective)")
            guard case .allowed = l.limits.admit(who) else { throw failure("the first request was refused") }
            guard case .throttled(.reportingPenalty, let throttled, _) = l.limits.admit(who) else {
                throw failure("the second request was not throttled by the penalty")
            }
            try expect(throttled.penaltyStep == 3, "throttled at step \(throttled.penaltyStep)")
            var view = l.limits.view(who)
            try expect(view.stats.overdue == 61 && view.allowance == 20, "stats \(view.stats), allowance \(view.allowance)")
            try expect(view.lastThrottleReason == .reportingPenalty, "last reason \(String(describing: view.lastThrottleReason))")
            // A relapse raises the step at once; a reset clears the step and the throttling history.
            l.limits.update([who.callerId: ReportingStats(evaluations: 1000, overdue: 1000)])
            try expect(l.limits.status(who).penaltyStep == 4, "a relapse left step \(l.limits.status(who).penaltyStep)")
            l.limits.reset(who)
            view = l.limits.view(who)
            try expect(
                view.quota.penaltyStep == 0 && view.throttledCount == 0,
                "after a reset: step \(view.quota.penaltyStep), throttled \(view.throttledCount)")
            guard case .allowed = l.limits.admit(who) else { throw failure("refused after a reset") }
        },
        LimiterContractCase(name: "a reset gives back no token, however often it comes", settings: .init()) { l in
            // Issue 45: resets in a loop admitted a 0.01/s, burst-3 caller 90 times in 3 s.
            let who = caller(rate: 0.001, burst: 2)
            var admitted = 0
            for _ in 0..<10 {
                if case .allowed = l.limits.admit(who) { admitted += 1 }
                l.limits.reset(who)
            }
            try expect(admitted == 2, "\(admitted) admitted with a reset after each request, with a burst of 2")
            try expect(l.limits.view(who).throttledCount == 0, "the throttling history survived the reset")
            guard case .throttled(.callerRate, _, _) = l.limits.admit(who) else { throw failure("admitted after the resets") }
        },
        LimiterContractCase(name: "a reset after the deepest penalty leaves an empty bucket, not a full one", settings: .init()) { l in
            // At the floor (x0.1: rate 0.0001, burst 1) one request puts the bucket 10,000 s ahead,
            // more than two windows (3,000 s) of the configured policy: read as is, that would be a
            // clock stepped back, a full bucket.
            let who = caller(rate: 0.001, burst: 3)
            l.limits.update([who.callerId: ReportingStats(evaluations: 1000, overdue: 1000)])
            try expect(l.limits.status(who).penaltyStep == 4, "step \(l.limits.status(who).penaltyStep)")
            guard case .allowed = l.limits.admit(who) else { throw failure("the penalised burst of 1 was refused") }
            l.limits.reset(who)
            let status = l.limits.status(who)
            try expect(
                status.penaltyStep == 0 && status.remaining == 0, "after the reset: step \(status.penaltyStep), \(status.remaining) tokens")
            guard case .throttled(.callerRate, _, _) = l.limits.admit(who) else { throw failure("the reset refilled the bucket") }
        },
        LimiterContractCase(
            name: "the gate: the caller's token with the rest, and a throttled caller takes nothing else",
            settings: devices(perHour: 2)
        ) { l in
            let who = caller(rate: 0.001, burst: 2)  // insight quota: 4 at once
            let device = hash("gate-device")
            let query = VelocityQuery(
                environment: .production, accounts: [hash("gate-account")], devices: [device],
                counterparties: [], isPayment: false)
            func pass(token: Bool = true) throws -> GateAnswer {
                try answer(
                    l.gate,
                    GateRequest(
                        caller: who, takesCallerToken: token, environment: .production, device: device,
                        insightTypes: ["isLikelyBeingCoached"], velocity: query))
            }
            let first = try pass()
            guard case .allowed(let status) = first.caller else { throw failure("first pass: \(String(describing: first.caller))") }
            try expect(status.remaining == 1, "remaining \(status.remaining) after the gate's token")
            try expect(first.insightsAdmitted == [true] && first.deviceRetryAfter == nil, "first pass: \(first)")
            try expect(first.signals != nil, "velocity was not read")
            guard case .allowed = l.limits.admit(who) else { throw failure("the second token, taken by admit") }
            let refused = try pass()
            guard case .throttled(.callerRate, _, let retryAfter) = refused.caller else {
                throw failure("third pass: \(String(describing: refused.caller))")
            }
            try expect(retryAfter > 0, "retry after \(retryAfter)")
            try expect(
                refused.deviceRetryAfter == nil && refused.insightsAdmitted == [] && refused.signals == nil,
                "a refused caller took or read something: \(refused)")
            // Only the first pass took the device's token (2 an hour): a pass without the caller's
            // token is admitted once more, then the device is refused.
            let untaxed = try pass(token: false)
            try expect(untaxed.caller == nil, "a pass that asks no token answered \(String(describing: untaxed.caller))")
            try expect(untaxed.deviceRetryAfter == nil && untaxed.insightsAdmitted == [true], "untaxed pass: \(untaxed)")
            try expect(try pass(token: false).deviceRetryAfter != nil, "the device's third evaluation of the hour")
        },
        LimiterContractCase(
            name: "the gate: a refused device takes no insight quota and reads no velocity",
            settings: devices(perHour: 2)
        ) { l in
            let who = caller(rate: 1, burst: 1)  // insight quota: 2 at once
            let device = hash("busy-device")
            let query = VelocityQuery(
                environment: .production, accounts: [hash("a")], devices: [device], counterparties: [],
                isPayment: false)
            func pass() throws -> GateAnswer {
                try answer(
                    l.gate,
                    GateRequest(
                        caller: who, environment: .production, device: device,
                        insightTypes: ["isLikelyBeingCoached"], velocity: query))
            }
            try expect(try pass().insightsAdmitted == [true], "the device's first evaluation")
            try expect(try pass().insightsAdmitted == [true], "the device's second evaluation of the hour")
            for _ in 0..<2 {
                let refused = try pass()
                try expect(
                    refused.deviceRetryAfter.map { (1700...1800).contains($0) } == true,
                    "retry after \(String(describing: refused.deviceRetryAfter))")
                try expect(refused.insightsAdmitted == [] && refused.signals == nil, "a refused device took or read something")
            }
            try expect(l.limits.view(who).lastThrottleReason == .deviceRate, "the caller's throttling does not say why")
            // The two admitted evaluations used the quota up: another device is admitted, with no unit.
            let other = try answer(
                l.gate,
                GateRequest(
                    caller: who, environment: .production, device: hash("other-device"),
                    insightTypes: ["isLikelyBeingCoached"], velocity: nil))
            try expect(other.deviceRetryAfter == nil && other.insightsAdmitted == [false], "another device: \(other)")
        }
    ]

    // MARK: - Helpers

    /// A caller of its own: cases on a shared backend never meet.
    static func caller(rate: Double, burst: Int) -> Caller {
        Caller(
            callerId: "caller_\(UInt64.random(in: 0...UInt64.max))", name: "contract", environment: .production,
            roles: [.evaluate], rate: rate, burst: burst, createdAt: 0)
    }

    /// A subject's keyed hash of its own (32 bytes), for `label`.
    static func hash(_ label: String) -> [UInt8] {
        Array("\(label):\(UInt64.random(in: 0...UInt64.max))".utf8.prefix(32)) + Array(repeating: 7, count: 8)
    }

    static func devices(perHour: Int) -> RateLimitSettings {
        var settings = RateLimitSettings()
        settings.devicePerHour = perHour
        return settings
    }

    /// The gate's answer as an evaluation asks for it: `answerAtOnce` first (state in memory),
    /// else `pass`, at once or (a shared backend) once it calls back, within 5 s.
    static func answer(_ gate: any EvaluationGate, _ request: GateRequest) throws -> GateAnswer {
        if let now = gate.answerAtOnce(request) { return now }
        let later = Locked<GateAnswer?>(nil)
        let answered = DispatchSemaphore(value: 0)
        if let now = gate.pass(
            request,
            answered: { answer in
                later.withLock { $0 = answer }
                answered.signal()
            })
        {
            return now
        }
        guard answered.wait(timeout: .now() + 5) == .success, let answer = later.withLock({ $0 }) else {
            throw failure("the gate did not answer within 5 s")
        }
        return answer
    }

    static func expect(_ condition: Bool, _ message: @autoclosure () -> String, line: UInt = #line) throws {
        if !condition { throw failure(message(), line: line) }
    }

    static func failure(_ message: String, line: UInt = #line) -> LimiterContractFailure {
        LimiterContractFailure(description: "line \(line): \(message)")
    }
}
