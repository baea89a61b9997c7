/*
 * h2.h - gRPC's unary calls over HTTP/2 (cleartext, prior knowledge), the
 * server side, without I/O: bytes read from a connection go in
 * (h2_feed), complete calls come out (h2_next_call), answers go in
 * (h2_answer) and bytes to write come out (h2_output). The caller owns
 * the socket and the event loop; nghttp2 does the framing, HPACK, flow
 * control and the connection's state.
 *
 * A call is a request whose stream ended: its :path and its one message,
 * the 5-byte gRPC prefix (compressed flag, 32-bit length) taken off. An
 * answer is a message (framed the same way) followed by trailers carrying
 * grpc-status, or, for an error, only headers and trailers in one HEADERS
 * frame (a "trailers-only" response), as gRPC servers answer.
 */
#ifndef CELLGATE_H2_H
#define CELLGATE_H2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* gRPC status codes cellgate answers. */
enum grpc_status {
    GRPC_OK = 0,
    GRPC_UNKNOWN = 2,
    GRPC_INVALID_ARGUMENT = 3,
    GRPC_NOT_FOUND = 5,
    GRPC_RESOURCE_EXHAUSTED = 8,
    GRPC_UNIMPLEMENTED = 12,
    GRPC_INTERNAL = 13,
    GRPC_UNAVAILABLE = 14
};

#define H2_PATH_MAX 256

struct h2_call {
    int32_t stream;
    char path[H2_PATH_MAX];         /* "" when longer than this */
    const unsigned char *message;   /* valid until the call is answered */
    size_t len;
    /* Refused before the message is read; answer with it (message NULL). */
    enum grpc_status refused;
    const char *why;
};

struct h2_conn;

/* A server session whose messages are at most max_message bytes; its
 * SETTINGS frame is the first output. NULL without memory. */
struct h2_conn *h2_new(size_t max_message, uint32_t max_streams);
void h2_free(struct h2_conn *h);

/* Bytes read from the peer. -1 when the connection must close: not
 * HTTP/2 (a client that sent anything but the preface), a protocol error
 * (a GOAWAY is in the output then), or no memory. */
int h2_feed(struct h2_conn *h, const unsigned char *data, size_t len);

/* The next complete call, oldest first; false when none waits. */
bool h2_next_call(struct h2_conn *h, struct h2_call *call);

/* Answer a call: status OK with message (len bytes, a serialized
 * protobuf), or an error status with why (sent as grpc-message). The
 * call's own buffers are released. 0, or -1 without memory. */
int h2_answer(struct h2_conn *h, int32_t stream, enum grpc_status status,
              const char *why, const unsigned char *message, size_t len);

/* The next bytes to write (valid until the next h2_* call), 0 when there
 * are none for now; -1 on an error (close the connection). */
long h2_output(struct h2_conn *h, const unsigned char **data);

/* Has the session ended (GOAWAY both ways, or closed by the peer)? */
bool h2_done(const struct h2_conn *h);

/* Calls read but not answered yet. */
size_t h2_pending(const struct h2_conn *h);

#endif
