import JSON

/// Reads well-formed JSON straight from a document's bytes, for the readers that take part of a
/// request themselves (`EventsReader`, `SummaryReader`); every read answers nil, or false, for
/// anything it does not accept, and the caller then declines.
struct ByteCursor {
    let bytes: UnsafeBufferPointer<UInt8>
    var index: Int

    @inline(__always)
    mutating func skipWhitespace() {
        // Most often there is none: every whitespace byte is at most a space.
        guard index < bytes.count, bytes[index] <= 0x20 else { return }
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// Consumes `byte` if it is next.
    @inline(__always)
    mutating func take(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    /// Consumes the `:` after a member name, with the whitespace JSON allows around it.
    @inline(__always)
    mutating func takeColon() -> Bool {
        skipWhitespace()
        guard take(UInt8(ascii: ":")) else { return false }
        skipWhitespace()
        return true
    }

    /// Consumes the member name `"<name>"` if it is next (quotes included), as written without
    /// escapes: cheaper than reading a string and comparing it, for readers that know which few
    /// names may come.
    @inline(__always)
    mutating func takeName(_ name: StaticString) -> Bool {
        let count = name.utf8CodeUnitCount
        guard index + count + 2 <= bytes.count, bytes[index] == UInt8(ascii: "\""),
            bytes[index + count + 1] == UInt8(ascii: "\""), matches(name, at: index + 1)
        else { return false }
        index += count + 2
        return true
    }

    /// Whether `literal`'s bytes are at `offset` (the caller has checked they fit). Inlined: a
    /// call per member name costs as much as the comparison.
    @inline(__always)
    private func matches(_ literal: StaticString, at offset: Int) -> Bool {
        let start = literal.utf8Start
        for i in 0..<literal.utf8CodeUnitCount where bytes[offset + i] != start[i] { return false }
        return true
    }

    /// Reads `{ member, member, … }` with the whitespace JSON allows: `member` reads one name,
    /// its colon and its value, and answers false to decline (an unknown or repeated name, a
    /// value it does not accept). True when the whole object was read.
    mutating func readObject(_ member: (inout ByteCursor) -> Bool) -> Bool {
        guard take(UInt8(ascii: "{")) else { return false }
        skipWhitespace()
        if take(UInt8(ascii: "}")) { return true }
        repeat {
            skipWhitespace()
            guard member(&self) else { return false }
            skipWhitespace()
        } while take(UInt8(ascii: ","))
        return take(UInt8(ascii: "}"))
    }

    /// A string of ASCII letters, without its quotes; nil for anything else.
    mutating func plainString() -> UnsafeBufferPointer<UInt8>? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        // Eight bytes at a time (an event list reads two such strings for each of its events),
        // then byte by byte from the first that is not a letter.
        skipWords(Self.nonLetterBytes)
        while index < bytes.count {
            let c = bytes[index]
            if c == UInt8(ascii: "\"") {
                index += 1
                return UnsafeBufferPointer(rebasing: bytes[start..<(index - 1)])
            }
            guard (c | 0x20) &- UInt8(ascii: "a") < 26 else { return nil }
            index += 1
        }
        return nil
    }

    /// Advances eight bytes at a time while eight remain and none of them is an outsider, and
    /// stops at the first outsider of the word that has one. `outsiders` returns the high bit of
    /// each byte of a word that does not belong (`nonLetterBytes`, `unprintableBytes`).
    @inline(__always)
    private mutating func skipWords(_ outsiders: (UInt64) -> UInt64) {
        guard let base = bytes.baseAddress else { return }
        while index + 8 <= bytes.count {
            let word = UInt64(littleEndian: UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self))
            let others = outsiders(word)
            if others != 0 {
                index += others.trailingZeroBitCount / 8
                return
            }
            index += 8
        }
    }

    /// The high bit of each byte of `word` that is not an ASCII letter, computed for all eight
    /// at once: folded to lower case and stripped of the high bit, a byte is a letter when adding
    /// 0x1F carries it to 0x80 or more (it is at least "a") and adding 0x05 does not (it is at
    /// most "z"); no sum leaves its byte. A byte with its own high bit set is not ASCII.
    @inline(__always)
    static func nonLetterBytes(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101, highBits: UInt64 = 0x8080_8080_8080_8080
        let folded = (word | 0x2020_2020_2020_2020) & ~highBits
        let atLeastA = folded &+ 0x1F &* ones
        let beyondZ = folded &+ 0x05 &* ones
        return (~(atLeastA & ~beyondZ) | word) & highBits
    }

    /// A non-empty string of printable ASCII (0x20–0x7E) without escapes, of at most `maxLength`
    /// bytes, without its quotes; nil for anything else (what `ObjectReader.string` accepts
    /// without Unicode look-ups).
    mutating func printableString(maxLength: Int) -> String? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        // Eight bytes at a time, then byte by byte from the first that is not plain printable
        // ASCII (the closing quote, or what declines).
        skipWords(Self.unprintableBytes)
        while index < bytes.count {
            let c = bytes[index]
            if c == UInt8(ascii: "\"") {
                let count = index - start
                index += 1
                guard count > 0, count <= maxLength else { return nil }
                return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<(index - 1)]), as: UTF8.self)
            }
            guard c >= 0x20, c < 0x7F, c != UInt8(ascii: "\\") else { return nil }
            index += 1
        }
        return nil
    }

    /// The high bit of each byte of `word` that is not printable ASCII or is a quote or a
    /// backslash, computed for all eight at once without carries between bytes: stripped of its
    /// high bit (a byte with it set is not ASCII), a byte is a control character when adding
    /// 0x60 leaves it below 0x80, DEL when adding 0x01 reaches 0x80, and a quote or backslash
    /// when its difference from one adds to 0x7F without reaching 0x80.
    @inline(__always)
    static func unprintableBytes(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101, highBits: UInt64 = 0x8080_8080_8080_8080
        let low = word & ~highBits
        let control = ~(low &+ 0x60 &* ones)
        let delete = low &+ ones
        let quote = ~((low ^ 0x22 &* ones) &+ 0x7F &* ones)
        let backslash = ~((low ^ 0x5C &* ones) &+ 0x7F &* ones)
        return (word | control | delete | quote | backslash) & highBits
    }

    /// Consumes `name` with its quotes if it is next: a word at a time when 32 bytes remain.
    mutating func take(_ name: MemberName) -> Bool {
        guard index + 32 <= bytes.count, let base = bytes.baseAddress else { return takeName(name.literal) }
        let at = UnsafeRawPointer(base + index)
        func word(_ offset: Int) -> UInt64 { UInt64(littleEndian: at.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) }
        guard (word(0) ^ name.words.0) & name.masks.0 == 0 else { return false }
        guard
            (word(8) ^ name.words.1) & name.masks.1 | (word(16) ^ name.words.2) & name.masks.2
                | (word(24) ^ name.words.3) & name.masks.3 == 0
        else { return false }
        index += name.length
        return true
    }

    /// `true` or `false`; nil for anything else.
    mutating func literalBool() -> Bool? {
        if takeLiteral("true") { return true }
        if takeLiteral("false") { return false }
        return nil
    }

    /// `null` (an optional member sent as absent). The first byte is checked first: most often
    /// a string comes (an event's `field`), and this is asked before it.
    @inline(__always)
    mutating func takeNull() -> Bool {
        index < bytes.count && bytes[index] == UInt8(ascii: "n") && takeLiteral("null")
    }

    private mutating func takeLiteral(_ literal: StaticString) -> Bool {
        guard index + literal.utf8CodeUnitCount <= bytes.count, matches(literal, at: index) else { return false }
        index += literal.utf8CodeUnitCount
        return true
    }

    /// A non-negative integer of at most 15 digits, without leading zeros, not followed by a
    /// fraction or exponent; nil for anything else.
    mutating func plainInteger() -> Int64? {
        let start = index
        var value: Int64 = 0
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
            value = value * 10 + Int64(bytes[index] - UInt8(ascii: "0"))
            index += 1
            if index - start > 15 { return nil }
        }
        let digits = index - start
        guard digits > 0, !(digits > 1 && bytes[start] == UInt8(ascii: "0")) else { return nil }
        if index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): return nil
            default: break
            }
        }
        return value
    }

    /// A JSON number, as the parser reads it; nil for anything else.
    mutating func number() -> Double? {
        guard let (value, end) = JSONParser.number(in: bytes, at: index) else { return nil }
        index = end
        return value
    }
}

/// A member name with its quotes as four little-endian words and masks, for `ByteCursor.take(_:)`.
struct MemberName: Sendable {
    let literal: StaticString
    /// Bytes with the quotes.
    let length: Int
    let words: (UInt64, UInt64, UInt64, UInt64)
    let masks: (UInt64, UInt64, UInt64, UInt64)

    init(_ literal: StaticString) {
        let quoted =
            [UInt8(ascii: "\"")] + UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
            + [UInt8(ascii: "\"")]
        precondition(quoted.count <= 32, "member names of at most 30 bytes")
        var words = [UInt64](repeating: 0, count: 4), masks = words
        for (i, byte) in quoted.enumerated() {
            words[i / 8] |= UInt64(byte) << (8 * (i % 8))
            masks[i / 8] |= 0xFF << (8 * (i % 8))
        }
        self.literal = literal
        self.length = quoted.count
        self.words = (words[0], words[1], words[2], words[3])
        self.masks = (masks[0], masks[1], masks[2], masks[3])
    }
}
