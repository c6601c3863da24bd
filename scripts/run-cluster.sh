#!/bin/sh
# make run-cluster: the multi-instance mode on one machine, to try it — a PostgreSQL and a Redis
# of its own (ordinary processes in a temporary directory, private ports), three insightd
# instances on them (127.0.0.1:8081-8083) and nginx in front on 127.0.0.1:8080. Everything is
# thrown away when it stops (Ctrl-C). The database URL for insightctl is written to
# .cluster/database-url. docs/deployment.md, "Scaling out", says how to run it for real.
#
# Usage: sh scripts/run-cluster.sh BIN_DIR
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BIN=$(cd "${1:-.build/release}" && pwd)
LB_PORT=${CLUSTER_PORT:-8080}
WORK=$(mktemp -d)
chmod 755 "$WORK"
fail() { echo "run-cluster: $*" >&2; exit 1; }
. scripts/engines.sh
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
PIDS=""
cleanup() {
    trap - EXIT INT TERM
    for pid in $PIDS; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in $PIDS; do wait "$pid" 2>/dev/null || true; done
    [ -f "$WORK/nginx/nginx.pid" ] && "$NGINX" -c "$WORK/nginx.conf" -p "$WORK/nginx" -s stop 2>/dev/null || true
    engines_stop
    rm -rf "$WORK" .cluster
    echo "run-cluster: stopped; everything was removed"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

python3 -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', $LB_PORT))" 2>/dev/null ||
    fail "127.0.0.1:$LB_PORT is in use (set CLUSTER_PORT)"
engines_init
pg_init
pg_start
redis_start
head -c 32 /dev/urandom >"$WORK/hash.key"
chmod 600 "$WORK/hash.key"
export INSIGHTD_DATABASE_URL="$DATABASE_URL" INSIGHTD_REDIS_URL="$REDIS_URL" INSIGHTD_HASH_KEY_FILE="$WORK/hash.key"
export INSIGHTD_SIGNING_KEY_DIR="$WORK/signing-keys"
"$BIN/insightctl" signing-keys rotate >/dev/null
export INSIGHTD_MODELS_DIR="$ROOT/models" INSIGHTD_INSTANCES=3 INSIGHTD_MAX_CONNECTIONS_PER_ADDRESS=0
mkdir -p .cluster
echo "$DATABASE_URL" >.cluster/database-url

for i in 1 2 3; do
    INSIGHTD_STATE_DIR="$WORK/state$i" INSIGHTD_LISTEN="127.0.0.1:808$i" INSIGHTD_METRICS_LISTEN="127.0.0.1:946$i" "$BIN/insightd" 2>"$WORK/insightd-$i.log" &
    PIDS="$PIDS $!"
done
for i in 1 2 3; do
    for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:808$i/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
    curl -sf "http://127.0.0.1:808$i/readyz" >/dev/null || { tail -5 "$WORK/insightd-$i.log" >&2; fail "instance $i did not start"; }
done
mkdir -p "$WORK/nginx/logs"
sed -e "s|@DIR@|$WORK/nginx|g" -e "s|@LB_PORT@|$LB_PORT|g" -e "s|@P1@|8081|g" -e "s|@P2@|8082|g" -e "s|@P3@|8083|g" \
    e2e/cluster-nginx.conf.in >"$WORK/nginx.conf"
"$NGINX" -c "$WORK/nginx.conf" -p "$WORK/nginx" || fail "nginx did not start"

cat <<EOF

insightd: three instances behind nginx on http://127.0.0.1:$LB_PORT (instances on 8081-8083),
sharing PostgreSQL on 127.0.0.1:$PG_PORT and Redis on 127.0.0.1:$REDIS_PORT. Logs in $WORK.
Get an API key (in another shell, at the repository root):
  INSIGHTD_DATABASE_URL=\$(cat .cluster/database-url) $BIN/insightctl callers create --name demo --roles evaluate,labels --environment sandbox
Ctrl-C stops everything and removes it.
EOF
wait $PIDS
