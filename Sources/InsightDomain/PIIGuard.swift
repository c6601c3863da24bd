/// The kinds of personal data the PII guard recognises in caller-controlled strings.
public enum PersonalDataKind: String, Sendable, CaseIterable {
    case emailAddress, phoneNumber, paymentCardNumber, iban
}

/// Recognises personal data in caller-controlled free strings (`requestId` and any future free
/// string) so the API can reject them with `contextInvalid` instead of storing or echoing them.
///
/// A pure function of its input: no Foundation, no regular expressions, no heap allocation (the
/// inspected bytes are copied into one stack buffer of `maxInspectedLength` bytes). Each detector
/// is a single left-to-right scan with constant work per byte, so a call costs O(min(n, 1024)).
///
/// ## Common rules
/// * Only ASCII is recognised: ASCII digits, letters and punctuation. Every non-ASCII byte acts as
///   a neutral delimiter (full-width digits or non-ASCII domains are not detected).
/// * **Tokens must be delimited.** A candidate whose first or last character touches an ASCII
///   letter or digit is part of a longer alphanumeric token and is judged as that token, i.e. not
///   flagged: "order-4111111111111111" is a card number, "order4111111111111111" is not. This is
///   what keeps hexadecimal ids (hashes, UUIDs without dashes) from ever producing card numbers.
/// * **Whole runs.** Digits inside a longer run of digits are judged as the whole run; a chain of
///   digit groups is judged as the whole chain ("2026-4111-1111-1111-1111" has 20 digits and is
///   not a card number).
/// * **UUIDs are opaque.** A delimited canonical UUID (8-4-4-4-12 hexadecimal digits, either case)
///   is blanked out before the detectors run; UUIDs are the recommended shape of request ids and
///   their digit groups must never be read as card or phone numbers.
/// * When a string contains several kinds, the checksum-verified kinds are reported first:
///   `iban`, then `paymentCardNumber`, then `emailAddress`, then `phoneNumber`.
///
/// ## IBAN (ISO 13616, check per ISO 7064 MOD 97-10)
/// Two letters (country), two digits (check digits 02–98), then the BBAN, either compact
/// (one alphanumeric token) or in the paper format: groups of four separated by single spaces,
/// the last group of 1–4. Letters of either case. The length including country and check digits
/// must equal the SWIFT IBAN Registry length of the country (89 countries, e.g. DE 22, GB 22,
/// FR 27, NL 18, NO 15, LC 32, RU 33); for a country code not in the registry the code must be
/// upper-case and the length 15–34 (IBAN-like national formats outside the registry). The
/// mod-97 remainder of the rearranged number must be 1. A compact token must have exactly that
/// length; a grouped IBAN may be followed by further words.
///
/// ## Payment card number (ISO/IEC 7812)
/// 12–19 digits, either one delimited run of digits or a delimited chain joined by single spaces
/// or by single dashes (not mixed) in a card layout: groups of four with a last group of 1–4
/// (4-4-4, 4-4-4-4, 4-4-4-4-3, ...), 4-6-5 (American Express) or 4-6-4 (Diners Club). The number
/// must pass the Luhn check and start with an issuer prefix of the card networks (as DLP tools
/// such as Microsoft Purview require a brand format): first digit 3, 4, 5 or 6; the 2-series only
/// as 2200–2204 (Mir) and 2221–2720 (Mastercard); 81, 82 (UnionPay, RuPay); 9792 (Troy).
/// Numbers starting with 0, 1, 7, 8 (other) or 9 (other) are not cards, which keeps Unix
/// millisecond timestamps (13 digits, "17…"), Snowflake ids ("1…") and "2026…" date stamps from
/// being flagged one time in ten by Luhn alone. UATP (airline, prefix 1) is deliberately not
/// recognised.
///
/// ## E-mail address
/// `local@domain` where the character before "@" is RFC 5322 `atext` (letters, digits and
/// ``!#$%&'*+-/=?^_`{|}~``) or the closing quote of a quoted local part, and the domain is at least
/// two dot-separated labels of letters, digits and hyphens, each starting with a letter or digit,
/// the last (the TLD) beginning with at least two letters that are not followed by a letter or
/// digit ("a@example.com-ref" is flagged, "a@example.com2" is not). A domain without a dot is
/// deliberately not flagged: "user@host" is not deliverable on the public internet, and ids such
/// as "txn@2026" or "job@worker3" are common. IP-literal domains ("a@[192.0.2.1]") are not
/// recognised.
///
/// ## Phone number
/// A phone token is a delimited run of digit groups, optionally starting with "+", joined by a
/// separator cluster: an optional ")" closing a parenthesised group, at most one of space, ".",
/// "-", and an optional "(" opening one. At most one parenthesised group, holding digits only.
/// Bare digit runs are never phone numbers (any 9–15-digit id would be). The token is a phone
/// number when one of these holds:
/// 1. **International (E.164)**: it starts with "+", which is not glued to a preceding letter or
///    digit, the first digit is 1–9 and it has 8–15 digits, with any separators:
///    "+44 20 7946 0958", "+1 (555) 123-4567", "+442079460958".
/// 2. **Parenthesised area code**: the first group, or the second after a 1–3-digit first group,
///    is a parenthesised group of 2–5 digits, and the token has 9–15 digits: "(555) 123-4567",
///    "1 (800) 555 0199".
/// 3. **National with trunk prefix**: one separator character used throughout, 2–6 groups,
///    the first of 2–5 digits, the others of 2–8 digits, and either the first group starts with
///    "0" and a digit 1–9 and the token has 9–15 digits ("020 7946 0958", "07700 900123",
///    "01 23 45 67 89"), or the first group starts with "00" and a digit 1–9, has at least 3
///    digits, and the token has 11–17 digits (international prefix: "0049-30-1234567"). A token
///    whose groups start DD-MM-YYYY with YYYY 19xx or 20xx is a date, not a phone number.
/// 4. **North American (NANP)**: one separator character used throughout, groups 3-3-4 with an
///    area code starting 2–9 ("555-123-4567", "555.123.4567"), or 1-3-3-4 starting with "1"
///    ("1-800-555-0199").
///
/// Not phone numbers: zero-padded counters ("0001-000123": "00" followed by 0), ids starting
/// with 1–9 and not in NANP shape ("txn-2026-000123", "INV-2026-0001", "2026-12-02"), dotted
/// versions and IPv4 addresses, mixed separators ("020-7946 0958"), three groups of three.
public enum PIIGuard {
    /// Longest input examined, in UTF-8 bytes. Longer strings are judged on their first
    /// `maxInspectedLength` bytes only; a token running across the cut is judged on its visible
    /// part. This never affects the API: `requestId` is limited to 128 Unicode scalars (at most
    /// 512 UTF-8 bytes) and subject identifiers to 256 scalars (at most 1024 bytes), so every
    /// string the API accepts is examined completely, while an attacker-supplied megabyte costs
    /// no more than 1 KiB of scanning.
    public static let maxInspectedLength = 1024

    /// The kind of personal data `text` appears to contain, or nil.
    public static func detect(_ text: String) -> PersonalDataKind? {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: maxInspectedLength) { storage -> PersonalDataKind? in
            var count = 0
            for byte in text.utf8 {
                guard count < maxInspectedLength else { break }
                storage[count] = byte
                count += 1
            }
            let bytes = UnsafeMutableBufferPointer(rebasing: storage[0..<count])
            blankOutUUIDs(bytes)
            let inspected = UnsafeBufferPointer(bytes)
            if containsIBAN(inspected) { return .iban }
            if containsPaymentCardNumber(inspected) { return .paymentCardNumber }
            if containsEmailAddress(inspected) { return .emailAddress }
            if containsPhoneNumber(inspected) { return .phoneNumber }
            return nil
        }
    }
}

// MARK: - Bytes

private typealias Bytes = UnsafeBufferPointer<UInt8>

private extension UInt8 {
    static let space = UInt8(ascii: " ")
    static let dash = UInt8(ascii: "-")
    static let dot = UInt8(ascii: ".")
    static let plus = UInt8(ascii: "+")
    static let at = UInt8(ascii: "@")
    static let openParen = UInt8(ascii: "(")
    static let closeParen = UInt8(ascii: ")")
    static let zero = UInt8(ascii: "0")

    var isDigit: Bool { self &- 0x30 < 10 }
    var isLetter: Bool { (self | 0x20) &- 0x61 < 26 }
    var isUppercase: Bool { self &- 0x41 < 26 }
    var isAlphanumeric: Bool { isDigit || isLetter }
    var isHexDigit: Bool { isDigit || (self | 0x20) &- 0x61 < 6 }
    var digitValue: Int { Int(self &- 0x30) }
    /// A phone separator that is not a parenthesis.
    var isPlainSeparator: Bool { self == .space || self == .dot || self == .dash }
    /// RFC 5322 `atext`.
    var isAtext: Bool {
        if isAlphanumeric { return true }
        switch self {
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "/"),
            UInt8(ascii: "="), UInt8(ascii: "?"), UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"),
            UInt8(ascii: "{"), UInt8(ascii: "|"), UInt8(ascii: "}"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }
}

extension PIIGuard {
    /// Whether the token `start..<end` stands alone: not glued to a letter or digit on either side.
    private static func isDelimited(_ b: Bytes, _ start: Int, _ end: Int) -> Bool {
        (start == 0 || !b[start - 1].isAlphanumeric) && (end == b.count || !b[end].isAlphanumeric)
    }

    // MARK: UUIDs

    /// Overwrites every delimited canonical UUID with "_" so no detector reads its digit groups.
    private static func blankOutUUIDs(_ b: UnsafeMutableBufferPointer<UInt8>) {
        let n = b.count
        var i = 0
        while i + 36 <= n {
            if b[i + 8] == .dash, isUUID(b, at: i), i == 0 || !b[i - 1].isAlphanumeric,
                i + 36 == n || !b[i + 36].isAlphanumeric
            {
                for k in i..<(i + 36) { b[k] = UInt8(ascii: "_") }
                i += 36
            } else {
                i += 1
            }
        }
    }

    private static func isUUID(_ b: UnsafeMutableBufferPointer<UInt8>, at i: Int) -> Bool {
        for k in 0..<36 {
            let c = b[i + k]
            if k == 8 || k == 13 || k == 18 || k == 23 {
                guard c == .dash else { return false }
            } else {
                guard c.isHexDigit else { return false }
            }
        }
        return true
    }

    // MARK: IBAN

    /// IBAN lengths of the SWIFT IBAN Registry, "CCnn" per country.
    private static let ibanRegistry =
        "AD24AE23AL28AT20AZ28BA20BE16BG22BH22BI27BR29BY28CH21CR22CY28CZ24DE22DJ27DK18DO28EE20EG29ES24"
        + "FI18FK18FO18FR27GB22GE22GI23GL18GR27GT28HN28HR21HU28IE22IL23IQ23IS26IT27JO30KW30KZ20LB28LC32"
        + "LI21LT20LU20LV21LY25MC27MD24ME22MK19MN20MR27MT31MU30NI28NL18NO15OM23PK24PL28PS29PT25QA29RO24"
        + "RS22RU33SA24SC31SD18SE24SI19SK24SM27SO23ST25SV28TL23TN24TR26UA29VA22VG24XK20YE30"

    /// The registry as a 26×26 table indexed by the country letters; 0 where not listed.
    private static let ibanLengths: [UInt8] = {
        var table = [UInt8](repeating: 0, count: 26 * 26)
        let bytes = Array(ibanRegistry.utf8)
        var i = 0
        while i + 4 <= bytes.count {
            table[Int(bytes[i] - 0x41) * 26 + Int(bytes[i + 1] - 0x41)] =
                UInt8(bytes[i + 2].digitValue * 10 + bytes[i + 3].digitValue)
            i += 4
        }
        return table
    }()

    /// The registry length of the IBANs of a country (letters of either case), or nil.
    private static func registeredIBANLength(_ first: UInt8, _ second: UInt8) -> Int? {
        guard first.isLetter, second.isLetter else { return nil }
        let length = ibanLengths[Int((first | 0x20) - 0x61) * 26 + Int((second | 0x20) - 0x61)]
        return length == 0 ? nil : Int(length)
    }

    @inline(__always)
    private static func mod97(_ remainder: Int, _ c: UInt8) -> Int {
        c.isDigit ? (remainder * 10 + c.digitValue) % 97 : (remainder * 100 + Int((c | 0x20) &- 0x61) + 10) % 97
    }

    private static func containsIBAN(_ b: Bytes) -> Bool {
        var i = 0
        while i + 15 <= b.count {  // Norway's 15 characters are the shortest IBAN
            if b[i].isLetter, b[i + 1].isLetter, b[i + 2].isDigit, b[i + 3].isDigit,
                i == 0 || !b[i - 1].isAlphanumeric, isIBAN(b, at: i)
            {
                return true
            }
            i += 1
        }
        return false
    }

    /// Whether an IBAN starts at `i`, where two letters and two digits were found.
    private static func isIBAN(_ b: Bytes, at i: Int) -> Bool {
        let n = b.count
        let registered = registeredIBANLength(b[i], b[i + 1])
        guard registered != nil || (b[i].isUppercase && b[i + 1].isUppercase) else { return false }
        guard (2...98).contains(b[i + 2].digitValue * 10 + b[i + 3].digitValue) else { return false }
        /// The rearranged number (BBAN, then country and check digits) leaves remainder 1.
        func checks(_ bbanRemainder: Int) -> Bool {
            var r = bbanRemainder
            for k in i..<(i + 4) { r = mod97(r, b[k]) }
            return r == 1
        }
        var remainder = 0
        var j = i + 4
        if j < n && b[j].isAlphanumeric {
            // Compact form: the whole alphanumeric token is the candidate.
            while j < n && b[j].isAlphanumeric {
                guard j - i < 34 else { return false }
                remainder = mod97(remainder, b[j])
                j += 1
            }
            let length = j - i
            return (registered.map { length == $0 } ?? (15...34).contains(length)) && checks(remainder)
        }
        // Paper form: groups of four after single spaces, the last of one to four.
        var length = 4
        while j + 1 < n && b[j] == .space && b[j + 1].isAlphanumeric {
            let groupStart = j + 1
            var k = groupStart
            while k < n && b[k].isAlphanumeric && k - groupStart < 5 { k += 1 }
            let size = k - groupStart
            guard size <= 4 && length + size <= 34 else { break }
            for m in groupStart..<k { remainder = mod97(remainder, b[m]) }
            length += size
            if let registered, length == registered { return checks(remainder) }
            if size < 4 { break }
            j = k
        }
        return registered == nil && (15...34).contains(length) && checks(remainder)
    }

    // MARK: Payment cards

    private static func containsPaymentCardNumber(_ b: Bytes) -> Bool {
        containsCardNumber(b, joinedBy: nil) || containsCardNumber(b, joinedBy: .space)
            || containsCardNumber(b, joinedBy: .dash)
    }

    /// Scans digit runs (`separator == nil`) or chains of digit groups joined by single `separator`s.
    private static func containsCardNumber(_ b: Bytes, joinedBy separator: UInt8?) -> Bool {
        let n = b.count
        var i = 0
        while i < n {
            guard b[i].isDigit else { i += 1; continue }
            let start = i
            var digits = 0
            var value: UInt64 = 0
            var groups = 0
            var sizes = (0, 0, 0)
            var innerGroupNotFour = false
            var lastSize = 0
            while true {
                let groupStart = i
                while i < n && b[i].isDigit {
                    if digits < 19 { value = value * 10 + UInt64(b[i].digitValue) }
                    digits += 1
                    i += 1
                }
                let size = i - groupStart
                lastSize = size
                switch groups {
                case 0: sizes.0 = size
                case 1: sizes.1 = size
                case 2: sizes.2 = size
                default: break
                }
                groups += 1
                guard let separator, i + 1 < n, b[i] == separator, b[i + 1].isDigit else { break }
                if size != 4 { innerGroupNotFour = true }
                i += 1
            }
            guard (12...19).contains(digits), isDelimited(b, start, i) else { continue }
            let layout: Bool
            if separator == nil {
                layout = true
            } else {
                layout =
                    groups >= 3
                    && ((!innerGroupNotFour && (1...4).contains(lastSize))
                        || (groups == 3 && sizes.0 == 4 && sizes.1 == 6 && (sizes.2 == 4 || sizes.2 == 5)))
            }
            if layout && isCardNumber(value, digits: digits) { return true }
        }
        return false
    }

    /// Issuer prefix and Luhn check of a 12–19-digit number.
    private static func isCardNumber(_ value: UInt64, digits: Int) -> Bool {
        var divisor: UInt64 = 1
        for _ in 0..<(digits - 4) { divisor *= 10 }
        guard hasIssuerPrefix(Int(value / divisor)) else { return false }
        var rest = value
        var sum: UInt64 = 0
        var doubled = false
        for _ in 0..<digits {
            var d = rest % 10
            rest /= 10
            if doubled {
                d *= 2
                if d > 9 { d -= 9 }
            }
            sum += d
            doubled.toggle()
        }
        return sum % 10 == 0
    }

    /// Whether the first four digits belong to a card network's range (see the type's documentation).
    private static func hasIssuerPrefix(_ first4: Int) -> Bool {
        switch first4 / 1000 {
        case 3, 4, 5, 6: return true
        case 2: return (2200...2204).contains(first4) || (2221...2720).contains(first4)
        case 8: return first4 / 100 == 81 || first4 / 100 == 82
        case 9: return first4 == 9792
        default: return false
        }
    }

    // MARK: E-mail addresses

    private static func containsEmailAddress(_ b: Bytes) -> Bool {
        let n = b.count
        var i = 1
        while i < n {
            if b[i] == .at && (b[i - 1].isAtext || b[i - 1] == UInt8(ascii: "\"")) && hasDomain(b, from: i + 1) {
                return true
            }
            i += 1
        }
        return false
    }

    /// Whether a domain of two or more labels with an alphabetic TLD starts at `start`.
    private static func hasDomain(_ b: Bytes, from start: Int) -> Bool {
        let n = b.count
        var i = start
        var labels = 0
        while i < n && b[i].isAlphanumeric {
            if labels > 0 {
                var j = i
                while j < n && b[j].isLetter { j += 1 }
                if j - i >= 2 && (j == n || !b[j].isAlphanumeric) { return true }
            }
            while i < n && (b[i].isAlphanumeric || b[i] == .dash) { i += 1 }
            labels += 1
            guard i < n && b[i] == .dot else { return false }
            i += 1
        }
        return false
    }

    // MARK: Phone numbers

    private struct PhoneToken {
        var plus = false
        var digits = 0
        var groups = 0
        /// Sizes and buffer offsets of the first six digit groups.
        var sizes = InlineArray<6, Int>(repeating: 0)
        var starts = InlineArray<6, Int>(repeating: 0)
        /// The first plain separator seen, and whether another one was used too.
        var separator: UInt8 = 0
        var mixedSeparators = false
        /// Index of the parenthesised group, or -1.
        var parenthesisedGroup = -1
        var malformed = false
    }

    private static func containsPhoneNumber(_ b: Bytes) -> Bool {
        let n = b.count
        var i = 0
        while i < n {
            let c = b[i]
            let startsToken =
                c.isDigit
                || (c == .plus && i + 1 < n
                    && (b[i + 1].isDigit
                        || (b[i + 1] == .openParen && i + 2 < n && b[i + 2].isDigit)))
                || (c == .openParen && i + 1 < n && b[i + 1].isDigit)
            guard startsToken else { i += 1; continue }
            let start = i
            var token = PhoneToken()
            i = scanPhoneToken(b, from: start, into: &token)
            if isDelimited(b, start, i) && isPhoneNumber(token, b) { return true }
        }
        return false
    }

    /// Reads the maximal phone token at `start`; returns its end.
    private static func scanPhoneToken(_ b: Bytes, from start: Int, into t: inout PhoneToken) -> Int {
        let n = b.count
        var i = start
        if b[i] == .plus {
            t.plus = true
            i += 1
        }
        var inParentheses = false
        if b[i] == .openParen {
            inParentheses = true
            t.parenthesisedGroup = 0
            i += 1
        }
        var end = i
        while true {
            let groupStart = i
            while i < n && b[i].isDigit { i += 1 }
            if t.groups < 6 {
                t.sizes[t.groups] = i - groupStart
                t.starts[t.groups] = groupStart
            }
            t.groups += 1
            t.digits += i - groupStart
            end = i
            var j = i
            if inParentheses {
                guard j < n && b[j] == .closeParen else {
                    t.malformed = true  // a parenthesised group holds one run of digits
                    break
                }
                inParentheses = false
                j += 1
                end = j
            }
            var separator: UInt8 = 0
            if j < n && b[j].isPlainSeparator {
                separator = b[j]
                j += 1
            }
            var opens = false
            if j < n && b[j] == .openParen && t.parenthesisedGroup < 0 {
                opens = true
                j += 1
            }
            guard j < n && b[j].isDigit else { break }
            if separator != 0 {
                if t.separator == 0 {
                    t.separator = separator
                } else if t.separator != separator {
                    t.mixedSeparators = true
                }
            }
            if opens {
                inParentheses = true
                t.parenthesisedGroup = t.groups
            }
            i = j
        }
        return end
    }

    private static func isPhoneNumber(_ t: PhoneToken, _ b: Bytes) -> Bool {
        guard !t.malformed else { return false }
        let first = t.starts[0]
        if t.plus {
            return b[first] != .zero && (8...15).contains(t.digits)
        }
        if t.parenthesisedGroup >= 0 {
            let p = t.parenthesisedGroup
            guard p == 0 || (p == 1 && (1...3).contains(t.sizes[0])) else { return false }
            return (2...5).contains(t.sizes[p]) && (9...15).contains(t.digits)
        }
        guard (2...6).contains(t.groups), !t.mixedSeparators else { return false }
        let s = t.sizes
        // North American Numbering Plan: 3-3-4 or 1-3-3-4.
        if t.groups == 3 && s[0] == 3 && s[1] == 3 && s[2] == 4 && b[first] >= UInt8(ascii: "2") { return true }
        if t.groups == 4 && s[0] == 1 && b[first] == UInt8(ascii: "1") && s[1] == 3 && s[2] == 3 && s[3] == 4
            && b[t.starts[1]] >= UInt8(ascii: "2")
        {
            return true
        }
        // National numbers with a trunk or international prefix.
        guard b[first] == .zero, (2...5).contains(s[0]) else { return false }
        for k in 1..<t.groups where !(2...8).contains(s[k]) { return false }
        if t.groups >= 3 && s[0] == 2 && s[1] == 2 && s[2] == 4 {
            let year = b[t.starts[2]].digitValue * 10 + b[t.starts[2] + 1].digitValue
            if year == 19 || year == 20 { return false }  // DD-MM-YYYY…: a date
        }
        let second = b[first + 1]
        if second != .zero { return (9...15).contains(t.digits) }
        return s[0] >= 3 && b[first + 2] != .zero && (11...17).contains(t.digits)
    }
}

extension PersonalDataKind: CustomStringConvertible {
    /// The kind in words, for error details (never the value itself).
    public var description: String {
        switch self {
        case .emailAddress: return "an e-mail address"
        case .phoneNumber: return "a phone number"
        case .paymentCardNumber: return "a payment card number"
        case .iban: return "an IBAN"
        }
    }
}
