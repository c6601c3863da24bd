#ifndef INSIGHTD_CSQLITE_SHIM_H
#define INSIGHTD_CSQLITE_SHIM_H
#include <sqlite3.h>

// sqlite3_config is variadic, which Swift cannot call. Memory statistics off: with them on, every
// allocation inside SQLite takes a process-wide mutex, which the writer would pay for. Must run
// before SQLite initialises; afterwards it returns SQLITE_MISUSE and changes nothing.
static inline int insightd_sqlite3_disable_memstatus(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
#endif
