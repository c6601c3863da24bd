package io.insightd.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;

/** RFC 9162 trees against Certificate Transparency's reference vectors, and live receipts verified and refused. */
class ReceiptsTest {
    static final byte[][] LEAVES = {{}, {0x00}, {0x10}, {0x20, 0x21}, {0x30, 0x31}, {0x40, 0x41, 0x42, 0x43},
            {0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57},
            {0x60, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x6b, 0x6c, 0x6d, 0x6e, 0x6f}};

    static final String[] ROOTS = {
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
        "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
        "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
        "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
        "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
        "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
        "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
    };

    static final HexFormat HEX = HexFormat.of();

    /** RFC 9162 §2.1.1 and §2.1.3.1 from the definition: split at the largest power of two below n. */
    static int split(int n) {
        int k = 1;
        while (k * 2 < n) {
            k *= 2;
        }
        return k;
    }

    static byte[] mth(List<byte[]> leaves) {
        if (leaves.size() == 1) {
            return leaves.get(0);
        }
        int k = split(leaves.size());
        return Receipts.nodeHash(mth(leaves.subList(0, k)), mth(leaves.subList(k, leaves.size())));
    }

    static List<byte[]> auditPath(int m, List<byte[]> leaves) {
        List<byte[]> out = new ArrayList<>();
        if (leaves.size() == 1) {
            return out;
        }
        int k = split(leaves.size());
        if (m < k) {
            out.addAll(auditPath(m, leaves.subList(0, k)));
            out.add(mth(leaves.subList(k, leaves.size())));
        } else {
            out.addAll(auditPath(m - k, leaves.subList(k, leaves.size())));
            out.add(mth(leaves.subList(0, k)));
        }
        return out;
    }

    static List<byte[]> hashes(int n) {
        List<byte[]> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(Receipts.leafHash(i < LEAVES.length && n <= LEAVES.length ? LEAVES[i] : new byte[] {(byte) i, 7}));
        }
        return out;
    }

    @Test
    void rootsAndPathsMatchTheReferenceVectors() {
        for (int n = 1; n <= 8; n++) {
            assertEquals(ROOTS[n - 1], HEX.formatHex(mth(hashes(n))), n + " leaves");
        }
        List<byte[]> eight = hashes(8);
        assertEquals(List.of("96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
                "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
                "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"),
                auditPath(0, eight).stream().map(HEX::formatHex).toList());
        assertEquals(List.of("bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
                "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
                "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"),
                auditPath(5, eight).stream().map(HEX::formatHex).toList());
        for (int index : new int[] {0, 5}) {
            assertEquals(ROOTS[7], HEX.formatHex(Receipts.rootFromAuditPath(eight.get(index), index, 8, auditPath(index, eight))));
        }
    }

    @Test
    void everyPathVerifiesAndNothingAlteredDoes() {
        for (int n = 1; n <= 33; n++) {
            List<byte[]> leaves = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                leaves.add(Receipts.leafHash(new byte[] {(byte) i, 7}));
            }
            byte[] root = mth(leaves);
            for (int i = 0; i < n; i++) {
                List<byte[]> path = auditPath(i, leaves);
                assertArrayEquals(root, Receipts.rootFromAuditPath(leaves.get(i), i, n, path), i + " of " + n);
                if (n > 1) {
                    assertFalse(leads(root, leaves.get((i + 1) % n), i, n, path), "another leaf");
                    assertFalse(leads(root, leaves.get(i), (i + 1) % n, n, path), "another index");
                }
                if (path.size() > 1) {
                    List<byte[]> reversed = new ArrayList<>(path);
                    Collections.reverse(reversed);
                    assertFalse(leads(root, leaves.get(i), i, n, reversed), "a path in another order");
                }
                List<byte[]> longer = new ArrayList<>(path);
                longer.add(root);
                assertFalse(leads(root, leaves.get(i), i, n, longer), "a path too long");
                assertNull(Receipts.rootFromAuditPath(leaves.get(i), n, n, path), "an index outside");
            }
        }
    }

    static boolean leads(byte[] root, byte[] leaf, long index, long size, List<byte[]> path) {
        byte[] got = Receipts.rootFromAuditPath(leaf, index, size, path);
        return got != null && java.util.Arrays.equals(got, root);
    }

    @Test
    void liveAnswersVerifyAndTamperedOnesDoNot() throws Exception {
        Fixture f = new Fixture();
        int longest = 0;
        for (Fixture.Answer a : f.answers) {
            Receipt r = Receipts.verify(f.keys, a.bytes(), a.receipt());
            assertEquals("default", r.tenant());
            assertEquals(Environment.SANDBOX, r.environment());
            assertTrue(f.keys.keyIds().contains(r.keyId()));
            longest = Math.max(longest, r.path().size());
            byte[] tampered = a.body().replace("\"sandbox\"", "\"production\"").getBytes(StandardCharsets.UTF_8);
            assertThrows(ReceiptException.class, () -> Receipts.verify(f.keys, tampered, a.receipt()));
            assertThrows(ReceiptException.class, () -> Receipts.verify(f.keys, (a.body() + " ").getBytes(StandardCharsets.UTF_8), a.receipt()));
        }
        assertTrue(longest >= 2, "the fixture should hold audit paths of 2 hashes");
        Fixture.Answer first = f.answers.get(0), last = f.answers.get(f.answers.size() - 1);
        assertThrows(ReceiptException.class, () -> Receipts.verify(f.keys, first.bytes(), last.receipt()), "another answer's receipt");
        String forged = first.receipt().replace(signature(first.receipt()), signature(last.receipt()));
        assertThrows(ReceiptException.class, () -> Receipts.verify(f.keys, first.bytes(), forged), "another head's signature");
        KeySet empty = KeySet.parse("{\"keys\":[]}".getBytes(StandardCharsets.UTF_8));
        assertThrows(ReceiptException.class, () -> Receipts.verify(empty, first.bytes(), first.receipt()), "an unknown kid");
    }

    static String signature(String receipt) {
        String head = receipt.split("\"")[1];
        return head.substring(head.lastIndexOf('.') + 1);
    }

    @Test
    void pathsSwappedBetweenLeavesFail() throws Exception {
        Fixture f = new Fixture();
        Fixture.Answer a = f.answers.stream().filter(x -> x.receipt().contains("index=1") && x.receipt().contains(": :")).findFirst()
                .orElseThrow();
        assertDoesNotThrow(() -> Receipts.verify(f.keys, a.bytes(), a.receipt()));
        assertThrows(ReceiptException.class, () -> Receipts.verify(f.keys, a.bytes(), a.receipt().replace("index=1", "index=0")));
        int open = a.receipt().indexOf('('), close = a.receipt().indexOf(')');
        String[] items = a.receipt().substring(open + 1, close).split(" ");
        String swapped = a.receipt().substring(0, open + 1) + items[1] + " " + items[0] + a.receipt().substring(close);
        assertThrows(ReceiptException.class, () -> Receipts.verify(f.keys, a.bytes(), swapped));
    }

    @Test
    void aKidThatIsNotTheThumbprintIsRefused() throws Exception {
        Fixture f = new Fixture();
        String kid = f.keys.keyIds().iterator().next();
        byte[] bad = f.jwks.replace(kid, "A".repeat(43)).getBytes(StandardCharsets.UTF_8);
        assertThrows(UnexpectedResponseException.class, () -> KeySet.parse(bad));
    }

    @Test
    void receiptHeadersAreParsedStrictly() throws Exception {
        Receipts.Header h = Receipts.Header.parse("head=\"a.b.c\", index=3, path=(:AAAA: :AQID:)");
        assertEquals("a.b.c", h.head());
        assertEquals(3, h.index());
        assertArrayEquals(new byte[] {1, 2, 3}, h.path().get(1));
        Receipts.Header other = Receipts.Header.parse("path=(), later=?1, index=0,head=\"x\"");
        assertEquals("x", other.head());
        for (String bad : List.of("", "head=\"a.b.c\", index=3", "head=\"a.b.c\", index=3, path=(:AAAA:),", "head=a.b.c, index=3, path=()",
                "head=\"a.b.c\", index=x, path=()", "head=\"a.b.c\", index=3, path=(:-_8=:)", "head=\"a.b.c\", index=3, path=(:AAAA::AAAA:)",
                "head=\"a.b.c\" index=3, path=()", "Head=\"a\", index=3, path=()", "head=\"a.b.c\", index=1234567890123456, path=()",
                "head=\"a.b.c\", index=3, path=(:AB==:)")) {
            assertThrows(ReceiptException.class, () -> Receipts.Header.parse(bad), bad);
        }
    }

    @Test
    void chainAndScopeAreChecked() throws Exception {
        Fixture f = new Fixture();
        ReceiptVerifier verifier = new ReceiptVerifier(etag -> new ReceiptVerifier.Fetched(f.keys, null), null, null);
        Receipt last = null;
        for (Fixture.Answer a : f.answers) {
            last = verifier.verify(a.bytes(), a.receipt());
        }
        Receipt end = last;
        Receipt forgedPrevious = new Receipt(end.header(), "x.y.z", end.keyId(), end.instance(), end.sequence() + 1, end.size(), end.root(),
                new byte[32], end.time(), end.index(), end.path(), end.tenant(), end.environment());
        assertThrows(ReceiptException.class, () -> verifier.checkChain(forgedPrevious));
        Receipt fork = new Receipt(end.header(), "x.y.z", end.keyId(), end.instance(), end.sequence(), end.size(), end.root(),
                end.previous(), end.time(), end.index(), end.path(), end.tenant(), end.environment());
        assertThrows(ReceiptException.class, () -> verifier.checkChain(fork));
        Receipt older = new Receipt(end.header(), "x.y.z", end.keyId(), end.instance(), end.sequence() + 1, end.size(), end.root(),
                end.headHash(), end.time() - 1, end.index(), end.path(), end.tenant(), end.environment());
        assertThrows(ReceiptException.class, () -> verifier.checkChain(older), "a successor older than its predecessor");
        Receipt otherTenant = new Receipt(end.header(), end.head(), end.keyId(), end.instance(), end.sequence(), end.size(), end.root(),
                end.previous(), end.time(), end.index(), end.path(), "other", end.environment());
        assertThrows(ReceiptException.class, () -> verifier.checkScope(otherTenant));
        ReceiptVerifier production = new ReceiptVerifier(etag -> null, "default", Environment.PRODUCTION);
        assertThrows(ReceiptException.class, () -> production.checkScope(end));
    }

    /**
     * The worked example of docs/api.md ("Verifying a receipt"): three answers of acme in production, signed by the key of
     * RFC 8032's first test vector; the head names their tenant and environment.
     */
    @Test
    void theWorkedExampleOfTheApiDocumentVerifies() throws Exception {
        KeySet keys = KeySet.parse(("{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo\","
                + "\"kid\":\"kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k\",\"use\":\"sig\",\"alg\":\"EdDSA\"}]}").getBytes(StandardCharsets.UTF_8));
        String head = "eyJhbGciOiJFZERTQSIsImtpZCI6ImtQcktfcW14VldhWVZBOXd3QkY2SXVvM3ZWeno3VHhIQ1R3WEJ5Z3JTNGsifQ."
                + "eyJpbnN0YW5jZSI6IndlYi0xLTRmMmE5YzAxIiwidGVuYW50IjoiYWNtZSIsImVudmlyb25tZW50IjoicHJvZHVjdGlvbiIsInNlcXVlbmNlIjo0MSwic2l6ZSI6Mywicm9vdCI6IkJnNHlVc0dBMnJuSlZSZDFYc3hSWUlYcFEyaVZaUUNtYWNvek1oR1E4ZmciLCJwcmV2aW91cyI6InhnTndmclZBQ1FJSlNFSjFGaFEyZTJfcmNIZmhPQW5qSk92ZUJBc2lSRlEiLCJ0aW1lIjoxNzk2NTIyNjY0MTA3fQ."
                + "KdOFJdic-IhJDjarlaNxyFTAnwj6F0zzY8CkaTQCpQenbmdqfAfAORt7z-gaUWyGuOdDX6iFpbqE-TkNfJk8BA";
        String[] paths = {
            ":plzHCViWaOdFSLKqrngt79Gv9E5p+tujoU0mPtJT6CE=: :Ixt/S01+g7BrmmewKLKpgpTGjA+v889KACHN/ROfNWc=:",
            ":O9poCmCk5ytQPU4R69+eZiNCZT9qSVezfHD1iHJDdfA=: :Ixt/S01+g7BrmmewKLKpgpTGjA+v889KACHN/ROfNWc=:",
            ":jGH9Soqq6cb7j2GEQ3H+lt2tO0+5JTRHVVAqHakFzY4=:",
        };
        for (int i = 0; i < paths.length; i++) {
            byte[] body = ("{\"eventId\":\"e" + i + "\",\"tenant\":\"acme\",\"environment\":\"production\"}").getBytes(StandardCharsets.UTF_8);
            Receipt r = Receipts.verify(keys, body, "head=\"" + head + "\", index=" + i + ", path=(" + paths[i] + ")");
            assertEquals("web-1-4f2a9c01", r.instance());
            assertEquals("acme", r.headTenant());
            assertEquals("production", r.headEnvironment());
            assertEquals(41, r.sequence());
        }
    }

    /** The example docs/api.md gave before heads were kept per tenant: a head of no tenant, which still verifies. */
    @Test
    void aHeadOfNoTenantStillVerifies() throws Exception {
        KeySet keys = KeySet.parse(("{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo\","
                + "\"kid\":\"kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k\",\"use\":\"sig\",\"alg\":\"EdDSA\"}]}").getBytes(StandardCharsets.UTF_8));
        String head = "eyJhbGciOiJFZERTQSIsImtpZCI6ImtQcktfcW14VldhWVZBOXd3QkY2SXVvM3ZWeno3VHhIQ1R3WEJ5Z3JTNGsifQ."
                + "eyJpbnN0YW5jZSI6IndlYi0xLTRmMmE5YzAxIiwic2VxdWVuY2UiOjQxLCJzaXplIjozLCJyb290IjoiQzBnZ2J4Z1lmdEt3dWd6TWFzNHE3WFlFbEotSUlTU3FqNkxBNXMyRWtEQSIsInByZXZpb3VzIjoieGdOd2ZyVkFDUUlKU0VKMUZoUTJlMl9yY0hmaE9BbmpKT3ZlQkFzaVJGUSIsInRpbWUiOjE3OTY1MjI2NjQxMDd9."
                + "MOU2PIvMci1x5_Yzf5DTmAqfLrpf788-BfQYDDuqMNVEim3hyRXSESsX2vOkjRKe6_TMqPk0QJiCtLjrK7ZrAQ";
        String[][] leaves = {
            {"{\"eventId\":\"e0\",\"tenant\":\"acme\",\"environment\":\"production\"}",
             ":Euu5lAAHET5Atm1jyvmGifWaaHH8KNyW6jnBaHnS6Oc=: :pTY1mPp1bItRlBF4rvRajDpsBcOeXQiswBbpwUyUhEA=:", "acme"},
            {"{\"eventId\":\"e1\",\"tenant\":\"acme\",\"environment\":\"sandbox\"}",
             ":O9poCmCk5ytQPU4R69+eZiNCZT9qSVezfHD1iHJDdfA=: :pTY1mPp1bItRlBF4rvRajDpsBcOeXQiswBbpwUyUhEA=:", "acme"},
            {"{\"eventId\":\"e2\",\"tenant\":\"globex\",\"environment\":\"production\"}",
             ":WKaG4afrKIlvzCaW/UV0mM+GlPRiFF5aNIz+0H5yqBA=:", "globex"},
        };
        for (int i = 0; i < leaves.length; i++) {
            byte[] body = leaves[i][0].getBytes(StandardCharsets.UTF_8);
            Receipt r = Receipts.verify(keys, body, "head=\"" + head + "\", index=" + i + ", path=(" + leaves[i][1] + ")");
            assertEquals("web-1-4f2a9c01", r.instance());
            assertEquals(41, r.sequence());
            assertEquals(3, r.size());
            assertEquals(leaves[i][2], r.tenant());
            assertNull(r.headTenant());
            assertEquals("kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k", r.keyId());
            String other = "head=\"" + head + "\", index=" + ((i + 1) % 3) + ", path=(" + leaves[i][1] + ")";
            assertThrows(ReceiptException.class, () -> Receipts.verify(keys, body, other), "another index");
        }
    }
}
