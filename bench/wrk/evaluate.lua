-- W1 / W2: POST /v1/evaluations with the body template in BENCH_BODY (bench/run.sh writes it
-- with `insightd-bench bodies`). Each thread prepares BENCH_RING (default 4096) requests with
-- distinct subjects (account, device, counterparty) in init and cycles through them, putting a
-- requestId of its own into each (bench.evaluations: one concatenation per request, so the
-- client does little per-request string work: a 7.5 KB body built from a table per request cost
-- wrk about a third of nginx's rate on 2 cores). A device recurs every BENCH_RING requests of
-- its thread, well under insightd's per-device limit (120 per hour) in a 10 s run.
--
-- BENCH_THINK_MS (optional): each connection waits a random time, exponential with this mean,
-- between an answer and its next request, so that 64 connections offer a load below saturation
-- (about connections / (think + latency) requests per second). wrk's latency never includes
-- the wait. Unset: back to back, the machine's saturation.
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")

local nextRequest

function init(args)
   nextRequest = bench.evaluations(bench.template(os.getenv("BENCH_BODY")), function(body)
      return wrk.format("POST", "/v1/evaluations", bench.headers(), body)
   end)
end

function request()
   return nextRequest()
end

local think = tonumber(os.getenv("BENCH_THINK_MS") or "")
if think and think > 0 then
   local seeded = false
   function delay()
      -- Each thread its own sequence (tid is set before the first request).
      if not seeded then math.randomseed(os.time() * 100 + (tid or 0)); seeded = true end
      return math.floor(-think * math.log(1 - math.random()))
   end
end
