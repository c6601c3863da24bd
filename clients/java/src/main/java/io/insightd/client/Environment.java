package io.insightd.client;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** A key's environment. {@code UNRECOGNIZED} stands for a value a later service version added. */
public enum Environment {
    PRODUCTION("production"),
    SANDBOX("sandbox"),
    /** A value this client version does not know. */
    UNRECOGNIZED(null);

    private final String wire;

    Environment(String wire) {
        this.wire = wire;
    }

    /** The value as the API spells it; null for {@code UNRECOGNIZED}. */
    @JsonValue
    public String wire() {
        return wire;
    }

    /** The constant the API's spelling names, or {@code UNRECOGNIZED}. */
    @JsonCreator
    public static Environment of(String wire) {
        for (Environment value : values()) {
            if (value.wire != null && value.wire.equals(wire)) {
                return value;
            }
        }
        return UNRECOGNIZED;
    }
}
