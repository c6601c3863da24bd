import InsightDomain
import InsightServices
import JSON

/// The IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers) and the 429 problems,
/// worded so that a caller can understand and fix its behaviour from the response alone.
enum Throttling {
    /// `RateLimit-Policy` and `RateLimit` for the caller's quota.
    static func headers(_ status: QuotaStatus) -> [(String, String)] {
        [
            ("RateLimit-Policy", item("\"caller\";q=", status.effective.burst, ";w=", status.effective.windowSeconds)),
            ("RateLimit", item("\"caller\";r=", status.remaining, ";t=", status.resetSeconds))
        ]
    }

    /// `first` `a` `second` `b` as one string written in place: these two fields go out with
    /// every evaluation, and string interpolation built each through several appends.
    static func item(_ first: StaticString, _ a: Int, _ second: StaticString, _ b: Int) -> String {
        String(unsafeUninitializedCapacity: first.utf8CodeUnitCount + second.utf8CodeUnitCount + 40) { out in
            var n = 0
            put(first, into: out, at: &n)
            put(a, into: out, at: &n)
            put(second, into: out, at: &n)
            put(b, into: out, at: &n)
            return n
        }
    }

    // The position is passed in, not captured: a nested function that captured it would make
    // the runtime check every access to it (dynamic exclusivity enforcement).
    private static func put(_ literal: StaticString, into out: UnsafeMutableBufferPointer<UInt8>, at n: inout Int) {
        literal.withUTF8Buffer { for byte in $0 { out[n] = byte; n += 1 } }
    }

    private static func put(_ value: Int, into out: UnsafeMutableBufferPointer<UInt8>, at n: inout Int) {
        if value < 0 { out[n] = UInt8(ascii: "-"); n += 1 }
        var magnitude = value.magnitude, digits = 1, scale: UInt = 1
        while magnitude / scale >= 10 { scale *= 10; digits += 1 }
        for _ in 0..<digits {
            out[n] = UInt8(ascii: "0") + UInt8(magnitude / scale)
            magnitude %= scale
            scale /= 10
            n += 1
        }
    }

    static func rate(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(format2(value))
    }

    private static func format2(_ value: Double) -> Double { (value * 100).rounded() / 100 }

    /// The 429 for a caller over its (possibly penalised) rate.
    static func callerProblem(_ throttle: CallerThrottle) -> Problem {
        let (reason, status, retryAfter) = (throttle.reason, throttle.status, throttle.retryAfterSeconds)
        let (view, compliance) = (throttle.view, throttle.compliance)
        let configured = status.configured, effective = status.effective
        var detail: String
        if reason == .reportingPenalty {
            detail =
                "Rate limit exceeded. Your rate is cut from \(rate(configured.rate)) to "
                + "\(rate(effective.rate)) per second (penalty step \(status.penaltyStep) of \(compliance.maxStep)) because "
                + "\(view.stats.overdue) of your \(view.stats.evaluations) evaluations in the last \(compliance.windowSeconds / 60) minutes "
                + "have no consumption report past their reportConsumptionBy, more than the allowance of \(view.allowance). "
                + "Report consumption for every evaluation (POST /v1/evaluations/{eventId}/consumption); the rate recovers "
                + "one step every \(compliance.recoverySeconds) seconds once overdue reports are within the allowance. "
                + "Retry after \(retryAfter) seconds."
        } else {
            detail =
                "Rate limit exceeded: at most \(rate(configured.rate)) requests per second with bursts of "
                + "\(configured.burst) (evaluations, label batches, and subject look-ups and changes draw on one bucket). Retry after \(retryAfter) seconds."
        }
        var problem = Problem(429, .rateLimitExceeded, detail)
        problem.headers = [("Retry-After", String(retryAfter))] + headers(status)
        var extensions = JSONObject()
        extensions.append("reason", .string(reason.rawValue))
        extensions.append("retryAfterSeconds", .number(Double(retryAfter)))
        extensions.append("configuredRate", .number(configured.rate))
        extensions.append("effectiveRate", .number(effective.rate))
        extensions.append("penaltyStep", .number(Double(status.penaltyStep)))
        extensions.append("overdueReports", .number(Double(view.stats.overdue)))
        extensions.append("overdueAllowance", .number(Double(view.allowance)))
        extensions.append("evaluationsInWindow", .number(Double(view.stats.evaluations)))
        problem.extensions = extensions
        return problem
    }

    /// The 429 for a denial the tenant has no room for: no `Retry-After`, since waiting does not
    /// free room (denials expire with retention, or the operator raises the limit).
    static func denialCapacityProblem(capacity: Int) -> Problem {
        var problem = Problem(
            429, .rateLimitExceeded,
            "This tenant holds \(capacity) opt-outs in this environment, the most the operator allows "
                + "(INSIGHTD_MAX_DENIALS_PER_TENANT); no new denial can be recorded until some expire or the "
                + "operator raises the limit.")
        problem.extensions = ["reason": .string(ThrottleReason.denialCapacity.rawValue)]
        return problem
    }

    /// The 429 for a device over its hourly limit.
    static func deviceProblem(retryAfter: Int, perHour: Int) -> Problem {
        var problem = Problem(
            429, .rateLimitExceeded,
            "Too many evaluations for this device: at most \(perHour) per hour. Retry after \(retryAfter) seconds.")
        problem.headers = [
            ("Retry-After", String(retryAfter)),
            ("RateLimit-Policy", "\"device\";q=\(perHour);w=3600"),
            ("RateLimit", "\"device\";r=0;t=\(retryAfter)")
        ]
        problem.extensions = [
            "reason": .string(ThrottleReason.deviceRate.rawValue),
            "retryAfterSeconds": .number(Double(retryAfter))
        ]
        return problem
    }
}
