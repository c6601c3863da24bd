import Foundation
import InsightDomain
import PostgresClient

/// A few connections for reads, so that request threads do not queue behind one connection.
/// A connection is lent to one thread at a time and comes back after the read; one that broke
/// is dropped, and a new one is made when needed. While the server is unreachable every read
/// fails at once with `StoreFailure.unavailable`: after a failed connection attempt none is
/// tried again for the reconnect delay, so a down server costs a request no wait.
final class PostgresReadPool: @unchecked Sendable {
    // @unchecked: `idle`, `open` and `retryAt` are guarded by `condition`; a connection is used
    // only by the thread it is lent to.
    private let settings: PostgresSettings
    private let condition = NSCondition()
    private var idle: [PostgresConnection] = []
    /// Connections lent or idle.
    private var open = 0
    /// Uptime (ns) before which no connection attempt is made, after one failed.
    private var retryAt: UInt64 = 0
    /// Why the last connection attempt or connection failed (nil once one is made), for the log.
    private var lastFailure: String?

    init(settings: PostgresSettings) { self.settings = settings }

    /// Runs `body` on a connection of the pool. A connection failure, or a server that cannot be
    /// reached, throws `StoreFailure.unavailable`; other errors are rethrown as they are.
    func read<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let connection = try borrow()
        do {
            let value = try body(connection)
            giveBack(connection)
            return value
        } catch let error as PostgresError where error.isConnectionFailure || !connection.isConnected {
            drop(failure: "\(error)")
            throw StoreFailure.unavailable("PostgreSQL: \(error)")
        } catch {
            if connection.isConnected && !connection.inTransaction { giveBack(connection) } else { drop() }
            throw error
        }
    }

    /// True when a connection of the pool answers a query now.
    var isReachable: Bool {
        (try? read { try $0.query("SELECT 1").first?.int64(0) }) == 1
    }

    /// Why the last connection attempt, or the last connection, failed (libpq's words, without
    /// the password), nil once a connection is made: for the line that says the store is unreachable.
    var unreachableReason: String? {
        condition.lock()
        defer { condition.unlock() }
        return lastFailure
    }

    /// Closes the idle connections (those lent are closed when they come back broken, or at deinit).
    func close() {
        condition.lock()
        let closing = idle
        idle.removeAll()
        open -= closing.count
        condition.unlock()
        _ = closing
    }

    private func borrow() throws -> PostgresConnection {
        condition.lock()
        while true {
            while let connection = idle.popLast() {
                // A connection idle while the server went away has heard of it (or of its
                // socket's end): checked without a round trip.
                if connection.poll() {
                    condition.unlock()
                    return connection
                }
                open -= 1
            }
            if open < max(1, settings.readConnections) { break }
            // Every connection is lent: wait for one (reads are short; statement_timeout bounds them).
            if !condition.wait(until: Date(timeIntervalSinceNow: Double(settings.statementTimeoutMilliseconds) / 1000)) {
                condition.unlock()
                throw StoreFailure.unavailable("PostgreSQL: no read connection free")
            }
        }
        let now = DispatchTime.now().uptimeNanoseconds
        if now < retryAt {
            condition.unlock()
            throw StoreFailure.unavailable("PostgreSQL unreachable; retrying shortly")
        }
        open += 1
        condition.unlock()
        do {
            let connection = try settings.connect()
            condition.lock()
            lastFailure = nil
            condition.unlock()
            return connection
        } catch {
            condition.lock()
            lastFailure = "\(error)"
            open -= 1
            retryAt = DispatchTime.now().uptimeNanoseconds + UInt64(settings.reconnectDelaySeconds * 1e9)
            condition.signal()
            condition.unlock()
            throw StoreFailure.unavailable("PostgreSQL: \(error)")
        }
    }

    private func giveBack(_ connection: PostgresConnection) {
        condition.lock()
        idle.append(connection)
        condition.signal()
        condition.unlock()
    }

    private func drop(failure: String? = nil) {
        condition.lock()
        if let failure { lastFailure = failure }
        open -= 1
        condition.signal()
        condition.unlock()
    }
}
