import DaemonTesting
import Foundation
import InsightClient
import XCTest

/// The client sends `initiator` and exposes the service's `decision`.
final class DecisionTests: XCTestCase {
    func testAnAgentsOperationIsSentAndItsDecisionExposed() async throws {
        let daemon = try TestDaemon(.live, models: true)
        let evaluator = InsightEvaluator(
            baseURL: daemon.baseURL, apiKey: try daemon.createKey(roles: ["evaluate"]),
            retryPolicy: .never)
        let person = try await evaluator.requestEvaluation(context: InsightContext(operationCategory: .payment))
        XCTAssertEqual(person.decision, Decision(action: .proceed, reasons: [], policyVersion: "default-1"))
        let agent = try await evaluator.requestEvaluation(
            context: InsightContext(
                operationCategory: .payment, transaction: TransactionContext(newCounterparty: true, amountBand: .high),
                initiator: .agent(
                    AgentContext(
                        userRequested: false, untrustedContext: [.email, .web],
                        argumentsFromUntrustedContext: true, sideEffects: [.financial]))))
        XCTAssertEqual(agent.decision, Decision(action: .block, reasons: ["agentNotRequestedByPerson"], policyVersion: "default-1"))
        let requested = try await evaluator.requestEvaluation(
            context: InsightContext(
                operationCategory: .communication,
                initiator: .agent(AgentContext(userRequested: true, untrustedContext: [.calendar], sideEffects: [.externalCommunication]))))
        XCTAssertEqual(requested.decision?.action, .confirm)
        XCTAssertEqual(requested.decision?.reasons, ["agentUntrustedContext"])
        // An unknown value travels and is refused by the service, naming the field.
        do {
            _ = try await evaluator.requestEvaluation(
                context: InsightContext(
                    operationCategory: .payment,
                    initiator: .agent(AgentContext(userRequested: true, sideEffects: [SideEffect(rawValue: "teleport")]))))
            XCTFail("an unknown side effect was accepted")
        } catch {
            XCTAssertEqual(
                error,
                .contextInvalid(
                    field: "initiator.agent.sideEffects[0]",
                    detail:
                        "must be one of financial, externalCommunication, destructive, persistentStorage, sensitiveDataAccess, deviceControl"
                ))
        }
    }
}
