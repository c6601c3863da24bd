#!/bin/sh
# make bench, the multi-instance part — a benchmark, not a test: it prints figures and never fails
# on a threshold. PostgreSQL and Redis start as ordinary processes on this machine (like
# e2e/cluster.sh), then W2 (evaluate with interaction.summary) runs with wrk against one instance
# and against two (the connections split between them, one wrk each), printing req/s, p50/p99 and
# the CPU each part spent per evaluation: insightd, PostgreSQL (every backend), Redis.
#
# Usage: bench/cluster.sh BIN_DIR   (BIN_DIR holds insightd, insightctl, insightd-bench)
# Environment: BENCH_DURATION=10s BENCH_CONNECTIONS=64 BENCH_THREADS=2 BENCH_RING=4096 (as run.sh);
# BENCH_THINK_MS=40: after the saturated runs, the same connections each wait this long on
# average between an answer and their next request (bench/wrk/evaluate.lua), so the latency is
# read at a load the machine carries (at saturation, p99 is the queue: connections / req/s).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BIN=$(cd "${1:?usage: bench/cluster.sh BIN_DIR}" && pwd)
DURATION=${BENCH_DURATION:-10s}
CONNECTIONS=${BENCH_CONNECTIONS:-64}
THREADS=${BENCH_THREADS:-2}
TICKS=$(getconf CLK_TCK 2>/dev/null || echo 100)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/insightd-cluster-bench.XXXXXX")
chmod 755 "$WORK"
fail() { echo "bench cluster: $*" >&2; exit 1; }
say() { printf '%s\n' "$*"; }
. scripts/engines.sh
INSTANCE_PIDS=""
cleanup() {
    for pid in $INSTANCE_PIDS; do kill -9 "$pid" 2>/dev/null || true; done
    engines_stop
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

engines_init
pg_init
pg_start
redis_start
say "PostgreSQL $(psql_q 'SHOW server_version') on 127.0.0.1:$PG_PORT (synchronous_commit $(psql_q 'SHOW synchronous_commit'), fsync $(psql_q 'SHOW fsync')); Redis $(redis-cli -p "$REDIS_PORT" info server | sed -n 's/^redis_version:\(.*\)\r$/\1/p') on 127.0.0.1:$REDIS_PORT"
head -c 32 /dev/urandom >"$WORK/hash.key"
chmod 600 "$WORK/hash.key"
export INSIGHTD_DATABASE_URL="$DATABASE_URL" INSIGHTD_REDIS_URL="$REDIS_URL" INSIGHTD_HASH_KEY_FILE="$WORK/hash.key"
export INSIGHTD_SIGNING_KEY_DIR="$WORK/signing-keys"
"$BIN/insightctl" signing-keys rotate >/dev/null
export INSIGHTD_MODELS_DIR="$ROOT/models" INSIGHTD_INSTANCES=2 INSIGHTD_DEVICE_LIMIT_PER_HOUR=1000000
"$BIN/insightd-bench" bodies "$WORK" >/dev/null
W2_BODY="$WORK/w2-summary.json"
export BENCH_API_KEY
BENCH_API_KEY=$("$BIN/insightctl" callers create --name bench --roles evaluate --environment production \
    --rate 1000000 --burst 1000000 --json | jq -r .apiKey)

# start_instances N: N instances, each with BENCH_INSTANCE_THREADS loop threads (default: the
# daemon's own default).
start_instances() {
    INSTANCE_PIDS="" URLS=""
    for i in $(seq 1 "$1"); do
        log="$WORK/i$i.log"
        : >"$log"
        env INSIGHTD_STATE_DIR="$WORK/state$i" INSIGHTD_LISTEN=127.0.0.1:0 INSIGHTD_METRICS_LISTEN=127.0.0.1:0 \
            ${BENCH_INSTANCE_THREADS:+INSIGHTD_THREADS=$BENCH_INSTANCE_THREADS} "$BIN/insightd" 2>"$log" &
        pid=$!
        INSTANCE_PIDS="$INSTANCE_PIDS $pid"
        port=""
        for _ in $(seq 1 100); do
            port=$(grep '"msg":"insightd ready"' "$log" | tail -1 | jq -r .listen 2>/dev/null | sed 's/.*://')
            [ -n "$port" ] && [ "$port" != null ] && curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break
            port=""
            kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; fail "insightd exited"; }
            sleep 0.1
        done
        [ -n "$port" ] || fail "instance $i did not become ready"
        URLS="$URLS http://127.0.0.1:$port"
    done
    # The new key is seen within the credential cache time: wait for a 200 on each.
    for url in $URLS; do
        for _ in $(seq 1 50); do
            code=$(curl -s -o /dev/null -w '%{http_code}' "$url/v1/evaluations" -H "Authorization: Bearer $BENCH_API_KEY" \
                   -H 'Content-Type: application/json' --data-binary "$(sed 's/@ID@/probe/g' "$W2_BODY")")
            [ "$code" = 200 ] && break
            sleep 0.1
        done
        [ "$code" = 200 ] || fail "probe evaluation on $url answered $code"
    done
}
stop_instances() {
    for pid in $INSTANCE_PIDS; do kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; done
    INSTANCE_PIDS=""
}

# run N [THINK_MS]: W2 against N instances, back to back or with each connection waiting
# THINK_MS on average between requests; prints one line of figures.
run() {
    think=${2:-0}
    start_instances "$1"
    per=$(( CONNECTIONS / $1 ))
    rows0=$(psql_q 'SELECT count(*) FROM evaluations')
    wal0=$(psql_q 'SELECT pg_current_wal_lsn()')
    insightd0=$(cpu_ticks $INSTANCE_PIDS); pg0=$(cpu_ticks "$PG_PID"); redis0=$(cpu_ticks "$REDIS_PID")
    n=0 wrk_pids=""
    for url in $URLS; do
        n=$((n + 1))
        say "\$ env BENCH_BODY=$W2_BODY BENCH_TAG=c$1i$n BENCH_THINK_MS=$think wrk -t$THREADS -c$per -d$DURATION --latency --timeout 10s -s bench/wrk/evaluate.lua $url"
        env BENCH_BODY="$W2_BODY" BENCH_TAG="c$1i$n" BENCH_THREADS="$THREADS" BENCH_THINK_MS="$think" \
            wrk -t"$THREADS" -c"$per" -d"$DURATION" --latency --timeout 10s -s bench/wrk/evaluate.lua "$url" \
            >"$WORK/c$1i$n.txt" 2>&1 &
        wrk_pids="$wrk_pids $!"
    done
    for pid in $wrk_pids; do wait "$pid" || true; done
    insightd1=$(cpu_ticks $INSTANCE_PIDS); pg1=$(cpu_ticks "$PG_PID"); redis1=$(cpu_ticks "$REDIS_PID")
    rows1=$(psql_q 'SELECT count(*) FROM evaluations')
    wal=$(psql_q "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '$wal0')")
    cat "$WORK"/c"$1"i*.txt | grep '^BENCH_RESULT' >"$WORK/c$1.results" || { cat "$WORK"/c"$1"i*.txt >&2; fail "no BENCH_RESULT"; }
    stored=$((rows1 - rows0))
    awk -v hz="$TICKS" -v n="$1" -v think="$think" -v stored="$stored" -v wal="$wal" \
        -v ins="$((insightd1 - insightd0))" -v pg="$((pg1 - pg0))" -v redis="$((redis1 - redis0))" '
        { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
          rps += v["rps"]; requests += v["requests"]; non2xx += v["non2xx"]; errors += v["errors"]
          if (v["p50_us"] > p50) p50 = v["p50_us"]; if (v["p99_us"] > p99) p99 = v["p99_us"] }
        END {
            ok = stored > 0 ? stored : 1
            load = think > 0 ? sprintf(", think %d ms", think) : ", saturated"
            printf "%d instance%s%s: %.0f req/s, p50 %.2f ms, p99 %.2f ms (the worse of the wrk runs), %d non-2xx, %d errors; %d evaluations stored\n",
                n, (n > 1 ? "s" : ""), load, rps, p50 / 1000, p99 / 1000, non2xx, errors, stored
            printf "  CPU per stored evaluation: insightd %.0f us, PostgreSQL %.0f us, Redis %.0f us; WAL %.0f bytes per evaluation\n",
                ins / hz * 1e6 / ok, pg / hz * 1e6 / ok, redis / hz * 1e6 / ok, wal / ok
        }' "$WORK/c$1.results"
    stop_instances
}

say "W2 (evaluate, interaction.summary), $CONNECTIONS connections in all, $DURATION, on $(nproc) CPUs shared by insightd, PostgreSQL, Redis and wrk"
for n in ${BENCH_CLUSTER_INSTANCES:-1 2}; do run "$n"; done
say "the same, each connection waiting ${BENCH_THINK_MS:-40} ms on average between an answer and its next request"
for n in ${BENCH_CLUSTER_INSTANCES:-1 2}; do run "$n" "${BENCH_THINK_MS:-40}"; done
say "storage: $(psql_q "SELECT pg_size_pretty(pg_total_relation_size('evaluations') + pg_total_relation_size('insights'))") for $(psql_q 'SELECT count(*) FROM evaluations') evaluations ($(psql_q "SELECT (pg_total_relation_size('evaluations') + pg_total_relation_size('insights')) / greatest(count(*), 1) FROM evaluations") bytes each, tables and indexes)"
