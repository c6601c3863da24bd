package io.insightd.client;

import java.util.List;

/** A page of signed heads ({@code GET /v1/receipts/heads}); {@code next}, when set, is the {@code from} of the next page. */
public record ReceiptHeads(List<Head> heads, String next) {
    /** A signed tree head: its members and its JWS; {@code tenant} and {@code environment} name its chain with the instance. */
    public record Head(String instance, String tenant, String environment, long sequence, long size, String root, String previous,
                       long time, String head) {}
}
