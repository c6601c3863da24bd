import Crypto
import Foundation
import InsightDomain
import JSON
import XCTest

final class DomainTests: XCTestCase {
    func testAPIKeysAreRandomParseableAndCheckedAgainstTheirHash() throws {
        let key = APIKey.generate()
        XCTAssertTrue(key.token.hasPrefix("ik_"))
        XCTAssertEqual(key.token.count, 63)
        XCTAssertNotEqual(APIKey.generate(), key)
        let parsed = try XCTUnwrap(APIKey(token: key.token))
        XCTAssertEqual(parsed, key)
        XCTAssertTrue(parsed.matches(key.secretHash))
        XCTAssertFalse(parsed.matches(SHA256.digest(Array("other".utf8))))
        XCTAssertEqual(key.secretHash, SHA256.digest(Array(key.secret.utf8)))
        for bad in [
            "", "ik_", "xx" + key.token.dropFirst(2), String(key.token.dropLast()), key.token + "A",
            key.token.replacingOccurrences(of: "ik_", with: "ik-"),
            "ik_ZZZZZZZZZZZZZZZZ_" + String(key.token.suffix(43)),
            String(key.token.prefix(20)) + String(repeating: "!", count: 43)
        ] {
            XCTAssertNil(APIKey(token: bad), bad)
        }
    }

    func testSubjectHashesAreKeyedAndDomainSeparated() throws {
        let key = [UInt8](repeating: 7, count: 32)
        let hasher = try SubjectHasher(key: key)
        let account = hasher.hash("cust-1", kind: .account)
        XCTAssertEqual(account.count, 32)
        XCTAssertEqual(account, hasher.hash("cust-1", kind: .account))
        XCTAssertNotEqual(account, hasher.hash("cust-1", kind: .device))
        XCTAssertNotEqual(account, hasher.hash("cust-2", kind: .account))
        // Exactly HMAC-SHA256(key, "account" || 0x00 || identifier).
        XCTAssertEqual(account, HMACSHA256.authenticationCode(for: Array("account\u{0}cust-1".utf8), key: key))
        let other = try SubjectHasher(key: [UInt8](repeating: 8, count: 32))
        XCTAssertNotEqual(account, other.hash("cust-1", kind: .account))
        XCTAssertNotEqual(hasher.keyId, other.keyId)
        XCTAssertEqual(hasher.keyId.count, 16)
        XCTAssertThrowsError(try SubjectHasher(key: [UInt8](repeating: 1, count: 31)))
        // A retry's key and digest are exactly these bytes: entries stored before must still match.
        XCTAssertEqual(
            hasher.requestKey(callerId: "c-1", requestId: "r-1"),
            HMACSHA256.authenticationCode(for: Array("request\u{0}c-1\u{0}r-1".utf8), key: key))
        let body = SHA256.digest(Array("a body".utf8))
        XCTAssertEqual(hasher.requestDigest(body), HMACSHA256.authenticationCode(for: Array("request body\u{0}".utf8) + body, key: key))
    }

    func testTimestampsAndDates() {
        XCTAssertEqual(Timestamp.format(0), "1970-01-01T00:00:00.000Z")
        XCTAssertEqual(Timestamp.format(1_796_205_600_123), "2026-12-02T10:00:00.123Z")
        XCTAssertEqual(Timestamp.format(-1), "1969-12-31T23:59:59.999Z")
        XCTAssertEqual(Timestamp.format(253_402_300_800_000), "10000-01-01T00:00:00.000Z")
        XCTAssertEqual(Timestamp.format(-62_167_219_200_001), "-0001-12-31T23:59:59.999Z")
        // Written into a JSON document as it is, the same text between quotes.
        var object = JSONObjectWriter()
        object.member("at", timestamp: 1_796_205_600_123)
        object.member("then", timestamp: -1)
        XCTAssertEqual(
            String(decoding: object.bytes(), as: UTF8.self),
            #"{"at":"2026-12-02T10:00:00.123Z","then":"1969-12-31T23:59:59.999Z"}"#)
        XCTAssertEqual(Timestamp.parseDate("1970-01-02"), 86_400_000)
        XCTAssertEqual(Timestamp.parseDate("2024-02-29"), 1_709_164_800_000)
        for bad in ["2023-02-29", "2026-13-01", "2026-00-10", "2026-1-01", "20261201", "2026-12-32", "abcd-ef-gh", ""] {
            XCTAssertNil(Timestamp.parseDate(bad), bad)
        }
    }

    /// The hand-written formatter agrees with the C library's `gmtime_r` from 1600 to 2400
    /// (leap days, century rules, negative times) and round-trips with `daysFromCivil`.
    func testTimestampFormatAgreesWithGmtime() {
        var generator = SystemRandomNumberGenerator()
        let lower: Milliseconds = -11_676_096_000_000, upper: Milliseconds = 13_569_465_600_000
        var samples: [Milliseconds] = [951_782_400_000, 951_868_799_999, 4_107_542_399_999, -2_203_891_200_001]
        for _ in 0..<5_000 { samples.append(Milliseconds.random(in: lower...upper, using: &generator)) }
        for ms in samples {
            var seconds = time_t(ms >= 0 ? ms / 1000 : (ms - 999) / 1000)
            var parts = tm()
            gmtime_r(&seconds, &parts)
            let millis = Int(ms - Milliseconds(seconds) * 1000)
            let expected = String(
                format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
                Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), millis)
            XCTAssertEqual(Timestamp.format(ms), expected, "\(ms)")
            let days = Int(seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400)
            let civil = Timestamp.civilFromDays(days)
            XCTAssertEqual(Timestamp.daysFromCivil(year: civil.year, month: civil.month, day: civil.day), days)
        }
    }

    /// Years 0–9999 are written straight into the string; the rest the general way.
    func testTimestampsAtTheEdgesOfFourDigitYears() {
        func ms(_ year: Int, _ month: Int, _ day: Int) -> Milliseconds {
            Milliseconds(Timestamp.daysFromCivil(year: year, month: month, day: day)) * 86_400_000
        }
        XCTAssertEqual(Timestamp.format(ms(0, 1, 1)), "0000-01-01T00:00:00.000Z")
        XCTAssertEqual(Timestamp.format(ms(9999, 12, 31) + 86_399_999), "9999-12-31T23:59:59.999Z")
        XCTAssertEqual(Timestamp.format(ms(10000, 1, 1)), "10000-01-01T00:00:00.000Z")
        XCTAssertEqual(Timestamp.format(ms(-1, 12, 31) + 86_399_999), "-0001-12-31T23:59:59.999Z")
        XCTAssertEqual(Timestamp.format(1_796_205_600_123), "2026-12-02T10:00:00.123Z")
    }

    func testSystemClockIsNow() {
        let now = SystemClock().now()
        XCTAssertGreaterThan(now, 1_700_000_000_000)
    }
}

/// The transparency cursor's seal (`TransparencyCursor`).
final class TransparencyCursorTests: XCTestCase {
    let key = Array(repeating: UInt8(7), count: 32)

    func testACursorOpensOnlyWhereItWasSealed() {
        let position = SubjectHistoryCursor(time: 1_765_000_000_000, sequence: 41_337)
        let text = TransparencyCursor.seal(position, tenant: "acme", environment: .production, key: key)
        XCTAssertEqual(TransparencyCursor.open(text, tenant: "acme", environment: .production, key: key), position)
        XCTAssertNil(TransparencyCursor.open(text, tenant: "globex", environment: .production, key: key))
        XCTAssertNil(TransparencyCursor.open(text, tenant: "acme", environment: .sandbox, key: key))
        XCTAssertNil(TransparencyCursor.open(text, tenant: "acme", environment: .production, key: Array(repeating: 8, count: 32)))
        // Every byte matters; the next position looks unrelated.
        for i in text.indices {
            var altered = text
            altered.replaceSubrange(i...i, with: text[i] == "A" ? "B" : "A")
            XCTAssertNil(TransparencyCursor.open(altered, tenant: "acme", environment: .production, key: key))
        }
        let following = TransparencyCursor.seal(
            SubjectHistoryCursor(time: position.time, sequence: position.sequence + 1),
            tenant: "acme", environment: .production, key: key)
        XCTAssertNotEqual(text.prefix(22), following.prefix(22))
        XCTAssertNotEqual(text.suffix(21), following.suffix(21))
    }
}

/// Which names a caller may have (`Caller.validName`).
final class CallerNameTests: XCTestCase {
    func testPrintableTextOfAnyScriptIsANameAndControlOrFormatCharactersAreNot() {
        XCTAssertEqual(Caller.validName("  Zahlungsverkehr – Bänk 🏦\t"), "Zahlungsverkehr – Bänk 🏦")
        XCTAssertEqual(Caller.validName("مدفوعات"), "مدفوعات", "right-to-left letters are letters")
        for name in [
            "", " ", "pay\u{202E}ments", "pay\u{202A}x", "pay\u{2067}x\u{2069}", "pay\u{200B}ments", "pay\u{200F}",
            "pay\u{FEFF}", "a\nb", "a\u{1B}[0m", "a\u{85}b", "a\u{2029}b", "a\u{E000}b", String(repeating: "é", count: 51)
        ] {
            XCTAssertNil(Caller.validName(name), name.unicodeScalars.map { String($0.value, radix: 16) }.joined(separator: " "))
        }
    }
}
