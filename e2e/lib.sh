# Shared by the suites in this folder (sourced, POSIX sh).

# wait_ready LOG PID: waits up to 10 s for the insightd whose stderr goes to LOG to log
# "insightd ready" and answer /readyz (over HTTPS trusting $INSIGHTD_TLS_CERT when that is set).
# Sets PORT (the API's) and METRICS_PORT (the metrics listener's, "off" when it is off) and
# returns 0; returns 1, with PORT empty, when the process exits or time runs out.
wait_ready() {
    _log=$1 _pid=$2 _scheme=http
    [ -n "${INSIGHTD_TLS_CERT:-}" ] && _scheme=https
    for _ in $(seq 1 100); do
        PORT=$(grep '"msg":"insightd ready"' "$_log" 2>/dev/null | tail -1 | jq -r '.listen' 2>/dev/null | sed 's/.*://') || true
        if [ -n "$PORT" ] && [ "$PORT" != null ] &&
            curl -sf ${INSIGHTD_TLS_CERT:+--cacert "$INSIGHTD_TLS_CERT"} "$_scheme://127.0.0.1:$PORT/readyz" >/dev/null 2>&1; then
            METRICS_PORT=$(grep '"msg":"insightd ready"' "$_log" | tail -1 | jq -r '.metricsListen' | sed 's/.*://')
            return 0
        fi
        PORT=""
        kill -0 "$_pid" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}
