#!/bin/sh
# The web capture kit in a real browser (issue 35): Debian's chromium and chromium-driver, driven
# headless by the pinned Selenium of e2e/requirements-console.txt, on the payment page of
# `insightd-demo --web` against a live release daemon. The demo's headers are checked with curl
# first (CSP without inline code, nosniff); then e2e/capture_test.py types, pastes, composes and
# switches tabs as a person would, checks each captured object against what was done and against
# openapi/, the answers of insightd, and that a canary typed and pasted reaches no request, log or
# state file.
#
# Usage: e2e/capture.sh BIN_DIR       (BIN_DIR holds release insightd, insightctl and insightd-demo)
#
# Environment:
#   PYTHON          interpreter for the venv (default python3)
#   CONSOLE_VENV    the browser tests' venv (default .venv-console; rebuilt when the pins change)
#   CAPTURE_OBJECTS where the captured objects are written, one JSON file per session (default
#                   .build/capture-objects), to replay against another model
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=$(cd "${1:-$ROOT/.build/release}" && pwd)
for tool in insightd insightctl insightd-demo; do
    [ -x "$BIN/$tool" ] || { echo "capture: $BIN/$tool not found (build with: swift build -c release)" >&2; exit 2; }
done
for tool in chromium chromedriver; do
    command -v "$tool" >/dev/null || { echo "capture: $tool not found (Debian: apt-get install chromium chromium-driver)" >&2; exit 2; }
done

VENV=${CONSOLE_VENV:-$ROOT/.venv-console}
sh "$ROOT/scripts/venv.sh" "$VENV" "$ROOT/e2e/requirements-console.txt" capture

WORK=$(mktemp -d)
LOG="$WORK/insightd.log"
PID=""
cleanup() {
    status=$?
    [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null
    [ "$status" != 0 ] && { echo "capture: the daemon's log:" >&2; tail -20 "$LOG" >&2; }
    rm -rf "$WORK"
    exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

export INSIGHTD_STATE_DIR="$WORK/state" INSIGHTD_LISTEN=127.0.0.1:0 INSIGHTD_METRICS_LISTEN=127.0.0.1:0 INSIGHTD_MODELS_DIR="$ROOT/models" INSIGHTD_THREADS=2
"$BIN/insightctl" init >/dev/null
"$BIN/insightd" 2>>"$LOG" &
PID=$!
. "$HERE/lib.sh"
wait_ready "$LOG" "$PID" || { echo "capture: insightd did not become ready" >&2; exit 1; }
echo "capture: insightd at http://127.0.0.1:$PORT"
KEY=$("$BIN/insightctl" callers create --name payment-page --roles evaluate --environment sandbox --json | jq -r .apiKey)

# The page's headers, from a demo of its own (the test starts another behind its recording proxy).
INSIGHTD_API_KEY=$KEY "$BIN/insightd-demo" --web --listen 127.0.0.1:0 --url "http://127.0.0.1:$PORT" >"$WORK/headers-demo.log" 2>&1 &
DEMO=$!
for _ in $(seq 1 50); do grep -q "payment page is at" "$WORK/headers-demo.log" && break; sleep 0.1; done
PAGE=$(sed -n 's/.*the payment page is at \([^ ]*\).*/\1/p' "$WORK/headers-demo.log")
[ -n "$PAGE" ] || { kill "$DEMO"; echo "capture: FAIL: insightd-demo --web did not start: $(cat "$WORK/headers-demo.log")" >&2; exit 1; }
curl -sf -D "$WORK/headers" -o "$WORK/index.html" "$PAGE"
curl -sf -o "$WORK/kit.js" "${PAGE}insight-capture.js"
# Bad input to the demo's backend: a clear status, and the demo keeps serving.
status() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
head -c 600000 /dev/zero | tr '\0' ' ' >"$WORK/large"
for case in "400 -X POST -d {nonsense} ${PAGE}api/payments" \
            "400 -X POST -d {\"amountBand\":\"low\"} ${PAGE}api/payments" \
            "422 -X POST -d {\"amountBand\":\"low\",\"newPayee\":false,\"interaction\":{\"events\":[{\"t\":5,\"type\":\"submit\"}]}} ${PAGE}api/payments" \
            "413 -X POST --data-binary @$WORK/large ${PAGE}api/payments" \
            "404 ${PAGE}nowhere" "405 -X DELETE ${PAGE}"; do
    set -- $case
    want=$1; shift
    got=$(status "$@")
    [ "$got" = "$want" ] || { kill "$DEMO"; echo "capture: FAIL: $* answered $got, not $want" >&2; exit 1; }
done
[ "$(status "$PAGE")" = 200 ] || { kill "$DEMO"; echo "capture: FAIL: the demo stopped serving after bad input" >&2; exit 1; }
kill "$DEMO"; wait "$DEMO" 2>/dev/null || true
for header in "content-security-policy: default-src 'none'; script-src 'self';" "x-content-type-options: nosniff"; do
    tr -d '\r' <"$WORK/headers" | grep -qi "^$header" || { echo "capture: FAIL: the page lacks '$header'" >&2; cat "$WORK/headers" >&2; exit 1; }
done
if grep -Eqi '<script>|<style|style="| on[a-z]+="|https?://' "$WORK/index.html"; then
    echo "capture: FAIL: the page has inline script or style, or loads from elsewhere" >&2; exit 1
fi
cmp -s "$WORK/kit.js" "$ROOT/capture/web/insight-capture.js" || { echo "capture: FAIL: the demo serves another kit than capture/web's" >&2; exit 1; }
echo "capture: the page's headers (CSP, nosniff), no inline code, the repository's kit, bad input (400, 422, 413, 404, 405): ok"

export CAPTURE_INSIGHTD_URL="http://127.0.0.1:$PORT" CAPTURE_KEY="$KEY" CAPTURE_DEMO="$BIN/insightd-demo" \
       CAPTURE_STATE="$WORK/state" CAPTURE_LOGS="$LOG" CAPTURE_OPENAPI="$ROOT/openapi/openapi.json" CAPTURE_WORK="$WORK" \
       CAPTURE_OBJECTS=${CAPTURE_OBJECTS:-$ROOT/.build/capture-objects}
started=$(date +%s)
"$VENV/bin/python" "$HERE/capture_test.py"
echo "capture: passed in $(( $(date +%s) - started ))s"
kill -0 "$PID" 2>/dev/null || { echo "capture: FAIL: insightd died" >&2; exit 1; }
