import Crypto
import Foundation
import InsightAPI
import InsightApp
import InsightDomain
import JSON

/// The daemon's answer to an admin request: status and parsed JSON body (nil when empty or not JSON).
public struct AdminAnswer: Sendable {
    public let status: Int
    public let json: JSONValue?

    public init(status: Int, json: JSONValue?) {
        self.status = status
        self.json = json
    }
}

/// How insightctl reaches a running daemon's admin API (injected by the executable so that
/// InsightApp, which the daemon links, carries no HTTP client).
public protocol AdminTransport: Sendable {
    func send(_ method: String, _ path: String, baseURL: URL, key: String, body: String?) throws -> AdminAnswer
}

/// The running daemon's API as insightctl reaches it: `--url`, and a key from `--key-file` or
/// `$INSIGHTD_ADMIN_KEY` (never `--key`, which ps would show).
struct DaemonConnection {
    let base: URL
    let key: String
    let transport: any AdminTransport

    init(_ args: inout Arguments, environment: [String: String], transport: (any AdminTransport)?) throws {
        let url = args.option("url") ?? environment["INSIGHTD_LISTEN"].map { "http://\($0)" } ?? "http://127.0.0.1:8080"
        guard args.option("key") == nil else {
            throw AppError("--key is not accepted: a key on the command line is visible to every user through ps; "
                           + "set INSIGHTD_ADMIN_KEY or use --key-file FILE")
        }
        key = try AdminCommand.adminKey(file: args.option("key-file"), environment: environment)
        guard let base = URL(string: url) else { throw AppError("--url \(url) is not a URL") }
        guard let transport else { throw AppError("this command needs a connection to the daemon, which this build lacks") }
        self.base = base
        self.transport = transport
    }

    /// Sends the request; an answer other than 2xx with a JSON body is an error naming the problem.
    func send(_ method: String, _ path: String, body: String?) throws -> JSONValue {
        let answer = try transport.send(method, path, baseURL: base, key: key, body: body)
        guard (200..<300).contains(answer.status) else {
            let detail = answer.json?["detail"]?.stringValue ?? "HTTP \(answer.status)"
            throw AppError("insightd answered \(answer.status) \(answer.json?["code"]?.stringValue ?? ""): \(detail)")
        }
        guard let json = answer.json else { throw AppError("insightd answered without a body") }
        return json
    }
}

/// `insightctl`: administration on the store (SQLite in the state directory, or the PostgreSQL
/// database of `INSIGHTD_DATABASE_URL`). It works beside running daemons; changes to callers and
/// keys reach them within their credential cache time.
public enum AdminCommand {
    static let usage = """
        usage: insightctl [--state-dir DIR] COMMAND

        commands:
          migrate                                   apply pending schema migrations
          callers create --name NAME --roles evaluate,labels,admin
                         --environment production|sandbox [--tenant T] [--rate R] [--burst B] [--json]
                                                    create a caller and print its API key (shown once)
          callers list [--tenant T] [--json]        list callers (of one tenant)
          callers show CALLER_ID [--json]           one caller
          callers update CALLER_ID --training-capture on|off [--json]
                                                    keep (or stop keeping) the feature vectors of the caller's
                                                    evaluations for training (docs/privacy.md)
          tenants list [--json]                     list tenants and their callers per environment
          keys issue --caller CALLER_ID [--json]    issue another key for a caller
          keys list --caller CALLER_ID [--json]     list a caller's keys (ids and dates)
          keys revoke KEY_ID|KEY                    revoke a key
          hash-keys list [--json]                   the identifier hash keys (ids and dates, never the keys)
          hash-keys rotate                          add a new active key; lookups keep trying the old ones
          hash-keys retire KEY_ID                   drop an old key (its hashes stop matching)
          signing-keys list [--json]                the keys that sign the heads of receipts: id, dates, status (never the keys)
          signing-keys rotate [--activate-after SECONDS]
                                                    add a key, published at once and signing after SECONDS
                                                    (default 0; 300 with INSIGHTD_DATABASE_URL); the old one stays published
          signing-keys retire KEY_ID                stop signing with a key; it stays published for
                                                    $INSIGHTD_SIGNING_KEY_RETENTION seconds (default 30 days)
          receipts verify [--instance NAME] [--from SEQUENCE] [--json]
                                                    walk each instance's chain of receipt heads (or one, from
                                                    SEQUENCE): signatures, sequence, previous, time, leaves;
                                                    report the first break (status 1)
          hash --kind account|device|counterparty [--tenant T] VALUE
                                                    the stored hash of VALUE in tenant T, to find a subject's records
          backup PATH                               a consistent copy of the database, taken online
          purge --older-than DAYS                   delete evaluations, reports and labels older than DAYS
          rate-limit show CALLER_ID [--json]        a caller's rate limit as the running daemon holds it
          rate-limit reset CALLER_ID [--json]       refill its bucket and forgive its overdue reports
          subjects show --account|--device|--counterparty VALUE [--tenant T] [--limit N] [--cursor C] [--json]
                                                    the evaluations that carried a person, and their opt-out
          subjects erase [--account VALUE] [--device VALUE] [--counterparty VALUE] [--tenant T] [--json]
                                                    unlink a person everywhere (store, opt-outs, velocity)
          policy test CASES [--policy FILE]         replay a JSON-lines file of decision cases through a policy
                                                    (the built-in default without --policy) and print each answer
          models list [--models-dir DIR] [--json]   the model versions: status, current, trees, features
          models set-current VERSION [--models-dir DIR]
                                                    make VERSION current in registry.json (then reload: SIGHUP)
          models withdraw VERSION [--models-dir DIR]
                                                    mark VERSION withdrawn in its manifest (then reload: SIGHUP)
          models report --from YYYY-MM-DD --to YYYY-MM-DD [--environment E] [--category C] [--json]
                                                    how each model version performs on the tenant's traffic
          training export --from YYYY-MM-DD --to YYYY-MM-DD [--tenant T] [--environment E] [--out FILE]
                          [--presume-genuine-after-maturity]
                                                    the captured feature vectors of the period that have a label,
                                                    as JSON lines for training/train.py --from-export (standard
                                                    output, or FILE created 0600); unlabelled ones older than
                                                    $INSIGHTD_LABEL_MATURITY_DAYS (60) as genuine with the flag

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
        to $INSIGHTD_STATE_DIR, then /var/lib/insightd. The models directory is --models-dir, else
        $INSIGHTD_MODELS_DIR, else ./models; every change to it is checked by loading it as the
        daemon does, and served on the daemon's next reload (SIGHUP, systemctl reload insightd).
        Default rate 50/s and burst 100.

        """

    public static func main(arguments: [String], environment: [String: String],
                            transport: (any AdminTransport)? = nil) -> Int32 {
        do {
            var args = try Arguments(Array(arguments.dropFirst()),
                                     valueOptions: ["state-dir", "name", "roles", "environment", "rate", "burst", "caller", "url", "key",
                                                   "key-file", "kind", "older-than", "tenant", "account", "device", "counterparty",
                                                   "limit", "cursor", "activate-after", "policy", "from", "to", "category",
                                                   "models-dir", "training-capture", "out", "instance"])
            if args.flag("help") || args.positional.isEmpty { print(usage, terminator: ""); return args.positional.isEmpty && !args.flag("help") ? 2 : 0 }
            let stateDirectory = args.option("state-dir") ?? environment["INSIGHTD_STATE_DIR"] ?? Settings().stateDirectory
            let store = try storeLocation(stateDirectory: stateDirectory, explicit: args.option("state-dir") != nil,
                                          environment: environment)
            let json = args.flag("json")
            let command = args.positional
            let now = SystemClock().now()
            func registration() throws -> any CallerRegistration {
                try StoreBackend.registration(store, now: now)
            }
            switch command {
            case ["migrate"]:
                try args.checkAllConsumed()
                let applied = try StoreBackend.migrate(store, now: now)
                print(applied.isEmpty ? "schema is up to date" : "applied: \(applied.joined(separator: ", "))")
            case ["callers", "create"]:
                guard let name = args.option("name") else { throw AppError("--name is required") }
                guard let rolesText = args.option("roles") else { throw AppError("--roles is required (evaluate,labels,admin)") }
                var roles: Set<Role> = []
                for word in rolesText.split(separator: ",") {
                    guard let role = Role(rawValue: word.trimmingCharacters(in: .whitespaces)) else {
                        throw AppError("unknown role '\(word)'; roles are evaluate, labels, admin")
                    }
                    roles.insert(role)
                }
                guard let environmentName = args.option("environment") else { throw AppError("--environment is required (production or sandbox)") }
                guard let callerEnvironment = InsightDomain.Environment(rawValue: environmentName) else {
                    throw AppError("--environment must be production or sandbox")
                }
                let rate = try args.option("rate").map { text -> Double in
                    guard let v = Double(text), v > 0, v.isFinite else { throw AppError("--rate must be a positive number") }
                    return v
                } ?? 50
                let burst = try args.option("burst").map { text -> Int in
                    guard let v = Int(text), v >= 1 else { throw AppError("--burst must be a whole number of at least 1") }
                    return v
                } ?? 100
                let tenant = args.option("tenant") ?? Tenant.defaultName
                try args.checkAllConsumed()
                let (caller, key) = try registration().create(
                    name: name, tenant: tenant, environment: callerEnvironment, roles: roles, rate: rate, burst: burst, now: now,
                    callerId: "caller_" + Hex.encode(SecureRandom.bytes(8)))
                if json {
                    print(JSONWriter.string(.object(["callerId": .string(caller.callerId), "apiKey": .string(key.token),
                                                     "keyId": .string(key.keyId), "tenant": .string(caller.tenant)])))
                } else {
                    print("caller \(caller.callerId) (\(caller.name), tenant \(caller.tenant), \(caller.environment.rawValue), roles \(roles.sorted().map(\.rawValue).joined(separator: ",")))")
                    print("API key (shown once, store it now): \(key.token)")
                }
            case ["callers", "list"]:
                let tenant = args.option("tenant")
                try args.checkAllConsumed()
                let callers = try registration().list(tenant: tenant)
                if json {
                    print(JSONWriter.string(.array(callers.map(InsightAPIHandler.render))))
                } else {
                    printCallers(callers)
                }
            case let words where words.count == 3 && words[0] == "callers" && ["show", "update"].contains(words[1]):
                var caller: Caller
                if words[1] == "update" {
                    guard let text = args.option("training-capture") else {
                        throw AppError("callers update needs --training-capture on|off")
                    }
                    guard let on = ["on": true, "off": false][text] else { throw AppError("--training-capture must be on or off") }
                    try args.checkAllConsumed()
                    caller = try registration().setTrainingCapture(callerId: words[2], on)
                } else {
                    try args.checkAllConsumed()
                    guard let found = try registration().caller(words[2], tenant: nil) else {
                        throw AppError("no caller \(words[2])")
                    }
                    caller = found
                }
                if json {
                    print(JSONWriter.string(InsightAPIHandler.render(caller)))
                } else {
                    printCallers([caller])
                    if words[1] == "update" {
                        print(caller.trainingCapture
                              ? "training capture is on: the feature vectors of this caller's evaluations are kept (docs/privacy.md); running daemons apply it within their credential cache time"
                              : "training capture is off: no more vectors are kept for this caller (those kept stay until retention or erasure)")
                    }
                }
            case ["tenants", "list"]:
                try args.checkAllConsumed()
                let tenants = try registration().tenants()
                if json {
                    print(JSONWriter.string(.array(tenants.map { tenant in
                        .object(["tenant": .string(tenant.name),
                                 "callers": .object(["production": .number(Double(tenant.production)),
                                                     "sandbox": .number(Double(tenant.sandbox))])])
                    })))
                } else {
                    printTable(["TENANT", "PRODUCTION CALLERS", "SANDBOX CALLERS"], tenants.map {
                        [$0.name, String($0.production), String($0.sandbox)]
                    })
                }
            case ["keys", "issue"]:
                guard let callerId = args.option("caller") else { throw AppError("--caller is required") }
                try args.checkAllConsumed()
                let key = try registration().issueKey(callerId: callerId, now: now)
                if json {
                    print(JSONWriter.string(.object(["callerId": .string(callerId), "apiKey": .string(key.token), "keyId": .string(key.keyId)])))
                } else {
                    print("API key (shown once, store it now): \(key.token)")
                }
            case ["keys", "list"]:
                guard let callerId = args.option("caller") else { throw AppError("--caller is required") }
                try args.checkAllConsumed()
                let keys = try registration().keys(callerId: callerId)
                if json {
                    print(JSONWriter.string(.array(keys.map { key in
                        var o: JSONObject = ["keyId": .string(key.keyId), "createdAt": .string(Timestamp.format(key.createdAt))]
                        o.append("revokedAt", key.revokedAt.map { .string(Timestamp.format($0)) } ?? .null)
                        return .object(o)
                    })))
                } else {
                    printTable(["KEY", "CREATED", "REVOKED"], keys.map {
                        [$0.keyId, Timestamp.format($0.createdAt), $0.revokedAt.map(Timestamp.format) ?? "-"]
                    })
                }
            case let words where words.count == 3 && words[0] == "keys" && words[1] == "revoke":
                try args.checkAllConsumed()
                let keyId = APIKey(token: words[2])?.keyId ?? words[2]
                try registration().revokeKey(keyId: keyId, now: now)
                print("key \(keyId) revoked; the daemon stops accepting it within its credential cache time")
            case ["hash-keys", "list"], ["hash-keys", "rotate"]:
                try args.checkAllConsumed()
                let path = keyringPath(stateDirectory: stateDirectory, environment: environment)
                if command[1] == "rotate" {
                    let entry = try KeyringFile.rotate(path: path, now: now)
                    print("new active key \(entry.keyId); the daemon picks it up within seconds (previous keys still match)")
                    return 0
                }
                let entries = try KeyringFile.load(path: path, createIfMissing: false, now: now)
                let rows = entries.enumerated().reversed().map { index, entry in
                    (entry.keyId, entry.createdAt == 0 ? "-" : Timestamp.format(entry.createdAt),
                     index == entries.count - 1 ? "active" : "previous")
                }
                if json {
                    print(JSONWriter.string(.array(rows.map { .object(["keyId": .string($0.0), "createdAt": .string($0.1),
                                                                       "state": .string($0.2)]) })))
                } else {
                    printTable(["KEY", "CREATED", "STATE"], rows.map { [$0.0, $0.1, $0.2] })
                }
            case let words where words.count == 3 && words[0] == "hash-keys" && words[1] == "retire":
                try args.checkAllConsumed()
                try KeyringFile.retire(keyId: words[2], path: keyringPath(stateDirectory: stateDirectory, environment: environment), now: now)
                print("key \(words[2]) retired; hashes made with it no longer match")
            case ["signing-keys", "list"], ["signing-keys", "rotate"]:
                let directory = try signingKeyDirectory(stateDirectory: stateDirectory, environment: environment)
                if command[1] == "rotate" {
                    let defaultDelay = environment["INSIGHTD_DATABASE_URL"] == nil ? 0 : sharedActivationDelay
                    let delay = try args.option("activate-after").map { text -> Int in
                        guard let v = Int(text), (0...86_400).contains(v) else {
                            throw AppError("--activate-after must be a whole number of seconds from 0 to 86400")
                        }
                        return v
                    } ?? defaultDelay
                    try args.checkAllConsumed()
                    let entry = try SigningKeyDirectory.rotate(directory: directory, now: now, activateAfter: delay)
                    let signs = entry.activatesAt <= now ? "signs from now" : "signs from \(Timestamp.format(entry.activatesAt))"
                    print("new signing key \(entry.keyId): published now, \(signs); the daemon picks it up within seconds (the previous key stays published)")
                    try reportRemoved(SigningKeyDirectory.removeExpired(directory: directory, now: now))
                    return 0
                }
                try args.checkAllConsumed()
                try listSigningKeys(directory: directory, now: now, json: json)
            case let words where words.count == 3 && words[0] == "signing-keys" && words[1] == "retire":
                let directory = try signingKeyDirectory(stateDirectory: stateDirectory, environment: environment)
                try args.checkAllConsumed()
                let retention = try signingKeyRetention(environment)
                let entry = try SigningKeyDirectory.retire(keyId: words[2], directory: directory, now: now, retention: retention)
                print("signing key \(entry.keyId) retired: it signs no more and stays published until \(Timestamp.format(entry.publishedUntil ?? now))")
                try reportRemoved(SigningKeyDirectory.removeExpired(directory: directory, now: now))
            case let words where words.count == 2 && words[0] == "hash":
                guard let kindName = args.option("kind"), let kind = IdentifierKind(rawValue: kindName) else {
                    throw AppError("--kind must be account, device or counterparty")
                }
                let tenant = args.option("tenant") ?? Tenant.defaultName
                guard Tenant.isValidName(tenant) else { throw AppError("--tenant \(tenant) is not a tenant name") }
                try args.checkAllConsumed()
                // Each tenant hashes under its own keys: the same person has other hashes in another tenant.
                let keyring = try KeyringFile.keyring(path: keyringPath(stateDirectory: stateDirectory, environment: environment),
                                                      createIfMissing: false, now: now).forTenant(tenant)
                // Every key's hash: records made before a rotation carry the previous key's.
                for hasher in keyring.all {
                    print("\(Hex.encode(hasher.hash(words[1], kind: kind)))  key \(hasher.keyId)\(hasher.keyId == keyring.active.keyId ? " (active)" : "")")
                }
            case let words where words.count == 2 && words[0] == "backup":
                try args.checkAllConsumed()
                let target = words[1]
                let pages = try StoreBackend.backup(store, to: target)
                print("backed up \(pages) pages to \(target) (integrity ok); the hash key file is not included: back it up separately")
            case ["receipts", "verify"]:
                let instance = args.option("instance")
                let from = try args.option("from").map { text -> Int64 in
                    guard let v = Int64(text), v >= 0 else { throw AppError("--from must be a sequence: a whole number from 0") }
                    return v
                } ?? 0
                if args.option("from") != nil && instance == nil { throw AppError("--from needs --instance") }
                let directory = try signingKeyDirectory(stateDirectory: stateDirectory, environment: environment)
                try args.checkAllConsumed()
                let keys = try SigningKeyDirectory.load(directory: directory, createIfEmpty: false, now: now)
                return try verifyReceipts(StoreBackend.receiptLog(store, now: now), keys: keys.map(\.signingKey),
                                          instance: instance, from: from, json: json)
            case ["purge"]:
                guard let text = args.option("older-than"), let days = Int(text), days >= 1 else {
                    throw AppError("--older-than DAYS is required (a whole number of at least 1)")
                }
                try args.checkAllConsumed()
                let report = try StoreBackend.purge(store, olderThan: now - Milliseconds(days) * 86_400_000, now: now)
                print("deleted \(report.evaluations) evaluations, \(report.labels) labels, \(report.labelSubmissions) label submissions older than \(days) days")
            case let words where words.count == 3 && words[0] == "rate-limit" && ["show", "reset"].contains(words[1]):
                let daemon = try DaemonConnection(&args, environment: environment, transport: transport)
                try args.checkAllConsumed()
                let path = "admin/v1/callers/\(words[2])/rate-limit" + (words[1] == "reset" ? "/reset" : "")
                let view = try daemon.send(words[1] == "reset" ? "POST" : "GET", path, body: nil)
                print(json ? JSONWriter.string(view) : renderRateLimit(view))
            case ["subjects", "show"], ["subjects", "erase"]:
                let showing = command[1] == "show"
                var identifiers = JSONObject(), named = 0
                for kind in IdentifierKind.allCases {
                    if let value = args.option(kind.rawValue) {
                        identifiers.append(kind.rawValue, .string(try identifier(value)))
                        named += 1
                    }
                }
                guard showing ? named == 1 : named >= 1 else {
                    throw AppError(showing ? "subjects show needs exactly one of --account, --device or --counterparty"
                                           : "subjects erase needs --account, --device or --counterparty (one or more)")
                }
                var body = JSONObject()
                body.append("subject", .object(identifiers))
                if let tenant = args.option("tenant") { body.append("tenant", .string(tenant)) }
                if showing, let limit = args.option("limit") {
                    guard let n = Int(limit) else { throw AppError("--limit must be a whole number") }
                    body.append("limit", .number(Double(n)))
                }
                if showing, let cursor = args.option("cursor") { body.append("cursor", .string(cursor)) }
                let daemon = try DaemonConnection(&args, environment: environment, transport: transport)
                try args.checkAllConsumed()
                let answer = try daemon.send("POST", showing ? "v1/subjects/transparency" : "v1/subjects/erasure",
                                             body: JSONWriter.string(.object(body)))
                print(json ? JSONWriter.string(answer) : showing ? renderTransparency(answer) : renderErasure(answer))
            case let words where words.count == 2 && words[0] == "policy" && words[1] == "test":
                throw AppError("policy test needs the file of cases: policy test CASES [--policy FILE]")
            case let words where words.count == 3 && words[0] == "policy" && words[1] == "test":
                let policyFile = args.option("policy")
                try args.checkAllConsumed()
                return try PolicyTest.run(cases: words[2], policy: policyFile)
            case ["models", "list"]:
                let directory = args.option("models-dir") ?? environment["INSIGHTD_MODELS_DIR"] ?? Settings().modelsDirectory
                try args.checkAllConsumed()
                // The shadow versions as the daemon reads INSIGHTD_MODEL_SHADOW (and refuses them).
                let registry = try ModelsDirectory.load(directory, current: environment["INSIGHTD_MODEL_CURRENT"],
                                                        shadow: try shadowModels(environment))
                let shadows = Set(registry.shadows.map(\.version))
                let rows = registry.versions.map { model in
                    (model.version, model.withdrawn ? "withdrawn" : "active", model.version == registry.currentVersion,
                     shadows.contains(model.version), model.treeCount, model.features.count, model.modelSHA256)
                }
                if json {
                    print(JSONWriter.string(.array(rows.map { row in
                        .object(["version": .string(row.0), "status": .string(row.1), "current": .bool(row.2), "shadow": .bool(row.3),
                                 "trees": .number(Double(row.4)), "features": .number(Double(row.5)), "sha256": .string(row.6)])
                    })))
                } else {
                    printTable(["VERSION", "STATUS", "CURRENT", "SHADOW", "TREES", "FEATURES", "MODEL SHA-256"], rows.map {
                        [$0.0, $0.1, $0.2 ? "current" : "", $0.3 ? "shadow" : "", String($0.4), String($0.5), $0.6]
                    })
                }
            case let words where words.count == 3 && words[0] == "models" && ["set-current", "withdraw"].contains(words[1]):
                let directory = args.option("models-dir") ?? environment["INSIGHTD_MODELS_DIR"] ?? Settings().modelsDirectory
                try args.checkAllConsumed()
                if words[1] == "set-current" {
                    // The daemon refuses a version that is both current and a shadow (at its next reload).
                    if try shadowModels(environment).contains(words[2]) {
                        throw AppError("model version \(words[2]) runs as a shadow (INSIGHTD_MODEL_SHADOW), and the daemon refuses a "
                                       + "version that is both: take it out of INSIGHTD_MODEL_SHADOW first")
                    }
                    try ModelsDirectory.setCurrent(words[2], in: directory)
                    print("model version \(words[2]) is current in \(directory)/registry.json; reload the daemon to serve it (SIGHUP)")
                    if let pinned = environment["INSIGHTD_MODEL_CURRENT"], !pinned.isEmpty, pinned != words[2] {
                        print("note: INSIGHTD_MODEL_CURRENT=\(pinned) is set here; where the daemon has it, it overrides registry.json")
                    }
                } else {
                    try ModelsDirectory.withdraw(words[2], in: directory)
                    print("model version \(words[2]) is withdrawn in \(directory); reload the daemon (SIGHUP): requests naming it then answer insightVersionUnavailable")
                }
            case ["models", "report"]:
                guard let from = args.option("from"), let to = args.option("to") else {
                    throw AppError("models report needs --from YYYY-MM-DD and --to YYYY-MM-DD")
                }
                var query = "from=\(from)&to=\(to)"
                if let environment = args.option("environment") { query += "&environment=\(environment)" }
                if let category = args.option("category") { query += "&category=\(category)" }
                // The values go into a URL: only what a date or a name holds, the daemon checks the rest.
                guard query.allSatisfy({ $0.isLetter || $0.isNumber || "-=&".contains($0) }) else {
                    throw AppError("--from, --to, --environment and --category take dates and names only")
                }
                let daemon = try DaemonConnection(&args, environment: environment, transport: transport)
                try args.checkAllConsumed()
                let report = try daemon.send("GET", "admin/v1/model-performance?" + query, body: nil)
                print(json ? JSONWriter.string(report) : renderModelPerformance(report))
            case ["training", "export"]:
                return try exportTraining(&args, store: store, environment: environment, now: now)
            default:
                throw AppError("unknown command '\(command.joined(separator: " "))'\n\(usage)")
            }
            return 0
        } catch {
            DescriptorOutput.standardError("insightctl: \(error)\n")
            return 1
        }
    }

    /// An identifier from the command line, or from standard input when it is `-`.
    static func identifier(_ value: String) throws -> String {
        guard value == "-" else { return value }
        guard let line = readLine(strippingNewline: true), !line.isEmpty else {
            throw AppError("an identifier was to be read from standard input, which gave none")
        }
        return line
    }

    /// The admin key from `--key-file` (its first line) or `$INSIGHTD_ADMIN_KEY`.
    static func adminKey(file: String?, environment: [String: String]) throws -> String {
        if let file {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw AppError("cannot read --key-file \(file): \(String(cString: strerror(errno)))")
            }
            let key = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first
                .map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            guard !key.isEmpty else { throw AppError("--key-file \(file) holds no key") }
            return key
        }
        guard let key = environment["INSIGHTD_ADMIN_KEY"], !key.isEmpty else {
            throw AppError("an admin key is needed: set INSIGHTD_ADMIN_KEY or use --key-file FILE")
        }
        return key
    }

    /// The store insightctl acts on: the PostgreSQL database of INSIGHTD_DATABASE_URL when it is
    /// set (then --state-dir, which names an embedded store, is a contradiction), else SQLite in
    /// the state directory.
    static func storeLocation(stateDirectory: String, explicit: Bool, environment: [String: String]) throws -> StoreLocation {
        guard let url = environment["INSIGHTD_DATABASE_URL"] else { return .sqlite(stateDirectory: stateDirectory) }
        guard !explicit else {
            throw AppError("--state-dir names an embedded SQLite store, but INSIGHTD_DATABASE_URL names a PostgreSQL one: unset one of them")
        }
        guard Settings.isPostgresURL(url) else { throw AppError(Settings.notPostgresURL) }
        return .postgres(url: url)
    }

    /// A new signing key's wait before it signs when several instances share the engines: long
    /// enough for every instance to read it (INSIGHTD_COMPLIANCE_REFRESH) and for a mounted
    /// Secret's update to reach every pod, so every instance's JWKS lists it before any answer
    /// carries it.
    static let sharedActivationDelay = 300

    /// The signing key directory: INSIGHTD_SIGNING_KEY_DIR, else `signing-keys` in the state
    /// directory (the embedded mode only: several instances share one directory, which must be named).
    static func signingKeyDirectory(stateDirectory: String, environment: [String: String]) throws -> String {
        if let directory = environment["INSIGHTD_SIGNING_KEY_DIR"], !directory.isEmpty { return directory }
        guard environment["INSIGHTD_DATABASE_URL"] == nil else {
            throw AppError("INSIGHTD_SIGNING_KEY_DIR: required with INSIGHTD_DATABASE_URL (the directory every instance reads its signing keys from)")
        }
        var settings = Settings()
        settings.stateDirectory = stateDirectory
        return settings.resolvedSigningKeyDirectory
    }

    /// INSIGHTD_MODEL_SHADOW, checked as the daemon checks it.
    static func shadowModels(_ environment: [String: String]) throws -> [String] {
        switch Settings.load(from: environment.filter { $0.key == "INSIGHTD_MODEL_SHADOW" }) {
        case .success(let settings): return settings.shadowModels
        case .failure(let error): throw AppError(error.description)
        }
    }

    /// INSIGHTD_SIGNING_KEY_RETENTION, checked as the daemon checks it.
    static func signingKeyRetention(_ environment: [String: String]) throws -> Int {
        let name = "INSIGHTD_SIGNING_KEY_RETENTION"
        switch Settings.load(from: environment.filter { $0.key == name }) {
        case .success(let settings): return settings.signingKeyRetention
        case .failure(let error): throw AppError(error.description)
        }
    }

    /// Walks the chain of `instance` from `from`, or of every instance from its oldest stored
    /// head, and prints what held and the first break of each; status 1 when one broke.
    static func verifyReceipts(_ log: any ReceiptLog, keys: [SigningKey], instance: String?, from: Int64, json: Bool) throws -> Int32 {
        var verifying: [String: Ed25519VerifyingKey] = [:]
        for key in keys { verifying[key.keyId] = Ed25519VerifyingKey(rawRepresentation: key.publicKey) }
        let instances = try instance.map { [$0] } ?? log.latestHeads().map(\.head.instance)
        var audits: [ReceiptChainAudit] = []
        for name in instances {
            var audit = ReceiptChainAudit(instance: name, keys: verifying)
            var next = from
            walk: while true {
                let page = try log.heads(instance: name, from: next, limit: 500, withLeaves: true)
                for head in page {
                    guard audit.check(head) else { break walk }
                    next = head.signed.head.sequence + 1
                }
                if page.count < 500 { break }
            }
            audits.append(audit)
        }
        if json {
            print(JSONWriter.string(.array(audits.map { audit in
                .object(["instance": .string(audit.instance),
                         "first": audit.first.map { .number(Double($0.head.sequence)) } ?? .null,
                         "last": audit.last.map { .number(Double($0.head.sequence)) } ?? .null,
                         "heads": .number(Double(audit.heads)), "answers": .number(Double(audit.answers)),
                         "brokenAt": audit.broken.map { .number(Double($0.sequence)) } ?? .null,
                         "reason": audit.broken.map { .string($0.reason) } ?? .null])
            })))
        } else if audits.isEmpty {
            print("no receipt heads stored")
        }
        for audit in audits where !json {
            let span = audit.first.map { "heads \($0.head.sequence)-\(audit.last!.head.sequence)" } ?? "no head"
            let start = audit.first.map { $0.head.previous == nil ? " from the chain's start" : " (the first names a head before it)" } ?? ""
            print("instance \(audit.instance): \(span) verified\(start), \(audit.heads) heads, \(audit.answers) answers")
            if let broken = audit.broken {
                print("instance \(audit.instance): head \(broken.sequence) breaks the chain: \(broken.reason)")
            }
        }
        return audits.contains { $0.broken != nil } ? 1 : 0
    }

    static func listSigningKeys(directory: String, now: Milliseconds, json: Bool) throws {
        let entries = try SigningKeyDirectory.load(directory: directory, createIfEmpty: false, now: now)
        // Statuses from the set the daemon would build (an unusable set still lists its keys).
        let keys = entries.map(\.signingKey)
        let set = try? SigningKeySet(keys: keys, now: now)
        func status(_ key: SigningKey) -> String {
            set.map { $0.status(of: key, at: now).rawValue } ?? (key.retiredAt == nil ? "previous" : "retired")
        }
        let rows = keys.reversed().map { key in
            (key.keyId, Timestamp.format(key.createdAt), status(key), Timestamp.format(key.activatesAt),
             key.publishedUntil.map(Timestamp.format))
        }
        if json {
            print(JSONWriter.string(.array(rows.map {
                .object(["keyId": .string($0.0), "createdAt": .string($0.1), "status": .string($0.2),
                         "activatesAt": .string($0.3), "retiredUntil": $0.4.map(JSONValue.string) ?? .null])
            })))
        } else {
            printTable(["KEY", "CREATED", "STATUS", "SIGNS FROM", "RETIRED UNTIL"], rows.map { [$0.0, $0.1, $0.2, $0.3, $0.4 ?? "-"] })
        }
    }

    static func reportRemoved(_ keyIds: [String]) {
        for keyId in keyIds { print("deleted signing key \(keyId): retired and no longer published") }
    }

    static func keyringPath(stateDirectory: String, environment: [String: String]) -> String {
        if let file = environment["INSIGHTD_HASH_KEY_FILE"], !file.isEmpty { return file }
        var settings = Settings()
        settings.stateDirectory = stateDirectory
        return settings.resolvedHashKeyFile
    }

    /// A subject's evaluations as an operator reads them to a person, newest first.
    static func renderTransparency(_ v: JSONValue) -> String {
        var lines: [String] = []
        let status = v["authorization"]?["status"]?.stringValue
        lines.append("insights for this person: " + (status.map { $0 == "authorized" ? "on" : $0 } ?? "not applicable (counterparty)"))
        let entries = v["evaluations"]?.arrayValue ?? []
        lines.append(entries.isEmpty ? "no evaluations" : "evaluations, newest first:")
        for entry in entries {
            let insights = (entry["insights"]?.arrayValue ?? []).map { insight in
                let outcome = insight["value"]?.stringValue ?? insight["error"]?.stringValue ?? "-"
                return "\(insight["type"]?.stringValue ?? "?")=\(outcome)" + (insight["modelVersion"]?.stringValue.map { " (model \($0))" } ?? "")
            }
            let decision = entry["decision"]?.stringValue.map { "  decision \($0)" } ?? ""
            lines.append("  \(entry["createdAt"]?.stringValue ?? "-")  \(entry["category"]?.stringValue ?? "-")  by \(entry["callerName"]?.stringValue ?? "(deleted caller)")  \(insights.joined(separator: ", "))\(decision)")
        }
        if let cursor = v["cursor"]?.stringValue { lines.append("more: --cursor \(cursor)") }
        return lines.joined(separator: "\n")
    }

    /// The model performance report as a table: each proportion as value [95 % interval] of its
    /// sample; under each row, a row per capture kit (`· web insight-capture-web 1.0.0`).
    static func renderModelPerformance(_ v: JSONValue) -> String {
        func n(_ value: JSONValue?) -> String { value?.numberValue.map(format) ?? "-" }
        func proportion(_ p: JSONValue?) -> String {
            guard let p, let value = p["value"]?.numberValue, let low = p["interval"]?["low"]?.numberValue,
                  let high = p["interval"]?["high"]?.numberValue else { return "- of 0" }
            func f(_ x: Double) -> String { String(format: "%.2f", x) }
            return "\(f(value)) [\(f(low))-\(f(high))] of \(n(p["sample"]))"
        }
        let mature = v["mature"] == .bool(true)
        var lines = ["\(v["environment"]?.stringValue ?? "?") \(v["from"]?.stringValue ?? "?") to \(v["to"]?.stringValue ?? "?"): "
                     + (mature ? "mature" : "not mature: labels may still come (maturity \(n(v["maturityDays"])) days)")]
        let rows = v["versions"]?.arrayValue ?? []
        guard !rows.isEmpty else { return (lines + ["no evaluations"]).joined(separator: "\n") }
        let header = ["VERSION", "ROLE", "CATEGORY", "EVALUATIONS", "HIGH", "MEDIUM", "UNKNOWN", "LABELLED FRAUD", "LABELLED LEGIT",
                      "PRECISION M|H", "RECALL M|H", "PRECISION H", "RECALL H", "MATURE", "PSI"]
        // Each row, then the same figures per capture kit under it (version and role left blank).
        let rowsAndKits = rows.flatMap { row in
            [(row, "")] + (row["bySource"]?.arrayValue ?? []).map { source in
                let kit = [source["platform"], source["kit"], source["kitVersion"]].compactMap { $0?.stringValue }
                return (source, "· " + (kit.isEmpty ? "no source" : kit.joined(separator: " ")))
            }
        }
        let table = rowsAndKits.map { row, source -> [String] in
            func labelled(_ outcome: String) -> String {
                format((row["labelled"]?[outcome]?.objectValue?.members ?? []).compactMap { $0.value.numberValue }.reduce(0, +))
            }
            // The drift index with its sample, or "-" when the version has no reference.
            let psi = row["psi"]?["value"]?.numberValue.map { String(format: "%.3f of ", $0) + n(row["psi"]?["sample"]) } ?? "-"
            let identity = source.isEmpty
                ? [row["modelVersion"]?.stringValue ?? "?", row["role"]?.stringValue ?? "served", row["category"]?.stringValue ?? "?"]
                : ["", "", source]
            return identity + [n(row["evaluations"]),
                    n(row["values"]?["high"]), n(row["values"]?["medium"]), n(row["values"]?["unknown"]),
                    labelled("confirmedFraud"), labelled("confirmedLegitimate"),
                    proportion(row["precision"]?["mediumOrHigh"]), proportion(row["recall"]?["mediumOrHigh"]),
                    proportion(row["precision"]?["high"]), proportion(row["recall"]?["high"]),
                    String(format: "%.0f%%", (row["matureShare"]?.numberValue ?? 0) * 100), psi]
        }
        let widths = header.indices.map { column in ([header] + table).map { $0[column].count }.max() ?? 0 }
        for row in [header] + table {
            // Trailing blanks only: a kit's row starts blank, under its version's category.
            var line = row.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }
                .joined(separator: "  ")
            while line.last == " " { line.removeLast() }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }

    static func renderErasure(_ v: JSONValue) -> String {
        func n(_ key: String) -> String { v[key]?.numberValue.map(format) ?? "-" }
        return "erased in tenant \(v["tenant"]?.stringValue ?? "?"): \(n("evaluations")) evaluations unlinked, "
            + "\(n("authorizations")) opt-outs deleted, \(n("trainingVectors")) training vectors deleted, under \(n("hashKeys")) hash keys"
    }

    /// The admin view of a caller's rate limit as a table an operator reads top to bottom.
    static func renderRateLimit(_ v: JSONValue) -> String {
        func n(_ value: JSONValue?) -> String { value?.numberValue.map(format) ?? "-" }
        func t(_ value: JSONValue?) -> String { value?.stringValue ?? "-" }
        let rows: [[String]] = [
            ["caller", t(v["callerId"]) + " (" + t(v["environment"]) + ")"],
            ["policy", "\(n(v["policy"]?["rate"]))/s, burst \(n(v["policy"]?["burst"]))"],
            ["in force", "\(n(v["effectiveRate"]))/s, burst \(n(v["effectiveBurst"])), \(n(v["tokens"])) tokens now"],
            ["penalty", "step \(n(v["penalty"]?["step"])) of \(n(v["penalty"]?["maxStep"])) (x\(n(v["penalty"]?["factor"]))): \(t(v["penalty"]?["why"]))"],
            ["window", "last \(n(v["window"]?["seconds"])) s, counted \(t(v["window"]?["countedAt"]))"],
            ["evaluations", n(v["window"]?["evaluations"])],
            ["on time", n(v["window"]?["onTime"])],
            ["late", n(v["window"]?["late"])],
            ["overdue", "\(n(v["window"]?["overdue"])) (allowance \(n(v["window"]?["overdueAllowance"])))"],
            ["pending", n(v["window"]?["pending"])],
            ["throttled", "\(n(v["throttled"]?["count"])), last \(t(v["throttled"]?["lastThrottledAt"])) (\(t(v["throttled"]?["lastReason"])))"],
        ]
        let width = rows.map { $0[0].count }.max() ?? 0
        return rows.map { $0[0].padding(toLength: width, withPad: " ", startingAt: 0) + "  " + $0[1] }.joined(separator: "\n")
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }

    static func printCallers(_ callers: [Caller]) {
        printTable(["CALLER", "NAME", "TENANT", "ENVIRONMENT", "ROLES", "RATE", "BURST", "CREATED", "TRAINING CAPTURE"], callers.map {
            [$0.callerId, $0.name, $0.tenant, $0.environment.rawValue, $0.roles.sorted().map(\.rawValue).joined(separator: ","),
             format($0.rate), String($0.burst), Timestamp.format($0.createdAt), $0.trainingCapture ? "on" : "off"]
        })
    }

    /// `training export`: the labelled captured vectors of a period as JSON lines, with a
    /// summary on standard error.
    static func exportTraining(_ args: inout Arguments, store: StoreLocation, environment: [String: String],
                               now: Milliseconds) throws -> Int32 {
        guard let fromText = args.option("from"), let toText = args.option("to") else {
            throw AppError("training export needs --from YYYY-MM-DD and --to YYYY-MM-DD")
        }
        guard let from = Timestamp.parseDate(fromText) else { throw AppError("--from must be a date as YYYY-MM-DD") }
        guard let to = Timestamp.parseDate(toText) else { throw AppError("--to must be a date as YYYY-MM-DD") }
        guard from <= to else { throw AppError("--from must not be after --to") }
        let environmentName = args.option("environment") ?? InsightDomain.Environment.production.rawValue
        guard let exported = InsightDomain.Environment(rawValue: environmentName) else {
            throw AppError("--environment must be production or sandbox")
        }
        let tenant = args.option("tenant")
        if let tenant, !Tenant.isValidName(tenant) { throw AppError("--tenant \(tenant) is not a tenant name") }
        let out = args.option("out")
        let presume = args.flag("presume-genuine-after-maturity")
        try args.checkAllConsumed()
        // The maturity is the daemon's setting, read (and checked) the same way.
        let maturityDays: Int
        switch Settings.load(from: environment.filter { $0.key == "INSIGHTD_LABEL_MATURITY_DAYS" }) {
        case .success(let settings): maturityDays = settings.labelMaturityDays
        case .failure(let error): throw AppError("\(error)")
        }
        let query = TrainingExportQuery(from: from, until: to + 86_400_000, environment: exported, tenant: tenant)
        let source = try StoreBackend.trainingVectors(store, now: now)
        let before = presume ? now - Milliseconds(maturityDays) * 86_400_000 : nil
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
        var text = "exported \(summary.lines) vectors: \(summary.confirmedFraud) confirmedFraud, "
            + "\(summary.confirmedLegitimate) confirmedLegitimate, \(summary.presumedGenuine) presumedGenuine"
        if presume {
            text += " (unlabelled and older than \(maturityDays) days, INSIGHTD_LABEL_MATURITY_DAYS)"
        }
        text += "; \(summary.unlabelled) unlabelled left out"
        if let out { text += "; written to \(out)" }
        DescriptorOutput.standardError(text + "\n")
        return 0
    }

    static func printTable(_ header: [String], _ rows: [[String]]) {
        let widths = header.indices.map { column in
            ([header] + rows).map { $0[column].count }.max() ?? 0
        }
        for row in [header] + rows {
            print(row.enumerated().map { $0.element.padding(toLength: widths[$0.offset], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces))
        }
    }
}
