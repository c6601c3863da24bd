import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import JSON

/// insightctl's way to the running daemon's admin API, for state that lives in the daemon's
/// memory (rate-limit buckets and throttling counts) rather than in the store.
struct AdminClient {
    let baseURL: URL
    let key: String

    /// The daemon's answer: status and parsed JSON body (nil when empty or not JSON).
    struct Answer {
        let status: Int
        let json: JSONValue?
    }

    func send(_ method: String, _ path: String, body: String? = nil) throws -> Answer {
        var request = URLRequest(url: baseURL.appendingPathComponent(path), timeoutInterval: 10)
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
                box.result = .success(Answer(status: status, json: data.flatMap { try? JSONParser.parse(Array($0)) }))
            }
            done.signal()
        }.resume()
        done.wait()
        let answer = try box.result!.get()
        guard (200..<300).contains(answer.status) else {
            let detail = answer.json?["detail"]?.stringValue ?? "HTTP \(answer.status)"
            throw AppError("insightd answered \(answer.status) \(answer.json?["code"]?.stringValue ?? ""): \(detail)")
        }
        return answer
    }
}

private final class AnswerBox: @unchecked Sendable {
    // @unchecked: written once by URLSession's callback before the semaphore is signalled,
    // read only after waiting on it.
    var result: Result<AdminClient.Answer, Error>?
}
