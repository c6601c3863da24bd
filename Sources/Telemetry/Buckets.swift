/// Histogram bucket layouts (finite upper bounds; `+Inf` is always added).
public enum Buckets {
    /// Request latency in seconds, 0.5 ms to 10 s: fits an API whose budget is tens of ms.
    public static let requestDuration: [Double] = [
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10
    ]

    /// fsynced commit latency in seconds, 0.25 ms to 2.5 s.
    public static let commitDuration: [Double] = [
        0.00025, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5
    ]

    /// Powers of two from 1 to 1024: batch sizes and other small counts.
    public static let powersOfTwo: [Double] = exponential(start: 1, factor: 2, count: 11)

    /// `count` bounds `start`, `start * factor`, `start * factor²`, …
    /// - Precondition: `start > 0`, `factor > 1`, `count >= 1`.
    public static func exponential(start: Double, factor: Double, count: Int) -> [Double] {
        precondition(start > 0 && factor > 1 && count >= 1, "invalid exponential buckets")
        var bounds: [Double] = []
        var bound = start
        for _ in 0..<count {
            bounds.append(bound)
            bound *= factor
        }
        return bounds
    }

    /// `count` bounds `start`, `start + width`, `start + 2 * width`, …
    /// - Precondition: `width > 0`, `count >= 1`.
    public static func linear(start: Double, width: Double, count: Int) -> [Double] {
        precondition(width > 0 && count >= 1, "invalid linear buckets")
        return (0..<count).map { start + Double($0) * width }
    }
}
