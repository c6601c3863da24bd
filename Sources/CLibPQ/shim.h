#ifndef INSIGHTD_CLIBPQ_SHIM_H
#define INSIGHTD_CLIBPQ_SHIM_H
#include <libpq-fe.h>

// The PG_DIAG_* field codes are character-literal macros, which Swift does not import.
static const int insightd_pg_diag_sqlstate = PG_DIAG_SQLSTATE;
static const int insightd_pg_diag_message_primary = PG_DIAG_MESSAGE_PRIMARY;
static const int insightd_pg_diag_constraint_name = PG_DIAG_CONSTRAINT_NAME;

// Notices (a ROLLBACK outside a transaction, …) are not errors; libpq prints them on stderr by
// default, outside the daemon's own log. This processor drops them.
static void insightd_pq_ignore_notice(void *arg, const char *message) {
    (void)arg;
    (void)message;
}

static inline void insightd_pq_silence_notices(PGconn *conn) {
    PQsetNoticeProcessor(conn, insightd_pq_ignore_notice, 0);
}
#endif
