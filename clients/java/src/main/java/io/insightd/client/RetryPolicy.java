package io.insightd.client;

import java.time.Duration;

/**
 * What the client retries on its own. Only what cannot do a thing twice is retried: an
 * idempotent request (a consumption report, labels with their {@code Idempotency-Key}, a read,
 * the authorization switch, an admin change) after a transport failure or a 503 (waiting its
 * {@code Retry-After}); a 429 is not retried (the caller's quota is the caller's to spend). An
 * evaluation is sent again only when it cannot have reached the service (no connection was
 * made): once it may have arrived, another would be an evaluation the caller did not ask for.
 *
 * @param maxAttempts attempts in all, at least 1
 * @param maxTotalDelay waiting between attempts, in all
 * @param transportRetryDelay the first wait after a transport failure, doubling; zero: none
 */
public record RetryPolicy(int maxAttempts, Duration maxTotalDelay, Duration transportRetryDelay) {
    /** Three attempts within ten seconds of waiting. */
    public static final RetryPolicy DEFAULT = new RetryPolicy(3, Duration.ofSeconds(10), Duration.ofMillis(250));

    /** One attempt. */
    public static final RetryPolicy NEVER = new RetryPolicy(1, Duration.ZERO, Duration.ZERO);

    public RetryPolicy {
        if (maxAttempts < 1) {
            throw new IllegalArgumentException("maxAttempts must be at least 1");
        }
    }
}
