/// Text exposition format 0.0.4: number spelling and escaping.
enum Exposition {
    /// A sample value or `le` bound as Prometheus parses it (Go's `strconv.ParseFloat`):
    /// `NaN`, `+Inf`, `-Inf`, whole numbers without a fraction (`3`, not `3.0`), else the
    /// shortest representation that reads back to the same `Double` (`0.005`, `1e-05`).
    static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-Inf" : "+Inf" }
        if value.magnitude < 1e15, value.rounded(.towardZero) == value {
            return String(Int64(value))  // also turns -0.0 into "0"
        }
        return value.description
    }

    /// A `# HELP` text: backslash and line feed escaped.
    static func escapeHelp(_ text: String) -> String {
        escape(text, quote: false)
    }

    /// A label value: backslash, double quote and line feed escaped.
    static func escapeLabelValue(_ value: String) -> String {
        escape(value, quote: true)
    }

    private static func escape(_ text: String, quote: Bool) -> String {
        let needsEscaping = text.utf8.contains { byte in
            byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "\n") || (quote && byte == UInt8(ascii: "\""))
        }
        guard needsEscaping else { return text }
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\"" where quote: escaped += "\\\""
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// `name1="value1",name2="value2"` (no braces), values escaped.
    static func labelText(names: [String], values: [String]) -> String {
        zip(names, values).map { "\($0)=\"\(escapeLabelValue($1))\"" }.joined(separator: ",")
    }

    /// One sample line: `name{labels} value\n`, braces omitted when there are no labels.
    static func appendSample(_ name: String, _ labels: String, _ value: String, to out: inout String) {
        out += name
        if !labels.isEmpty {
            out += "{"
            out += labels
            out += "}"
        }
        out += " "
        out += value
        out += "\n"
    }

    /// The `# HELP` and `# TYPE` lines of a family.
    static func appendHeader(_ name: String, _ help: String, _ type: MetricType, to out: inout String) {
        out += help.isEmpty ? "# HELP \(name)\n" : "# HELP \(name) \(escapeHelp(help))\n"
        out += "# TYPE \(name) \(type.rawValue)\n"
    }
}
