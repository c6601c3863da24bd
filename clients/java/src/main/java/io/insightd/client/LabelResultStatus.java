package io.insightd.client;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** The fate of one label. {@code UNRECOGNIZED} stands for a value a later service version added. */
public enum LabelResultStatus {
    ACCEPTED("accepted"),
    DUPLICATE("duplicate"),
    CONFLICT("conflict"),
    UNKNOWN_INSIGHT("unknownInsight"),
    INVALID("invalid"),
    /** A value this client version does not know. */
    UNRECOGNIZED(null);

    private final String wire;

    LabelResultStatus(String wire) {
        this.wire = wire;
    }

    /** The value as the API spells it; null for {@code UNRECOGNIZED}. */
    @JsonValue
    public String wire() {
        return wire;
    }

    /** The constant the API's spelling names, or {@code UNRECOGNIZED}. */
    @JsonCreator
    public static LabelResultStatus of(String wire) {
        for (LabelResultStatus value : values()) {
            if (value.wire != null && value.wire.equals(wire)) {
                return value;
            }
        }
        return UNRECOGNIZED;
    }
}
