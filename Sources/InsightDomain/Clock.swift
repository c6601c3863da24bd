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
    public func monotonicNanoseconds() -> UInt64 { MonotonicClock.nanoseconds() }
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

/// A clock that never steps (CLOCK_MONOTONIC), for durations: the wall clock can be stepped
/// back or forward (NTP, a VM restored), and a duration read from it would be off by the step,
/// or negative.
public enum MonotonicClock {
    /// Nanoseconds since an arbitrary start (the boot).
    public static func nanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
