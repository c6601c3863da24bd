#!/usr/bin/env bash
# bench/restart.sh COUNT [STATE_DIR] — a restart at scale (issue 22): a benchmark, not a test; it prints
# figures and fails only when it cannot run.
#
# 1. builds insightd, insightctl and insightd-bench in release mode (unless BIN_DIR is given),
# 2. creates a caller and fills the store with COUNT synthetic evaluations spread over the last
#    7 days (`insightd-bench history`: bulk inserts into the store's own schema, see
#    Sources/InsightStorage/SyntheticHistory.swift); with STATE_DIR (one kept by RESTART_KEEP=1),
#    starts on that store instead and fills nothing (COUNT is then ignored),
# 3. starts insightd on it and polls /readyz and /proc/PID/status every 20 ms: the time until
#    /readyz answers 200, the time until its body says `"velocity":"ready"`, the peak resident
#    set (VmHWM) at that moment, and the replay's rate from the `velocity rebuilt` log line (a
#    daemon whose /readyz has no `velocity` member rebuilt before turning ready),
# 4. serves evaluations for a few seconds (wrk, W2-like, random accounts) and prints the
#    resident set while serving.
#
# Environment (all optional):
#   BIN_DIR=                 use the binaries there instead of building
#   RESTART_KEEP=0           1 keeps the work directory (database, log)
#   RESTART_SERVE=5s         how long to serve after the rebuild (wrk -d)
#   SWIFT=swift
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
COUNT=${1:?usage: bench/restart.sh COUNT [STATE_DIR]}
STATE=${2:-}
SWIFT=${SWIFT:-swift}
SERVE=${RESTART_SERVE:-5s}
say() { printf '%s\n' "$*"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
kib() { awk '/^'"$2"':/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
mib() { awk -v k="$1" 'BEGIN { printf "%.0f MiB", k / 1024 }'; }

if [ -n "${BIN_DIR:-}" ]; then
    BIN=$BIN_DIR
else
    for product in insightd insightctl insightd-bench; do "$SWIFT" build -c release --product "$product" >/dev/null; done
    BIN=$ROOT/.build/release
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/insightd-restart.XXXXXX")
PID=""
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    [ "${RESTART_KEEP:-0}" = 1 ] && say "kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT
export INSIGHTD_STATE_DIR="${STATE:-$WORK/state}"
CREATED=$("$BIN/insightctl" --create callers create --name restart --roles evaluate --environment production --rate 100000 --burst 100000 --json)
KEY=$(echo "$CREATED" | jq -r .apiKey)
if [ -z "$STATE" ]; then
    say "== fill: $COUNT evaluations over the last 7 days"
    T=$(now)
    "$BIN/insightd-bench" history "$INSIGHTD_STATE_DIR/insightd.db" "$(echo "$CREATED" | jq -r .callerId)" "$COUNT" | tail -1
    say "fill: $(since "$T") s, database $(du -m "$INSIGHTD_STATE_DIR/insightd.db" | cut -f1) MB"
fi
sync

say "== start"
LOG=$WORK/insightd.log
T=$(now)
INSIGHTD_LISTEN=127.0.0.1:0 INSIGHTD_METRICS_LISTEN=127.0.0.1:0 INSIGHTD_MODELS_DIR="$ROOT/models" "$BIN/insightd" 2>"$LOG" &
PID=$!
PORT="" READY="" PEAK_DURING=0 SAMPLES=0 ANSWERED=0
while :; do
    kill -0 "$PID" 2>/dev/null || { cat "$LOG"; say "insightd exited"; exit 1; }
    [ -z "$PORT" ] && PORT=$(grep '"msg":"insightd ready"' "$LOG" 2>/dev/null | tail -1 | jq -r '.listen' | sed 's/.*://')
    if [ -n "$PORT" ]; then
        BODY=$(curl -s -m 2 "http://127.0.0.1:$PORT/readyz" || true)
        if [ -z "$READY" ] && echo "$BODY" | grep -q '"status":"ready"'; then
            READY=$(since "$T")
            # An evaluation while velocity is rebuilding.
            ANSWERED=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
                -d '{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"subject":{"account":"restart-probe"}}' \
                "http://127.0.0.1:$PORT/v1/evaluations")
        fi
        echo "$BODY" | grep -q '"velocity":"ready"' && break
        [ -n "$READY" ] && ! echo "$BODY" | grep -q '"velocity"' && break
    fi
    SAMPLES=$((SAMPLES + 1))
    sleep 0.02
done
VELOCITY=$(since "$T")
PEAK=$(kib "$PID" VmHWM)
RSS_READY=$(kib "$PID" VmRSS)
REBUILT=$(grep '"msg":"velocity rebuilt"' "$LOG" | tail -1)
[ -n "$REBUILT" ] || { say "no velocity rebuilt line"; exit 1; }
EVALUATIONS=$(echo "$REBUILT" | jq -r .evaluations)
MS=$(echo "$REBUILT" | jq -r .ms)
say "readyz 200 after:            $READY s (an evaluation then: $ANSWERED)"
say "velocity ready after:        $VELOCITY s"
say "replayed:                    $EVALUATIONS evaluations in $MS ms = $(awk -v e="$EVALUATIONS" -v m="$MS" 'BEGIN { printf "%.0f", e / (m / 1000) }') evaluations/s ($(echo "$REBUILT" | jq -r .subjects) subjects)"
say "peak RSS until then (VmHWM): $(mib "$PEAK")"
say "RSS when velocity ready:     $(mib "$RSS_READY")"

say "== serve $SERVE"
cat >"$WORK/serve.lua" <<'LUA'
local key = os.getenv("KEY")
local n = 0
request = function()
  n = n + 1
  local body = '{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],' ..
    '"subject":{"account":"a' .. math.random(1, 1000000) .. '","device":"d' .. math.random(1, 1000000) ..
    '","counterparty":"c' .. math.random(1, 100000) .. '"}}'
  return wrk.format("POST", "/v1/evaluations", {["Authorization"] = "Bearer " .. key, ["Content-Type"] = "application/json"}, body)
end
LUA
KEY=$KEY wrk -t 2 -c 16 -d "$SERVE" -s "$WORK/serve.lua" "http://127.0.0.1:$PORT" | grep -E 'Requests/sec|Non-2xx' || true
say "RSS while serving:           $(mib "$(kib "$PID" VmRSS)") (VmHWM $(mib "$(kib "$PID" VmHWM)"))"
