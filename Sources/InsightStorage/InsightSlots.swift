import InsightDomain

/// Where an evaluation's insights are kept: the `insights` table's integer key (`slot`) is the
/// evaluation's rowid times `perEvaluation` plus the insight's position (migration 0007). An
/// evaluation's insights are thus found, and deleted, by a range of the table's own key, with no
/// index on `event_id` to write on every commit. Evaluations and their insights are inserted in
/// one transaction and deleted together (retention only), so a slot never outlives its
/// evaluation, even if SQLite reuses a rowid.
///
/// Positions 0 to 3 hold the insights the caller asked for (the API accepts at most 4);
/// positions 4 to 7 hold the shadow versions' answers (migration 0015): position >= 4 means
/// shadow, stored for the model-performance report and never answered, shown or labelled.
enum InsightSlots {
    /// Slots per evaluation.
    static let perEvaluation = 8
    /// The first shadow position; the served insights are at the positions before it.
    static let firstShadow = EvaluationRecord.maxServedInsights

    static func first(ofEvaluation rowid: Int64) -> Int64 { rowid * Int64(perEvaluation) }

    /// The first and last slot of the served insights of the evaluation with `rowid`.
    static func servedRange(ofEvaluation rowid: Int64) -> (first: Int64, last: Int64) {
        (first(ofEvaluation: rowid), first(ofEvaluation: rowid) + Int64(firstShadow) - 1)
    }

    /// The first and last slot of the evaluation with `rowid`, shadows included.
    static func range(ofEvaluation rowid: Int64) -> (first: Int64, last: Int64) {
        (first(ofEvaluation: rowid), first(ofEvaluation: rowid) + Int64(perEvaluation) - 1)
    }
}
