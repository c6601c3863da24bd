import Foundation

/// Which help is asked for.
enum HelpTopic {
    /// Every command, with the notes that hold for all of them.
    case all
    /// The commands of one group (`callers`), each with its options.
    case group(String)
    /// One command with its options.
    case command(Command)
}

/// insightctl's help, written from the command declarations (`AdminCommand.commands`), so that
/// every option a command accepts is in its help and nothing else is.
enum HelpText {
    /// Lines are wrapped to this width.
    static let width = 100
    /// The column where a command's summary and an option's help start.
    static let summaryColumn = 46

    static func render(_ topic: HelpTopic) -> String {
        switch topic {
        case .all:
            return header("COMMAND") + """
                       insightctl COMMAND --help               (that command's usage and options; a group's: callers --help)
                       insightctl help COMMAND                 (the same)

                commands:

                """ + AdminCommand.commands.map(entry).joined()
                + "\noptions of every command:\n" + optionLines(CommonOptions.global, indent: 2) + "\n" + AdminCommand.notes
        case .group(let group):
            let commands = AdminCommand.commands.filter { $0.words[0] == group }
            return header("\(group) ...") + "\n" + commands.map(detailed).joined(separator: "\n")
        case .command(let command):
            return header("\(command.name) ...") + "\n" + detailed(command)
        }
    }

    /// `usage: insightctl [--state-dir DIR] [--create] WHAT`.
    static func header(_ what: String) -> String {
        let global = CommonOptions.global.filter { $0.name != CommonOptions.help.name }.map { "[\($0.spelled)]" }
        return "usage: insightctl \(global.joined(separator: " ")) \(what)\n"
    }

    /// The command's usage on one line, for an error message.
    static func usageLine(_ command: Command) -> String {
        "usage: insightctl " + synopsis(command).joined(separator: " ")
    }

    /// The words, operands and options of a command as the help writes them: a required option
    /// bare, an optional one in brackets, the options of which exactly one is needed in parentheses.
    static func synopsis(_ command: Command) -> [String] {
        var tokens = command.words + command.operands.map(\.name)
        var exclusive: Set<String> = []
        if case .exactlyOne(let names) = command.choice { exclusive = Set(names) }
        for option in command.options where option.refusal == nil {
            if exclusive.contains(option.name) {
                guard option.name == command.choice?.names.first else { continue }
                tokens.append("(" + command.options.filter { exclusive.contains($0.name) }.map(\.spelled).joined(separator: " | ") + ")")
            } else {
                tokens.append(option.required ? option.spelled : "[\(option.spelled)]")
            }
        }
        return tokens
    }

    /// A command's lines in the list of every command: its synopsis (wrapped under its first
    /// option), then its summary from `summaryColumn`, beside the synopsis when there is room.
    static func entry(_ command: Command) -> String {
        let tokens = synopsis(command)
        let continuation = String(repeating: " ", count: 2 + command.name.count + 1)
        var lines = wrap(Array(tokens.dropFirst(command.words.count)), first: "  " + command.name, continuation: continuation)
        let summary = wrap(
            command.summary.split(separator: " ").map(String.init), first: "",
            continuation: "", width: width - summaryColumn)
        var rest = summary[...]
        if let last = lines.last, last.count + 2 <= summaryColumn, let first = rest.first {
            lines[lines.count - 1] = pad(last, summaryColumn) + first
            rest = rest.dropFirst()
        }
        lines += rest.map { String(repeating: " ", count: summaryColumn) + $0 }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A command's entry followed by each of its operands and options with their help.
    static func detailed(_ command: Command) -> String {
        let operands = command.operands.map { (name: $0.name, help: $0.help) }
        let options = command.options.filter { $0.refusal == nil }.map {
            (name: $0.spelled, help: $0.help + ($0.required ? " (required)" : ""))
        }
        return entry(command) + table(operands + options, indent: 4)
    }

    static func optionLines(_ options: [Option], indent: Int) -> String {
        table(options.map { ($0.spelled, $0.help) }, indent: indent)
    }

    /// Names and their help in two columns; a name too long for the first column has its help
    /// on the lines below.
    static func table(_ rows: [(name: String, help: String)], indent: Int) -> String {
        guard !rows.isEmpty else { return "" }
        let column = min(rows.map(\.name.count).max() ?? 0, 30) + indent + 2
        var lines: [String] = []
        for row in rows {
            let help = wrap(row.help.split(separator: " ").map(String.init), first: "", continuation: "", width: width - column)
            let name = String(repeating: " ", count: indent) + row.name
            if name.count + 2 <= column {
                lines.append(pad(name, column) + (help.first ?? ""))
                lines += help.dropFirst().map { String(repeating: " ", count: column) + $0 }
            } else {
                lines.append(name)
                lines += help.map { String(repeating: " ", count: column) + $0 }
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `a`, `a or b`, `a, b or c`.
    static func alternatives(_ items: [String]) -> String {
        items.count <= 1 ? items.joined() : items.dropLast().joined(separator: ", ") + " or " + items.last!
    }

    /// `a`, `a and b`, `a, b and c`.
    static func list(_ items: [String]) -> String {
        items.count <= 1 ? items.joined() : items.dropLast().joined(separator: ", ") + " and " + items.last!
    }

    /// `tokens` after `first`, on lines of at most `width` characters (a token longer than a line
    /// stands alone on its own), each line after the first starting with `continuation`.
    static func wrap(_ tokens: [String], first: String, continuation: String, width: Int = HelpText.width) -> [String] {
        var lines = [first]
        for token in tokens {
            let last = lines[lines.count - 1]
            let bare = last.isEmpty || last == continuation
            if bare || last.count + 1 + token.count <= width {
                lines[lines.count - 1] = last + (bare ? "" : " ") + token
            } else {
                lines.append(continuation + token)
            }
        }
        return lines
    }

    static func pad(_ text: String, _ column: Int) -> String {
        text.padding(toLength: max(column, text.count), withPad: " ", startingAt: 0)
    }
}
