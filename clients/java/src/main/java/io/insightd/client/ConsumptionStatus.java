package io.insightd.client;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** What the caller did with an evaluation. {@code UNRECOGNIZED} stands for a value a later service version added. */
public enum ConsumptionStatus {
    USED_REDUCED_FRICTION("usedReducedFriction"),
    USED_UNCHANGED_FRICTION("usedUnchangedFriction"),
    USED_INCREASED_FRICTION("usedIncreasedFriction"),
    NOT_USED_NOT_NEEDED("notUsedNotNeeded"),
    NOT_USED_ERROR("notUsedError"),
    USED_EVALUATION_ONLY("usedEvaluationOnly"),
    /** A value this client version does not know. */
    UNRECOGNIZED(null);

    private final String wire;

    ConsumptionStatus(String wire) {
        this.wire = wire;
    }

    /** The value as the API spells it; null for {@code UNRECOGNIZED}. */
    @JsonValue
    public String wire() {
        return wire;
    }

    /** The constant the API's spelling names, or {@code UNRECOGNIZED}. */
    @JsonCreator
    public static ConsumptionStatus of(String wire) {
        for (ConsumptionStatus value : values()) {
            if (value.wire != null && value.wire.equals(wire)) {
                return value;
            }
        }
        return UNRECOGNIZED;
    }
}
