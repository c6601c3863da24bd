package io.insightd.client;

import java.time.Instant;
import java.util.List;
import java.util.Set;

/** The types of the admin API (role admin): callers, their rate limits and keys. */
public final class Admin {
    /** The reasons a caller's rate-limit state records ({@code throttled.lastReason}): {@code DENIAL_CAPACITY} is the tenant's. */
    public static final Set<RateLimitReason> THROTTLE_REASONS =
            Set.of(RateLimitReason.CALLER_RATE, RateLimitReason.REPORTING_PENALTY, RateLimitReason.DEVICE_RATE);

    private Admin() {}

    /** A registered caller of the admin's tenant. */
    public record Caller(String callerId, String name, String tenant, Environment environment, List<Role> roles, double rate, long burst,
                         Instant createdAt, boolean trainingCapture) {}

    /** A change of a caller's quota or training capture: at least one member. */
    public record CallerPatch(Double rate, Long burst, Boolean trainingCapture) {}

    /** A caller's rate-limit state now (docs/rate-limits.md). */
    public record RateLimitState(String callerId, Environment environment, Policy policy, Penalty penalty, double effectiveRate,
                                 long effectiveBurst, long tokens, Window window, Throttled throttled) {}

    public record Policy(double rate, long burst, double overdueAllowanceShare, long overdueAllowanceMinimum, double floorShare,
                         long recoverySeconds) {}

    public record Penalty(long step, long maxStep, double factor, String why) {}

    public record Window(long seconds, long evaluations, long onTime, long late, long overdue, long pending, long overdueAllowance,
                         Instant countedAt) {}

    public record Throttled(long count, Instant lastThrottledAt, RateLimitReason lastReason) {}

    /** A caller with its rate-limit state. */
    public record CallerRateLimit(Caller caller, RateLimitState rateLimit) {}

    /** A caller's key: its id and dates, never the secret. */
    public record ApiKeyInfo(String keyId, Instant createdAt, Instant revokedAt) {}

    record CallerList(List<Caller> callers) {}

    record RateLimitList(List<CallerRateLimit> callers) {}

    record ApiKeyList(List<ApiKeyInfo> keys) {}
}
