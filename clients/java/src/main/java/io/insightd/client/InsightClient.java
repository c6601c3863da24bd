package io.insightd.client;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.JavaType;
import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Collectors;

/**
 * The Java client of insightd: evaluations with their proof ({@code Insight-Receipt}, verified
 * by default), consumption reports, labels, the subject authorization switch, the insight
 * catalog, the person's view and the admin API; problem codes as typed errors
 * ({@link ProblemException}) and retries that never evaluate twice ({@link RetryPolicy}). Thread
 * safe: create one per base URL and key and share it.
 */
public final class InsightClient {
    /** This client's version (semantic versioning), sent in its User-Agent. */
    public static final String VERSION = "1.0.0";

    private static final SecureRandom RANDOM = new SecureRandom();

    private final String baseUrl;
    private final String apiKey;
    private final HttpClient http;
    private final Duration timeout;
    private final RetryPolicy retry;
    private final ReceiptVerifier verifier;
    private final boolean idempotentEvaluations;

    private InsightClient(Builder b) {
        this.baseUrl = b.baseUrl.replaceAll("/+$", "");
        this.apiKey = b.apiKey;
        this.http = b.http != null ? b.http
                : HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(b.timeout).build();
        this.timeout = b.timeout;
        this.retry = b.retry;
        this.verifier = b.verifyReceipts
                ? new ReceiptVerifier(this::fetchKeys, b.tenant, b.environment, KeyPins.of(b.pinnedKeys, b.pinnedThumbprints, b.allowUnpinnedKeys))
                : null;
        this.idempotentEvaluations = b.idempotentEvaluations;
    }

    /** Starts a client for {@code baseUrl} (e.g. {@code http://127.0.0.1:8080}) with an API key. */
    public static Builder builder(String baseUrl, String apiKey) {
        return new Builder(baseUrl, apiKey);
    }

    /** Configures an {@link InsightClient}. */
    public static final class Builder {
        private final String baseUrl;
        private final String apiKey;
        private HttpClient http;
        private Duration timeout = Duration.ofSeconds(10);
        private RetryPolicy retry = RetryPolicy.DEFAULT;
        private boolean verifyReceipts = true;
        private String tenant;
        private Environment environment;
        private boolean idempotentEvaluations = true;
        private KeySet pinnedKeys;
        private List<String> pinnedThumbprints;
        private boolean allowUnpinnedKeys;

        private Builder(String baseUrl, String apiKey) {
            URI uri = URI.create(Objects.requireNonNull(baseUrl));
            if (!"http".equals(uri.getScheme()) && !"https".equals(uri.getScheme()) || uri.getHost() == null) {
                throw new IllegalArgumentException("base URL " + baseUrl + " is not an http(s) URL");
            }
            this.baseUrl = baseUrl;
            this.apiKey = apiKey == null ? "" : apiKey;
        }

        /** The HTTP client to send with (HTTP/1.1). */
        public Builder httpClient(HttpClient value) { http = value; return this; }

        /** Bounds each attempt (10 s by default). */
        public Builder timeout(Duration value) { timeout = value; return this; }

        public Builder retryPolicy(RetryPolicy value) { retry = value; return this; }

        /** Whether answers' receipts are verified (on by default; off for a service that does not prove its answers). */
        public Builder verifyReceipts(boolean value) { verifyReceipts = value; return this; }

        /** The tenant and environment every answer must name (otherwise: the first answer's). */
        public Builder expectedScope(String tenantName, Environment env) { tenant = tenantName; environment = env; return this; }

        /**
         * Whether an evaluation whose {@code requestId} the caller set is retried like a read (on by
         * default): insightd answers an evaluation sent again with the same {@code requestId} from
         * the first one (docs/api.md, "Retries: requestId"). One whose {@code requestId} the client
         * generated never is: the caller could not find it again. Off for an insightd older than that.
         */
        public Builder idempotentEvaluations(boolean value) { idempotentEvaluations = value; return this; }

        /**
         * Pins the keys trusted to sign receipts: {@code KeySet.parse} of the JWKS insightd's
         * operator hands out; they verify without a fetch. Without pins the client trusts whatever
         * key set the base URL serves, so a receipt proves the answer only as far as TLS to
         * insightd does; with them, a head signed by any other key throws {@link ReceiptException}
         * ("… is not pinned"), even when the base URL's JWKS lists it.
         */
        public Builder pinnedKeys(KeySet value) { pinnedKeys = Objects.requireNonNull(value); return this; }

        /**
         * Pins keys by their RFC 7638 thumbprints (their {@code kid}s), fetched from the base URL
         * when first needed; a fetched key not pinned is dropped. Pin the next key before a
         * rotation (docs/operations.md, "Signing keys").
         */
        public Builder pinnedThumbprints(Collection<String> value) { pinnedThumbprints = List.copyOf(value); return this; }

        /** With pins, also accept fetched keys that are not pinned (while rolling pins out: {@code Receipt.keyId()} says which key signed). */
        public Builder allowUnpinnedKeys(boolean value) { allowUnpinnedKeys = value; return this; }

        /** The client; an {@link IllegalArgumentException} when the pins given pin no key. */
        public InsightClient build() { return new InsightClient(this); }
    }

    // ---- Evaluations ---------------------------------------------------------------------

    /** {@link #evaluate(EvaluationRequest, CallOptions)} without options. */
    public Evaluation evaluate(EvaluationRequest request) throws InsightException {
        return evaluate(request, CallOptions.NONE);
    }

    /**
     * Asks for the insights of {@code request} ({@code POST /v1/evaluations}). The answer is
     * verified before it is returned: its {@code requestId} must be the one sent, its insights
     * those asked for ({@link UnexpectedResponseException}), and unless disabled its receipt
     * must prove it ({@link ReceiptException}). Sent again only when it cannot have arrived,
     * unless the caller set the {@code requestId}: then it is retried like a read, insightd answers
     * the retry from the first evaluation and {@link Evaluation#replayed()} says so (see
     * {@link Builder#idempotentEvaluations}).
     */
    public Evaluation evaluate(EvaluationRequest request, CallOptions options) throws InsightException {
        // The caller's own requestId names one evaluation, so a service that replays by requestId
        // answers a retry with it; a generated one would not survive the caller's own retry.
        boolean replaySafe = idempotentEvaluations && request.requestId() != null;
        if (request.requestId() == null) {
            request = request.withRequestId("req-" + randomToken(24));
        }
        Response response = send(Operation.CREATE_EVALUATION, replaySafe, new String[0], null, request, Map.of(), options);
        Evaluation.Wire wire = decode(response, Json.MAPPER.constructType(Evaluation.Wire.class));
        if (!Objects.equals(wire.requestId(), request.requestId())) {
            throw new UnexpectedResponseException("the answer is to requestId " + wire.requestId() + ", not " + request.requestId(), null);
        }
        List<EvaluationRequest.InsightRequest> asked = request.insights();
        if (wire.insights() == null || wire.insights().size() != asked.size()) {
            throw new UnexpectedResponseException("the insights answered are not those asked for", null);
        }
        for (int i = 0; i < asked.size(); i++) {
            if (!asked.get(i).type().equals(wire.insights().get(i).type())) {
                throw new UnexpectedResponseException("insight " + i + " answers " + wire.insights().get(i).type(), null);
            }
        }
        Receipt receipt = verifier == null ? null : verifier.verify(response.body(), response.headers().firstValue("Insight-Receipt").orElse(null));
        boolean replayed = response.headers().firstValue("Idempotent-Replayed").map("true"::equals).orElse(false);
        return new Evaluation(wire, response.body(), receipt, response.attempts(), replayed);
    }

    /** {@link #reportConsumption(String, ConsumptionStatus, List, CallOptions)} without options. */
    public void reportConsumption(String eventId, ConsumptionStatus status, List<String> insightIdsUsed) throws InsightException {
        reportConsumption(eventId, status, insightIdsUsed, CallOptions.NONE);
    }

    /**
     * Says what you did with an evaluation (mandatory, due by its {@code reportConsumptionBy}).
     * The same report again changes nothing, so it is retried; a different one is
     * {@code CONSUMPTION_CONFLICT}.
     */
    public void reportConsumption(String eventId, ConsumptionStatus status, List<String> insightIdsUsed, CallOptions options)
            throws InsightException {
        record Report(ConsumptionStatus status, List<String> insightIdsUsed) {}
        send(Operation.REPORT_CONSUMPTION, new String[] {eventId}, null, new Report(status, insightIdsUsed), Map.of(), options);
    }

    // ---- Labels --------------------------------------------------------------------------

    /** A fresh key for a label batch. */
    public static String newIdempotencyKey() {
        return "labels-" + randomToken(24);
    }

    /** {@link #submitLabels(List, String, CallOptions)} without options. */
    public Labels.Results submitLabels(List<Labels.Label> labels, String idempotencyKey) throws InsightException {
        return submitLabels(labels, idempotencyKey, CallOptions.NONE);
    }

    /**
     * Sends up to 1,000 labels under {@code idempotencyKey} ({@code POST /v1/labels}, role
     * labels): one result per label, in order. The same key with the same labels replays the
     * first answer, so the batch is retried; with other labels it is
     * {@code IDEMPOTENCY_KEY_REUSED}. More than 1,000 throws {@link BatchTooLargeException}.
     */
    public Labels.Results submitLabels(List<Labels.Label> labels, String idempotencyKey, CallOptions options) throws InsightException {
        if (labels.isEmpty() || labels.size() > Labels.MAX_PER_SUBMISSION) {
            throw new BatchTooLargeException(labels.size());
        }
        record Submission(List<Labels.Label> labels) {}
        Response response = send(Operation.SUBMIT_LABELS, new String[0], null, new Submission(labels),
                Map.of("Idempotency-Key", idempotencyKey), options);
        record Wire(List<Labels.Result> results, Labels.Summary summary) {}
        Wire wire = decode(response, Json.MAPPER.constructType(Wire.class));
        if (wire.results() == null || wire.results().size() != labels.size()) {
            throw new UnexpectedResponseException("the results do not match the labels", null);
        }
        boolean replayed = response.headers().firstValue("Idempotent-Replayed").map("true"::equals).orElse(false);
        return new Labels.Results(wire.results(), wire.summary(), replayed);
    }

    // ---- The authorization switch and the person's view ------------------------------------

    /**
     * Records a person's choice ({@code PUT /v1/authorization}): {@code DENIED} switches insights
     * off after the cooldown ({@code DENIAL_PENDING} until then), {@code AUTHORIZED} at once.
     */
    public Authorization.State setAuthorization(Authorization.Subject subject, Authorization.Choice choice) throws InsightException {
        record Change(Authorization.Subject subject, AuthorizationStatus status) {}
        return call(Operation.SET_AUTHORIZATION, new Change(subject, choice.status()), Authorization.State.class);
    }

    /** Reads a person's choice ({@code POST /v1/authorization/query}). */
    public Authorization.State queryAuthorization(Authorization.Subject subject) throws InsightException {
        record Query(Authorization.Subject subject) {}
        return call(Operation.QUERY_AUTHORIZATION, new Query(subject), Authorization.State.class);
    }

    /** The evaluations of the caller's tenant and environment that carried one subject, newest first. */
    public Subjects.Transparency transparency(Subjects.TransparencyQuery query) throws InsightException {
        return call(Operation.SUBJECT_TRANSPARENCY, query, Subjects.Transparency.class);
    }

    /** Unlinks a subject's identifiers in the admin's tenant (role admin); erasing again answers zeros. */
    public Subjects.ErasureResult erase(Subjects.ErasureRequest request) throws InsightException {
        return call(Operation.SUBJECT_ERASURE, request, Subjects.ErasureResult.class);
    }

    // ---- Catalog, keys and heads ---------------------------------------------------------

    /** The insight types, schema versions, values and model versions served ({@code GET /v1/insights}). */
    public Catalog catalog() throws InsightException {
        return call(Operation.LIST_INSIGHTS, null, Catalog.class);
    }

    /** The service's JWKS ({@code GET /v1/signing-keys}, no credentials needed). */
    public KeySet signingKeys() throws InsightException {
        return KeySet.parse(send(Operation.GET_SIGNING_KEYS, new String[0], null, null, Map.of(), CallOptions.NONE).body());
    }

    /** An instance's signed heads from sequence {@code from} ({@code GET /v1/receipts/heads}; instance null for all, limit 0 for the default). */
    public ReceiptHeads receiptHeads(String instance, long from, int limit) throws InsightException {
        Map<String, String> query = new LinkedHashMap<>();
        if (instance != null) {
            query.put("instance", instance);
        }
        if (from > 0) {
            query.put("from", Long.toString(from));
        }
        if (limit > 0) {
            query.put("limit", Integer.toString(limit));
        }
        Response response = send(Operation.LIST_RECEIPT_HEADS, new String[0], query, null, Map.of(), CallOptions.NONE);
        return decode(response, Json.MAPPER.constructType(ReceiptHeads.class));
    }

    // ---- Admin (role admin) --------------------------------------------------------------

    /** The callers of the admin's tenant. */
    public List<Admin.Caller> callers() throws InsightException {
        return call(Operation.LIST_CALLERS, null, Admin.CallerList.class).callers();
    }

    /** One caller; {@code CALLER_NOT_FOUND} for another tenant's. */
    public Admin.Caller caller(String callerId) throws InsightException {
        return call(Operation.GET_CALLER, null, Admin.Caller.class, callerId);
    }

    /** Changes a caller's rate, burst or training capture; answers the caller as changed. */
    public Admin.Caller updateCaller(String callerId, Admin.CallerPatch patch) throws InsightException {
        return call(Operation.UPDATE_CALLER_QUOTA, patch, Admin.Caller.class, callerId);
    }

    /** A caller's rate-limit state. */
    public Admin.RateLimitState rateLimit(String callerId) throws InsightException {
        return call(Operation.GET_CALLER_RATE_LIMIT, null, Admin.RateLimitState.class, callerId);
    }

    /** Clears the caller's penalty and forgives its overdue reports so far; its bucket is not refilled. */
    public Admin.RateLimitState resetRateLimit(String callerId) throws InsightException {
        return call(Operation.RESET_CALLER_RATE_LIMIT, null, Admin.RateLimitState.class, callerId);
    }

    /** Every caller of the tenant with its rate-limit state. */
    public List<Admin.CallerRateLimit> rateLimits() throws InsightException {
        return call(Operation.LIST_RATE_LIMITS, null, Admin.RateLimitList.class).callers();
    }

    /** A caller's keys, oldest first: ids and dates, never a secret. */
    public List<Admin.ApiKeyInfo> callerKeys(String callerId) throws InsightException {
        return call(Operation.LIST_CALLER_KEYS, null, Admin.ApiKeyList.class, callerId).keys();
    }

    /** Revokes one of a caller's keys (the 16 hex digits after {@code ik_}); revoking again changes nothing. */
    public Admin.ApiKeyInfo revokeKey(String callerId, String keyId) throws InsightException {
        return call(Operation.REVOKE_CALLER_KEY, null, Admin.ApiKeyInfo.class, callerId, keyId);
    }

    // ---- The wire ------------------------------------------------------------------------

    record Response(int status, HttpHeaders headers, byte[] body, int attempts) {}

    private <T> T call(Operation op, Object body, Class<T> type, String... parameters) throws InsightException {
        return decode(send(op, parameters, null, body, Map.of(), CallOptions.NONE), Json.MAPPER.constructType(type));
    }

    private static <T> T decode(Response response, JavaType type) throws UnexpectedResponseException {
        try {
            return Json.MAPPER.readValue(response.body(), type);
        } catch (IOException | RuntimeException e) {
            throw new UnexpectedResponseException("the answer is not the JSON the API documents: " + e.getMessage(), e);
        }
    }

    private ReceiptVerifier.Fetched fetchKeys(String etag) throws InsightException {
        Map<String, String> headers = etag == null ? Map.of() : Map.of("If-None-Match", etag, "Cache-Control", "no-cache");
        Response response = send(Operation.GET_SIGNING_KEYS, new String[0], null, null, headers, CallOptions.NONE);
        if (response.status() == 304) {
            return null;
        }
        return new ReceiptVerifier.Fetched(KeySet.parse(response.body()), response.headers().firstValue("ETag").orElse(null));
    }

    /** Sends the operation under the retry policy; answers a 2xx or 304, or throws. */
    Response send(Operation op, String[] parameters, Map<String, String> query, Object body, Map<String, String> headers,
                  CallOptions options) throws InsightException {
        return send(op, op.replaySafe(), parameters, query, body, headers, options);
    }

    private Response send(Operation op, boolean replaySafe, String[] parameters, Map<String, String> query, Object body,
                          Map<String, String> headers, CallOptions options) throws InsightException {
        byte[] bytes;
        try {
            bytes = body == null ? null : Json.MAPPER.writeValueAsBytes(body);
        } catch (IOException e) {
            throw new IllegalArgumentException("the request cannot be written as JSON", e);
        }
        String url = baseUrl + op.path(parameters) + (query == null || query.isEmpty() ? "" : "?" + query.entrySet().stream()
                .map(e -> e.getKey() + "=" + URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8)).collect(Collectors.joining("&")));
        HttpRequest.Builder builder = HttpRequest.newBuilder(URI.create(url))
                .timeout(options.timeout != null ? options.timeout : timeout)
                .header("Accept", "application/json")
                .header("User-Agent", "insightd-java/" + VERSION)
                .method(op.method(), bytes == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(bytes));
        if (op != Operation.GET_SIGNING_KEYS) {
            builder.header("Authorization", "Bearer " + apiKey);
        }
        if (bytes != null) {
            builder.header("Content-Type", "application/json");
        }
        headers.forEach(builder::header);
        options.headers.forEach(builder::header);
        HttpRequest request = builder.build();
        RetryPolicy policy = options.retry != null ? options.retry : retry;
        Duration waited = Duration.ZERO, transportDelay = policy.transportRetryDelay();
        for (int attempt = 1; ; attempt++) {
            InsightException failure;
            Duration wait = Duration.ZERO;
            try {
                HttpResponse<byte[]> response = http.send(request, HttpResponse.BodyHandlers.ofByteArray());
                if (response.statusCode() < 300 || response.statusCode() == 304) {
                    return new Response(response.statusCode(), response.headers(), response.body(), attempt);
                }
                ProblemException problem = problem(response, attempt);
                failure = problem;
                if (replaySafe && problem.status() == 503) {
                    wait = problem.retryAfter().orElse(transportDelay);
                    if (problem.retryAfter().isEmpty()) {
                        transportDelay = transportDelay.multipliedBy(2);
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new TransportException(e, true, attempt);
            } catch (IOException e) {
                boolean arrived = !(e instanceof ConnectException || e instanceof HttpConnectTimeoutException);
                failure = new TransportException(e, arrived, attempt);
                if (replaySafe || !arrived) {
                    wait = transportDelay;
                    transportDelay = transportDelay.multipliedBy(2);
                }
            }
            if (wait.isZero() || attempt >= policy.maxAttempts() || waited.plus(wait).compareTo(policy.maxTotalDelay()) > 0) {
                throw failure;
            }
            waited = waited.plus(wait);
            try {
                Thread.sleep(wait.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new TransportException(e, true, attempt);
            }
        }
    }

    /** The problem a refusal carries; a proxy's answer without one is mapped by its status. */
    private static ProblemException problem(HttpResponse<byte[]> response, int attempt) throws UnexpectedResponseException {
        int status = response.statusCode();
        JsonNode problem;
        try {
            problem = Json.MAPPER.readTree(response.body());
        } catch (IOException e) {
            problem = null;
        }
        String code = problem == null ? "" : problem.path("code").asText("");
        Duration retryAfter = response.headers().firstValue("Retry-After").map(InsightClient::seconds).orElse(null);
        if (retryAfter == null && problem != null && problem.path("retryAfterSeconds").isNumber()) {
            retryAfter = Duration.ofMillis((long) (problem.path("retryAfterSeconds").asDouble() * 1000));
        }
        if (code.isEmpty()) {
            if (status == 401) {
                code = "unauthorized";
            } else if (status == 429) {
                code = "rateLimitExceeded";
            } else if (status >= 500) {
                code = "serverError";
            } else {
                throw new UnexpectedResponseException("HTTP " + status + " without a problem body", null);
            }
        }
        RateLimitReason reason = problem != null && problem.path("reason").isTextual() ? RateLimitReason.of(problem.path("reason").asText()) : null;
        return ProblemException.of(status, code, problem == null ? null : problem.path("detail").asText(null),
                problem == null ? null : problem.path("field").asText(null), reason, retryAfter, attempt);
    }

    private static Duration seconds(String text) {
        try {
            double value = Double.parseDouble(text.trim());
            return value >= 0 ? Duration.ofMillis((long) (value * 1000)) : null;
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static String randomToken(int letters) {
        String alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < letters; i++) {
            out.append(alphabet.charAt(RANDOM.nextInt(alphabet.length())));
        }
        return out.toString();
    }
}
