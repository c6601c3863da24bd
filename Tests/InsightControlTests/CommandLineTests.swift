import DaemonTesting
import Foundation
@testable import InsightControl
import XCTest

/// insightctl's command line checked against the declarations of its commands, and the help
/// written from them, in process (no store is opened: every line here is refused or asks for help).
final class CommandLineTests: XCTestCase {
    let parser = AdminCommand.parser

    /// The problem `words` are refused for, before any command runs.
    func refusal(_ words: String...) -> String {
        do {
            _ = try parser.parse(words)
            XCTFail("\(words) was accepted")
            return ""
        } catch let error as UsageError {
            return error.problem
        } catch {
            return "\(error)"
        }
    }

    func invocation(_ words: String...) throws -> Invocation {
        guard case .run(let invocation) = try parser.parse(words) else {
            XCTFail("\(words) did not name a command to run")
            throw CancellationError()
        }
        return invocation
    }

    /// The lexer knows from the declarations whether `--NAME` takes the next word: a name that
    /// took a value in one command and not in another would be read differently by each.
    func testEveryOptionIsAFlagInEveryCommandOrTakesAValueInEveryCommand() {
        var kinds: [String: Set<Bool>] = [:]
        for option in AdminCommand.commands.flatMap(\.options) + CommonOptions.global {
            kinds[option.name, default: []].insert(option.isFlag)
        }
        XCTAssertEqual(kinds.filter { $0.value.count > 1 }.keys.sorted(), [])
    }

    func testEveryCommandIsDeclaredOnceAndNoGroupWordIsACommandOfAnother() {
        let names = AdminCommand.commands.map(\.name)
        XCTAssertEqual(names.count, Set(names).count, "a command declared twice")
        XCTAssertEqual(names.count, 34)
        for command in AdminCommand.commands {
            let options = command.options.map(\.name)
            XCTAssertEqual(options.count, Set(options).count, "\(command.name) declares an option twice")
            XCTAssertTrue(Set(options).isDisjoint(with: CommonOptions.global.map(\.name)), "\(command.name) redeclares a global option")
            for name in command.choice?.names ?? [] {
                XCTAssertNotNil(command.option(named: name), "\(command.name)'s choice names --\(name), which it does not declare")
            }
        }
    }

    func testOptionsAnywhereWithOrWithoutEquals() throws {
        let create = try invocation(
            "--state-dir", "/s", "callers", "create", "--name=a b", "--roles", "evaluate",
            "--environment", "sandbox", "--rate=5", "--json")
        XCTAssertEqual(create.command.name, "callers create")
        XCTAssertEqual(create.values, ["state-dir": "/s", "name": "a b", "roles": "evaluate", "environment": "sandbox", "rate": "5"])
        XCTAssertTrue(create.json)
        let show = try invocation("callers", "show", "--json", "caller_1")
        XCTAssertEqual(show.operands, ["caller_1"])
        // A value that looks like an option is still the option's value.
        XCTAssertEqual(
            try invocation("callers", "create", "--name", "--json", "--roles", "admin", "--environment", "production")
                .values["name"], "--json")
        XCTAssertEqual(try invocation("hash", "-", "--kind", "account").operands, ["-"])
    }

    func testAnUnknownOptionIsRefusedNamingTheCommand() {
        XCTAssertEqual(refusal("callers", "list", "--nmae", "x"), "unknown option --nmae for callers list")
        XCTAssertEqual(
            refusal("training", "export", "--from", "2026-01-01", "--to", "2026-01-31", "--format", "csv"),
            "unknown option --format for training export")
    }

    func testAnOptionOfAnotherCommandIsRefusedNamingTheCommandsThatTakeIt() {
        XCTAssertEqual(
            refusal("callers", "list", "--url", "http://x"),
            "--url is not an option of callers list (it is one of rate-limit show, rate-limit reset, subjects show, subjects erase and models report)"
        )
        XCTAssertEqual(
            refusal("init", "--json"),
            "--json is not an option of init (it is one of "
                + HelpText.list(
                    AdminCommand.commands.filter { $0.option(named: "json") != nil }.map(\.name)) + ")")
        XCTAssertTrue(refusal("models", "list", "--tenant", "acme").hasPrefix("--tenant is not an option of models list"))
        XCTAssertTrue(refusal("backup", "/tmp/x", "--older-than", "3").hasPrefix("--older-than is not an option of backup"))
    }

    func testAKeyOnTheCommandLineIsRefusedWithoutRepeatingIt() {
        let problem = refusal("rate-limit", "show", "caller_1", "--key", "ik_secret")
        XCTAssertTrue(problem.contains("visible to every user through ps"), problem)
        XCTAssertFalse(problem.contains("ik_secret"), problem)
        XCTAssertTrue(refusal("callers", "list", "--key", "ik_secret").hasPrefix("unknown option --key for callers list"))
    }

    func testMissingValuesOperandsAndRequiredOptions() {
        XCTAssertEqual(refusal("callers", "create", "--name"), "--name needs a value")
        XCTAssertEqual(refusal("callers", "list", "--json=yes"), "--json takes no value")
        XCTAssertEqual(refusal("callers", "show"), "callers show needs CALLER_ID")
        XCTAssertEqual(refusal("policy", "test"), "policy test needs CASES")
        XCTAssertEqual(refusal("callers", "show", "caller_1", "caller_2"), "callers show takes CALLER_ID: 'caller_2' is one too many")
        XCTAssertEqual(refusal("migrate", "now"), "migrate takes no operand: 'now' is one too many")
        XCTAssertEqual(
            refusal("callers", "create", "--name", "a", "--roles", "evaluate"),
            "callers create needs --environment production|sandbox")
        XCTAssertEqual(refusal("keys", "list"), "keys list needs --caller CALLER_ID")
        XCTAssertEqual(refusal("models", "report", "--from", "2026-01-01"), "models report needs --to YYYY-MM-DD")
        XCTAssertEqual(
            refusal("callers", "update", "caller_1"),
            "callers update needs --rate R, --burst B or --training-capture on|off (one or more)")
        XCTAssertEqual(
            refusal("subjects", "show", "--account", "a", "--device", "d"),
            "subjects show needs exactly one of --account VALUE, --device VALUE or --counterparty VALUE")
        XCTAssertEqual(
            refusal("subjects", "erase", "--tenant", "acme"),
            "subjects erase needs --account VALUE, --device VALUE or --counterparty VALUE (one or more)")
        XCTAssertEqual(refusal("callers", "frobnicate"), "unknown command 'callers frobnicate'")
        XCTAssertEqual(refusal("frobnicate"), "unknown command 'frobnicate'")
    }

    /// Each command's help shows its operands and every option it accepts, and nothing of other groups.
    func testTheHelpOfEachCommandShowsEachDeclaredOption() {
        let all = HelpText.render(.all)
        for command in AdminCommand.commands {
            let help = HelpText.render(.command(command))
            XCTAssertTrue(all.contains("  \(command.name)"), "\(command.name) is missing from the whole help")
            XCTAssertTrue(help.contains("  \(command.name)"), help)
            for operand in command.operands {
                XCTAssertTrue(
                    help.contains("    \(operand.name)  ") && help.contains(operand.help.split(separator: " ")[0]),
                    "\(command.name): operand \(operand.name)\n\(help)")
            }
            for option in command.options {
                if option.refusal != nil {
                    XCTAssertFalse(help.contains("--\(option.name) "), "\(command.name) shows the refused --\(option.name)")
                } else {
                    XCTAssertTrue(help.contains("    \(option.spelled)"), "\(command.name): --\(option.name) is not in\n\(help)")
                    XCTAssertTrue(all.contains(option.spelled), "\(command.name): --\(option.name) is not in the whole help")
                }
            }
            for line in help.split(separator: "\n") {
                XCTAssertLessThanOrEqual(line.count, HelpText.width, "\(command.name): \(line)")
            }
        }
        for option in CommonOptions.global { XCTAssertTrue(all.contains("  \(option.spelled)"), option.name) }
    }

    func testAGroupsHelpHoldsItsCommandsOnly() {
        let help = HelpText.render(.group("keys"))
        for name in ["keys issue", "keys list", "keys revoke"] { XCTAssertTrue(help.contains("  \(name)"), help) }
        for other in AdminCommand.commands where other.words[0] != "keys" {
            XCTAssertFalse(help.contains("  \(other.name) "), "\(other.name) in\n\(help)")
        }
    }

    func testHelpIsAskedByFlagOrWordAnywhere() throws {
        func topic(_ words: String...) throws -> String {
            guard case .help(let topic) = try parser.parse(words) else { return "not help" }
            switch topic {
            case .all: return "all"
            case .group(let group): return group
            case .command(let command): return command.name
            }
        }
        XCTAssertEqual(try topic("--help"), "all")
        XCTAssertEqual(try topic("help"), "all")
        XCTAssertEqual(try topic("callers", "--help"), "callers")
        XCTAssertEqual(try topic("help", "callers"), "callers")
        XCTAssertEqual(try topic("callers", "create", "--help"), "callers create")
        XCTAssertEqual(try topic("help", "rate-limit", "reset"), "rate-limit reset")
        XCTAssertEqual(try topic("--help", "callers", "frobnicate"), "callers")
        XCTAssertEqual(try topic("frobnicate", "--help"), "all")
        XCTAssertEqual(try topic("callers", "list", "--nmae", "--help"), "callers list", "help is given even with a wrong option")
    }

    /// 0 done or help, 1 refused or failed, 2 nothing asked; a refused line opens no store.
    func testExitStatuses() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("insightctl-status-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        func status(_ words: [String]) -> (status: Int32, output: String) {
            captureStandardError {
                captureStandardOutput {
                    AdminCommand.main(arguments: ["insightctl", "--state-dir", directory.path] + words, environment: [:])
                }.status
            }
        }
        XCTAssertEqual(captureStandardOutput { AdminCommand.main(arguments: ["insightctl"], environment: [:]) }.status, 2)
        XCTAssertEqual(status(["--help"]).status, 0)
        XCTAssertEqual(status(["help", "callers"]).status, 0)
        XCTAssertEqual(status(["callers", "create", "--help"]).status, 0)
        for words in [
            ["frobnicate"], ["callers", "list", "--nmae", "x"], ["init", "--json"], ["callers", "show"],
            ["callers", "create", "--name"], ["--create", "callers", "create", "--name", "a", "--roles", "evaluate"],
            ["callers", "list", "--json=1"], ["rate-limit", "show", "c", "--key", "k"]
        ] {
            let refused = status(words)
            XCTAssertEqual(refused.status, 1, "\(words)")
            XCTAssertTrue(refused.output.hasPrefix("insightctl: "), refused.output)
        }
        XCTAssertTrue(status(["callers", "show"]).output.contains("usage: insightctl callers show CALLER_ID [--json]"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: directory.path), "a refused command line created the state directory")
        XCTAssertEqual(status(["--create", "callers", "list"]).status, 0)
    }
}
