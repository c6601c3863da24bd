package io.insightd.client;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** An insight's answer. {@code UNKNOWN} means no evidence, never "low risk". {@code UNRECOGNIZED} stands for a value a later service version added. */
public enum InsightValue {
    UNKNOWN("unknown"),
    MEDIUM("medium"),
    HIGH("high"),
    /** A value this client version does not know. */
    UNRECOGNIZED(null);

    private final String wire;

    InsightValue(String wire) {
        this.wire = wire;
    }

    /** The value as the API spells it; null for {@code UNRECOGNIZED}. */
    @JsonValue
    public String wire() {
        return wire;
    }

    /** The constant the API's spelling names, or {@code UNRECOGNIZED}. */
    @JsonCreator
    public static InsightValue of(String wire) {
        for (InsightValue value : values()) {
            if (value.wire != null && value.wire.equals(wire)) {
                return value;
            }
        }
        return UNRECOGNIZED;
    }
}
