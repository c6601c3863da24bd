#!/usr/bin/env bash
# Two insightd builds side by side: runs A and B alternately (ABBA…) on one workload, each on a fresh
# state directory with the bench's wrk script and body, and prints per run and on average the
# requests per second, p99, insightd's CPU per request, the idle CPU time, and the group commits.
# A benchmark, not a test. On a shared machine one run moves by ±15 %; pairs run back to back
# see the same neighbours, so the averages of several pairs say more than any single `make bench`.
#
#   bash bench/compare.sh DIR_A DIR_B [W1|W2] [pairs] [seconds]      default W2, 4 pairs, 6 s
#
# DIR_A and DIR_B hold release builds of insightd and insightctl (e.g. a `git worktree` of the
# baseline built with `swift build -c release`). The request bodies come from insightd-bench in
# DIR_B (or DIR_A). Environment: ENV_A / ENV_B, extra VAR=value settings for one side's daemon
# (e.g. ENV_B="INSIGHTD_THREADS=1" to compare a setting on one build); BODY_A / BODY_B, another
# body template for one side (its first @ID@ gets a value of its own per request, the others
# cycle: bench/wrk/common.lua), e.g. the workload's body without its requestId to see what
# retries cost; CONNECTIONS=64, THREADS=2.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 2 ] || { sed -n '2,17p' "$0" >&2; exit 2; }
DIR_A=$(cd "$1" && pwd)
DIR_B=$(cd "$2" && pwd)
WORKLOAD=${3:-W2}
PAIRS=${4:-4}
SECONDS_RUN=${5:-6}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-2}
case "$WORKLOAD" in
    W1) BODY_FILE=w1-events150.json ;;
    W2) BODY_FILE=w2-summary.json ;;
    *) echo "compare.sh: workload must be W1 or W2" >&2; exit 2 ;;
esac
for dir in "$DIR_A" "$DIR_B"; do
    for b in insightd insightctl; do [ -x "$dir/$b" ] || { echo "compare.sh: $dir/$b is missing" >&2; exit 2; }; done
done
for tool in wrk jq curl; do command -v "$tool" >/dev/null || { echo "compare.sh: needs $tool" >&2; exit 2; }; done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/insightd-compare.XXXXXX")
PID=""
cleanup() {
    [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
BENCH_TOOL="$DIR_B/insightd-bench"
[ -x "$BENCH_TOOL" ] || BENCH_TOOL="$DIR_A/insightd-bench"
[ -x "$BENCH_TOOL" ] || { echo "compare.sh: no insightd-bench in $DIR_B or $DIR_A (for the bodies)" >&2; exit 2; }
"$BENCH_TOOL" bodies "$WORK" >/dev/null
BODY="$WORK/$BODY_FILE"

# Sums a metric's samples (all label sets) from a /metrics page.
metric() { awk -v n="$1" '$1 == n || index($1, n "{") == 1 { s += $2 } END { printf "%.6f", s }' "$2"; }
# CPU clock ticks the process used so far (user + system, all threads).
ticks() { awk '{ sub(/.*\) /, ""); split($0, f, " "); print f[12] + f[13] }' "/proc/$1/stat"; }
# Idle and iowait ticks of the whole machine.
idle() { awk '/^cpu / { print $5 + $6 }' /proc/stat; }

# run NAME DIR ENV: one run; appends "name rps p99ms cpu_us idle_s commits batch commit_ms" to results
run() {
    local name=$1 dir=$2 extra=$3 state="$WORK/state-$1" log="$WORK/log-$1" body=$BODY
    if [ "$name" = A ] && [ -n "${BODY_A:-}" ]; then body=$BODY_A; fi
    if [ "$name" = B ] && [ -n "${BODY_B:-}" ]; then body=$BODY_B; fi
    # The previous run's log goes first: the wait below could otherwise read its "ready" line
    # (and port) before the new daemon's shell truncates the file.
    rm -rf "$state" "$log"
    # A build from before the metrics listener (e.g. aaaf5ab) refuses the setting it does not
    # know, and serves /metrics on its API listener.
    local metricsListen=""
    grep -q INSIGHTD_METRICS_LISTEN "$dir/insightd" && metricsListen="INSIGHTD_METRICS_LISTEN=127.0.0.1:0"
    # wrk's connections all come from loopback: no per-address cap (64 by default since issue 45,
    # exactly the connections of a run), where the build has one.
    local perAddress=""
    grep -q INSIGHTD_MAX_CONNECTIONS_PER_ADDRESS "$dir/insightd" && perAddress="INSIGHTD_MAX_CONNECTIONS_PER_ADDRESS=0"
    # shellcheck disable=SC2086
    env INSIGHTD_STATE_DIR="$state" INSIGHTD_LISTEN=127.0.0.1:0 $metricsListen $perAddress INSIGHTD_MODELS_DIR="$ROOT/models" $extra \
        "$dir/insightd" 2>"$log" &
    PID=$!
    local port="" i
    for i in $(seq 1 100); do
        port=$(grep '"msg":"insightd ready"' "$log" 2>/dev/null | tail -1 | jq -r '.listen' 2>/dev/null | sed 's/.*://')
        [ -n "$port" ] && break
        sleep 0.1
    done
    [ -n "$port" ] || { cat "$log" >&2; echo "compare.sh: insightd ($name) did not start" >&2; exit 1; }
    local key
    key=$("$dir/insightctl" --state-dir "$state" callers create --name compare --roles evaluate \
        --environment production --rate 1000000 --burst 1000000 --json | jq -r .apiKey)
    local url="http://127.0.0.1:$port" metrics
    metrics="$url/metrics"
    [ -n "$metricsListen" ] && metrics="http://127.0.0.1:$(grep '"msg":"insightd ready"' "$log" | tail -1 | jq -r '.metricsListen' | sed 's/.*://')/metrics"
    for i in $(seq 1 50); do  # the key is valid within INSIGHTD_CREDENTIAL_CACHE
        [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/v1/evaluations" -H "Authorization: Bearer $key" \
            -H 'Content-Type: application/json' --data-binary "$(sed 's/@ID@/warmup/g' "$body")")" = 200 ] && break
        sleep 0.1
    done
    curl -s "$metrics" >"$WORK/m0"
    local c0 i0 c1 i1
    c0=$(ticks "$PID"); i0=$(idle)
    BENCH_API_KEY="$key" BENCH_BODY="$body" BENCH_TAG="$name" BENCH_THREADS="$THREADS" \
        wrk -t"$THREADS" -c"$CONNECTIONS" -d"${SECONDS_RUN}s" --latency --timeout 10s \
        -s "$ROOT/bench/wrk/evaluate.lua" "$url" >"$WORK/wrk-$name.txt" 2>&1
    c1=$(ticks "$PID"); i1=$(idle)
    curl -s "$metrics" >"$WORK/m1"
    kill -9 "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true
    PID=""
    local hz rps p99
    hz=$(getconf CLK_TCK)
    rps=$(awk '/Requests\/sec/ { print $2 }' "$WORK/wrk-$name.txt")
    p99=$(awk '$1 == "99%" { v = $2; if (v ~ /us$/) { sub(/us/, "", v); v /= 1000 } else if (v ~ /ms$/) { sub(/ms/, "", v) } else if (v ~ /s$/) { sub(/s/, "", v); v *= 1000 } print v }' "$WORK/wrk-$name.txt")
    awk -v name="$name" -v rps="$rps" -v p99="$p99" -v c="$((c1 - c0))" -v idle="$((i1 - i0))" -v hz="$hz" -v d="$SECONDS_RUN" \
        -v n1="$(metric insightd_store_commit_batch_size_count "$WORK/m1")" -v n0="$(metric insightd_store_commit_batch_size_count "$WORK/m0")" \
        -v b1="$(metric insightd_store_commit_batch_size_sum "$WORK/m1")" -v b0="$(metric insightd_store_commit_batch_size_sum "$WORK/m0")" \
        -v t1="$(metric insightd_store_commit_duration_seconds_sum "$WORK/m1")" -v t0="$(metric insightd_store_commit_duration_seconds_sum "$WORK/m0")" \
        'BEGIN {
            commits = n1 - n0; batch = 0; commit = 0
            if (commits > 0) { batch = (b1 - b0) / commits; commit = (t1 - t0) / commits * 1000 }
            printf "%s %.0f %.2f %.1f %.2f %d %.1f %.3f\n", name, rps, p99, c / hz / (rps * d) * 1e6, idle / hz, commits, batch, commit
        }' >>"$WORK/results"
    tail -1 "$WORK/results" | awk '{ printf "%-2s %8s req/s  p99 %6s ms  %6s us CPU/req  idle %5s s  commits %6s  batch %5s  commit %s ms\n", $1, $2, $3, $4, $5, $6, $7, $8 }'
}

echo "$WORKLOAD, $PAIRS pairs of ${SECONDS_RUN} s, wrk -t$THREADS -c$CONNECTIONS; A = $DIR_A ${ENV_A:-} ${BODY_A:-}; B = $DIR_B ${ENV_B:-} ${BODY_B:-}"
# The order alternates (A B, B A, A B, ...): the second run of a pair was seen to lose a few per
# cent against an identical first one, so a fixed order would count that against B.
for pair in $(seq 1 "$PAIRS"); do
    if [ $((pair % 2)) -eq 1 ]; then
        run A "$DIR_A" "${ENV_A:-}"
        run B "$DIR_B" "${ENV_B:-}"
    else
        run B "$DIR_B" "${ENV_B:-}"
        run A "$DIR_A" "${ENV_A:-}"
    fi
done
awk '{ n[$1]++; r[$1] += $2; c[$1] += $4; i[$1] += $5; b[$1] += $7 }
    END {
        split("A B", sides, " ")
        for (s = 1; s <= 2; s++) {
            k = sides[s]
            if (n[k]) printf "mean %s: %.0f req/s, %.1f us CPU/req, idle %.2f s, batch %.1f\n", k, r[k] / n[k], c[k] / n[k], i[k] / n[k], b[k] / n[k]
        }
        if (n["A"] && n["B"]) {
            rate = (r["B"] / n["B"]) / (r["A"] / n["A"]) * 100 - 100
            cpu = (c["B"] / n["B"]) / (c["A"] / n["A"]) * 100 - 100
            printf "B against A: %+.1f %% req/s, %+.1f %% CPU per request\n", rate, cpu
        }
    }' "$WORK/results"
