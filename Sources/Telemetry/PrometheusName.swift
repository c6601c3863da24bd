/// Prometheus name rules, usable before registering (the registry traps on a bad name).
public enum PrometheusName {
    /// Whether `name` is a valid metric name: `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    public static func isValidMetricName(_ name: String) -> Bool {
        valid(name, allowColon: true)
    }

    /// Whether `name` is a valid label name: `[a-zA-Z_][a-zA-Z0-9_]*`, not starting with `__`
    /// (reserved for Prometheus's internal labels). Colons are allowed in metric names only.
    public static func isValidLabelName(_ name: String) -> Bool {
        valid(name, allowColon: false) && !name.hasPrefix("__")
    }

    private static func valid(_ name: String, allowColon: Bool) -> Bool {
        var bytes = name.utf8.makeIterator()
        guard let first = bytes.next(),
            isLetter(first) || first == UInt8(ascii: "_")
                || (allowColon && first == UInt8(ascii: ":"))
        else { return false }
        while let byte = bytes.next() {
            guard
                isLetter(byte) || isDigit(byte) || byte == UInt8(ascii: "_")
                    || (allowColon && byte == UInt8(ascii: ":"))
            else { return false }
        }
        return true
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }
}
