import InsightApp
import InsightDomain

/// `insightctl init`: creates the store and applies the migrations.
enum InitCommand: CommandGroup {
    static let commands = [
        Command(
            "init", summary: "create the store (the state directory's database, or the PostgreSQL schema) and apply the migrations",
            run: run)
    ]

    static func run(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        let existed = context.store.exists
        let applied = try context.store.migrate()
        print(
            (existed ? "the store at \(context.store.description) exists; " : "created the store at \(context.store.description); ")
                + (applied.isEmpty ? "schema is up to date" : "applied: \(applied.joined(separator: ", "))"))
        return 0
    }
}

/// `insightctl migrate`: applies pending migrations to an existing store.
enum MigrateCommand: CommandGroup {
    static let commands = [
        Command("migrate", needsStore: true, summary: "apply pending schema migrations to the existing store", run: run)
    ]

    static func run(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        let applied = try context.store.migrate()
        print(applied.isEmpty ? "schema is up to date" : "applied: \(applied.joined(separator: ", "))")
        return 0
    }
}

/// `insightctl backup PATH`: an online copy of the embedded store.
enum BackupCommand: CommandGroup {
    static let commands = [
        Command(
            "backup", operands: [Operand("PATH", "where the copy is written (a file that does not exist yet)")], needsStore: true,
            summary: "a consistent copy of the database, taken online", run: run)
    ]

    static func run(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        let target = invocation.operand(0)
        let pages = try context.store.backup(to: target)
        print("backed up \(pages) pages to \(target) (integrity ok); the hash key file is not included: back it up separately")
        return 0
    }
}

/// `insightctl purge --older-than DAYS`: retention at once.
enum PurgeCommand: CommandGroup {
    static let olderThan = Option("older-than", "DAYS", "the age in days, a whole number of at least 1").asRequired

    static let commands = [
        Command(
            "purge", options: [olderThan], needsStore: true,
            summary: "delete evaluations, reports and labels older than DAYS", run: run)
    ]

    static func run(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        guard let days = Int(invocation.required(olderThan)), days >= 1 else {
            throw AppError("--older-than DAYS must be a whole number of at least 1")
        }
        let report = try context.store.purge(olderThan: context.now - Milliseconds(days) * 86_400_000)
        print(
            "deleted \(report.evaluations) evaluations, \(report.labels) labels, \(report.labelSubmissions) label submissions older than \(days) days"
        )
        return 0
    }
}
