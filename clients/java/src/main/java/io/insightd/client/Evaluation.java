package io.insightd.client;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * A verified answer of {@code POST /v1/evaluations}: every member of the document's
 * {@code EvaluationResponse}, the exact {@link #body()} bytes and the {@link #receipt()} that
 * proves them (empty when verification is disabled). Store the body and
 * {@code receipt().header()} with the transaction.
 */
public final class Evaluation {
    /** One requested insight's answer, in request order. */
    @JsonIgnoreProperties(ignoreUnknown = true)
    public record InsightResult(String insightId, String type, int schemaVersion, String modelVersion, String newestModelVersion,
                                Boolean isUsingCurrentModel, Outcome outcome, List<String> reasons) {
        /** The value, when the insight answered one. */
        public Optional<InsightValue> value() { return Optional.ofNullable(outcome.value()); }

        /** The insight-level error, when it failed (the other insights stand). */
        public Optional<InsightError> error() { return Optional.ofNullable(outcome.error()); }
    }

    /** A value or an insight-level error. */
    public record Outcome(InsightValue value, InsightError error) {}

    /** An insight that failed. */
    public record InsightError(InsightErrorCode code, String detail) {}

    /** The service's decision policy's advice (docs/decisions.md). */
    public record Decision(DecisionAction action, List<String> reasons, String policyVersion) {}

    /** The members of the answer, as the API names them. */
    record Wire(String eventId, String requestId, String tenant, Environment environment, Instant serverTimestamp,
                Instant reportConsumptionBy, List<InsightResult> insights, Decision decision) {}

    private final Wire wire;
    private final byte[] body;
    private final Receipt receipt;
    private final int attempts;
    private final boolean replayed;

    Evaluation(Wire wire, byte[] body, Receipt receipt, int attempts, boolean replayed) {
        this.wire = wire;
        this.body = body.clone();
        this.receipt = receipt;
        this.attempts = attempts;
        this.replayed = replayed;
    }

    /** The evaluation's id: store it with the transaction (consumption reports name it). */
    public String eventId() { return wire.eventId(); }

    public String requestId() { return wire.requestId(); }

    /** The tenant that answered (bound by the receipt). */
    public String tenant() { return wire.tenant(); }

    public Environment environment() { return wire.environment(); }

    public Instant serverTimestamp() { return wire.serverTimestamp(); }

    /** When the consumption report is due. */
    public Instant reportConsumptionBy() { return wire.reportConsumptionBy(); }

    /** One result per requested insight, in request order. */
    public List<InsightResult> insights() { return wire.insights(); }

    public Decision decision() { return wire.decision(); }

    /** The first result of that type. */
    public Optional<InsightResult> insight(InsightType type) {
        return wire.insights().stream().filter(r -> type.wire().equals(r.type())).findFirst();
    }

    /** The ids of the evaluation's insights, for a consumption report. */
    public List<String> insightIds() {
        return wire.insights().stream().map(InsightResult::insightId).toList();
    }

    /** The response body, byte for byte: what the receipt proves. */
    public byte[] body() { return body.clone(); }

    /** The verified proof; empty when verification is disabled. */
    public Optional<Receipt> receipt() { return Optional.ofNullable(receipt); }

    /** How many times the client sent the request (more than one only when the earlier could not reach the service). */
    public int attempts() { return attempts; }

    /** Whether the service answered a retry with the evaluation it had recorded for this {@code requestId} ({@code Idempotent-Replayed}). */
    public boolean replayed() { return replayed; }
}
