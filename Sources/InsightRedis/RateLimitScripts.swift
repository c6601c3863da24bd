import RedisClient

/// The rate-limit scripts (docs/rate-limits.md, "Several instances: Redis"). Each decision is one
/// script, atomic on the server, timed by the server's clock (`TIME`), so instances' clocks do
/// not matter. The GCRA and the penalty's step rule are those of `GCRA.swift` and
/// `CompliancePolicy.advance`, in Lua; the policies in force at each step are computed by the
/// caller (`CompliancePolicy.effective`) and passed in, so the factors live in one place.
enum RateLimitScripts {
    /// Shared functions. Times are milliseconds; numbers are stored with 17 significant digits
    /// so that a TAT reads back as the double it was.
    static let prelude = """
        local function now_ms()
          local t = redis.call('TIME')
          return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        end
        local function num(x) return string.format('%.17g', x) end
        local function current(tat, now, capacity)
          if tat == nil or tat <= now then return now end
          if tat - now > 2 * capacity then return now end
          return math.min(tat, now + capacity)
        end
        local function decide(rate, burst, now, tat, cost)
          local interval = 1000 / rate
          local capacity = interval * burst
          local start = current(tat, now, capacity)
          local newTat = start + interval * math.min(math.max(cost or 1, 1), burst)
          local used = newTat - now
          if used <= capacity + 1e-9 then
            return true, newTat, math.max(0, math.floor((capacity - used) / interval + 1e-9)), 0, used
          end
          return false, start, 0, used - capacity, start - now
        end
        local function available(rate, burst, now, tat)
          local interval = 1000 / rate
          local capacity = interval * burst
          local used = current(tat, now, capacity) - now
          return math.max(0, math.floor((capacity - used) / interval + 1e-9))
        end
        local function advance(step, changedAt, target, now, period)
          changedAt = math.min(changedAt, now)
          if target >= step then return target, now end
          local steps = math.floor((now - changedAt) / math.max(1, period))
          if steps > 0 then
            step = math.max(target, step - steps)
            changedAt = changedAt + steps * period
          end
          return step, changedAt
        end
        -- The caller's step now, from its arguments at ARGV[b]: the recovery period, the key's
        -- lifetime, the number of steps, then each step's rate and burst from step 0.
        local function caller_state(key, now, b)
          local h = redis.call('HMGET', key, 'tat', 'step', 'stepAt', 'target')
          local step, stepAt = advance(tonumber(h[2]) or 0, tonumber(h[3]) or 0, tonumber(h[4]) or 0, now,
                                       tonumber(ARGV[b]))
          step = math.min(step, tonumber(ARGV[b + 2]) - 1)
          return tonumber(h[1]), step, stepAt, tonumber(ARGV[b + 3 + 2 * step]), tonumber(ARGV[b + 4 + 2 * step])
        end
        local function throttled(key, now, reason)
          redis.call('HINCRBY', key, 'throttled', 1)
          redis.call('HSET', key, 'lastAt', now, 'lastReason', reason)
        end
        -- One request of the caller whose hash is `key`, costing `cost` tokens, with its arguments
        -- at ARGV[b] (as `caller_state`): {allowed, step, remaining, retryAfter ms, resetAfter ms}.
        local function admit_caller(key, now, b, cost)
          local tat, step, stepAt, rate, burst = caller_state(key, now, b)
          local ok, newTat, remaining, retry, reset = decide(rate, burst, now, tat, cost)
          redis.call('HSET', key, 'tat', num(newTat), 'step', step, 'stepAt', stepAt)
          if not ok then throttled(key, now, step > 0 and 'reportingPenalty' or 'callerRate') end
          redis.call('PEXPIRE', key, ARGV[b + 1])
          return {ok and 1 or 0, step, remaining, num(retry), num(reset)}
        end

        """

    /// One request of a caller. KEYS[1] the caller's hash; ARGV[1] the tokens it costs, then as
    /// `caller_state` from 2. Answers {allowed, step, remaining, retryAfter ms, resetAfter ms}.
    /// (An evaluation's request is admitted by its gate's script, `PreflightScript`, with the
    /// rest of what it asks.)
    static let admit = RedisScript(
        prelude + """
            return admit_caller(KEYS[1], now_ms(), 2, tonumber(ARGV[1]))
            """)

    /// A caller's state without taking a token (the step moved as time says, as `RateLimiter`
    /// does). KEYS[1] the caller's hash, KEYS[2] when the counts were written; ARGV as
    /// `caller_state` from 1. Answers {step, remaining, reset ms, evaluations, onTime, late, overdue,
    /// pending, throttled, lastAt, lastReason, countedAt}.
    static let view = RedisScript(
        prelude + """
            local now = now_ms()
            local tat, step, stepAt, rate, burst = caller_state(KEYS[1], now, 1)
            if redis.call('EXISTS', KEYS[1]) == 1 then
              redis.call('HSET', KEYS[1], 'step', step, 'stepAt', stepAt)
            end
            local h = redis.call('HMGET', KEYS[1], 'ev', 'onTime', 'late', 'overdue', 'pending', 'throttled', 'lastAt', 'lastReason')
            local reset = math.max(tat or now, now) - now
            return {step, available(rate, burst, now, tat), num(reset), h[1] or '0', h[2] or '0', h[3] or '0', h[4] or '0',
                    h[5] or '0', h[6] or '0', h[7] or '', h[8] or '', redis.call('GET', KEYS[2]) or ''}
            """)

    /// The recount's reporting counts for a batch of callers. KEYS: their hashes; ARGV[1] the
    /// recovery period, ARGV[2] the keys' lifetime, then per caller its target step and its
    /// five counts. Each caller's step moves to the new target at the server's now.
    static let update = RedisScript(
        prelude + """
            local now = now_ms()
            local period = tonumber(ARGV[1])
            for i, key in ipairs(KEYS) do
              local a = 3 + (i - 1) * 6
              local target = tonumber(ARGV[a])
              local h = redis.call('HMGET', key, 'step', 'stepAt')
              local step, stepAt = advance(tonumber(h[1]) or 0, tonumber(h[2]) or 0, target, now, period)
              redis.call('HSET', key, 'target', target, 'step', step, 'stepAt', stepAt, 'ev', ARGV[a + 1],
                         'onTime', ARGV[a + 2], 'late', ARGV[a + 3], 'overdue', ARGV[a + 4], 'pending', ARGV[a + 5])
              redis.call('PEXPIRE', key, ARGV[2])
            end
            return #KEYS
            """)

    /// A reset of a caller (`RateLimits.reset`). KEYS[1] the caller's hash; ARGV[1] the window of
    /// its configured policy (ms), ARGV[2] the key's lifetime. Forgets the step, the counts and the
    /// throttling history; keeps the bucket (its TAT at most one window ahead: `GCRA.resetTat`)
    /// and the insight quotas. Answers 1.
    static let reset = RedisScript(
        prelude + """
            local now = now_ms()
            redis.call('HDEL', KEYS[1], 'step', 'stepAt', 'target', 'ev', 'onTime', 'late', 'overdue', 'pending',
                       'throttled', 'lastAt', 'lastReason')
            local tat = tonumber(redis.call('HGET', KEYS[1], 'tat'))
            if tat ~= nil and tat > now then
              redis.call('HSET', KEYS[1], 'tat', num(math.min(tat, now + tonumber(ARGV[1]))))
            end
            if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
            return 1
            """)
}
