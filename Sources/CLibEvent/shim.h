#ifndef INSIGHTD_CLIBEVENT_SHIM_H
#define INSIGHTD_CLIBEVENT_SHIM_H
// libevent's event-config.h defines _GNU_SOURCE; including these system headers first keeps
// fd_set identical to Glibc's so the module can sit beside Foundation and Dispatch.
#include <sys/types.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <event2/event.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <event2/util.h>

// evtimer_new and event_new-with-no-fd are macros or awkward from Swift: one inline each.
static inline struct event *insightd_timer_new(struct event_base *base,
                                               event_callback_fn cb, void *arg) {
    return event_new(base, -1, 0, cb, arg);
}
static inline int insightd_timer_add_ms(struct event *ev, long milliseconds) {
    struct timeval tv = { milliseconds / 1000, (milliseconds % 1000) * 1000 };
    return event_add(ev, &tv);
}
#endif
