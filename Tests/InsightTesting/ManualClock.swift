import InsightDomain
import Synchronization

/// A clock tests move by hand, so that deadlines and windows are checked without sleeping.
/// `advance` is time passing (the wall clock and the monotonic one move together, when forward);
/// `step` sets the wall clock alone, as NTP or an operator would.
public final class ManualClock: Clock {
    private let value: Atomic<Int64>
    private let elapsed = Atomic<UInt64>(1_000_000_000)

    /// A clock reading `start` (default: a fixed instant in 2027).
    public init(_ start: Milliseconds = 1_800_000_000_000) { value = Atomic(start) }

    public func now() -> Milliseconds { value.load(ordering: .relaxed) }

    public func monotonicNanoseconds() -> UInt64 { elapsed.load(ordering: .relaxed) }

    /// Moves the clock (a negative `ms` steps the wall clock back; time that passes never does).
    public func advance(ms: Int64) {
        value.add(ms, ordering: .relaxed)
        if ms > 0 { elapsed.add(UInt64(ms) * 1_000_000, ordering: .relaxed) }
    }

    /// Moves the clock forward by whole seconds.
    public func advance(seconds: Int64) { advance(ms: seconds * 1000) }

    /// Steps the wall clock alone, by `ms` (either way): no time passes.
    public func step(ms: Int64) { value.add(ms, ordering: .relaxed) }
}
