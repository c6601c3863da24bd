import InsightApp

/// A command line refused before any command ran: what is wrong, and the help that shows how it
/// is written.
struct UsageError: Error, CustomStringConvertible {
    let problem: String
    let help: String

    var description: String { problem + "\n" + help }
}

/// What insightctl was asked for: a command to run, or help.
enum Request {
    case run(Invocation)
    /// The help of a command, a group, or every command (nil).
    case help(HelpTopic)
}

/// The words of a command line split into operands and options, before they are matched to a
/// command: `--name VALUE`, `--name=VALUE` and flags `--name`, anywhere on the line. Whether an
/// option takes a value is known from the declarations of every command (a name is a flag in
/// every command or takes a value in every command: `CommandLineTests` checks it).
struct CommandLineWords {
    private(set) var positional: [String] = []
    private(set) var options: [(name: String, value: String?)] = []

    init(_ words: [String], valueOptions: Set<String>) throws {
        var index = 0
        while index < words.count {
            let word = words[index]
            index += 1
            guard word.hasPrefix("--") else {
                positional.append(word)
                continue
            }
            var name = String(word.dropFirst(2))
            var value: String?
            if let equals = name.firstIndex(of: "=") {
                value = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if valueOptions.contains(name) && value == nil {
                guard index < words.count else { throw AppError("--\(name) needs a value") }
                value = words[index]
                index += 1
            }
            options.append((name, value))
        }
    }

    func has(_ option: Option) -> Bool { options.contains { $0.name == option.name } }
}

/// Matches a command line to one of `commands` and checks it against that command's declarations.
struct CommandLineParser {
    let commands: [Command]
    let global: [Option]

    /// Every option that takes a value, in any command.
    var valueOptions: Set<String> {
        Set((global + commands.flatMap(\.options)).filter { !$0.isFlag }.map(\.name))
    }

    /// What `arguments` (without the program's name) ask for; nil when they are empty.
    func parse(_ arguments: [String]) throws -> Request? {
        let words = try CommandLineWords(arguments, valueOptions: valueOptions)
        if words.positional.first == "help" {
            return .help(topic(Array(words.positional.dropFirst())))
        }
        if words.has(CommonOptions.help) { return .help(topic(words.positional)) }
        guard !words.positional.isEmpty else { return nil }
        return .run(try invocation(words))
    }

    /// The command whose words begin `positional`, the longest when several do.
    func command(matching positional: [String]) -> Command? {
        commands.filter { positional.starts(with: $0.words) }.max { $0.words.count < $1.words.count }
    }

    /// The help asked for by these words: a command's, a group's, or (none known) every command's.
    func topic(_ positional: [String]) -> HelpTopic {
        if let command = command(matching: positional) { return .command(command) }
        if let group = positional.first, commands.contains(where: { $0.words[0] == group }) { return .group(group) }
        return .all
    }

    func invocation(_ words: CommandLineWords) throws -> Invocation {
        guard let command = command(matching: words.positional) else {
            let asked = words.positional.joined(separator: " ")
            throw UsageError(problem: "unknown command '\(asked)'", help: HelpText.render(topic(words.positional)))
        }
        var values: [String: String] = [:], flags: Set<String> = []
        for given in words.options {
            try check(given, against: command)
            if let value = given.value { values[given.name] = value } else { flags.insert(given.name) }
        }
        let operands = Array(words.positional.dropFirst(command.words.count))
        func refuse(_ problem: String) -> UsageError {
            UsageError(problem: problem, help: HelpText.usageLine(command) + "\n(insightctl \(command.name) --help: its options)")
        }
        if operands.count < command.operands.count {
            let missing = command.operands[operands.count...].map(\.name).joined(separator: " ")
            throw refuse("\(command.name) needs \(missing)")
        }
        if operands.count > command.operands.count {
            throw refuse(
                "\(command.name) takes " + (command.operands.isEmpty ? "no operand" : command.operands.map(\.name).joined(separator: " "))
                    + ": '\(operands[command.operands.count])' is one too many")
        }
        for option in command.options where option.required && values[option.name] == nil {
            throw refuse("\(command.name) needs \(option.spelled)")
        }
        if let choice = command.choice {
            let named = choice.names.filter { values[$0] != nil || flags.contains($0) }
            let list = HelpText.alternatives(choice.names.compactMap(command.option(named:)).map(\.spelled))
            switch choice {
            case .exactlyOne where named.count != 1: throw refuse("\(command.name) needs exactly one of \(list)")
            case .atLeastOne where named.isEmpty: throw refuse("\(command.name) needs \(list) (one or more)")
            default: break
            }
        }
        return Invocation(command: command, operands: operands, values: values, flags: flags)
    }

    /// Refuses an option `command` does not declare (nor every command), a refused one, and a
    /// value given to a flag.
    func check(_ given: (name: String, value: String?), against command: Command) throws {
        let declared = global.first { $0.name == given.name } ?? command.option(named: given.name)
        let help = "(insightctl \(command.name) --help: its options)"
        guard let declared else {
            let others = commands.filter { $0.option(named: given.name).map { $0.refusal == nil } ?? false }.map(\.name)
            guard others.isEmpty else {
                throw UsageError(
                    problem: "--\(given.name) is not an option of \(command.name) (it is one of \(HelpText.list(others)))",
                    help: help)
            }
            throw UsageError(problem: "unknown option --\(given.name) for \(command.name)", help: help)
        }
        if let refusal = declared.refusal { throw AppError("--\(given.name) is not accepted: \(refusal)") }
        if declared.isFlag, given.value != nil { throw UsageError(problem: "--\(given.name) takes no value", help: help) }
    }
}
