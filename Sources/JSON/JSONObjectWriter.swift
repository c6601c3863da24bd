/// Writes one JSON object member by member straight into bytes, for the documents made on every
/// request (an evaluation's answer, a request's log line), where building a `JSONValue` tree
/// first and walking it cost as much again as writing. The output is what `JSONWriter` makes of
/// the same members in the same order.
public struct JSONObjectWriter {
    @usableFromInline var out: [UInt8]
    @usableFromInline var empty = true

    /// Starts an object, reserving `capacity` bytes.
    public init(capacity: Int = 1024) {
        out = []
        out.reserveCapacity(capacity)
        out.append(UInt8(ascii: "{"))
    }

    /// A writer over `buffer` as it is (for nesting).
    @usableFromInline init(buffer: [UInt8]) {
        out = buffer
    }

    /// The bytes written so far: the opening brace and the members (`bytes()` adds the closing one).
    public var count: Int { out.count }

    /// The finished object's bytes.
    public consuming func bytes() -> [UInt8] {
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// Writes a member's key. Keys are literals of ours (`StaticString`): their bytes are copied
    /// as they are, where a `String` key would be checked for escapes and copied, for each of the
    /// two dozen keys of a log line and an answer. They must need no escaping (checked in debug
    /// builds).
    @usableFromInline mutating func key(_ key: StaticString) {
        separate()
        out.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { bytes in
            assert(JSONWriter.isPlain(bytes), "a JSON key literal that needs escaping")
            out.append(contentsOf: bytes)
        }
        out.append(UInt8(ascii: "\""))
        out.append(UInt8(ascii: ":"))
    }

    /// The comma before every member but the first.
    @usableFromInline mutating func separate() {
        if !empty { out.append(UInt8(ascii: ",")) }
        empty = false
    }

    public mutating func member(_ key: StaticString, _ value: String) {
        self.key(key)
        JSONWriter.writeString(value, into: &out)
    }

    /// A string member whose bytes `write` appends as they are, for text that never needs
    /// escaping (a timestamp's digits and punctuation), written without making a `String` first.
    /// Checked in debug builds.
    public mutating func textMember(_ key: StaticString, writing write: (inout [UInt8]) -> Void) {
        self.key(key)
        out.append(UInt8(ascii: "\""))
        let start = out.count
        write(&out)
        assert(out[start...].withUnsafeBufferPointer { JSONWriter.isPlain($0) }, "plain text that needs escaping")
        out.append(UInt8(ascii: "\""))
    }

    public mutating func member(_ key: StaticString, _ value: Double) {
        self.key(key)
        JSONWriter.writeNumber(value, into: &out)
    }

    public mutating func member(_ key: StaticString, _ value: Bool) {
        self.key(key)
        JSONWriter.write(.bool(value), into: &out)
    }

    /// Any value, written as `JSONWriter` writes it.
    public mutating func member(_ key: StaticString, _ value: JSONValue) {
        self.key(key)
        JSONWriter.write(value, into: &out)
    }

    /// A member whose key is not a literal (a log line's fields), escaped as needed.
    public mutating func member(named key: String, _ value: JSONValue) {
        separate()
        JSONWriter.writeString(key, into: &out)
        out.append(UInt8(ascii: ":"))
        JSONWriter.write(value, into: &out)
    }

    /// An array of strings.
    public mutating func member(_ key: StaticString, strings: [String]) {
        self.key(key)
        out.append(UInt8(ascii: "["))
        for (i, string) in strings.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONWriter.writeString(string, into: &out)
        }
        out.append(UInt8(ascii: "]"))
    }

    /// A nested object whose members `body` writes.
    public mutating func member(_ key: StaticString, object body: (inout JSONObjectWriter) -> Void) {
        self.key(key)
        nest(body)
    }

    /// An array with one object per element, whose members `body` writes. (Inlinable, so that
    /// callers in other modules get it specialised: the generic version walked the array
    /// through runtime metadata.)
    @inlinable
    public mutating func member<Element>(
        _ key: StaticString, objects elements: [Element],
        _ body: (inout JSONObjectWriter, Element) -> Void
    ) {
        self.key(key)
        out.append(UInt8(ascii: "["))
        // Read in place: `elements[i]` inside the nesting closure copied each element.
        elements.withUnsafeBufferPointer { elements in
            for i in elements.indices {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                nest { body(&$0, elements[i]) }
            }
        }
        out.append(UInt8(ascii: "]"))
    }

    /// Hands the buffer to a nested writer and takes it back, so nothing is copied.
    @usableFromInline mutating func nest(_ body: (inout JSONObjectWriter) -> Void) {
        var nested = JSONObjectWriter(buffer: [])
        swap(&nested.out, &out)
        nested.out.append(UInt8(ascii: "{"))
        body(&nested)
        nested.out.append(UInt8(ascii: "}"))
        swap(&nested.out, &out)
    }
}
