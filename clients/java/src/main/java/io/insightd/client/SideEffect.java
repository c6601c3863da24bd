package io.insightd.client;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** What an agent's operation would do. {@code UNRECOGNIZED} stands for a value a later service version added. */
public enum SideEffect {
    FINANCIAL("financial"),
    EXTERNAL_COMMUNICATION("externalCommunication"),
    DESTRUCTIVE("destructive"),
    PERSISTENT_STORAGE("persistentStorage"),
    SENSITIVE_DATA_ACCESS("sensitiveDataAccess"),
    DEVICE_CONTROL("deviceControl"),
    /** A value this client version does not know. */
    UNRECOGNIZED(null);

    private final String wire;

    SideEffect(String wire) {
        this.wire = wire;
    }

    /** The value as the API spells it; null for {@code UNRECOGNIZED}. */
    @JsonValue
    public String wire() {
        return wire;
    }

    /** The constant the API's spelling names, or {@code UNRECOGNIZED}. */
    @JsonCreator
    public static SideEffect of(String wire) {
        for (SideEffect value : values()) {
            if (value.wire != null && value.wire.equals(wire)) {
                return value;
            }
        }
        return UNRECOGNIZED;
    }
}
