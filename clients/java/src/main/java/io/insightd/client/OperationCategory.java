package io.insightd.client;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** What the person is about to do. {@code UNRECOGNIZED} stands for a value a later service version added. */
public enum OperationCategory {
    PAYMENT("payment"),
    ACCOUNT("account"),
    RESOURCE_USE("resourceUse"),
    COMMUNICATION("communication"),
    OTHER("other"),
    /** A value this client version does not know. */
    UNRECOGNIZED(null);

    private final String wire;

    OperationCategory(String wire) {
        this.wire = wire;
    }

    /** The value as the API spells it; null for {@code UNRECOGNIZED}. */
    @JsonValue
    public String wire() {
        return wire;
    }

    /** The constant the API's spelling names, or {@code UNRECOGNIZED}. */
    @JsonCreator
    public static OperationCategory of(String wire) {
        for (OperationCategory value : values()) {
            if (value.wire != null && value.wire.equals(wire)) {
                return value;
            }
        }
        return UNRECOGNIZED;
    }
}
