import HTTPServer
import InsightConsole

/// `GET /console/…`: the admin console's files, compiled into the binary (`InsightConsole`).
/// Open: the files hold no data; the page calls the admin API with the key a person signs in with.
extension InsightAPIHandler {
    /// Nothing but the daemon's own files and API, no inline script or style, never framed.
    static let consoleSecurityPolicy =
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        + "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    func console(_ exchange: Exchange, file: String?) {
        guard let file else {
            return exchange.send(HTTPResponse(status: 301, headers: HTTPHeaders([("Location", "/console/")])))
        }
        guard let found = ConsoleFiles.file(file) else {
            return exchange.fail(Problem(404, .notFound, "The console has no such file; open /console/."))
        }
        let headers = HTTPHeaders([
            ("Content-Type", found.contentType),
            ("Content-Security-Policy", Self.consoleSecurityPolicy),
            ("X-Content-Type-Options", "nosniff"),
            ("X-Frame-Options", "DENY"),
            ("Referrer-Policy", "no-referrer"),
            // Kept, but asked again each time: an upgraded daemon serves new files at once.
            ("Cache-Control", "no-cache")
        ])
        exchange.send(
            Self.conditional(
                HTTPResponse(status: 200, headers: headers, body: found.bytes),
                etag: found.etag, request: exchange.request))
    }
}
