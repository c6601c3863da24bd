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

-- A body template split at its @ID@ placeholders; bench.fill joins it around an id.
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
bench.fill = function(parts, id)
   return table.concat(parts, id)
end

-- BENCH_RING requests made by make(parts, id) with ids "<tag>-<thread>-<n>", n = 1..BENCH_RING.
bench.ring = function(parts, make)
   local size = tonumber(os.getenv("BENCH_RING") or "4096")
   local out = {}
   for n = 1, size do
      out[n] = make(parts, string.format("%s-%d-%d", bench.tag, tid or 0, n))
   end
   return out
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
