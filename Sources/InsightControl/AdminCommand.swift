import Foundation
import InsightApp

/// `insightctl`: administration on the store (SQLite in the state directory, or the PostgreSQL
/// database of `INSIGHTD_DATABASE_URL`). It works beside running daemons; changes to callers and
/// keys reach them within their credential cache time. Each group of commands is a type that
/// declares its commands and their options (`CommandSyntax.swift`); the command line is checked
/// against those declarations (`CommandLineParser`) and the help is written from them (`HelpText`).
public enum AdminCommand {
    /// Every command, in the order of the help.
    static let commands: [Command] = [
        InitCommand.self, MigrateCommand.self, CallerCommands.self, TenantCommands.self, InterventionCommands.self, KeyCommands.self,
        HashKeyCommands.self, SigningKeyCommands.self, ReceiptCommands.self, HashCommand.self, BackupCommand.self,
        PurgeCommand.self, RateLimitCommands.self, SubjectCommands.self, PolicyTest.self, ModelCommands.self,
        TrainingCommands.self
    ].flatMap { (group: any CommandGroup.Type) in group.commands }

    static let parser = CommandLineParser(commands: commands, global: CommonOptions.global)

    /// What holds for every command, after the list of commands in the help.
    static let notes = """
        rate-limit, subjects and models report talk to the running daemon's API: --url (default
        http://$INSIGHTD_LISTEN, then http://127.0.0.1:8080) with a key from $INSIGHTD_ADMIN_KEY or
        --key-file FILE (never on the command line, where ps shows it to every user): role admin
        (subjects show: role evaluate; the key's tenant and environment are the ones searched).
        A VALUE of - is read from standard input (one line), so that a person's identifier
        appears neither in the shell's history nor in ps; --tenant T refuses a key of another tenant.

        A tenant (default 'default') is one organisation whose callers share labels, opt-outs and
        device limits; tenants never see each other's data. Names: a-z, 0-9, '-', '_', '.'.

        The store is the PostgreSQL database of $INSIGHTD_DATABASE_URL when it is set (several
        instances; migrated first when empty), else SQLite in the state directory, which defaults
        to $INSIGHTD_STATE_DIR, then /var/lib/insightd. A state directory without a database is
        refused (it is most likely not the daemon's): create one with init, or give --create. The
        models directory is --models-dir, else $INSIGHTD_MODELS_DIR, else ./models; every change to
        it is checked by loading it as the daemon does, and served on the daemon's next reload
        (SIGHUP, systemctl reload insightd). Default rate 50/s and burst 100.

        Status: 0 done, 1 refused or failed (policy test: a case mismatched; receipts verify: a
        chain broke), 2 no command given.

        """

    /// Runs the command `arguments` name (the first is the program's name) and returns its exit
    /// status: 0 done, 1 refused or failed, 2 no command.
    public static func main(
        arguments: [String], environment: [String: String],
        transport: (any AdminTransport)? = nil
    ) -> Int32 {
        do {
            switch try parser.parse(Array(arguments.dropFirst())) {
            case nil:
                print(HelpText.render(.all), terminator: "")
                return 2
            case .help(let topic):
                print(HelpText.render(topic), terminator: "")
                return 0
            case .run(let invocation):
                let context = try CommandContext(
                    stateDirectory: invocation.value(CommonOptions.stateDirectory),
                    environment: environment, transport: transport)
                // A command that opens the store on a state directory without one refuses, unless asked to create it.
                if invocation.command.needsStore && !invocation.flag(CommonOptions.create) {
                    try context.store.requireExisting()
                }
                return try invocation.command.run(invocation, context)
            }
        } catch {
            DescriptorOutput.standardError("insightctl: \(error)\n")
            return 1
        }
    }
}
