package io.insightd.client;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.PublicKey;
import java.security.Signature;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;

/** Verifies an {@code Insight-Receipt} (docs/api.md, "Verifying a receipt"). */
public final class Receipts {
    private Receipts() {}

    /**
     * Checks that {@code receipt} proves {@code body} under a key of {@code keys}: the head's
     * signature, then the body's leaf through the audit path to the head's root (RFC 9162
     * §2.1.3.2), and that the body names its tenant and environment.
     */
    public static Receipt verify(KeySet keys, byte[] body, String receipt) throws ReceiptException {
        Header parsed = Header.parse(receipt);
        HeadJws jws = HeadJws.parse(parsed.head());
        PublicKey key = keys.key(jws.kid());
        if (key == null) {
            throw new ReceiptException("key " + jws.kid() + " is not in the service's JWKS");
        }
        try {
            Signature verifier = Signature.getInstance("Ed25519");
            verifier.initVerify(key);
            verifier.update(jws.signingInput());
            if (!verifier.verify(jws.signature())) {
                throw new ReceiptException("the head's signature does not verify (key " + jws.kid() + ")");
            }
        } catch (GeneralSecurityException e) {
            throw new ReceiptException("the head's signature does not verify: " + e.getMessage());
        }
        JsonNode head = jws.payload();
        byte[] root = rootFromAuditPath(leafHash(body), parsed.index(), head.path("size").asLong(), parsed.path());
        if (root == null || !Arrays.equals(root, base64url(head.path("root").asText()))) {
            throw new ReceiptException("the body and the audit path do not lead to the signed root");
        }
        JsonNode answer;
        try {
            answer = Json.MAPPER.readTree(body);
        } catch (IOException e) {
            throw new ReceiptException("the answer is not JSON");
        }
        if (!answer.path("tenant").isTextual() || !answer.path("environment").isTextual()) {
            throw new ReceiptException("the answer names no tenant and environment");
        }
        String headTenant = head.has("tenant") ? head.path("tenant").asText() : null;
        String headEnvironment = head.has("environment") ? head.path("environment").asText() : null;
        if (headTenant != null && (!headTenant.equals(answer.path("tenant").asText())
                || !headEnvironment.equals(answer.path("environment").asText()))) {
            throw new ReceiptException("the head is tenant " + headTenant + "'s in " + headEnvironment + ", not the answer's");
        }
        byte[] previous = head.path("previous").isNull() ? null : base64url(head.path("previous").asText());
        return new Receipt(receipt, parsed.head(), jws.kid(), head.path("instance").asText(), head.path("sequence").asLong(),
                head.path("size").asLong(), base64url(head.path("root").asText()), previous, head.path("time").asLong(), parsed.index(),
                parsed.path(), answer.path("tenant").asText(), Environment.of(answer.path("environment").asText()), headTenant,
                headEnvironment);
    }

    /** RFC 9162's hash of a leaf: SHA-256(0x00 || data). */
    static byte[] leafHash(byte[] data) {
        return Receipt.sha256(new byte[] {0}, data);
    }

    static byte[] nodeHash(byte[] left, byte[] right) {
        return Receipt.sha256(new byte[] {1}, left, right);
    }

    /** RFC 9162 §2.1.3.2: the root an inclusion proof leads to, or null. */
    static byte[] rootFromAuditPath(byte[] leaf, long index, long size, List<byte[]> path) {
        if (index < 0 || index >= size) {
            return null;
        }
        long fn = index, sn = size - 1;
        byte[] r = leaf;
        for (byte[] p : path) {
            if (sn == 0 || p.length != 32) {
                return null;
            }
            if ((fn & 1) == 1 || fn == sn) {
                r = nodeHash(p, r);
                while ((fn & 1) == 0 && fn != 0) {
                    fn >>= 1;
                    sn >>= 1;
                }
            } else {
                r = nodeHash(r, p);
            }
            fn >>= 1;
            sn >>= 1;
        }
        return sn == 0 ? r : null;
    }

    /** Unpadded base64url, or null when the text is not that. */
    static byte[] base64url(String text) {
        if (text == null || !text.matches("[A-Za-z0-9_-]*")) {
            return null;
        }
        try {
            return Base64.getUrlDecoder().decode(text);
        } catch (IllegalArgumentException e) {
            return null;
        }
    }

    /** The members of an {@code Insight-Receipt}, an RFC 8941 dictionary read strictly; other members are skipped. */
    record Header(String head, long index, List<byte[]> path) {
        static Header parse(String text) throws ReceiptException {
            if (text == null) {
                throw new ReceiptException("the answer carries no Insight-Receipt");
            }
            Scanner s = new Scanner(text);
            s.skip(" ");
            String head = null;
            Long index = null;
            List<byte[]> path = null;
            while (!s.atEnd()) {
                String key = s.key();
                if (key.isEmpty() || !s.take('=')) {
                    throw malformed("a member's key");
                }
                boolean ok;
                switch (key) {
                    case "head" -> ok = (head = s.string()) != null;
                    case "index" -> ok = (index = s.integer()) != null;
                    case "path" -> ok = (path = s.byteSequences()) != null;
                    default -> ok = s.skipBareItem();
                }
                if (!ok) {
                    throw malformed("member " + key);
                }
                s.skip(" \t");
                if (s.atEnd()) {
                    break;
                }
                if (!s.take(',')) {
                    throw malformed("the separator after " + key);
                }
                s.skip(" \t");
                if (s.atEnd()) {
                    throw malformed("a trailing comma");
                }
            }
            if (head == null || index == null || path == null) {
                throw new ReceiptException("Insight-Receipt lacks head, index or path");
            }
            return new Header(head, index, path);
        }

        private static ReceiptException malformed(String what) {
            return new ReceiptException("Insight-Receipt is not an RFC 8941 dictionary (" + what + ")");
        }
    }

    private static final class Scanner {
        private final String text;
        private int at;

        Scanner(String text) { this.text = text; }

        boolean atEnd() { return at == text.length(); }

        boolean take(char c) {
            if (at < text.length() && text.charAt(at) == c) {
                at++;
                return true;
            }
            return false;
        }

        void skip(String set) {
            while (at < text.length() && set.indexOf(text.charAt(at)) >= 0) {
                at++;
            }
        }

        String key() {
            int start = at;
            if (at < text.length() && (Character.isLowerCase(text.charAt(at)) && text.charAt(at) < 128 || text.charAt(at) == '*')) {
                at++;
                while (at < text.length()) {
                    char c = text.charAt(at);
                    if (!(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || "_-.*".indexOf(c) >= 0)) {
                        break;
                    }
                    at++;
                }
            }
            return text.substring(start, at);
        }

        String string() {
            if (!take('"')) {
                return null;
            }
            StringBuilder out = new StringBuilder();
            while (at < text.length()) {
                char c = text.charAt(at++);
                if (c == '\\') {
                    if (at >= text.length() || (text.charAt(at) != '"' && text.charAt(at) != '\\')) {
                        return null;
                    }
                    out.append(text.charAt(at++));
                } else if (c == '"') {
                    return out.toString();
                } else if (c < 0x20 || c > 0x7e) {
                    return null;
                } else {
                    out.append(c);
                }
            }
            return null;
        }

        Long integer() {
            int start = at;
            take('-');
            int digits = at;
            while (at < text.length() && Character.isDigit(text.charAt(at)) && text.charAt(at) < 128) {
                at++;
            }
            if (at == digits || at - digits > 15) {
                return null;
            }
            return Long.parseLong(text.substring(start, at));
        }

        byte[] byteSequence() {
            if (!take(':')) {
                return null;
            }
            int end = text.indexOf(':', at);
            if (end < 0) {
                return null;
            }
            String encoded = text.substring(at, end);
            at = end + 1;
            if (!encoded.matches("([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")) {
                return null;
            }
            byte[] decoded = Base64.getDecoder().decode(encoded);
            // Canonical only: unused bits set would let two texts name one hash.
            return Base64.getEncoder().encodeToString(decoded).equals(encoded) ? decoded : null;
        }

        List<byte[]> byteSequences() {
            if (!take('(')) {
                return null;
            }
            List<byte[]> out = new ArrayList<>();
            skip(" ");
            while (!take(')')) {
                byte[] item = byteSequence();
                if (item == null || atEnd() || (text.charAt(at) != ' ' && text.charAt(at) != ')')) {
                    return null;
                }
                out.add(item);
                skip(" ");
            }
            return out;
        }

        boolean skipBareItem() {
            if (atEnd()) {
                return false;
            }
            switch (text.charAt(at)) {
                case '"':
                    return string() != null;
                case ':':
                    return byteSequence() != null;
                case '(':
                    int end = text.indexOf(')', at);
                    if (end < 0) {
                        return false;
                    }
                    at = end + 1;
                    return true;
                default:
                    int start = at;
                    while (at < text.length() && text.charAt(at) != ',' && text.charAt(at) != ' ') {
                        at++;
                    }
                    return at > start;
            }
        }
    }

    /** A head's JWS compact serialization: alg EdDSA, a kid, no crit. */
    record HeadJws(String kid, byte[] signature, byte[] signingInput, byte[] payloadBytes) {
        static HeadJws parse(String text) throws ReceiptException {
            String[] parts = text.split("\\.", -1);
            if (parts.length != 3 || parts[1].isEmpty()) {
                throw new ReceiptException("the receipt's head is not a JWS compact serialization");
            }
            byte[] headerBytes = base64url(parts[0]);
            JsonNode header;
            try {
                header = headerBytes == null ? null : Json.MAPPER.readTree(headerBytes);
            } catch (IOException e) {
                header = null;
            }
            if (header == null || !header.isObject()) {
                throw new ReceiptException("the JWS header is not base64url JSON");
            }
            if (!"EdDSA".equals(header.path("alg").asText())) {
                throw new ReceiptException("the JWS alg is not EdDSA");
            }
            // RFC 7515 §4.1.11: a critical extension this verifier does not know must fail.
            if (header.has("crit")) {
                throw new ReceiptException("the JWS header names critical extensions");
            }
            String kid = header.path("kid").asText("");
            if (kid.isEmpty()) {
                throw new ReceiptException("the JWS header has no kid");
            }
            byte[] signature = base64url(parts[2]);
            if (signature == null || signature.length != 64) {
                throw new ReceiptException("the JWS signature is not 64 bytes of base64url");
            }
            byte[] payload = base64url(parts[1]);
            if (payload == null) {
                throw new ReceiptException("the JWS payload is not base64url");
            }
            return new HeadJws(kid, signature, (parts[0] + "." + parts[1]).getBytes(StandardCharsets.US_ASCII), payload);
        }

        /** The tree head the payload holds (read after the signature verified). */
        JsonNode payload() throws ReceiptException {
            JsonNode head;
            try {
                head = Json.MAPPER.readTree(payloadBytes);
            } catch (IOException e) {
                head = null;
            }
            if (head == null || !head.path("instance").isTextual() || !head.path("sequence").canConvertToLong()
                    || !head.path("size").canConvertToLong() || head.path("size").asLong() <= 0 || head.path("sequence").asLong() < 0
                    || !head.path("time").canConvertToLong() || !head.path("sequence").isIntegralNumber()
                    || !head.path("size").isIntegralNumber() || !head.path("time").isIntegralNumber()) {
                throw new ReceiptException("the head's payload is not a tree head");
            }
            // A tenant and an environment, both or neither (a head made before heads were kept per tenant).
            if (head.has("tenant") != head.has("environment") || head.has("tenant") && (!head.path("tenant").isTextual()
                    || head.path("tenant").asText().isEmpty() || !head.path("environment").isTextual()
                    || head.path("environment").asText().isEmpty())) {
                throw new ReceiptException("the head's payload is not a tree head");
            }
            byte[] root = base64url(head.path("root").asText(null));
            if (root == null || root.length != 32) {
                throw new ReceiptException("the head's payload is not a tree head");
            }
            if (!head.path("previous").isNull()) {
                byte[] previous = base64url(head.path("previous").asText(null));
                if (previous == null || previous.length != 32) {
                    throw new ReceiptException("the head's previous is not a SHA-256 hash");
                }
            }
            return head;
        }
    }
}
