internal import CLibPQ

/// A parameter of a query. `nil` in a parameter list is SQL NULL.
///
/// Parameters go in text format with their type named (`bigint`, `double precision`,
/// `boolean`), except `.text`, whose type the server infers from where it is used (so text
/// binds to `text`, `varchar`, `jsonb`, `uuid`, `timestamptz` columns alike), and `.bytea`,
/// which goes in binary format, byte for byte. Parameters of a prepared statement take the
/// types the server inferred when it was prepared.
public enum PostgresValue: Sendable, Equatable {
    case text(String)
    case int64(Int64)
    case double(Double)
    case bytea([UInt8])
    case bool(Bool)
}

extension PostgresValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral
{
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .int64(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

/// Parameters laid out as libpq takes them: one byte buffer holding every value (text ones
/// NUL-terminated), with the types, lengths and formats beside it.
struct EncodedParameters {
    private var types: [Oid] = []
    private var offsets: [Int?] = []
    private var lengths: [Int32] = []
    private var formats: [Int32] = []
    private var bytes: [UInt8] = []

    // Type OIDs of the built-in types (pg_type.oid; fixed across PostgreSQL versions).
    private static let int8Oid: Oid = 20
    private static let float8Oid: Oid = 701
    private static let boolOid: Oid = 16
    private static let byteaOid: Oid = 17

    init(_ values: [PostgresValue?]) {
        types.reserveCapacity(values.count)
        for value in values {
            switch value {
            case nil:
                append(type: 0, offset: nil, length: 0, format: 0)
            case .text(let text):
                appendText(text, type: 0)
            case .int64(let integer):
                appendText(String(integer), type: Self.int8Oid)
            case .double(let double):
                appendText(Self.text(double), type: Self.float8Oid)
            case .bool(let flag):
                appendText(flag ? "t" : "f", type: Self.boolOid)
            case .bytea(let data):
                append(type: Self.byteaOid, offset: bytes.count, length: Int32(data.count), format: 1)
                bytes.append(contentsOf: data)
            }
        }
        // Never empty, so that the buffer has a base address for a list of empty values.
        bytes.append(0)
    }

    private mutating func append(type: Oid, offset: Int?, length: Int32, format: Int32) {
        types.append(type)
        offsets.append(offset)
        lengths.append(length)
        formats.append(format)
    }

    private mutating func appendText(_ text: String, type: Oid) {
        append(type: type, offset: bytes.count, length: 0, format: 0)
        bytes.append(contentsOf: text.utf8)
        bytes.append(0)
    }

    /// PostgreSQL's spelling of a double: Swift's shortest round-tripping digits, and the
    /// words the server reads for the infinities and NaN.
    private static func text(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-Infinity" : "Infinity" }
        return String(value)
    }

    var count: Int32 { Int32(types.count) }

    /// Calls `body` with libpq's parameter arrays (types, values, lengths, formats), valid only
    /// during the call.
    func withArrays<R>(
        _ body: (
            UnsafePointer<Oid>?, UnsafePointer<UnsafePointer<CChar>?>?,
            UnsafePointer<Int32>?, UnsafePointer<Int32>?
        ) -> R
    ) -> R {
        bytes.withUnsafeBufferPointer { buffer in
            let base = UnsafeRawPointer(buffer.baseAddress!)
            let values: [UnsafePointer<CChar>?] = offsets.map { offset in
                offset.map { (base + $0).assumingMemoryBound(to: CChar.self) }
            }
            return types.withUnsafeBufferPointer { types in
                values.withUnsafeBufferPointer { values in
                    lengths.withUnsafeBufferPointer { lengths in
                        formats.withUnsafeBufferPointer { formats in
                            body(types.baseAddress, values.baseAddress, lengths.baseAddress, formats.baseAddress)
                        }
                    }
                }
            }
        }
    }
}
