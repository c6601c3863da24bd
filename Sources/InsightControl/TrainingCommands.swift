import Foundation
import InsightApp
import InsightDomain

/// `insightctl training export`: the captured feature vectors of a period with their labels, for
/// `training/train.py --from-export` (docs/operations.md, "Training on your own traffic").
enum TrainingCommands: CommandGroup {
    static let from = Option("from", "YYYY-MM-DD", "the first day of the period").asRequired
    static let to = Option("to", "YYYY-MM-DD", "the last day of the period").asRequired
    static let environment = Option("environment", "E", "production or sandbox (default production)")
    static let tenant = CommonOptions.tenant.with(help: "only this tenant's vectors (default: every tenant's)")
    static let out = Option("out", "FILE", "write them to FILE, created 0600 (which must not exist), instead of standard output")
    static let presumeGenuine = Option(
        "presume-genuine-after-maturity", nil,
        "export the unlabelled vectors older than $INSIGHTD_LABEL_MATURITY_DAYS (60) as genuine")

    static let commands = [
        Command(
            "training", "export", options: [from, to, tenant, environment, out, presumeGenuine], needsStore: true,
            summary: "the captured feature vectors of the period that have a label, as JSON lines for training/train.py "
                + "--from-export (standard output, or FILE created 0600); unlabelled ones older than "
                + "$INSIGHTD_LABEL_MATURITY_DAYS (60) as genuine with the flag",
            run: export)
    ]

    /// The labelled captured vectors of a period as JSON lines, with a summary on standard error.
    static func export(_ invocation: Invocation, _ context: CommandContext) throws -> Int32 {
        guard let from = Timestamp.parseDate(invocation.required(Self.from)) else { throw AppError("--from must be a date as YYYY-MM-DD") }
        guard let to = Timestamp.parseDate(invocation.required(Self.to)) else { throw AppError("--to must be a date as YYYY-MM-DD") }
        guard from <= to else { throw AppError("--from must not be after --to") }
        let environmentName = invocation.value(environment) ?? InsightDomain.Environment.production.rawValue
        guard let exported = InsightDomain.Environment(rawValue: environmentName) else {
            throw AppError("--environment must be production or sandbox")
        }
        let tenant = invocation.value(Self.tenant)
        if let tenant, !Tenant.isValidName(tenant) { throw AppError("--tenant \(tenant) is not a tenant name") }
        let out = invocation.value(Self.out)
        let presume = invocation.flag(presumeGenuine)
        // The maturity is the daemon's setting, read (and checked) the same way.
        let maturityDays = try context.setting("INSIGHTD_LABEL_MATURITY_DAYS") { $0.labelMaturityDays }
        let query = TrainingExportQuery(from: from, until: to + 86_400_000, environment: exported, tenant: tenant)
        let source = try context.store.trainingVectors()
        let before = presume ? context.now - Milliseconds(maturityDays) * 86_400_000 : nil
        let summary: TrainingExport.Summary
        if let out {
            var written: TrainingExport.Summary?
            try PrivateFile.create(out) { temporary in
                guard let file = FileHandle(forWritingAtPath: temporary) else { throw AppError("cannot open \(out) to write") }
                defer { try? file.close() }
                var buffer: [UInt8] = []
                written = try TrainingExport.run(source, query: query, presumeGenuineBefore: before) { line in
                    buffer += Array(line.utf8)
                    if buffer.count >= 1 << 16 { try file.write(contentsOf: buffer); buffer.removeAll(keepingCapacity: true) }
                }
                try file.write(contentsOf: buffer)
            }
            summary = written ?? TrainingExport.Summary()
        } else {
            summary = try TrainingExport.run(source, query: query, presumeGenuineBefore: before) { print($0, terminator: "") }
        }
        var text =
            "exported \(summary.lines) vectors: \(summary.confirmedFraud) confirmedFraud, "
            + "\(summary.confirmedLegitimate) confirmedLegitimate, \(summary.presumedGenuine) presumedGenuine"
        if presume {
            text += " (unlabelled and older than \(maturityDays) days, INSIGHTD_LABEL_MATURITY_DAYS)"
        }
        text += "; \(summary.unlabelled) unlabelled left out"
        if let out { text += "; written to \(out)" }
        DescriptorOutput.standardError(text + "\n")
        return 0
    }
}
