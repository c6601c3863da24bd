import Crypto
import PostgresClient

/// Values spelled as PostgreSQL reads them where the client has no binding of its own.
enum SQLValues {
    /// A `text[]` literal (`{"a","b",NULL}`): every element quoted, `"` and `\` escaped.
    static func textArray(_ elements: [String?]) -> PostgresValue {
        arrayLiteral(elements.map(arrayElement))
    }

    /// A `bigint[]` literal (`{1,-1,NULL}`).
    static func integerArray(_ elements: [Int64?]) -> PostgresValue {
        .text("{" + elements.map { $0.map(String.init) ?? "NULL" }.joined(separator: ",") + "}")
    }

    /// An array literal of elements that `arrayElement` spelled.
    static func arrayLiteral(_ elements: [String]) -> PostgresValue {
        .text("{" + elements.joined(separator: ",") + "}")
    }

    /// One element of an array literal: `NULL`, or `text` quoted, `"` and `\` escaped.
    static func arrayElement(_ text: String?) -> String {
        guard let text else { return "NULL" }
        guard text.utf8.contains(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
            return "\"" + text + "\""
        }
        var element = "\""
        for character in text.unicodeScalars {
            if character == "\"" || character == "\\" { element += "\\" }
            element.unicodeScalars.append(character)
        }
        return element + "\""
    }

    /// One element of an array literal holding `value` in its type's text form (a byte string as
    /// `\x` and hex), for a parameter cast to that type's array.
    static func arrayElement(_ value: PostgresValue?) -> String {
        switch value {
        case nil: "NULL"
        case .text(let text): arrayElement(text)
        case .int64(let integer): String(integer)
        case .double(let double): arrayElement(String(double))
        case .bool(let flag): flag ? "t" : "f"
        case .bytea(let bytes): arrayElement("\\x" + Hex.encode(bytes))
        }
    }

    /// Byte strings as comma-separated hex, for `decode(…, 'hex')` over `string_to_array`.
    static func hexList(_ values: [[UInt8]]) -> PostgresValue {
        .text(values.map(Hex.encode).joined(separator: ","))
    }

    /// The key of a transaction-level advisory lock that stands for one thing (an evaluation's
    /// reports, an idempotency key, an insight's label): FNV-1a over its parts. Two things that
    /// share a key only wait for each other.
    static func lockKey(_ parts: [[UInt8]]) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for part in parts {
            for byte in part {
                hash ^= UInt64(byte)
                hash = hash &* 0x0000_0100_0000_01B3
            }
            hash ^= 0xFF  // a separator no UTF-8 text contains
            hash = hash &* 0x0000_0100_0000_01B3
        }
        return Int64(bitPattern: hash)
    }

    static func lockKey(_ parts: String...) -> Int64 { lockKey(parts.map { Array($0.utf8) }) }
}

/// The statement that takes the transaction-level advisory locks of a job, in key order, so
/// that two instances' batches wanting the same keys do not deadlock on them within a job. The
/// locks are held until the batch commits; the job's next statement starts after they are
/// taken, and so sees what any other instance committed under them (READ COMMITTED: a snapshot
/// per statement).
func lockStatement(_ keys: [Int64]) -> WriteStatement {
    WriteStatement(
        name: "insightd_lock",
        sql: """
            SELECT count(pg_advisory_xact_lock(k)) FROM (SELECT DISTINCT k FROM unnest($1::bigint[]) AS t(k) ORDER BY k) AS s
            """, parameters: [SQLValues.integerArray(keys)])
}
