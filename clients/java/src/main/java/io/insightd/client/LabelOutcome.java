package io.insightd.client;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** What an investigation found. {@code UNRECOGNIZED} stands for a value a later service version added. */
public enum LabelOutcome {
    CONFIRMED_FRAUD("confirmedFraud"),
    CONFIRMED_LEGITIMATE("confirmedLegitimate"),
    /** A value this client version does not know. */
    UNRECOGNIZED(null);

    private final String wire;

    LabelOutcome(String wire) {
        this.wire = wire;
    }

    /** The value as the API spells it; null for {@code UNRECOGNIZED}. */
    @JsonValue
    public String wire() {
        return wire;
    }

    /** The constant the API's spelling names, or {@code UNRECOGNIZED}. */
    @JsonCreator
    public static LabelOutcome of(String wire) {
        for (LabelOutcome value : values()) {
            if (value.wire != null && value.wire.equals(wire)) {
                return value;
            }
        }
        return UNRECOGNIZED;
    }
}
