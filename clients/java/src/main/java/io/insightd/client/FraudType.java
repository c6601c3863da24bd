package io.insightd.client;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/** The kind of a confirmed fraud. {@code UNRECOGNIZED} stands for a value a later service version added. */
public enum FraudType {
    TECH_SUPPORT_SCAM("techSupportScam"),
    AUTHORITY_IMPERSONATION("authorityImpersonation"),
    FAMILY_EMERGENCY("familyEmergency"),
    ROMANCE_SCAM("romanceScam"),
    INVESTMENT_SCAM("investmentScam"),
    PURCHASE_SCAM("purchaseScam"),
    ACCOUNT_TAKEOVER("accountTakeover"),
    OTHER("other"),
    /** A value this client version does not know. */
    UNRECOGNIZED(null);

    private final String wire;

    FraudType(String wire) {
        this.wire = wire;
    }

    /** The value as the API spells it; null for {@code UNRECOGNIZED}. */
    @JsonValue
    public String wire() {
        return wire;
    }

    /** The constant the API's spelling names, or {@code UNRECOGNIZED}. */
    @JsonCreator
    public static FraudType of(String wire) {
        for (FraudType value : values()) {
            if (value.wire != null && value.wire.equals(wire)) {
                return value;
            }
        }
        return UNRECOGNIZED;
    }
}
