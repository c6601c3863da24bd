#!/usr/bin/env bash
# make bench — a benchmark, not a test: it prints figures and never fails on a threshold.
#
# 1. installs what it needs and is missing (the build's Debian packages, wrk, nginx-light),
# 2. builds insightd, insightctl and insightd-bench in release mode,
# 3. runs the in-process micro-benchmarks (insightd-bench), and times the model performance
#    report on a store filled with BENCH_PERFORMANCE_EVALUATIONS evaluations over a year,
# 4. starts insightd (temporary state directory, models/) and nginx serving a constant JSON
#    body of the size of an insightd answer, both on loopback, and drives each with the same
#    wrk command per workload:
#      W1 evaluate, 150-event interaction     W2 evaluate, interaction.summary
#      W3 consumption report (pool)           W4 evaluate, then consume
# 5. kills insightd with SIGKILL and checks PRAGMA integrity_check and that every evaluation
#    answered 200 is in the database.
#
# Environment (all optional):
#   BENCH_DURATION=10s  BENCH_CONNECTIONS=64  BENCH_THREADS=2   wrk -d, -c, -t (same for both)
#   BENCH_WORKLOADS="W1 W2 W3 W4"       which macro workloads to run
#   BENCH_POOL_MIN=2000                 W3 reports evaluations made by the runs before it; with
#   BENCH_POOL_SECONDS=3                fewer unreported ones, it makes more for this long first
#   BENCH_MICRO=1  BENCH_MACRO=1        set to 0 to skip a part
#   BENCH_MICRO_ARGS=                   extra insightd-bench arguments, e.g. --quick
#   BENCH_PERFORMANCE_EVALUATIONS=1000000  evaluations of the report's store (0 skips it;
#                                       10000000 takes about 1.5 min to fill and 4 GB of disk)
#   BENCH_RING=4096                     distinct subjects per wrk thread (W1, W2, W4 evaluations;
#                                       each request has a requestId of its own)
#   BENCH_NGINX_WORKERS=auto            nginx worker_processes
#   BENCH_KEEP=0                        1 keeps the work directory (logs, database, wrk output)
#   BENCH_PROFILE=0                     1 samples insightd with `perf record` (Debian linux-perf)
#                                       during each of its runs and prints the top symbols
#   BENCH_PROFILE_HZ=499                perf sampling frequency
#   BIN_DIR=                            use the binaries there instead of building
#   SWIFT=swift
set -eu

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
DURATION=${BENCH_DURATION:-10s}
CONNECTIONS=${BENCH_CONNECTIONS:-64}
THREADS=${BENCH_THREADS:-2}
WORKLOADS=${BENCH_WORKLOADS:-W1 W2 W3 W4}
POOL_SECONDS=${BENCH_POOL_SECONDS:-3}
POOL_MIN=${BENCH_POOL_MIN:-2000}
NGINX_WORKERS=${BENCH_NGINX_WORKERS:-auto}
SWIFT=${SWIFT:-swift}
LUA="$ROOT/bench/wrk"

say() { printf '%s\n' "$*"; }
step() { printf '\n== %s\n' "$*"; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }
# Prints a command, then runs it.
show() { printf '$ %s\n' "$*"; "$@"; }

# ---------------------------------------------------------------------------------------------
step "machine"
say "cpus:    $(nproc) ($(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'))"
say "kernel:  $(uname -srm)"
say "memory:  $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
say "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min) at start"
say "os:      $(. /etc/os-release && echo "$PRETTY_NAME")"

# ---------------------------------------------------------------------------------------------
step "packages"
[ -f scripts/install-deps.sh ] && sh scripts/install-deps.sh
have_nginx() { command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; }
missing=""
command -v wrk >/dev/null 2>&1 || missing="wrk"
if [ -n "$missing" ] || ! have_nginx; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    if [ -n "$missing" ]; then
        say "installing: wrk"
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq -o Dpkg::Use-Pty=0 --no-install-recommends wrk
    fi
    if ! have_nginx; then
        say "installing: nginx-light (or nginx)"
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq -o Dpkg::Use-Pty=0 --no-install-recommends nginx-light \
            || DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq -o Dpkg::Use-Pty=0 --no-install-recommends nginx
    fi
fi
if [ "${BENCH_PROFILE:-0}" = 1 ] && ! command -v perf >/dev/null 2>&1; then
    say "installing: linux-perf"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq -o Dpkg::Use-Pty=0 --no-install-recommends linux-perf
fi
NGINX=$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)
say "wrk:     $(wrk -v 2>&1 | head -1 || true)"
say "nginx:   $("$NGINX" -v 2>&1 | head -1)"
say "swift:   $($SWIFT --version 2>&1 | head -1)"

# ---------------------------------------------------------------------------------------------
step "build"
if [ -z "${BIN_DIR:-}" ]; then
    for product in insightd insightctl insightd-bench; do
        show "$SWIFT" build -c release --product "$product"
    done
    BIN_DIR=$("$SWIFT" build -c release --show-bin-path)
else
    say "using prebuilt binaries in BIN_DIR=$BIN_DIR"
fi
BIN=$(cd "$BIN_DIR" && pwd)
for b in insightd insightctl insightd-bench; do [ -x "$BIN/$b" ] || die "$BIN/$b is missing"; done

# ---------------------------------------------------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/insightd-bench.XXXXXX")
chmod 755 "$WORK"   # nginx workers drop root privileges when started as root
INSIGHTD_PID=""
NGINX_PID=""
cleanup() {
    set +e
    [ -n "${PERF_PID:-}" ] && kill -INT "$PERF_PID" 2>/dev/null && wait "$PERF_PID" 2>/dev/null
    [ -n "$NGINX_PID" ] && kill "$NGINX_PID" 2>/dev/null && wait "$NGINX_PID" 2>/dev/null
    [ -n "$INSIGHTD_PID" ] && kill -9 "$INSIGHTD_PID" 2>/dev/null && wait "$INSIGHTD_PID" 2>/dev/null
    if [ "${BENCH_KEEP:-0}" = 1 ]; then
        say "kept: $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "${BENCH_MICRO:-1}" != 0 ]; then
    step "micro-benchmarks (in-process, release build)"
    show "$BIN/insightd-bench" --models "$ROOT/models" ${BENCH_MICRO_ARGS:-}
fi
if [ "${BENCH_PERFORMANCE_EVALUATIONS:-1000000}" != 0 ]; then
    step "model performance report (store filled with SQL, docs/performance.md)"
    show "$BIN/insightd-bench" performance "$WORK/performance.db" "${BENCH_PERFORMANCE_EVALUATIONS:-1000000}"
    rm -f "$WORK"/performance.db*
fi
[ "${BENCH_MACRO:-1}" != 0 ] || exit 0

# ---------------------------------------------------------------------------------------------
step "servers"
"$BIN/insightd-bench" bodies "$WORK"
W1_BODY="$WORK/w1-events150.json"
W2_BODY="$WORK/w2-summary.json"

STATE="$WORK/state"
LOG="$WORK/insightd.log"
# wrk's connections all come from 127.0.0.1: no per-address cap (64 by default), as behind a proxy.
say "\$ INSIGHTD_STATE_DIR=$STATE INSIGHTD_LISTEN=127.0.0.1:0 INSIGHTD_METRICS_LISTEN=127.0.0.1:0 INSIGHTD_MAX_CONNECTIONS_PER_ADDRESS=0 INSIGHTD_MODELS_DIR=$ROOT/models $BIN/insightd &"
INSIGHTD_STATE_DIR="$STATE" INSIGHTD_LISTEN=127.0.0.1:0 INSIGHTD_METRICS_LISTEN=127.0.0.1:0 INSIGHTD_MAX_CONNECTIONS_PER_ADDRESS=0 \
    INSIGHTD_MODELS_DIR="$ROOT/models" "$BIN/insightd" 2>"$LOG" &
INSIGHTD_PID=$!
PORT=""
for _ in $(seq 1 100); do
    PORT=$(grep '"msg":"insightd ready"' "$LOG" 2>/dev/null | tail -1 | jq -r '.listen' 2>/dev/null | sed 's/.*://')
    [ "$PORT" = null ] && PORT=""
    if [ -n "$PORT" ] && curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null; then break; fi
    PORT=""
    kill -0 "$INSIGHTD_PID" 2>/dev/null || { cat "$LOG" >&2; die "insightd exited"; }
    sleep 0.1
done
[ -n "$PORT" ] || { cat "$LOG" >&2; die "insightd did not become ready"; }
INSIGHTD_URL="http://127.0.0.1:$PORT"
INSIGHTD_METRICS_URL="http://127.0.0.1:$(grep '"msg":"insightd ready"' "$LOG" | tail -1 | jq -r .metricsListen | sed 's/.*://')/metrics"
say "insightd ready on $INSIGHTD_URL (pid $INSIGHTD_PID, $(grep '"msg":"insightd ready"' "$LOG" | tail -1 | jq -r .threads) loop threads)"

say "\$ $BIN/insightctl --state-dir $STATE callers create --name bench --roles evaluate --environment production --rate 1000000 --burst 1000000 --json"
"$BIN/insightctl" --state-dir "$STATE" callers create --name bench --roles evaluate \
    --environment production --rate 1000000 --burst 1000000 --json >"$WORK/caller.json"
export BENCH_API_KEY
BENCH_API_KEY=$(jq -r .apiKey "$WORK/caller.json")
case "$BENCH_API_KEY" in ik_*) ;; *) die "callers create printed no key: $(cat "$WORK/caller.json")" ;; esac
say "caller $(jq -r .callerId "$WORK/caller.json") (the key is valid within INSIGHTD_CREDENTIAL_CACHE)"

# One real answer, for nginx to serve: same size and shape (W4 parses its ids).
probe=""
for _ in $(seq 1 50); do
    probe=$(curl -s -o "$WORK/answer.json" -w '%{http_code}' "$INSIGHTD_URL/v1/evaluations" \
        -H "Authorization: Bearer $BENCH_API_KEY" -H 'Content-Type: application/json' \
        --data-binary "$(sed 's/@ID@/probe/g' "$W1_BODY")")
    [ "$probe" = 200 ] && break
    sleep 0.1   # a new key may take up to the credential cache time to be seen
done
[ "$probe" = 200 ] || die "probe evaluation answered $probe: $(cat "$WORK/answer.json")"
ANSWER=$(cat "$WORK/answer.json")
say "insightd answer: $(printf %s "$ANSWER" | wc -c) bytes: $ANSWER"
case "$ANSWER" in *"'"* | *'$'* | *'\'*) die "the answer cannot be quoted for nginx" ;; esac

NGINX_DIR="$WORK/nginx"
mkdir -p "$NGINX_DIR"
chmod 755 "$NGINX_DIR"
for attempt in 1 2 3 4 5; do
    NGINX_PORT=$((20000 + RANDOM % 40000))
    sed -e "s|@DIR@|$NGINX_DIR|g" -e "s|@PORT@|$NGINX_PORT|g" -e "s|@WORKERS@|$NGINX_WORKERS|g" \
        "$ROOT/bench/nginx.conf.in" >"$NGINX_DIR/nginx.conf"
    # The body goes in with awk: it may contain characters sed would read as syntax.
    awk -v body="$ANSWER" '{ i = index($0, "@BODY@"); if (i) $0 = substr($0, 1, i - 1) body substr($0, i + 6); print }' \
        "$NGINX_DIR/nginx.conf" >"$NGINX_DIR/nginx.conf.tmp" && mv "$NGINX_DIR/nginx.conf.tmp" "$NGINX_DIR/nginx.conf"
    say "\$ $NGINX -p $NGINX_DIR -c $NGINX_DIR/nginx.conf -e $NGINX_DIR/error.log &"
    "$NGINX" -p "$NGINX_DIR" -c "$NGINX_DIR/nginx.conf" -e "$NGINX_DIR/error.log" 2>>"$NGINX_DIR/stderr.log" &
    NGINX_PID=$!
    for _ in $(seq 1 50); do
        code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -d '{}' "http://127.0.0.1:$NGINX_PORT/v1/evaluations" || true)
        [ "$code" = 200 ] && break
        kill -0 "$NGINX_PID" 2>/dev/null || break
        sleep 0.1
    done
    [ "${code:-}" = 200 ] && break
    kill "$NGINX_PID" 2>/dev/null; wait "$NGINX_PID" 2>/dev/null || true
    NGINX_PID=""
    [ "$attempt" = 5 ] && { cat "$NGINX_DIR/stderr.log" "$NGINX_DIR/error.log" >&2 2>/dev/null; die "nginx did not start"; }
done
NGINX_URL="http://127.0.0.1:$NGINX_PORT"
say "nginx ready on $NGINX_URL (pid $NGINX_PID, worker_processes $NGINX_WORKERS)"

# ---------------------------------------------------------------------------------------------
# run_wrk NAME SCRIPT URL [VAR=VALUE...]: runs wrk with the common settings, keeps its output
# in $WORK/NAME.txt and prints the BENCH_RESULT line's figures.
PERF_PID=""
TICKS=$(getconf CLK_TCK 2>/dev/null || echo 100)
# thread_ticks PID: "tid cpu-ticks" (user + system) for each thread of PID.
thread_ticks() {
    for t in /proc/"$1"/task/*; do
        printf '%s %s\n' "${t##*/}" "$(sed 's/.*) //' "$t/stat" 2>/dev/null | awk '{ print $12 + $13 }')"
    done 2>/dev/null | awk 'NF == 2 && $2 != ""'
}
# server_ticks: CPU ticks of nginx's master and workers (they are processes, not threads).
nginx_ticks() {
    for p in "$NGINX_PID" $(ps -o pid= --ppid "$NGINX_PID" 2>/dev/null); do thread_ticks "$p"; done \
        | awk '{ s += $2 } END { print s + 0 }'
}
# machine_ticks: "busy idle steal" CPU ticks of the whole machine so far (/proc/stat).
machine_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6, $9 }' /proc/stat; }
demangle() {
    if command -v swift-demangle >/dev/null 2>&1; then swift-demangle --simplified
    else "$SWIFT" demangle --simplified 2>/dev/null || cat; fi
}
# server_histograms: insightd's own request and commit duration buckets so far (/metrics).
server_histograms() {
    curl -s "$INSIGHTD_METRICS_URL" | grep -E '^insightd_(http_request_duration_seconds|store_commit_duration_seconds)_bucket'
}
# server_side NAME: what insightd's histograms saw during run NAME: the share of requests it
# answered (parse to answer, any route) within 10 and 25 ms, the bucket holding its p99, and the
# commits over 50 ms; tells a latency tail inside the server from one outside it.
server_side() {
    awk '
        NR == FNR { before[$1] = $2; next }
        { n = $2 - before[$1]; le = $1; sub(/.*le="/, "", le); sub(/".*/, "", le)
          if ($1 ~ /^insightd_http/) req[le] += n; else commit[le] += n }
        function bound(h, le,   b) { b = 0; for (k in h) if (k != "+Inf" && k + 0 <= le + 0 && k + 0 > b + 0) b = k; return b }
        END {
            total = req["+Inf"]; commits = commit["+Inf"]
            if (total == 0) exit
            p99 = "+Inf"
            for (k in req) if (k != "+Inf" && req[k] >= 0.99 * total && (p99 == "+Inf" || k + 0 < p99 + 0)) p99 = k
            printf "server side: %.2f %% of %d requests answered within 10 ms, %.2f %% within 25 ms, p99 <= %s; %d of %d commits over 50 ms\n",
                100 * req[bound(req, 0.01)] / total, total, 100 * req[bound(req, 0.025)] / total,
                (p99 == "+Inf" ? "+Inf" : sprintf("%g ms", p99 * 1000)), commits - commit[bound(commit, 0.05)], commits
        }' "$WORK/$1.hist0" "$WORK/$1.hist1"
}
run_wrk() {
    name=$1 script=$2 url=$3
    shift 3
    say "\$ env $* BENCH_TAG=$name wrk -t$THREADS -c$CONNECTIONS -d$DURATION --latency --timeout 10s -s bench/wrk/$script $url"
    if [ "$url" = "$INSIGHTD_URL" ]; then
        server=insightd
        thread_ticks "$INSIGHTD_PID" | sort >"$WORK/$name.cpu0"
        server_histograms >"$WORK/$name.hist0"
    else
        server=nginx
        nginx_ticks >"$WORK/$name.cpu0"
    fi
    if [ "${BENCH_PROFILE:-0}" = 1 ] && [ "$server" = insightd ]; then
        perf record -q -e cpu-clock -F "${BENCH_PROFILE_HZ:-499}" --call-graph dwarf,16384 -p "$INSIGHTD_PID" \
            -o "$WORK/$name.perf.data" 2>"$WORK/$name.perf.log" &
        PERF_PID=$!
    fi
    machine_ticks >"$WORK/$name.machine0"
    TIMEFORMAT='%U %S'
    { time env "$@" BENCH_TAG="$name" BENCH_THREADS="$THREADS" \
        wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" --latency --timeout 10s -s "$LUA/$script" "$url" \
        >"$WORK/$name.txt" 2>&1; } 2>"$WORK/$name.time" || { cat "$WORK/$name.txt" >&2; die "wrk failed"; }
    if [ "$server" = insightd ]; then
        thread_ticks "$INSIGHTD_PID" | sort >"$WORK/$name.cpu1"
        server_histograms >"$WORK/$name.hist1"
        server_cpu=$(join "$WORK/$name.cpu0" "$WORK/$name.cpu1" | awk -v hz="$TICKS" '{ s += $3 - $2 } END { printf "%.2f", s / hz }')
        per_thread=$(join "$WORK/$name.cpu0" "$WORK/$name.cpu1" | awk -v hz="$TICKS" '$3 > $2 { printf "%s%.2f", sep, ($3 - $2) / hz; sep = " / " }')
    else
        server_cpu=$(awk -v a="$(cat "$WORK/$name.cpu0")" -v b="$(nginx_ticks)" -v hz="$TICKS" 'BEGIN { printf "%.2f", (b - a) / hz }')
        per_thread=""
    fi
    wrk_cpu=$(awk '{ printf "%.2f", $1 + $2 }' "$WORK/$name.time")
    machine=$(machine_ticks | awk -v hz="$TICKS" -v server="$server_cpu" -v wrk="$wrk_cpu" -v before="$(cat "$WORK/$name.machine0")" '{
        split(before, b, " ")
        busy = ($1 - b[1]) / hz; idle = ($2 - b[2]) / hz; steal = ($3 - b[3]) / hz
        others = busy - server - wrk; if (others < 0) others = 0
        printf "machine busy %.2f (others ~%.2f: other tenants, kernel threads; steal %.2f), idle %.2f", busy, others, steal, idle }')
    steal=$(echo "$machine" | sed -n 's/.*steal \([0-9.]*\).*/\1/p')
    grep '^BENCH_RESULT' "$WORK/$name.txt" >"$WORK/$name.result" || { cat "$WORK/$name.txt" >&2; die "no BENCH_RESULT"; }
    printf ' server_cpu_s=%s wrk_cpu_s=%s steal_s=%s\n' "$server_cpu" "$wrk_cpu" "$steal" >>"$WORK/$name.result"
    sed -n '/Latency Distribution/,/requests in/p' "$WORK/$name.txt" | sed 's/^/    /'
    say "    CPU seconds: $server $server_cpu${per_thread:+ (per busy thread: $per_thread)}, wrk $wrk_cpu; $machine; $(nproc) CPUs x $(awk -v us="$(field "$name" duration_us)" 'BEGIN { printf "%.1f", us / 1e6 }') s"
    if [ "$server" = insightd ]; then say "    $(server_side "$name")"; fi
    if [ -n "$PERF_PID" ]; then
        kill -INT "$PERF_PID" 2>/dev/null; wait "$PERF_PID" 2>/dev/null || true
        PERF_PID=""
        say "    perf (insightd, $name): top self-time symbols, then top inclusive symbols outside the kernel"
        perf report -i "$WORK/$name.perf.data" --no-children --sort dso,symbol --stdio -g none 2>/dev/null \
            | grep -v '^#' | grep -v '^$' | head -15 | demangle | cut -c1-160 | sed 's/^/    /'
        perf report -i "$WORK/$name.perf.data" --children --sort symbol --stdio -g none 2>/dev/null \
            | grep -v '^#' | grep -v '^$' | grep -v '\[k\]' | demangle >"$WORK/$name.perf.txt"
        head -60 "$WORK/$name.perf.txt" | cut -c1-160 | sed 's/^/    /'
        say "    (full: $WORK/$name.perf.txt, $WORK/$name.perf.data; set BENCH_KEEP=1 to keep them)"
    fi
}
# field NAME KEY: a value of NAME's BENCH_RESULT line.
field() { tr ' ' '\n' <"$WORK/$1.result" | sed -n "s/^$2=//p" | head -1; }
# The number of evaluation answers with status 200 in run NAME.
ok_evaluations() {
    case "$(cat "$WORK/$1.result")" in
        *ok200=*) field "$1" ok200 ;;
        *) echo $(( $(field "$1" requests) - $(field "$1" non2xx) )) ;;
    esac
}
sql() { sqlite3 "$STATE/insightd.db" "$1"; }

describe() {
    case $1 in
        W1) echo "evaluate, 150-event interaction ($(wc -c <"$W1_BODY") B body), subjects cycling through ${BENCH_RING:-4096} per wrk thread, a requestId per request" ;;
        W2) echo "evaluate, interaction.summary ($(wc -c <"$W2_BODY") B body), subjects cycling through ${BENCH_RING:-4096} per wrk thread, a requestId per request" ;;
        W3) echo "consumption report, cycling through a pool of unreported evaluations" ;;
        W4) echo "evaluate (150 events), then report consumption of that evaluation; alternating" ;;
    esac
}

EVALUATED_200=1   # the probe
POOL_LINES=0
W3_FIRST=""
for W in $WORKLOADS; do
    step "$W: $(describe "$W")"
    case $W in
        W1) SCRIPT=evaluate.lua; VARS="BENCH_BODY=$W1_BODY" ;;
        W2) SCRIPT=evaluate.lua; VARS="BENCH_BODY=$W2_BODY" ;;
        W3)
            SCRIPT=consume.lua
            # The pool: evaluations of the bench caller made by the runs before, not yet reported,
            # in random order (the first insight of each: its stored id, or the one made from the
            # event id, which ends in 1 instead of 0; docs/architecture.md).
            pool_query="SELECT e.event_id || ' ' || coalesce(i.insight_id, substr(e.event_id, 1, 35) || '1')
                FROM evaluations e JOIN insights i ON i.slot = e.rowid * 8
                WHERE NOT EXISTS (SELECT 1 FROM consumption_reports c WHERE c.event_id = e.event_id)
                ORDER BY random()"
            sql "$pool_query" >"$WORK/pool"
            POOL_LINES=$(wc -l <"$WORK/pool")
            if [ "$POOL_LINES" -lt "$POOL_MIN" ]; then
                say "pool: only $POOL_LINES unreported evaluations; making more for ${POOL_SECONDS}s with the W2 body"
                env BENCH_BODY="$W2_BODY" BENCH_TAG=pool \
                    wrk -t"$THREADS" -c"$CONNECTIONS" -d"${POOL_SECONDS}s" --timeout 10s -s "$LUA/evaluate.lua" \
                    "$INSIGHTD_URL" >"$WORK/pool.txt" 2>&1 || { cat "$WORK/pool.txt" >&2; die "making the pool failed"; }
                grep '^BENCH_RESULT' "$WORK/pool.txt" >"$WORK/pool.result"
                EVALUATED_200=$((EVALUATED_200 + $(ok_evaluations pool)))
                sql "$pool_query" >"$WORK/pool"
                POOL_LINES=$(wc -l <"$WORK/pool")
            fi
            [ "$POOL_LINES" -gt 0 ] || die "the pool is empty"
            say "pool: $POOL_LINES unreported evaluations (made by the runs before), in random order"
            REPORTS_BEFORE=$(sql "SELECT count(*) FROM consumption_reports")
            VARS="BENCH_POOL=$WORK/pool"
            ;;
        W4) SCRIPT=mix.lua; VARS="BENCH_BODY=$W1_BODY" ;;
        *) die "unknown workload $W" ;;
    esac
    run_wrk "$W-insightd" "$SCRIPT" "$INSIGHTD_URL" $VARS
    case $W in
        W1 | W2 | W4) EVALUATED_200=$((EVALUATED_200 + $(ok_evaluations "$W-insightd"))) ;;
        W3)
            W3_FIRST=$(( $(sql "SELECT count(*) FROM consumption_reports") - REPORTS_BEFORE ))
            # Rows count reports still in flight when wrk stopped, which wrk does not count: the
            # first figure can exceed the second.
            say "W3: $W3_FIRST first reports inserted a row; wrk counted $(field W3-insightd requests) answers (reports in flight when it stopped are in the first figure only); other reports repeated one (also 204; nothing is written)"
            ;;
    esac
    if [ "$W" = W4 ]; then
        say "W4 insightd answers: $(field W4-insightd ok200) evaluations (200), $(field W4-insightd ok204) reports (204), $(field W4-insightd other) other"
    fi
    sleep 1
    run_wrk "$W-nginx" "$SCRIPT" "$NGINX_URL" $VARS
    sleep 1
done

# ---------------------------------------------------------------------------------------------
step "durability (insightd killed with SIGKILL after the runs)"
kill -9 "$INSIGHTD_PID" 2>/dev/null || true
wait "$INSIGHTD_PID" 2>/dev/null || true
INSIGHTD_PID=""
INTEGRITY=$(sql "PRAGMA integrity_check")
STORED=$(sql "SELECT count(*) FROM evaluations")
say "PRAGMA integrity_check: $INTEGRITY"
if [ "$STORED" -ge "$EVALUATED_200" ]; then verdict="every 200 is stored"; else verdict="LOST $((EVALUATED_200 - STORED)) ACKNOWLEDGED EVALUATIONS"; fi
say "evaluations stored: $STORED; evaluation answers with 200 seen by wrk and curl: $EVALUATED_200 ($verdict)"
say "(stored may exceed the 200s: answers in flight when wrk stopped are committed but not counted)"

# ---------------------------------------------------------------------------------------------
step "results: $CONNECTIONS connections, $THREADS wrk threads, $DURATION per run, loopback, $(nproc) CPUs shared by wrk, nginx and insightd"
ms() { awk -v us="$1" 'BEGIN { printf "%.2f ms", us / 1000 }'; }
say ""
say "| workload | insightd req/s | p50 | p99 | non-2xx/errors | CPU/req | steal | nginx req/s | p50 | p99 | CPU/req | steal | insightd / nginx |"
say "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
# steal: the machine's steal time during run NAME, as a share of all its CPUs' time.
steal_share() { awk -v s="$(field "$1" steal_s)" -v us="$(field "$1" duration_us)" -v cpus="$(nproc)" 'BEGIN { printf "%.0f %%", us ? 100 * s / (cpus * us / 1e6) : 0 }'; }
# CPU/req: the server's CPU time (all its threads or processes) per request answered.
cpu_per_req() { awk -v s="$(field "$1" server_cpu_s)" -v n="$(field "$1" requests)" 'BEGIN { printf "%.0f µs", n ? 1e6 * s / n : 0 }'; }
for W in $WORKLOADS; do
    i="$W-insightd" n="$W-nginx"
    ratio=$(awk -v a="$(field "$i" rps)" -v b="$(field "$n" rps)" 'BEGIN { printf "%.1f %%", 100 * a / b }')
    printf '| %s | %s | %s | %s | %s/%s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$W" \
        "$(awk -v x="$(field "$i" rps)" 'BEGIN { printf "%.0f", x }')" "$(ms "$(field "$i" p50_us)")" \
        "$(ms "$(field "$i" p99_us)")" "$(field "$i" non2xx)" "$(field "$i" errors)" "$(cpu_per_req "$i")" \
        "$(steal_share "$i")" \
        "$(awk -v x="$(field "$n" rps)" 'BEGIN { printf "%.0f", x }')" "$(ms "$(field "$n" p50_us)")" \
        "$(ms "$(field "$n" p99_us)")" "$(cpu_per_req "$n")" "$(steal_share "$n")" "$ratio"
done
say "(steal: CPU time the hypervisor gave to others during the run, as a share of the machine; above"
say " a few per cent the run measured the neighbours as much as the server: compare CPU/req, or run again)"
say ""
say "first speed targets (issue 9; at $CONNECTIONS connections):"
for spec in "W1 15" "W2 25"; do
    set -- $spec
    [ -f "$WORK/$1-insightd.result" ] || continue
    awk -v w="$1" -v min="$2" -v a="$(field "$1-insightd" rps)" -v b="$(field "$1-nginx" rps)" \
        -v p99="$(field "$1-insightd" p99_us)" 'BEGIN {
            r = 100 * a / b
            printf "  %s: %.1f%% of nginx (target >= %d%%: %s), p99 %.2f ms (target <= 25 ms: %s)\n",
                w, r, min, (r >= min ? "met" : "NOT met"), p99 / 1000, (p99 <= 25000 ? "met" : "NOT met")
        }'
done
say "  every 200 durable: $verdict; integrity_check: $INTEGRITY"
[ -n "$W3_FIRST" ] && say "  W3: $W3_FIRST first reports stored, $(field W3-insightd requests) answers counted by wrk (pool of $POOL_LINES; stored includes reports in flight at the end)"
say "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
