-- W1 / W2: POST /v1/evaluations with the body template in BENCH_BODY (bench/run.sh writes it
-- with `insightd-bench bodies`), a fresh subject (account, device, counterparty) per request.
dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "common.lua")

local parts, n, prefix

function init(args)
   parts = bench.template(os.getenv("BENCH_BODY"))
   n = 0
   prefix = string.format("%s-%d-", bench.tag, tid or 0)
end

function request()
   n = n + 1
   return wrk.format("POST", "/v1/evaluations", bench.headers(), bench.fill(parts, prefix .. n))
end
