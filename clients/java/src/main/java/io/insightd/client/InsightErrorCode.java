package io.insightd.client;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** An insight-level error: one insight failed, the evaluation did not. {@code UNRECOGNIZED} stands for a value a later service version added. */
public enum InsightErrorCode {
    INSIGHT_EVALUATION_FAILED("insightEvaluationFailed"),
    INSIGHT_UNAVAILABLE("insightUnavailable"),
    INSIGHT_VERSION_INCOMPATIBLE("insightVersionIncompatible"),
    INSIGHT_VERSION_UNAVAILABLE("insightVersionUnavailable"),
    RATE_LIMIT_ERROR("rateLimitError"),
    /** A value this client version does not know. */
    UNRECOGNIZED(null);

    private final String wire;

    InsightErrorCode(String wire) {
        this.wire = wire;
    }

    /** The value as the API spells it; null for {@code UNRECOGNIZED}. */
    @JsonValue
    public String wire() {
        return wire;
    }

    /** The constant the API's spelling names, or {@code UNRECOGNIZED}. */
    @JsonCreator
    public static InsightErrorCode of(String wire) {
        for (InsightErrorCode value : values()) {
            if (value.wire != null && value.wire.equals(wire)) {
                return value;
            }
        }
        return UNRECOGNIZED;
    }
}
