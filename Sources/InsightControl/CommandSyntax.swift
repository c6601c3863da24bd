/// The declarations insightctl parses its command line and writes its help from: each command
/// says its words, operands and options once, so that what is accepted and what the help shows
/// cannot drift apart (`CommandLineParser`, `HelpText`).

/// An option a command accepts: `--name VALUE` (or `--name=VALUE`), or a flag `--name` when it
/// has no value.
struct Option: Sendable {
    /// The name without its dashes.
    let name: String
    /// What the value is, as the help shows it (`NAME`, `production|sandbox`); nil for a flag.
    let value: String?
    /// One sentence for the help.
    private(set) var help: String
    /// Whether the command refuses to run without it.
    private(set) var required = false
    /// Why the option is refused although it looks like one the command should take (`--key`):
    /// the parser says this instead of "unknown option", and the help leaves it out.
    private(set) var refusal: String?

    init(_ name: String, _ value: String? = nil, _ help: String) {
        self.name = name
        self.value = value
        self.help = help
    }

    var isFlag: Bool { value == nil }

    /// This option, required.
    var asRequired: Option {
        var copy = self
        copy.required = true
        return copy
    }

    /// This option with another sentence of help (the same option means something particular to a command).
    func with(help text: String) -> Option {
        var copy = self
        copy.help = text
        return copy
    }

    /// An option refused for `reason` whatever its value (the help leaves it out).
    static func refused(_ name: String, _ value: String?, because reason: String) -> Option {
        var option = Option(name, value, "")
        option.refusal = reason
        return option
    }

    /// `--name VALUE` or `--name`.
    var spelled: String { "--\(name)" + (value.map { " \($0)" } ?? "") }
}

/// An operand: a word after the command's words (`CALLER_ID`, `PATH`).
struct Operand: Sendable {
    let name: String
    let help: String

    init(_ name: String, _ help: String) {
        self.name = name
        self.help = help
    }
}

/// Options of which a command needs some: the parser refuses the command line otherwise, with
/// a message listing them.
enum OptionChoice: Sendable {
    /// Exactly one of these options.
    case exactlyOne([String])
    /// One or more of these options.
    case atLeastOne([String])

    var names: [String] {
        switch self {
        case .exactlyOne(let names), .atLeastOne(let names): names
        }
    }
}

/// One command: its words (`callers create`), operands, options, what it does, and the code that
/// runs it on the parsed command line.
struct Command: Sendable {
    let words: [String]
    let operands: [Operand]
    let options: [Option]
    let choice: OptionChoice?
    /// What it does, for the help (wrapped there).
    let summary: String
    /// Whether it works on the store, which must then exist (unless `--create`).
    let needsStore: Bool
    let run: @Sendable (Invocation, CommandContext) throws -> Int32

    init(
        _ words: String..., operands: [Operand] = [], options: [Option] = [], choice: OptionChoice? = nil,
        needsStore: Bool = false, summary: String, run: @escaping @Sendable (Invocation, CommandContext) throws -> Int32
    ) {
        self.words = words
        self.operands = operands
        self.options = options
        self.choice = choice
        self.needsStore = needsStore
        self.summary = summary
        self.run = run
    }

    var name: String { words.joined(separator: " ") }

    func option(named name: String) -> Option? { options.first { $0.name == name } }
}

/// A group of commands under one first word (`callers`), each group a type of its own.
protocol CommandGroup {
    static var commands: [Command] { get }
}

/// A command line as parsed for one command: its operands and the values of the options it declared.
struct Invocation: Sendable {
    let command: Command
    let operands: [String]
    let values: [String: String]
    let flags: Set<String>

    /// The value given for `option`, nil when it was not given.
    func value(_ option: Option) -> String? {
        assert(accepts(option), "\(command.name) reads --\(option.name), which it does not declare")
        return values[option.name]
    }

    /// The value of a required option (the parser has made sure it is there).
    func required(_ option: Option) -> String {
        assert(command.option(named: option.name)?.required == true, "--\(option.name) is not required by \(command.name)")
        return values[option.name] ?? ""
    }

    /// Whether the flag `option` was given.
    func flag(_ option: Option) -> Bool {
        assert(accepts(option), "\(command.name) reads --\(option.name), which it does not declare")
        return flags.contains(option.name)
    }

    /// Whether `option` is one the command declares, or one of every command's.
    private func accepts(_ option: Option) -> Bool {
        command.option(named: option.name) != nil || CommonOptions.global.contains { $0.name == option.name }
    }

    /// The operand at `index` (the parser has made sure each declared one is there).
    func operand(_ index: Int) -> String { operands[index] }

    /// Whether `--json` was given.
    var json: Bool { flag(CommonOptions.json) }
}

/// Options several groups declare, with the same meaning.
enum CommonOptions {
    static let json = Option("json", nil, "print JSON instead of a table or sentence")
    static let tenant = Option("tenant", "T", "the tenant (default 'default')")
    /// Where the store is, for every command (`--state-dir`) and whether to create it (`--create`).
    static let stateDirectory = Option(
        "state-dir", "DIR",
        "the daemon's state directory (else $INSIGHTD_STATE_DIR, else /var/lib/insightd)")
    static let create = Option("create", nil, "create the store when the state directory has none (init always does)")
    static let help = Option("help", nil, "print the help of the command (or of the group) instead of running it")
    /// Accepted by every command.
    static let global = [stateDirectory, create, help]
}
