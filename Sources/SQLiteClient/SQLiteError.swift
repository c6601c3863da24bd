internal import CSQLite

/// A failed SQLite call. `description` carries the SQL and codes but never bound values,
/// so it is safe to log.
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    /// The primary result code (`SQLITE_BUSY`, `SQLITE_CONSTRAINT`, …).
    public let code: Int32
    /// The extended result code, which tells e.g. which constraint failed.
    public let extendedCode: Int32
    /// SQLite's own message.
    public let message: String
    /// The statement that failed, if any.
    public let sql: String?

    public var description: String {
        var text = "SQLite error \(extendedCode): \(message)"
        if let sql { text += " [\(sql)]" }
        return text
    }

    /// True for uniqueness or primary-key violations.
    public var isUniqueViolation: Bool {
        extendedCode == SQLiteResultCode.constraintUnique || extendedCode == SQLiteResultCode.constraintPrimaryKey
    }

    /// True when the file is damaged or is not a database at all.
    public var isCorruption: Bool { code == SQLiteResultCode.corrupt || code == SQLiteResultCode.notADatabase }
}

/// The result codes of sqlite3.h that callers act on, by name, so that no caller compares a
/// bare number (the C module is this module's own: `internal import CSQLite`). Swift does not
/// import the extended codes (macros of expressions), so they are composed as sqlite3.h does.
public enum SQLiteResultCode {
    /// `SQLITE_CORRUPT` (11): the database file is malformed.
    public static let corrupt: Int32 = SQLITE_CORRUPT
    /// `SQLITE_CONSTRAINT` (19): a constraint failed (the primary code of the two below).
    public static let constraint: Int32 = SQLITE_CONSTRAINT
    /// `SQLITE_MISUSE` (21): the library was used against its rules (e.g. too few values bound).
    public static let misuse: Int32 = SQLITE_MISUSE
    /// `SQLITE_NOTADB` (26): the file is not a database.
    public static let notADatabase: Int32 = SQLITE_NOTADB
    /// `SQLITE_CONSTRAINT_PRIMARYKEY` (1555): a primary key's value is taken.
    public static let constraintPrimaryKey: Int32 = SQLITE_CONSTRAINT | (6 << 8)
    /// `SQLITE_CONSTRAINT_UNIQUE` (2067): a unique index's value is taken.
    public static let constraintUnique: Int32 = SQLITE_CONSTRAINT | (8 << 8)
}
