import HTTPServer
import InsightDomain
import InsightServices
import JSON

/// `/admin/v1/…` (role `admin`): callers and their rate-limit state.
extension InsightAPIHandler {
    /// The admin behind the request; it sees and changes only its own tenant's callers.
    func admin(_ exchange: Exchange) throws(Problem) -> Caller {
        let caller = try authenticate(exchange)
        return caller.caller
    }

    /// A caller of `tenant`; another tenant's caller is as absent as one that never existed.
    func lookupCaller(_ callerId: String, tenant: String) throws -> Caller {
        let found: Caller?
        do { found = try dependencies.administration.caller(callerId, tenant: tenant) } catch {
            throw Problem(503, .serverError, "Callers cannot be read right now; retry.")
        }
        guard let found else { throw Problem(404, .callerNotFound, "No caller with this id.") }
        return found
    }

    /// `GET /admin/v1/callers`
    func adminCallers(_ exchange: Exchange) throws {
        let admin = try admin(exchange)
        let callers: [Caller]
        do { callers = try dependencies.administration.callers(tenant: admin.tenant) } catch {
            throw Problem(503, .serverError, "Callers cannot be read right now; retry.")
        }
        exchange.send(Self.json(200, .object(["callers": .array(callers.map(Self.render))])))
    }

    /// `GET` and `PATCH /admin/v1/callers/{callerId}`
    func adminCaller(_ exchange: Exchange, callerId: String) throws {
        let admin = try admin(exchange)
        guard exchange.request.method == "PATCH" else {
            return exchange.send(Self.json(200, Self.render(try lookupCaller(callerId, tenant: admin.tenant))))
        }
        let root = try ObjectReader(try jsonBody(exchange.request), path: "", allowed: ["rate", "burst"])
        var rate: Double?
        if let value = root.value("rate") {
            guard case .number(let number) = value, number >= 0.001, number <= 1_000_000 else {
                throw Problem.invalid("rate", "must be a number from 0.001 to 1000000 (evaluations per second)")
            }
            rate = number
        }
        let burst = try root.integer("burst", in: 1...1_000_000).map(Int.init)
        guard rate != nil || burst != nil else { throw Problem.invalid("(body)", "must set rate, burst or both") }
        let answered = exchange
        dependencies.administration.updateQuota(callerId: callerId, tenant: admin.tenant, rate: rate, burst: burst, completion: answered.onLoop { result in
            switch result {
            case .success(let caller?): answered.send(Self.json(200, Self.render(caller)))
            case .success(nil): answered.fail(Problem(404, .callerNotFound, "No caller with this id."))
            case .failure(let failure): answered.fail(Problem.from(failure))
            }
        })
    }

    /// `GET /admin/v1/callers/{callerId}/rate-limit`
    func adminRateLimit(_ exchange: Exchange, callerId: String) throws {
        let admin = try admin(exchange)
        let caller = try lookupCaller(callerId, tenant: admin.tenant)
        exchange.send(Self.json(200, Self.render(dependencies.limiter.view(caller), caller: caller,
                                                 compliance: dependencies.limiter.settings.compliance)))
    }

    /// `POST /admin/v1/callers/{callerId}/rate-limit/reset`: forgives the caller's overdue
    /// reports so far and refills its bucket.
    func adminRateLimitReset(_ exchange: Exchange, callerId: String) throws {
        let admin = try admin(exchange)
        let caller = try lookupCaller(callerId, tenant: admin.tenant)
        let limiter = dependencies.limiter, answered = exchange
        dependencies.administration.resetPenalty(callerId: callerId, tenant: admin.tenant, at: dependencies.clock.now(), completion: answered.onLoop { result in
            switch result {
            case .success(true):
                limiter.reset(callerId: callerId)
                answered.send(Self.json(200, Self.render(limiter.view(caller), caller: caller, compliance: limiter.settings.compliance)))
            case .success(false): answered.fail(Problem(404, .callerNotFound, "No caller with this id."))
            case .failure(let failure): answered.fail(Problem.from(failure))
            }
        })
    }

    /// A caller as the admin API shows it; `insightctl callers list --json` prints the same.
    public static func render(_ caller: Caller) -> JSONValue {
        .object(["callerId": .string(caller.callerId), "name": .string(caller.name), "tenant": .string(caller.tenant),
                 "environment": .string(caller.environment.rawValue),
                 "roles": .array(caller.roles.sorted().map { .string($0.rawValue) }),
                 "rate": .number(caller.rate), "burst": .number(Double(caller.burst)),
                 "createdAt": .string(Timestamp.format(caller.createdAt))])
    }

    static func render(_ view: RateLimitView, caller: Caller, compliance: CompliancePolicy) -> JSONValue {
        let q = view.quota
        var penalty: JSONObject = ["step": .number(Double(q.penaltyStep)), "maxStep": .number(Double(compliance.maxStep)),
                                   "factor": .number(compliance.factor(step: q.penaltyStep))]
        penalty.append("why", .string(q.penaltyStep == 0
            ? "Overdue reports (\(view.stats.overdue)) are within the allowance (\(view.allowance))."
            : "\(view.stats.overdue) overdue reports in the window exceed the allowance of \(view.allowance)."))
        var throttled: JSONObject = ["count": .number(Double(view.throttledCount))]
        throttled.append("lastThrottledAt", view.lastThrottledAt.map { .string(Timestamp.format($0)) } ?? .null)
        throttled.append("lastReason", view.lastThrottleReason.map { .string($0.rawValue) } ?? .null)
        var window: JSONObject = ["seconds": .number(Double(compliance.windowSeconds))]
        window.append("evaluations", .number(Double(view.stats.evaluations)))
        window.append("onTime", .number(Double(view.stats.onTime)))
        window.append("late", .number(Double(view.stats.late)))
        window.append("overdue", .number(Double(view.stats.overdue)))
        window.append("pending", .number(Double(view.stats.pending)))
        window.append("overdueAllowance", .number(Double(view.allowance)))
        window.append("countedAt", view.statsAsOf.map { .string(Timestamp.format($0)) } ?? .null)
        var object = JSONObject()
        object.append("callerId", .string(caller.callerId))
        object.append("environment", .string(caller.environment.rawValue))
        object.append("policy", .object(["rate": .number(q.configured.rate), "burst": .number(Double(q.configured.burst)),
                                         "overdueAllowanceShare": .number(compliance.allowanceShare),
                                         "overdueAllowanceMinimum": .number(Double(compliance.allowanceMinimum)),
                                         "floorShare": .number(compliance.floorShare),
                                         "recoverySeconds": .number(Double(compliance.recoverySeconds))]))
        object.append("penalty", .object(penalty))
        object.append("effectiveRate", .number(q.effective.rate))
        object.append("effectiveBurst", .number(Double(q.effective.burst)))
        object.append("tokens", .number(Double(q.remaining)))
        object.append("window", .object(window))
        object.append("throttled", .object(throttled))
        return .object(object)
    }
}
