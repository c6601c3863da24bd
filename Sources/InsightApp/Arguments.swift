/// A small command-line parser: positional words, `--flag`, and `--option value` (or
/// `--option=value`). Unknown options are reported, not ignored.
public struct Arguments {
    public private(set) var positional: [String] = []
    private var options: [String: String] = [:]
    private var flags: Set<String> = []
    private var consumed: Set<String> = []

    /// Parses `words`; `valueOptions` lists the options that take a value.
    public init(_ words: [String], valueOptions: Set<String>) throws {
        var i = 0
        while i < words.count {
            let word = words[i]
            if word.hasPrefix("--") {
                var name = String(word.dropFirst(2))
                var value: String?
                if let eq = name.firstIndex(of: "=") {
                    value = String(name[name.index(after: eq)...])
                    name = String(name[..<eq])
                }
                if valueOptions.contains(name) {
                    if value == nil {
                        i += 1
                        guard i < words.count else { throw AppError("--\(name) needs a value") }
                        value = words[i]
                    }
                    options[name] = value
                } else {
                    guard value == nil else { throw AppError("--\(name) takes no value") }
                    flags.insert(name)
                }
            } else {
                positional.append(word)
            }
            i += 1
        }
    }

    public mutating func option(_ name: String) -> String? {
        consumed.insert(name)
        return options[name]
    }

    public mutating func flag(_ name: String) -> Bool {
        consumed.insert(name)
        return flags.contains(name)
    }

    /// Throws if an option or flag was given that the command never asked about.
    public func checkAllConsumed() throws {
        let unknown = Set(options.keys).union(flags).subtracting(consumed)
        if let first = unknown.sorted().first { throw AppError("unknown option --\(first)") }
    }
}
