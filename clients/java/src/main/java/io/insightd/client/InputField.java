package io.insightd.client;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** The input field an interaction event happened in. {@code UNRECOGNIZED} stands for a value a later service version added. */
public enum InputField {
    PAYEE("payee"),
    AMOUNT("amount"),
    REFERENCE("reference"),
    OTP("otp"),
    PASSWORD("password"),
    OTHER("other"),
    /** A value this client version does not know. */
    UNRECOGNIZED(null);

    private final String wire;

    InputField(String wire) {
        this.wire = wire;
    }

    /** The value as the API spells it; null for {@code UNRECOGNIZED}. */
    @JsonValue
    public String wire() {
        return wire;
    }

    /** The constant the API's spelling names, or {@code UNRECOGNIZED}. */
    @JsonCreator
    public static InputField of(String wire) {
        for (InputField value : values()) {
            if (value.wire != null && value.wire.equals(wire)) {
                return value;
            }
        }
        return UNRECOGNIZED;
    }
}
