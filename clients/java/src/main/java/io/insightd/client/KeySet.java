package io.insightd.client;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PublicKey;
import java.security.spec.EdECPoint;
import java.security.spec.EdECPublicKeySpec;
import java.security.spec.NamedParameterSpec;
import java.util.Base64;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The Ed25519 keys of a JWKS ({@code GET /v1/signing-keys}) that verify receipts' heads, with
 * Java's built-in EdDSA. Keys other than Ed25519 signing keys are ignored; an Ed25519 key whose
 * {@code kid} is not its RFC 7638 thumbprint is refused.
 */
public final class KeySet {
    private final Map<String, PublicKey> keys;

    KeySet(Map<String, PublicKey> keys) {
        this.keys = keys;
    }

    /** Reads a JWKS document. */
    public static KeySet parse(byte[] jwks) throws UnexpectedResponseException {
        JsonNode document;
        try {
            document = Json.MAPPER.readTree(jwks);
        } catch (IOException e) {
            throw new UnexpectedResponseException("the JWKS is not JSON", e);
        }
        Map<String, PublicKey> keys = new TreeMap<>();
        for (JsonNode key : document.path("keys")) {
            if (!"OKP".equals(key.path("kty").asText()) || !"Ed25519".equals(key.path("crv").asText())
                    || !"sig".equals(key.path("use").asText("sig")) || !"EdDSA".equals(key.path("alg").asText("EdDSA"))) {
                continue;
            }
            String x = key.path("x").asText(""), kid = key.path("kid").asText("");
            byte[] raw = Receipts.base64url(x);
            if (raw == null || raw.length != 32 || kid.isEmpty()) {
                throw new UnexpectedResponseException("the JWKS holds an Ed25519 key without a kid or a valid x", null);
            }
            if (!thumbprint(x).equals(kid)) {
                throw new UnexpectedResponseException("kid " + kid + " is not the RFC 7638 thumbprint of its key", null);
            }
            keys.put(kid, publicKey(raw));
        }
        return new KeySet(keys);
    }

    /** The ids of the usable keys, sorted. */
    public Set<String> keyIds() {
        return keys.keySet();
    }

    PublicKey key(String kid) {
        return keys.get(kid);
    }

    /** RFC 7638: SHA-256 of the required members in lexicographic order, without whitespace. */
    static String thumbprint(String x) {
        byte[] members = ("{\"crv\":\"Ed25519\",\"kty\":\"OKP\",\"x\":\"" + x + "\"}").getBytes(StandardCharsets.US_ASCII);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(Receipt.sha256(members));
    }

    /** RFC 8032's encoding: y little-endian, the top bit of the last byte the parity of x. */
    static PublicKey publicKey(byte[] raw) throws UnexpectedResponseException {
        byte[] bigEndian = new byte[raw.length];
        for (int i = 0; i < raw.length; i++) {
            bigEndian[i] = raw[raw.length - 1 - i];
        }
        boolean xOdd = (bigEndian[0] & 0x80) != 0;
        bigEndian[0] &= 0x7f;
        try {
            return KeyFactory.getInstance("Ed25519")
                    .generatePublic(new EdECPublicKeySpec(NamedParameterSpec.ED25519, new EdECPoint(xOdd, new BigInteger(1, bigEndian))));
        } catch (GeneralSecurityException e) {
            throw new UnexpectedResponseException("the JWKS holds an Ed25519 key Java cannot read", e);
        }
    }
}
