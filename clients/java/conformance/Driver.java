import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.insightd.client.Admin;
import io.insightd.client.Authorization;
import io.insightd.client.CallOptions;
import io.insightd.client.Catalog;
import io.insightd.client.ConsumptionStatus;
import io.insightd.client.Evaluation;
import io.insightd.client.EvaluationRequest;
import io.insightd.client.FraudType;
import io.insightd.client.InsightClient;
import io.insightd.client.InsightException;
import io.insightd.client.KeySet;
import io.insightd.client.LabelOutcome;
import io.insightd.client.LabelResultStatus;
import io.insightd.client.Labels;
import io.insightd.client.Operation;
import io.insightd.client.ProblemException;
import io.insightd.client.ReceiptException;
import io.insightd.client.ReceiptHeads;
import io.insightd.client.Subjects;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.stream.Collectors;

/**
 * The Java client's conformance driver (clients/conformance/README.md): {@code describe} prints
 * the client's operations and enumerations; {@code run} executes clients/conformance/scenario.json
 * against the daemon the environment names, through the client's public API only.
 */
public class Driver {
    static final ObjectMapper JSON = new ObjectMapper().configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

    static List<String> wires(Enum<?>[] values) {
        return Arrays.stream(values).filter(v -> !v.name().equals("UNRECOGNIZED")).map(v -> {
            try {
                return (String) v.getClass().getMethod("wire").invoke(v);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException(e);
            }
        }).toList();
    }

    static void describe() throws Exception {
        Map<String, String> operations = new LinkedHashMap<>();
        for (Operation op : Operation.values()) {
            operations.put(op.id(), op.method() + " " + op.path());
        }
        Map<String, List<String>> enums = new LinkedHashMap<>();
        enums.put("OperationCategory", wires(io.insightd.client.OperationCategory.values()));
        enums.put("InteractionEvent.type", wires(io.insightd.client.EventType.values()));
        enums.put("InteractionEvent.field", wires(io.insightd.client.InputField.values()));
        enums.put("InteractionSource.platform", wires(io.insightd.client.Platform.values()));
        enums.put("Transaction.amountBand", wires(io.insightd.client.AmountBand.values()));
        enums.put("Environment", wires(io.insightd.client.Environment.values()));
        enums.put("InsightValue", wires(io.insightd.client.InsightValue.values()));
        enums.put("InsightErrorCode", wires(io.insightd.client.InsightErrorCode.values()));
        enums.put("ConsumptionStatus", wires(ConsumptionStatus.values()));
        enums.put("LabelOutcome", wires(LabelOutcome.values()));
        enums.put("FraudType", wires(FraudType.values()));
        enums.put("LabelResultStatus", wires(LabelResultStatus.values()));
        enums.put("InsightCatalogEntry.type", wires(io.insightd.client.InsightType.values()));
        enums.put("ModelVersion.status", wires(io.insightd.client.ModelVersionStatus.values()));
        enums.put("Problem.code", wires(io.insightd.client.ProblemCode.values()));
        enums.put("Problem.reason", wires(io.insightd.client.RateLimitReason.values()));
        enums.put("Caller.roles", wires(io.insightd.client.Role.values()));
        enums.put("RateLimitState.throttled.lastReason", wires(Admin.THROTTLE_REASONS.toArray(new Enum<?>[0])));
        enums.put("AuthorizationChange.status", Arrays.stream(Authorization.Choice.values()).map(c -> c.status().wire()).toList());
        enums.put("AuthorizationState.status", wires(io.insightd.client.AuthorizationStatus.values()));
        enums.put("TransparencyEntry.decision", wires(io.insightd.client.DecisionAction.values()));
        enums.put("Initiator.kind", wires(io.insightd.client.InitiatorKind.values()));
        enums.put("AgentFacts.untrustedContext", wires(io.insightd.client.UntrustedContext.values()));
        enums.put("AgentFacts.sideEffects", wires(io.insightd.client.SideEffect.values()));
        enums.put("DecisionAction", wires(io.insightd.client.DecisionAction.values()));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("client", "java");
        out.put("version", InsightClient.VERSION);
        out.put("operations", operations);
        out.put("enums", enums);
        out.put("requestMembers", io.insightd.client.RequestMembers.schemas());
        System.out.println(JSON.writerWithDefaultPrettyPrinter().writeValueAsString(out));
    }

    static final class Failed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Failed(String message) { super(message); }
    }

    static void check(boolean ok, String message) {
        if (!ok) {
            throw new Failed(message);
        }
    }

    /** What an action produced. */
    static final class Got {
        Evaluation evaluation;
        Catalog catalog;
        int signingKeys = -1;
        boolean recorded;
        Labels.Results labels;
        Authorization.State authorization;
        Subjects.Transparency transparency;
        Admin.RateLimitState rateLimit;
        List<String> callerIds;
        Admin.Caller caller;
        List<Admin.ApiKeyInfo> keys;
        Admin.ApiKeyInfo revokedKey;
        ReceiptHeads heads;
        Subjects.ErasureResult erasure;
    }

    final JsonNode scenario;
    final Map<String, InsightClient> clients = new HashMap<>();
    final Map<String, Evaluation> saved = new HashMap<>();
    final Map<String, String> idempotencyKeys = new HashMap<>();

    /** One value unique to the run for a scenario's name (an idempotency key, a requestId): the same name sends the same value. */
    String unique(String slot, String name) {
        return idempotencyKeys.computeIfAbsent(slot, n -> name + "-" + UUID.randomUUID());
    }

    Driver(JsonNode scenario) {
        this.scenario = scenario;
    }

    InsightClient client(String key, String via, boolean verify) throws InsightException {
        return client(key, via, verify, null);
    }

    /** A client that pins the daemon's own keys (never a proxy's) as {@code pin} says: "thumbprints", "keys", or null. */
    InsightClient client(String key, String via, boolean verify, String pin) throws InsightException {
        String slot = key + "|" + via + "|" + verify + "|" + pin;
        InsightClient client = clients.get(slot);
        if (client == null) {
            String url = System.getenv("tampering".equals(via) ? "INSIGHT_TAMPERING_URL" : "rekeying".equals(via) ? "INSIGHT_REKEYING_URL" : "INSIGHT_URL");
            InsightClient.Builder builder = InsightClient.builder(url, System.getenv("INSIGHT_KEY_" + String.valueOf(key).toUpperCase(Locale.ROOT)))
                    .timeout(Duration.ofSeconds(10)).verifyReceipts(verify);
            if (pin != null) {
                KeySet keys = InsightClient.builder(System.getenv("INSIGHT_URL"), "").build().signingKeys();
                if ("thumbprints".equals(pin)) {
                    builder.pinnedThumbprints(keys.keyIds());
                } else {
                    builder.pinnedKeys(keys);
                }
            }
            client = builder.build();
            clients.put(slot, client);
        }
        return client;
    }

    static String callerId(String name) {
        return System.getenv("INSIGHT_CALLER_" + name.toUpperCase(Locale.ROOT));
    }

    static String text(JsonNode step, String name) {
        return step.hasNonNull(name) ? step.get(name).asText() : null;
    }

    Got act(JsonNode step) throws Exception {
        Got got = new Got();
        boolean verify = step.path("verify").asBoolean(true);
        InsightClient client = client(text(step, "key"), text(step, "via"), verify, text(step, "pin"));
        switch (step.path("do").asText()) {
            case "catalog" -> got.catalog = client("sandbox", null, true).catalog();
            case "signingKeys" -> got.signingKeys = client("sandbox", null, true).signingKeys().keyIds().size();
            case "evaluate" -> {
                // The context as a backend receives it, JSON text, decoded by the client.
                EvaluationRequest request = EvaluationRequest.fromJson(JSON.writeValueAsString(scenario.path("contexts").path(step.path("context").asText())));
                if (step.hasNonNull("requestId")) {
                    request = request.withRequestId(unique("request:" + step.get("requestId").asText(), step.get("requestId").asText()));
                }
                CallOptions options = step.hasNonNull("override") ? CallOptions.insightOverride(step.get("override").asText()) : CallOptions.defaults();
                long deadline = System.nanoTime() + 15_000_000_000L;
                String differsFrom = text(step, "untilKidDiffersFrom");
                while (true) {
                    Evaluation e = client.evaluate(request, options);
                    if (differsFrom == null || !kid(e).equals(kid(saved.get(differsFrom))) || System.nanoTime() > deadline) {
                        got.evaluation = e;
                        break;
                    }
                    Thread.sleep(500);
                }
                if (step.hasNonNull("save")) {
                    saved.put(step.get("save").asText(), got.evaluation);
                }
            }
            case "report" -> {
                Evaluation e = saved.get(step.path("evaluation").asText());
                client.reportConsumption(e.eventId(), ConsumptionStatus.of(step.path("status").asText()), List.of(e.insights().get(0).insightId()));
                got.recorded = true;
            }
            case "label" -> {
                List<Labels.Label> labels = new ArrayList<>();
                LocalDate today = LocalDate.now(ZoneOffset.UTC);
                for (int i = 0; i < step.path("repeat").asInt(1); i++) {
                    for (JsonNode item : step.path("labels")) {
                        String id = item.hasNonNull("insightId") ? item.get("insightId").asText()
                                : saved.get(item.path("insightOf").asText()).insights().get(0).insightId();
                        FraudType type = item.hasNonNull("fraudType") ? FraudType.of(item.get("fraudType").asText()) : null;
                        labels.add(new Labels.Label(id, LabelOutcome.of(item.path("outcome").asText()), type, today));
                    }
                }
                String name = step.path("idempotencyKey").asText();
                got.labels = client.submitLabels(labels, unique(name, name));
            }
            case "authorize" -> got.authorization = client.setAuthorization(subject(step),
                    Authorization.Choice.valueOf(step.path("status").asText().toUpperCase(Locale.ROOT)));
            case "queryAuthorization" -> got.authorization = client.queryAuthorization(subject(step));
            case "transparency" -> {
                JsonNode s = step.path("subject");
                got.transparency = client.transparency(new Subjects.TransparencyQuery(
                        new Subjects.Identifiers(text(s, "account"), text(s, "device"), text(s, "counterparty")), null, null, null));
                got.authorization = got.transparency.authorization();
            }
            case "erase" -> {
                JsonNode s = step.path("subject");
                got.erasure = client.erase(new Subjects.ErasureRequest(
                        new Subjects.Identifiers(text(s, "account"), text(s, "device"), text(s, "counterparty")), null));
            }
            case "rateLimit" -> got.rateLimit = client.rateLimit(callerId(step.path("caller").asText()));
            case "resetRateLimit" -> got.rateLimit = client.resetRateLimit(callerId(step.path("caller").asText()));
            case "rateLimits" -> got.callerIds = client.rateLimits().stream().map(e -> e.caller().callerId()).toList();
            case "callers" -> got.callerIds = client.callers().stream().map(Admin.Caller::callerId).toList();
            case "caller" -> got.caller = client.caller(callerId(step.path("caller").asText()));
            case "updateQuota" -> got.caller = client.updateCaller(callerId(step.path("caller").asText()),
                    new Admin.CallerPatch(null, step.path("burst").asLong(), null));
            case "keys" -> got.keys = client.callerKeys(callerId(step.path("caller").asText()));
            case "revokeKey" -> {
                String id = callerId(step.path("caller").asText());
                List<Admin.ApiKeyInfo> keys = client.callerKeys(id);
                check(keys.size() == 1, "the caller has " + keys.size() + " keys, not 1");
                got.revokedKey = client.revokeKey(id, keys.get(0).keyId());
            }
            case "rotateSigningKey" -> {
                Process p = new ProcessBuilder("sh", "-c", System.getenv("INSIGHT_ROTATE_COMMAND")).inheritIO().start();
                check(p.waitFor() == 0, "the rotation failed");
            }
            case "receiptHeads" -> {
                var receipt = saved.get(step.path("evaluation").asText()).receipt().orElseThrow();
                got.heads = client.receiptHeads(receipt.instance(), receipt.sequence(), 1);
            }
            default -> throw new Failed("unknown action " + step.path("do").asText());
        }
        return got;
    }

    static Authorization.Subject subject(JsonNode step) {
        JsonNode s = step.path("subject");
        return new Authorization.Subject(text(s, "account"), text(s, "device"));
    }

    static String kid(Evaluation e) {
        return e.receipt().orElseThrow().keyId();
    }

    void expect(JsonNode step, Got got, Exception error) throws Exception {
        JsonNode expect = step.path("expect");
        if (expect.has("problem")) {
            JsonNode want = expect.get("problem");
            check(error instanceof ProblemException, "expected problem " + want.path("code").asText() + ", got " + error);
            ProblemException p = (ProblemException) error;
            String code = want.path("code").asText();
            check(code.equals(p.code().wire()), "expected problem " + code + ", got " + p.code());
            String type = Character.toUpperCase(code.charAt(0)) + code.substring(1) + "Exception";
            check(p.getClass().getSimpleName().equals(type), "expected " + type + ", got " + p.getClass().getSimpleName());
            check(p.status() == want.path("status").asInt(), "expected status " + want.path("status") + ", got " + p.status());
            if (want.path("retryAfter").asBoolean(false)) {
                check(p.retryAfter().map(d -> !d.isZero()).orElse(false), "no retryAfter");
            }
            if (want.has("field")) {
                check(p.field().orElse("").equals(want.get("field").asText()), "field " + p.field());
            }
            if (want.has("reason")) {
                check(p.reason().map(r -> r.wire().equals(want.get("reason").asText())).orElse(false), "reason " + p.reason());
            }
            if (expect.has("attempts")) {
                check(p.attempts() == expect.get("attempts").asInt(), p.attempts() + " attempts");
            }
            return;
        }
        if (expect.has("clientError")) {
            String kind = expect.get("clientError").asText();
            Class<?> type = switch (kind) {
                case "receiptInvalid" -> ReceiptException.class;
                case "batchTooLarge" -> io.insightd.client.BatchTooLargeException.class;
                case "unknownMember" -> io.insightd.client.UnknownMemberException.class;
                default -> throw new Failed("unknown client error " + kind);
            };
            check(type.isInstance(error), "expected " + kind + ", got " + error);
            if (expect.has("path")) {
                String path = ((io.insightd.client.UnknownMemberException) error).path();
                check(path.equals(expect.get("path").asText()), "expected path " + expect.get("path").asText() + ", got " + path);
            }
            return;
        }
        if (error != null) {
            throw error;
        }
        Evaluation e = got.evaluation;
        if (e != null) {
            boolean verified = expect.path("verified").asBoolean(true);
            check(e.receipt().isPresent() == verified, "verified is " + e.receipt().isPresent() + ", expected " + verified);
            Evaluation.InsightResult result = e.insights().get(0);
            if (expect.has("environment")) {
                check(e.environment().wire().equals(expect.get("environment").asText()), "environment " + e.environment());
            }
            check(Objects.equals(e.tenant(), System.getenv("INSIGHT_TENANT")), "tenant " + e.tenant());
            if (expect.has("insights")) {
                check(e.insights().size() == expect.get("insights").asInt(), e.insights().size() + " insights");
            }
            if (expect.has("value")) {
                check(result.value().map(v -> v.wire().equals(expect.get("value").asText())).orElse(false), "value " + result.value());
            }
            if (expect.has("reason")) {
                check(result.reasons().contains(expect.get("reason").asText()), "reasons " + result.reasons());
            }
            if (expect.has("insightError")) {
                check(result.error().map(x -> x.code().wire().equals(expect.get("insightError").asText())).orElse(false), "outcome " + result.outcome());
            }
            if (expect.has("decision")) {
                check(e.decision().action().wire().equals(expect.get("decision").asText()), "decision " + e.decision().action());
            }
            if (expect.has("kidDiffersFrom")) {
                check(!kid(e).equals(kid(saved.get(expect.get("kidDiffersFrom").asText()))), "the signing key did not change");
            }
            if (expect.has("attempts")) {
                check(e.attempts() == expect.get("attempts").asInt(), e.attempts() + " attempts");
            }
            if (expect.has("replayed")) {
                check(e.replayed() == expect.get("replayed").asBoolean(), "replayed is " + e.replayed());
            }
            if (expect.has("sameEventAs")) {
                check(e.eventId().equals(saved.get(expect.get("sameEventAs").asText()).eventId()), "another eventId");
            }
        }
        if (expect.has("insightTypes")) {
            List<String> types = got.catalog.insights().stream().map(Catalog.Entry::type).toList();
            for (JsonNode t : expect.get("insightTypes")) {
                check(types.contains(t.asText()), "catalog types " + types);
            }
        }
        if (expect.has("minKeys")) {
            check(got.signingKeys >= expect.get("minKeys").asInt(), got.signingKeys + " keys");
        }
        if (expect.has("recorded")) {
            check(got.recorded, "not recorded");
        }
        if (expect.has("results")) {
            List<String> statuses = got.labels.results().stream().map(r -> r.status().wire()).toList();
            List<String> want = new ArrayList<>();
            expect.get("results").forEach(n -> want.add(n.asText()));
            check(statuses.equals(want), "label results " + statuses);
            check(got.labels.summary().accepted() == statuses.stream().filter("accepted"::equals).count(), "summary " + got.labels.summary());
        }
        if (expect.has("replayed") && got.labels != null) {
            check(got.labels.replayed() == expect.get("replayed").asBoolean(), "replayed is " + got.labels.replayed());
        }
        if (expect.has("authorization")) {
            check(got.authorization != null && got.authorization.status().wire().equals(expect.get("authorization").asText()),
                    "authorization " + got.authorization);
        }
        if (expect.has("minEvaluations")) {
            check(got.transparency.evaluations().size() >= expect.get("minEvaluations").asInt(), got.transparency.evaluations().size() + " evaluations");
        }
        if (expect.has("erasedEvaluations")) {
            Subjects.ErasureResult erasure = got.erasure;
            check(erasure.evaluations() == expect.get("erasedEvaluations").asLong()
                    && erasure.authorizations() == expect.path("erasedAuthorizations").asLong(),
                    "erased " + erasure.evaluations() + " evaluations, " + erasure.authorizations() + " authorizations");
            check(erasure.tenant().equals(System.getenv("INSIGHT_TENANT")) && erasure.hashKeys() >= 1, "erasure " + erasure);
        }
        if (expect.has("minThrottled")) {
            check(got.rateLimit.throttled().count() >= expect.get("minThrottled").asInt(), "throttled " + got.rateLimit.throttled().count());
        }
        if (expect.has("includesCaller")) {
            check(got.callerIds.contains(callerId(expect.get("includesCaller").asText())), "caller not listed");
        }
        if (expect.has("caller")) {
            String owner = got.caller != null ? got.caller.callerId() : got.rateLimit.callerId();
            check(owner.equals(callerId(expect.get("caller").asText())), "caller " + owner);
        }
        if (expect.has("environment") && got.caller != null) {
            check(got.caller.environment().wire().equals(expect.get("environment").asText()), "environment " + got.caller.environment());
        }
        if (expect.has("burst")) {
            check(got.caller.burst() == expect.get("burst").asLong(), "burst " + got.caller.burst());
        }
        if (expect.has("keys")) {
            long revoked = got.keys.stream().filter(k -> k.revokedAt() != null).count();
            check(got.keys.size() == expect.get("keys").asInt() && revoked == expect.path("revoked").asInt(), got.keys.size() + " keys, " + revoked + " revoked");
        }
        if (expect.has("revoked") && got.revokedKey != null) {
            check(got.revokedKey.revokedAt() != null, "revokedAt is null");
        }
        if (expect.has("includesHeadOf")) {
            String head = saved.get(expect.get("includesHeadOf").asText()).receipt().orElseThrow().head();
            check(got.heads.heads().stream().anyMatch(h -> h.head().equals(head)), "the receipt's head is not listed");
        }
    }

    boolean run() {
        int passed = 0, failed = 0;
        for (JsonNode step : scenario.path("steps")) {
            try {
                Got got = null;
                Exception error = null;
                try {
                    got = act(step);
                } catch (io.insightd.client.InsightException | IllegalArgumentException e) {
                    error = e;
                }
                expect(step, got, error);
                passed++;
                System.out.println("ok    " + step.path("id").asText());
            } catch (Exception e) {
                failed++;
                System.out.println("FAIL  " + step.path("id").asText() + ": " + e);
            }
        }
        System.out.println("java: " + passed + " passed, " + failed + " failed");
        return failed == 0;
    }

    public static void main(String[] args) throws Exception {
        String command = args.length > 0 ? args[0] : "";
        switch (command) {
            case "describe" -> describe();
            case "run" -> {
                JsonNode scenario = JSON.readTree(Files.readAllBytes(Path.of(System.getenv("INSIGHT_SCENARIO"))));
                System.exit(new Driver(scenario).run() ? 0 : 1);
            }
            default -> {
                System.err.println("usage: Driver describe|run");
                System.exit(2);
            }
        }
    }
}
