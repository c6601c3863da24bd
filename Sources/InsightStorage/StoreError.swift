/// Failures of the store that an operator must act on. Descriptions are safe to log.
public enum StoreError: Error, CustomStringConvertible, Sendable, Equatable {
    case notFound(String)
    case invalid(String)
    case io(String)

    public var description: String {
        switch self {
        case .notFound(let m), .invalid(let m), .io(let m): return m
        }
    }
}
