# PostgreSQL and Redis as ordinary processes in a work directory, for e2e/cluster.sh and
# bench/cluster.sh (sourced, POSIX sh). The caller sets WORK (a directory) and defines fail().
# initdb refuses to run as root, so as root the server runs as the `postgres` user the Debian
# package creates (its data directory inside WORK, which must be traversable: chmod 755).

PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
AS_PG=""
[ "$(id -u)" -eq 0 ] && AS_PG="runuser -u postgres --"
PG_PID=""
REDIS_PID=""

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# engines_init: checks the engines are installed and picks their ports (PG_PORT, REDIS_PORT).
engines_init() {
    [ -x "$PGBIN/initdb" ] || fail "PostgreSQL is not installed (make deps-test installs postgresql-15)"
    command -v redis-server >/dev/null || fail "redis-server is not installed (make deps-test installs it)"
    PG_PORT=$(free_port)
    REDIS_PORT=$(free_port)
    DATABASE_URL="postgres://insightd@127.0.0.1:$PG_PORT/postgres?connect_timeout=2"
    REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
}

# pg_init: a new cluster in $WORK/pg/data (trust authentication on loopback, user insightd).
pg_init() {
    mkdir -p "$WORK/pg"
    [ -n "$AS_PG" ] && chown postgres "$WORK/pg"
    $AS_PG "$PGBIN/initdb" -D "$WORK/pg/data" -U insightd -A trust -E UTF8 --no-sync >"$WORK/pg/initdb.log" 2>&1 ||
        { cat "$WORK/pg/initdb.log" >&2; fail "initdb failed"; }
}

# pg_start [SETTING...]: starts the server and waits for it; extra -c settings may be given.
pg_start() {
    _opts="-p $PG_PORT -k $WORK/pg -c listen_addresses=127.0.0.1 -c synchronous_commit=on"
    for _s in "$@"; do _opts="$_opts -c $_s"; done
    $AS_PG "$PGBIN/pg_ctl" -D "$WORK/pg/data" -l "$WORK/pg/server.log" -w -t 30 -o "$_opts" start >/dev/null ||
        { tail -20 "$WORK/pg/server.log" >&2; fail "PostgreSQL did not start"; }
    PG_PID=$(head -1 "$WORK/pg/data/postmaster.pid")
}

# pg_stop [MODE]: fast (default) or immediate.
pg_stop() { $AS_PG "$PGBIN/pg_ctl" -D "$WORK/pg/data" -m "${1:-fast}" stop >/dev/null 2>&1 || true; PG_PID=""; }

psql_q() { psql -X -q -A -t -h 127.0.0.1 -p "$PG_PORT" -U insightd -d postgres -c "$1"; }

redis_start() {
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no >>"$WORK/redis.log" 2>&1 &
    REDIS_PID=$!
    for _ in $(seq 1 50); do redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && return 0; sleep 0.1; done
    fail "Redis did not start"
}

redis_kill() { [ -n "$REDIS_PID" ] && kill -9 "$REDIS_PID" 2>/dev/null; wait "$REDIS_PID" 2>/dev/null || true; REDIS_PID=""; }

# engines_stop: both, at once (for traps).
engines_stop() {
    redis_kill
    [ -d "$WORK/pg/data" ] && pg_stop immediate
}

# cpu_ticks PID...: the CPU time (user + system, in clock ticks) of the processes, of their children
# alive now and of the children they reaped (a PostgreSQL backend that exited), for CPU per request
# from the difference of two readings.
cpu_ticks() {
    for _p in "$@"; do
        awk '{ print $14 + $15 + $16 + $17 }' "/proc/$_p/stat" 2>/dev/null
        for _q in $(ps --ppid "$_p" -o pid= 2>/dev/null); do
            awk '{ print $14 + $15 }' "/proc/$_q/stat" 2>/dev/null
        done
    done | awk '{ t += $1 } END { print t + 0 }'
}
