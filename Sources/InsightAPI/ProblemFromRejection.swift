import InsightDomain
import InsightServices

extension Problem {
    /// The problem answering a use case's refusal: the one place where a domain reason becomes a
    /// status, a code, headers and words.
    init(_ rejection: Rejection) {
        switch rejection {
        case .invalid(let field, let detail):
            self = .invalid(field, detail)
        case .unauthorized(let detail):
            self.init(401, .unauthorized, detail)
            headers = [("WWW-Authenticate", "Bearer realm=\"insightd\"")]
        case .forbidden(let role):
            self.init(403, .forbidden, "This credential lacks the '\(role.rawValue)' role.")
        case .otherEnvironment(let own):
            self.init(
                403, .forbidden,
                "This admin key is of the \(own.rawValue) environment and reads and changes \(own.rawValue) only; use an admin key of the other environment.",
                field: "environment")
        case .credentialsUnavailable:
            self.init(503, .serverError, "Credentials cannot be checked right now; retry.")
            headers = [("Retry-After", "1")]
        case .throttled(let throttle):
            self = Throttling.callerProblem(throttle)
        case .deviceThrottled(let retryAfter, let perHour):
            self = Throttling.deviceProblem(retryAfter: retryAfter, perHour: perHour)
        case .denialCapacity(let capacity):
            self = Throttling.denialCapacityProblem(capacity: capacity)
        case .overrideNotAllowed:
            self.init(
                403, .overrideNotAllowed,
                "The \(SandboxOverride.header) header is accepted from sandbox credentials only; remove it in production.")
        case .forced(let error, let throttle):
            self = Self.forced(error, throttle: throttle)
        case .optedOut:
            self.init(403, .denied, "The subject has switched insights off; proceed without them.")
        case .evaluationNotFound:
            self.init(404, .evaluationNotFound, "No evaluation with this id exists for this caller.")
        case .consumptionConflict(let existing):
            self.init(
                409, .consumptionConflict,
                "A report with status '\(existing.rawValue)' was already recorded for this evaluation.")
        case .interventionRefused(let refusal):
            self = Self.refused(refusal)
        case .templateNotFound:
            self.init(404, .interventionTemplateNotFound, "The catalogue has no template with this id and version.")
        case .templateConflict(let stored):
            self.init(
                409, .interventionTemplateConflict,
                "Template \(stored.id) version \(stored.version) exists with other content; entries never change: add a new version.")
        case .unknownInsightId(let index):
            self = .invalid("insightIdsUsed[\(index)]", "is not an insight of this evaluation")
        case .idempotencyKeyReused:
            self.init(
                422, .idempotencyKeyReused,
                "This Idempotency-Key was used before with a different body; use a new key for a new request.")
        case .requestIdReused:
            self.init(
                422, .idempotencyKeyReused,
                "The same requestId was sent with other bytes; a retry must repeat the first request's bytes exactly (a re-serialized copy of the same JSON differs), a new request takes a new requestId.",
                field: "requestId")
        case .callerNotFound:
            self.init(404, .callerNotFound, "No caller with this id.")
        case .keyNotFound:
            self.init(404, .keyNotFound, "This caller has no key with this id.")
        case .unreadable(let what):
            self.init(503, .serverError, "\(what.rawValue) cannot be read right now; retry.")
        case .store(let failure):
            self = .from(failure)
        }
    }

    /// A report's intervention that the catalogue or the evaluation's times refuse.
    private static func refused(_ refusal: InterventionRefusal) -> Problem {
        switch refusal {
        case .unknownTemplate:
            Problem(
                422, .interventionTemplateUnknown,
                "The catalogue of this tenant and environment has no template with this id and version; add it first (insightctl interventions add).",
                field: "intervention.templateId")
        case .kindMismatch(let kind):
            Problem(
                422, .interventionKindMismatch, "The template is a \(kind.rawValue) template; the intervention's kind must be the same.",
                field: "intervention.kind")
        case .retired:
            Problem(
                422, .interventionTemplateRetired, "The template was retired before the intervention was shown.",
                field: "intervention.templateId")
        case .timeOutOfRange(let field):
            Problem(
                422, .interventionTimeInvalid,
                "Must lie between the evaluation's creation and this report (30 seconds either way for clocks), and a hold must not end before it starts.",
                field: "intervention.\(field)")
        }
    }

    /// What a sandbox caller forced, with the status and headers the real error carries.
    private static func forced(_ error: SandboxOverride.EvaluationError, throttle: CallerThrottle) -> Problem {
        let forced = "Forced by the sandbox \(SandboxOverride.header) header."
        switch error {
        case .rateLimitExceeded:
            var problem = Throttling.callerProblem(throttle)
            problem.detail = "\(forced) \(problem.detail)"
            return problem
        case .serverError:
            var problem = Problem(503, .serverError, "\(forced) The request could not be stored, so nothing was recorded; retry.")
            problem.headers = [("Retry-After", "1")]
            return problem
        case .denied:
            return Problem(403, .denied, "\(forced) The subject has switched insights off.")
        case .contextInvalid:
            return Problem(422, .contextInvalid, "\(forced) The request is invalid.", field: "(sandboxOverride)")
        }
    }
}
