package io.insightd.client;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** A person's choice about insights: {@code DENIAL_PENDING} while a denial waits for its cooldown. {@code UNRECOGNIZED} stands for a value a later service version added. */
public enum AuthorizationStatus {
    AUTHORIZED("authorized"),
    DENIAL_PENDING("denialPending"),
    DENIED("denied"),
    /** A value this client version does not know. */
    UNRECOGNIZED(null);

    private final String wire;

    AuthorizationStatus(String wire) {
        this.wire = wire;
    }

    /** The value as the API spells it; null for {@code UNRECOGNIZED}. */
    @JsonValue
    public String wire() {
        return wire;
    }

    /** The constant the API's spelling names, or {@code UNRECOGNIZED}. */
    @JsonCreator
    public static AuthorizationStatus of(String wire) {
        for (AuthorizationStatus value : values()) {
            if (value.wire != null && value.wire.equals(wire)) {
                return value;
            }
        }
        return UNRECOGNIZED;
    }
}
