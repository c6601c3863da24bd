#!/bin/sh
# Crash safety: evaluations, consumption reports and labels under concurrent load while the
# daemon is killed with SIGKILL several times. Afterwards every evaluation that was answered 200
# must still accept its consumption report, every label answered "accepted" must be present,
# and the database must pass PRAGMA integrity_check.
# Usage: e2e/crash.sh BIN_DIR [ROUNDS]
set -eu
. "$(dirname "$0")/lib.sh"
BIN=$(cd "${1:-.build/release}" && pwd)
ROUNDS=${2:-3}
WORKERS=4
WORK=$(mktemp -d)
LOG="$WORK/insightd.log"
PID=""
cleanup() { [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
fail() { echo "crash: FAIL: $*" >&2; tail -20 "$LOG" >&2 || true; exit 1; }

export INSIGHTD_STATE_DIR="$WORK/state" INSIGHTD_LISTEN=127.0.0.1:0 INSIGHTD_METRICS_LISTEN=127.0.0.1:0 INSIGHTD_DEVICE_LIMIT_PER_HOUR=1000000
start() {
    "$BIN/insightd" 2>>"$LOG" &
    PID=$!
    wait_ready "$LOG" "$PID" || fail "insightd did not become ready"
}
start
KEY=$("$BIN/insightctl" callers create --name crash --roles evaluate,labels --environment production \
      --rate 100000 --burst 100000 --json | jq -r .apiKey)
EVAL='{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"subject":{"account":"a","device":"d"}}'

# One worker: evaluate, then (every other time) report consumption and label; record what was acknowledged.
worker() {
    n=0
    while [ ! -f "$WORK/stop" ]; do
        n=$((n + 1))
        port=$(cat "$WORK/port")
        body=$(curl -s --max-time 5 -w '\n%{http_code}' -X POST "http://127.0.0.1:$port/v1/evaluations" \
               -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' -d "$EVAL" 2>/dev/null) || continue
        [ "$(echo "$body" | tail -1)" = 200 ] || continue
        event=$(echo "$body" | head -1 | jq -r .eventId)
        insight=$(echo "$body" | head -1 | jq -r '.insights[0].insightId')
        echo "$event" >>"$WORK/acked-$1"
        [ $((n % 2)) = 0 ] || continue
        label=$(curl -s --max-time 5 -X POST "http://127.0.0.1:$port/v1/labels" -H "Authorization: Bearer $KEY" \
                -H "Idempotency-Key: w$1-$n" -H 'Content-Type: application/json' \
                -d '{"labels":[{"insightId":"'"$insight"'","outcome":"confirmedLegitimate","discoveredAt":"2026-11-01"}]}' 2>/dev/null) || continue
        [ "$(echo "$label" | jq -r '.results[0].status' 2>/dev/null)" = accepted ] && echo "$insight" >>"$WORK/labelled-$1"
    done
}
echo "$PORT" >"$WORK/port"
WORKER_PIDS=""
for w in $(seq 1 $WORKERS); do worker "$w" & WORKER_PIDS="$WORKER_PIDS $!"; done

for round in $(seq 1 "$ROUNDS"); do
    sleep 2
    kill -9 "$PID"; wait "$PID" 2>/dev/null || true
    start
    echo "$PORT" >"$WORK/port"
done
# A graceful stop mid-load: exit status 0, and nothing acknowledged lost either.
sleep 2
kill -TERM "$PID"
wait "$PID" || fail "SIGTERM under load: exit status $?"
grep -q '"insightd stopped"' "$LOG" || fail "SIGTERM under load: no stop log"
start
echo "$PORT" >"$WORK/port"
sleep 1
touch "$WORK/stop"
for w in $WORKER_PIDS; do wait "$w" 2>/dev/null || true; done
port=$(cat "$WORK/port")
cat "$WORK"/acked-* >"$WORK/acked" 2>/dev/null || :
cat "$WORK"/labelled-* >"$WORK/labelled" 2>/dev/null || :
acked=$(wc -l <"$WORK/acked")
[ "$acked" -gt 0 ] || fail "no evaluation was acknowledged"
lost=0
while read -r event; do
    code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$port/v1/evaluations/$event/consumption" \
           -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' -d '{"status":"notUsedNotNeeded"}')
    [ "$code" = 204 ] || lost=$((lost + 1))
done <"$WORK/acked"
[ "$lost" = 0 ] || fail "$lost of $acked acknowledged evaluations were lost"
labelled=$(wc -l <"$WORK/labelled")
if [ "$labelled" -gt 0 ]; then
    missing=$(while read -r insight; do
        sqlite3 "$WORK/state/insightd.db" "SELECT count(*) FROM labels WHERE insight_id = '$insight'"
    done <"$WORK/labelled" | grep -c '^0$' || true)
    [ "$missing" = 0 ] || fail "$missing of $labelled accepted labels are missing"
fi
[ "$(sqlite3 "$WORK/state/insightd.db" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check"
echo "crash: ok: $ROUNDS kills and one SIGTERM under load; $acked acknowledged evaluations and $labelled accepted labels all survived; integrity ok"
