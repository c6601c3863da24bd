import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import InsightApp
import InsightControl
import JSON

/// insightctl's way to the running daemon's admin API over URLSession. It lives in the
/// executable, not in InsightApp, so that the daemon does not link FoundationNetworking (and
/// through it libcurl).
struct URLSessionAdminTransport: AdminTransport {
    func send(_ method: String, _ path: String, baseURL: URL, key: String, body: String?) throws -> AdminAnswer {
        // A query (`path?a=b`) is kept as one: appendingPathComponent would escape its `?`.
        let parts = path.split(separator: "?", maxSplits: 1).map(String.init)
        var url = baseURL.appendingPathComponent(parts[0])
        if parts.count == 2, var components = URLComponents(url: url, resolvingAgainstBaseURL: false) {
            components.percentEncodedQuery = parts[1]
            url = components.url ?? url
        }
        var request = URLRequest(url: url, timeoutInterval: 10)
        request.httpMethod = method
        request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization")
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(body.utf8)
        }
        let box = AnswerBox()
        let done = DispatchSemaphore(value: 0)
        URLSession.shared.dataTask(with: request) { data, response, error in
            if let error {
                box.result = .failure(AppError("cannot reach insightd at \(baseURL.absoluteString): \(error.localizedDescription)"))
            } else {
                let status = (response as? HTTPURLResponse)?.statusCode ?? 0
                box.result = .success(
                    AdminAnswer(status: status, json: data.flatMap { try? JSONParser.parse(Array($0), limits: .trusted) }))
            }
            done.signal()
        }.resume()
        done.wait()
        return try box.result!.get()
    }
}

private final class AnswerBox: @unchecked Sendable {
    // @unchecked: written once by URLSession's callback before the semaphore is signalled,
    // read only after waiting on it.
    var result: Result<AdminAnswer, Error>?
}
