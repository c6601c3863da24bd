#!/bin/sh
# End-to-end test of the real binaries: start insightd on a free port, create a caller with
# insightctl, run evaluate -> consume -> label, check errors, kill -9 after 200s and check
# nothing acknowledged was lost, and scan the state directory for raw identifiers.
# Usage: e2e/e2e.sh BIN_DIR
set -eu
BIN=$(cd "${1:-.build/release}" && pwd)
WORK=$(mktemp -d)
STATE="$WORK/state"
LOG="$WORK/insightd.log"
PID=""
cleanup() { [ -n "$PID" ] && kill -9 "$PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
fail() { echo "e2e: FAIL: $*" >&2; echo "--- insightd log" >&2; cat "$LOG" >&2 || true; exit 1; }
pass() { echo "e2e: ok: $*"; }

export INSIGHTD_STATE_DIR="$STATE" INSIGHTD_LISTEN=127.0.0.1:0 INSIGHTD_METRICS_LISTEN=127.0.0.1:0 INSIGHTD_MODELS_DIR="$(pwd)/models"
[ -d "$INSIGHTD_MODELS_DIR" ] || unset INSIGHTD_MODELS_DIR

# The decision policy from a file (the shipped default under another version), reloaded on SIGHUP.
POLICY="$WORK/decision-policy.jsonl"
sed 's/"default-1"/"e2e-1"/' "$(dirname "$0")/../deploy/decision-policy.jsonl" >"$POLICY"
export INSIGHTD_DECISION_POLICY="$POLICY"

. "$(dirname "$0")/lib.sh"
start() {
    "$BIN/insightd" 2>>"$LOG" &
    PID=$!
    wait_ready "$LOG" "$PID" || fail "insightd did not become ready"
}


# --check-config
INSIGHTD_THREADS=0 "$BIN/insightd" --check-config 2>"$WORK/cc.err" && fail "--check-config accepted INSIGHTD_THREADS=0"
grep -q INSIGHTD_THREADS "$WORK/cc.err" || fail "--check-config did not name INSIGHTD_THREADS"
INSIGHTD_LISTN=x "$BIN/insightd" --check-config 2>/dev/null && fail "--check-config accepted a misspelt variable"
"$BIN/insightd" --check-config >/dev/null || fail "--check-config rejected the defaults"
printf '{"policyVersion": "x"}\n{"id": "a", "when": {"colour": ["red"]}, "action": "block"}\n' >"$WORK/bad-policy.jsonl"
INSIGHTD_DECISION_POLICY="$WORK/bad-policy.jsonl" "$BIN/insightd" --check-config 2>"$WORK/cc.err" && fail "--check-config accepted a bad decision policy"
grep -q 'line 2: when: unknown fact "colour"' "$WORK/cc.err" || fail "--check-config did not name the policy's line: $(cat "$WORK/cc.err")"
pass "check-config"

# insightctl policy test: each case's answer, and exit 1 when one differs from what it expects.
printf '{"coaching": "high", "initiator": {"kind": "agent"}, "expect": "block"}\n{"category": "account"}\n' >"$WORK/cases.jsonl"
"$BIN/insightctl" policy test "$WORK/cases.jsonl" --policy "$POLICY" >"$WORK/cases.out" || fail "policy test: $(cat "$WORK/cases.out")"
grep -q '^line 1: block agentWhileCoachingHigh$' "$WORK/cases.out" || fail "policy test printed: $(cat "$WORK/cases.out")"
grep -q '^2 cases, policy e2e-1$' "$WORK/cases.out" || fail "policy test summary: $(cat "$WORK/cases.out")"
printf '{"coaching": "unknown", "expect": "block"}\n' >"$WORK/cases.jsonl"
"$BIN/insightctl" policy test "$WORK/cases.jsonl" >"$WORK/cases.out" && fail "policy test accepted a mismatch"
grep -q 'MISMATCH' "$WORK/cases.out" || fail "policy test did not mark the mismatch: $(cat "$WORK/cases.out")"
pass "insightctl policy test"

"$BIN/insightctl" init | grep -q "created the store at .*; applied: 0001_initial" || fail "insightctl init"
start
B="http://127.0.0.1:$PORT"
# The daemon executes itself once under a larger malloc thread cache (same process id). (The
# dynamic loader rewrites GLIBC_TUNABLES where /proc shows it, keeping only the first tunable:
# check one at a time.)
tuned() { tr '\0' '\n' <"/proc/$PID/environ" | grep -qx "GLIBC_TUNABLES=$1"; }
tuned "glibc.malloc.tcache_count=128" || fail "insightd does not run with glibc.malloc.tcache_count=128"
[ "$(cat "/proc/$PID/comm")" = insightd ] || fail "the re-executed process is called $(cat "/proc/$PID/comm"), not insightd"
pass "allocator tuned"
CREATED=$("$BIN/insightctl" callers create --name e2e --roles evaluate,labels --environment production --json)
KEY=$(echo "$CREATED" | jq -r .apiKey)
KEYID=$(echo "$CREATED" | jq -r .keyId)
[ "${KEY#ik_}" != "$KEY" ] || fail "callers create printed no key"
"$BIN/insightctl" callers list | grep -q e2e || fail "callers list"
pass "caller created while running"

post() { curl -s -o "$WORK/body" -w '%{http_code}' -X POST "$B$1" -H "Authorization: Bearer $2" -H 'Content-Type: application/json' ${4:+-H "$4"} --data-binary "$3"; }
ACCOUNT="e2e-account-7f3a9"
DEVICE="e2e-device-41bb"
EVAL='{"requestId":"txn-1","operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"subject":{"account":"'$ACCOUNT'","device":"'$DEVICE'","counterparty":"e2e-payee-x"},"interaction":{"events":[{"t":0,"type":"sessionStart"},{"t":900,"type":"fieldFocus","field":"payee"},{"t":1200,"type":"keyDown","field":"payee"},{"t":5000,"type":"submit"}],"device":{"activeCall":true}}}'
[ "$(post /v1/evaluations "$KEY" "$EVAL")" = 200 ] || fail "evaluate: $(cat "$WORK/body")"
EVENT=$(jq -r .eventId "$WORK/body")
INSIGHT=$(jq -r '.insights[0].insightId' "$WORK/body")
[ "$(jq -r .requestId "$WORK/body")" = txn-1 ] || fail "requestId not echoed"
[ "$(jq -r .environment "$WORK/body")" = production ] || fail "environment"
[ "$(jq -r .decision.policyVersion "$WORK/body")" = e2e-1 ] || fail "decision: $(cat "$WORK/body")"
pass "evaluate"

[ "$(post "/v1/evaluations/$EVENT/consumption" "$KEY" '{"status":"usedIncreasedFriction","insightIdsUsed":["'$INSIGHT'"]}')" = 204 ] || fail "consume: $(cat "$WORK/body")"
[ "$(post "/v1/evaluations/$EVENT/consumption" "$KEY" '{"status":"usedIncreasedFriction","insightIdsUsed":["'$INSIGHT'"]}')" = 204 ] || fail "repeat consume"
[ "$(post "/v1/evaluations/$EVENT/consumption" "$KEY" '{"status":"notUsedNotNeeded"}')" = 409 ] || fail "conflicting consume"
pass "consume"

LABELS='{"labels":[{"insightId":"'$INSIGHT'","outcome":"confirmedFraud","fraudType":"authorityImpersonation","discoveredAt":"2026-11-30"}]}'
[ "$(post /v1/labels "$KEY" "$LABELS" "Idempotency-Key: e2e-1")" = 200 ] || fail "labels: $(cat "$WORK/body")"
[ "$(jq -r '.results[0].status' "$WORK/body")" = accepted ] || fail "label not accepted: $(cat "$WORK/body")"
[ "$(post /v1/labels "$KEY" "$LABELS" "Idempotency-Key: e2e-1")" = 200 ] || fail "label replay"
[ "$(jq -r '.results[0].status' "$WORK/body")" = accepted ] || fail "replay differs"
pass "labels"

# SIGHUP reloads models while requests keep being answered.
if [ -n "${INSIGHTD_MODELS_DIR:-}" ]; then
    loaded=$(grep -c '"models loaded"' "$LOG")
    ( for i in $(seq 1 40); do post /v1/evaluations "$KEY" "$EVAL" >>"$WORK/hup-statuses"; echo >>"$WORK/hup-statuses"; done ) &
    LOOP=$!
    kill -HUP "$PID"; sleep 0.2; kill -HUP "$PID"
    wait "$LOOP"
    [ "$(grep -c '"models loaded"' "$LOG")" -ge $((loaded + 2)) ] || fail "SIGHUP did not reload models"
    [ "$(grep -vc '^200$' "$WORK/hup-statuses")" = 0 ] || fail "a request failed during reload: $(sort "$WORK/hup-statuses" | uniq -c)"
    pass "SIGHUP reload under load"
fi
# A decision policy that does not parse is refused on SIGHUP, logged, and the one in force stays.
decisions=$(grep -c '"decision policy loaded"' "$LOG")
kill -HUP "$PID"; sleep 0.3
[ "$(grep -c '"decision policy loaded"' "$LOG")" -gt "$decisions" ] || fail "SIGHUP did not reload the decision policy"
cp "$POLICY" "$WORK/policy.good"; cp "$WORK/bad-policy.jsonl" "$POLICY"
kill -HUP "$PID"; sleep 0.3
grep -q '"decision policy reload failed; keeping the policies in use".*line 2' "$LOG" || fail "a bad decision policy was not logged"
[ "$(post /v1/evaluations "$KEY" "$EVAL")" = 200 ] || fail "evaluate after a bad policy: $(cat "$WORK/body")"
[ "$(jq -r .decision.policyVersion "$WORK/body")" = e2e-1 ] || fail "the policy in force changed: $(cat "$WORK/body")"
cp "$WORK/policy.good" "$POLICY"
pass "decision policy reloaded on SIGHUP, a bad one refused"

# Rate-limit state from the running daemon, through insightctl.
CALLER=$(echo "$CREATED" | jq -r .callerId)
ADMIN=$("$BIN/insightctl" callers create --name e2e-admin --roles admin --environment production --json | jq -r .apiKey)
(umask 077; echo "$ADMIN" >"$WORK/admin.key")
"$BIN/insightctl" rate-limit show "$CALLER" --url "$B" --key-file "$WORK/admin.key" >"$WORK/rl" || fail "rate-limit show"
grep -q "^policy *50/s, burst 100" "$WORK/rl" || fail "rate-limit show printed: $(cat "$WORK/rl")"
[ "$(INSIGHTD_ADMIN_KEY=$ADMIN "$BIN/insightctl" rate-limit reset "$CALLER" --url "$B" --json | jq -r .penalty.step)" = 0 ] || fail "rate-limit reset"
INSIGHTD_ADMIN_KEY=$KEY "$BIN/insightctl" rate-limit show "$CALLER" --url "$B" 2>"$WORK/rl.err" && fail "rate-limit show without admin role"
grep -q "403 forbidden" "$WORK/rl.err" || fail "rate-limit show error: $(cat "$WORK/rl.err")"
# A key on the command line would be visible to every user through ps: refused.
"$BIN/insightctl" rate-limit show "$CALLER" --url "$B" --key "$ADMIN" 2>"$WORK/rl.err" && fail "rate-limit show took --key"
grep -q "visible to every user" "$WORK/rl.err" || fail "rate-limit --key error: $(cat "$WORK/rl.err")"
pass "rate-limit show/reset (key from a file or the environment only)"

# The model performance report, through insightctl and the API: the same figures; today is not mature.
TODAY=$(date -u +%Y-%m-%d)
"$BIN/insightctl" models report --from "$TODAY" --to "$TODAY" --url "$B" --key-file "$WORK/admin.key" --json >"$WORK/mp.json" \
    || fail "models report"
curl -sf -H "Authorization: Bearer $ADMIN" "$B/admin/v1/model-performance?from=$TODAY&to=$TODAY" >"$WORK/mp-api.json" \
    || fail "GET /admin/v1/model-performance"
[ "$(jq -S 'del(.matureBefore)' "$WORK/mp.json")" = "$(jq -S 'del(.matureBefore)' "$WORK/mp-api.json")" ] \
    || fail "models report differs from the API: $(cat "$WORK/mp.json")"
[ "$(jq -r .mature "$WORK/mp.json")" = false ] || fail "today's report is mature: $(cat "$WORK/mp.json")"
"$BIN/insightctl" models report --from "$TODAY" --to "$TODAY" --url "$B" --key-file "$WORK/admin.key" >"$WORK/mp.txt" \
    || fail "models report (text)"
grep -q "not mature" "$WORK/mp.txt" || fail "models report printed: $(cat "$WORK/mp.txt")"
"$BIN/insightctl" models report --from "$TODAY" --to 2000-01-01 --url "$B" --key-file "$WORK/admin.key" 2>"$WORK/mp.err" \
    && fail "models report took a period ending before it starts"
grep -q "422 contextInvalid" "$WORK/mp.err" || fail "models report error: $(cat "$WORK/mp.err")"
pass "models report (insightctl and the API agree)"

# Tenants: a caller of another tenant, listed apart; an admin of one tenant does not see the other's callers.
OTHER=$("$BIN/insightctl" callers create --name e2e-other --roles evaluate,admin --environment production --tenant acme --json)
[ "$(echo "$OTHER" | jq -r .tenant)" = acme ] || fail "callers create --tenant: $OTHER"
"$BIN/insightctl" tenants list --json | jq -e '[.[].tenant] == ["acme", "default"]' >/dev/null || fail "tenants list: $("$BIN/insightctl" tenants list)"
"$BIN/insightctl" callers list --tenant acme --json | jq -e 'length == 1 and .[0].tenant == "acme" and .[0].name == "e2e-other"' >/dev/null \
    || fail "callers list --tenant: $("$BIN/insightctl" callers list --tenant acme --json)"
OTHER_KEY=$(echo "$OTHER" | jq -r .apiKey)
[ "$(curl -s -H "Authorization: Bearer $OTHER_KEY" "$B/admin/v1/callers" | jq -r '[.callers[].tenant] | unique | join(",")')" = acme ] \
    || fail "an acme admin sees other tenants' callers"
[ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $OTHER_KEY" "$B/admin/v1/callers/$CALLER/rate-limit")" = 404 ] \
    || fail "an acme admin reads a default caller's rate limit"
pass "tenants: create, list, admin views scoped"

# The person's view: a subject seen by two callers is shown, then erased, through insightctl with
# the identifier on standard input (never in ps or the shell's history); then no byte of its
# hashes is left in the state directory.
PERSON="e2e-person-5521"
OFFICER=$("$BIN/insightctl" callers create --name e2e-officer --roles evaluate,admin --environment production --json | jq -r .apiKey)
(umask 077; echo "$OFFICER" >"$WORK/officer.key")
WEB=$("$BIN/insightctl" callers create --name e2e-web --roles evaluate --environment production --json | jq -r .apiKey)
for k in "$KEY" "$WEB"; do
    [ "$(post /v1/evaluations "$k" '{"operationCategory":"payment","insights":[{"type":"isLikelyBeingCoached","schemaVersion":1}],"subject":{"account":"'$PERSON'"}}')" = 200 ] \
        || fail "evaluate the person: $(cat "$WORK/body")"
done
subjects() { printf '%s\n' "$PERSON" | "$BIN/insightctl" subjects "$@" --account - --url "$B" --key-file "$WORK/officer.key"; }
subjects show --json >"$WORK/shown" || fail "subjects show"
jq -e '(.evaluations | length) == 2 and ([.evaluations[].callerName] | sort) == ["e2e", "e2e-web"] and .authorization.status == "authorized"' \
    "$WORK/shown" >/dev/null || fail "subjects show printed: $(cat "$WORK/shown")"
subjects show | grep -q "by e2e-web" || fail "subjects show (table): $(subjects show)"
hashes_in_state() {
    found=0
    for hash in $("$BIN/insightctl" hash --kind account "$PERSON" | cut -d' ' -f1); do
        # Every file under the state directory, however deep (the signing keys are in a folder).
        for file in $(find "$STATE" -type f); do
            od -An -v -tx1 "$file" | tr -d ' \n' | grep -q "$hash" && { echo "$(basename "$file")"; found=1; }
        done
    done
    return $((1 - found))
}
hashes_in_state >/dev/null || fail "the scan does not find the person's hash before the erasure"
subjects erase --tenant acme 2>"$WORK/erase.err" && fail "subjects erase in another tenant than the key's"
grep -q "422 contextInvalid" "$WORK/erase.err" || fail "subjects erase --tenant error: $(cat "$WORK/erase.err")"
subjects erase --tenant default >"$WORK/erased" || fail "subjects erase"
grep -q "erased in tenant default: 2 evaluations unlinked, 0 opt-outs deleted" "$WORK/erased" || fail "subjects erase printed: $(cat "$WORK/erased")"
subjects show | grep -q "^no evaluations" || fail "the erased person is still shown: $(subjects show)"
grep '"subject erased"' "$LOG" | grep -q '"evaluations":2' || fail "no audit line for the erasure"
grep -q -- "$PERSON" "$LOG" && fail "the erased identifier is in the log"
left=$(hashes_in_state) && fail "a hash of the erased person is in $left"
for hash in $("$BIN/insightctl" hash --kind account "$PERSON" | cut -d' ' -f1); do
    grep -q "$hash" "$LOG" && fail "a hash of the erased person is in the log"
done
pass "subjects show/erase: a person seen by two callers, erased, no hash left in $(ls "$STATE" | tr '\n' ' ')"

# Private files: the hash keyring and a backup are created 0600, never readable by others.
[ "$(stat -c %a "$INSIGHTD_STATE_DIR/hash.key")" = 600 ] || fail "hash.key mode $(stat -c %a "$INSIGHTD_STATE_DIR/hash.key")"
(umask 000; "$BIN/insightctl" backup "$WORK/backup.db" >/dev/null) || fail "backup"
[ "$(stat -c %a "$WORK/backup.db")" = 600 ] || fail "backup mode $(stat -c %a "$WORK/backup.db") under umask 000"
"$BIN/insightctl" backup "$WORK/backup.db" 2>/dev/null && fail "backup replaced an existing file"
ls "$WORK" | grep -q '\.tmp-' && fail "a temporary file was left behind: $(ls "$WORK")"
pass "hash key file and backup are private (0600)"
# Receipts: Python's `cryptography` and `hashlib` (independent of the daemon's code) verify a real
# answer's receipt against the JWKS and the tenant and environment it names; a tampered body
# fails; an answer proven before a rotation still verifies after it; the key files are 0600
# outside the database; the stored chain verifies (insightctl receipts verify).
VERIFY="$(dirname "$0")/verify_receipt.py"
# Each with a requestId of its own: a retry of one is answered with the first answer's receipt.
proven() { curl -s -D "$WORK/headers" -o "$WORK/$1" -X POST "$B/v1/evaluations" -H "Authorization: Bearer $KEY" \
    -H 'Content-Type: application/json' --data-binary "$(printf '%s' "$EVAL" | sed "s/txn-1/proof-$(date +%s%N)/")"
    tr -d '\r' <"$WORK/headers" | sed -n 's/^[Ii]nsight-[Rr]eceipt: //p'; }
kid_of() { python3 -c 'import base64,json,re,sys; h=re.match(r"head=\"([^.]+)", sys.argv[1]).group(1); print(json.loads(base64.urlsafe_b64decode(h+"="*(-len(h)%4)))["kid"])' "$1"; }
R1=$(proven proven1)
[ -n "$R1" ] || fail "a 200 of POST /v1/evaluations without Insight-Receipt"
grep -qi '^insight-signature:' "$WORK/headers" && fail "an answer still carries Insight-Signature"
curl -sf "$B/v1/signing-keys" -o "$WORK/jwks" || fail "GET /v1/signing-keys"
ENVIRONMENT=$(jq -r .environment "$WORK/proven1")
python3 "$VERIFY" "$WORK/jwks" "$WORK/proven1" "$R1" --tenant default --environment "$ENVIRONMENT" >/dev/null \
    || fail "python could not verify a real answer's receipt"
KID1=$(kid_of "$R1")
chain_of() { python3 -c 'import base64,json,re,sys; p=re.match(r"head=\"[^.]+\.([^.]+)", sys.argv[1]).group(1); h=json.loads(base64.urlsafe_b64decode(p+"="*(-len(p)%4))); print(h["instance"], h["tenant"], h["environment"])' "$1"; }
CHAIN1=$(chain_of "$R1")
[ "${CHAIN1#* }" = "default $ENVIRONMENT" ] || fail "the head does not name the answer's tenant and environment: $CHAIN1"
curl -sf -H "Authorization: Bearer $KEY" "$B/v1/receipts/heads" | jq -e --arg e "$ENVIRONMENT" \
    '.heads | length > 0 and all(.tenant == "default" and .environment == $e)' >/dev/null \
    || fail "GET /v1/receipts/heads shows another tenant's or environment's chain"
sed 's/production/productiom/' "$WORK/proven1" >"$WORK/tampered"
python3 "$VERIFY" "$WORK/jwks" "$WORK/tampered" "$R1" 2>/dev/null && fail "a tampered body verified"
python3 "$VERIFY" "$WORK/jwks" "$WORK/proven1" "$R1" --tenant another 2>/dev/null && fail "another tenant's answer passed"
KEYFILE="$INSIGHTD_STATE_DIR/signing-keys/$KID1.key"
[ "$(stat -c %a "$KEYFILE")" = 600 ] || fail "signing key mode $(stat -c %a "$KEYFILE")"
SEED=$(sed -n 's/^seed //p' "$KEYFILE")
grep -qi "$SEED" "$LOG" "$INSIGHTD_STATE_DIR"/insightd.db* && fail "the signing key is in the log or the database"
"$BIN/insightctl" signing-keys rotate | grep -q "published now, signs from now" || fail "signing-keys rotate"
for _ in $(seq 1 100); do
    R2=$(proven proven2)
    KID2=$(kid_of "$R2")
    [ "$KID2" != "$KID1" ] && break
    sleep 0.1
done
[ "$KID2" != "$KID1" ] || fail "the daemon did not pick up the rotated signing key"
curl -sf "$B/v1/signing-keys" -o "$WORK/jwks" || fail "GET /v1/signing-keys after rotation"
python3 "$VERIFY" "$WORK/jwks" "$WORK/proven1" "$R1" | grep -q " $KID1\$" || fail "an answer proven before the rotation does not verify after it"
python3 "$VERIFY" "$WORK/jwks" "$WORK/proven2" "$R2" | grep -q " $KID2\$" || fail "an answer of the new key does not verify"
"$BIN/insightctl" signing-keys retire "$KID2" 2>/dev/null && fail "the current signing key was retired"
"$BIN/insightctl" signing-keys retire "$KID1" | grep -q "stays published until" || fail "signing-keys retire"
"$BIN/insightctl" signing-keys list | grep -q "^$KID1 .* retired " || fail "signing-keys list: $("$BIN/insightctl" signing-keys list)"
"$BIN/insightctl" receipts verify | grep -q "verified from the chain's start" || fail "receipts verify: $("$BIN/insightctl" receipts verify)"
pass "receipts: verified by python cryptography and hashlib, heads name their tenant and environment and list only the caller's chains, tamper and another tenant detected, rotation keeps old answers verifiable, the chain verifies"

# Errors are problem+json with a code.
code=$(curl -s -o "$WORK/body" -w '%{http_code}' "$B/nope")
[ "$code" = 404 ] && [ "$(jq -r .code "$WORK/body")" = notFound ] || fail "404"
code=$(curl -s -o "$WORK/body" -w '%{http_code}' -H "Authorization: Bearer $KEY" -X POST -H 'Content-Type: text/plain' -d x "$B/v1/evaluations")
[ "$code" = 415 ] || fail "415 ($code)"
pass "errors"

# Durability: every evaluation answered 200 survives kill -9.
: >"$WORK/events"
for i in $(seq 1 30); do
    # A requestId of its own each: the same one again would be answered with the first evaluation.
    [ "$(post /v1/evaluations "$KEY" "$(printf '%s' "$EVAL" | sed "s/\"txn-1\"/\"txn-kill-$i\"/")")" = 200 ] || fail "evaluate $i"
    jq -r .eventId "$WORK/body" >>"$WORK/events"
done
kill -9 "$PID"; wait "$PID" 2>/dev/null || true; PID=""
export GLIBC_TUNABLES="glibc.malloc.tcache_count=7"
start
unset GLIBC_TUNABLES
tuned "glibc.malloc.tcache_count=7" || fail "the operator's glibc.malloc.tcache_count was not kept"
B="http://127.0.0.1:$PORT"
while read -r event; do
    [ "$(post "/v1/evaluations/$event/consumption" "$KEY" '{"status":"notUsedNotNeeded"}')" = 204 ] || fail "evaluation $event lost after kill -9"
done <"$WORK/events"
[ "$(sqlite3 "$STATE/insightd.db" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check"
pass "kill -9 lost nothing ($(wc -l <"$WORK/events") evaluations)"

# Revocation takes effect without a restart.
"$BIN/insightctl" keys revoke "$KEYID" >/dev/null
sleep 3
[ "$(post /v1/evaluations "$KEY" "$EVAL")" = 401 ] || fail "revoked key still accepted"
pass "revocation"

# Graceful stop.
kill -TERM "$PID"
wait "$PID" || fail "SIGTERM exit status"
PID=""
grep -q '"insightd stopped"' "$LOG" || fail "no stop log"
pass "SIGTERM"

# TLS: the same daemon over HTTPS with a certificate made here; plain HTTP gets no answer.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=localhost \
    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" -keyout "$WORK/tls.key" -out "$WORK/tls.crt" 2>/dev/null \
    || fail "openssl could not make a test certificate"
INSIGHTD_TLS_CERT="$WORK/tls.crt" INSIGHTD_TLS_KEY="$WORK/tls.key" start
curl -sf --cacert "$WORK/tls.crt" "https://127.0.0.1:$PORT/livez" >/dev/null || fail "HTTPS /livez"
[ "$(curl -s --cacert "$WORK/tls.crt" -o /dev/null -w '%{http_code}' -X POST "https://127.0.0.1:$PORT/v1/evaluations" \
     -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' -d '{}')" = 403 ] || fail "HTTPS evaluate"
curl -s --max-time 3 "http://127.0.0.1:$PORT/livez" >/dev/null 2>&1 && fail "plain HTTP answered on the TLS port"
INSIGHTD_TLS_CERT="$WORK/tls.crt" "$BIN/insightd" --check-config 2>/dev/null && fail "--check-config accepted a certificate without a key"
# A renewed certificate is picked up on SIGHUP, without a restart.
served() { echo | openssl s_client -connect "127.0.0.1:$PORT" 2>/dev/null | openssl x509 -noout -subject 2>/dev/null; }
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=renewed \
    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" -keyout "$WORK/tls.key.new" -out "$WORK/tls.crt.new" 2>/dev/null \
    || fail "openssl could not make a second test certificate"
mv "$WORK/tls.key.new" "$WORK/tls.key"; mv "$WORK/tls.crt.new" "$WORK/tls.crt"
kill -HUP "$PID"
for _ in $(seq 1 50); do grep -q '"TLS certificate reloaded"' "$LOG" && break; sleep 0.1; done
served | grep -q "CN *= *renewed" || fail "SIGHUP did not load the renewed certificate ($(served))"
curl -sf --cacert "$WORK/tls.crt" "https://127.0.0.1:$PORT/livez" >/dev/null || fail "HTTPS /livez after the reload"
kill -TERM "$PID"; wait "$PID" || fail "SIGTERM exit status (TLS)"; PID=""
pass "TLS (and a certificate renewed on SIGHUP)"

# A log reader that goes away does not stop the daemon: its lines are counted, not a crash.
# (The reader copies the lines up to "insightd ready" into the log, then closes the pipe.)
mkfifo "$WORK/log.pipe"
(while IFS= read -r line; do printf '%s\n' "$line" >>"$LOG"; case $line in *'"insightd ready"'*) break ;; esac; done) <"$WORK/log.pipe" &
"$BIN/insightd" 2>"$WORK/log.pipe" &
PID=$!
INSIGHTD_TLS_CERT="" wait_ready "$LOG" "$PID" || fail "insightd did not become ready behind a log pipe"
for _ in 1 2 3; do curl -s -o /dev/null "http://127.0.0.1:$PORT/livez"; done
sleep 0.5   # the request lines wait up to 100 ms
dropped=$(curl -sf "http://127.0.0.1:$METRICS_PORT/metrics" | awk '$1 == "insightd_log_lines_dropped_total" { print $2 }')
[ "${dropped:-0}" -ge 3 ] 2>/dev/null || fail "log lines refused by a closed pipe were not counted (got '$dropped')"
kill -0 "$PID" 2>/dev/null || fail "insightd died when its log reader went away"
kill -TERM "$PID"; wait "$PID" || fail "SIGTERM exit status (log reader gone)"; PID=""
pass "log reader gone: the daemon went on, $dropped lines counted"

# Privacy: no raw identifier in any state file or log line.
for needle in "$ACCOUNT" "$DEVICE" "e2e-payee-x" "$KEY"; do
    if grep -rqa -- "$needle" "$STATE" "$LOG"; then fail "raw value found in state or log"; fi
done
pass "privacy scan"
echo "e2e: all passed"
