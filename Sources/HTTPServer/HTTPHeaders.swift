/// An ordered list of HTTP header fields with case-insensitive lookup.
///
/// Order and the spelling of names are kept as received (or as added), because some fields
/// are order-sensitive lists and logs are easier to read when they show what was sent.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    /// One header field: its name as spelled, and its value without surrounding whitespace.
    public typealias Element = (name: String, value: String)

    internal var fields: [Element]

    /// Creates headers from `(name, value)` pairs, keeping their order.
    public init(_ pairs: [(String, String)] = []) {
        fields = pairs.map { (name: $0.0, value: $0.1) }
    }

    /// Creates headers from a dictionary literal, keeping the literal's order.
    public init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { (name: $0.0, value: $0.1) }
    }

    /// The value of the first field called `name` (compared case-insensitively), if any.
    public subscript(_ name: String) -> String? {
        // By index: `for field in fields` copies each (name, value) pair, retaining and
        // releasing both strings of every field passed over.
        fields.withUnsafeBufferPointer { fields in
            for i in fields.indices where fields[i].name.equalsIgnoringASCIICase(name) {
                return fields[i].value
            }
            return nil
        }
    }

    /// Every value of the fields called `name` (compared case-insensitively), in order.
    public func values(_ name: String) -> [String] {
        fields.compactMap { $0.name.equalsIgnoringASCIICase(name) ? $0.value : nil }
    }

    /// Whether at least one field is called `name` (compared case-insensitively).
    public func contains(_ name: String) -> Bool {
        fields.contains { $0.name.equalsIgnoringASCIICase(name) }
    }

    /// Makes room for `count` fields in all, so that adding them allocates once.
    public mutating func reserveCapacity(_ count: Int) {
        fields.reserveCapacity(count)
    }

    /// Appends a field, keeping any earlier fields of the same name.
    public mutating func add(_ name: String, _ value: String) {
        fields.append((name: name, value: value))
    }

    /// Replaces every field called `name` with one field holding `value`.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        fields.append((name: name, value: value))
    }

    /// Removes every field called `name` (compared case-insensitively).
    public mutating func remove(_ name: String) {
        fields.removeAll { $0.name.equalsIgnoringASCIICase(name) }
    }

    /// The number of fields, counting repeated names separately.
    public var count: Int { fields.count }

    /// Whether there are no fields.
    public var isEmpty: Bool { fields.isEmpty }

    /// Iterates the fields in order.
    public func makeIterator() -> IndexingIterator<[Element]> {
        fields.makeIterator()
    }
}

extension String {
    /// ASCII case-insensitive comparison without allocating (header names are ASCII tokens).
    /// Lengths first (a header look-up compares its name with every field's), then the bytes.
    /// Inlined: a look-up calls it once per field, and the length test alone usually decides.
    @inline(__always)
    public func equalsIgnoringASCIICase(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        let compared = utf8.withContiguousStorageIfAvailable { lhs in
            other.utf8.withContiguousStorageIfAvailable { rhs in
                for i in 0..<lhs.count where lhs[i] != rhs[i] && asciiLowercased(lhs[i]) != asciiLowercased(rhs[i]) {
                    return false
                }
                return true
            }
        }
        if let compared, let compared { return compared }
        return zip(utf8, other.utf8).allSatisfy { $0 == $1 || asciiLowercased($0) == asciiLowercased($1) }
    }
}

/// Lowercases one ASCII letter; every other byte is returned unchanged.
@inline(__always)
internal func asciiLowercased(_ byte: UInt8) -> UInt8 {
    byte &- 65 < 26 ? byte | 0x20 : byte
}
