package io.insightd.client;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** The insight types insightd serves. {@code UNRECOGNIZED} stands for a value a later service version added. */
public enum InsightType {
    IS_LIKELY_BEING_COACHED("isLikelyBeingCoached"),
    /** A value this client version does not know. */
    UNRECOGNIZED(null);

    private final String wire;

    InsightType(String wire) {
        this.wire = wire;
    }

    /** The value as the API spells it; null for {@code UNRECOGNIZED}. */
    @JsonValue
    public String wire() {
        return wire;
    }

    /** The constant the API's spelling names, or {@code UNRECOGNIZED}. */
    @JsonCreator
    public static InsightType of(String wire) {
        for (InsightType value : values()) {
            if (value.wire != null && value.wire.equals(wire)) {
                return value;
            }
        }
        return UNRECOGNIZED;
    }
}
