import InsightDomain

/// How an insight's id is kept (migration 0008): not at all when it was made from its
/// evaluation's id and position (`EvaluationIdentifiers`), since the slot gives it back;
/// explicitly, under the index of stored ids, when it was not (insights from before 0008).
enum StoredInsightId {
    /// The `insight_id` column for `insightId` at `position` of evaluation `eventId`.
    static func stored(_ insightId: String, eventId: String, position: Int) -> String? {
        EvaluationIdentifiers.isMade(insightId, eventId: eventId, position: position) ? nil : insightId
    }

    /// Whether the row with `stored` at `position` of evaluation `eventId` is insight `insightId`.
    static func row(stored: String?, at position: Int, of eventId: String, is insightId: String) -> Bool {
        guard let stored else { return EvaluationIdentifiers.isMade(insightId, eventId: eventId, position: position) }
        return stored == insightId
    }
}
