import HTTPServer
import InsightDomain
import InsightServices
import JSON

/// `/admin/v1/…` (role `admin`): callers and their rate-limit state (`CallerAdminService`).
extension InsightAPIHandler {
    /// `GET /admin/v1/callers`
    func adminCallers(_ exchange: Exchange) throws {
        let callers = try useCases.admin.callers(of: try exchange.authenticated())
        exchange.send(Self.json(200, .object(["callers": .array(callers.map(Self.render))])))
    }

    /// `GET` and `PATCH /admin/v1/callers/{callerId}`
    func adminCaller(_ exchange: Exchange, callerId: String) throws {
        let admin = try exchange.authenticated()
        guard exchange.request.method == "PATCH" else {
            return exchange.send(Self.json(200, Self.render(try useCases.admin.caller(callerId, of: admin))))
        }
        let root = try ObjectReader(try jsonBody(exchange.request), path: "", allowed: ["rate", "burst", "trainingCapture"])
        var rate: Double?
        if let value = root.value("rate") {
            guard case .number(let number) = value, number >= 0.001, number <= 1_000_000 else {
                throw Problem.invalid("rate", "must be a number from 0.001 to 1000000 (evaluations per second)")
            }
            rate = number
        }
        let burst = try root.integer("burst", in: 1...1_000_000).map(Int.init)
        let trainingCapture = try root.bool("trainingCapture")
        guard rate != nil || burst != nil || trainingCapture != nil else {
            throw Problem.invalid("(body)", "must set rate, burst, trainingCapture or several")
        }
        let answered = exchange
        useCases.admin.updateCaller(
            callerId, rate: rate, burst: burst, trainingCapture: trainingCapture, of: admin,
            resume: exchange.resume
        ) { result in
            answered.complete(result) { Self.json(200, Self.render($0)) }
        }
    }

    /// `GET /admin/v1/callers/{callerId}/rate-limit`
    func adminRateLimit(_ exchange: Exchange, callerId: String) throws {
        let state = try useCases.admin.rateLimit(callerId, of: try exchange.authenticated())
        exchange.send(Self.json(200, Self.render(state)))
    }

    /// `POST /admin/v1/callers/{callerId}/rate-limit/reset`
    func adminRateLimitReset(_ exchange: Exchange, callerId: String) throws {
        let answered = exchange
        try useCases.admin.resetRateLimit(callerId, of: try exchange.authenticated(), resume: exchange.resume) { result in
            answered.complete(result) { Self.json(200, Self.render($0)) }
        }
    }

    /// `GET /admin/v1/rate-limits`: every caller of the tenant with its rate limit now, in one
    /// answer (the console's callers page refreshes it every few seconds).
    func adminRateLimits(_ exchange: Exchange) throws {
        let states = try useCases.admin.rateLimits(of: try exchange.authenticated())
        exchange.send(
            Self.json(
                200,
                .object([
                    "callers": .array(
                        states.map { state in
                            .object(["caller": Self.render(state.caller), "rateLimit": Self.render(state)])
                        })
                ])))
    }

    /// `GET /admin/v1/callers/{callerId}/keys`
    func adminCallerKeys(_ exchange: Exchange, callerId: String) throws {
        let keys = try useCases.admin.keys(callerId, of: try exchange.authenticated())
        exchange.send(Self.json(200, .object(["keys": .array(keys.map(Self.render))])))
    }

    /// `POST /admin/v1/callers/{callerId}/keys/{keyId}/revoke`
    func adminKeyRevoke(_ exchange: Exchange, callerId: String, keyId: String) throws {
        let answered = exchange
        try useCases.admin.revokeKey(keyId, of: callerId, by: try exchange.authenticated(), resume: exchange.resume) { result in
            answered.complete(result) { Self.json(200, Self.render($0)) }
        }
    }

    /// A key as the admin API shows it: its id and dates, never its secret or the secret's hash.
    static func render(_ key: StoredKey) -> JSONValue {
        var object = JSONObject()
        object.append("keyId", .string(key.keyId))
        object.append("createdAt", .string(Timestamp.format(key.createdAt)))
        object.append("revokedAt", key.revokedAt.map { .string(Timestamp.format($0)) } ?? .null)
        return .object(object)
    }

    /// A caller as the admin API shows it; `insightctl callers list --json` prints the same.
    public static func render(_ caller: Caller) -> JSONValue {
        .object([
            "callerId": .string(caller.callerId), "name": .string(caller.name), "tenant": .string(caller.tenant),
            "environment": .string(caller.environment.rawValue),
            "roles": .array(caller.roles.sorted().map { .string($0.rawValue) }),
            "rate": .number(caller.rate), "burst": .number(Double(caller.burst)),
            "createdAt": .string(Timestamp.format(caller.createdAt)), "trainingCapture": .bool(caller.trainingCapture)
        ])
    }

    static func render(_ state: CallerAdminService.RateLimitState) -> JSONValue {
        let (view, caller, compliance) = (state.view, state.caller, state.compliance)
        let q = view.quota
        var penalty: JSONObject = [
            "step": .number(Double(q.penaltyStep)), "maxStep": .number(Double(compliance.maxStep)),
            "factor": .number(compliance.factor(step: q.penaltyStep))
        ]
        penalty.append(
            "why",
            .string(
                q.penaltyStep == 0
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
        object.append(
            "policy",
            .object([
                "rate": .number(q.configured.rate), "burst": .number(Double(q.configured.burst)),
                "overdueAllowanceShare": .number(compliance.allowanceShare),
                "overdueAllowanceMinimum": .number(Double(compliance.allowanceMinimum)),
                "floorShare": .number(compliance.floorShare),
                "recoverySeconds": .number(Double(compliance.recoverySeconds))
            ]))
        object.append("penalty", .object(penalty))
        object.append("effectiveRate", .number(q.effective.rate))
        object.append("effectiveBurst", .number(Double(q.effective.burst)))
        object.append("tokens", .number(Double(q.remaining)))
        object.append("window", .object(window))
        object.append("throttled", .object(throttled))
        return .object(object)
    }
}
