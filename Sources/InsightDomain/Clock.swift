import Dispatch
#if canImport(Glibc)
    import Glibc
#endif

/// Milliseconds since the Unix epoch, the one time unit of the domain and the store.
public typealias Milliseconds = Int64

/// The source of "now", injected so that deadlines and windows are tested without sleeping.
public protocol Clock: Sendable {
    /// The current time.
    func now() -> Milliseconds
    /// Nanoseconds of a clock that never steps, from an arbitrary start: how much time passed,
    /// whatever was done to the wall clock meanwhile.
    func monotonicNanoseconds() -> UInt64
}

extension Clock {
    /// `DispatchTime`'s uptime (CLOCK_MONOTONIC), the clock durations are read from throughout.
    public func monotonicNanoseconds() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
}

/// The real wall clock.
public struct SystemClock: Clock {
    public init() {}

    public func now() -> Milliseconds {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Milliseconds(ts.tv_sec) * 1000 + Milliseconds(ts.tv_nsec) / 1_000_000
    }
}
