package io.insightd.client;

import java.time.Duration;

/** {@code denied}: The subject switched insights off and the switch is in effect (403): proceed with your usual controls. */
public final class DeniedException extends ProblemException {
    private static final long serialVersionUID = 1L;

    DeniedException(int status, String detail, String field, RateLimitReason reason, Duration retryAfter, int attempts) {
        super(status, "denied", detail, field, reason, retryAfter, attempts);
    }
}
