package io.insightd.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.Signature;
import java.time.Duration;
import java.time.LocalDate;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The client on the wire against a server that replays a live insightd's answers (and scripted
 * failures) and serves a JWKS with its ETag; the conformance driver runs the same client
 * against a live daemon.
 */
class InsightClientTest {
    interface Reply {
        void answer(HttpExchange exchange) throws IOException;
    }

    Fixture f;
    HttpServer server;
    String url;
    volatile String jwks;
    volatile String etag = "\"1\"";
    volatile boolean keysDown;
    final List<Map<String, List<String>>> keyGets = Collections.synchronizedList(new ArrayList<>());
    final Map<String, List<String>> bodies = Collections.synchronizedMap(new java.util.HashMap<>());
    final Deque<Reply> replies = new ArrayDeque<>();

    @BeforeEach
    void start() throws Exception {
        f = new Fixture();
        jwks = f.jwks;
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", exchange -> {
            String path = exchange.getRequestURI().getPath();
            if (path.equals("/v1/signing-keys")) {
                keyGets.add(Map.copyOf(exchange.getRequestHeaders()));
                if (keysDown) {
                    problem(503, "serverError", null).answer(exchange);
                } else if (etag.equals(exchange.getRequestHeaders().getFirst("If-None-Match"))) {
                    exchange.sendResponseHeaders(304, -1);
                } else {
                    exchange.getResponseHeaders().set("ETag", etag);
                    send(exchange, 200, jwks);
                }
                exchange.close();
                return;
            }
            bodies.computeIfAbsent(path, p -> Collections.synchronizedList(new ArrayList<>()))
                    .add(new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
            Reply reply;
            synchronized (replies) {
                reply = replies.poll();
            }
            if (reply == null) {
                send(exchange, 500, "{}");
            } else {
                reply.answer(exchange);
            }
            exchange.close();
        });
        server.start();
        url = "http://127.0.0.1:" + server.getAddress().getPort();
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    void then(Reply... more) {
        synchronized (replies) {
            replies.addAll(List.of(more));
        }
    }

    int requests(String path) {
        return bodies.getOrDefault(path, List.of()).size();
    }

    static void send(HttpExchange exchange, int status, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.sendResponseHeaders(status, bytes.length == 0 ? -1 : bytes.length);
        if (bytes.length > 0) {
            exchange.getResponseBody().write(bytes);
        }
    }

    static Reply answer(String body, String receipt) {
        return exchange -> {
            if (receipt != null) {
                exchange.getResponseHeaders().set("Insight-Receipt", receipt);
            }
            exchange.getResponseHeaders().set("Content-Type", "application/json");
            send(exchange, 200, body);
        };
    }

    static Reply problem(int status, String code, String retryAfter) {
        return exchange -> {
            if (retryAfter != null) {
                exchange.getResponseHeaders().set("Retry-After", retryAfter);
            }
            exchange.getResponseHeaders().set("Content-Type", "application/problem+json");
            send(exchange, status, "{\"type\":\"urn:insightd:problem:" + code + "\",\"title\":\"t\",\"status\":" + status + ",\"code\":\"" + code
                    + "\",\"detail\":\"d\",\"reason\":\"callerRate\"}");
        };
    }

    /** Reads the request and closes the connection without answering: the request arrived. */
    static final Reply HANG_UP = exchange -> exchange.getHttpContext().getServer().stop(0);

    static EvaluationRequest requestOf(Fixture.Answer a) throws IOException {
        return EvaluationRequest.builder(OperationCategory.PAYMENT).requestId(a.requestId())
                .insight(EvaluationRequest.InsightRequest.isLikelyBeingCoached()).build();
    }

    /** A request whose requestId the client generates: it names nothing the caller can retry. */
    static EvaluationRequest generated() {
        return EvaluationRequest.builder(OperationCategory.PAYMENT).insight(EvaluationRequest.InsightRequest.isLikelyBeingCoached()).build();
    }

    InsightClient client(RetryPolicy retry) {
        return InsightClient.builder(url, "ik_test").retryPolicy(retry).timeout(Duration.ofSeconds(2)).build();
    }

    @Test
    void theJwksIsFetchedOnceAndRefreshedWithItsETagOnAnUnknownKid() throws Exception {
        jwks = "{\"keys\":[]}";
        etag = "\"empty\"";
        InsightClient client = client(RetryPolicy.NEVER);
        // The first answer: the set fetched has no key of it, so the answer is refused.
        Fixture.Answer first = f.answers.get(0);
        then(answer(first.body(), first.receipt()));
        assertThrows(ReceiptException.class, () -> client.evaluate(requestOf(first)), "a key the set lacks");
        assertEquals(1, keyGets.size());
        assertEquals(null, keyGets.get(0).get("If-none-match"));

        // A rotation: the next answer's key is unknown, so the set is fetched again, past caches, with its ETag.
        jwks = f.jwks;
        etag = "\"real\"";
        for (Fixture.Answer a : f.answers.subList(1, 6)) {
            then(answer(a.body(), a.receipt()));
            Evaluation e = client.evaluate(requestOf(a));
            assertEquals(a.body(), new String(e.body(), StandardCharsets.UTF_8));
            assertEquals(DecisionAction.PROCEED, e.decision().action());
            assertEquals("default", e.tenant());
            assertTrue(e.receipt().isPresent());
        }
        assertEquals(2, keyGets.size(), "one refresh for the rotation, then the set is held");
        assertEquals(List.of("\"empty\""), keyGets.get(1).get("If-none-match"));
        assertEquals(List.of("no-cache"), keyGets.get(1).get("Cache-control"));

        // A head signed by a key the service does not publish: one refresh, answered 304, then refused.
        String[] forged = forgedAnswer(first.body());
        then(answer(forged[0], forged[1]));
        assertThrows(ReceiptException.class, () -> client.evaluate(requestOf(first)));
        assertEquals(3, keyGets.size());
        assertEquals(List.of("\"real\""), keyGets.get(2).get("If-none-match"));
    }

    /** A one-leaf tree of body signed by a key of the test's own. */
    static String[] forgedAnswer(String body) throws Exception {
        KeyPair pair = KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
        byte[] encoded = pair.getPublic().getEncoded();
        String x = Base64.getUrlEncoder().withoutPadding().encodeToString(java.util.Arrays.copyOfRange(encoded, encoded.length - 32, encoded.length));
        Base64.Encoder enc = Base64.getUrlEncoder().withoutPadding();
        String header = enc.encodeToString(("{\"alg\":\"EdDSA\",\"kid\":\"" + KeySet.thumbprint(x) + "\"}").getBytes(StandardCharsets.UTF_8));
        String root = enc.encodeToString(Receipts.leafHash(body.getBytes(StandardCharsets.UTF_8)));
        String payload = enc.encodeToString(("{\"instance\":\"forger\",\"sequence\":0,\"size\":1,\"root\":\"" + root
                + "\",\"previous\":null,\"time\":1}").getBytes(StandardCharsets.UTF_8));
        Signature signer = Signature.getInstance("Ed25519");
        signer.initSign(pair.getPrivate());
        signer.update((header + "." + payload).getBytes(StandardCharsets.US_ASCII));
        String signature = enc.encodeToString(signer.sign());
        return new String[] {body, "head=\"" + header + "." + payload + "." + signature + "\", index=0, path=()"};
    }

    @Test
    void aTamperedAnswerIsRefusedUnlessVerificationIsOff() throws Exception {
        InsightClient client = client(RetryPolicy.NEVER);
        Fixture.Answer a = f.answers.get(3);
        then(answer(a.body().replace("\"proceed\"", "\"block\""), a.receipt()), answer(a.body(), null));
        assertThrows(ReceiptException.class, () -> client.evaluate(requestOf(a)), "a tampered decision");
        assertThrows(ReceiptException.class, () -> client.evaluate(requestOf(a)), "no receipt");
        InsightClient unverified = InsightClient.builder(url, "k").verifyReceipts(false).build();
        then(answer(a.body(), null));
        assertFalse(unverified.evaluate(requestOf(a)).receipt().isPresent());
    }

    @Test
    void keysThatCannotBeFetchedFailTheReceiptNotTheEvaluation() throws Exception {
        keysDown = true;
        Fixture.Answer a = f.answers.get(2);
        then(answer(a.body(), a.receipt()));
        ReceiptException e = assertThrows(ReceiptException.class, () -> client(RetryPolicy.NEVER).evaluate(requestOf(a)));
        assertTrue(e.getCause() instanceof ServerErrorException, "the cause is the keys' 503");
    }

    @Test
    void anEvaluationThatReachedTheServiceIsNeverSentAgain() throws Exception {
        InsightClient client = client(new RetryPolicy(3, Duration.ofSeconds(5), Duration.ofMillis(10)));
        Fixture.Answer a = f.answers.get(1);
        List<Reply> refusals = List.of(problem(503, "serverError", "1"), problem(429, "rateLimitExceeded", "1"), problem(500, "serverError", null));
        for (Reply refusal : refusals) {
            int before = requests("/v1/evaluations");
            then(refusal, answer(a.body(), a.receipt()));
            ProblemException e = assertThrows(ProblemException.class, () -> client.evaluate(generated()));
            assertEquals(1, e.attempts());
            assertEquals(before + 1, requests("/v1/evaluations"));
            replies.clear();
        }
        then(answer(a.body(), a.receipt()));
        assertEquals(1, client.evaluate(requestOf(a)).attempts());
    }

    @Test
    void aLostAnswerIsNotSentAgain() throws Exception {
        InsightClient client = client(new RetryPolicy(3, Duration.ofSeconds(5), Duration.ofMillis(10)));
        Fixture.Answer a = f.answers.get(1);
        then(HANG_UP);
        TransportException e = assertThrows(TransportException.class, () -> client.evaluate(generated()));
        assertTrue(e.mayHaveArrived());
        assertEquals(1, e.attempts());
        assertEquals(1, requests("/v1/evaluations"));
    }

    @Test
    void onlyAnEvaluationWithTheCallersRequestIdIsSentAgain() throws Exception {
        RetryPolicy retry = new RetryPolicy(3, Duration.ofSeconds(1), Duration.ofMillis(10));
        InsightClient client = InsightClient.builder(url, "k").retryPolicy(retry).build();
        Fixture.Answer a = f.answers.get(4);
        Reply replayed = exchange -> {
            exchange.getResponseHeaders().set("Idempotent-Replayed", "true");
            answer(a.body(), a.receipt()).answer(exchange);
        };
        then(problem(503, "serverError", null), replayed);
        Evaluation e = client.evaluate(requestOf(a));
        assertTrue(e.replayed());
        assertEquals(2, e.attempts());
        List<String> sent = bodies.get("/v1/evaluations");
        assertEquals(sent.get(0), sent.get(1), "the retry is the same bytes");
        replies.clear();
        then(problem(503, "serverError", null), replayed);
        assertThrows(ServerErrorException.class, () -> client.evaluate(generated()), "a generated requestId is never retried");
        assertEquals(3, requests("/v1/evaluations"));
        replies.clear();
        then(HANG_UP, replayed);
        InsightClient older = InsightClient.builder(url, "k").retryPolicy(retry).idempotentEvaluations(false).build();
        assertThrows(TransportException.class, () -> older.evaluate(requestOf(a)), "off: the caller's requestId is not retried");
        assertEquals(4, requests("/v1/evaluations"));
    }

    @Test
    void anInteractionSourceIsSentAsTheApiNamesIt() throws Exception {
        EvaluationRequest request = generated().withRequestId("r-1");
        EvaluationRequest.InteractionSource web = new EvaluationRequest.InteractionSource("web-kit", "2.1.0", Platform.WEB, null);
        EvaluationRequest.InteractionSource ios = new EvaluationRequest.InteractionSource("ios-kit", "1.0.0", Platform.IOS, 0);
        assertEquals("{\"source\":{\"kit\":\"web-kit\",\"version\":\"2.1.0\",\"platform\":\"web\"}}",
                Json.MAPPER.writeValueAsString(new EvaluationRequest.Interaction(null, null, null, web)));
        assertEquals("{\"source\":{\"kit\":\"ios-kit\",\"version\":\"1.0.0\",\"platform\":\"ios\",\"droppedEvents\":0}}",
                Json.MAPPER.writeValueAsString(new EvaluationRequest.Interaction(null, null, null, ios)));
        EvaluationRequest.Interaction read = Json.MAPPER.readValue("{\"source\":{\"kit\":\"k\",\"version\":\"1\",\"platform\":\"watch\"}}",
                EvaluationRequest.Interaction.class);
        assertEquals(Platform.UNRECOGNIZED, read.source().platform(), "a platform a later insightd adds still decodes");
    }

    @Test
    void aReportIsRetriedAfterA503WithTheSameBytes() throws Exception {
        InsightClient client = client(new RetryPolicy(3, Duration.ofSeconds(5), Duration.ofMillis(10)));
        then(problem(503, "serverError", "1"), exchange -> send(exchange, 204, ""));
        long started = System.nanoTime();
        client.reportConsumption("e1", ConsumptionStatus.USED_EVALUATION_ONLY, List.of("i"));
        List<String> sent = bodies.get("/v1/evaluations/e1/consumption");
        assertEquals(2, sent.size());
        assertEquals(sent.get(0), sent.get(1));
        assertEquals("{\"status\":\"usedEvaluationOnly\",\"insightIdsUsed\":[\"i\"]}", sent.get(0));
        assertTrue(System.nanoTime() - started >= 1_000_000_000L, "waited Retry-After");
    }

    @Test
    void anUnreachableServiceIsRetriedAndReportedAsNotArrived() throws Exception {
        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        InsightClient client = InsightClient.builder("http://127.0.0.1:" + port, "k")
                .retryPolicy(new RetryPolicy(3, Duration.ofSeconds(1), Duration.ofMillis(20))).build();
        long started = System.nanoTime();
        TransportException e = assertThrows(TransportException.class, () -> client.evaluate(requestOf(f.answers.get(0))));
        assertFalse(e.mayHaveArrived());
        assertEquals(3, e.attempts());
        assertTrue(System.nanoTime() - started >= 60_000_000L, "waits 20 + 40 ms");
    }

    @Test
    void problemsAreTypedWithTheirRetryAfter() throws Exception {
        InsightClient client = client(RetryPolicy.NEVER);
        then(problem(429, "rateLimitExceeded", "7"));
        RateLimitExceededException e = assertThrows(RateLimitExceededException.class, () -> client.evaluate(requestOf(f.answers.get(0))));
        assertEquals(ProblemCode.RATE_LIMIT_EXCEEDED, e.code());
        assertEquals(Duration.ofSeconds(7), e.retryAfter().orElseThrow());
        assertEquals(RateLimitReason.CALLER_RATE, e.reason().orElseThrow());
        assertTrue(e.mayRetry());
        for (ProblemCode code : ProblemCode.values()) {
            if (code == ProblemCode.UNRECOGNIZED) {
                continue;
            }
            then(problem(422, code.wire(), null));
            ProblemException refused = assertThrows(ProblemException.class, client::catalog);
            assertEquals(code, refused.code());
            String type = Character.toUpperCase(code.wire().charAt(0)) + code.wire().substring(1) + "Exception";
            assertEquals(type, refused.getClass().getSimpleName(), "each code has its own exception");
        }
        then(problem(409, "somethingNew", null));
        ProblemException later = assertThrows(ProblemException.class, client::catalog);
        assertEquals(ProblemException.class, later.getClass());
        assertEquals(ProblemCode.UNRECOGNIZED, later.code());
        assertEquals("somethingNew", later.rawCode());
        then(exchange -> send(exchange, 502, ""));
        assertThrows(ServerErrorException.class, client::catalog, "a proxy's 502 without a problem");
    }

    @Test
    void requestsAreCheckedBeforeAndAfterSending() throws Exception {
        InsightClient client = client(RetryPolicy.NEVER);
        assertThrows(IllegalArgumentException.class, () -> CallOptions.defaults().header("authorization", "Bearer x"));
        assertThrows(IllegalArgumentException.class, () -> CallOptions.insightOverride("isLikelyBeingCoached=high\r\nX: y"));
        List<Labels.Label> tooMany = Collections.nCopies(Labels.MAX_PER_SUBMISSION + 1,
                Labels.Label.confirmedLegitimate("i", LocalDate.of(2026, 12, 5)));
        assertThrows(BatchTooLargeException.class, () -> client.submitLabels(tooMany, "k"));
        assertEquals(0, requests("/v1/labels"));
        Fixture.Answer a = f.answers.get(0);
        then(answer(a.body(), a.receipt()));
        assertThrows(UnexpectedResponseException.class,
                () -> client.evaluate(requestOf(a).withRequestId("another")), "an answer to another requestId");
    }

    @Test
    void labelsCarryTheirIdempotencyKeyAndDates() throws Exception {
        InsightClient client = client(RetryPolicy.NEVER);
        List<String> keys = new ArrayList<>();
        then(exchange -> {
            keys.add(exchange.getRequestHeaders().getFirst("Idempotency-Key"));
            exchange.getResponseHeaders().set("Idempotent-Replayed", "true");
            send(exchange, 200, "{\"results\":[{\"index\":0,\"insightId\":\"i1\",\"status\":\"accepted\"},{\"index\":1,\"status\":\"invalid\","
                    + "\"field\":\"labels[1].insightId\",\"detail\":\"x\"}],\"summary\":{\"accepted\":1,\"duplicate\":0,\"conflict\":0,"
                    + "\"unknownInsight\":0,\"invalid\":1}}");
        });
        Labels.Results out = client.submitLabels(List.of(
                Labels.Label.confirmedFraud("i1", FraudType.OTHER, LocalDate.of(2026, 12, 6)),
                Labels.Label.confirmedLegitimate("", LocalDate.of(2026, 12, 6))), "batch-1");
        assertTrue(out.replayed());
        assertEquals(LabelResultStatus.INVALID, out.results().get(1).status());
        assertEquals(List.of("batch-1"), keys);
        assertEquals("{\"labels\":[{\"insightId\":\"i1\",\"outcome\":\"confirmedFraud\",\"fraudType\":\"other\",\"discoveredAt\":\"2026-12-06\"},"
                + "{\"insightId\":\"\",\"outcome\":\"confirmedLegitimate\",\"discoveredAt\":\"2026-12-06\"}]}", bodies.get("/v1/labels").get(0));
    }
}
