package io.insightd.client;

import java.time.Instant;
import java.util.List;

/** The types of the person's view: transparency and erasure ({@code /v1/subjects/…}). */
public final class Subjects {
    private Subjects() {}

    /** The identifiers of a subject: one kind for transparency, one or more for erasure. */
    public record Identifiers(String account, String device, String counterparty) {}

    /** The body of {@code POST /v1/subjects/transparency}: limit 1–500 (null: 50), cursor of the previous page. */
    public record TransparencyQuery(Identifiers subject, Integer limit, String cursor, String tenant) {}

    /** A page of the evaluations that carried a subject, newest first, and the subject's choice. */
    public record Transparency(List<Entry> evaluations, String cursor, Authorization.State authorization) {}

    /** One evaluation of a transparency answer. */
    public record Entry(String eventId, Instant createdAt, OperationCategory category, String callerName, List<Insight> insights,
                        DecisionAction decision) {}

    /** An insight of an entry: a value or an error code. */
    public record Insight(String type, String modelVersion, InsightValue value, InsightErrorCode error) {}

    /** The body of {@code POST /v1/subjects/erasure}. */
    public record ErasureRequest(Identifiers subject, String tenant) {}

    /** What an erasure unlinked and deleted. */
    public record ErasureResult(String tenant, long evaluations, long authorizations, long trainingVectors, long hashKeys) {}
}
