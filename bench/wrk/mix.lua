-- W4: evaluate, then consume. Each thread alternates: an evaluation (body template BENCH_BODY,
-- its subjects from a ring of BENCH_RING, a requestId of its own, as in evaluate.lua), then a consumption report
-- for the oldest evaluation it has an answer for (eventId and insightId parsed from the
-- response body); while no answer is waiting, more evaluations. In the long run evaluations
-- and reports are one to one (each answer queues exactly one report).
-- Counts answers by status: ok200 (evaluations), ok204 (reports), other.
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")
bench.counters = { "ok200", "ok204", "other" }

local nextEvaluation, queue, head, tail, evaluateNext

function init(args)
   nextEvaluation = bench.evaluations(bench.template(os.getenv("BENCH_BODY")), function(body)
      return wrk.format("POST", "/v1/evaluations", bench.headers(), body)
   end)
   queue, head, tail, evaluateNext = {}, 1, 0, true
   ok200, ok204, other = 0, 0, 0
end

function request()
   if evaluateNext or head > tail then
      -- After an evaluation, a report is due as soon as an answer is waiting.
      evaluateNext = false
      return nextEvaluation()
   end
   evaluateNext = true
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
      if event and insight then
         tail = tail + 1
         queue[tail] = { event, insight }
      end
   elseif status == 204 then
      ok204 = ok204 + 1
   else
      other = other + 1
   end
end
