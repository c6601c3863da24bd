/// SQL shared by the queries that read evaluations caller by caller.
enum EvaluationQueries {
    /// `every_caller(id)`: each distinct caller_id of `evaluations`, found by one seek of
    /// evaluations_by_caller_created per caller (a loose index scan) rather than by reading the
    /// index through. Evaluations, not the callers table, say who has evaluations: one whose
    /// caller row were missing must still be found (retention must delete it).
    static let everyCaller = """
        WITH RECURSIVE every_caller(id) AS (
            SELECT (SELECT min(caller_id) FROM evaluations)
            UNION ALL
            SELECT (SELECT min(caller_id) FROM evaluations WHERE caller_id > every_caller.id)
            FROM every_caller WHERE every_caller.id IS NOT NULL)
        """
}
