#!/bin/sh
# Failover of both engines under load, nothing acknowledged lost (docs/deployment.md, "Failover").
# Started here as ordinary processes: a PostgreSQL primary and a streaming standby made with
# pg_basebackup (synchronous_standby_names, synchronous_commit on), a Redis master, its replica and
# three sentinels; three insightd instances on libpq's multi-host URL and a redis-sentinel:// URL,
# four workers evaluating, reporting and labelling. Then:
# - the primary's processes SIGKILLed (a machine lost), the standby promoted (pg_ctl promote) as a
#   failover manager would after FAILOVER_DETECT_SECONDS: every evaluation, report and label
#   answered 2xx is on the new primary, the instances serve again without a restart, leadership
#   of the periodic jobs is on the new primary, and the time evaluations were refused is printed;
# - the old primary back as a standby (pg_rewind) and a failover the other way, alike
#   (FAILOVER_ROUNDS failovers in all, 2 by default, alternating);
# - the synchronous standby stopped for 4 s: commits wait for it (slow commits in the metrics,
#   /readyz true), and what was acknowledged is on the primary;
# - the Redis master SIGKILLed: no request fails, the sentinels promote the replica, every
#   instance follows it (the time without shared state is printed) and quotas and velocity are
#   shared again (REDIS_ROUNDS, 1 by default);
# - bad input: a URL whose only host is a standby (not started, why in the log, no password); a
#   Sentinel URL naming an unknown master (not started, the name in the log).
# Usage: e2e/failover.sh BIN_DIR. The figures are printed as lines starting "failover: window".
set -eu
. "$(dirname "$0")/lib.sh"
BIN=$(cd "${1:-.build/release}" && pwd)
ROUNDS=${FAILOVER_ROUNDS:-2}
REDIS_ROUNDS=${REDIS_ROUNDS:-1}
DETECT=${FAILOVER_DETECT_SECONDS:-1}
WORK=$(mktemp -d)
chmod 755 "$WORK"  # the postgres user must reach its data directories below
. scripts/engines.sh
I1=""; I2=""; I3=""; REDIS_PIDS=""; SENTINEL_PIDS=""

cleanup() {
    for pid in $I1 $I2 $I3 $REDIS_PIDS $SENTINEL_PIDS; do kill -9 "$pid" 2>/dev/null || true; done
    for node in a b; do
        [ -f "$WORK/$node/data/postmaster.pid" ] && $AS_PG "$PGBIN/pg_ctl" -D "$WORK/$node/data" -m immediate stop >/dev/null 2>&1
    done
    [ -n "${FAILOVER_KEEP:-}" ] && echo "kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
    echo "failover: FAIL: $*" >&2
    for i in 1 2 3; do echo "--- instance $i" >&2; tail -15 "$WORK/i$i.log" >&2 2>/dev/null || true; done
    exit 1
}
step() { echo "failover: $*"; }
now_ms() { date +%s%3N; }
seconds() { awk -v ms="$1" 'BEGIN { printf "%.2f", ms / 1000 }'; }

# --- PostgreSQL: a primary (a) and a standby (b) on their own ports ------------------------------
[ -x "$PGBIN/pg_basebackup" ] || fail "PostgreSQL is not installed (make deps-test installs postgresql-15)"
command -v redis-sentinel >/dev/null || fail "redis-sentinel is not installed (make deps-test installs it)"
PORT_a=$(free_port); PORT_b=$(free_port)
pg_port() { eval echo "\$PORT_$1"; }
other() { [ "$1" = a ] && echo b || echo a; }
# pg NODE SQL: one query on that node's server, its answer unaligned.
pg() { psql -X -q -A -t -h 127.0.0.1 -p "$(pg_port "$1")" -U insightd -d postgres -c "$2"; }
pg_node_start() {
    $AS_PG "$PGBIN/pg_ctl" -D "$WORK/$1/data" -l "$WORK/$1/server.log" -w -t 30 \
        -o "-p $(pg_port "$1") -k $WORK/$1" start >/dev/null ||
        { tail -20 "$WORK/$1/server.log" >&2; fail "PostgreSQL $1 did not start"; }
}
# pg_require_sync NODE on|off: whether commits on NODE wait for a standby (as a failover manager
# sets it: on once a standby streams, off on a primary left alone).
pg_require_sync() {
    if [ "$2" = on ]; then pg "$1" "ALTER SYSTEM SET synchronous_standby_names = '*'" >/dev/null
    else pg "$1" "ALTER SYSTEM RESET synchronous_standby_names" >/dev/null; fi
    pg "$1" "SELECT pg_reload_conf()" >/dev/null
}
# pg_wait_streaming PRIMARY: until a standby streams from it (30 s at most).
pg_wait_streaming() {
    for _ in $(seq 1 300); do
        [ "$(pg "$1" "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'" 2>/dev/null)" = 1 ] && return 0
        sleep 0.1
    done
    fail "no standby streams from $1"
}
mkdir -p "$WORK/a" "$WORK/b"
[ -n "$AS_PG" ] && chown postgres "$WORK/a" "$WORK/b"
$AS_PG "$PGBIN/initdb" -D "$WORK/a/data" -U insightd -A trust -E UTF8 --no-sync >"$WORK/a/initdb.log" 2>&1 ||
    { cat "$WORK/a/initdb.log" >&2; fail "initdb failed"; }
# wal_log_hints: pg_rewind needs it to bring a failed primary back as a standby.
cat >>"$WORK/a/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
synchronous_commit = on
wal_log_hints = on
wal_keep_size = '256MB'
hot_standby = on
EOF
pg_node_start a
$AS_PG "$PGBIN/pg_basebackup" -h 127.0.0.1 -p "$PORT_a" -U insightd -D "$WORK/b/data" -R -X stream --checkpoint=fast \
    >"$WORK/b/basebackup.log" 2>&1 || { cat "$WORK/b/basebackup.log" >&2; fail "pg_basebackup"; }
pg_node_start b
pg_wait_streaming a
pg_require_sync a on
[ "$(pg a 'SELECT sync_state FROM pg_stat_replication')" = sync ] || fail "the standby is not synchronous"
PRIMARY=a

# --- Redis: a master, a replica, three sentinels -------------------------------------------------
R1=$(free_port); R2=$(free_port); S1=$(free_port); S2=$(free_port); S3=$(free_port)
redis_node() {  # PORT [REPLICA_OF_PORT]: in a directory of its own, where a replica's sync writes its file
    mkdir -p "$WORK/redis-$1"
    redis-server --port "$1" --bind 127.0.0.1 --save '' --appendonly no --daemonize no --dir "$WORK/redis-$1" \
        ${2:+--replicaof 127.0.0.1 "$2"} >>"$WORK/redis-$1/log" 2>&1 &
    eval "RPID_$1=$!"; REDIS_PIDS="$REDIS_PIDS $!"
    for _ in $(seq 1 50); do redis-cli -p "$1" ping >/dev/null 2>&1 && return 0; sleep 0.1; done
    fail "Redis on $1 did not start"
}
redis_node "$R1"
redis_node "$R2" "$R1"
for s in "$S1" "$S2" "$S3"; do
    mkdir -p "$WORK/sentinel-$s"
    cat >"$WORK/sentinel-$s/sentinel.conf" <<EOF
port $s
bind 127.0.0.1
daemonize no
dir $WORK/sentinel-$s
sentinel monitor insightd 127.0.0.1 $R1 2
sentinel down-after-milliseconds insightd 1000
sentinel failover-timeout insightd 10000
sentinel parallel-syncs insightd 1
EOF
    redis-sentinel "$WORK/sentinel-$s/sentinel.conf" >"$WORK/sentinel-$s/log" 2>&1 &
    SENTINEL_PIDS="$SENTINEL_PIDS $!"
done
sentinel_master() { redis-cli -p "$S1" SENTINEL get-master-addr-by-name insightd 2>/dev/null | tail -1; }
for _ in $(seq 1 150); do
    [ "$(redis-cli -p "$S1" SENTINEL replicas insightd 2>/dev/null | grep -c "^$R2\$")" -ge 1 ] &&
        [ "$(redis-cli -p "$S1" SENTINEL sentinels insightd 2>/dev/null | grep -c '^runid$')" = 2 ] && break
    sleep 0.1
done
[ "$(sentinel_master)" = "$R1" ] || fail "the sentinels do not name the master"
step "engines: PostgreSQL primary a ($PORT_a) with a synchronous standby b ($PORT_b); Redis master $R1, replica $R2, sentinels $S1 $S2 $S3"

# --- instances ------------------------------------------------------------------------------------
P1=$(free_port); P2=$(free_port); P3=$(free_port)
port_of() { eval echo "\$P$1"; }
head -c 32 /dev/urandom >"$WORK/hash.key"
chmod 600 "$WORK/hash.key"
export INSIGHTD_DATABASE_URL="postgres://insightd@127.0.0.1:$PORT_a,127.0.0.1:$PORT_b/postgres?target_session_attrs=read-write&connect_timeout=2"
export INSIGHTD_REDIS_URL="redis-sentinel://127.0.0.1:$S1,127.0.0.1:$S2,127.0.0.1:$S3/insightd"
export INSIGHTD_HASH_KEY_FILE="$WORK/hash.key" INSIGHTD_INSTANCES=3 INSIGHTD_COMPLIANCE_REFRESH=1
export INSIGHTD_SIGNING_KEY_DIR="$WORK/signing-keys" INSIGHTD_SHUTDOWN_TIMEOUT=5
# Each instance's metrics on a free port of its own, named in its "insightd ready" line.
export INSIGHTD_METRICS_LISTEN=127.0.0.1:0
export INSIGHTD_MODELS_DIR="$(pwd)/models"
[ -d "$INSIGHTD_MODELS_DIR" ] || unset INSIGHTD_MODELS_DIR
"$BIN/insightctl" signing-keys rotate >/dev/null || fail "insightctl signing-keys rotate"

# Bad input first: a URL whose only host takes no writes, and a master the sentinels do not know.
if INSIGHTD_STATE_DIR="$WORK/state0" INSIGHTD_LISTEN=127.0.0.1:0 INSIGHTD_METRICS_LISTEN=127.0.0.1:0 \
    INSIGHTD_DATABASE_URL="postgres://insightd:s3cret-pw@127.0.0.1:$PORT_b/postgres?target_session_attrs=read-write&connect_timeout=2" \
    "$BIN/insightd" 2>"$WORK/standby-only.log"; then
    fail "an instance started on a URL whose only host is a standby"
fi
grep -q 'read-only' "$WORK/standby-only.log" || fail "no reason given for a standby-only URL: $(cat "$WORK/standby-only.log")"
grep -q 's3cret-pw' "$WORK/standby-only.log" && fail "the database password was logged"
if INSIGHTD_STATE_DIR="$WORK/state0" INSIGHTD_LISTEN=127.0.0.1:0 INSIGHTD_METRICS_LISTEN=127.0.0.1:0 \
    INSIGHTD_REDIS_URL="redis-sentinel://127.0.0.1:$S1,127.0.0.1:$S2/no-such-master" "$BIN/insightd" 2>"$WORK/unknown-master.log"; then
    fail "an instance started with a master the sentinels do not know"
fi
grep -q 'monitor no master named no-such-master' "$WORK/unknown-master.log" ||
    fail "no clear error for an unknown master: $(cat "$WORK/unknown-master.log")"
step "bad input: a standby-only URL and an unknown Sentinel master stop the start, saying why (no password)"

start() {
    INSIGHTD_STATE_DIR="$WORK/state$1" INSIGHTD_LISTEN="127.0.0.1:$(port_of "$1")" "$BIN/insightd" 2>>"$WORK/i$1.log" &
    eval "I$1=$!"
}
url() { echo "http://127.0.0.1:$(port_of "$1")"; }
metrics_url() { eval echo "http://127.0.0.1:\$M$1"; }
start 1; start 2; start 3
for i in 1 2 3; do
    wait_ready "$WORK/i$i.log" "$(eval echo "\$I$i")" || fail "instance $i did not become ready"
    eval "M$i=$(grep '"msg":"insightd ready"' "$WORK/i$i.log" | tail -1 | jq -r .metricsListen | sed 's/.*://')"
done
ctl() { "$BIN/insightctl" "$@"; }
WIDE=$(ctl callers create --name wide --roles evaluate,labels --environment sandbox --rate 100000 --burst 100000 --json | jq -r .apiKey)
[ -n "$WIDE" ] && [ "$WIDE" != null ] || fail "insightctl callers create on the multi-host URL"
all_alive() {
    for i in 1 2 3; do kill -0 "$(eval echo "\$I$i")" 2>/dev/null || fail "instance $i exited ($1)"; done
}

# --- load -------------------------------------------------------------------------------------------
eval_body() {
    printf '{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"subject":{"account":"%s","device":"%s","counterparty":"%s"}}' "$1" "$2" "$3"
}
# worker ID: evaluates round robin over the instances until $WORK/stop-load exists; of the
# evaluations answered 200, every third is reported and every other one labelled. Each evaluation's
# time (ms) and status go to status-ID; what was acknowledged to acked-, reported- and labelled-ID.
worker() {
    id=$1 n=0 run=$(now_ms)
    while [ ! -f "$WORK/stop-load" ]; do
        n=$((n + 1))
        target=$(url $((n % 3 + 1)))
        at=$(now_ms)
        out=$(curl -s --max-time 10 -w '\n%{http_code}' -X POST "$target/v1/evaluations" -H "Authorization: Bearer $WIDE" \
              -H 'Content-Type: application/json' -d "$(eval_body "f-$id-$((n % 50))" "fd-$id-$((n % 50))" "fc-$((n % 7))")" 2>/dev/null) ||
              out="
000"
        code=$(echo "$out" | tail -1)
        echo "$at $code" >>"$WORK/status-$id"
        [ "$code" = 200 ] || { sleep 0.05; continue; }
        event=$(echo "$out" | head -1 | jq -r .eventId)
        echo "$event" >>"$WORK/acked-$id"
        if [ $((n % 3)) = 0 ]; then
            status=$(curl -s --max-time 10 -o /dev/null -w '%{http_code}' -X POST "$target/v1/evaluations/$event/consumption" \
                     -H "Authorization: Bearer $WIDE" -H 'Content-Type: application/json' -d '{"status":"notUsedNotNeeded"}' 2>/dev/null) ||
                     status=000
            [ "$status" = 204 ] && echo "$event" >>"$WORK/reported-$id"
        fi
        [ $((n % 2)) = 0 ] || continue
        insight=$(echo "$out" | head -1 | jq -r '.insights[0].insightId')
        status=$(curl -s --max-time 10 -X POST "$target/v1/labels" -H "Authorization: Bearer $WIDE" -H "Idempotency-Key: f$run-$id-$n" \
                 -H 'Content-Type: application/json' \
                 -d '{"labels":[{"insightId":"'"$insight"'","outcome":"confirmedLegitimate","discoveredAt":"2026-11-01"}]}' 2>/dev/null |
                 jq -r '.results[0].status' 2>/dev/null) || status=""
        [ "$status" = accepted ] && echo "$insight" >>"$WORK/labelled-$id"
    done
}
LOAD_PIDS=""
load_start() {
    rm -f "$WORK/stop-load" "$WORK"/status-*
    LOAD_PIDS=""
    for w in 1 2 3 4; do worker "$w" & LOAD_PIDS="$LOAD_PIDS $!"; done
}
load_stop() {
    touch "$WORK/stop-load"
    for pid in $LOAD_PIDS; do wait "$pid" 2>/dev/null || true; done
}

# check_on NODE WHAT: every evaluation, report and label acknowledged so far is on NODE's server.
check_on() {
    cat "$WORK"/acked-* 2>/dev/null | sort -u >"$WORK/acked"
    cat "$WORK"/reported-* 2>/dev/null | sort -u >"$WORK/reported"
    cat "$WORK"/labelled-* 2>/dev/null | sort -u >"$WORK/labelled"
    acked=$(wc -l <"$WORK/acked"); reported=$(wc -l <"$WORK/reported"); labelled=$(wc -l <"$WORK/labelled")
    [ "$acked" -gt 0 ] || fail "$2: no evaluation was acknowledged"
    stored=$(psql -X -q -A -t -h 127.0.0.1 -p "$(pg_port "$1")" -U insightd -d postgres <<EOF
CREATE TEMP TABLE acked (event_id text);
\copy acked FROM '$WORK/acked'
CREATE TEMP TABLE reported (event_id text);
\copy reported FROM '$WORK/reported'
CREATE TEMP TABLE labelled (insight_id text);
\copy labelled FROM '$WORK/labelled'
SELECT (SELECT count(*) FROM acked WHERE event_id IN (SELECT event_id FROM evaluations)) || ' ' ||
       (SELECT count(*) FROM reported WHERE event_id IN (SELECT event_id FROM consumption_reports)) || ' ' ||
       (SELECT count(*) FROM labelled WHERE insight_id IN (SELECT insight_id FROM labels));
EOF
)
    [ "$stored" = "$acked $reported $labelled" ] ||
        fail "$2: of $acked evaluations, $reported reports and $labelled labels acknowledged, $1 holds $stored"
    step "$2: all $acked evaluations, $reported reports and $labelled labels acknowledged are on $1"
}

# refusal_window KILLED_MS PROMOTED_MS: from the evaluations' statuses after the kill, how long
# evaluations were refused (the first refusal to the last), how many, and when the last refusal
# came relative to the promotion (pg_ctl promote returning): what insightd adds to the failover.
refusal_window() {
    cat "$WORK"/status-* | sort -n | awk -v k="$1" -v p="$2" '
        $1 >= k && $2 != 200 { if (!first) first = $1; last = $1; refused++ }
        $1 >= k && $2 == 200 { served++ }
        END {
            if (!first) { printf "refused 0 ms (none refused; %d served after the kill)\n", served; exit }
            after = last - p
            printf "refused %d ms (%d evaluations refused, %d served after the kill; the last refusal %d ms %s the promotion)\n",
                   last - first, refused, served, after < 0 ? -after : after, after < 0 ? "before" : "after"
        }'
}

# --- PostgreSQL failovers ---------------------------------------------------------------------------
LEAD_KEY="classid::bigint = 1768846185 AND objid::bigint = 1734898796"
round=0
while [ "$round" -lt "$ROUNDS" ]; do
    round=$((round + 1))
    OLD=$PRIMARY NEW=$(other "$PRIMARY")
    rm -f "$WORK"/acked-* "$WORK"/reported-* "$WORK"/labelled-*
    load_start
    sleep 3
    # The machine of the primary is lost: its postmaster and every backend at once.
    old_pid=$(head -1 "$WORK/$OLD/data/postmaster.pid")
    killed=$(now_ms)
    kill -9 "$old_pid" $(ps --ppid "$old_pid" -o pid= 2>/dev/null) 2>/dev/null || true
    sleep "$DETECT"
    # Refused meanwhile, and the log says why (no host takes writes).
    for i in 1 2 3; do
        code=$(curl -s -o /dev/null -w '%{http_code}' "$(url "$i")/readyz")
        [ "$code" = 503 ] || fail "round $round: instance $i: /readyz answered $code with no primary"
    done
    # The failover manager promotes the synchronous standby, and lets it commit alone until a
    # standby is back.
    $AS_PG "$PGBIN/pg_ctl" -D "$WORK/$NEW/data" -w -t 30 promote >/dev/null || fail "round $round: pg_ctl promote $NEW"
    promoted=$(now_ms)
    pg_require_sync "$NEW" off
    PRIMARY=$NEW
    # Serving again without a restart.
    for i in 1 2 3; do
        for _ in $(seq 1 100); do curl -sf "$(url "$i")/readyz" >/dev/null && break; sleep 0.1; done
        curl -sf "$(url "$i")/readyz" >/dev/null || fail "round $round: instance $i not ready 10 s after the promotion"
    done
    sleep 3
    load_stop
    all_alive "round $round"
    window=$(refusal_window "$killed" "$promoted")
    check_on "$NEW" "failover $round ($OLD SIGKILLed, $NEW promoted $(seconds $((promoted - killed))) s later)"
    grep -q '"msg":"store unreachable' "$WORK/i1.log" || fail "the outage was not logged"
    grep '"msg":"store unreachable' "$WORK/i1.log" | tail -1 | grep -q '"reason":"PostgreSQL' ||
        fail "the log does not say why the store was unreachable: $(grep '"msg":"store unreachable' "$WORK/i1.log" | tail -1)"
    # Leadership of the periodic jobs moved to the new primary.
    for _ in $(seq 1 100); do
        [ "$(pg "$NEW" "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND $LEAD_KEY")" = 1 ] && break
        sleep 0.1
    done
    [ "$(pg "$NEW" "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND $LEAD_KEY")" = 1 ] ||
        fail "round $round: no instance leads the periodic jobs on the new primary"
    echo "failover: window postgres round $round: $window"

    # The old primary comes back as a standby of the new one (pg_rewind; it recovers its crash
    # first), and the new primary waits for it again. pg_rewind reads the new timeline from the
    # new primary's control file, which its first checkpoint after the promotion writes.
    pg "$NEW" "CHECKPOINT" >/dev/null
    $AS_PG "$PGBIN/pg_rewind" -D "$WORK/$OLD/data" -R \
        --source-server="host=127.0.0.1 port=$(pg_port "$NEW") user=insightd dbname=postgres" >"$WORK/$OLD/rewind.log" 2>&1 ||
        { cat "$WORK/$OLD/rewind.log" >&2; fail "round $round: pg_rewind $OLD"; }
    pg_node_start "$OLD"
    pg_wait_streaming "$NEW"
    pg_require_sync "$NEW" on
    [ "$(pg "$NEW" 'SELECT sync_state FROM pg_stat_replication')" = sync ] || fail "round $round: $OLD is not a synchronous standby"
    step "round $round: $OLD rewound and back as the synchronous standby of $NEW"
done

# --- a synchronous standby missing: commits wait for it (slow commits in the metrics), nothing lost --
# slow_commits: commits of every instance that took longer than 2.5 s (the histogram's last bucket).
slow_commits() {
    for i in 1 2 3; do curl -s "$(metrics_url "$i")/metrics"; done | awk '
        /^insightd_store_commit_duration_seconds_bucket\{le="2.5"\}/ { fast += $2 }
        /^insightd_store_commit_duration_seconds_count / { all += $2 }
        END { print all - fast }'
}
STANDBY=$(other "$PRIMARY")
slow_before=$(slow_commits)
rm -f "$WORK"/acked-* "$WORK"/reported-* "$WORK"/labelled-*
load_start
sleep 1
$AS_PG "$PGBIN/pg_ctl" -D "$WORK/$STANDBY/data" -m fast -w stop >/dev/null || fail "pg_ctl stop $STANDBY"
sleep 4
for i in 1 2 3; do
    curl -sf "$(url "$i")/readyz" >/dev/null || fail "instance $i not ready while only the standby was missing"
done
pg_node_start "$STANDBY"
pg_wait_streaming "$PRIMARY"
sleep 2
load_stop
all_alive "the standby missing"
slow=$(( $(slow_commits) - slow_before ))
[ "$slow" -gt 0 ] || fail "no slow commit counted while the synchronous standby was missing"
check_on "$PRIMARY" "the synchronous standby $STANDBY missing for 4 s ($slow commits took over 2.5 s, $(cat "$WORK"/status-* | awk '$2 != 200' | wc -l) evaluations not answered 200)"

# --- Redis failover ---------------------------------------------------------------------------------
redis_up_everywhere() {
    for i in 1 2 3; do curl -s "$(metrics_url "$i")/metrics" | grep -q '^insightd_redis_up 1' || return 1; done
}
# burst6 KEY: six evaluations over the instances at once: "200 200 200 200 200 429" with one bucket
# (of rate 0.001: one token per 1,000 s, so no machine is slow enough to get one back meanwhile).
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
reasons() { head -1 | jq -r '.insights[0].reasons | join(",")'; }
REDIS_MASTER=$R1 REDIS_REPLICA=$R2
round=0
while [ "$round" -lt "$REDIS_ROUNDS" ]; do
    round=$((round + 1))
    redis_up_everywhere || fail "redis round $round: an instance does not use Redis before the failover"
    load_start
    sleep 2
    killed=$(now_ms)
    eval "kill -9 \$RPID_$REDIS_MASTER"
    # Without shared state until every instance uses the promoted replica; requests go on meanwhile.
    for _ in $(seq 1 300); do
        [ "$(sentinel_master)" = "$REDIS_REPLICA" ] && redis_up_everywhere && break
        sleep 0.1
    done
    [ "$(sentinel_master)" = "$REDIS_REPLICA" ] || fail "redis round $round: the sentinels did not promote the replica"
    redis_up_everywhere || fail "redis round $round: not every instance follows the new master within 30 s"
    # When the last instance said it uses Redis again, by its own log (to the millisecond).
    followed=0
    for i in 1 2 3; do
        t=$(grep '"msg":"redis available' "$WORK/i$i.log" | jq -r .ts | while read -r ts; do date -d "$ts" +%s%3N; done |
            awk -v k="$killed" '$1 > k { print; exit }')
        [ -n "$t" ] || fail "redis round $round: instance $i did not log that it uses Redis again"
        [ "$t" -gt "$followed" ] && followed=$t
    done
    sleep 1
    load_stop
    all_alive "redis round $round"
    failed=$(cat "$WORK"/status-* | awk '$2 != 200' | wc -l)
    total=$(cat "$WORK"/status-* | wc -l)
    [ "$failed" = 0 ] || fail "redis round $round: $failed of $total evaluations failed during the Redis failover"
    for i in 1 2 3; do
        grep -q '"msg":"redis master changed' "$WORK/i$i.log" || fail "instance $i did not log the new Redis master"
    done
    echo "failover: window redis round $round: without shared state $((followed - killed)) ms (from the kill until every instance uses the new master); $total evaluations, none failed"
    # Shared again: one bucket over the instances, and velocity across them. A try during which an
    # instance fell back (a call past its 50 ms timeout on this busy machine) is made again.
    for try in 1 2 3; do
        for _ in $(seq 1 100); do redis_up_everywhere && break; sleep 0.1; done
        fallbacks=$(cat "$WORK"/i?.log | grep -c '"msg":"redis unavailable' || true)
        KEY=$(ctl callers create --name "after-redis-$round-$try" --roles evaluate --environment sandbox --rate 0.001 --burst 5 --json | jq -r .apiKey)
        codes=$(burst6 "$KEY")
        [ "$codes" = "200 200 200 200 200 429" ] && break
        [ "$(cat "$WORK"/i?.log | grep -c '"msg":"redis unavailable' || true)" != "$fallbacks" ] && [ "$try" -lt 3 ] ||
            fail "redis round $round: after the failover, burst 5 over three instances answered: $codes"
        step "redis round $round: an instance fell back during the burst; again"
    done
    for n in 1 2 3 4; do
        curl -s -X POST "$(url $(( (n - 1) % 3 + 1 )))/v1/evaluations" -H "Authorization: Bearer $WIDE" -H 'Content-Type: application/json' \
            -d "$(eval_body "sd-$round-$n" "shared-$round" "c-$n")" >"$WORK/v$n"
    done
    reasons <"$WORK/v4" | grep -q sharedDevice || fail "redis round $round: velocity is not shared after the failover: $(cat "$WORK/v4")"
    step "redis round $round: one bucket and shared velocity across instances on the new master"
    # The old master comes back; the sentinels make it a replica of the new one.
    redis_node "$REDIS_MASTER"
    for _ in $(seq 1 300); do
        redis-cli -p "$REDIS_MASTER" INFO replication 2>/dev/null | grep -q '^master_link_status:up' && break
        sleep 0.1
    done
    redis-cli -p "$REDIS_MASTER" INFO replication | grep -q '^master_link_status:up' || fail "the old Redis master did not become a replica"
    swap=$REDIS_MASTER REDIS_MASTER=$REDIS_REPLICA REDIS_REPLICA=$swap
done

for i in 1 2 3; do kill -TERM "$(eval echo "\$I$i")"; wait "$(eval echo "\$I$i")" || fail "instance $i: final stop"; done
I1=""; I2=""; I3=""
echo "failover: ok"
