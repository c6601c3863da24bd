import JSON

/// RFC 3339 timestamps in UTC with millisecond precision ("2026-12-02T10:00:00.123Z"),
/// formatted without Foundation because it happens on every response.
public enum Timestamp {
    /// `ms` as an RFC 3339 UTC timestamp.
    public static func format(_ ms: Milliseconds) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(32)
        write(ms, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `ms` as an RFC 3339 UTC timestamp to `out`: digits and punctuation only, so it
    /// goes into JSON as it is. Written byte by byte with the civil-date arithmetic below:
    /// `gmtime_r` takes glibc's time-zone lock, and string interpolation of seven padded fields
    /// cost more than the rest of a log line.
    public static func write(_ ms: Milliseconds, into out: inout [UInt8]) {
        let days = ms >= 0 ? ms / 86_400_000 : (ms - 86_399_999) / 86_400_000
        let msOfDay = Int(ms - days * 86_400_000)
        let (year, month, day) = civilFromDays(Int(days))
        if (0...9999).contains(year) {
            // Every timestamp a request sees: 24 bytes, each digit put in place (the divisions
            // by constants compile to multiplications).
            let start = out.count
            out.append(contentsOf: repeatElement(0, count: 24))
            out.withUnsafeMutableBufferPointer { buffer in
                let out = UnsafeMutableBufferPointer(rebasing: buffer[start...])
                func put(_ value: Int, _ width: Int, at end: Int) {
                    var rest = value
                    for i in stride(from: end, to: end - width, by: -1) {
                        out[i] = UInt8(ascii: "0") + UInt8(rest % 10)
                        rest /= 10
                    }
                }
                put(year, 4, at: 3)
                out[4] = UInt8(ascii: "-")
                put(month, 2, at: 6)
                out[7] = UInt8(ascii: "-")
                put(day, 2, at: 9)
                out[10] = UInt8(ascii: "T")
                put(msOfDay / 3_600_000, 2, at: 12)
                out[13] = UInt8(ascii: ":")
                put(msOfDay / 60_000 % 60, 2, at: 15)
                out[16] = UInt8(ascii: ":")
                put(msOfDay / 1000 % 60, 2, at: 18)
                out[19] = UInt8(ascii: ".")
                put(msOfDay % 1000, 3, at: 22)
                out[23] = UInt8(ascii: "Z")
            }
            return
        }
        if year < 0 { out.append(UInt8(ascii: "-")) }
        append(abs(year), width: 4, to: &out)
        out.append(UInt8(ascii: "-"))
        append(month, width: 2, to: &out)
        out.append(UInt8(ascii: "-"))
        append(day, width: 2, to: &out)
        out.append(UInt8(ascii: "T"))
        append(msOfDay / 3_600_000, width: 2, to: &out)
        out.append(UInt8(ascii: ":"))
        append(msOfDay / 60_000 % 60, width: 2, to: &out)
        out.append(UInt8(ascii: ":"))
        append(msOfDay / 1000 % 60, width: 2, to: &out)
        out.append(UInt8(ascii: "."))
        append(msOfDay % 1000, width: 3, to: &out)
        out.append(UInt8(ascii: "Z"))
    }

    /// Appends the decimal digits of `value` (≥ 0), zero-padded to at least `width`.
    private static func append(_ value: Int, width: Int, to out: inout [UInt8]) {
        var digits = 1, limit = 10
        while limit <= value && digits < 19 { digits += 1; limit &*= 10 }
        let count = max(digits, width)
        let start = out.count
        out.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: count))
        var rest = value
        for i in stride(from: start + count - 1, through: start, by: -1) where rest > 0 {
            out[i] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        }
    }

    /// The proleptic Gregorian (year, month, day) of a day count since 1970-01-01 (Howard
    /// Hinnant's algorithm; the inverse of `daysFromCivil`).
    public static func civilFromDays(_ days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    public static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// Parses a calendar date "YYYY-MM-DD" into milliseconds at its UTC midnight;
    /// nil unless the date exists.
    public static func parseDate(_ text: String) -> Milliseconds? {
        let b = Array(text.utf8)
        guard b.count == 10, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"),
            let y = digits(b[0..<4]), let m = digits(b[5..<7]), let d = digits(b[8..<10]),
            (1...12).contains(m), d >= 1, d <= daysInMonth(year: y, month: m)
        else { return nil }
        return Milliseconds(daysFromCivil(year: y, month: m, day: d)) * 86_400_000
    }

    /// Parses a UTC time "YYYY-MM-DDTHH:MM:SSZ" or "YYYY-MM-DDTHH:MM:SS.sssZ" (as `format`
    /// writes it) into milliseconds; nil unless the time exists.
    public static func parse(_ text: String) -> Milliseconds? {
        let b = Array(text.utf8)
        guard b.count == 20 || b.count == 24, b.last == UInt8(ascii: "Z"), b[10] == UInt8(ascii: "T"),
            b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"),
            let day = parseDate(String(decoding: b[0..<10], as: UTF8.self)),
            let h = digits(b[11..<13]), let mi = digits(b[14..<16]), let s = digits(b[17..<19]), h < 24, mi < 60, s < 60
        else { return nil }
        var ms = 0
        if b.count == 24 {
            guard b[19] == UInt8(ascii: "."), let fraction = digits(b[20..<23]) else { return nil }
            ms = fraction
        } else if b[19] != UInt8(ascii: "Z") {
            return nil
        }
        return day + Milliseconds(((h * 60 + mi) * 60 + s) * 1000 + ms)
    }

    private static func digits(_ slice: ArraySlice<UInt8>) -> Int? {
        var value = 0
        for c in slice {
            guard c >= UInt8(ascii: "0"), c <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(c - UInt8(ascii: "0"))
        }
        return value
    }

    private static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}

extension JSONObjectWriter {
    /// A timestamp member, written straight into the document (no `String` in between: an
    /// answer and a log line carry three a request).
    public mutating func member(_ key: StaticString, timestamp ms: Milliseconds) {
        textMember(key, writing: { Timestamp.write(ms, into: &$0) })
    }
}
