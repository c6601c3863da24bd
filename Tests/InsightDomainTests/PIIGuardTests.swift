import InsightDomain
import XCTest

/// The PII guard against published test numbers, hand-made boundary cases both ways, random
/// transaction-id shapes, and oversized input. Sources of the published vectors: payment-processor
/// test card lists (Stripe, Braintree, PayPal), the IBAN examples of the SWIFT IBAN Registry and
/// ISO 13616, Ofcom's drama range (020 7946 0xxx) and the NANP fictional 555 numbers.
final class PIIGuardTests: XCTestCase {
    private func assertDetects(
        _ cases: [String], _ kind: PersonalDataKind?,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        for text in cases {
            XCTAssertEqual(PIIGuard.detect(text), kind, "\(text)", file: file, line: line)
        }
    }

    // MARK: Payment cards

    static let publishedCards = [
        "4111111111111111", "4012888888881881", "4242424242424242", "4000056655665556",  // Visa
        "4222222222222", "4007000000027",  // Visa, 13 digits
        "5555555555554444", "5105105105105100", "5200828282828210",  // Mastercard
        "2223003122003222",  // Mastercard 2-series
        "378282246310005", "371449635398431",  // American Express
        "6011111111111117", "6011000990139424",  // Discover
        "3530111333300000", "3566002020360505",  // JCB
        "30569309025904", "38520000023237", "36227206271667", "3056930009020004",  // Diners Club
        "6200000000000005", "6205500000000000004",  // UnionPay, 16 and 19 digits
        "6304000000000000000"  // Maestro/Laser, 19 digits (Luhn-valid)
    ]

    func testPublishedCardNumbersAreDetected() {
        assertDetects(Self.publishedCards, .paymentCardNumber)
    }

    func testCardNumbersWithOneDigitChangedFailLuhn() {
        for card in Self.publishedCards {
            var digits = Array(card.utf8)
            for position in [digits.count - 1, digits.count / 2] {
                let original = digits[position]
                digits[position] = UInt8(ascii: "0") + (original - UInt8(ascii: "0") + 1) % 10
                XCTAssertNil(PIIGuard.detect(String(decoding: digits, as: UTF8.self)), "\(card) changed at \(position)")
                digits[position] = original
            }
        }
    }

    func testGroupedAndEmbeddedCardNumbers() {
        assertDetects(
            [
                "4111 1111 1111 1111", "4111-1111-1111-1111", "5555 5555 5555 4444",
                "3782 822463 10005", "3714-496353-98431",  // Amex 4-6-5
                "3056 930902 5904",  // Diners 4-6-4
                "6205 5000 0000 0000 004",  // 4-4-4-4-3
                "4222 2222 2222 2",  // 4-4-4-1
                "order-4111111111111111", "order_4111111111111111", "card: 5555 5555 5555 4444.",
                "pay 4111-1111-1111-1111 now", "ref=2026 4111-1111-1111-1111", "4111111111111111/2026",
                "txn-550e8400-e29b-41d4-a716-446655440000-4111111111111111"
            ], .paymentCardNumber)
    }

    func testCardLengthAndLayoutBoundaries() {
        // 12 digits is the shortest card number, 19 the longest.
        XCTAssertEqual(PIIGuard.detect(Self.luhnComplete("50000000000")), .paymentCardNumber)  // 12
        XCTAssertNil(PIIGuard.detect(Self.luhnComplete("5000000000")))  // 11
        XCTAssertEqual(PIIGuard.detect(Self.luhnComplete("500000000000000000")), .paymentCardNumber)  // 19
        XCTAssertNil(PIIGuard.detect(Self.luhnComplete("5000000000000000000")))  // 20
        XCTAssertNil(PIIGuard.detect("41111111111111111111"))  // 20 digits: judged as the whole run
        XCTAssertNil(PIIGuard.detect("94111111111111111"))  // the card inside a longer run
        // Chains are judged whole and only in card layouts.
        assertDetects(
            [
                "2026-4111-1111-1111-1111",  // 20 digits
                "41 1111 1111 1111 11", "411 1111 1111 1111 1", "4111 11111111 1111",  // not card layouts
                "4111-1111 1111-1111",  // mixed separators
                "4111--1111--1111--1111", "4111.1111.1111.1111",  // not card separators
                "order4111111111111111", "4111111111111111x"  // glued to letters: part of a longer token
            ], nil)
        // Luhn-valid numbers outside the card networks' prefixes.
        for prefix in ["1", "0", "7", "9", "2026", "2000", "2721", "8012"] {
            let padded = prefix + String(repeating: "3", count: 15 - prefix.count)
            XCTAssertNil(PIIGuard.detect(Self.luhnComplete(padded)), padded)
        }
        for prefix in ["2200", "2204", "2221", "2720", "81", "82", "9792"] {
            let padded = prefix + String(repeating: "3", count: 15 - prefix.count)
            XCTAssertEqual(PIIGuard.detect(Self.luhnComplete(padded)), .paymentCardNumber, padded)
        }
    }

    /// Appends the Luhn check digit.
    static func luhnComplete(_ payload: String) -> String {
        var sum = 0
        for (offset, character) in payload.reversed().enumerated() {
            var d = character.wholeNumberValue!
            if offset % 2 == 0 {
                d *= 2
                if d > 9 { d -= 9 }
            }
            sum += d
        }
        return payload + String((10 - sum % 10) % 10)
    }

    // MARK: IBANs

    static let publishedIBANs = [
        "GB82 WEST 1234 5698 7654 32", "GB29 NWBK 6016 1331 9268 19", "DE89 3704 0044 0532 0130 00",
        "FR14 2004 1010 0505 0001 3M02 606", "NL91 ABNA 0417 1643 00", "BE68 5390 0754 7034",
        "CH93 0076 2011 6238 5295 7", "AT61 1904 3002 3457 3201", "ES91 2100 0418 4502 0005 1332",
        "DK50 0040 0440 1162 43", "FI21 1234 5600 0007 85", "IE29 AIBK 9311 5212 3456 78",
        "NO93 8601 1117 947", "PL61 1090 1014 0000 0712 1981 2874", "PT50 0002 0123 1234 5678 9015 4",
        "SE45 5000 0000 0583 9825 7466", "LU28 0019 4006 4475 0000", "IT60 X054 2811 1010 0000 0123 456",
        "AD12 0001 2030 2003 5910 0100"
    ]

    func testPublishedIBANsAreDetectedGroupedCompactAndEmbedded() {
        assertDetects(Self.publishedIBANs, .iban)
        let compact = Self.publishedIBANs.map { $0.replacingOccurrences(of: " ", with: "") }
        assertDetects(compact, .iban)
        assertDetects(compact.map { $0.lowercased() }, .iban)
        assertDetects(
            [
                "pay to DE89370400440532013000 today", "IBAN:NL91ABNA0417164300", "iban=GB82WEST12345698765432&x=1",
                "to GB82 WEST 1234 5698 7654 32 by friday", "BE68 5390 0754 7034 THIS WEEK"
            ], .iban)
    }

    func testIBANNegatives() throws {
        for iban in Self.publishedIBANs {
            let wrongCheck = Self.changingCheckDigits(iban)
            XCTAssertNotEqual(PIIGuard.detect(wrongCheck), .iban, wrongCheck)
            XCTAssertNil(PIIGuard.detect(wrongCheck.replacingOccurrences(of: " ", with: "")), wrongCheck)
        }
        // Valid mod-97 but the wrong length for the country.
        for (country, bban) in [
            ("GB", "WEST123456987654321"), ("GB", "WEST1234569876543"),
            ("DE", "3704004405320130001"), ("NL", "ABNA041716430"), ("BE", "5390075470345")
        ] {
            let iban = Self.makeIBAN(country, bban)
            XCTAssertNil(PIIGuard.detect(iban), iban)
        }
        // Glued to a preceding letter or digit, trailing characters, or broken grouping.
        assertDetects(
            [
                "xGB82WEST12345698765432", "GB82WEST12345698765432X", "GB82 WES T123 4569 8765 432",
                "GB82WEST 1234 5698 7654 32"
            ], nil)
        // 99 instead of 02 leaves the same remainder but is not a valid check number.
        let two = try XCTUnwrap(
            (0..<10_000).lazy.map { Self.makeIBAN("XY", String(10_000_000_000 + $0)) }
                .first { $0.hasPrefix("XY02") })
        XCTAssertEqual(PIIGuard.detect(two), .iban)
        XCTAssertNil(PIIGuard.detect("XY99" + two.dropFirst(4)))
    }

    func testRegistryLengthsAndUnlistedCountries() {
        let registry: [String: Int] = [
            "DE": 22, "GB": 22, "FR": 27, "NL": 18, "ES": 24, "IT": 27, "BE": 16, "CH": 21, "AT": 20, "PL": 28,
            "SE": 24, "NO": 15, "DK": 18, "FI": 18, "IE": 22, "PT": 25, "LU": 20, "LC": 32, "RU": 33, "MT": 31
        ]
        for (country, length) in registry {
            for candidate in [length - 1, length, length + 1] where candidate >= 5 {
                let iban = Self.makeIBAN(country, String(repeating: "7", count: candidate - 4))
                XCTAssertEqual(PIIGuard.detect(iban), candidate == length ? .iban : nil, iban)
                XCTAssertEqual(PIIGuard.detect(iban.lowercased()), candidate == length ? .iban : nil, iban)
            }
        }
        // A country code not in the registry: upper case, 15–34 characters.
        for length in [14, 15, 28, 34, 35] {
            let iban = Self.makeIBAN("BJ", String(repeating: "7", count: length - 4))
            XCTAssertEqual(PIIGuard.detect(iban), (15...34).contains(length) ? .iban : nil, iban)
            XCTAssertNil(PIIGuard.detect(iban.lowercased()), iban)
        }
        XCTAssertEqual(PIIGuard.detect(Self.grouped(Self.makeIBAN("BJ", "7777777777777777777777777777"))), .iban)
    }

    /// An IBAN with correct check digits (ISO 7064 MOD 97-10).
    static func makeIBAN(_ country: String, _ bban: String) -> String {
        let check = 98 - mod97(bban + country + "00")
        return country + (check < 10 ? "0" : "") + String(check) + bban
    }

    static func mod97(_ text: String) -> Int {
        var remainder = 0
        for character in text.uppercased() {
            let value = character.isNumber ? character.wholeNumberValue! : Int(character.asciiValue! - 55)
            remainder = (remainder * (value < 10 ? 10 : 100) + value) % 97
        }
        return remainder
    }

    static func changingCheckDigits(_ iban: String) -> String {
        var characters = Array(iban)
        characters[3] = Character(String((characters[3].wholeNumberValue! + 1) % 10))
        return String(characters)
    }

    static func grouped(_ compact: String) -> String {
        var out = ""
        for (i, character) in compact.enumerated() {
            if i > 0 && i % 4 == 0 { out.append(" ") }
            out.append(character)
        }
        return out
    }

    // MARK: E-mail addresses

    func testEmailAddresses() {
        assertDetects(
            [
                "john.doe@example.com", "first.last+tag@sub.example.co.uk", "o'reilly@example.ie", "a@b.co",
                "USER@EXAMPLE.ORG", "contact: jane_doe-1@my-bank.example.de;", "\"john doe\"@example.com",
                "user%ops@example.museum", "txn-2026-000123:buyer@example.com", "x@example.com-ref",
                "mail me at john@example.com.", "550e8400-e29b-41d4-a716-446655440000@example.com"
            ], .emailAddress)
        assertDetects(
            [
                "txn@2026", "user@host", "job@worker3", "name@localhost", "a@b.c", "batch@v1.2", "txn@2026.12",
                "@example.com", "a@.com", "a@-x.com", "a@example.c0m", "a@example.com2", "a.@example", "@@",
                "a@[192.0.2.1]", "at@ example.com", "order@@example"
            ], nil)
    }

    // MARK: Phone numbers

    func testPhoneNumbers() {
        assertDetects(
            [
                "(555) 123-4567", "020 7946 0958", "+44 20 7946 0958", "0049-30-1234567", "+1 (555) 123-4567",
                "+44 (0) 20 7946 0958", "+44 (0)20 7946 0958", "555-123-4567", "555.123.4567", "555 123 4567",
                "1-800-555-0199", "1 (800) 555 0199", "+442079460958", "07700 900123", "01 23 45 67 89",
                "tel:+33 1 23 45 67 89", "+49 30 1234567", "0044 20 7946 0958", "call 020 7946 0958 today",
                "(020) 7946 0958", "06 1234 5678", "030 12345678", "phone=+1-555-123-4567&x"
            ], .phoneNumber)
    }

    func testPhoneBoundaries() {
        // E.164: "+" then 8–15 digits, first digit not 0, "+" not glued to a letter or digit.
        assertDetects(["+12345678", "+123456789012345", "+1 234 567 89", "x +12345678"], .phoneNumber)
        assertDetects(
            [
                "+1234567", "+1234567890123456", "+0123456789", "v1+12345678", "1.2.3+20261202",
                "+1 234 567"
            ], nil)
        // Trunk prefix: 9–15 digits.
        assertDetects(["020 794 609", "0123 4567 8901 234"], .phoneNumber)
        assertDetects(["020 794 60", "0123 4567 8901 2345"], nil)
        // International prefix 00: 11–17 digits, a country code after it.
        assertDetects(["0049 30 12345", "0049 301 2345 6789 01"], .phoneNumber)
        assertDetects(["0049 30 1234", "0049 3012 3456 7890 12", "0001-000123", "0012-000345"], nil)
        // Group shapes.
        assertDetects(["020-7946 0958", "012345-678901", "0 20 7946 0958", "020 7946 095 8", "0207946095 8"], nil)
        assertDetects(["02-12-2026-01", "02.12.2026 10", "31.12.1999.12"], nil)  // dates
        // NANP: area code 2–9, exact 3-3-4.
        assertDetects(
            [
                "123-456-7890", "555-123-456", "555-1234-567", "5551234567", "555-123-45678",
                "2-555-123-4567"
            ], nil)
        // Parenthesised area code of 2–5 digits, 9–15 digits in all, at the start.
        assertDetects(["(555) 123-456", "(55) 1234 5678"], .phoneNumber)
        assertDetects(
            [
                "(555) 12-34", "(555123) 456-7890", "2026-000123 (12)", "order(555) 123-4567",
                "(555 123-4567", "(5) 123 456 789"
            ], nil)
        // Glued to letters on either side.
        assertDetects(["ab020 7946 0958", "020 7946 0958ab"], nil)
    }

    // MARK: Transaction ids

    func testTransactionIdShapesAreNeverFlagged() {
        assertDetects(
            [
                "txn-2026-000123", "order-12345", "2026-12-02", "INV-2026-0001", "123456", "1234567", "12345678",
                "123456789", "123456789012", "550e8400-e29b-41d4-a716-446655440000",
                "550E8400-E29B-41D4-A716-446655440000", "11111111-2222-3333-4444-555555555555",
                "2026-12-02T10:30:00Z", "2026-12-02 10:30:00", "20261202103000", "1767225600000",
                "1790000000000000001", "01HZY3M5K2Q8W7E6R5T4Y3U2I1", "req_01HZY3M5K2Q8W7", "ch_3MmlLrLkdIwHu7ix0snN0B15",
                "a3f5c2e1b4d6978812345678901234ab", "txn-2026-000123-retry-2", "order-12345/line-7", "v1.2.3+20261202",
                "batch 2026-12-02 run 17", "192.168.100.200", "10.0.0.1:8080", "INV-2026-0001-A", "A-2026-12-02-0042",
                "cust-42@2026", "txn@2026", "TXN-2026-000123-0000001"
            ], nil)
    }

    func testUUIDsAreOpaque() {
        let card = Self.luhnComplete("50000000000")  // 12 digits, Luhn-valid, Maestro prefix
        XCTAssertEqual(PIIGuard.detect("ref-" + card), .paymentCardNumber)
        XCTAssertNil(PIIGuard.detect("00000000-0000-4000-8000-" + card))
        XCTAssertNil(PIIGuard.detect("txn 00000000-0000-4000-8000-\(card) retry"))
        XCTAssertNil(PIIGuard.detect("00000000-0000-4000-8000-\(card.uppercased())/" + card.prefix(4)))
    }

    func testRandomUUIDsAreNeverFlagged() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
            bytes[6] = bytes[6] & 0x0F | 0x40
            bytes[8] = bytes[8] & 0x3F | 0x80
            let hex = bytes.map { String($0 >> 4, radix: 16) + String($0 & 0x0F, radix: 16) }.joined()
            let uuid = [
                hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4),
                hex.dropFirst(16).prefix(4), hex.dropFirst(20)
            ].joined(separator: "-")
            for text in [uuid, uuid.uppercased(), "txn-" + uuid, hex, "req " + uuid + " retry 2"] {
                XCTAssertNil(PIIGuard.detect(text), text)
            }
        }
    }

    func testRandomTransactionIdsAreNeverFlagged() {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789")
        let alphanumerics = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ")
        for _ in 0..<100 {
            let year = Int.random(in: 1990...2099, using: &generator)
            let numeric = String((0..<6).map { _ in digits.randomElement(using: &generator)! })
            let mixed = String((0..<6).map { _ in alphanumerics.randomElement(using: &generator)! })
            for text in ["txn-\(year)-\(numeric)", "txn-\(year)-\(mixed)", "TXN-\(year)-\(mixed.lowercased())"] {
                XCTAssertNil(PIIGuard.detect(text), text)
            }
        }
    }

    // MARK: Bounds

    func testEveryAcceptableRequestIdIsExaminedCompletely() {
        // requestId: at most 128 Unicode scalars, so at most 512 UTF-8 bytes.
        XCTAssertGreaterThanOrEqual(PIIGuard.maxInspectedLength, 4 * 128)
        let longest = String(repeating: "\u{1F600}", count: 111) + " 4111111111111111"
        XCTAssertEqual(longest.unicodeScalars.count, 128)
        XCTAssertEqual(PIIGuard.detect(longest), .paymentCardNumber)
        let padding = String(repeating: "x", count: PIIGuard.maxInspectedLength - 21)
        XCTAssertEqual(PIIGuard.detect(padding + " john@example.com"), .emailAddress)
    }

    func testHugeInputsAreJudgedOnTheirPrefixQuickly() {
        let megabyte = 1 << 20
        let inputs: [(String, PersonalDataKind?)] = [
            (String(repeating: "a", count: megabyte), nil),
            (String(repeating: "a@", count: megabyte / 2), nil),
            (String(repeating: "a@b.", count: megabyte / 4), nil),
            (String(repeating: "0", count: megabyte), nil),
            (String(repeating: "0 ", count: megabyte / 2), nil),
            (String(repeating: "+1(2)", count: megabyte / 5), nil),
            (String(repeating: "GB82 ", count: megabyte / 5), nil),
            (String(repeating: "4111-", count: megabyte / 5), nil),
            ("4111111111111111 " + String(repeating: "z", count: megabyte), .paymentCardNumber),
            // Beyond the inspected prefix: documented truncation, not detected.
            (String(repeating: "z", count: megabyte) + " 4111111111111111", nil),
            (String(repeating: "z", count: PIIGuard.maxInspectedLength) + " john@example.com", nil)
        ]
        let clock = ContinuousClock()
        for (text, expected) in inputs {
            var result: PersonalDataKind?
            let elapsed = clock.measure { result = PIIGuard.detect(text) }
            XCTAssertEqual(result, expected, String(text.prefix(20)))
            XCTAssertLessThan(elapsed, .milliseconds(50), String(text.prefix(20)))
        }
    }

    func testKindsHaveWireNames() {
        XCTAssertEqual(
            PersonalDataKind.allCases.map(\.rawValue),
            ["emailAddress", "phoneNumber", "paymentCardNumber", "iban"])
    }
}
