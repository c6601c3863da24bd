package io.insightd.client;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/**
 * Where a capture kit runs ({@code InteractionSource.platform}): {@code WEB} for web pages and web
 * views. The model's thresholds are chosen by it. {@code UNRECOGNIZED} stands for a value a later
 * service version added.
 */
public enum Platform {
    WEB("web"),
    IOS("ios"),
    ANDROID("android"),
    OTHER("other"),
    /** A value this client version does not know. */
    UNRECOGNIZED(null);

    private final String wire;

    Platform(String wire) {
        this.wire = wire;
    }

    /** The value as the API spells it; null for {@code UNRECOGNIZED}. */
    @JsonValue
    public String wire() {
        return wire;
    }

    /** The constant the API's spelling names, or {@code UNRECOGNIZED}. */
    @JsonCreator
    public static Platform of(String wire) {
        for (Platform value : values()) {
            if (value.wire != null && value.wire.equals(wire)) {
                return value;
            }
        }
        return UNRECOGNIZED;
    }
}
