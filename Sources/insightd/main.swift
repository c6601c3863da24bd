import Foundation
import InsightApp

// Before anything else runs: may replace this process image with one under a tuned allocator.
AllocatorTuning.reexecuteIfUntuned(environment: ProcessInfo.processInfo.environment)
exit(Daemon.main(arguments: CommandLine.arguments, environment: ProcessInfo.processInfo.environment))
