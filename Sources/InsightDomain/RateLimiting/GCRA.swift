/// The generic cell rate algorithm: a token bucket kept as one number, the theoretical
/// arrival time (TAT). `burst` requests may arrive at once; after that one request per
/// `1 / rate` seconds. Exact at the edges because it is pure arithmetic on milliseconds.
public struct GCRA: Sendable, Equatable {
    /// Sustained requests per second.
    public var rate: Double
    /// Requests that may arrive at once.
    public var burst: Int

    public init(rate: Double, burst: Int) {
        precondition(rate > 0 && burst >= 1, "GCRA needs a positive rate and burst")
        self.rate = rate
        self.burst = burst
    }

    /// Milliseconds between requests at the sustained rate.
    public var emissionInterval: Double { 1000 / rate }
    /// The span a full bucket covers, in milliseconds.
    public var capacity: Double { emissionInterval * Double(burst) }
    /// Seconds in which the whole burst refills (the `w` of `RateLimit-Policy`).
    public var windowSeconds: Int { max(1, Int((capacity / 1000).rounded(.up))) }

    /// The outcome of one request.
    public struct Decision: Sendable, Equatable {
        public var allowed: Bool
        /// The TAT to keep. After a refusal it is the stored one as it stands at `now`: unchanged,
        /// unless the clock stepped back (see `current`).
        public var tat: Double
        /// Requests that could still go now.
        public var remaining: Int
        /// Milliseconds until the next request would be allowed (0 when allowed).
        public var retryAfter: Double
        /// Milliseconds until the bucket is full again.
        public var resetAfter: Double
    }

    /// The stored TAT as it stands at `now`. An allowed request leaves the TAT at most one window
    /// (`capacity`) ahead of now, and a policy made stricter since (a reporting penalty) shrinks
    /// the window by less than half, so a TAT more than two windows ahead is no trace of requests:
    /// the wall clock stepped back (NTP, a VM restored from a snapshot), and left alone it would
    /// hold the bucket empty for the whole step (an hour's step, an hour of 429s). Such a bucket
    /// counts as full: at most one burst more than the policy. One to two windows ahead (a policy
    /// made stricter): an empty bucket.
    private func current(_ tat: Double?, now: Double) -> Double {
        guard let tat, tat > now else { return now }
        return tat - now > 2 * capacity ? now : min(tat, now + capacity)
    }

    /// Decides one request arriving at `now` against stored `tat` (nil: a full bucket), taking
    /// `cost` tokens (at least 1, at most `burst`: a dearer request could never go).
    public func decide(now: Double, tat: Double?, cost: Int = 1) -> Decision {
        let start = current(tat, now: now)
        let newTat = start + emissionInterval * Double(min(max(cost, 1), burst))
        let used = newTat - now
        if used <= capacity + 1e-9 {
            return Decision(
                allowed: true, tat: newTat,
                remaining: max(0, Int(((capacity - used) / emissionInterval + 1e-9).rounded(.down))),
                retryAfter: 0, resetAfter: used)
        }
        return Decision(
            allowed: false, tat: start, remaining: 0, retryAfter: used - capacity,
            resetAfter: start - now)
    }

    /// Requests that could go at `now` without changing the state.
    public func available(now: Double, tat: Double?) -> Int {
        let used = current(tat, now: now) - now
        return max(0, Int(((capacity - used) / emissionInterval + 1e-9).rounded(.down)))
    }

    /// The TAT a reset leaves (`RateLimits.reset`): the stored one, but at most one window
    /// (`capacity`) ahead of `now` (an empty bucket of this policy). A penalty's slower policy
    /// can push a TAT further ahead than that, which this policy would read as a clock stepped
    /// back (`current`), a full bucket: the reset would then hand out a whole burst.
    public func resetTat(_ tat: Double?, now: Double) -> Double? {
        guard let tat, tat > now else { return tat }
        return min(tat, now + capacity)
    }
}
