package io.insightd.client;

import java.time.Duration;

/** {@code consumptionConflict}: A different consumption report is already recorded (409): the first one stands. */
public final class ConsumptionConflictException extends ProblemException {
    private static final long serialVersionUID = 1L;

    ConsumptionConflictException(int status, String detail, String field, RateLimitReason reason, Duration retryAfter, int attempts) {
        super(status, "consumptionConflict", detail, field, reason, retryAfter, attempts);
    }
}
