package io.insightd.client;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * The client's receipt checks: the service's JWKS (fetched when first needed, again with its
 * ETag when a head names a key it does not hold: a rotation), the newest head seen per chain (instance, tenant, environment)
 * (the next must follow it), and the tenant and environment every answer must name (the
 * expected ones, or the first answer's).
 */
final class ReceiptVerifier {
    /** Fetches the JWKS: with the ETag held (or null), it answers null for 304 Not Modified. */
    interface KeySource {
        Fetched fetch(String etag) throws InsightException;
    }

    record Fetched(KeySet keys, String etag) {}

    private final KeySource source;
    private final KeyPins pins; // null: the fetched JWKS is trusted
    private final Map<String, Receipt> newest = new HashMap<>();
    private KeySet keys;
    private String etag;
    private String tenant;
    private Environment environment;

    ReceiptVerifier(KeySource source, String tenant, Environment environment) {
        this(source, tenant, environment, null);
    }

    ReceiptVerifier(KeySource source, String tenant, Environment environment, KeyPins pins) {
        this.source = source;
        this.tenant = tenant;
        this.environment = environment;
        this.pins = pins;
        this.keys = pins == null ? null : pins.apply(null);
    }

    synchronized Receipt verify(byte[] body, String header) throws InsightException {
        Receipts.Header parsed = Receipts.Header.parse(header);
        String kid = Receipts.HeadJws.parse(parsed.head()).kid();
        if (pins != null) {
            pins.admit(kid);
        }
        if (keys == null || keys.key(kid) == null) {
            Fetched fetched;
            try {
                fetched = source.fetch(keys == null ? null : etag);
            } catch (InsightException e) {
                // The receipt's failure, not the evaluation's: the evaluation was recorded, and a
                // transport error would invite the caller to evaluate again.
                throw new ReceiptException("the service's keys could not be fetched: " + e.getMessage(), e);
            }
            if (fetched != null) {
                keys = pins == null ? fetched.keys() : pins.apply(fetched.keys());
                etag = fetched.etag();
            }
        }
        Receipt receipt = Receipts.verify(keys, body, header);
        checkScope(receipt);
        checkChain(receipt);
        return receipt;
    }

    void checkScope(Receipt receipt) throws ReceiptException {
        if (tenant == null) {
            tenant = receipt.tenant();
        }
        if (environment == null) {
            environment = receipt.environment();
        }
        if (!tenant.equals(receipt.tenant()) || environment != receipt.environment()) {
            throw new ReceiptException("the answer is tenant " + receipt.tenant() + "'s in " + receipt.environment().wire() + ", not "
                    + tenant + "'s in " + environment.wire());
        }
    }

    /**
     * The head's place in its chain (instance, tenant, environment) where this client saw a neighbour: the same
     * sequence is the same head, and the next names the newest as previous, with a time not
     * earlier (docs/api.md, "Verifying a receipt", step 8).
     */
    void checkChain(Receipt receipt) throws ReceiptException {
        Receipt seen = newest.get(receipt.chain());
        if (seen != null && receipt.sequence() == seen.sequence() && !receipt.head().equals(seen.head())) {
            throw new ReceiptException("two heads " + receipt.sequence() + " of instance " + receipt.instance() + ": its chain forked");
        }
        if (seen != null && receipt.sequence() == seen.sequence() + 1 && !Arrays.equals(receipt.previous(), seen.headHash())) {
            throw new ReceiptException("head " + receipt.sequence() + " of instance " + receipt.instance() + " does not follow head "
                    + seen.sequence());
        }
        if (seen != null && receipt.sequence() == seen.sequence() + 1 && receipt.time() < seen.time()) {
            throw new ReceiptException("head " + receipt.sequence() + " of instance " + receipt.instance() + " is older than head "
                    + seen.sequence());
        }
        if (seen == null || receipt.sequence() > seen.sequence()) {
            newest.put(receipt.chain(), receipt);
        }
    }
}
