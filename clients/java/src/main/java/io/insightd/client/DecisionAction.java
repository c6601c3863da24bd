package io.insightd.client;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** What the service's decision policy advises, weakest first. Treat {@code UNRECOGNIZED} as {@code BLOCK}. {@code UNRECOGNIZED} stands for a value a later service version added. */
public enum DecisionAction {
    PROCEED("proceed"),
    CONFIRM("confirm"),
    CONFIRM_OUT_OF_BAND("confirmOutOfBand"),
    BLOCK("block"),
    /** A value this client version does not know. */
    UNRECOGNIZED(null);

    private final String wire;

    DecisionAction(String wire) {
        this.wire = wire;
    }

    /** The value as the API spells it; null for {@code UNRECOGNIZED}. */
    @JsonValue
    public String wire() {
        return wire;
    }

    /** The constant the API's spelling names, or {@code UNRECOGNIZED}. */
    @JsonCreator
    public static DecisionAction of(String wire) {
        for (DecisionAction value : values()) {
            if (value.wire != null && value.wire.equals(wire)) {
                return value;
            }
        }
        return UNRECOGNIZED;
    }
}
