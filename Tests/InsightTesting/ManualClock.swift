import InsightDomain
import Synchronization

/// A clock tests move by hand, so that deadlines and windows are checked without sleeping.
public final class ManualClock: Clock {
    private let value: Atomic<Int64>

    /// A clock reading `start` (default: a fixed instant in 2027).
    public init(_ start: Milliseconds = 1_800_000_000_000) { value = Atomic(start) }

    public func now() -> Milliseconds { value.load(ordering: .relaxed) }

    /// Moves the clock forward.
    public func advance(ms: Int64) { value.add(ms, ordering: .relaxed) }

    /// Moves the clock forward by whole seconds.
    public func advance(seconds: Int64) { advance(ms: seconds * 1000) }
}
