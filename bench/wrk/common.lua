-- Shared by the wrk workloads of bench/run.sh. Loaded by each workload script with dofile, once
-- in wrk's main Lua state (setup, done) and once per wrk thread (init, request, response).
--
-- Environment: BENCH_API_KEY (Bearer key), BENCH_TAG (workload name, prefixes generated ids).
-- done() prints one machine-readable line that run.sh parses:
--   BENCH_RESULT requests=… duration_us=… rps=… p50_us=… p99_us=… non2xx=… errors=… [extra=…]
bench = {}

bench.key = os.getenv("BENCH_API_KEY") or "missing-key"
bench.tag = os.getenv("BENCH_TAG") or "w"
bench.headers = function()
   return { ["Authorization"] = "Bearer " .. bench.key, ["Content-Type"] = "application/json" }
end

-- A consumption report request for evaluation `event` naming insight `insight`, built by
-- concatenation (no wrk.format table work per request: W4 sends one per evaluation).
bench.report = function(event, insight)
   local body = '{"status":"usedIncreasedFriction","insightIdsUsed":["' .. insight .. '"]}'
   return "POST /v1/evaluations/" .. event .. "/consumption HTTP/1.1\r\nHost: " .. wrk.host
      .. "\r\nAuthorization: Bearer " .. bench.key
      .. "\r\nContent-Type: application/json\r\nContent-Length: " .. #body .. "\r\n\r\n" .. body
end

-- Reads a whole file, or stops wrk with a message naming it.
bench.read = function(path)
   local f = assert(io.open(path, "rb"), "cannot read " .. tostring(path))
   local s = f:read("*a")
   f:close()
   return s
end

-- A body template split at its @ID@ placeholders.
bench.template = function(path)
   local text, parts, start = bench.read(path), {}, 1
   while true do
      local i, j = string.find(text, "@ID@", start, true)
      if not i then break end
      parts[#parts + 1] = string.sub(text, start, i - 1)
      start = j + 1
   end
   parts[#parts + 1] = string.sub(text, start)
   return parts
end

-- Evaluations of a body template whose first @ID@ is its requestId: the subjects (the other
-- @ID@s, "<tag>-<thread>-<n>", n = 1..BENCH_RING) cycle per thread, but every request gets a
-- requestId of its own, "<tag>-<run>-<thread>-<count>" (<run> random per wrk run, so a warm-up's
-- ids do not recur either). A requestId that recurred with the same bytes would be a retry,
-- answered from the store without an evaluation (docs/api.md, "Retries"): the workload would
-- measure retries after its first lap. Returns a function giving the next request; each is one
-- concatenation of the prepared parts around the new id (fixed width, so the prepared
-- Content-Length stays true).
bench.evaluations = function(parts, make)
   local size = tonumber(os.getenv("BENCH_RING") or "4096")
   local f = assert(io.open("/dev/urandom", "rb"))
   local run = string.gsub(f:read(4), ".", function(c) return string.format("%02x", string.byte(c)) end)
   f:close()
   local prefix = string.format("%s-%s-%d-", bench.tag, run, tid or 0)
   local marker = prefix .. string.rep("#", 10)
   local heads, tails = {}, {}
   for n = 1, size do
      local subject = string.format("%s-%d-%d", bench.tag, tid or 0, n)
      local body = parts[1] .. marker .. table.concat(parts, subject, 2)
      local request = make(body)
      local i, j = string.find(request, marker, 1, true)
      heads[n], tails[n] = string.sub(request, 1, i - 1), string.sub(request, j + 1)
   end
   local count, slot = 0, 0
   return function()
      count = count + 1
      slot = slot % size + 1
      return heads[slot] .. prefix .. string.format("%010d", count) .. tails[slot]
   end
end

-- Main state: number the threads so each can make distinct ids, keep them for done().
local threads = {}
function setup(thread)
   threads[#threads + 1] = thread
   thread:set("tid", #threads)
end

-- Extra per-thread counters a workload wants summed in done() (names of thread globals).
bench.counters = {}

function done(summary, latency, requests)
   local e = summary.errors
   local seconds = summary.duration / 1e6
   local extra = ""
   for _, name in ipairs(bench.counters) do
      local total = 0
      for _, t in ipairs(threads) do total = total + (tonumber(t:get(name)) or 0) end
      extra = extra .. string.format(" %s=%d", name, total)
   end
   io.write(string.format(
      "BENCH_RESULT requests=%d duration_us=%d rps=%.1f p50_us=%d p99_us=%d non2xx=%d errors=%d%s\n",
      summary.requests, summary.duration, summary.requests / seconds,
      latency:percentile(50), latency:percentile(99), e.status,
      e.connect + e.read + e.write + e.timeout, extra))
end
