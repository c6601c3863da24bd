package io.insightd.client;

import java.time.Duration;

/** {@code serverError}: The service failed or is overloaded (500, 503): with {@link #retryAfter()}, nothing was recorded. Proceed without the insight. */
public final class ServerErrorException extends ProblemException {
    private static final long serialVersionUID = 1L;

    ServerErrorException(int status, String detail, String field, RateLimitReason reason, Duration retryAfter, int attempts) {
        super(status, "serverError", detail, field, reason, retryAfter, attempts);
    }
}
