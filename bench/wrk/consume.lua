-- W3: POST /v1/evaluations/{eventId}/consumption, cycling through the pool of evaluations in
-- BENCH_POOL (lines "eventId insightId"; bench/run.sh takes the unreported evaluations of the
-- runs before from the database). Every thread prepares all requests in init and starts at its
-- own offset. The first report of an evaluation inserts a row; a repeated identical report is
-- also 204 but changes nothing (it still reads inside the writer's transaction).
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")

local requests, i

function init(args)
   requests = {}
   for line in io.lines(os.getenv("BENCH_POOL")) do
      local event, insight = string.match(line, "^(%S+) (%S+)$")
      if event then requests[#requests + 1] = bench.report(event, insight) end
   end
   assert(#requests > 0, "empty pool " .. tostring(os.getenv("BENCH_POOL")))
   local threads = tonumber(os.getenv("BENCH_THREADS") or "1")
   i = math.floor(((tid or 1) - 1) * #requests / threads)
end

function request()
   i = i % #requests + 1
   return requests[i]
end
