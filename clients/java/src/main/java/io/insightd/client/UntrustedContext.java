package io.insightd.client;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** A source of untrusted text an AI agent read. {@code UNRECOGNIZED} stands for a value a later service version added. */
public enum UntrustedContext {
    EMAIL("email"),
    MESSAGE("message"),
    WEB("web"),
    CALENDAR("calendar"),
    DOCUMENT("document"),
    PUBLIC_FEED("publicFeed"),
    TOOL_OUTPUT("toolOutput"),
    /** A value this client version does not know. */
    UNRECOGNIZED(null);

    private final String wire;

    UntrustedContext(String wire) {
        this.wire = wire;
    }

    /** The value as the API spells it; null for {@code UNRECOGNIZED}. */
    @JsonValue
    public String wire() {
        return wire;
    }

    /** The constant the API's spelling names, or {@code UNRECOGNIZED}. */
    @JsonCreator
    public static UntrustedContext of(String wire) {
        for (UntrustedContext value : values()) {
            if (value.wire != null && value.wire.equals(wire)) {
                return value;
            }
        }
        return UNRECOGNIZED;
    }
}
