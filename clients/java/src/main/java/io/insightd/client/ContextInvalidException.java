package io.insightd.client;

import java.time.Duration;

/** {@code contextInvalid}: The request broke the API's schema (400/422): {@link #field()} names the input. Fix the request; retrying it unchanged cannot succeed. */
public final class ContextInvalidException extends ProblemException {
    private static final long serialVersionUID = 1L;

    ContextInvalidException(int status, String detail, String field, RateLimitReason reason, Duration retryAfter, int attempts) {
        super(status, "contextInvalid", detail, field, reason, retryAfter, attempts);
    }
}
