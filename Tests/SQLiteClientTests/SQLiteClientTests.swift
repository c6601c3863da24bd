import Foundation
import SQLiteClient
import XCTest

final class SQLiteClientTests: XCTestCase {
    var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("sqlite-client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    func open() throws -> SQLiteConnection {
        try SQLiteConnection(path: directory.appendingPathComponent("test.db").path)
    }

    func testRoundTripsEveryValueKind() throws {
        let db = try open()
        try db.execute("CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n TEXT)")
        try db.prepare("INSERT INTO t VALUES (?, ?, ?, ?, ?)")
            .run(42, 2.5, "héllo", [UInt8]([0, 1, 255]), String?.none)
        let rows = try db.prepare("SELECT i, r, s, b, n FROM t").query { row in
            (row.int(0), row.double(1), row.text(2), row.blob(3), row.isNull(4))
        }
        XCTAssertEqual(rows.count, 1)
        XCTAssertEqual(rows[0].0, 42)
        XCTAssertEqual(rows[0].1, 2.5)
        XCTAssertEqual(rows[0].2, "héllo")
        XCTAssertEqual(rows[0].3, [0, 1, 255])
        XCTAssertTrue(rows[0].4)
    }

    func testConcreteValuesBindLikeTheirSwiftTypes() throws {
        let db = try open()
        try db.execute("CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n TEXT, o TEXT, f INTEGER, m INTEGER)")
        let insert = try db.cached("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
        try insert.run(values: [
            .integer(42), .real(2.5), .text("héllo"), .blob([0, 1, 255]), SQLiteValue(String?.none),
            SQLiteValue("x" as String?), SQLiteValue(true), SQLiteValue(Int64?.none)
        ])
        try insert.run(42, 2.5, "héllo", [UInt8]([0, 1, 255]), String?.none, "x", true, Int64?.none)
        let rows = try db.prepare("SELECT i, r, s, hex(b), typeof(n), o, f, typeof(m) FROM t").query { row in
            [row.text(0), row.text(1), row.text(2), row.text(3), row.text(4), row.text(5), row.text(6), row.text(7)]
        }
        XCTAssertEqual(rows.count, 2)
        XCTAssertEqual(rows[0], ["42", "2.5", "héllo", "0001FF", "null", "x", "1", "null"])
        XCTAssertEqual(rows[0], rows[1], "the generic and the concrete binding agree")
    }

    func testDirectBindingAgreesWithTheValueArrays() throws {
        let db = try open()
        try db.execute("CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n TEXT, o TEXT, f INTEGER, m INTEGER)")
        let insert = try db.cached("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
        try insert.run(values: [
            .integer(42), .real(2.5), .text("héllo"), .blob([0, 1, 255]), .null,
            .text("x"), .integer(1), .null
        ])
        try insert.run(count: 8) { b in
            b.integer(42); b.real(2.5); b.text("héllo"); b.blob([0, 1, 255]); b.text(String?.none)
            b.text("x"); b.integer(1); b.integer(Int64?.none)
        }
        let rows = try db.prepare("SELECT i, r, s, hex(b), typeof(n), o, f, typeof(m) FROM t").query { row in
            [row.text(0), row.text(1), row.text(2), row.text(3), row.text(4), row.text(5), row.text(6), row.text(7)]
        }
        XCTAssertEqual(
            rows,
            [
                ["42", "2.5", "héllo", "0001FF", "null", "x", "1", "null"],
                ["42", "2.5", "héllo", "0001FF", "null", "x", "1", "null"]
            ])
    }

    func testBindingFewerValuesThanAnnouncedIsRefused() throws {
        let db = try open()
        try db.execute("CREATE TABLE t (a TEXT, b TEXT)")
        let insert = try db.cached("INSERT INTO t VALUES (?, ?)")
        XCTAssertThrowsError(try insert.run(count: 2) { b in b.text("only one") }) { error in
            XCTAssertEqual((error as? SQLiteError)?.code, SQLiteResultCode.misuse)
            XCTAssertTrue("\(error)".contains("bound 1 parameters, announced 2"), "\(error)")
        }
        XCTAssertEqual(try db.scalarText("SELECT count(*) FROM t"), "0")
    }

    func testBoundBytesStayCorrectWhenTheirBufferGrowsAndIsReused() throws {
        // Text and blobs are bound from a buffer the statement keeps (no copy by SQLite): values
        // added after the buffer grew, and shorter values after longer ones, must all read back.
        let db = try open()
        try db.execute("CREATE TABLE t (k INTEGER, a TEXT, b BLOB, c TEXT, d BLOB, e TEXT)")
        let insert = try db.cached("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)")
        let long = String(repeating: "é", count: 3_000)  // 6,000 bytes: past the initial 1 KiB
        let blob = (0..<5_000).map { UInt8(truncatingIfNeeded: $0) }
        let rows: [(String, [UInt8], String, [UInt8], String)] = [
            ("small", [1], long, blob, "tail"),
            ("", [], "", [], ""),  // empty text and blob stay text and blob
            (String(long.prefix(10)), [9, 9], "short", blob, long)
        ]
        for (k, row) in rows.enumerated() {
            try insert.run(count: 6) { b in
                b.integer(Int64(k)); b.text(row.0); b.blob(row.1); b.text(row.2); b.blob(row.3); b.text(row.4)
            }
        }
        let read = try db.prepare("SELECT a, b, c, d, e, typeof(a), typeof(b) FROM t ORDER BY k").query { row in
            (
                row.text(0) ?? "?", row.blob(1) ?? [], row.text(2) ?? "?", row.blob(3) ?? [], row.text(4) ?? "?",
                row.text(5), row.text(6)
            )
        }
        XCTAssertEqual(read.count, rows.count)
        for (got, want) in zip(read, rows) {
            XCTAssertEqual(got.0, want.0)
            XCTAssertEqual(got.1, want.1)
            XCTAssertEqual(got.2, want.2)
            XCTAssertEqual(got.3, want.3)
            XCTAssertEqual(got.4, want.4)
            XCTAssertEqual(got.5, "text")
            XCTAssertEqual(got.6, "blob")
        }
    }

    func testCachedStatementsAreKeyedByTheirLiteral() throws {
        let db = try open()
        try db.execute("CREATE TABLE t (a TEXT)")
        func insert() throws -> SQLiteStatement { try db.cached("INSERT INTO t VALUES (?)") }
        XCTAssertTrue(try insert() === insert(), "one literal, one prepared statement")
        XCTAssertFalse(try insert() === db.cached("SELECT a FROM t"))
        XCTAssertEqual(try db.cached("SELECT a FROM t").sql, "SELECT a FROM t")
    }

    func testAReusedStatementKeepsNoValueFromItsLastUse() throws {
        let db = try open()
        try db.execute("CREATE TABLE t (a TEXT, b TEXT)")
        let insert = try db.cached("INSERT INTO t VALUES (?, ?)")
        try insert.run("a1", "b1")
        try insert.run("a2")  // b unbound this time: NULL, not "b1"
        try insert.run("a3", "b3")
        let rows = try db.prepare("SELECT a, b FROM t ORDER BY a").query { ($0.text(0), $0.text(1)) }
        XCTAssertEqual(rows.map(\.0), ["a1", "a2", "a3"])
        XCTAssertEqual(rows.map(\.1), ["b1", nil, "b3"])
    }

    func testEmptyBlobStaysABlob() throws {
        let db = try open()
        try db.execute("CREATE TABLE t (b BLOB)")
        try db.prepare("INSERT INTO t VALUES (?)").run([UInt8]())
        XCTAssertEqual(try db.scalarText("SELECT typeof(b) FROM t"), "blob")
    }

    func testTransactionRollsBackOnError() throws {
        let db = try open()
        try db.execute("CREATE TABLE t (k TEXT PRIMARY KEY)")
        struct Boom: Error {}
        XCTAssertThrowsError(
            try db.transaction {
                try db.cached("INSERT INTO t VALUES (?)").run("a")
                throw Boom()
            })
        XCTAssertEqual(try db.scalarText("SELECT count(*) FROM t"), "0")
    }

    func testSavepointUndoesOnlyItsOwnWrites() throws {
        let db = try open()
        try db.execute("CREATE TABLE t (k TEXT PRIMARY KEY)")
        try db.transaction {
            try db.cached("INSERT INTO t VALUES (?)").run("a")
            XCTAssertThrowsError(
                try db.savepoint {
                    try db.cached("INSERT INTO t VALUES (?)").run("b")
                    try db.cached("INSERT INTO t VALUES (?)").run("a")  // duplicate: fails
                }
            ) { error in
                XCTAssertTrue((error as? SQLiteError)?.isUniqueViolation ?? false)
            }
        }
        XCTAssertEqual(try db.prepare("SELECT k FROM t ORDER BY k").query { $0.text(0) }, ["a"])
    }

    func testAPrimaryKeyAndAUniqueIndexViolationHaveTheirNamedExtendedCodes() throws {
        let db = try open()
        try db.execute("CREATE TABLE t (k TEXT PRIMARY KEY, u TEXT UNIQUE, n TEXT NOT NULL)")
        try db.prepare("INSERT INTO t VALUES (?, ?, ?)").run("a", "x", "n")
        for (values, code) in [
            (["a", "y", "n"], SQLiteResultCode.constraintPrimaryKey),
            (["b", "x", "n"], SQLiteResultCode.constraintUnique)
        ] {
            XCTAssertThrowsError(try db.prepare("INSERT INTO t VALUES (?, ?, ?)").run(values[0], values[1], values[2])) { error in
                XCTAssertEqual((error as? SQLiteError)?.extendedCode, code, "\(values)")
                XCTAssertEqual((error as? SQLiteError)?.code, SQLiteResultCode.constraint)
                XCTAssertTrue((error as? SQLiteError)?.isUniqueViolation ?? false)
            }
        }
        XCTAssertThrowsError(try db.prepare("INSERT INTO t (k, u) VALUES (?, ?)").run("c", "z")) { error in
            XCTAssertFalse((error as? SQLiteError)?.isUniqueViolation ?? true, "NOT NULL is another constraint")
        }
        XCTAssertEqual(
            [
                SQLiteResultCode.corrupt, SQLiteResultCode.notADatabase, SQLiteResultCode.constraintPrimaryKey,
                SQLiteResultCode.constraintUnique
            ], [11, 26, 1555, 2067], "the numbers sqlite3.h gives them")
    }

    func testErrorsNameTheSQLButNotTheValues() throws {
        let db = try open()
        try db.execute("CREATE TABLE t (k TEXT PRIMARY KEY)")
        try db.prepare("INSERT INTO t VALUES (?)").run("secret-value")
        do {
            try db.prepare("INSERT INTO t VALUES (?)").run("secret-value")
            XCTFail("expected a constraint error")
        } catch {
            XCTAssertTrue(error.description.contains("INSERT INTO t"))
            XCTAssertFalse(error.description.contains("secret-value"))
            XCTAssertEqual(error.code, SQLiteResultCode.constraint)
        }
        XCTAssertThrowsError(try db.prepare("SELEC nonsense"))
    }

    func testWALModeAllowsAReaderBesideAWriter() throws {
        let writer = try open()
        XCTAssertEqual(try writer.scalarText("PRAGMA journal_mode=WAL"), "wal")
        try writer.execute("CREATE TABLE t (k INTEGER)")
        let reader = try SQLiteConnection(path: writer.path, readOnly: true)
        try writer.execute("BEGIN IMMEDIATE; INSERT INTO t VALUES (1)")
        XCTAssertEqual(try reader.scalarText("SELECT count(*) FROM t"), "0")
        try writer.execute("COMMIT")
        XCTAssertEqual(try reader.scalarText("SELECT count(*) FROM t"), "1")
    }

    func testOpeningAMissingDatabaseWithoutCreateFails() {
        XCTAssertThrowsError(
            try SQLiteConnection(
                path: directory.appendingPathComponent("missing.db").path, create: false))
    }
}
