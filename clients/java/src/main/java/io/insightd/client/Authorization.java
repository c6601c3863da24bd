package io.insightd.client;

import java.time.Instant;

/** The types of the subject authorization switch ({@code /v1/authorization}). */
public final class Authorization {
    private Authorization() {}

    /** One account or one device (exactly one). */
    public record Subject(String account, String device) {
        public static Subject account(String id) { return new Subject(id, null); }

        public static Subject device(String id) { return new Subject(null, id); }
    }

    /** The choices a person makes; {@code DENIAL_PENDING} is the service's while a denial waits. */
    public enum Choice {
        DENIED(AuthorizationStatus.DENIED), AUTHORIZED(AuthorizationStatus.AUTHORIZED);

        private final AuthorizationStatus status;

        Choice(AuthorizationStatus status) { this.status = status; }

        /** The status the choice sets. */
        public AuthorizationStatus status() { return status; }
    }

    /** A subject's choice and its dates (null when they do not apply). */
    public record State(AuthorizationStatus status, Instant requestedAt, Instant effectiveAt) {}
}
