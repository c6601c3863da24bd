#!/bin/sh
# The multi-instance mode end to end (docs/deployment.md "Scaling out"): its own
# PostgreSQL (initdb in a temporary directory, a private port) and Redis (--save '', a private
# port) started as ordinary processes, three insightd instances on them and nginx in front, then:
# migrations applied once by instances starting together; one quota bucket and one reporting
# penalty across instances; velocity across instances; reports and labels on another instance
# than their evaluation, and two conflicting reports at once; SIGKILL of an instance and an
# immediate PostgreSQL stop under load (nothing acknowledged lost, recovery without restart);
# Redis stopped under load (evaluations go on) and back; a rolling restart of all three behind
# nginx under steady load with no failed request.
# Usage: e2e/cluster.sh BIN_DIR
set -eu
. "$(dirname "$0")/lib.sh"
BIN=$(cd "${1:-.build/release}" && pwd)
WORK=$(mktemp -d)
chmod 755 "$WORK"  # the postgres user must reach its data directory below
. scripts/engines.sh
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
NGINX_STARTED=""; I1=""; I2=""; I3=""

cleanup() {
    for pid in $I1 $I2 $I3; do kill -9 "$pid" 2>/dev/null || true; done
    [ -n "$NGINX_STARTED" ] && "$NGINX" -c "$WORK/nginx.conf" -p "$WORK/nginx" -s stop 2>/dev/null || true
    engines_stop
    [ -n "${CLUSTER_KEEP:-}" ] && echo "kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
    echo "cluster: FAIL: $*" >&2
    for i in 1 2 3; do echo "--- instance $i" >&2; tail -15 "$WORK/i$i.log" >&2 2>/dev/null || true; done
    exit 1
}
step() { echo "cluster: $*"; }

# --- engines ------------------------------------------------------------------------------
engines_init
LB_PORT=$(free_port); P1=$(free_port); P2=$(free_port); P3=$(free_port)
port_of() { eval echo "\$P$1"; }
mkdir -p "$WORK/nginx/logs"
pg_init
pg_start
redis_start

head -c 32 /dev/urandom >"$WORK/hash.key"
chmod 600 "$WORK/hash.key"
export INSIGHTD_DATABASE_URL="$DATABASE_URL" INSIGHTD_REDIS_URL="$REDIS_URL"
export INSIGHTD_HASH_KEY_FILE="$WORK/hash.key" INSIGHTD_INSTANCES=3 INSIGHTD_COMPLIANCE_REFRESH=1
# One signing key directory for every instance (a shared secret mount in production): an instance
# never creates a key of its own, so the first one is made here.
export INSIGHTD_SIGNING_KEY_DIR="$WORK/signing-keys"
if INSIGHTD_STATE_DIR="$WORK/state0" INSIGHTD_LISTEN=127.0.0.1:0 INSIGHTD_METRICS_LISTEN=127.0.0.1:0 "$BIN/insightd" 2>"$WORK/nokey.log"; then
    fail "an instance started without a signing key in the shared directory"
fi
grep -q 'holds no signing key; create one with insightctl signing-keys rotate' "$WORK/nokey.log" \
    || fail "no clear error without a signing key: $(cat "$WORK/nokey.log")"
"$BIN/insightctl" signing-keys rotate >/dev/null || fail "insightctl signing-keys rotate"
export INSIGHTD_CONSUMPTION_GRACE=60 INSIGHTD_REPORTING_WINDOW=600
export INSIGHTD_OVERDUE_ALLOWANCE_PERCENT=0 INSIGHTD_OVERDUE_ALLOWANCE_MIN=0 INSIGHTD_SHUTDOWN_TIMEOUT=5
export INSIGHTD_MODELS_DIR="$(pwd)/models"
[ -d "$INSIGHTD_MODELS_DIR" ] || unset INSIGHTD_MODELS_DIR

# start N: instance N on its own port and state directory (local files only).
start() {
    INSIGHTD_STATE_DIR="$WORK/state$1" INSIGHTD_LISTEN="127.0.0.1:$(port_of "$1")" INSIGHTD_METRICS_LISTEN=127.0.0.1:0 "$BIN/insightd" 2>>"$WORK/i$1.log" &
    eval "I$1=$!"
}
ready() { wait_ready "$WORK/i$1.log" "$(eval echo "\$I$1")" || fail "instance $1 did not become ready"; }
url() { echo "http://127.0.0.1:$(port_of "$1")"; }
# The metrics listener of instance $1 (each on a free port, named in its "insightd ready" line).
metrics_url() { echo "http://127.0.0.1:$(grep '"msg":"insightd ready"' "$WORK/i$1.log" | tail -1 | jq -r .metricsListen | sed 's/.*://')"; }

# --- an instance whose PostgreSQL does not answer at start exits, naming it, never the password --
if INSIGHTD_STATE_DIR="$WORK/state0" INSIGHTD_LISTEN=127.0.0.1:0 INSIGHTD_METRICS_LISTEN=127.0.0.1:0 \
    INSIGHTD_DATABASE_URL="postgres://insightd:s3cret-pw@127.0.0.1:$(free_port)/postgres?connect_timeout=2" \
    "$BIN/insightd" 2>"$WORK/nodb.log"; then
    fail "an instance started without its PostgreSQL"
fi
grep -q 'cannot open the PostgreSQL store' "$WORK/nodb.log" || fail "no clear error without PostgreSQL: $(cat "$WORK/nodb.log")"
grep -q 's3cret-pw' "$WORK/nodb.log" && fail "the database password was logged"

# --- three instances on an empty database: migrations applied once ---------------------------
start 1; start 2; start 3
ready 1; ready 2; ready 3
applied=$(cat "$WORK"/i?.log | grep -c '"msg":"migration applied"' || true)
migrations=$(ls migrations/postgresql/*.sql | wc -l)
[ "$applied" = "$migrations" ] || fail "$applied migrations applied by three instances starting together, want $migrations once each"
[ "$(psql_q 'SELECT count(*) FROM schema_migrations')" = "$migrations" ] || fail "schema_migrations rows"
step "three instances started together: $migrations migrations applied once"

ctl() { "$BIN/insightctl" "$@"; }
KEY=$(ctl callers create --name cluster --roles evaluate,labels --environment sandbox --rate 0.001 --burst 5 --json | jq -r .apiKey)
[ -n "$KEY" ] && [ "$KEY" != null ] || fail "insightctl callers create against PostgreSQL"
WIDE=$(ctl callers create --name wide --roles evaluate,labels --environment sandbox --rate 100000 --burst 100000 --json | jq -r .apiKey)
SKIPPER=$(ctl callers create --name skipper --roles evaluate --environment sandbox --rate 1000 --burst 1000 --json | jq -r .apiKey)
# Of the sandbox, as the callers it reads: an admin key administers its own environment only.
ADMIN=$(ctl callers create --name admin --roles admin --environment sandbox --json | jq -r .apiKey)
SKIPPER_ID=$(ctl callers list --json | jq -r '.[] | select(.name == "skipper") | .callerId')
# insightctl on the shared store: migrate finds nothing to do, purge works, backup names the engine's tools.
[ "$(ctl migrate)" = "schema is up to date" ] || fail "insightctl migrate against PostgreSQL"
ctl purge --older-than 400 >/dev/null || fail "insightctl purge against PostgreSQL"
ctl backup "$WORK/backup.db" 2>"$WORK/backup.err" && fail "insightctl backup copied a PostgreSQL store"
grep -q pg_dump "$WORK/backup.err" || fail "insightctl backup did not name pg_dump: $(cat "$WORK/backup.err")"
ctl --state-dir "$WORK/elsewhere" callers list 2>/dev/null && fail "insightctl took --state-dir beside INSIGHTD_DATABASE_URL"

eval_body() {  # account device counterparty
    printf '{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"subject":{"account":"%s","device":"%s","counterparty":"%s"}}' "$1" "$2" "$3"
}
# evaluate INSTANCE KEY BODY [OVERRIDE]: prints the body, then the status on its own line.
evaluate() {
    curl -s --max-time 10 -w '\n%{http_code}' -X POST "$(url "$1")/v1/evaluations" -H "Authorization: Bearer $2" \
        -H 'Content-Type: application/json' ${4:+-H "Insight-Override: $4"} -d "$3"
}

# The skipper makes evaluations and never reports them: overdue after the 60 s grace, on every instance.
for i in 1 2 3 1 2 3; do evaluate "$i" "$SKIPPER" "$(eval_body s s s)" | tail -1 | grep -q 200 || fail "skipper evaluation"; done
SKIPPED_AT=$(date +%s)

# --- one bucket per caller: burst 5 -> the sixth request is 429 whichever instance ------------
# The rate is one token per 1,000 s, so that a machine however slow gives none back during the six.
# burst6 KEY: six evaluations (instances 1, 2, 3, 1, 2, 3) from one curl process (--next between
# them), so they go within a few milliseconds of each other; prints their statuses.
burst6() {
    key=$1 body=$(eval_body q q q)
    set --
    for i in 1 2 3 1 2 3; do
        [ $# -gt 0 ] && set -- "$@" --next
        set -- "$@" -s -o /dev/null -w '%{http_code} ' -X POST -H "Authorization: Bearer $key" \
            -H 'Content-Type: application/json' -d "$body" "$(url "$i")/v1/evaluations"
    done
    curl "$@" | sed 's/ *$//'
}
codes=$(burst6 "$KEY")
[ "$codes" = "200 200 200 200 200 429" ] || fail "burst 5 over three instances answered: $codes"
step "one bucket across instances: $codes"

# --- every instance proves its answers with heads signed by a key every instance publishes ------
for i in 1 2 3; do
    curl -s -D "$WORK/receipt-headers" -o "$WORK/proven$i" -X POST "$(url "$i")/v1/evaluations" -H "Authorization: Bearer $WIDE" \
        -H 'Content-Type: application/json' -d "$(eval_body g g g)"
    receipt=$(tr -d '\r' <"$WORK/receipt-headers" | sed -n 's/^[Ii]nsight-[Rr]eceipt: //p')
    other=$((i % 3 + 1))
    curl -sf "$(url "$other")/v1/signing-keys" -o "$WORK/jwks$other" || fail "GET /v1/signing-keys on instance $other"
    python3 e2e/verify_receipt.py "$WORK/jwks$other" "$WORK/proven$i" "$receipt" --tenant default --environment sandbox \
        >"$WORK/verified$i" || fail "an answer of instance $i does not verify against instance $other's JWKS"
done
[ "$(cut -d' ' -f1 "$WORK"/verified[123] | sort -u | wc -l)" = 3 ] || fail "three instances, not three chains: $(cat "$WORK"/verified[123])"
step "receipts: each instance's answer verifies against another instance's JWKS, each instance its own chain"

# --- velocity sees every instance ---------------------------------------------------------------
reasons() { head -1 | jq -r '.insights[0].reasons | join(",")'; }
for n in 1 2 3 4; do evaluate $(( (n - 1) % 3 + 1 )) "$WIDE" "$(eval_body "acct-$n" shared-device "c-$n")" >"$WORK/v$n"; done
reasons <"$WORK/v4" | grep -q sharedDevice || fail "sharedDevice did not fire for four accounts on three instances: $(cat "$WORK/v4")"
for n in $(seq 1 10); do evaluate $(( n % 3 + 1 )) "$WIDE" "$(eval_body busy-account "dev-busy" "cb-$n")" >"$WORK/a$n"; done
reasons <"$WORK/a10" | grep -q accountVelocity || fail "accountVelocity did not fire for ten evaluations on three instances"
evaluate 1 "$WIDE" "$(eval_body victim-1 vd-1 mule)" "isLikelyBeingCoached=high" | tail -1 | grep -q 200 || fail "victim 1"
evaluate 2 "$WIDE" "$(eval_body victim-2 vd-2 mule)" "isLikelyBeingCoached=high" | tail -1 | grep -q 200 || fail "victim 2"
evaluate 3 "$WIDE" "$(eval_body victim-3 vd-3 mule)" >"$WORK/mule"
reasons <"$WORK/mule" | grep -q counterpartyLinkedToCoaching || fail "the mule signal did not fire across instances: $(cat "$WORK/mule")"
step "velocity across instances: sharedDevice, accountVelocity, counterpartyLinkedToCoaching"

# --- erasure on one instance: the others no longer find the person, and shared velocity forgot it --
ERASER=$(ctl callers create --name eraser --roles admin --environment sandbox --json | jq -r .apiKey)
(umask 077; echo "$ERASER" >"$WORK/eraser.key")
printf 'busy-account\n' | ctl subjects erase --account - --url "$(url 1)" --key-file "$WORK/eraser.key" >"$WORK/erased" \
    || fail "subjects erase against the cluster"
grep -q "erased in tenant default: 10 evaluations unlinked" "$WORK/erased" || fail "subjects erase printed: $(cat "$WORK/erased")"
shown=$(curl -s -X POST "$(url 3)/v1/subjects/transparency" -H "Authorization: Bearer $WIDE" -H 'Content-Type: application/json' \
    -d '{"subject":{"account":"busy-account"}}')
[ "$(echo "$shown" | jq '.evaluations | length')" = 0 ] || fail "another instance still shows the erased person: $shown"
evaluate 2 "$WIDE" "$(eval_body busy-account "dev-busy" cb-after)" >"$WORK/after-erasure"
reasons <"$WORK/after-erasure" | grep -q accountVelocity && fail "shared velocity still counts the erased evaluations: $(cat "$WORK/after-erasure")"
step "erasure through one instance: the others show nothing, shared velocity forgot the ten evaluations"

# --- reports and labels on another instance; two conflicting reports at once --------------------
evaluate 1 "$WIDE" "$(eval_body r r r)" >"$WORK/r"
EVENT=$(head -1 "$WORK/r" | jq -r .eventId); INSIGHT=$(head -1 "$WORK/r" | jq -r '.insights[0].insightId')
report() {  # instance event status
    curl -s -o /dev/null -w '%{http_code}' -X POST "$(url "$1")/v1/evaluations/$2/consumption" \
        -H "Authorization: Bearer $WIDE" -H 'Content-Type: application/json' -d "{\"status\":\"$3\"}"
}
[ "$(report 2 "$EVENT" notUsedNotNeeded)" = 204 ] || fail "a report on instance 2 for an evaluation of instance 1"
label() {  # instance insight idempotency-key: prints the answer
    curl -s -X POST "$(url "$1")/v1/labels" -H "Authorization: Bearer $WIDE" -H "Idempotency-Key: $3" \
        -H 'Content-Type: application/json' \
        -d '{"labels":[{"insightId":"'"$2"'","outcome":"confirmedFraud","fraudType":"other","discoveredAt":"2026-11-01"}]}'
}
label 3 "$INSIGHT" l-1 >"$WORK/label1"
[ "$(jq -r '.results[0].status' "$WORK/label1")" = accepted ] || fail "a label on instance 3 for an insight of instance 1: $(cat "$WORK/label1")"
label 2 "$INSIGHT" l-1 >"$WORK/label2"
cmp -s "$WORK/label1" "$WORK/label2" || fail "the same label (same Idempotency-Key) replayed on instance 2 answered $(cat "$WORK/label2")"
[ "$(psql_q "SELECT count(*) FROM labels WHERE insight_id = '$INSIGHT'")" = 1 ] || fail "a replayed label was stored twice"
wins=0
for n in $(seq 1 10); do
    evaluate $(( n % 3 + 1 )) "$WIDE" "$(eval_body "race-$n" r r)" >"$WORK/race"
    event=$(head -1 "$WORK/race" | jq -r .eventId)
    report 1 "$event" usedEvaluationOnly >"$WORK/race1" & r1=$!
    report 2 "$event" notUsedNotNeeded >"$WORK/race2" & r2=$!
    wait "$r1" "$r2"
    pair="$(cat "$WORK/race1") $(cat "$WORK/race2")"
    case "$pair" in "204 409" | "409 204") wins=$((wins + 1)) ;; *) fail "two conflicting reports at once answered $pair" ;; esac
done
step "reports and labels on other instances; 10 races of two conflicting reports: exactly one won each time"

# --- one requestId, one evaluation, whichever instance answers ----------------------------------
# A retry on another instance gets the first answer's bytes, marked; two requests sent at once to
# two instances with one requestId store one evaluation and both get its answer.
retry_body() {  # requestId
    printf '{"requestId":"%s","operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"subject":{"account":"retrying"}}' "$1"
}
evaluations_before=$(psql_q "SELECT count(*) FROM evaluations")
curl -s -D "$WORK/first-headers" -o "$WORK/retry1" -X POST "$(url 1)/v1/evaluations" -H "Authorization: Bearer $WIDE" \
    -H 'Content-Type: application/json' -d "$(retry_body txn-retry)"
heads_before=$(psql_q "SELECT count(*) FROM receipt_heads")
curl -s -D "$WORK/retry-headers" -o "$WORK/retry2" -X POST "$(url 2)/v1/evaluations" -H "Authorization: Bearer $WIDE" \
    -H 'Content-Type: application/json' -d "$(retry_body txn-retry)"
cmp -s "$WORK/retry1" "$WORK/retry2" || fail "a retry on instance 2 answered $(cat "$WORK/retry2"), not $(cat "$WORK/retry1")"
tr -d '\r' <"$WORK/retry-headers" | grep -qi '^idempotent-replayed: true$' || fail "a retry on instance 2 was not marked Idempotent-Replayed"
receipt_of() { tr -d '\r' <"$1" | sed -n 's/^[Ii]nsight-[Rr]eceipt: //p'; }
[ "$(receipt_of "$WORK/retry-headers")" = "$(receipt_of "$WORK/first-headers")" ] \
    || fail "a retry on instance 2 did not carry the first answer's receipt"
[ "$(psql_q "SELECT count(*) FROM receipt_heads")" = "$heads_before" ] || fail "a retry on instance 2 wrote a head"
for n in $(seq 1 10); do
    evaluate $(( n % 3 + 1 )) "$WIDE" "$(retry_body "txn-race-$n")" >"$WORK/rrace1" & r1=$!
    evaluate $(( (n + 1) % 3 + 1 )) "$WIDE" "$(retry_body "txn-race-$n")" >"$WORK/rrace2" & r2=$!
    wait "$r1" "$r2"
    [ "$(tail -1 "$WORK/rrace1") $(tail -1 "$WORK/rrace2")" = "200 200" ] \
        || fail "two racing requests with one requestId answered $(tail -1 "$WORK/rrace1") $(tail -1 "$WORK/rrace2")"
    [ "$(head -1 "$WORK/rrace1" | jq -r .eventId)" = "$(head -1 "$WORK/rrace2" | jq -r .eventId)" ] \
        || fail "two racing requests with one requestId got two evaluations: $(head -1 "$WORK/rrace1") / $(head -1 "$WORK/rrace2")"
done
stored=$(( $(psql_q "SELECT count(*) FROM evaluations") - evaluations_before ))
[ "$stored" = 11 ] || fail "eleven requestIds stored $stored evaluations"
step "one requestId, one evaluation: a retry on another instance replayed with the first receipt and no head written, 10 races of two instances each stored one"

# --- load: workers spread over the instances record what was acknowledged -------------------------
# worker ID TARGETS...: evaluates round robin over TARGETS (base URLs) until $WORK/stop-load exists;
# every other acknowledged evaluation is labelled. Statuses go to status-ID, one a line. Accounts
# and devices rotate over 50 each, so that no device reaches its hourly limit (120) over the run.
worker() {
    id=$1; shift
    n=0
    while [ ! -f "$WORK/stop-load" ]; do
        n=$((n + 1))
        eval "target=\${$(( n % $# + 1 ))}"
        out=$(curl -s --max-time 10 -w '\n%{http_code}' -X POST "$target/v1/evaluations" -H "Authorization: Bearer $WIDE" \
              -H 'Content-Type: application/json' -d "$(eval_body "load-$id-$((n % 50))" "ld-$id-$((n % 50))" "lc-$((n % 7))")" 2>/dev/null) || out="
000"
        code=$(echo "$out" | tail -1)
        echo "$code" >>"$WORK/status-$id"
        [ "$code" = 200 ] || { sleep 0.05; continue; }
        echo "$out" | head -1 | jq -r .eventId >>"$WORK/acked-$id"
        [ $((n % 2)) = 0 ] || continue
        insight=$(echo "$out" | head -1 | jq -r '.insights[0].insightId')
        status=$(curl -s --max-time 10 -X POST "$target/v1/labels" -H "Authorization: Bearer $WIDE" -H "Idempotency-Key: w$id-$n" \
                 -H 'Content-Type: application/json' \
                 -d '{"labels":[{"insightId":"'"$insight"'","outcome":"confirmedLegitimate","discoveredAt":"2026-11-01"}]}' 2>/dev/null |
                 jq -r '.results[0].status' 2>/dev/null) || status=""
        [ "$status" = accepted ] && echo "$insight" >>"$WORK/labelled-$id"
    done
}
LOAD_PIDS=""
load_start() {  # TARGETS...
    rm -f "$WORK/stop-load" "$WORK"/status-*
    LOAD_PIDS=""
    for w in 1 2 3 4; do worker "$w" "$@" & LOAD_PIDS="$LOAD_PIDS $!"; done
}
load_stop() {
    touch "$WORK/stop-load"
    for pid in $LOAD_PIDS; do wait "$pid" 2>/dev/null || true; done
}
# Every acknowledged evaluation and accepted label is in the store.
check_nothing_lost() {
    cat "$WORK"/acked-* 2>/dev/null | sort -u >"$WORK/acked"
    cat "$WORK"/labelled-* 2>/dev/null | sort -u >"$WORK/labelled"
    acked=$(wc -l <"$WORK/acked"); labelled=$(wc -l <"$WORK/labelled")
    [ "$acked" -gt 0 ] || fail "$1: no evaluation was acknowledged"
    stored=$(psql -X -q -A -t -h 127.0.0.1 -p "$PG_PORT" -U insightd -d postgres <<EOF
CREATE TEMP TABLE acked (event_id text);
\copy acked FROM '$WORK/acked'
CREATE TEMP TABLE labelled (insight_id text);
\copy labelled FROM '$WORK/labelled'
SELECT (SELECT count(*) FROM acked WHERE event_id IN (SELECT event_id FROM evaluations)) || ' ' ||
       (SELECT count(*) FROM labelled WHERE insight_id IN (SELECT insight_id FROM labels));
EOF
)
    [ "$stored" = "$acked $labelled" ] || fail "$1: of $acked acknowledged evaluations and $labelled accepted labels, the store holds $stored"
    step "$1: all $acked acknowledged evaluations and $labelled accepted labels are stored"
}
count_codes() { cat "$WORK"/status-* 2>/dev/null | grep -c "^$1\$" || true; }
all_alive() {
    for i in 1 2 3; do kill -0 "$(eval echo "\$I$i")" 2>/dev/null || fail "instance $i exited ($1)"; done
}

# --- SIGKILL of an instance under load ------------------------------------------------------------
load_start "$(url 1)" "$(url 2)" "$(url 3)"
sleep 3
kill -9 "$I2"; wait "$I2" 2>/dev/null || true
sleep 1
start 2; ready 2
sleep 2
load_stop
check_nothing_lost "SIGKILL of instance 2 under load"

# --- PostgreSQL stopped at once under load, then started: recovery without restart ----------------
load_start "$(url 1)" "$(url 2)" "$(url 3)"
sleep 2
pg_stop immediate
sleep 3
for i in 1 2 3; do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$(url "$i")/readyz")
    [ "$code" = 503 ] || fail "instance $i: /readyz answered $code while PostgreSQL was down"
done
[ "$(count_codes 503)" -gt 0 ] || fail "no 503 while PostgreSQL was down"
for i in 1 2 3; do
    curl -s "$(metrics_url "$i")/metrics" | grep -q '^insightd_store_up 0' || fail "instance $i: insightd_store_up is not 0 while PostgreSQL is down"
    grep -q '"msg":"store unreachable' "$WORK/i$i.log" || fail "instance $i did not log that the store is unreachable"
done
pg_start
for i in 1 2 3; do
    for _ in $(seq 1 100); do curl -sf "$(url "$i")/readyz" >/dev/null && break; sleep 0.1; done
    curl -sf "$(url "$i")/readyz" >/dev/null || fail "instance $i not ready 10 s after PostgreSQL came back"
done
sleep 2
load_stop
for i in 1 2 3; do kill -0 "$(eval echo "\$I$i")" || fail "instance $i exited while PostgreSQL was down"; done
check_nothing_lost "PostgreSQL stopped immediately under load, then started ($(count_codes 503) answers were 503)"

# --- Redis stopped under load: evaluations continue; back: shared again ---------------------------
load_start "$(url 1)" "$(url 2)" "$(url 3)"
sleep 2
redis_kill
rm -f "$WORK"/status-*
sleep 3
ok_without_redis=$(count_codes 200)
failed_without_redis=$(cat "$WORK"/status-* 2>/dev/null | grep -vc '^200$' || true)
[ "$ok_without_redis" -gt 0 ] || fail "no evaluation succeeded while Redis was down"
[ "$failed_without_redis" = 0 ] || fail "$failed_without_redis requests failed while Redis was down ($(cat "$WORK"/status-* | sort | uniq -c | tr '\n' ' '))"
for i in 1 2 3; do
    curl -sf "$(url "$i")/readyz" >/dev/null || fail "instance $i not ready while Redis was down"
    curl -s "$(metrics_url "$i")/metrics" | grep -q '^insightd_redis_up 0' || fail "instance $i: insightd_redis_up is not 0 while Redis is down"
done
grep -q '"msg":"redis unavailable' "$WORK/i1.log" || fail "the Redis outage was not logged"
# No escalation meanwhile: velocity reads were answered without signals, and counted.
without=$(for i in 1 2 3; do curl -s "$(metrics_url "$i")/metrics"; done |
          awk '/^insightd_velocity_without_redis_total\{operation="signals"\}/ { n += $2 } END { print n + 0 }')
[ "$without" -gt 0 ] || fail "no velocity read was counted as answered without Redis"
replays_before=$(cat "$WORK"/i?.log | grep -c '"reason":"Redis holds no velocity state"' || true)
redis_start
for i in 1 2 3; do
    for _ in $(seq 1 100); do curl -s "$(metrics_url "$i")/metrics" | grep -q '^insightd_redis_up 1' && break; sleep 0.1; done
    curl -s "$(metrics_url "$i")/metrics" | grep -q '^insightd_redis_up 1' || fail "instance $i did not reconnect to Redis within 10 s"
done
load_stop
all_alive "Redis stopped and back"
# The new Redis was empty: the instance leading the jobs replayed velocity from PostgreSQL.
for _ in $(seq 1 50); do
    [ "$(cat "$WORK"/i?.log | grep -c '"reason":"Redis holds no velocity state"' || true)" -gt "$replays_before" ] && break
    sleep 0.1
done
[ "$(cat "$WORK"/i?.log | grep -c '"reason":"Redis holds no velocity state"' || true)" -gt "$replays_before" ] ||
    fail "velocity was not replayed into the empty Redis"
check_nothing_lost "Redis stopped under load ($ok_without_redis evaluations answered 200 without it), then back"
# Shared again: a fresh caller's burst is one bucket over the instances.
KEY2=$(ctl callers create --name after-redis --roles evaluate --environment sandbox --rate 0.001 --burst 5 --json | jq -r .apiKey)
codes=$(burst6 "$KEY2")
[ "$codes" = "200 200 200 200 200 429" ] || fail "after Redis came back, burst 5 over three instances answered: $codes"
step "Redis back: one bucket across instances again"

# --- the skipper is penalised on every instance -------------------------------------------------
wait_for=$((SKIPPED_AT + 62 - $(date +%s)))
[ "$wait_for" -gt 0 ] && sleep "$wait_for"
for i in 1 2 3; do
    step=0
    for _ in $(seq 1 50); do
        step=$(curl -s "$(url "$i")/admin/v1/callers/$SKIPPER_ID/rate-limit" -H "Authorization: Bearer $ADMIN" | jq -r .penalty.step)
        [ "$step" != 0 ] && [ "$step" != null ] && break
        sleep 0.2
    done
    [ "$step" != 0 ] && [ "$step" != null ] || fail "instance $i: the caller that skipped its reports is not penalised (step $step)"
done
step "a caller that skips its reports is penalised on every instance"

all_alive "before the rolling restart"

# --- rolling restart of all three behind nginx under steady load: no request fails ----------------
sed -e "s|@DIR@|$WORK/nginx|g" -e "s|@LB_PORT@|$LB_PORT|g" -e "s|@P1@|$P1|g" -e "s|@P2@|$P2|g" -e "s|@P3@|$P3|g" \
    e2e/cluster-nginx.conf.in >"$WORK/nginx.conf"
"$NGINX" -c "$WORK/nginx.conf" -p "$WORK/nginx" || fail "nginx did not start"
NGINX_STARTED=1
load_start "http://127.0.0.1:$LB_PORT"
sleep 2
for i in 1 2 3; do
    kill -TERM "$(eval echo "\$I$i")"
    wait "$(eval echo "\$I$i")" || fail "instance $i: exit status $? after SIGTERM"
    start "$i"; ready "$i"
    sleep 2
done
load_stop
total=$(cat "$WORK"/status-* | wc -l)
failed=$(cat "$WORK"/status-* | grep -vc '^200$' || true)
[ "$failed" = 0 ] || fail "rolling restart behind nginx: $failed of $total requests failed ($(cat "$WORK"/status-* | sort | uniq -c | tr '\n' ' '))"
check_nothing_lost "rolling restart of three instances behind nginx ($total requests, none failed)"

# --- receipts after SIGKILL, PostgreSQL stopped and restarts: every chain verifies -----------------
heads=$(curl -sf "$(url 1)/v1/receipts/heads" -H "Authorization: Bearer $WIDE") || fail "GET /v1/receipts/heads"
[ "$(echo "$heads" | jq '.heads | length')" = 3 ] || fail "the latest head of three instances: $heads"
for i in 1 2 3; do kill -TERM "$(eval echo "\$I$i")"; wait "$(eval echo "\$I$i")" || fail "instance $i: final stop"; done
I1=""; I2=""; I3=""
ctl receipts verify >"$WORK/receipts-verify" || fail "receipts verify: $(cat "$WORK/receipts-verify")"
[ "$(grep -c 'verified from the chain.s start' "$WORK/receipts-verify")" = 3 ] \
    || fail "three chains verified from their start: $(cat "$WORK/receipts-verify")"
chain2=$(cut -d' ' -f1 "$WORK/verified2")
grep -q "chain $chain2/default/sandbox: heads 0-" "$WORK/receipts-verify" || fail "instance 2 (killed, restarted) chains: $(cat "$WORK/receipts-verify")"
step "receipts: the chains of all three instances verify and chain after SIGKILL, a PostgreSQL stop and restarts ($(awk '{s+=$(NF-1)} END {print s}' "$WORK/receipts-verify") answers)"
echo "cluster: ok"
