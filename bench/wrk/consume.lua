-- W3: POST /v1/evaluations/{eventId}/consumption, cycling through the pool of evaluations in
-- BENCH_POOL (lines "eventId insightId", made by prefill.lua). Each thread starts at its own
-- offset. The first report of an evaluation inserts a row; a repeated identical report is also
-- 204 but changes nothing (it still reads inside the writer's transaction).
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")

local pool, i

function init(args)
   pool = {}
   for line in io.lines(os.getenv("BENCH_POOL")) do
      local event, insight = string.match(line, "^(%S+) (%S+)$")
      if event then pool[#pool + 1] = { event, insight } end
   end
   assert(#pool > 0, "empty pool " .. tostring(os.getenv("BENCH_POOL")))
   local threads = tonumber(os.getenv("BENCH_THREADS") or "1")
   i = math.floor(((tid or 1) - 1) * #pool / threads)
end

function request()
   i = i % #pool + 1
   local e = pool[i]
   return wrk.format("POST", "/v1/evaluations/" .. e[1] .. "/consumption", bench.headers(),
      '{"status":"usedIncreasedFriction","insightIdsUsed":["' .. e[2] .. '"]}')
end
