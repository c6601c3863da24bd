/// Where an evaluation's insights are kept: the `insights` table's integer key (`slot`) is the
/// evaluation's rowid times `perEvaluation` plus the insight's position (migration 0007). An
/// evaluation's insights are thus found, and deleted, by a range of the table's own key, with no
/// index on `event_id` to write on every commit. Evaluations and their insights are inserted in
/// one transaction and deleted together (retention only), so a slot never outlives its
/// evaluation, even if SQLite reuses a rowid.
enum InsightSlots {
    /// Slots per evaluation; the API accepts at most 4 insights per evaluation.
    static let perEvaluation = 8

    static func first(ofEvaluation rowid: Int64) -> Int64 { rowid * Int64(perEvaluation) }

    /// The first and last slot of the evaluation with `rowid`.
    static func range(ofEvaluation rowid: Int64) -> (first: Int64, last: Int64) {
        (first(ofEvaluation: rowid), first(ofEvaluation: rowid) + Int64(perEvaluation) - 1)
    }
}
