package io.insightd.client;

import java.time.Duration;
import java.util.Optional;

/**
 * A request the service refused, with its RFC 9457 problem: catch the subclass of its code
 * ({@link DeniedException}, {@link RateLimitExceededException}, …) or switch on {@link #code()}.
 * A code a later service version adds arrives as a {@code ProblemException} itself, with
 * {@code code()} {@code UNRECOGNIZED} and its {@link #rawCode()}.
 * {@link #retryAfter()} is the service's advice (a 503 or 429 that carries it recorded
 * nothing); the client has already retried where that was safe.
 */
public sealed class ProblemException extends InsightException
        permits ContextInvalidException, UnauthorizedException, ForbiddenException, DeniedException,
                OverrideNotAllowedException, NotFoundException, EvaluationNotFoundException, CallerNotFoundException,
                KeyNotFoundException, MethodNotAllowedException, ConsumptionConflictException, IdempotencyKeyReusedException,
                UnsupportedMediaTypeException, PayloadTooLargeException, HeadersTooLargeException, MalformedRequestException,
                RequestTimeoutException, NotImplementedException, HttpVersionNotSupportedException,
                RateLimitExceededException, ServerErrorException {
    private static final long serialVersionUID = 1L;

    private final int status;
    private final ProblemCode code;
    private final String rawCode;
    private final String detail;
    private final String field;
    private final RateLimitReason reason;
    private final Duration retryAfter;
    private final int attempts;

    ProblemException(int status, String rawCode, String detail, String field, RateLimitReason reason, Duration retryAfter,
                     int attempts) {
        super("insightd: " + rawCode + " (" + status + ")" + (field == null ? "" : " " + field)
                + (detail == null || detail.isEmpty() ? "" : ": " + detail)
                + (retryAfter == null ? "" : " (retry after " + retryAfter.toMillis() + " ms)"), null);
        this.status = status;
        this.code = ProblemCode.of(rawCode);
        this.rawCode = rawCode;
        this.detail = detail;
        this.field = field;
        this.reason = reason;
        this.retryAfter = retryAfter;
        this.attempts = attempts;
    }

    /** The exception of the problem's code. */
    static ProblemException of(int status, String rawCode, String detail, String field, RateLimitReason reason, Duration retryAfter,
                               int attempts) {
        return switch (ProblemCode.of(rawCode)) {
            case CONTEXT_INVALID -> new ContextInvalidException(status, detail, field, reason, retryAfter, attempts);
            case UNAUTHORIZED -> new UnauthorizedException(status, detail, field, reason, retryAfter, attempts);
            case FORBIDDEN -> new ForbiddenException(status, detail, field, reason, retryAfter, attempts);
            case DENIED -> new DeniedException(status, detail, field, reason, retryAfter, attempts);
            case OVERRIDE_NOT_ALLOWED -> new OverrideNotAllowedException(status, detail, field, reason, retryAfter, attempts);
            case NOT_FOUND -> new NotFoundException(status, detail, field, reason, retryAfter, attempts);
            case EVALUATION_NOT_FOUND -> new EvaluationNotFoundException(status, detail, field, reason, retryAfter, attempts);
            case CALLER_NOT_FOUND -> new CallerNotFoundException(status, detail, field, reason, retryAfter, attempts);
            case KEY_NOT_FOUND -> new KeyNotFoundException(status, detail, field, reason, retryAfter, attempts);
            case METHOD_NOT_ALLOWED -> new MethodNotAllowedException(status, detail, field, reason, retryAfter, attempts);
            case CONSUMPTION_CONFLICT -> new ConsumptionConflictException(status, detail, field, reason, retryAfter, attempts);
            case IDEMPOTENCY_KEY_REUSED -> new IdempotencyKeyReusedException(status, detail, field, reason, retryAfter, attempts);
            case UNSUPPORTED_MEDIA_TYPE -> new UnsupportedMediaTypeException(status, detail, field, reason, retryAfter, attempts);
            case PAYLOAD_TOO_LARGE -> new PayloadTooLargeException(status, detail, field, reason, retryAfter, attempts);
            case HEADERS_TOO_LARGE -> new HeadersTooLargeException(status, detail, field, reason, retryAfter, attempts);
            case MALFORMED_REQUEST -> new MalformedRequestException(status, detail, field, reason, retryAfter, attempts);
            case REQUEST_TIMEOUT -> new RequestTimeoutException(status, detail, field, reason, retryAfter, attempts);
            case NOT_IMPLEMENTED -> new NotImplementedException(status, detail, field, reason, retryAfter, attempts);
            case HTTP_VERSION_NOT_SUPPORTED -> new HttpVersionNotSupportedException(status, detail, field, reason, retryAfter, attempts);
            case RATE_LIMIT_EXCEEDED -> new RateLimitExceededException(status, detail, field, reason, retryAfter, attempts);
            case SERVER_ERROR -> new ServerErrorException(status, detail, field, reason, retryAfter, attempts);
            case UNRECOGNIZED -> new ProblemException(status, rawCode, detail, field, reason, retryAfter, attempts);
        };
    }

    /** The HTTP status. */
    public int status() { return status; }

    /** The problem code; {@code UNRECOGNIZED} for one a later service version added ({@link #rawCode()}). */
    public ProblemCode code() { return code; }

    /** The code as the service sent it. */
    public String rawCode() { return rawCode; }

    /** The service's explanation, for logs; do not parse it. */
    public String detail() { return detail; }

    /** The offending input ({@code insights[1].schemaVersion}, {@code (body)}, a header), when named. */
    public Optional<String> field() { return Optional.ofNullable(field); }

    /** Which limit a 429 hit. */
    public Optional<RateLimitReason> reason() { return Optional.ofNullable(reason); }

    /** The service's advice on when to retry ({@code Retry-After}). */
    public Optional<Duration> retryAfter() { return Optional.ofNullable(retryAfter); }

    /** How many times the client sent the request. */
    public int attempts() { return attempts; }

    /** Whether the service said a retry may succeed: a 503 or 429 with {@code Retry-After}. */
    public boolean mayRetry() {
        return retryAfter != null && (status == 429 || status >= 500);
    }
}
