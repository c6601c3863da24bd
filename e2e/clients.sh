#!/bin/sh
# The client libraries of clients/ against a live daemon (issue 39): first each client's
# operations and enumerations against openapi/ (clients/conformance/check_openapi.py), then each
# client's driver through the conformance scenario (clients/conformance/scenario.json) against a
# release insightd on a free port, with a tampering proxy in front of it for the tampered answer and
# a re-keying one (its own JWKS, answers re-signed) for the pinned keys.
# The contract between this script and a driver: clients/conformance/README.md.
#
# Usage: e2e/clients.sh BIN_DIR [CLIENT...]    (BIN_DIR holds release insightd and insightctl;
#                                                CLIENT: python, typescript, …; default every
#                                                clients/*/conformance.sh)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/e2e/lib.sh"
BIN=$(cd "${1:-$ROOT/.build/release}" && pwd)
[ $# -gt 0 ] && shift
CONFORMANCE="$ROOT/clients/conformance"
for tool in insightd insightctl; do
    [ -x "$BIN/$tool" ] || { echo "clients: $BIN/$tool not found (build with: make build)" >&2; exit 2; }
done
for tool in curl jq python3; do
    command -v "$tool" >/dev/null || { echo "clients: $tool is needed (make deps-test installs it)" >&2; exit 2; }
done
if [ $# -gt 0 ]; then CLIENTS="$*"; else
    CLIENTS=$(for f in "$ROOT"/clients/*/conformance.sh; do [ -f "$f" ] && basename "$(dirname "$f")"; done)
fi
[ -n "$CLIENTS" ] || { echo "clients: no clients/*/conformance.sh" >&2; exit 2; }

WORK=$(mktemp -d)
PID="" PROXY="" REKEYING_PROXY=""
cleanup() {
    [ -z "$PROXY" ] || kill "$PROXY" 2>/dev/null || true
    [ -z "$REKEYING_PROXY" ] || kill "$REKEYING_PROXY" 2>/dev/null || true
    [ -z "$PID" ] || kill -9 "$PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

# 1. Each client's unit tests, then its surface against openapi/ (each conformance.sh builds what
# it needs).
for client in $CLIENTS; do
    echo "clients: $client unit tests"
    sh "$ROOT/clients/$client/conformance.sh" test || { echo "clients: FAIL $client: its unit tests failed" >&2; exit 1; }
done
for client in $CLIENTS; do
    sh "$ROOT/clients/$client/conformance.sh" describe >"$WORK/describe-$client.json" \
        || { echo "clients: FAIL $client: its driver could not describe it" >&2; exit 1; }
done
# shellcheck disable=SC2046 # one file per client
python3 "$CONFORMANCE/check_openapi.py" "$ROOT/openapi/openapi.json" "$CONFORMANCE/contract.json" \
    $(for client in $CLIENTS; do echo "$WORK/describe-$client.json"; done)

# 2. A daemon whose revocations, opt-outs and rotated signing keys take effect at once.
export INSIGHTD_STATE_DIR="$WORK/state"
INSIGHTD_LISTEN=127.0.0.1:0 INSIGHTD_METRICS_LISTEN=127.0.0.1:0 INSIGHTD_MODELS_DIR="$ROOT/models" INSIGHTD_CREDENTIAL_CACHE=0 \
    INSIGHTD_AUTHORIZATION_COOLDOWN=0 INSIGHTD_COMPLIANCE_REFRESH=1 \
    "$BIN/insightd" 2>"$WORK/insightd.log" &
PID=$!
wait_ready "$WORK/insightd.log" "$PID" || { echo "clients: insightd did not become ready" >&2; cat "$WORK/insightd.log" >&2; exit 1; }
URL="http://127.0.0.1:$PORT"
python3 "$CONFORMANCE/tamper_proxy.py" "$URL" >"$WORK/proxy.out" 2>&1 &
PROXY=$!
for _ in $(seq 1 600); do grep -q '^listening' "$WORK/proxy.out" && break; sleep 0.1; done
TAMPERING_URL="http://127.0.0.1:$(sed -n 's/^listening //p' "$WORK/proxy.out")"
python3 "$CONFORMANCE/tamper_proxy.py" --rekey "$URL" >"$WORK/rekeying-proxy.out" 2>&1 &
REKEYING_PROXY=$!
for _ in $(seq 1 600); do grep -q '^listening' "$WORK/rekeying-proxy.out" && break; sleep 0.1; done
grep -q '^listening' "$WORK/rekeying-proxy.out" || { echo "clients: the re-keying proxy did not start" >&2; cat "$WORK/rekeying-proxy.out" >&2; exit 1; }
REKEYING_URL="http://127.0.0.1:$(sed -n 's/^listening //p' "$WORK/rekeying-proxy.out")"

# caller NAME TENANT ENVIRONMENT ROLES [--rate R --burst B]: prints "callerId apiKey".
caller() {
    _name=$1 _tenant=$2 _environment=$3 _roles=$4
    shift 4
    "$BIN/insightctl" callers create --name "$_name" --tenant "$_tenant" --environment "$_environment" \
        --roles "$_roles" "$@" --json | jq -r '.callerId + " " + .apiKey'
}

# 3. Each driver in a tenant of its own, so that no client sees another's labels, opt-outs or
# callers; the scenario's key names are the callers below.
passed=0 failed=0
for client in $CLIENTS; do
    tenant="conformance-$client"
    set -- $(caller sandbox "$tenant" sandbox evaluate,labels); sandbox_key=$2
    set -- $(caller production "$tenant" production evaluate); production_key=$2
    set -- $(caller admin "$tenant" sandbox admin); admin_key=$2
    set -- $(caller throttled "$tenant" sandbox evaluate --rate 0.001 --burst 2); throttled_id=$1 throttled_key=$2
    set -- $(caller revoked "$tenant" sandbox evaluate); revoked_id=$1 revoked_key=$2
    echo "clients: $client"
    if INSIGHT_SCENARIO="$CONFORMANCE/scenario.json" INSIGHT_URL="$URL" INSIGHT_TAMPERING_URL="$TAMPERING_URL" \
        INSIGHT_REKEYING_URL="$REKEYING_URL" INSIGHT_TENANT="$tenant" \
        INSIGHT_KEY_SANDBOX="$sandbox_key" INSIGHT_KEY_PRODUCTION="$production_key" INSIGHT_KEY_ADMIN="$admin_key" \
        INSIGHT_KEY_THROTTLED="$throttled_key" INSIGHT_KEY_REVOKED="$revoked_key" \
        INSIGHT_CALLER_THROTTLED="$throttled_id" INSIGHT_CALLER_REVOKED="$revoked_id" INSIGHT_CALLER_NOBODY=caller_0000000000000000 \
        INSIGHT_ROTATE_COMMAND="INSIGHTD_STATE_DIR='$INSIGHTD_STATE_DIR' '$BIN/insightctl' signing-keys rotate >/dev/null" \
        sh "$ROOT/clients/$client/conformance.sh" run; then
        passed=$((passed + 1))
    else
        echo "clients: FAIL $client: its driver did not pass the scenario"
        failed=$((failed + 1))
    fi
done

# 4. The daemon must have served it all without an error and stop cleanly.
kill -0 "$PID" 2>/dev/null || { echo "clients: FAIL insightd died"; tail -20 "$WORK/insightd.log"; exit 1; }
# The scenario's forced 503 (`evaluation=error:serverError`) is logged as an error, one per
# client; any other error fails.
forced=$(grep -c '"level":"error".*"route":"/v1/evaluations","status":503,.*"code":"serverError"' "$WORK/insightd.log" || true)
if [ "$forced" -gt "$(echo $CLIENTS | wc -w)" ] ||
    grep '"level":"error"' "$WORK/insightd.log" | grep -v '"route":"/v1/evaluations","status":503,.*"code":"serverError"' | head -5 | grep .; then
    echo "clients: FAIL insightd logged errors"; failed=$((failed + 1))
fi
kill -TERM "$PID"
wait "$PID" || { echo "clients: FAIL insightd did not stop cleanly"; failed=$((failed + 1)); }
PID=""
echo "clients: $passed passed, $failed failed"
[ "$failed" = 0 ]
