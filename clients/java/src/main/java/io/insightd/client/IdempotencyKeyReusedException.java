package io.insightd.client;

import java.time.Duration;

/** {@code idempotencyKeyReused}: The {@code Idempotency-Key} was used before with other labels (422): use a new key for a new batch. */
public final class IdempotencyKeyReusedException extends ProblemException {
    private static final long serialVersionUID = 1L;

    IdempotencyKeyReusedException(int status, String detail, String field, RateLimitReason reason, Duration retryAfter, int attempts) {
        super(status, "idempotencyKeyReused", detail, field, reason, retryAfter, attempts);
    }
}
