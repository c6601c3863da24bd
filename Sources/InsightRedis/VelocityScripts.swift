import RedisClient

/// The velocity scripts (docs/velocity.md, "Several instances: Redis"). Per environment, with
/// `P` the environment's prefix (`insightd:v:production:`) and keys named by the 16 hex digits of
/// a subject key's 8 bytes:
///
/// - `P a:<account>`: sorted set of the account's evaluations, scored by time (ms); a member is
///   device (8 bytes), paid counterparty (8), flags (1), time (8, big-endian), so that the same
///   evaluation recorded twice is one member.
/// - `P d:<device>`: sorted set of the accounts (8 bytes) seen on the device, scored by their
///   latest use.
/// - `P c:<counterparty>`: sorted set of the accounts that paid it, scored by their latest
///   payment; `P c:<counterparty>:coached`: hash of account → its latest medium/high result (ms).
/// - `P l:<account>`: sorted set of the devices (`d` + 8 bytes) and counterparties (`c` + 8
///   bytes) named by evaluations that the cap dropped from the account's own set, so that an
///   erasure still finds every set the account is in; it exists only for accounts past the cap.
///
/// Each list keeps its newest `cap` entries and drops what is 7 d old when written, and each key
/// expires 7 d after its newest entry, as `VelocityTracker`'s lists do.
enum VelocityScripts {
    static let prelude = """
        local now
        do
          local t = redis.call('TIME')
          now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
        end
        local function hex(b)
          return (string.gsub(b, '.', function(c) return string.format('%02x', string.byte(c)) end))
        end

        """

    /// Records one evaluation. KEYS[1] the account's set, KEYS[2] the device's set (or the
    /// account's again when there is none), KEYS[3] the counterparty's set and KEYS[4] its
    /// coached hash (or the account's again). ARGV: [1] time, [2] flags, [3] device bytes or
    /// '', [4] counterparty bytes or '' (payments only), [5] account bytes, [6] the member,
    /// [7] the environment's prefix, [8..10] caps (evaluations per account, accounts per device,
    /// payers per counterparty), [11] the week in ms. Answers 1 when recorded, 0 when already
    /// there or older than 7 d.
    static let record = RedisScript(
        prelude + """
            local week = tonumber(ARGV[11])
            local t = tonumber(ARGV[1])
            if now - t >= week then return 0 end
            -- Numbers go to redis.call as decimal strings: the ones from ARGV as they came, the others
            -- formatted as integers once ('%d'), not as Lua numbers (which Redis prints with '%.17g').
            local tText = ARGV[1]
            local cut = string.format('%d', now - week)
            local flags = tonumber(ARGV[2])
            local device, counterparty, account = ARGV[3], ARGV[4], ARGV[5]

            -- Trims a set to its newest `cap` members; answers its size before, and what it dropped.
            -- Called only when a member was added: every write leaves a set within its cap, so one that
            -- only had a score raised still is.
            local function trim(key, cap)
              local size = redis.call('ZCARD', key)
              if size <= cap then return size, nil end
              local last = string.format('%d', size - cap - 1)
              local dropped = redis.call('ZRANGE', key, '0', last)
              redis.call('ZREMRANGEBYRANK', key, '0', last)
              return size, dropped
            end
            -- Sets `key` (and `also`) to expire 7 d after the newest score of the set `key`, in which a
            -- member was just scored `at` or kept a later score (the cap may have dropped it since):
            -- `alone` when that member was added and is all the set holds. A key these scripts wrote
            -- expires 7 d after its newest score, so an expiry later than the key's own means `at` is
            -- now the newest (PEXPIREAT GT sets only that); otherwise (no expiry yet, or an erasure took
            -- out the newest) the set is asked.
            local function expire_with_newest(key, at, alone, also)
              local at_week = string.format('%d', at + week)
              if alone then
                redis.call('PEXPIREAT', key, at_week)
              elseif redis.call('PEXPIREAT', key, at_week, 'GT') == 0 then
                local newest = redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')
                if not newest[2] then return end
                at_week = string.format('%d', tonumber(newest[2]) + week)
                redis.call('PEXPIREAT', key, at_week)
              end
              if also then redis.call('PEXPIREAT', also, at_week) end
            end
            -- The time of an account's member (bytes 18-25, big-endian ms), which is also its score.
            local function time_of(m)
              local a, b, c, d, e, f, g, h = string.byte(m, 18, 25)
              return ((((((a * 256 + b) * 256 + c) * 256 + d) * 256 + e) * 256 + f) * 256 + g) * 256 + h
            end

            -- The account's own history; read whole (oldest first) when the counterparties need it
            -- (below), which also gives its size.
            local akey = KEYS[1]
            local coached = bit.band(flags, 4) ~= 0
            redis.call('ZREMRANGEBYSCORE', akey, '-inf', cut)
            if redis.call('ZADD', akey, tText, ARGV[6]) == 0 then return 0 end
            local log, size, dropped
            local kept = 1
            if counterparty ~= '' or coached then
              log = redis.call('ZRANGE', akey, '0', '-1')
              size = #log
              local cap = tonumber(ARGV[8])
              if size > cap then
                kept = size - cap + 1
                dropped = {}
                for i = 1, size - cap do dropped[i] = log[i] end
                redis.call('ZREMRANGEBYRANK', akey, '0', string.format('%d', size - cap - 1))
              end
            else
              size, dropped = trim(akey, tonumber(ARGV[8]))
            end
            expire_with_newest(akey, t, size == 1)
            -- What the cap dropped still has the account in a device's or counterparty's set: noted for
            -- an erasure, until the newest note is 7 d old.
            if dropped then
              local lkey = ARGV[7] .. 'l:' .. hex(account)
              redis.call('ZREMRANGEBYSCORE', lkey, '-inf', cut)
              for _, m in ipairs(dropped) do
                local f = string.byte(m, 17)
                if bit.band(f, 1) ~= 0 then redis.call('ZADD', lkey, 'GT', tText, 'd' .. string.sub(m, 1, 8)) end
                if bit.band(f, 2) ~= 0 then redis.call('ZADD', lkey, 'GT', tText, 'c' .. string.sub(m, 9, 16)) end
              end
              expire_with_newest(lkey, t, false)
            end

            -- What the counterparties need to know comes out of the log (what the cap kept of it):
            -- when the account was last coached, and (for a coached result) the counterparties it
            -- paid, each at its latest payment.
            local coachedAt = nil
            local paid = {}
            if log then
              local seen = {}
              for i = #log, kept, -1 do
                local m = log[i]
                local f = string.byte(m, 17)
                if bit.band(f, 4) ~= 0 and coachedAt == nil then
                  coachedAt = time_of(m)
                  if not coached then break end
                end
                if coached and bit.band(f, 2) ~= 0 then
                  local c = string.sub(m, 9, 16)
                  if not seen[c] then
                    seen[c] = true
                    paid[#paid + 1] = {c, time_of(m)}
                  end
                end
              end
            end

            if device ~= '' then
              local dkey = KEYS[2]
              redis.call('ZREMRANGEBYSCORE', dkey, '-inf', cut)
              local alone = false
              if redis.call('ZADD', dkey, 'GT', tText, account) == 1 then alone = trim(dkey, tonumber(ARGV[9])) == 1 end
              expire_with_newest(dkey, t, alone)
            end

            local function payer(ckey, hkey, paidAt, paidAtText, coachedTime)
              local expired = redis.call('ZRANGEBYSCORE', ckey, '-inf', cut)
              if #expired > 0 then
                redis.call('ZREMRANGEBYSCORE', ckey, '-inf', cut)
                redis.call('HDEL', hkey, unpack(expired))
              end
              local added = redis.call('ZADD', ckey, 'GT', paidAtText, account) == 1
              if coachedTime then
                local old = tonumber(redis.call('HGET', hkey, account))
                if old == nil or coachedTime > old then
                  redis.call('HSET', hkey, account, string.format('%d', coachedTime))
                end
              end
              local alone = false
              if added then
                local size, dropped = trim(ckey, tonumber(ARGV[10]))
                if dropped then redis.call('HDEL', hkey, unpack(dropped)) end
                alone = size == 1
              end
              expire_with_newest(ckey, paidAt, alone, hkey)
            end
            if counterparty ~= '' then payer(KEYS[3], KEYS[4], t, tText, coachedAt) end
            -- A medium/high result marks the account as coached for the counterparties it paid within
            -- 7 d too, whichever came first.
            for _, p in ipairs(paid) do
              if p[1] ~= counterparty then
                local ckey = ARGV[7] .. 'c:' .. hex(p[1])
                payer(ckey, ckey .. ':coached', p[2], string.format('%d', p[2]), t)
              end
            end
            return 1
            """)

    /// Erases subjects from one environment (`RedisVelocity.erase`). ARGV: [1] the environment's
    /// prefix, [2] the number of accounts, [3] the number of devices, then the accounts', the
    /// devices' and the counterparties' key bytes (8 each). An account goes with its own set, its
    /// notes, and its membership in the devices and counterparties they name; a device or
    /// counterparty goes with its own set (and coached hash), and the accounts it names lose
    /// it from their members (rewritten without it, as if recorded without it). Answers the
    /// keys deleted plus the members rewritten.
    static let erase = RedisScript(
        prelude + """
            local prefix = ARGV[1]
            local na, nd = tonumber(ARGV[2]), tonumber(ARGV[3])
            local accounts, devices, counterparties, isDevice, isCounterparty = {}, {}, {}, {}, {}
            for i = 4, #ARGV do
              local k = ARGV[i]
              if i < 4 + na then table.insert(accounts, k)
              elseif i < 4 + na + nd then table.insert(devices, k); isDevice[k] = true
              else table.insert(counterparties, k); isCounterparty[k] = true end
            end
            local zero = string.rep(string.char(0), 8)
            local changed = 0

            -- Rewrites an account's members that name an erased device or counterparty.
            local function scrub(akey)
              local log = redis.call('ZRANGE', akey, 0, -1, 'WITHSCORES')
              for i = 1, #log, 2 do
                local m = log[i]
                local d, c, f = string.sub(m, 1, 8), string.sub(m, 9, 16), string.byte(m, 17)
                local nf = f
                if bit.band(f, 1) ~= 0 and isDevice[d] then nf = bit.band(nf, 6); d = zero end
                if bit.band(f, 2) ~= 0 and isCounterparty[c] then nf = bit.band(nf, 5); c = zero end
                if nf ~= f then
                  redis.call('ZREM', akey, m)
                  redis.call('ZADD', akey, log[i + 1], d .. c .. string.char(nf) .. string.sub(m, 18))
                  changed = changed + 1
                end
              end
            end

            local function leave_device(d, a) redis.call('ZREM', prefix .. 'd:' .. hex(d), a) end
            local function leave_counterparty(c, a)
              local ckey = prefix .. 'c:' .. hex(c)
              redis.call('ZREM', ckey, a)
              redis.call('HDEL', ckey .. ':coached', a)
            end
            for _, a in ipairs(accounts) do
              local akey, lkey = prefix .. 'a:' .. hex(a), prefix .. 'l:' .. hex(a)
              for _, m in ipairs(redis.call('ZRANGE', akey, 0, -1)) do
                local f = string.byte(m, 17)
                if bit.band(f, 1) ~= 0 then leave_device(string.sub(m, 1, 8), a) end
                if bit.band(f, 2) ~= 0 then leave_counterparty(string.sub(m, 9, 16), a) end
              end
              for _, n in ipairs(redis.call('ZRANGE', lkey, 0, -1)) do
                if string.sub(n, 1, 1) == 'd' then leave_device(string.sub(n, 2), a) else leave_counterparty(string.sub(n, 2), a) end
              end
              changed = changed + redis.call('DEL', akey, lkey)
            end
            for _, d in ipairs(devices) do
              local dkey = prefix .. 'd:' .. hex(d)
              for _, a in ipairs(redis.call('ZRANGE', dkey, 0, -1)) do scrub(prefix .. 'a:' .. hex(a)) end
              changed = changed + redis.call('DEL', dkey)
            end
            for _, c in ipairs(counterparties) do
              local ckey = prefix .. 'c:' .. hex(c)
              for _, a in ipairs(redis.call('ZRANGE', ckey, 0, -1)) do scrub(prefix .. 'a:' .. hex(a)) end
              changed = changed + redis.call('DEL', ckey, ckey .. ':coached')
            end
            return changed
            """)
}
