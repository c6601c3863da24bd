import Foundation
import InsightDomain
import PostgresClient
import Synchronization

/// Leadership of the periodic jobs through a session-level advisory lock on a connection of its
/// own: the instance whose session holds the lock leads. The server releases the lock when the
/// session ends, so an instance that dies or loses the server loses the lead, and another takes
/// it at its next try.
public final class PostgresJobLeadership: JobLeadership {
    /// The advisory lock key: "insightl" in ASCII (beside the migrator's "insightd").
    public static let lockKey: Int64 = 0x696E_7369_6768_746C

    private struct State {
        var connection: PostgresConnection?
        var leading = false
        var retryAt: UInt64 = 0
    }

    private let settings: PostgresSettings
    private let state = Mutex(State())

    init(settings: PostgresSettings) { self.settings = settings }

    public func tryLead() -> Bool {
        state.withLock { state in
            if let connection = state.connection, !connection.poll() {
                state.connection = nil
                state.leading = false
            }
            if state.connection == nil {
                let now = DispatchTime.now().uptimeNanoseconds
                guard now >= state.retryAt else { return false }
                do {
                    state.connection = try settings.connect()
                } catch {
                    state.retryAt = now + UInt64(settings.reconnectDelaySeconds * 1e9)
                    return false
                }
            }
            guard let connection = state.connection else { return false }
            if state.leading {
                // Still the same session: a round trip confirms the server has not ended it.
                if (try? connection.query("SELECT 1")) != nil { return true }
                state.connection = nil
                state.leading = false
                return false
            }
            do {
                state.leading = try connection.tryAdvisoryLock(Self.lockKey)
            } catch {
                state.connection = nil
                state.leading = false
            }
            return state.leading
        }
    }

    public func release() {
        state.withLock { state in
            if state.leading, let connection = state.connection { _ = try? connection.advisoryUnlock(Self.lockKey) }
            state.leading = false
            state.connection = nil
        }
    }
}
