internal import CLibPQ

/// The rows a query returned, in text format. Owns its `PGresult*` and clears it in `deinit`.
///
/// `@unchecked Sendable`: a `PGresult` is read-only once libpq has made it and is independent
/// of its connection (libpq documents that results may be passed between threads), and this
/// type only reads it.
public final class PostgresResult: @unchecked Sendable {
    let handle: OpaquePointer

    init(handle: OpaquePointer) {
        self.handle = handle
    }

    deinit { PQclear(handle) }

    /// The number of columns.
    public var columnCount: Int { Int(PQnfields(handle)) }

    /// The name of column `column`.
    public func columnName(_ column: Int) -> String { String(cString: PQfname(handle, Int32(column))) }

    /// Rows changed by an INSERT, UPDATE or DELETE (or returned by a SELECT); 0 for other
    /// statements.
    public var affectedRows: Int {
        Int(String(cString: PQcmdTuples(handle))) ?? 0
    }

    /// The command tag (`INSERT 0 1`, `COMMIT`, `ROLLBACK`, …).
    public var commandTag: String { String(cString: PQcmdStatus(handle)) }
}

extension PostgresResult: RandomAccessCollection {
    public var startIndex: Int { 0 }
    public var endIndex: Int { Int(PQntuples(handle)) }
    public subscript(row: Int) -> PostgresRow {
        precondition(row >= 0 && row < endIndex, "row index out of range")
        return PostgresRow(result: self, row: Int32(row))
    }
}

/// One row of a result. Each accessor answers nil for NULL, and also when the column's text is
/// not a value of that type (a column of another type): `isNull` tells the two apart.
public struct PostgresRow: Sendable {
    let result: PostgresResult
    let row: Int32

    /// True when column `column` is NULL.
    public func isNull(_ column: Int) -> Bool {
        PQgetisnull(result.handle, row, Int32(column)) == 1
    }

    /// The column's bytes as the server sent them in text format, or nil for NULL.
    private func withBytes<R>(_ column: Int, _ body: (UnsafeBufferPointer<UInt8>) -> R?) -> R? {
        let column = Int32(column)
        precondition(column >= 0 && column < PQnfields(result.handle), "column index out of range")
        guard PQgetisnull(result.handle, row, column) == 0, let value = PQgetvalue(result.handle, row, column)
        else { return nil }
        let length = Int(PQgetlength(result.handle, row, column))
        return value.withMemoryRebound(to: UInt8.self, capacity: length) {
            body(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    /// The column as text (any type, as the server spells it).
    public func text(_ column: Int) -> String? {
        withBytes(column) { String(decoding: $0, as: UTF8.self) }
    }

    /// A `smallint`, `integer` or `bigint` column.
    public func int64(_ column: Int) -> Int64? {
        withBytes(column) { bytes in
            var iterator = bytes.makeIterator()
            guard var byte = iterator.next() else { return nil }
            let negative = byte == UInt8(ascii: "-")
            if negative { guard let next = iterator.next() else { return nil }; byte = next }
            var value: Int64 = 0
            while true {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                let digit = Int64(byte - UInt8(ascii: "0"))
                // Accumulated negatively, so that Int64.min fits.
                let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
                let (next, overflow2) = times10.subtractingReportingOverflow(digit)
                guard !overflow1, !overflow2 else { return nil }
                value = next
                guard let following = iterator.next() else { break }
                byte = following
            }
            if negative { return value }
            let (positive, overflow) = Int64(0).subtractingReportingOverflow(value)
            return overflow ? nil : positive
        }
    }

    /// A `double precision` or `real` column (also `numeric`, rounded).
    public func double(_ column: Int) -> Double? {
        withBytes(column) { bytes in
            let text = String(decoding: bytes, as: UTF8.self)
            switch text {
            case "Infinity": return Double.infinity
            case "-Infinity": return -Double.infinity
            case "NaN": return Double.nan
            default: return Double(text)
            }
        }
    }

    /// A `boolean` column.
    public func bool(_ column: Int) -> Bool? {
        withBytes(column) { bytes in
            guard bytes.count == 1 else { return nil }
            switch bytes[0] {
            case UInt8(ascii: "t"): return true
            case UInt8(ascii: "f"): return false
            default: return nil
            }
        }
    }

    /// A `bytea` column, decoded from the server's hex output (`\x00ff…`, the default
    /// `bytea_output`).
    public func bytea(_ column: Int) -> [UInt8]? {
        withBytes(column) { bytes in
            guard bytes.count >= 2, bytes.count % 2 == 0,
                bytes[0] == UInt8(ascii: "\\"), bytes[1] == UInt8(ascii: "x")
            else { return nil }
            var decoded = [UInt8]()
            decoded.reserveCapacity(bytes.count / 2 - 1)
            var index = 2
            while index < bytes.count {
                guard let high = hexDigitValue(bytes[index]), let low = hexDigitValue(bytes[index + 1]) else { return nil }
                decoded.append(high << 4 | low)
                index += 2
            }
            return decoded
        }
    }
}
