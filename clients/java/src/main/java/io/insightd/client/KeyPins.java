package io.insightd.client;

import java.security.PublicKey;
import java.util.Collection;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The keys an application trusts to sign receipts' heads, whatever the JWKS of the base URL
 * lists: a proxy between the client and insightd can serve a key set of its own and re-sign the
 * answers it changes (docs/api.md, "Receipts"). See {@link InsightClient.Builder#pinnedKeys}.
 */
final class KeyPins {
    private final Map<String, PublicKey> keys = new TreeMap<>();
    private final Set<String> ids = new TreeSet<>();
    private final boolean allowUnpinned;

    /** Null when nothing is pinned: the JWKS fetched is trusted, as before pins. */
    static KeyPins of(KeySet keys, Collection<String> thumbprints, boolean allowUnpinned) {
        return keys == null && thumbprints == null ? null : new KeyPins(keys, thumbprints, allowUnpinned);
    }

    private KeyPins(KeySet pinned, Collection<String> thumbprints, boolean allowUnpinned) {
        if (pinned != null) {
            for (String kid : pinned.keyIds()) {
                keys.put(kid, pinned.key(kid));
            }
        }
        ids.addAll(keys.keySet());
        if (thumbprints != null) {
            ids.addAll(thumbprints);
        }
        if (ids.isEmpty()) {
            throw new IllegalArgumentException("pin at least one key or thumbprint");
        }
        this.allowUnpinned = allowUnpinned;
    }

    /** Refuses a head whose key is not pinned, before any fetch. */
    void admit(String kid) throws ReceiptException {
        if (!allowUnpinned && !ids.contains(kid)) {
            throw new ReceiptException("key " + kid + " is not pinned (pinned: " + String.join(", ", ids) + ")");
        }
    }

    /** The key set to verify with: the pinned keys, and those of {@code fetched} (null: none yet) that are pinned. */
    KeySet apply(KeySet fetched) {
        Map<String, PublicKey> set = new TreeMap<>();
        if (fetched != null) {
            for (String kid : fetched.keyIds()) {
                if (allowUnpinned || ids.contains(kid)) {
                    set.put(kid, fetched.key(kid));
                }
            }
        }
        set.putAll(keys);
        return new KeySet(set);
    }
}
