/// A strict parser of the Prometheus text exposition format 0.0.4, written for the tests: it
/// rejects anything Prometheus would reject and a few things it would merely tolerate, so a
/// registry's output that passes it is well-formed.
///
/// Checks: trailing line feed, no carriage return; `# HELP` / `# TYPE` at most once per family
/// and before its samples; valid metric and label names (no `__` prefix, no duplicate label in
/// a sample); only the escapes `\\`, `\"` (label values) and `\n`; values spelled as Go's
/// ParseFloat reads them; samples of a family contiguous; no duplicate series; counters not
/// negative; histograms with `le`-labelled `_bucket` series in increasing order, cumulative
/// counts, a `+Inf` bucket equal to `_count`, and a `_sum`.
struct ExpositionParser {
    struct Sample: Equatable {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    struct Family {
        var name: String
        var help: String?
        var type = "untyped"
        var samples: [Sample] = []
    }

    struct ParseError: Error, CustomStringConvertible {
        var line: Int
        var message: String
        var description: String { "line \(line): \(message)" }
    }

    /// Families by name.
    private(set) var families: [String: Family] = [:]
    /// Family names in order of appearance.
    private(set) var order: [String] = []
    private var closed: Set<String> = []
    private var current: String?
    private var seenSamples: Set<String> = []
    private var lineNumber = 0

    static func parse(_ text: String) throws -> ExpositionParser {
        var parser = ExpositionParser()
        try parser.parseAll(text)
        return parser
    }

    private mutating func parseAll(_ text: String) throws {
        // Bytes and Unicode scalars, never Characters: "\r\n", or a quote followed by a combining
        // mark, is one Character and would hide the delimiter.
        guard !text.isEmpty else { return }
        guard !text.utf8.contains(UInt8(ascii: "\r")) else { throw ParseError(line: 0, message: "carriage return") }
        guard text.utf8.last == UInt8(ascii: "\n") else {
            throw ParseError(line: 0, message: "does not end with a line feed")
        }
        for line in text.utf8.dropLast().split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            lineNumber += 1
            if line.isEmpty { continue }
            let scalars = String(decoding: line, as: UTF8.self).unicodeScalars[...]
            if scalars.first == "#" {
                try parseComment(scalars)
            } else {
                try parseSample(scalars)
            }
        }
        for name in order { try check(families[name]!) }
    }

    private func fail(_ message: String) -> ParseError { ParseError(line: lineNumber, message: message) }

    // MARK: Comments

    private mutating func parseComment(_ line: Substring.UnicodeScalarView) throws {
        let parts = line.split(separator: " ", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
        guard parts.count >= 3, parts[0] == "#", parts[1] == "HELP" || parts[1] == "TYPE" else {
            return  // another comment
        }
        let name = parts[2]
        guard Self.isMetricName(name) else { throw fail("invalid metric name \(name)") }
        try enter(name)
        if parts[1] == "HELP" {
            guard families[name]!.help == nil else { throw fail("second HELP for \(name)") }
            families[name]!.help = try Self.unescape(parts.count > 3 ? parts[3][...] : "", quote: false)
                .orThrow(fail("invalid escape in HELP of \(name)"))
        } else {
            guard parts.count == 4, ["counter", "gauge", "histogram", "summary", "untyped"].contains(parts[3]) else {
                throw fail("invalid TYPE line for \(name)")
            }
            guard families[name]!.samples.isEmpty else { throw fail("TYPE of \(name) after its samples") }
            guard !typed.contains(name) else { throw fail("second TYPE for \(name)") }
            typed.insert(name)
            families[name]!.type = parts[3]
        }
    }

    private var typed: Set<String> = []

    /// Makes `name` the current family; a family left earlier cannot come back.
    private mutating func enter(_ name: String) throws {
        if current == name { return }
        if let current { closed.insert(current) }
        guard !closed.contains(name) else { throw fail("family \(name) is not contiguous") }
        current = name
        if families[name] == nil {
            families[name] = Family(name: name)
            order.append(name)
        }
    }

    // MARK: Samples

    private mutating func parseSample(_ line: Substring.UnicodeScalarView) throws {
        var rest = line
        let name = String(String.UnicodeScalarView(rest.prefix { $0 != "{" && $0 != " " }))
        rest = rest.dropFirst(name.unicodeScalars.count)
        guard Self.isMetricName(name) else { throw fail("invalid metric name \(name)") }
        var labels: [String: String] = [:]
        if rest.first == "{" {
            rest = rest.dropFirst()
            while rest.first != "}" {
                let labelName = String(String.UnicodeScalarView(rest.prefix { $0 != "=" }))
                guard Self.isLabelName(labelName) else { throw fail("invalid label name \(labelName)") }
                rest = rest.dropFirst(labelName.unicodeScalars.count)
                guard rest.first == "=", rest.dropFirst().first == "\"" else {
                    throw fail("expected =\" after \(labelName)")
                }
                rest = rest.dropFirst(2)
                var raw = String.UnicodeScalarView()
                var escaped = false
                while true {
                    guard let scalar = rest.popFirst() else { throw fail("unterminated label value") }
                    raw.append(scalar)
                    if escaped { escaped = false; continue }
                    if scalar == "\\" { escaped = true; continue }
                    if scalar == "\"" { raw.removeLast(); break }
                }
                guard let value = Self.unescape(String(raw)[...], quote: true) else {
                    throw fail("invalid escape in \(String(raw))")
                }
                guard labels.updateValue(value, forKey: labelName) == nil else {
                    throw fail("duplicate label \(labelName)")
                }
                if rest.first == "," {
                    rest = rest.dropFirst()
                } else if rest.first != "}" {
                    throw fail("expected , or } after a label")
                }
            }
            rest = rest.dropFirst()
        }
        guard rest.first == " " else { throw fail("expected a space before the value") }
        let fields = rest.dropFirst().split(separator: " ", omittingEmptySubsequences: false)
            .map { Substring(String(String.UnicodeScalarView($0))) }
        guard fields.count == 1 || fields.count == 2 else { throw fail("expected value [timestamp]") }
        guard let value = Self.number(fields[0]) else { throw fail("invalid value \(fields[0])") }
        if fields.count == 2, Int64(fields[1]) == nil { throw fail("invalid timestamp \(fields[1])") }

        let family = familyName(of: name)
        try enter(family)
        let key =
            name + "{"
            + labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
            .joined(separator: ",") + "}"
        guard seenSamples.insert(key).inserted else { throw fail("duplicate series \(key)") }
        families[family]!.samples.append(Sample(name: name, labels: labels, value: value))
    }

    /// The family a sample belongs to: a histogram's `_bucket`, `_sum` and `_count` belong to it.
    private func familyName(of sample: String) -> String {
        for suffix in ["_bucket", "_sum", "_count"] where sample.hasSuffix(suffix) {
            let base = String(sample.dropLast(suffix.count))
            if families[base]?.type == "histogram" || families[base]?.type == "summary" { return base }
        }
        return sample
    }

    // MARK: Family checks

    private func check(_ family: Family) throws {
        switch family.type {
        case "counter":
            for sample in family.samples where sample.value < 0 {
                throw ParseError(line: 0, message: "counter \(family.name) is negative")
            }
        case "histogram":
            try checkHistogram(family)
        default:
            break
        }
    }

    private func checkHistogram(_ family: Family) throws {
        func error(_ message: String) -> ParseError { ParseError(line: 0, message: "\(family.name): \(message)") }
        var buckets: [[String: String]: [(le: Double, count: Double)]] = [:]
        var sums: [[String: String]: Double] = [:]
        var counts: [[String: String]: Double] = [:]
        for sample in family.samples {
            var labels = sample.labels
            switch sample.name {
            case family.name + "_bucket":
                guard let le = labels.removeValue(forKey: "le"), let bound = Self.number(le[...]) else {
                    throw error("bucket without a valid le")
                }
                buckets[labels, default: []].append((bound, sample.value))
            case family.name + "_sum":
                guard labels["le"] == nil else { throw error("_sum with le") }
                sums[labels] = sample.value
            case family.name + "_count":
                guard labels["le"] == nil else { throw error("_count with le") }
                counts[labels] = sample.value
            default:
                throw error("unexpected sample \(sample.name)")
            }
        }
        guard Set(buckets.keys) == Set(sums.keys), Set(buckets.keys) == Set(counts.keys) else {
            throw error("every series needs _bucket, _sum and _count")
        }
        for (labels, series) in buckets {
            for (previous, next) in zip(series, series.dropFirst()) {
                guard previous.le < next.le else { throw error("le not increasing") }
                guard previous.count <= next.count else { throw error("buckets not cumulative") }
            }
            guard series.last?.le == .infinity else { throw error("no +Inf bucket") }
            guard series.last?.count == counts[labels] else { throw error("+Inf bucket differs from _count") }
        }
    }

    // MARK: Lexical rules

    static func isMetricName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first.isASCIILetter || first == "_" || first == ":" else {
            return false
        }
        return name.unicodeScalars.allSatisfy { $0.isASCIILetter || $0.isASCIIDigit || $0 == "_" || $0 == ":" }
    }

    static func isLabelName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first.isASCIILetter || first == "_", !name.hasPrefix("__") else {
            return false
        }
        return name.unicodeScalars.allSatisfy { $0.isASCIILetter || $0.isASCIIDigit || $0 == "_" }
    }

    /// A float as Prometheus writes them: `NaN`, `+Inf`, `-Inf`, or decimal with an exponent.
    static func number(_ text: Substring) -> Double? {
        switch text {
        case "NaN": return .nan
        case "+Inf": return .infinity
        case "-Inf": return -.infinity
        default: break
        }
        var scalars = text.unicodeScalars[...]
        if scalars.first == "+" || scalars.first == "-" { scalars = scalars.dropFirst() }
        let integer = scalars.prefix { $0.isASCIIDigit }
        scalars = scalars.dropFirst(integer.count)
        var fraction = Substring.UnicodeScalarView()
        if scalars.first == "." {
            scalars = scalars.dropFirst()
            fraction = Substring.UnicodeScalarView(scalars.prefix { $0.isASCIIDigit })
            scalars = scalars.dropFirst(fraction.count)
        }
        guard !integer.isEmpty || !fraction.isEmpty else { return nil }
        if scalars.first == "e" || scalars.first == "E" {
            scalars = scalars.dropFirst()
            if scalars.first == "+" || scalars.first == "-" { scalars = scalars.dropFirst() }
            guard !scalars.isEmpty, scalars.allSatisfy(\.isASCIIDigit) else { return nil }
            scalars = scalars.dropFirst(scalars.count)
        }
        guard scalars.isEmpty else { return nil }
        return Double(text)
    }

    /// Undoes the format's escapes; nil for any other backslash sequence.
    static func unescape(_ text: Substring, quote: Bool) -> String? {
        var result = String.UnicodeScalarView()
        var iterator = text.unicodeScalars.makeIterator()
        while let scalar = iterator.next() {
            guard scalar == "\\" else { result.append(scalar); continue }
            switch iterator.next() {
            case "\\": result.append("\\")
            case "n": result.append("\n")
            case "\"" where quote: result.append("\"")
            default: return nil
            }
        }
        return String(result)
    }
}

extension Optional {
    func orThrow(_ error: @autoclosure () -> some Error) throws -> Wrapped {
        guard let self else { throw error() }
        return self
    }
}

extension Unicode.Scalar {
    var isASCIILetter: Bool { ("a"..."z").contains(self) || ("A"..."Z").contains(self) }
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
