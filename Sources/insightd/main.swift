import Foundation
import InsightApp

exit(Daemon.main(arguments: CommandLine.arguments, environment: ProcessInfo.processInfo.environment))
