import CoachingModel
import Dispatch
import Foundation
import InsightDomain

/// `insightd`: the daemon's entry point, apart from `main.swift` so tests can drive it.
public enum Daemon {
    public static let version = "0.1.0"

    static let usage = """
        usage: insightd [--check-config] [--help] [--version]

        Serves the insightd API. Configuration comes from INSIGHTD_* environment variables:

        """

    /// Runs the daemon until SIGTERM or SIGINT; returns the exit status.
    public static func main(arguments: [String], environment: [String: String]) -> Int32 {
        var args: Arguments
        do { args = try Arguments(Array(arguments.dropFirst()), valueOptions: []) } catch {
            DescriptorOutput.standardError("insightd: \(error)\n")
            return 2
        }
        if args.flag("help") {
            var text = usage
            for v in Settings.variables { text += "  \(v.name)\n      \(v.meaning) (default: \(v.defaultValue))\n" }
            print(text, terminator: "")
            return 0
        }
        if args.flag("version") { print("insightd \(version)"); return 0 }
        let checkOnly = args.flag("check-config")
        do { try args.checkAllConsumed() } catch {
            DescriptorOutput.standardError("insightd: \(error)\n\(usage)")
            return 2
        }
        let settings: Settings
        switch Settings.load(from: environment) {
        case .success(let s): settings = s
        case .failure(let error):
            DescriptorOutput.standardError("insightd: configuration is invalid:\n\(error)\n")
            return 78  // EX_CONFIG
        }
        if checkOnly { return checkConfiguration(settings) }

        signal(SIGPIPE, SIG_IGN)
        // Whatever the service manager's umask, what the daemon creates (state files, the
        // instance lock, generated keys) is its user's alone.
        umask(0o077)
        let logger = Logger(minimumLevel: settings.logLevel)
        let service: InsightService
        do { service = try InsightService.start(settings: settings, logger: logger) } catch {
            logger.error("cannot start", [("error", .string("\(error)"))])
            return 1
        }
        let notifier = SystemdNotifier(environment: environment)
        notifier.notify("READY=1\nSTATUS=serving on \(settings.listenHost):\(service.boundPort)")
        let watchdog = startWatchdog(environment: environment, notifier: notifier, service: service)
        wait(for: service, notifier: notifier)
        watchdog?.cancel()
        return 0
    }

    /// Pings systemd's watchdog at half its interval (`WATCHDOG_USEC`) while the service is
    /// ready to serve; a hung process stops pinging and systemd restarts it.
    static func startWatchdog(
        environment: [String: String], notifier: SystemdNotifier,
        service: InsightService
    ) -> DispatchSourceTimer? {
        guard let text = environment["WATCHDOG_USEC"], let usec = Int(text), usec > 0 else { return nil }
        if let pid = environment["WATCHDOG_PID"], Int(pid) != Int(getpid()) { return nil }
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "insightd.watchdog"))
        let interval = DispatchTimeInterval.microseconds(max(usec / 2, 1000))
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.setEventHandler {
            if service.readiness.isReady { notifier.notify("WATCHDOG=1") }
        }
        timer.resume()
        return timer
    }

    /// Blocks until SIGTERM/SIGINT, reloading models, decision policies and TLS on SIGHUP, then drains and stops.
    static func wait(for service: InsightService, notifier: SystemdNotifier) {
        let stop = DispatchSemaphore(value: 0)
        let queue = DispatchQueue(label: "insightd.signals")
        var sources: [DispatchSourceSignal] = []
        for number in [SIGTERM, SIGINT, SIGHUP] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                if number == SIGHUP {
                    notifier.notify("RELOADING=1")
                    defer { notifier.notify("READY=1") }
                    do { try service.reloadModels() } catch {
                        service.logger.error(
                            "model reload failed; keeping the models in use",
                            [("error", .string("\(error)"))])
                    }
                    do { try service.reloadDecisionPolicies() } catch {
                        service.logger.error(
                            "decision policy reload failed; keeping the policies in use",
                            [("error", .string("\(error)"))])
                    }
                    do {
                        if try service.reloadTLS() { service.logger.info("TLS certificate reloaded") }
                    } catch {
                        service.logger.error(
                            "TLS reload failed; keeping the certificate in use",
                            [("error", .string("\(error)"))])
                    }
                } else {
                    service.logger.info("stopping", [("signal", .string(number == SIGTERM ? "SIGTERM" : "SIGINT"))])
                    stop.signal()
                }
            }
            source.resume()
            sources.append(source)
        }
        stop.wait()
        notifier.notify("STOPPING=1")
        service.stop()
        sources.forEach { $0.cancel() }
    }

    /// `--check-config`: settings, hash key, models and decision policies, without binding or writing anything.
    static func checkConfiguration(_ settings: Settings) -> Int32 {
        let problems = configurationProblems(settings)
        if problems.isEmpty {
            print("configuration OK")
            return 0
        }
        DescriptorOutput.standardError("insightd: configuration is invalid:\n" + problems.joined(separator: "\n") + "\n")
        return 78
    }

    /// What `--check-config` finds wrong with `settings` beyond their shape (empty: nothing).
    public static func configurationProblems(_ settings: Settings) -> [String] {
        var problems: [String] = []
        let manager = FileManager.default
        var isDirectory: ObjCBool = false
        if manager.fileExists(atPath: settings.stateDirectory, isDirectory: &isDirectory) {
            if !isDirectory.boolValue {
                problems.append("INSIGHTD_STATE_DIR \(settings.stateDirectory) is not a directory")
            } else if !manager.isWritableFile(atPath: settings.stateDirectory) {
                problems.append("INSIGHTD_STATE_DIR \(settings.stateDirectory) is not writable")
            }
        }
        let keyPath = settings.resolvedHashKeyFile
        if manager.fileExists(atPath: keyPath) {
            do { _ = try KeyringFile.keyring(path: keyPath, createIfMissing: false, now: 0) } catch {
                problems.append("\(error)")
            }
        } else if settings.hashKeyFile != nil {
            problems.append("INSIGHTD_HASH_KEY_FILE \(keyPath) does not exist")
        }
        if let problem = SigningKeyDirectory.problem(settings, now: SystemClock().now()) { problems.append(problem) }
        do { try settings.refuseExposedTLSKey() } catch { problems.append("\(error)") }
        if manager.fileExists(atPath: settings.modelsDirectory) {
            do {
                _ = try ModelRegistry.load(
                    directory: settings.modelsDirectory, current: settings.currentModel,
                    shadow: settings.shadowModels)
            } catch {
                problems.append("models in \(settings.modelsDirectory): \(error)")
            }
        } else if settings.modelsDirectoryExplicit {
            problems.append("INSIGHTD_MODELS_DIR \(settings.modelsDirectory) does not exist")
        } else if !settings.shadowModels.isEmpty {
            problems.append("INSIGHTD_MODEL_SHADOW names versions, but the models directory \(settings.modelsDirectory) does not exist")
        }
        do { _ = try DecisionPolicyLoader.load(file: settings.decisionPolicyFile, shadowFile: settings.decisionPolicyShadowFile) } catch {
            problems.append("\(error)")
        }
        return problems
    }
}
