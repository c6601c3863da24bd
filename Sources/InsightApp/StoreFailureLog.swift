import Dispatch
import Synchronization

/// Tells the operator why writes fail, without a line per failed request: when the store
/// refuses writes (a full disk, an I/O error), every caller gets `503` and its request line says
/// only `serverError`; the cause — SQLite's own words — is logged here: at once for the first
/// failure, then at most once per `interval` with the failures since the last line, and once
/// when a commit succeeds after a logged failure. A store that flaps near a full disk thus
/// writes about two lines per interval, not two per flap.
final class StoreFailureLog: Sendable {
    private struct State {
        /// When the last failure line was written (0: never).
        var lastLine: UInt64 = 0
        /// Failures not yet counted in a failure line.
        var unreported = 0
        /// Failures since the last recovery line.
        var sinceRecovery = 0
        /// A failure line was written and no recovery line since.
        var reported = false
    }

    private let logger: Logger
    private let interval: UInt64
    private let state = Mutex(State())

    init(logger: Logger, intervalSeconds: Double = 10) {
        self.logger = logger
        interval = UInt64(intervalSeconds * 1e9)
    }

    /// `count` writes of one commit failed, the first with `error`.
    func failed(_ count: Int, error: String) {
        let now = DispatchTime.now().uptimeNanoseconds
        let report: Int? = state.withLock { state in
            state.unreported += count
            state.sinceRecovery += count
            guard state.lastLine == 0 || now - state.lastLine >= interval else { return nil }
            defer { state.lastLine = now; state.unreported = 0; state.reported = true }
            return state.unreported
        }
        if let report {
            logger.error("store write failed", [("error", .string(error)), ("failedWrites", .number(Double(report)))])
        }
    }

    /// A commit succeeded: after a logged failure, says so once.
    func committed() {
        let failures: Int? = state.withLock { state in
            guard state.reported else { return nil }
            defer { state.reported = false; state.sinceRecovery = 0 }
            return state.sinceRecovery
        }
        if let failures { logger.warning("store writes succeed again", [("failedWrites", .number(Double(failures)))]) }
    }
}
