@testable import InsightAPI
import XCTest

/// `ByteCursor.plainString` reads eight bytes at a time; it must accept and decline exactly what
/// a byte-by-byte reading does, wherever in a word the string ends or a non-letter sits.
final class ByteCursorTests: XCTestCase {
    static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    func testEveryByteValueInEveryPositionOfAWordIsJudgedAsOneByOne() {
        let letters = Array("qWeRtYuI".utf8)
        for position in 0..<8 {
            for value in 0...255 {
                var bytes = letters
                bytes[position] = UInt8(value)
                let word = bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
                let expected = (0..<8).reduce(UInt64(0)) { mask, i in
                    Self.isLetter(bytes[i]) ? mask : mask | (0x80 << (8 * UInt64(i)))
                }
                XCTAssertEqual(ByteCursor.nonLetterBytes(word), expected, "byte \(value) at \(position)")
            }
        }
    }

    /// The reference: a quoted run of ASCII letters, or nil.
    static func plainString(_ text: [UInt8]) -> (String, end: Int)? {
        guard text.first == UInt8(ascii: "\"") else { return nil }
        var i = 1
        while i < text.count, isLetter(text[i]) { i += 1 }
        guard i < text.count, text[i] == UInt8(ascii: "\"") else { return nil }
        return (String(decoding: text[1..<i], as: UTF8.self), i + 1)
    }

    func testStringsOfEveryLengthEndingAnywhereReadAsOneByOne() {
        let intruders: [UInt8] = [0x22, 0x5C, 0x20, 0x30, 0x40, 0x5B, 0x60, 0x7B, 0x7F, 0x80, 0xC3, 0xFF, 0x00]
        for length in 0..<40 {
            let name = Array(String(repeating: "aZ", count: 20).utf8.prefix(length))
            var cases: [[UInt8]] = [
                [0x22] + name + [0x22],  // ends at the buffer's end
                [0x22] + name + [0x22, 0x2C, 0x7D],  // followed by more
                [0x22] + name  // never closed
            ]
            for position in 0..<length {
                for intruder in intruders {
                    var text = [0x22] + name + [0x22, 0x7D]
                    text[1 + position] = intruder
                    cases.append(text)
                }
            }
            for text in cases {
                let read: (String, end: Int)? = text.withUnsafeBufferPointer { buffer in
                    var cursor = ByteCursor(bytes: buffer, index: 0)
                    guard let string = cursor.plainString() else { return nil }
                    return (String(decoding: string, as: UTF8.self), cursor.index)
                }
                let expected = Self.plainString(text)
                XCTAssertEqual(read?.0, expected?.0, "\(text)")
                XCTAssertEqual(read?.end, expected?.end, "\(text)")
            }
        }
    }

    // MARK: - Printable strings and member names, also read a word at a time

    static func isPlainPrintable(_ byte: UInt8) -> Bool {
        byte >= 0x20 && byte < 0x7F && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\")
    }

    func testEveryByteValueInEveryPositionOfAWordIsJudgedPrintableAsOneByOne() {
        let printable = Array("a B~0!z ".utf8)
        for position in 0..<8 {
            for value in 0...255 {
                var bytes = printable
                bytes[position] = UInt8(value)
                let word = bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
                let expected = (0..<8).reduce(UInt64(0)) { mask, i in
                    Self.isPlainPrintable(bytes[i]) ? mask : mask | (0x80 << (8 * UInt64(i)))
                }
                XCTAssertEqual(ByteCursor.unprintableBytes(word), expected, "byte \(value) at \(position)")
            }
        }
    }

    /// The reference: a quoted run of printable ASCII without escapes, of 1 to `maxLength` bytes.
    static func printableString(_ text: [UInt8], maxLength: Int) -> (String, end: Int)? {
        guard text.first == UInt8(ascii: "\"") else { return nil }
        var i = 1
        while i < text.count, isPlainPrintable(text[i]) { i += 1 }
        guard i < text.count, text[i] == UInt8(ascii: "\""), i > 1, i - 1 <= maxLength else { return nil }
        return (String(decoding: text[1..<i], as: UTF8.self), i + 1)
    }

    func testPrintableStringsOfEveryLengthEndingAnywhereReadAsOneByOne() {
        let intruders: [UInt8] = [0x22, 0x5C, 0x1F, 0x00, 0x7F, 0x80, 0xC3, 0xFF, 0x20, 0x7E, 0x21, 0x23, 0x5B, 0x5D]
        for length in 0..<40 {
            let text = Array(String(repeating: "a-Z 9~", count: 7).utf8.prefix(length))
            var cases: [[UInt8]] = [[0x22] + text + [0x22], [0x22] + text + [0x22, 0x2C, 0x7D], [0x22] + text]
            for position in 0..<length {
                for intruder in intruders {
                    var bytes = [0x22] + text + [0x22, 0x7D]
                    bytes[1 + position] = intruder
                    cases.append(bytes)
                }
            }
            for bytes in cases {
                for maxLength in [length - 1, length] where maxLength >= 0 {
                    let read: (String, end: Int)? = bytes.withUnsafeBufferPointer { buffer in
                        var cursor = ByteCursor(bytes: buffer, index: 0)
                        guard let string = cursor.printableString(maxLength: maxLength) else { return nil }
                        return (string, cursor.index)
                    }
                    let expected = Self.printableString(bytes, maxLength: maxLength)
                    XCTAssertEqual(read?.0, expected?.0, "\(bytes) within \(maxLength)")
                    XCTAssertEqual(read?.end, expected?.end, "\(bytes) within \(maxLength)")
                }
            }
        }
    }

    /// `take(MemberName)` compares words where 32 bytes remain and bytes elsewhere: it must take
    /// exactly the name, wherever it sits, and nothing that differs in any byte or in length.
    func testMemberNamesAreTakenExactlyWhereverTheyEnd() {
        for name in ["t", "type", "device", "requestId", "schemaVersion", "counterparty", "callStartedBeforeSession"] {
            let literal = MemberName(staticName(name))
            let quoted = Array("\"\(name)\"".utf8)
            var others: [[UInt8]] = [Array("\"\(name)x\"".utf8), Array("\"\(name.dropLast())\"".utf8), Array(name.utf8)]
            for i in quoted.indices {
                var changed = quoted
                changed[i] ^= 0x20
                others.append(changed)
            }
            for padding in [0, 1, 7, 8, 31, 32, 40] {
                let tail = Array(repeating: UInt8(ascii: " "), count: padding)
                for (text, taken) in [(quoted, true)] + others.map({ ($0, false) }) {
                    let bytes = text + Array(":1".utf8) + tail
                    bytes.withUnsafeBufferPointer { buffer in
                        var cursor = ByteCursor(bytes: buffer, index: 0)
                        XCTAssertEqual(cursor.take(literal), taken, "\(String(decoding: bytes, as: UTF8.self))")
                        XCTAssertEqual(cursor.index, taken ? quoted.count : 0)
                    }
                }
            }
        }
    }

    private func staticName(_ name: String) -> StaticString {
        switch name {
        case "t": "t"
        case "type": "type"
        case "device": "device"
        case "requestId": "requestId"
        case "schemaVersion": "schemaVersion"
        case "counterparty": "counterparty"
        default: "callStartedBeforeSession"
        }
    }
}
