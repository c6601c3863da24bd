import DaemonTesting

/// DaemonTesting's `captureStandardOutput`, for insightctl's tests in this target, which do not
/// import DaemonTesting (they move to a target of their own).
func captureStandardOutput(_ body: () -> Int32) -> (status: Int32, output: String) {
    DaemonTesting.captureStandardOutput(body)
}
