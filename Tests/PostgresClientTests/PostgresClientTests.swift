import Glibc
import PostgresClient
import PostgresTesting
import XCTest

/// The client against a real PostgreSQL 15 (one server for the suite, a database per test).
final class PostgresClientTests: XCTestCase {
    var server: TemporaryPostgres!
    var database: String!

    override func setUpWithError() throws {
        server = try TemporaryPostgres.shared()
        database = try server.createDatabase()
    }

    func connect() throws -> PostgresConnection {
        try server.connect(database: database)
    }

    // MARK: Connecting

    func testRefusedConnectionIsAClearErrorWithoutThePassword() throws {
        let password = "s3cret-Pa55"
        let url = "postgres://insightd:\(password)@127.0.0.1:1/postgres"
        XCTAssertThrowsError(try PostgresConnection(url: url)) { error in
            let error = error as! PostgresError
            XCTAssertEqual(error.kind, .connect)
            XCTAssertTrue(error.isConnectionFailure)
            XCTAssertTrue(error.description.contains("127.0.0.1"), error.description)
            XCTAssertTrue(error.description.contains("refused"), error.description)
            XCTAssertFalse(error.description.contains(password), error.description)
        }
    }

    func testAMalformedURLNeverEchoesItsPassword() throws {
        // libpq quotes the token it cannot percent-decode, which here is the password.
        for password in ["se%ZZcret", "p%41ss%zz"] {
            let url = "postgres://insightd:\(password)@127.0.0.1:\(server.port)/postgres"
            XCTAssertThrowsError(try PostgresConnection(url: url)) { error in
                let error = error as! PostgresError
                XCTAssertEqual(error.kind, .connect)
                XCTAssertFalse(error.message.isEmpty)
                XCTAssertFalse(error.description.contains(password), error.description)
                XCTAssertFalse(error.description.contains("cret"), error.description)
            }
        }
    }

    /// A generated password may hold any reserved character. Percent-encoded, each connects;
    /// written as is, each either connects (the characters RFC 3986 allows in a password) or is
    /// refused before libpq reads it (those it does not: libpq would take a piece of the password
    /// for the host, port or database and quote it), and no refusal shows any piece of it.
    func testPasswordsHoldingEachReservedCharacter() throws {
        let admin = try connect()
        let pieces = ["Qx7", "Zk4", "Wm2"]
        let allowedAsIs = Set("!$&'()*+,;=:")
        for (n, character) in ":/?#[]@!$&'()*+,;=% \"".enumerated() {
            let password = pieces.joined(separator: String(character))
            let role = "reserved_\(n)"
            try admin.execute("CREATE ROLE \(role) LOGIN PASSWORD '\(password.replacingOccurrences(of: "'", with: "''"))'")
            let escaped = password.utf8.map { byte -> String in
                let c = Character(UnicodeScalar(byte))
                return c.isLetter || c.isNumber ? String(c) : "%" + String(byte, radix: 16, uppercase: true)
            }.joined()
            let connected = try PostgresConnection(url: "postgres://\(role):\(escaped)@127.0.0.1:\(server.port)/\(database!)")
            XCTAssertEqual(try connected.query("SELECT current_user::text")[0].text(0), role)
            let asIs = "postgres://\(role):\(password)@127.0.0.1:\(server.port)/\(database!)"
            if allowedAsIs.contains(character) {
                XCTAssertNoThrow(try PostgresURL(parsing: asIs), "\(character)")
                XCTAssertEqual(try PostgresURL(parsing: asIs).password, password)
                XCTAssertNoThrow(try PostgresConnection(url: asIs), "a password holding \(character) as is")
                continue
            }
            XCTAssertThrowsError(try PostgresURL(parsing: asIs), "\(character)") { error in
                XCTAssertEqual(error as? PostgresURL.Problem, .unescapedUserInformation)
            }
            XCTAssertThrowsError(try PostgresConnection(url: asIs), "a password holding \(character) as is") { error in
                let text = "\(error)"
                XCTAssertTrue(text.contains("percent-encoded"), text)
                for piece in pieces { XCTAssertFalse(text.contains(piece), "\(character): \(text)") }
            }
        }
    }

    /// Whatever libpq says of a connection, the URL's password is cut out of it.
    func testLibpqMessagesAreRedacted() throws {
        // A well-formed URL whose password is also the name of the database: the server's
        // "database does not exist" names it, and it comes back redacted.
        let url = "postgres://\(server.user):\(server.password)@127.0.0.1:\(server.port)/\(server.password)"
        XCTAssertThrowsError(try PostgresConnection(url: url)) { error in
            XCTAssertTrue("\(error)".contains("[redacted]"), "\(error)")
            XCTAssertFalse("\(error)".contains(server.password), "\(error)")
        }
    }

    func testAWrongPasswordIsRefused() throws {
        let url = "postgres://insightd:wrong-password@127.0.0.1:\(server.port)/postgres"
        XCTAssertThrowsError(try PostgresConnection(url: url)) { error in
            let error = error as! PostgresError
            XCTAssertEqual(error.kind, .connect)
            XCTAssertTrue(error.message.contains("password authentication failed"), error.message)
            XCTAssertFalse(error.description.contains("wrong-password"), error.description)
        }
    }

    // MARK: Values

    func testEveryParameterKindRoundTripsIncludingNull() throws {
        let db = try connect()
        try db.execute("CREATE TABLE t (s text, i bigint, d double precision, b bytea, f boolean)")
        let values: [[PostgresValue?]] = [
            ["héllo wörld ✓ 🌍 中文", .int64(Int64.max), 2.5, .bytea([0, 1, 255]), true],
            ["", .int64(Int64.min), -0.1, .bytea([]), false],
            [nil, nil, nil, nil, nil],
            ["x", 0, .double(.infinity), .bytea([92, 120]), nil]
        ]
        for row in values { try db.query("INSERT INTO t VALUES ($1, $2, $3, $4, $5)", row) }
        let rows = try db.query("SELECT s, i, d, b, f FROM t")
        XCTAssertEqual(rows.count, 4)
        XCTAssertEqual(rows[0].text(0), "héllo wörld ✓ 🌍 中文")
        XCTAssertEqual(rows[0].int64(1), Int64.max)
        XCTAssertEqual(rows[0].double(2), 2.5)
        XCTAssertEqual(rows[0].bytea(3), [0, 1, 255])
        XCTAssertEqual(rows[0].bool(4), true)
        XCTAssertEqual(rows[1].text(0), "")
        XCTAssertFalse(rows[1].isNull(0))
        XCTAssertEqual(rows[1].int64(1), Int64.min)
        XCTAssertEqual(rows[1].double(2), -0.1)
        XCTAssertEqual(rows[1].bytea(3), [])
        XCTAssertEqual(rows[1].bool(4), false)
        for column in 0..<5 {
            XCTAssertTrue(rows[2].isNull(column))
            XCTAssertNil(rows[2].text(column))
        }
        XCTAssertNil(rows[2].int64(1))
        XCTAssertNil(rows[2].bytea(3))
        XCTAssertEqual(rows[3].double(2), .infinity)
        XCTAssertEqual(rows[3].bytea(3), [92, 120])
        XCTAssertFalse(rows[3].isNull(1))
        XCTAssertEqual(rows[3].int64(1), 0)
        // Parameters carry their types: a bare $n reads back as what was sent.
        let typed = try db.query(
            "SELECT $1, $2, $3, $4, pg_typeof($2)::text, pg_typeof($3)::text",
            [.int64(-42), .double(1e-300), .bool(true), .double(.nan)])
        XCTAssertEqual(typed[0].int64(0), -42)
        XCTAssertEqual(typed[0].double(1), 1e-300)
        XCTAssertEqual(typed[0].bool(2), true)
        XCTAssertEqual(typed[0].double(3)?.isNaN, true)
        XCTAssertEqual(typed[0].text(4), "double precision")
        XCTAssertEqual(typed[0].text(5), "boolean")
        // A column of another type answers nil from a typed accessor.
        XCTAssertNil(rows[0].int64(0))
        XCTAssertNil(rows[0].bool(0))
    }

    func testByteaCarriesEveryByteValue() throws {
        let db = try connect()
        try db.execute("CREATE TABLE blobs (id bigint PRIMARY KEY, b bytea NOT NULL)")
        let every = (0...255).map { UInt8($0) }
        let reversed = Array(every.reversed())
        try db.query("INSERT INTO blobs VALUES (1, $1), (2, $2)", [.bytea(every), .bytea(reversed)])
        let rows = try db.query("SELECT b, length(b), get_byte(b, 0) FROM blobs ORDER BY id")
        XCTAssertEqual(rows[0].bytea(0), every)
        XCTAssertEqual(rows[0].int64(1), 256)
        XCTAssertEqual(rows[0].int64(2), 0)
        XCTAssertEqual(rows[1].bytea(0), reversed)
        // The server compares what it stored, not a text form of it.
        let found = try db.query("SELECT id FROM blobs WHERE b = $1", [.bytea(every)])
        XCTAssertEqual(found.map { $0.int64(0) }, [1])
    }

    func testTextParametersBindToOtherTextInputTypes() throws {
        let db = try connect()
        try db.execute("CREATE TABLE docs (id uuid PRIMARY KEY, body jsonb, at timestamptz)")
        try db.query(
            "INSERT INTO docs VALUES ($1, $2, $3)",
            ["0191d0c8-5a4e-7000-8000-000000000000", "{\"a\": [1, 2]}", "2027-01-15T10:00:00Z"])
        let row = try db.query("SELECT body->'a'->>1, extract(epoch FROM at)::bigint FROM docs")[0]
        XCTAssertEqual(row.text(0), "2")
        XCTAssertEqual(row.int64(1), 1_800_007_200)
    }

    // MARK: Errors

    func testServerErrorsCarryTheirSQLState() throws {
        let db = try connect()
        try db.execute("CREATE TABLE u (k text CONSTRAINT u_key PRIMARY KEY)")
        try db.query("INSERT INTO u VALUES ($1)", ["private-value"])
        XCTAssertThrowsError(try db.query("INSERT INTO u VALUES ($1)", ["private-value"])) { error in
            let error = error as! PostgresError
            XCTAssertEqual(error.kind, .server)
            XCTAssertEqual(error.sqlState, "23505")
            XCTAssertTrue(error.isUniqueViolation)
            XCTAssertEqual(error.constraint, "u_key")
            XCTAssertTrue(error.message.contains("duplicate key"), error.message)
            // The detail, which quotes the key, is not kept.
            XCTAssertFalse(error.description.contains("private-value"), error.description)
        }
        XCTAssertThrowsError(try db.execute("SELEC 1")) { error in
            XCTAssertEqual((error as! PostgresError).sqlState, "42601")
        }
        XCTAssertThrowsError(try db.query("SELECT * FROM missing_table")) { error in
            XCTAssertEqual((error as! PostgresError).sqlState, "42P01")
        }
        // The connection is still usable after a server error.
        XCTAssertEqual(try db.query("SELECT 1")[0].int64(0), 1)
    }

    // MARK: Prepared statements

    func testPreparedStatementsArePreparedOnceAndReused() throws {
        let db = try connect()
        try db.execute("CREATE TABLE p (id bigint PRIMARY KEY, name text, data bytea)")
        for id in Int64(1)...5 {
            // Preparing under a name the connection knows takes the cached statement: the server
            // would refuse a second PREPARE of the same name (42P05).
            let insert = try db.prepare("insert_p", "INSERT INTO p VALUES ($1, $2, $3)")
            try db.query(insert, [.int64(id), .text("n\(id)"), .bytea([UInt8(id), 0, 255])])
        }
        let prepared = try db.query("SELECT count(*) FROM pg_prepared_statements WHERE name = 'insert_p'")
        XCTAssertEqual(prepared[0].int64(0), 1)
        let select = try db.prepare("select_p", "SELECT name, data FROM p WHERE id = $1")
        let row = try db.query(select, [.int64(3)])[0]
        XCTAssertEqual(row.text(0), "n3")
        XCTAssertEqual(row.bytea(1), [3, 0, 255])
        XCTAssertEqual(try db.query("SELECT count(*) FROM p")[0].int64(0), 5)
    }

    // MARK: Transactions

    func testTransactionCommitsWhenTheBodyReturnsAndRollsBackWhenItThrows() throws {
        let db = try connect()
        try db.execute("CREATE TABLE tx (id bigint PRIMARY KEY)")
        try db.transaction {
            try db.query("INSERT INTO tx VALUES (1)")
            XCTAssertTrue(db.inTransaction)
        }
        XCTAssertFalse(db.inTransaction)
        struct Stop: Error {}
        XCTAssertThrowsError(
            try db.transaction {
                try db.query("INSERT INTO tx VALUES (2)")
                throw Stop()
            }
        ) { XCTAssertTrue($0 is Stop) }
        XCTAssertFalse(db.inTransaction)
        // A failed statement whose error the body swallowed: COMMIT rolls back, and says so.
        XCTAssertThrowsError(
            try db.transaction {
                try db.query("INSERT INTO tx VALUES (3)")
                _ = try? db.query("INSERT INTO tx VALUES (1)")
            }
        ) { XCTAssertEqual(($0 as? PostgresError)?.sqlState, "25P02") }
        let other = try connect()
        XCTAssertEqual(try other.query("SELECT id FROM tx ORDER BY id").map { $0.int64(0) }, [1])
    }

    // MARK: Pipelines

    func testAPipelineIsOneImplicitTransactionAndAFailureAbortsTheRest() throws {
        let db = try connect()
        try db.execute("CREATE TABLE pl (id bigint PRIMARY KEY, v text)")
        try db.query("INSERT INTO pl VALUES (100, 'existing')")
        let insert = try db.prepare("insert_pl", "INSERT INTO pl VALUES ($1, $2)")

        // All succeed: every row committed at the sync, one round trip.
        let batch = (Int64(1)...10).map { PostgresQuery.prepared(insert, [.int64($0), .text("v\($0)")]) }
        let outcomes = try db.pipeline(batch + [.sql("SELECT count(*) FROM pl")])
        XCTAssertEqual(outcomes.count, 11)
        for outcome in outcomes.prefix(10) { XCTAssertEqual(try outcome.get().affectedRows, 1) }
        XCTAssertEqual(try outcomes[10].get()[0].int64(0), 11)
        let other = try connect()
        XCTAssertEqual(try other.query("SELECT count(*) FROM pl")[0].int64(0), 11)

        // The 4th of 8 fails (a duplicate key): the three before ran, the four after did not,
        // and nothing of the batch was committed.
        var failing = (Int64(21)...28).map { PostgresQuery.prepared(insert, [.int64($0), .text("w\($0)")]) }
        failing[3] = .sql("INSERT INTO pl VALUES ($1, $2)", [.int64(100), "duplicate"])
        let mixed = try db.pipeline(failing)
        XCTAssertEqual(mixed.count, 8)
        for outcome in mixed.prefix(3) { XCTAssertEqual(try outcome.get().affectedRows, 1) }
        guard case .failure(let failure) = mixed[3] else { return XCTFail("the 4th query should fail") }
        XCTAssertEqual(failure.kind, .server)
        XCTAssertEqual(failure.sqlState, "23505")
        for outcome in mixed.suffix(4) {
            guard case .failure(let aborted) = outcome else { return XCTFail("queries after the failure should not run") }
            XCTAssertEqual(aborted.kind, .pipelineAborted)
        }
        XCTAssertFalse(db.inTransaction)
        XCTAssertEqual(try other.query("SELECT id FROM pl WHERE id BETWEEN 21 AND 28").map { $0.int64(0) }, [])

        // The connection leaves pipeline mode usable, and a later pipeline commits.
        let again = try db.pipeline([.prepared(insert, [.int64(31), "x"]), .sql("SELECT v FROM pl WHERE id = $1", [.int64(31)])])
        XCTAssertEqual(try again[1].get()[0].text(0), "x")
        XCTAssertEqual(try other.query("SELECT count(*) FROM pl")[0].int64(0), 12)
    }

    func testAPipelineLibpqWouldRefuseHalfWayIsRefusedBeforeAnythingIsSent() throws {
        let db = try connect()
        try db.execute("CREATE TABLE pr (id bigint PRIMARY KEY)")
        let tooMany = [PostgresValue?](repeating: .int64(1), count: 70_000)
        XCTAssertThrowsError(try db.pipeline([.sql("INSERT INTO pr VALUES (1)"), .sql("SELECT 1", tooMany)])) { error in
            XCTAssertEqual((error as! PostgresError).kind, .client)
        }
        XCTAssertTrue(db.isConnected)
        XCTAssertEqual(try db.query("SELECT count(*) FROM pr")[0].int64(0), 0)
        XCTAssertEqual(try db.pipeline([.sql("INSERT INTO pr VALUES (2)")]).count, 1)
        XCTAssertEqual(try db.query("SELECT count(*) FROM pr")[0].int64(0), 1)
    }

    func testAFailedPipelineInsideATransactionFailsTheTransaction() throws {
        let db = try connect()
        try db.execute("CREATE TABLE pt (id bigint PRIMARY KEY)")
        XCTAssertThrowsError(
            try db.transaction {
                try db.query("INSERT INTO pt VALUES (1)")
                let outcomes = try db.pipeline([
                    .sql("INSERT INTO pt VALUES (2)"), .sql("INSERT INTO pt VALUES (1)"),
                    .sql("INSERT INTO pt VALUES (3)")
                ])
                XCTAssertNotNil(try? outcomes[0].get())
                if case .failure(let error) = outcomes[1] { throw error }
            }
        ) { XCTAssertEqual(($0 as? PostgresError)?.sqlState, "23505") }
        XCTAssertFalse(db.inTransaction)
        XCTAssertEqual(try db.query("SELECT count(*) FROM pt")[0].int64(0), 0)
    }

    // MARK: Advisory locks

    func testAnAdvisoryLockIsExclusiveBetweenSessions() throws {
        let first = try connect()
        let second = try connect()
        let key: Int64 = 0x696E_7369_6768_7464
        XCTAssertTrue(try first.tryAdvisoryLock(key))
        XCTAssertFalse(try second.tryAdvisoryLock(key))
        XCTAssertTrue(try second.tryAdvisoryLock(key + 1))
        XCTAssertFalse(try second.advisoryUnlock(key))
        XCTAssertTrue(try first.advisoryUnlock(key))
        XCTAssertTrue(try second.tryAdvisoryLock(key))
        XCTAssertFalse(try first.tryAdvisoryLock(key))
    }

    func testAnAdvisoryLockIsReleasedWhenItsSessionEnds() throws {
        let key: Int64 = 42
        var holder: PostgresConnection? = try connect()
        XCTAssertTrue(try holder!.tryAdvisoryLock(key))
        let other = try connect()
        XCTAssertFalse(try other.tryAdvisoryLock(key))
        holder = nil
        // The server notices the closed session promptly, but not synchronously.
        let deadline = Date().addingTimeInterval(10)
        var taken = false
        while !taken, Date() < deadline {
            taken = try other.tryAdvisoryLock(key)
            if !taken { usleep(20_000) }
        }
        XCTAssertTrue(taken)
    }

    // MARK: Server restarts

    /// A port another process took between the pick and the server's bind: the server starts on
    /// the next pick instead of failing the suite.
    func testAStartOnAPortAlreadyTakenTriesAnother() throws {
        let holder = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(holder, 0)
        defer { close(holder) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(holder, raw, length) == 0 && listen(holder, 1) == 0 && getsockname(holder, raw, &length) == 0
            }
        }
        XCTAssertTrue(listening)
        let taken = Int(UInt16(bigEndian: address.sin_port))
        var picks = 0
        let own = try TemporaryPostgres(pickPort: {
            picks += 1
            return picks == 1 ? taken : try TemporaryPostgres.freePort()
        })
        defer { own.destroy() }
        XCTAssertEqual(picks, 2)
        XCTAssertNotEqual(own.port, taken)
        XCTAssertEqual(try own.connect().query("SELECT 1")[0].int64(0), 1)
    }

    func testAfterAnImmediateStopAndRestartTheOldConnectionFailsClearlyAndANewOneWorks() throws {
        // Its own server: stopping the shared one would break the other tests' connections.
        let own = try TemporaryPostgres()
        defer { own.destroy() }
        let old = try own.connect()
        try old.execute("CREATE TABLE r (id bigint)")
        try old.query("INSERT INTO r VALUES (1)")
        try own.stop(mode: .immediate)
        XCTAssertFalse(own.isRunning)
        XCTAssertThrowsError(try PostgresConnection(url: own.url())) { error in
            XCTAssertEqual((error as! PostgresError).kind, .connect)
        }
        try own.start()
        XCTAssertThrowsError(try old.query("SELECT count(*) FROM r")) { error in
            let error = error as! PostgresError
            XCTAssertEqual(error.kind, .connectionLost, error.description)
            XCTAssertTrue(error.isConnectionFailure)
            XCTAssertFalse(error.description.contains(own.password))
        }
        XCTAssertFalse(old.isConnected)
        XCTAssertThrowsError(try old.pipeline([.sql("SELECT 1")])) { error in
            XCTAssertEqual((error as! PostgresError).kind, .connectionLost)
        }
        // A committed row survived the crash.
        let fresh = try own.connect()
        XCTAssertEqual(try fresh.query("SELECT count(*) FROM r")[0].int64(0), 1)
    }
}
