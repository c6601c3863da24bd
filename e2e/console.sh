#!/bin/sh
# The admin console in a real browser (issue 25): Debian's chromium and chromium-driver, driven
# headless by the pinned Selenium of e2e/requirements-console.txt, against a live release daemon.
# The daemon's headers for /console/ are checked with curl first (CSP, nosniff, ETag); then
# e2e/console_test.py signs in (and out), watches a caller that never reports become penalised
# with its overdue count, resets it, changes a rate and revokes a key, and takes screenshots.
#
# Usage: e2e/console.sh BIN_DIR            (BIN_DIR holds release insightd and insightctl)
#
# Environment:
#   PYTHON                 interpreter for the venv (default python3)
#   CONSOLE_VENV           the venv (default .venv-console; rebuilt when the pins change)
#   CONSOLE_SCREENSHOTS    where the screenshots go (default .build/console-screenshots); the
#                          ones docs/console/ shows are copied there from it
#   CONSOLE_UPDATE_DOCS    1: copy the screenshots docs/console/ shows over them (default 0: the
#                          tree is left as it was found; `make console-screenshots` sets it)
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BIN=$(cd "${1:-$ROOT/.build/release}" && pwd)
for tool in insightd insightctl; do
    [ -x "$BIN/$tool" ] || { echo "console: $BIN/$tool not found (build with: swift build -c release)" >&2; exit 2; }
done
for tool in chromium chromedriver; do
    command -v "$tool" >/dev/null || { echo "console: $tool not found (Debian: apt-get install chromium chromium-driver)" >&2; exit 2; }
done

VENV=${CONSOLE_VENV:-$ROOT/.venv-console}
REQUIREMENTS="$ROOT/e2e/requirements-console.txt"
sh "$ROOT/scripts/venv.sh" "$VENV" "$REQUIREMENTS" console

WORK=$(mktemp -d)
LOG="$WORK/insightd.log"
PID=""
cleanup() {
    status=$?
    [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null
    [ "$status" != 0 ] && { echo "console: the daemon's log:" >&2; tail -30 "$LOG" >&2; }
    rm -rf "$WORK"
    exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Small settings, so that a caller that never reports is penalised within about a minute: the
# shortest grace (60 s), no overdue allowance, recounts every second.
export INSIGHTD_STATE_DIR="$WORK/state" INSIGHTD_LISTEN=127.0.0.1:0 INSIGHTD_METRICS_LISTEN=127.0.0.1:0 INSIGHTD_MODELS_DIR="$ROOT/models" \
       INSIGHTD_THREADS=2 INSIGHTD_CONSUMPTION_GRACE=60 INSIGHTD_OVERDUE_ALLOWANCE_PERCENT=0 \
       INSIGHTD_OVERDUE_ALLOWANCE_MIN=0 INSIGHTD_COMPLIANCE_REFRESH=1 INSIGHTD_CREDENTIAL_CACHE=0 \
       INSIGHTD_MODEL_SHADOW=1.0
"$BIN/insightctl" init >/dev/null
"$BIN/insightd" 2>>"$LOG" &
PID=$!
. "$HERE/lib.sh"
wait_ready "$LOG" "$PID" || { echo "console: insightd did not become ready" >&2; exit 1; }
URL="http://127.0.0.1:$PORT"
echo "console: insightd at $URL"

create() {
    "$BIN/insightctl" callers create --name "$1" --roles "$2" --environment production --rate "$3" --burst "$4" --json
}
create ops admin 100 100 >"$WORK/admin.json"
create payments-backend evaluate 2 20 >"$WORK/skipper.json"
create fraud-desk evaluate,labels 10 20 >"$WORK/reporter.json"
# Another tenant's caller, which the console must never show.
"$BIN/insightctl" callers create --name elsewhere-app --tenant elsewhere --roles evaluate --environment production \
    --json >/dev/null

# The headers /console/ is served with.
curl -sf -D "$WORK/headers" -o "$WORK/index.html" "$URL/console/"
for header in "content-type: text/html; charset=utf-8" "x-content-type-options: nosniff" \
              "content-security-policy: default-src 'self'; script-src 'self'; style-src 'self';"; do
    tr -d '\r' <"$WORK/headers" | grep -qi "^$header" || { echo "console: FAIL: /console/ lacks '$header'" >&2; cat "$WORK/headers" >&2; exit 1; }
done
tr -d '\r' <"$WORK/headers" | grep -qi "frame-ancestors 'none'" || { echo "console: FAIL: CSP lacks frame-ancestors 'none'" >&2; exit 1; }
etag=$(tr -d '\r' <"$WORK/headers" | sed -n 's/^[Ee][Tt][Aa][Gg]: //p')
[ "$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $etag" "$URL/console/")" = 304 ] \
    || { echo "console: FAIL: an unchanged /console/ is not 304" >&2; exit 1; }
[ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/console")" = 301 ] || { echo "console: FAIL: /console is not redirected" >&2; exit 1; }
grep -q '<script type="module" src="app.js">' "$WORK/index.html" || { echo "console: FAIL: no module script" >&2; exit 1; }
if grep -Eqi '<script>|<style|style="|https?://' "$WORK/index.html"; then
    echo "console: FAIL: index.html has inline script or style, or loads from elsewhere" >&2; exit 1
fi
echo "console: /console/ headers: CSP, nosniff, ETag (304), redirect: ok"

export CONSOLE_URL="$URL" CONSOLE_ADMIN_KEY=$(jq -r .apiKey "$WORK/admin.json") \
       CONSOLE_SKIPPER_KEY=$(jq -r .apiKey "$WORK/skipper.json") CONSOLE_REPORTER_KEY=$(jq -r .apiKey "$WORK/reporter.json") \
       CONSOLE_SCREENSHOTS=${CONSOLE_SCREENSHOTS:-$ROOT/.build/console-screenshots} CONSOLE_DOCS="$ROOT/docs/console" \
       CONSOLE_UPDATE_DOCS=${CONSOLE_UPDATE_DOCS:-0}
started=$(date +%s)
"$VENV/bin/python" "$HERE/console_test.py"
echo "console: passed in $(( $(date +%s) - started ))s; screenshots in $CONSOLE_SCREENSHOTS"
kill -0 "$PID" 2>/dev/null || { echo "console: FAIL: insightd died" >&2; exit 1; }
