package io.insightd.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.Signature;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Pinned keys and thumbprints: a head signed by a key the application did not pin fails, even
 * when the key set the base URL serves lists it (a proxy serving its own key set, as
 * clients/conformance/tamper_proxy.py --rekey does).
 */
class PinsTest {
    static final Base64.Encoder ENC = Base64.getUrlEncoder().withoutPadding();

    /** A key of its own, its JWK, and one-leaf trees it signs. */
    static final class Signer {
        final KeyPair pair;
        final String kid;
        final String jwk;

        Signer() throws Exception {
            pair = KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
            byte[] encoded = pair.getPublic().getEncoded();
            String x = ENC.encodeToString(Arrays.copyOfRange(encoded, encoded.length - 32, encoded.length));
            kid = KeySet.thumbprint(x);
            jwk = "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"" + x + "\",\"kid\":\"" + kid + "\",\"use\":\"sig\",\"alg\":\"EdDSA\"}";
        }

        /**
         * A tree of {@code body} alone whose head — the payload of a real head (every member the
         * daemon writes), with instance, sequence, size, root and previous its own — this key signs.
         */
        String receipt(byte[] body, String instance) throws Exception {
            String header = ENC.encodeToString(("{\"alg\":\"EdDSA\",\"kid\":\"" + kid + "\"}").getBytes(StandardCharsets.UTF_8));
            String realHead = FIXTURE.answers.get(0).receipt().split("\"")[1];
            ObjectNode members = (ObjectNode) Json.MAPPER.readTree(Base64.getUrlDecoder().decode(realHead.split("\\.")[1]));
            members.put("instance", instance).put("sequence", 0).put("size", 1).put("root", ENC.encodeToString(Receipts.leafHash(body)))
                    .putNull("previous");
            String payload = ENC.encodeToString(Json.MAPPER.writeValueAsBytes(members));
            Signature signer = Signature.getInstance("Ed25519");
            signer.initSign(pair.getPrivate());
            signer.update((header + "." + payload).getBytes(StandardCharsets.US_ASCII));
            return "head=\"" + header + "." + payload + "." + ENC.encodeToString(signer.sign()) + "\", index=0, path=()";
        }
    }

    static KeySet keys(Signer... signers) throws Exception {
        StringBuilder jwks = new StringBuilder("{\"keys\":[");
        for (int i = 0; i < signers.length; i++) {
            jwks.append(i > 0 ? "," : "").append(signers[i].jwk);
        }
        return KeySet.parse(jwks.append("]}").toString().getBytes(StandardCharsets.UTF_8));
    }

    static final Fixture FIXTURE = fixture();

    static Fixture fixture() {
        try {
            return new Fixture();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    final byte[] body = FIXTURE.answers.get(0).bytes();
    KeySet served;
    int fetches;

    ReceiptVerifier verifier(KeyPins pins) {
        return new ReceiptVerifier(etag -> {
            fetches++;
            return new ReceiptVerifier.Fetched(served, "e" + fetches);
        }, null, null, pins);
    }

    @Test
    void aKeyNotPinnedFailsEvenWhenServedAndWithoutAFetch() throws Exception {
        Signer insightd = new Signer(), proxy = new Signer();
        served = keys(proxy);
        assertEquals(proxy.kid, verifier(null).verify(body, proxy.receipt(body, "a")).keyId(), "without pins the served set is trusted");
        fetches = 0;
        for (KeyPins pins : List.of(KeyPins.of(null, List.of(insightd.kid), false), KeyPins.of(keys(insightd), null, false))) {
            ReceiptException e = assertThrows(ReceiptException.class, () -> verifier(pins).verify(body, proxy.receipt(body, "a")));
            assertEquals("insightd: receipt invalid: key " + proxy.kid + " is not pinned (pinned: " + insightd.kid + ")", e.getMessage());
        }
        assertEquals(0, fetches, "an unpinned kid is refused without a fetch");
    }

    @Test
    void pinnedKeysNeedNoFetchAndAPinnedNextKeyVerifiesAfterARotation() throws Exception {
        Signer insightd = new Signer(), next = new Signer(), other = new Signer();
        served = keys(other);
        assertEquals(insightd.kid, verifier(KeyPins.of(keys(insightd), null, false)).verify(body, insightd.receipt(body, "a")).keyId());
        assertEquals(0, fetches);

        served = keys(insightd, next, other);
        ReceiptVerifier verifier = verifier(KeyPins.of(null, List.of(insightd.kid, next.kid), false));
        assertEquals(insightd.kid, verifier.verify(body, insightd.receipt(body, "a")).keyId());
        assertEquals(next.kid, verifier.verify(body, next.receipt(body, "b")).keyId());
        assertThrows(ReceiptException.class, () -> verifier.verify(body, other.receipt(body, "c")));
        assertEquals(1, fetches);
    }

    @Test
    void allowUnpinnedAcceptsAServedKeyAndNoPinIsRefused() throws Exception {
        Signer insightd = new Signer(), proxy = new Signer();
        served = keys(proxy);
        assertEquals(proxy.kid, verifier(KeyPins.of(null, List.of(insightd.kid), true)).verify(body, proxy.receipt(body, "a")).keyId());
        assertThrows(IllegalArgumentException.class, () -> KeyPins.of(null, List.of(), false));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> InsightClient.builder("http://127.0.0.1:9", "k").pinnedThumbprints(List.of()).build());
        assertTrue(e.getMessage().contains("pin at least one"));
    }
}
