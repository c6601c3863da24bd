-- W4: evaluate, then consume. Each thread alternates: an evaluation (body template BENCH_BODY,
-- from a ring of BENCH_RING prepared requests as in evaluate.lua), then a consumption report
-- for the oldest evaluation it has an answer for (eventId and insightId parsed from the
-- response body); when none is waiting yet, another evaluation.
-- Counts answers by status: ok200 (evaluations), ok204 (reports), other.
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")
bench.counters = { "ok200", "ok204", "other" }

local ring, n, queue, head, evaluateNext

function init(args)
   ring = bench.ring(bench.template(os.getenv("BENCH_BODY")), function(parts, id)
      return wrk.format("POST", "/v1/evaluations", bench.headers(), bench.fill(parts, id))
   end)
   n, queue, head, evaluateNext = 0, {}, 1, true
   ok200, ok204, other = 0, 0, 0
end

function request()
   local sendEvaluation = evaluateNext or head > #queue
   evaluateNext = not evaluateNext
   if sendEvaluation then
      n = n % #ring + 1
      return ring[n]
   end
   local e = queue[head]
   queue[head] = nil
   head = head + 1
   return bench.report(e[1], e[2])
end

function response(status, headers, body)
   if status == 200 then
      ok200 = ok200 + 1
      local event = string.match(body, '"eventId":"([^"]+)"')
      local insight = string.match(body, '"insightId":"([^"]+)"')
      if event and insight then queue[#queue + 1] = { event, insight } end
   elseif status == 204 then
      ok204 = ok204 + 1
   else
      other = other + 1
   end
end
