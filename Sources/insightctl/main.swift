import Foundation
import InsightControl

exit(
    AdminCommand.main(
        arguments: CommandLine.arguments, environment: ProcessInfo.processInfo.environment,
        transport: URLSessionAdminTransport()))
