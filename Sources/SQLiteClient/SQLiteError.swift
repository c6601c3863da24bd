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
    public var isUniqueViolation: Bool { extendedCode == 2067 || extendedCode == 1555 }
}
