-- W1 / W2: POST /v1/evaluations with the body template in BENCH_BODY (bench/run.sh writes it
-- with `insightd-bench bodies`). Each thread prepares BENCH_RING (default 4096) requests with
-- distinct subjects (account, device, counterparty, requestId) in init and cycles through
-- them, so the client does no per-request string building: a 7.5 KB body built per request
-- costs wrk about a third of nginx's rate on 2 cores. A device recurs every BENCH_RING requests
-- of its thread, well under insightd's per-device limit (120 per hour) in a 10 s run.
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")

local ring, i

function init(args)
   ring = bench.ring(bench.template(os.getenv("BENCH_BODY")), function(parts, id)
      return wrk.format("POST", "/v1/evaluations", bench.headers(), bench.fill(parts, id))
   end)
   i = 0
end

function request()
   i = i % #ring + 1
   return ring[i]
end
