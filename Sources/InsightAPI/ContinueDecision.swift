import Dispatch
import HTTPServer
import InsightDomain
import InsightServices
import Synchronization

extension InsightAPIHandler {
    /// `Expect: 100-continue` (RFC 9110 §10.1.1): the body is wanted only from a request that
    /// gets past its route, its method and its key (`Route.access`). Anything else is answered
    /// at once, exactly as `handle` answers it (the same problem, metrics and log line), without
    /// `100 Continue`: a request that will be refused is not invited to send its body, and the
    /// daemon does not read it. Checks after authentication (quotas, the body itself) are made
    /// once the body has come, as without the expectation.
    public func continueDecision(for head: HTTPRequest, declaredBodyLength: Int?) -> ContinueDecision {
        guard let route = Route.match(head.path), route.allowedMethods.contains(head.method) else {
            // 404 and 405: `handle` gives them from the head alone, before anything else.
            return .answer(Self.answerSentAtOnce { handle(head, responder: $0) })
        }
        let started = DispatchTime.now().uptimeNanoseconds
        do {
            _ = try authenticate(head, route: route)
            return .proceed
        } catch {
            return .answer(
                Self.answerSentAtOnce { responder in
                    finish(
                        error.response, request: head, route: route.name, caller: nil, code: error.code,
                        started: started, responder: responder)
                })
        }
    }

    /// The response `send` gives the responder it is handed, which it does before it returns.
    private static func answerSentAtOnce(_ send: (HTTPResponder) -> Void) -> HTTPResponse {
        let slot = ResponseSlot()
        send(HTTPResponder { response in slot.value.withLock { $0 = response } })
        return slot.value.withLock { $0 } ?? Problem(500, .serverError, "An unexpected error occurred; it was logged.").response
    }
}

/// Where `answerSentAtOnce` receives the response.
private final class ResponseSlot: Sendable {
    let value = Mutex<HTTPResponse?>(nil)
}
