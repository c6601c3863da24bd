package io.insightd.client;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** What a key may do. {@code UNRECOGNIZED} stands for a value a later service version added. */
public enum Role {
    EVALUATE("evaluate"),
    LABELS("labels"),
    ADMIN("admin"),
    /** A value this client version does not know. */
    UNRECOGNIZED(null);

    private final String wire;

    Role(String wire) {
        this.wire = wire;
    }

    /** The value as the API spells it; null for {@code UNRECOGNIZED}. */
    @JsonValue
    public String wire() {
        return wire;
    }

    /** The constant the API's spelling names, or {@code UNRECOGNIZED}. */
    @JsonCreator
    public static Role of(String wire) {
        for (Role value : values()) {
            if (value.wire != null && value.wire.equals(wire)) {
                return value;
            }
        }
        return UNRECOGNIZED;
    }
}
