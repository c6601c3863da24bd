import InsightDomain
import RedisClient

/// What an evaluation asks of Redis before it is answered (`EvaluationGate`), as one script:
/// the caller's token, the device's hourly bucket, a unit of each insight type's quota, and
/// velocity's live entries for the subject. Each script is a command Redis parses and a reply
/// the instance waits for, so the parts go together.
/// `RedisRateLimiter.admitDevice`/`admitInsight` and `RedisVelocity.signals` are the same script
/// with one part.
///
/// A refused caller takes nothing else, and a refused device no insight quota; neither reads
/// velocity (the evaluation is refused). While Redis is unavailable each part falls back as its
/// own call does: the rate limiter's local share, and no velocity signals (counted).
public struct RedisEvaluationGate: EvaluationGate {
    public let limiter: RedisRateLimiter
    public let velocity: RedisVelocity

    public init(limiter: RedisRateLimiter, velocity: RedisVelocity) {
        self.limiter = limiter
        self.velocity = velocity
    }

    /// Queues the script on the link's call thread (`RedisLink.enqueue`), which calls
    /// `answered`; answers at once (asking on this thread) only when the link does not queue it.
    public func pass(_ request: GateRequest, answered: @escaping @Sendable (GateAnswer) -> Void) -> GateAnswer? {
        let (preflight, read) = questions(request)
        let queued = limiter.link.enqueue(preflight.command()) { reply in
            answered(answer(request, read: read, reply: Preflight.decode(reply)))
        }
        return queued ? nil : answer(request, read: read, reply: preflight.run(on: limiter.link))
    }

    /// The answer, asked on this thread (one round trip).
    public func pass(_ request: GateRequest) -> GateAnswer {
        let (preflight, read) = questions(request)
        return answer(request, read: read, reply: preflight.run(on: limiter.link))
    }

    private func questions(_ request: GateRequest) -> (Preflight, VelocityRead?) {
        var preflight = Preflight(callerKey: limiter.callerKey(request.caller.callerId))
        if request.takesCallerToken { preflight.admission = limiter.stepArguments(request.caller) }
        if let device = request.device { preflight.device = limiter.devicePart(device, environment: request.environment) }
        preflight.insights = request.insightTypes.map { limiter.insightPart($0, caller: request.caller) }
        preflight.lifetime = limiter.callerLifetime
        let read = request.velocity.map(velocity.read(for:))
        preflight.velocity = read
        return (preflight, read)
    }

    /// Each part's verdict from the script's reply, or from its fallback when Redis did not answer.
    private func answer(_ request: GateRequest, read: VelocityRead?, reply: PreflightReply?) -> GateAnswer {
        let admission = request.takesCallerToken ? limiter.callerVerdict(reply, caller: request.caller) : nil
        if case .throttled = admission {
            return GateAnswer(caller: admission, deviceRetryAfter: nil, insightsAdmitted: [], signals: nil)
        }
        if let device = request.device,
            let retryAfter = limiter.deviceVerdict(reply, device: device, environment: request.environment, caller: request.caller)
        {
            return GateAnswer(caller: admission, deviceRetryAfter: retryAfter, insightsAdmitted: [], signals: nil)
        }
        return GateAnswer(
            caller: admission, deviceRetryAfter: nil,
            insightsAdmitted: limiter.insightVerdicts(reply, types: request.insightTypes, caller: request.caller),
            signals: read.map { velocity.signals($0, reply: reply) })
    }
}

/// One evaluation's questions to Redis, built by the rate limiter (the caller's token, device,
/// insight quotas) and velocity (the read), sent as one `PreflightScript`.
struct Preflight {
    /// The caller's hash: its bucket, throttling counts and insight quotas live there. Not read
    /// when nothing of the caller is asked.
    var callerKey: RedisArgument
    /// The caller's step arguments (`RedisRateLimiter.stepArguments`) when its token is taken here.
    var admission: [RedisArgument]?
    var device: (key: RedisArgument, limit: GCRA)?
    var insights: [(field: String, quota: GCRA)] = []
    /// How long the caller's hash lives after this write.
    var lifetime: Int64 = 0
    var velocity: VelocityRead?

    init(callerKey: RedisArgument) { self.callerKey = callerKey }

    /// The answer of the script, asked on this thread; nil when Redis did not answer (or
    /// answered something else).
    func run(on link: RedisLink) -> PreflightReply? {
        let command = command()
        return Self.decode(link.perform { connection throws(RedisError) in try connection.command(command) })
    }

    /// The script with this evaluation's keys and arguments.
    func command() -> RedisCommand {
        var keys: [RedisArgument] = [callerKey, device?.key ?? callerKey]
        var arguments: [RedisArgument] = []
        arguments.reserveCapacity(10 + 3 * insights.count + (admission?.count ?? 0))
        if let device {
            arguments += [number(device.limit.rate), RedisArgument(device.limit.burst)]
        } else {
            arguments += ["", ""]
        }
        let velocityAsked = velocity.map { !$0.keys.isEmpty } ?? false
        // Where the caller's and velocity's arguments begin (1-based, as ARGV; 0: not asked).
        let admissionStart = admission == nil ? 0 : 7 + 3 * insights.count
        let velocityStart = velocityAsked ? 7 + 3 * insights.count + (admission?.count ?? 0) : 0
        arguments += [
            RedisArgument(lifetime), RedisArgument(insights.count), RedisArgument(admissionStart),
            RedisArgument(velocityStart)
        ]
        for insight in insights {
            arguments += [RedisArgument("i:" + insight.field), number(insight.quota.rate), RedisArgument(insight.quota.burst)]
        }
        if let admission { arguments += admission }
        if let velocity, velocityAsked {
            keys += velocity.keys
            arguments += [
                RedisArgument(velocity.accounts.count), RedisArgument(velocity.devices.count),
                RedisArgument(velocity.counterparties.count), RedisArgument(VelocityWindow.week.milliseconds)
            ]
        }
        return RedisCommand.script(PreflightScript.script, keys: keys, arguments: arguments)
    }

    /// The script's reply read; nil when there is none or it is not the script's (an error).
    static func decode(_ reply: RedisReply?) -> PreflightReply? {
        guard let parts = reply?.elements, parts.count == 5, let allowed = parts[0].integer,
            let retry = parts[1].string.flatMap(Double.init), let admitted = parts[2].elements,
            let signals = parts[3].elements, let caller = parts[4].elements
        else { return nil }
        return PreflightReply(
            caller: caller, deviceAllowed: allowed == 1, deviceRetryMilliseconds: retry,
            insightsAdmitted: admitted.map { $0.integer == 1 }, signals: signals)
    }

    private func number(_ value: Double) -> RedisArgument { RedisArgument("\(value)") }
}

struct PreflightReply {
    /// The caller's admission as `RateLimitScripts.admit` answers it; empty when not asked.
    var caller: [RedisReply]
    var deviceAllowed: Bool
    var deviceRetryMilliseconds: Double
    /// Empty when the caller or the device was refused.
    var insightsAdmitted: [Bool]
    /// `{now, entries…}` as `RedisVelocity.signals` reads them; empty when not asked or refused.
    var signals: [RedisReply]
}

/// The keys and counts of a velocity read (`RedisVelocity.read(for:)`).
struct VelocityRead {
    let query: VelocityQuery
    let accounts: [UInt64]
    let devices: [UInt64]
    let counterparties: [UInt64]
    /// The account sets, the device sets, then each counterparty's set and coached hash.
    let keys: [RedisArgument]
}

enum PreflightScript {
    /// KEYS[1] the caller's hash, KEYS[2] the device's bucket (the caller's hash again when there
    /// is no device), then the velocity keys (`VelocityRead.keys`). ARGV[1] the device's rate
    /// ('' when there is no device), [2] its burst, [3] the caller hash's lifetime, [4] the number
    /// n of insight quotas, [5] where the caller's arguments begin (as `caller_state`; 0 when its
    /// token is not taken here), [6] where velocity's begin (0 when velocity is not asked), then
    /// per quota its field, rate and burst; velocity's are the number of account, device and
    /// counterparty keys and the week in ms. Answers {device allowed, its retry-after in ms, {each
    /// quota taken: 1 or 0}, {now, per account set its members and scores, per device set the
    /// same, per counterparty member, score and coached time ('' when none)}, the caller's
    /// admission as `admit` answers it ({} when not asked)}. A refused caller answers
    /// {1, '0', {}, {}, admission} and takes nothing else; a refused device {0, retry, {}, {},
    /// admission}.
    static let script = RedisScript(
        RateLimitScripts.prelude + """
            local now = now_ms()
            local c, v = tonumber(ARGV[5]), tonumber(ARGV[6])
            local admission = {}
            if c > 0 then
              admission = admit_caller(KEYS[1], now, c, 1)
              if admission[1] == 0 then return {1, '0', {}, {}, admission} end
            end
            if ARGV[1] ~= '' then
              local ok, newTat, _, retry = decide(tonumber(ARGV[1]), tonumber(ARGV[2]), now, tonumber(redis.call('GET', KEYS[2])))
              redis.call('SET', KEYS[2], num(newTat), 'PX', math.max(1, math.ceil(newTat - now)))
              if not ok then
                throttled(KEYS[1], now, 'deviceRate')
                -- The caller's hash lives as long after this write as after any (it may be new here).
                redis.call('PEXPIRE', KEYS[1], ARGV[3])
                return {0, num(retry), {}, {}, admission}
              end
            end
            local n = tonumber(ARGV[4])
            local admitted = {}
            for i = 0, n - 1 do
              local a = 7 + 3 * i
              local ok, newTat = decide(tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), now, tonumber(redis.call('HGET', KEYS[1], ARGV[a])))
              redis.call('HSET', KEYS[1], ARGV[a], num(newTat))
              admitted[#admitted + 1] = ok and 1 or 0
            end
            if n > 0 and c == 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
            local out = {}
            if v > 0 then
              local na, nd, nc = tonumber(ARGV[v]), tonumber(ARGV[v + 1]), tonumber(ARGV[v + 2])
              local low = '(' .. (now - tonumber(ARGV[v + 3]))
              out[1] = tostring(now)
              for i = 1, na + nd do
                out[#out + 1] = redis.call('ZRANGEBYSCORE', KEYS[2 + i], low, '+inf', 'WITHSCORES')
              end
              for i = 0, nc - 1 do
                local ckey, hkey = KEYS[3 + na + nd + 2 * i], KEYS[4 + na + nd + 2 * i]
                local live = redis.call('ZRANGEBYSCORE', ckey, low, '+inf', 'WITHSCORES')
                local triples = {}
                for j = 1, #live, 2 do
                  triples[#triples + 1] = live[j]
                  triples[#triples + 1] = live[j + 1]
                  triples[#triples + 1] = redis.call('HGET', hkey, live[j]) or ''
                end
                out[#out + 1] = triples
              end
            end
            return {1, '0', admitted, out, admission}
            """)
}
