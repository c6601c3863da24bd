internal import Synchronization

/// Floating-point arithmetic on an `Atomic<UInt64>` holding a `Double`'s bit pattern.
///
/// The Synchronization module has no atomic `Double`; a compare-exchange loop on the bit pattern
/// is what every Prometheus client does (client_golang's `atomicUpdateFloat`). Relaxed ordering:
/// a metric orders nothing else.
enum AtomicDouble {
    /// Adds `delta` to the `Double` stored in `bits`.
    @inline(__always)
    static func add(_ bits: borrowing Atomic<UInt64>, _ delta: Double) {
        var expected = bits.load(ordering: .relaxed)
        while true {
            let desired = (Double(bitPattern: expected) + delta).bitPattern
            let (exchanged, original) = bits.weakCompareExchange(
                expected: expected, desired: desired, ordering: .relaxed)
            if exchanged { return }
            expected = original
        }
    }

    /// The `Double` stored in `bits`.
    @inline(__always)
    static func load(_ bits: borrowing Atomic<UInt64>) -> Double {
        Double(bitPattern: bits.load(ordering: .relaxed))
    }
}
