import Crypto
import HTTPServer
import InsightDomain
import InsightServices
import JSON

extension InsightAPIHandler {
    /// `POST /v1/evaluations`: validate, hash the subject, answer each insight, store the
    /// evaluation, and only after the commit answer `200`.
    func evaluate(_ exchange: Exchange) throws {
        let caller = try authenticate(exchange)
        let limiter = dependencies.limiter
        let quota = try admit(caller.caller)
        var sandboxOverride: SandboxOverride?
        if let header = exchange.request.headers[SandboxOverride.header] {
            guard caller.caller.environment == .sandbox else {
                throw Problem(403, .overrideNotAllowed,
                              "The \(SandboxOverride.header) header is accepted from sandbox credentials only; remove it in production.")
            }
            sandboxOverride = try SandboxOverride.parse(header)
        }
        let request = try EvaluationRequest.decode(body: try jsonBytes(exchange.request))
        if let problem = sandboxOverride?.forcedProblem(quota: quota, view: limiter.view(caller.caller),
                                                        compliance: limiter.settings.compliance) { throw problem }
        let answerer = try InsightAnswerer(registry: dependencies.models.snapshot, interaction: request.interaction,
                                           override: sandboxOverride,
                                           admitInsight: { limiter.admitInsight($0, caller: caller.caller) })
        // Raw identifiers stop here: only their keyed hashes go further. Each identifier is
        // hashed once under every key of the caller's tenant (active first): the active hash is
        // stored, all are looked up.
        let tenant = caller.caller.tenant
        let keyring = dependencies.hashKeys.current(tenant: tenant)
        let accountHashes = request.subject.account.map { keyring.lookupHashes($0, kind: .account) }
        let deviceHashes = request.subject.device.map { keyring.lookupHashes($0, kind: .device) }
        let counterpartyHashes = request.subject.counterparty.map { keyring.lookupHashes($0, kind: .counterparty) }
        let subject = HashedSubject(account: accountHashes?.first, device: deviceHashes?.first,
                                    counterparty: counterpartyHashes?.first, keyId: keyring.active.keyId)
        // A person who switched insights off (and whose cooldown has passed) gets no evaluation.
        let now = dependencies.clock.now()
        for (kind, hashes) in [(AuthorizableKind.account, accountHashes), (.device, deviceHashes)] {
            guard let hashes else { continue }
            if dependencies.denials.isDenied(tenant, caller.caller.environment, kind, hashes: hashes, now: now) {
                throw Problem(403, .denied, "The subject has switched insights off; proceed without them.")
            }
        }
        if let device = subject.device,
           let retryAfter = limiter.admitDevice(device, environment: caller.caller.environment, caller: caller.caller) {
            dependencies.metrics.throttled(.deviceRate)
            throw Throttling.deviceProblem(retryAfter: retryAfter, perHour: limiter.settings.devicePerHour)
        }
        // The evaluation's id, and its insights' ids made from it.
        let ids = EvaluationIdentifiers.make(insights: request.insights.count, milliseconds: now)
        var insights = zip(request.insights, ids.insightIds).map { insight, id in
            answerer.answer(insight, category: request.category, insightId: id)
        }
        // Velocity over hashed identifiers may raise a coaching value by one level, never lower it.
        let query = VelocityQuery(
            environment: caller.caller.environment,
            accounts: accountHashes ?? [], devices: deviceHashes ?? [], counterparties: counterpartyHashes ?? [],
            isPayment: request.category == .payment)
        let (trackedValue, raised) = Self.escalate(&insights, signals: dependencies.velocity.signals(for: query),
                                                   policy: dependencies.escalation, metrics: dependencies.metrics)
        let record = EvaluationRecord(
            eventId: ids.eventId, callerId: caller.caller.callerId, environment: caller.caller.environment,
            category: request.category, createdAt: now,
            reportConsumptionBy: now + dependencies.configuration.consumptionGraceMilliseconds, subject: subject,
            insights: insights, trackedValue: trackedValue, raisedByVelocity: raised)
        let body = Self.render(record, requestId: request.requestId)
        let answered = exchange, metrics = dependencies.metrics, velocity = dependencies.velocity
        dependencies.ledger.record(record, completion: answered.onLoop { result in
            switch result {
            case .success:
                metrics.evaluated(record, tenant: tenant)
                velocity.record(VelocityEvent(environment: record.environment, time: record.createdAt,
                                              account: record.subject.account, device: record.subject.device,
                                              counterparty: record.subject.counterparty,
                                              isPayment: record.category == .payment, value: record.trackedValue,
                                              raisedByVelocity: record.raisedByVelocity))
                answered.send(Self.json(200, bytes: body, headers: Throttling.headers(quota)))
            case .failure(let failure): answered.fail(Problem.from(failure))
            }
        })
    }

    /// Applies the escalation policy to every coaching insight that has a value (a sandbox-forced
    /// value is left as forced). Returns the value velocity tracking records — the highest
    /// final coaching value — and whether velocity raised it.
    static func escalate(_ insights: inout [InsightRecord], signals: VelocitySignals, policy: EscalationPolicy,
                         metrics: APIMetrics) -> (InsightValue?, Bool) {
        var tracked: InsightValue?, raised = false, counted = false
        for i in insights.indices {
            guard insights[i].type == InsightType.isLikelyBeingCoached.rawValue,
                  case .value(let value, let reasons) = insights[i].outcome else { continue }
            // A sandbox-forced value stays as forced, but is tracked like any answer.
            let escalation = reasons.contains(SandboxOverride.reason)
                ? Escalation(value: value) : policy.apply(value, signals: signals)
            if !counted { metrics.velocityFired(escalation); counted = true }
            if escalation.value != value || !escalation.reasons.isEmpty {
                insights[i].outcome = .value(escalation.value, reasons: reasons + escalation.reasons.filter { !reasons.contains($0) })
            }
            if tracked.map({ rank(escalation.value) > rank($0) }) ?? true {
                tracked = escalation.value
                raised = escalation.raised
            }
        }
        return (tracked, raised)
    }

    static func rank(_ value: InsightValue) -> Int { InsightValue.allCases.firstIndex(of: value) ?? 0 }

    /// The answer's bytes, written directly (it is made for every evaluation).
    static func render(_ record: EvaluationRecord, requestId: String?) -> [UInt8] {
        var object = JSONObjectWriter()
        object.member("eventId", record.eventId)
        if let requestId { object.member("requestId", requestId) }
        object.member("environment", record.environment.rawValue)
        object.member("serverTimestamp", timestamp: record.createdAt)
        object.member("reportConsumptionBy", timestamp: record.reportConsumptionBy)
        object.member("insights", objects: record.insights) { object, insight in render(insight, into: &object) }
        return object.bytes()
    }

    static func render(_ insight: InsightRecord, into object: inout JSONObjectWriter) {
        object.member("insightId", insight.insightId)
        object.member("type", insight.type)
        object.member("schemaVersion", Double(insight.schemaVersion))
        if let model = insight.modelVersion { object.member("modelVersion", model) }
        if let newest = insight.newestModelVersion { object.member("newestModelVersion", newest) }
        if let model = insight.modelVersion, let newest = insight.newestModelVersion {
            object.member("isUsingCurrentModel", model == newest)
        }
        switch insight.outcome {
        case .value(let value, let reasons):
            object.member("outcome") { $0.member("value", value.rawValue) }
            object.member("reasons", strings: reasons)
        case .error(let code, let detail):
            object.member("outcome") { outcome in
                outcome.member("error") { error in
                    error.member("code", code.rawValue)
                    error.member("detail", detail)
                }
            }
        }
    }
}
