#!/bin/sh
# API fuzzing from the spec (issue 9, item 1): runs schemathesis with openapi/openapi.json against
# the real insightd, every phase (examples, coverage, fuzzing, stateful) and every check, and
# fails on any server error or any disagreement between a response and the document, or when the
# run did not reach every operation with ids that exist: the document's links must have been
# followed and consumption reports answered 204/409 (issue 20, item 8; e2e/api_fuzz_report.py).
#
# Usage: e2e/api-fuzz.sh BIN_DIR            (BIN_DIR holds release insightd and insightctl)
#
# Environment:
#   PYTHON               interpreter for the venv (default python3; 3.11 is what the pins are for)
#   API_FUZZ_VENV        the venv (default .venv-api at the repository root; rebuilt when
#                        e2e/requirements-api.txt changes)
#   API_FUZZ_SEED        a seed to replay a run exactly (each run prints its seed)
#   API_FUZZ_EXAMPLES    test cases per operation and phase (default: e2e/schemathesis.toml)
#   API_FUZZ_REPORT_DIR  keep the JUnit report, the NDJSON event log and the daemon log here
#   API_FUZZ_SPEC        the OpenAPI document (default openapi/openapi.json), e.g. to try a fix
#   API_FUZZ_CONFIG      the schemathesis configuration (default e2e/schemathesis.toml)
#   API_FUZZ_TIMEOUT     seconds before a stalled run is stopped and failed (default 600)
#   any further arguments after BIN_DIR go to `schemathesis run` (e.g. --include-operation-id X)
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=$(cd "${1:-$ROOT/.build/release}" && pwd)
[ $# -gt 0 ] && shift
for tool in insightd insightctl; do
    [ -x "$BIN/$tool" ] || { echo "api-fuzz: $BIN/$tool not found (build with: swift build -c release)" >&2; exit 2; }
done

# The pinned schemathesis, in a venv recreated whenever the pins change.
VENV=${API_FUZZ_VENV:-$ROOT/.venv-api}
REQUIREMENTS="$ROOT/e2e/requirements-api.txt"
sh "$ROOT/scripts/venv.sh" "$VENV" "$REQUIREMENTS" api-fuzz
# The report's reader first, on recorded event logs of every shape schemathesis writes.
"$VENV/bin/python" "$HERE/test_api_fuzz_report.py" 2>&1 | tail -1 | grep -qx OK ||
    { echo "api-fuzz: FAIL: e2e/test_api_fuzz_report.py" >&2; "$VENV/bin/python" "$HERE/test_api_fuzz_report.py" >&2; exit 1; }
echo "api-fuzz: the report's reader reads every recorded event shape (e2e/test_api_fuzz_report.py)"

WORK=$(mktemp -d)
LOG="$WORK/insightd.log"
PID=""
cleanup() {
    status=$?
    [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null
    if [ -n "${API_FUZZ_REPORT_DIR:-}" ]; then
        mkdir -p "$API_FUZZ_REPORT_DIR" && cp -r "$WORK/report/." "$LOG" "$API_FUZZ_REPORT_DIR/" 2>/dev/null || true
    fi
    rm -rf "$WORK"
    exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The daemon: release binaries, a fresh state directory, any free port. The device limit is
# lifted because generated requests reuse a handful of device identifiers (it has its own tests).
export INSIGHTD_STATE_DIR="$WORK/state" INSIGHTD_LISTEN=127.0.0.1:0 INSIGHTD_METRICS_LISTEN=127.0.0.1:0 INSIGHTD_MODELS_DIR="$ROOT/models" \
       INSIGHTD_DEVICE_LIMIT_PER_HOUR=1000000 INSIGHTD_THREADS=2
"$BIN/insightctl" init >/dev/null
"$BIN/insightd" 2>>"$LOG" &
PID=$!
. "$(dirname "$0")/lib.sh"
wait_ready "$LOG" "$PID" || { echo "api-fuzz: insightd did not become ready" >&2; cat "$LOG" >&2; exit 1; }

# The fuzzing caller: production, every role, a quota the fuzzer cannot exhaust. Its peer is the
# caller that admin writes naming the fuzzing caller itself are aimed at (schemathesis_hooks.py).
"$BIN/insightctl" callers create --name api-fuzz --roles evaluate,labels,admin \
    --environment production --rate 1000000 --burst 1000000 --json >"$WORK/caller.json"
"$BIN/insightctl" callers create --name api-fuzz-peer --roles evaluate \
    --environment production --json >"$WORK/peer.json"
INSIGHTD_API_KEY=$(jq -r .apiKey "$WORK/caller.json")
API_FUZZ_CALLER_ID=$(jq -r .callerId "$WORK/caller.json")
API_FUZZ_PEER_CALLER_ID=$(jq -r .callerId "$WORK/peer.json")
export INSIGHTD_API_KEY API_FUZZ_CALLER_ID API_FUZZ_PEER_CALLER_ID INSIGHTD_URL="http://127.0.0.1:$PORT"
echo "api-fuzz: insightd at $INSIGHTD_URL (state $INSIGHTD_STATE_DIR)"

# Evaluations that exist, for consumption reports and labels to name (schemathesis_hooks.py).
INSIGHT='{"type":"isLikelyBeingCoached","schemaVersion":1}'
for i in $(seq 1 16); do
    curl -sf "$INSIGHTD_URL/v1/evaluations" -H "Authorization: Bearer $INSIGHTD_API_KEY" \
        -H 'Content-Type: application/json' \
        -d '{"operationCategory":"payment","insights":['"$INSIGHT,$INSIGHT,$INSIGHT,$INSIGHT"'],
             "subject":{"account":"api-fuzz-'"$i"'"},"interaction":{"events":[{"t":0,"type":"sessionStart"},
             {"t":'"$((i * 700))"',"type":"submit"}]}}' \
        || { echo "api-fuzz: could not create an evaluation" >&2; exit 1; }
    echo
done | jq -s 'map({(.eventId): [.insights[].insightId]}) | add' >"$WORK/known.json"
export API_FUZZ_KNOWN="$WORK/known.json"
# A transparency cursor the daemon handed out, for positive cases to send back: cursors are
# sealed, so one generated from the schema is a documented 422 (schemathesis_hooks.py).
for i in 1 2; do
    curl -sf -o /dev/null "$INSIGHTD_URL/v1/evaluations" -H "Authorization: Bearer $INSIGHTD_API_KEY" \
        -H 'Content-Type: application/json' \
        -d '{"operationCategory":"payment","insights":['"$INSIGHT"'],"subject":{"account":"api-fuzz-cursor"}}' \
        || { echo "api-fuzz: could not create an evaluation" >&2; exit 1; }
done
API_FUZZ_CURSOR=$(curl -sf "$INSIGHTD_URL/v1/subjects/transparency" -H "Authorization: Bearer $INSIGHTD_API_KEY" \
    -H 'Content-Type: application/json' -d '{"subject":{"account":"api-fuzz-cursor"},"limit":1}' | jq -r .cursor)
[ -n "$API_FUZZ_CURSOR" ] && [ "$API_FUZZ_CURSOR" != null ] || { echo "api-fuzz: no transparency cursor handed out" >&2; exit 1; }
export API_FUZZ_CURSOR

# Extra arguments narrow the run (one operation, one phase): the reach check below then does not apply.
NARROWED=$#
set -- --config-file "${API_FUZZ_CONFIG:-$ROOT/e2e/schemathesis.toml}" run "${API_FUZZ_SPEC:-$ROOT/openapi/openapi.json}" \
    --report junit,ndjson --report-dir "$WORK/report" \
    ${API_FUZZ_SEED:+--seed "$API_FUZZ_SEED"} ${API_FUZZ_EXAMPLES:+--max-examples "$API_FUZZ_EXAMPLES"} "$@"
# Caches (schemathesis' and hypothesis') go into the venv, not the work tree.
export API_FUZZ_CACHE_DIR="$VENV/schemathesis-cache" HYPOTHESIS_STORAGE_DIRECTORY="$VENV/hypothesis"
started=$(date +%s)
rc=0
cd "$ROOT"
# A hard cap: generation that stalls (see before_load_schema in the hooks) must fail, not hang.
timeout "${API_FUZZ_TIMEOUT:-600}" "$VENV/bin/schemathesis" --no-color "$@" || rc=$?
[ "$rc" = 124 ] && echo "api-fuzz: FAIL: schemathesis did not finish within ${API_FUZZ_TIMEOUT:-600}s" >&2
echo "api-fuzz: schemathesis exited $rc after $(( $(date +%s) - started ))s"

# Passing checks are not enough: every link of the document must have been followed, and
# consumption reports must have reached evaluations that exist (e2e/api_fuzz_report.py).
if [ "$NARROWED" = 0 ]; then
    "$VENV/bin/python" "$HERE/api_fuzz_report.py" "${API_FUZZ_SPEC:-$ROOT/openapi/openapi.json}" "$WORK"/report/ndjson-*.ndjson || rc=1
else
    echo "api-fuzz: a narrowed run (arguments given): the link and consumption reach check is skipped"
fi

# The daemon must have survived, and logged no 5xx the checks could have missed.
kill -0 "$PID" 2>/dev/null || { echo "api-fuzz: FAIL: insightd died" >&2; tail -50 "$LOG" >&2; exit 1; }
errors=$(grep -c '"level":"error"' "$LOG" || true)
if [ "$errors" != 0 ]; then
    echo "api-fuzz: FAIL: insightd logged $errors error lines:" >&2
    grep '"level":"error"' "$LOG" | head -20 >&2
    rc=1
fi
kill -TERM "$PID"
wait "$PID" || { echo "api-fuzz: FAIL: insightd did not stop cleanly" >&2; rc=1; }
PID=""
[ "$rc" = 0 ] && echo "api-fuzz: passed" || echo "api-fuzz: FAILED (exit $rc)"
exit "$rc"
