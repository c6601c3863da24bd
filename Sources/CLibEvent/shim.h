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
#include <string.h>
// OpenSSL for TLS (libevent's event_openssl), also before any event2/ header.
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/bio.h>
#include <event2/event.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
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

// OpenSSL's SSL_CTX_set_{min,max}_proto_version, SSL_CTX_set_mode and the SSL_OP_* bits are
// macros Swift cannot see.

/// Sets the lowest protocol version (TLS1_2_VERSION, TLS1_3_VERSION); 1 on success.
static inline int insightd_ssl_ctx_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}
/// Sets the highest protocol version; 1 on success. (Test clients use it to offer old versions.)
static inline int insightd_ssl_ctx_set_max_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_max_proto_version(ctx, version);
}

/// The server options insightd uses: no renegotiation, no compression, the server's cipher
/// order, idle connections release their buffers, and a peer that closes TCP without a
/// close_notify alert reads as end of stream (libevent 2.1 cannot recognise OpenSSL 3's
/// "unexpected eof" as a dirty shutdown; HTTP framing detects truncated messages itself).
static inline void insightd_ssl_ctx_set_server_options(SSL_CTX *ctx) {
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION
                                 | SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
}

/// ALPN: picks "http/1.1" when the client offers it; otherwise answers without ALPN (a
/// client offering only h2 then decides itself whether to go on).
static inline int insightd_alpn_select_http11(SSL *ssl, const unsigned char **out,
                                              unsigned char *outlen, const unsigned char *in,
                                              unsigned int inlen, void *arg) {
    (void)ssl;
    (void)arg;
    unsigned int index = 0;
    while (index < inlen) {
        unsigned int length = in[index];
        if (length == 0 || length > inlen - index - 1) break;
        if (length == 8 && memcmp(in + index + 1, "http/1.1", 8) == 0) {
            *out = in + index + 1;
            *outlen = 8;
            return SSL_TLSEXT_ERR_OK;
        }
        index += 1 + length;
    }
    return SSL_TLSEXT_ERR_NOACK;
}
static inline void insightd_ssl_ctx_select_http11_alpn(SSL_CTX *ctx) {
    SSL_CTX_set_alpn_select_cb(ctx, insightd_alpn_select_http11, NULL);
}

/// Distinguished-name flags: RFC 2253 ("CN=a,O=b"), but UTF-8 left readable.
static inline unsigned long insightd_x509_name_flags_rfc2253(void) {
    return XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB;
}
#endif
