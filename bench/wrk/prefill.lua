-- Makes the W3 pool: evaluations (body template BENCH_BODY) whose eventId and insightId are
-- appended to BENCH_POOL_OUT.<thread> as "eventId insightId" lines. Not a measured workload.
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")
bench.counters = { "ok200" }

local parts, n, out

function init(args)
   parts = bench.template(os.getenv("BENCH_BODY"))
   n, ok200 = 0, 0
   out = assert(io.open(os.getenv("BENCH_POOL_OUT") .. "." .. tostring(tid or 0), "w"))
   out:setvbuf("line")
end

function request()
   n = n + 1
   return wrk.format("POST", "/v1/evaluations", bench.headers(),
      bench.fill(parts, string.format("pool-%d-%d", tid or 0, n)))
end

function response(status, headers, body)
   if status ~= 200 then return end
   ok200 = ok200 + 1
   local event = string.match(body, '"eventId":"([^"]+)"')
   local insight = string.match(body, '"insightId":"([^"]+)"')
   if event and insight then out:write(event, " ", insight, "\n") end
end
