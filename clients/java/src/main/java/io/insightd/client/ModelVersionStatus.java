package io.insightd.client;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** Whether a model version may still be asked for. {@code UNRECOGNIZED} stands for a value a later service version added. */
public enum ModelVersionStatus {
    ACTIVE("active"),
    WITHDRAWN("withdrawn"),
    /** A value this client version does not know. */
    UNRECOGNIZED(null);

    private final String wire;

    ModelVersionStatus(String wire) {
        this.wire = wire;
    }

    /** The value as the API spells it; null for {@code UNRECOGNIZED}. */
    @JsonValue
    public String wire() {
        return wire;
    }

    /** The constant the API's spelling names, or {@code UNRECOGNIZED}. */
    @JsonCreator
    public static ModelVersionStatus of(String wire) {
        for (ModelVersionStatus value : values()) {
            if (value.wire != null && value.wire.equals(wire)) {
                return value;
            }
        }
        return UNRECOGNIZED;
    }
}
