package io.insightd.client;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * Options of one call: the sandbox's {@code Insight-Override}, other headers, a timeout per
 * attempt, a retry policy. Headers the client owns ({@code Authorization},
 * {@code Content-Type}, {@code Idempotency-Key}, …) and values with control characters are
 * refused before anything is sent.
 */
public final class CallOptions {
    static final CallOptions NONE = new CallOptions();
    private static final Set<String> OWNED = Set.of("authorization", "content-type", "content-length", "accept", "idempotency-key",
            "host", "connection", "transfer-encoding", "expect", "if-none-match", "upgrade");

    final Map<String, String> headers = new LinkedHashMap<>();
    Duration timeout;
    RetryPolicy retry;

    /** No options. */
    public static CallOptions defaults() {
        return new CallOptions();
    }

    /** Forces an outcome in the sandbox, e.g. {@code isLikelyBeingCoached=high} or {@code evaluation=error:denied}. */
    public static CallOptions insightOverride(String value) {
        return new CallOptions().header("Insight-Override", value);
    }

    /** Adds a header. */
    public CallOptions header(String name, String value) {
        if (OWNED.contains(name.toLowerCase(java.util.Locale.ROOT))) {
            throw new IllegalArgumentException("header " + name + " is set by the client");
        }
        if (value.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
            throw new IllegalArgumentException("header " + name + " has a control character");
        }
        headers.put(name, value);
        return this;
    }

    /** Bounds each attempt of this call. */
    public CallOptions timeout(Duration value) {
        timeout = value;
        return this;
    }

    /** Replaces the client's retry policy for this call. */
    public CallOptions retry(RetryPolicy value) {
        retry = value;
        return this;
    }
}
