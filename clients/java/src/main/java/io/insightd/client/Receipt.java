package io.insightd.client;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.List;

/**
 * The verified proof that insightd gave an answer: its {@code Insight-Receipt}. The answers the
 * service commits together are the leaves of an RFC 9162 Merkle tree whose head is signed once
 * (JWS, EdDSA); the receipt gives the answer's place in the tree and the hashes that lead from it
 * to the signed root (docs/api.md). Keep {@link #header()} with the answer's body: with the JWKS
 * of that time they prove the answer ({@link Receipts#verify}).
 *
 * @param header the {@code Insight-Receipt} header, as received
 * @param head the signed head, a JWS compact serialization
 * @param keyId the key that signed the head
 * @param instance the instance whose chain of heads the head extends
 * @param sequence the head's position in that chain
 * @param size answers in the head's tree
 * @param root the tree's root hash
 * @param previous SHA-256 of the chain's previous head; null for its first
 * @param time when the head was made, Unix milliseconds
 * @param index the answer's leaf index
 * @param path the audit path, the leaf's neighbour first
 * @param tenant the tenant the body names (and the receipt therefore binds)
 * @param environment the environment the body names
 * @param headTenant the tenant the head names (its chain is instance, tenant, environment): the body's;
 *     null for a head made before heads were kept per tenant
 * @param headEnvironment the environment the head names; null with {@code headTenant}
 */
public record Receipt(String header, String head, String keyId, String instance, long sequence, long size, byte[] root,
                      byte[] previous, long time, long index, List<byte[]> path, String tenant, Environment environment,
                      String headTenant, String headEnvironment) {

    /** A receipt whose head names no tenant (made before heads were kept per tenant). */
    public Receipt(String header, String head, String keyId, String instance, long sequence, long size, byte[] root,
                   byte[] previous, long time, long index, List<byte[]> path, String tenant, Environment environment) {
        this(header, head, keyId, instance, sequence, size, root, previous, time, index, path, tenant, environment, null, null);
    }

    /** The chain the head extends: its instance, tenant and environment. */
    String chain() {
        return instance + "\u0000" + (headTenant == null ? "" : headTenant) + "\u0000" + (headEnvironment == null ? "" : headEnvironment);
    }

    /** SHA-256 of the head's serialization: the next head's {@code previous}. */
    public byte[] headHash() {
        return sha256(head.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
    }

    static byte[] sha256(byte[]... parts) {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            for (byte[] part : parts) {
                digest.update(part);
            }
            return digest.digest();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform has SHA-256", e);
        }
    }
}
