internal import CLibPQ

/// One query of a pipeline: SQL with parameters, or a prepared statement with parameters.
public struct PostgresQuery: Sendable {
    enum Target: Sendable {
        case sql(String)
        case prepared(PostgresStatement)
    }

    let target: Target
    let parameters: [PostgresValue?]

    /// `sql` (one statement) with `parameters`.
    public static func sql(_ sql: String, _ parameters: [PostgresValue?] = []) -> PostgresQuery {
        PostgresQuery(target: .sql(sql), parameters: parameters)
    }

    /// A statement prepared on the connection that runs the pipeline, with `parameters`.
    public static func prepared(_ statement: PostgresStatement, _ parameters: [PostgresValue?] = []) -> PostgresQuery {
        PostgresQuery(target: .prepared(statement), parameters: parameters)
    }
}

extension PostgresConnection {
    /// Sends every query of `queries` and one sync in pipeline mode, so that the batch costs one
    /// round trip, and returns each query's outcome in order.
    ///
    /// What the caller can rely on:
    /// - Outside a transaction block, the queries up to the sync are one implicit transaction:
    ///   when every outcome is a success they were all committed at the sync (the call returns
    ///   after the commit), and when any failed none of them was (the ones before the failure
    ///   ran, so their outcomes are successes, but their effects were rolled back).
    /// - The first query that fails reports its server error; every later one reports
    ///   `.pipelineAborted` and did not run.
    /// - Inside `transaction { }`, a failure leaves the transaction failed (its COMMIT would
    ///   roll back): throw from the body.
    /// - A pipeline must not contain BEGIN or COMMIT of its own: a failure would skip the COMMIT
    ///   and leave the session in a failed transaction.
    /// - When the connection breaks, the call throws `.connectionLost`: whether the batch was
    ///   committed is then unknown. A pipeline that could not be sent whole was not committed;
    ///   the connection is then unusable (`isConnected` false).
    public func pipeline(_ queries: [PostgresQuery]) throws(PostgresError) -> [Result<PostgresResult, PostgresError>] {
        guard isConnected else { throw connectionError() }
        guard !queries.isEmpty else { return [] }
        // libpq refuses more parameters than the protocol counts; refused before anything is
        // sent, a pipeline never stops half sent for it.
        for query in queries where query.parameters.count > Int(UInt16.max) {
            throw PostgresError(kind: .client, message: "a query has more than \(UInt16.max) parameters")
        }
        guard PQenterPipelineMode(handle) == 1 else { throw connectionError() }
        var outcomes: [Result<PostgresResult, PostgresError>] = []
        outcomes.reserveCapacity(queries.count)
        var synced = false
        do throws(PostgresError) {
            for query in queries { try send(query) }
            guard PQpipelineSync(handle) == 1 else { throw connectionError() }
            synced = true
            for _ in queries { outcomes.append(try nextOutcome()) }
            try awaitSync()
        } catch {
            // Leaving pipeline mode needs every result read up to a sync; a broken connection
            // has none to read. Queries sent without their sync are never synced (that would
            // commit them): the connection is given up, and the server rolls them back when it
            // closes.
            if PQexitPipelineMode(handle) != 1, isConnected {
                if synced { drainPipeline() } else { abandoned = true }
            }
            throw error
        }
        guard PQexitPipelineMode(handle) == 1 else { throw connectionError() }
        return outcomes
    }

    private func send(_ query: PostgresQuery) throws(PostgresError) {
        let encoded = EncodedParameters(query.parameters)
        let sent: Int32
        switch query.target {
        case .sql(let sql):
            sent = encoded.withArrays { types, values, lengths, formats in
                PQsendQueryParams(handle, sql, encoded.count, types, values, lengths, formats, 0)
            }
        case .prepared(let statement):
            precondition(isPrepared(statement), "statement \(statement.name) is not prepared on this connection")
            sent = encoded.withArrays { _, values, lengths, formats in
                PQsendQueryPrepared(handle, statement.name, encoded.count, values, lengths, formats, 0)
            }
        }
        guard sent == 1 else { throw connectionError() }
    }

    /// The outcome of the next query: its results up to the NULL that ends them.
    private func nextOutcome() throws(PostgresError) -> Result<PostgresResult, PostgresError> {
        guard let first = PQgetResult(handle) else { throw connectionError() }
        let result = PostgresResult(handle: first)
        let problem = withExtendedLifetime(result) { self.failure(of: result.handle) }
        // A single statement yields one result; read up to the NULL that ends the query.
        while let extra = PQgetResult(handle) { PQclear(extra) }
        if let failure = problem {
            if failure.isConnectionFailure || !isConnected { throw connectionError() }
            return .failure(failure)
        }
        return .success(result)
    }

    /// Reads the sync's own result, which closes the pipeline's implicit transaction.
    private func awaitSync() throws(PostgresError) {
        guard let sync = PQgetResult(handle) else { throw connectionError() }
        let status = PQresultStatus(sync)
        PQclear(sync)
        guard status == PGRES_PIPELINE_SYNC else {
            throw PostgresError(kind: .client, message: "pipeline: expected the sync, got \(String(cString: PQresStatus(status)))")
        }
    }

    /// After an unexpected result in pipeline mode: reads everything up to the sync, so that
    /// the connection can leave pipeline mode and stay usable.
    private func drainPipeline() {
        var reads = 0
        while isConnected, PQexitPipelineMode(handle) != 1, reads < 1_000_000 {
            if let result = PQgetResult(handle) { PQclear(result) }
            reads += 1
        }
    }
}
