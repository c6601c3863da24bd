#!/bin/sh
# Instructions per request: insightd under valgrind's callgrind while wrk sends one workload for
# a few seconds; prints the user-space instructions the whole process executed per answered
# request, and keeps the profile for callgrind_annotate.
#
# A benchmark, not a test. On a shared machine req/s and even CPU time per request move by
# ±15 % from run to run (other tenants, hypervisor steal); an instruction count moves by a few
# per cent (batch sizes differ from run to run), so it shows whether a change made the code do
# less. It does not show what the change did to time: kernel work (sockets, fsync) is not
# counted, and fewer instructions can still take longer (cache misses, mispredictions) or more
# take less (walks that overlap). Confirm a gain with `make bench`.
#
#   sh bench/instructions.sh [W1|W2] [seconds]      default W2, 8 s
#
# Environment: BIN_DIR (prebuilt release binaries; default: build them), INSTR_KEEP=1 keeps the
# work directory (callgrind.out, the log). Installs valgrind and wrk when missing.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
WORKLOAD=${1:-W2}
SECONDS_RUN=${2:-8}
case "$WORKLOAD" in
    W1) BODY=w1-events150.json ;;
    W2) BODY=w2-summary.json ;;
    *) echo "instructions.sh: workload must be W1 or W2" >&2; exit 2 ;;
esac
SWIFT=${SWIFT:-swift}

missing=""
command -v valgrind >/dev/null 2>&1 || missing="$missing valgrind"
command -v wrk >/dev/null 2>&1 || missing="$missing wrk"
if [ -n "$missing" ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq -o Dpkg::Use-Pty=0 --no-install-recommends $missing
fi
if [ -z "${BIN_DIR:-}" ]; then
    for product in insightd insightctl insightd-bench; do "$SWIFT" build -c release --product "$product"; done
    BIN_DIR=$("$SWIFT" build -c release --show-bin-path)
fi
BIN=$(cd "$BIN_DIR" && pwd)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/insightd-instructions.XXXXXX")
PID=""
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    if [ "${INSTR_KEEP:-0}" = 1 ]; then echo "kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
"$BIN/insightd-bench" bodies "$WORK" >/dev/null
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export INSIGHTD_STATE_DIR="$WORK/state" INSIGHTD_LISTEN="127.0.0.1:$PORT" INSIGHTD_METRICS_LISTEN=off INSIGHTD_MODELS_DIR="$ROOT/models"
export INSIGHTD_DEVICE_LIMIT_PER_HOUR=1000000
"$BIN/insightctl" init >/dev/null
KEY=$("$BIN/insightctl" callers create --name instructions --roles evaluate --environment production \
    --rate 1000000 --burst 1000000 --json | sed -n 's/.*"apiKey" *: *"\([^"]*\)".*/\1/p')
# Instrumentation starts off (start-up and warm-up are not counted) and is switched on for the run.
# The allocator tuning insightd would otherwise apply by executing itself again (which valgrind
# cannot follow: /proc/self/exe is valgrind there) is set here, so the profile is of the daemon
# as it runs (docs/operations.md, "Capacity").
GLIBC_TUNABLES=glibc.malloc.tcache_count=128 valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$WORK/callgrind.out" \
    "$BIN/insightd" 2>"$WORK/insightd.log" &
PID=$!
i=0
until curl -fsS "http://127.0.0.1:$PORT/livez" >/dev/null 2>&1; do
    i=$((i + 1)); [ "$i" -lt 120 ] || { echo "insightd did not start under valgrind" >&2; exit 1; }
    sleep 0.5
done
run() {
    BENCH_API_KEY=$KEY BENCH_BODY="$WORK/$BODY" BENCH_TAG=$WORKLOAD BENCH_THREADS=1 \
        wrk -t1 -c8 -d"$1" -s bench/wrk/evaluate.lua "http://127.0.0.1:$PORT"
}
run 2s >/dev/null   # warm-up: caches, first allocations, the statement cache
callgrind_control -i on "$PID" >/dev/null 2>&1
RESULT=$(run "${SECONDS_RUN}s" | grep BENCH_RESULT)
callgrind_control -i off "$PID" >/dev/null 2>&1
kill "$PID"; wait "$PID" 2>/dev/null || true
PID=""
REQUESTS=$(echo "$RESULT" | sed 's/.*requests=\([0-9]*\).*/\1/')
TOTAL=$(callgrind_annotate "$WORK"/callgrind.out* 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }')
echo "$WORKLOAD: $REQUESTS requests, $TOTAL instructions, $((TOTAL / REQUESTS)) per request (user space, whole process)"
echo "  where: callgrind_annotate --inclusive=yes $WORK/callgrind.out | swift demangle --simplified (with INSTR_KEEP=1)"
