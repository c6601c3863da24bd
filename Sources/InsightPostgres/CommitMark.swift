import Foundation
import InsightDomain
import PostgresClient

/// What became of a batch whose connection broke after it was sent.
enum CommitOutcome: Equatable, Sendable {
    /// Committed, and on every synchronous standby (the check's own commit waited for them).
    case committed
    /// Not committed, and it cannot commit any more: it may be sent again.
    case notCommitted
    /// No server that takes writes answered the check in time (the reason, for the log).
    case unknown(String)
}

/// The mark each batch of the writer carries, by which the writer learns whether a batch
/// committed when its connection broke after sending it (the server crashed, or failed over to
/// its standby): the batch's first statement writes the batch's number into the writer's row of
/// `writer_commits` (migration 0020), in the batch's own transaction.
///
/// To learn a lost batch's outcome, the writer connects again (to whichever server takes writes
/// now) and rewrites its row as it is (`check`). That waits for the row's lock, so a batch still
/// running on that server ends first, committed or not; the row then holds the lost batch's
/// number if and only if it committed. The rewrite is itself a commit under
/// `synchronous_commit`, acknowledged only once the synchronous standby holds it, and with it
/// everything committed before it: a batch found committed is durable.
struct CommitMark {
    /// This writer's row: a new one for each writer, so that two instances never share it.
    let writer = UUID().uuidString.lowercased()
    /// The number of the last batch marked.
    private(set) var batch: Int64 = 0

    /// Rows of writers not seen for this long are deleted (writers that crashed; a running writer
    /// rewrites its row with each batch).
    static let staleAfter: Milliseconds = 7 * 86_400_000

    /// The statement that marks the next batch: the first of its pipeline.
    mutating func next(now: Milliseconds) -> WriteStatement {
        batch += 1
        return WriteStatement(
            name: "insightd_mark_batch", sql: Self.markSQL,
            parameters: [.text(writer), .int64(batch), .int64(now)])
    }

    static let markSQL = """
        INSERT INTO writer_commits (writer, batch, committed_at) VALUES ($1::text, $2::bigint, $3::bigint)
        ON CONFLICT (writer) DO UPDATE SET batch = EXCLUDED.batch, committed_at = EXCLUDED.committed_at
        """

    /// The outcome of the last batch marked, asked on `connection` (a new one, to a server that
    /// takes writes). Throws when the server does not answer (the outcome is then unknown); a
    /// batch still running on that server is waited for up to the session's `lock_timeout`.
    func check(on connection: PostgresConnection, now: Milliseconds) throws -> CommitOutcome {
        let marked = try connection.query(Self.checkSQL, [.text(writer), .int64(now)]).first?.int64(0)
        return Self.outcome(marked: marked, lost: batch)
    }

    /// Rewrites the row as it is (a commit, which the synchronous standby acknowledges), or
    /// inserts it with batch 0 when there is none. Either waits for a batch still running on the
    /// server: the update for the row's lock, the insert for the lost batch's own insert of the
    /// row (its first batch's) to commit or roll back.
    static let checkSQL = """
        INSERT INTO writer_commits (writer, batch, committed_at) VALUES ($1::text, 0, $2::bigint)
        ON CONFLICT (writer) DO UPDATE SET batch = writer_commits.batch RETURNING batch
        """

    /// The lost batch `lost` committed if the writer's row holds its number (later batches are
    /// never sent before an earlier one's outcome is known); an earlier number (0: the row was
    /// not there), or no answer row, means it did not.
    static func outcome(marked: Int64?, lost: Int64) -> CommitOutcome {
        guard let marked else { return .notCommitted }
        return marked >= lost ? .committed : .notCommitted
    }

    /// Deletes the row when the writer stops, and the rows of writers that crashed long ago.
    func forget(on connection: PostgresConnection, now: Milliseconds) throws {
        try connection.query(
            "DELETE FROM writer_commits WHERE writer = $1::text OR committed_at < $2::bigint",
            [.text(writer), .int64(now - Self.staleAfter)])
    }

    /// What a job of a lost batch is told once the outcome is known not to allow a resend: an
    /// evaluation that committed needs no answer but success; any other job's answer (a
    /// report's, a label's) was in the results the connection lost, so it is answered
    /// unavailable, and sending it again with the same ids finds what committed (a report's
    /// `204`, a label submission's replay).
    static func answer(_ outcome: CommitOutcome, isEvaluation: Bool) -> Result<Void, StoreFailure> {
        switch outcome {
        case .committed where isEvaluation:
            .success(())
        case .committed:
            .failure(.unavailable("PostgreSQL: the connection was lost after the commit; send it again with the same ids"))
        case .notCommitted:
            .failure(.unavailable("PostgreSQL: the connection was lost before the commit"))
        case .unknown(let reason):
            .failure(
                .unavailable(
                    "PostgreSQL: the connection was lost while committing and no server that takes writes answered since: \(reason)"))
        }
    }
}
