import HTTPServer
import Telemetry

/// The metrics listener (`INSIGHTD_METRICS_LISTEN`): `GET /metrics` and nothing else.
///
/// Apart from the API's port because its series name tenants and count what each does
/// (evaluations, labels, denials, erasures): a caller of the API must not read another
/// tenant's activity, and a scraper holds no key. So the series are served only where the
/// operator lets the scraper in (loopback by default); the API's port answers `/metrics` 404.
public final class MetricsHandler: HTTPHandler {
    private let registry: MetricsRegistry

    public init(registry: MetricsRegistry) {
        self.registry = registry
    }

    /// The one path served.
    public static let path = "/metrics"

    public func handle(_ request: HTTPRequest, responder: HTTPResponder) {
        guard request.path == Self.path else {
            return responder.send(Problem(404, .notFound, "There is no resource at this path; this port serves /metrics only.").response)
        }
        guard request.method == "GET" || request.method == "HEAD" else {
            var problem = Problem(405, .methodNotAllowed, "This resource answers GET, HEAD.")
            problem.headers = [("Allow", "GET, HEAD")]
            return responder.send(problem.response)
        }
        responder.send(
            HTTPResponse(
                status: 200,
                headers: HTTPHeaders([
                    ("Content-Type", "text/plain; version=0.0.4; charset=utf-8"),
                    ("Cache-Control", "no-store")
                ]),
                body: Array(registry.render().utf8)))
    }

    public func response(for error: HTTPProtocolError) -> HTTPResponse {
        Problem.from(error).response
    }
}
