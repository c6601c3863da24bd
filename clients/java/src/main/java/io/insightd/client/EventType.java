package io.insightd.client;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** An interaction event's type: timing only, never what was typed. {@code UNRECOGNIZED} stands for a value a later service version added. */
public enum EventType {
    SESSION_START("sessionStart"),
    FIELD_FOCUS("fieldFocus"),
    FIELD_BLUR("fieldBlur"),
    KEY_DOWN("keyDown"),
    DELETE("delete"),
    PASTE("paste"),
    TAP("tap"),
    SCROLL("scroll"),
    APP_BACKGROUND("appBackground"),
    APP_FOREGROUND("appForeground"),
    CALL_START("callStart"),
    CALL_END("callEnd"),
    SCREEN_SHARE_START("screenShareStart"),
    SCREEN_SHARE_END("screenShareEnd"),
    ORIENTATION_CHANGE("orientationChange"),
    PROXIMITY_NEAR("proximityNear"),
    PROXIMITY_FAR("proximityFar"),
    SUBMIT("submit"),
    /** A value this client version does not know. */
    UNRECOGNIZED(null);

    private final String wire;

    EventType(String wire) {
        this.wire = wire;
    }

    /** The value as the API spells it; null for {@code UNRECOGNIZED}. */
    @JsonValue
    public String wire() {
        return wire;
    }

    /** The constant the API's spelling names, or {@code UNRECOGNIZED}. */
    @JsonCreator
    public static EventType of(String wire) {
        for (EventType value : values()) {
            if (value.wire != null && value.wire.equals(wire)) {
                return value;
            }
        }
        return UNRECOGNIZED;
    }
}
