#!/bin/sh
# The feedback loop end to end (issue 24, docs/operations.md "Model performance"), against the
# release binaries on a real SQLite store: simulated sessions evaluated by a caller with training
# capture on, consumption reports, labels arriving after a first report, the report checked against
# counts made independently from what was sent and answered (e2e/feedback_loop.py), the labelled
# vectors exported, a new version trained from the export by training/train.py, loaded as a shadow,
# and the report comparing it with the current version on the same later traffic — its values
# checked against the same sessions answered by the new version directly, in the sandbox.
#
# Usage: e2e/feedback-loop.sh BIN_DIR        (BIN_DIR holds insightd and insightctl)
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(cd "${1:?usage: e2e/feedback-loop.sh BIN_DIR}" && pwd)
. "$ROOT/e2e/lib.sh"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/insightd-loop.XXXXXX")
PID=""
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "FAIL feedback loop: $*" >&2; [ -f "$WORK/log" ] && tail -20 "$WORK/log" >&2; exit 1; }
pass() { echo "ok   feedback loop: $*"; }
LOOP="python3 $ROOT/e2e/feedback_loop.py"
PYTHON=$(bash "$ROOT/training/venv.sh")

cp -R "$ROOT/models" "$WORK/models"
export INSIGHTD_STATE_DIR="$WORK/state" INSIGHTD_MODELS_DIR="$WORK/models"
TODAY=$(date -u +%F)

# start [VAR=value...]: the daemon on a free port, with these settings beside the exported ones.
start() {
    : >"$WORK/log"
    env INSIGHTD_LISTEN=127.0.0.1:0 INSIGHTD_METRICS_LISTEN=127.0.0.1:0 "$@" "$BIN/insightd" 2>"$WORK/log" &
    PID=$!
    wait_ready "$WORK/log" "$PID" || fail "insightd did not start"
    B="http://127.0.0.1:$PORT"
}
stop() { kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""; }
report() {
    curl -sf -o "$1" "$B/admin/v1/model-performance?from=$TODAY&to=$TODAY" -H "Authorization: Bearer $ADMIN" ||
        fail "the report: $(cat "$1" 2>/dev/null)"
}

"$BIN/insightctl" init >/dev/null
CREATED=$("$BIN/insightctl" callers create --name loop --roles evaluate,labels --environment production \
    --rate 100000 --burst 100000 --json)
KEY=$(echo "$CREATED" | jq -r .apiKey)
CALLER=$(echo "$CREATED" | jq -r .callerId)
"$BIN/insightctl" callers update "$CALLER" --training-capture on >/dev/null || fail "callers update --training-capture on"
ADMIN=$("$BIN/insightctl" callers create --name loop-admin --roles admin --environment production --json | jq -r .apiKey)
SANDBOX=$("$BIN/insightctl" callers create --name loop-sandbox --roles evaluate --environment sandbox \
    --rate 100000 --burst 100000 --json | jq -r .apiKey)

# 1. Traffic on the current version, with capture on, and its consumption reports.
python3 "$ROOT/training/simulate.py" --count 1500 --seed 24001 >"$WORK/first.jsonl"
start
$LOOP traffic "$B" "$KEY" "$WORK/first.jsonl" "$WORK/first.ledger" --prefix first || fail "first traffic"
report "$WORK/report0.json"
[ "$(jq '[.versions[].labelled[][]] | add' "$WORK/report0.json")" = 0 ] || fail "labels counted before any was sent"
[ "$(jq -r .mature "$WORK/report0.json")" = false ] || fail "today's evaluations reported mature"
pass "1,500 evaluations with capture on; reported before any label: no labels, not mature"

# 2. Labels arrive later; the report against the independent count.
$LOOP label "$B" "$KEY" "$WORK/first.ledger" || fail "labels"
report "$WORK/report1.json"
$LOOP check "$WORK/report1.json" "$WORK/first.ledger" 2.0 --role served || fail "report after labels"
pass "report after the labels agrees with the independent count"

# 3. Export (labelled vectors, then with unlabelled ones presumed genuine once mature) and train.
stop
"$BIN/insightctl" training export --from "$TODAY" --to "$TODAY" --out "$WORK/labelled.jsonl" 2>"$WORK/export.err" ||
    fail "export: $(cat "$WORK/export.err")"
[ "$(wc -l <"$WORK/labelled.jsonl")" -eq "$(jq -s '[.[] | select(.label)] | length' "$WORK/first.ledger")" ] ||
    fail "the export has $(wc -l <"$WORK/labelled.jsonl") lines, not one per labelled evaluation"
if grep -E -q 'first-(account|device)|"eventId"|"insightId"' "$WORK/labelled.jsonl"; then fail "the export names an evaluation or a person"; fi
INSIGHTD_LABEL_MATURITY_DAYS=0 "$BIN/insightctl" training export --from "$TODAY" --to "$TODAY" \
    --presume-genuine-after-maturity --out "$WORK/export.jsonl" 2>"$WORK/export.err" || fail "export: $(cat "$WORK/export.err")"
[ "$(wc -l <"$WORK/export.jsonl")" -eq 1500 ] || fail "presumed genuine: $(wc -l <"$WORK/export.jsonl") lines, not 1500"
(cd "$ROOT/training" && PYTHONHASHSEED=0 OMP_NUM_THREADS=1 "$PYTHON" train.py --from-export "$WORK/export.jsonl" \
    --version 3.0 --out "$WORK/models") >"$WORK/train.log" 2>&1 || { cat "$WORK/train.log" >&2; fail "training from the export"; }
[ -f "$WORK/models/3.0/manifest.json" ] || fail "no manifest for 3.0"
pass "exported $(wc -l <"$WORK/labelled.jsonl") labelled vectors (1,500 with presumed genuine) and trained 3.0 from them"

# 4. 3.0 as a shadow of 2.0 on new traffic; the same sessions answered by 3.0 directly in the sandbox.
INSIGHTD_MODEL_SHADOW=3.0 "$BIN/insightctl" models list --json | jq -e '[.[] | select(.shadow) | .version] == ["3.0"]' >/dev/null ||
    fail "models list does not show 3.0 as the shadow"
INSIGHTD_MODEL_SHADOW=2.0 "$BIN/insightctl" models list >/dev/null 2>&1 && fail "models list took the current version as a shadow"
start INSIGHTD_MODEL_SHADOW=3.0
python3 "$ROOT/training/simulate.py" --count 800 --seed 24002 >"$WORK/second.jsonl"
$LOOP traffic "$B" "$KEY" "$WORK/second.jsonl" "$WORK/second.ledger" --prefix second || fail "second traffic"
$LOOP traffic "$B" "$SANDBOX" "$WORK/second.jsonl" "$WORK/direct.ledger" --prefix direct --version 3.0 || fail "sandbox traffic"
grep -q '"modelVersion": *"3.0"' "$WORK/second.ledger" && fail "a production answer came from the shadow version"
$LOOP label "$B" "$KEY" "$WORK/second.ledger" || fail "labels of the second traffic"
report "$WORK/report2.json"
cat "$WORK/first.ledger" "$WORK/second.ledger" >"$WORK/both.ledger"
$LOOP check "$WORK/report2.json" "$WORK/both.ledger" 2.0 --role served || fail "served rows beside the shadow"
$LOOP check "$WORK/report2.json" "$WORK/second.ledger" 3.0 --role shadow --values-from "$WORK/direct.ledger" ||
    fail "shadow rows"
$LOOP compare "$WORK/report2.json" | sed 's/^/     /'
pass "3.0 as a shadow: never answered, reported on the same 800 evaluations with the served version's labels"
stop
