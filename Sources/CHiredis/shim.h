#ifndef INSIGHTD_CHIREDIS_SHIM_H
#define INSIGHTD_CHIREDIS_SHIM_H
// System headers first, so that struct timeval and friends are Glibc's own when this module
// sits beside Foundation or Glibc.
#include <sys/types.h>
#include <sys/time.h>
#include <stddef.h>
#include <hiredis/hiredis.h>

// errstr is a fixed char array, which Swift sees as a 128-element tuple: hand it over as a pointer.
static inline const char *insightd_redis_errstr(const redisContext *c) {
    return c->errstr;
}
#endif
