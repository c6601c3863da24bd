package io.insightd.client;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** Which limit a 429 hit (docs/rate-limits.md). A caller's rate-limit state records only the first three: {@code DENIAL_CAPACITY} is the tenant's. {@code UNRECOGNIZED} stands for a value a later service version added. */
public enum RateLimitReason {
    CALLER_RATE("callerRate"),
    REPORTING_PENALTY("reportingPenalty"),
    DEVICE_RATE("deviceRate"),
    DENIAL_CAPACITY("denialCapacity"),
    /** A value this client version does not know. */
    UNRECOGNIZED(null);

    private final String wire;

    RateLimitReason(String wire) {
        this.wire = wire;
    }

    /** The value as the API spells it; null for {@code UNRECOGNIZED}. */
    @JsonValue
    public String wire() {
        return wire;
    }

    /** The constant the API's spelling names, or {@code UNRECOGNIZED}. */
    @JsonCreator
    public static RateLimitReason of(String wire) {
        for (RateLimitReason value : values()) {
            if (value.wire != null && value.wire.equals(wire)) {
                return value;
            }
        }
        return UNRECOGNIZED;
    }
}
