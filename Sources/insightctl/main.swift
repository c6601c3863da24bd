import Foundation
import InsightApp

exit(AdminCommand.main(arguments: CommandLine.arguments, environment: ProcessInfo.processInfo.environment,
                       transport: URLSessionAdminTransport()))
