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
 *
 * A streaming call (a :path the budget's `streaming` predicate names) is
 * not one call but events (h2_next_event): OPEN when its headers came,
 * MESSAGE for each whole message as soon as its bytes are in, HALF_CLOSED
 * when the client ended its side, GONE when the stream went without the
 * caller ending it. The caller answers over time: h2_stream_send() sends
 * a message (the response headers first), h2_stream_end() the trailers.
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

/* The memory of the sessions that share a budget (grpc.c's one for all
 * of grpc-port). Every byte h2.c allocates for a session is counted, in
 * the session (h2_usage(): memory) and in its budget (used): its streams,
 * their request bodies and answers, and nghttp2's own allocations, which
 * go through h2.c's allocator. Request bodies are counted apart as well
 * (h2_request_memory, requests): they are what a peer makes a session
 * hold in proportion to what it sends, and what the limits bound. The
 * rest is bounded per session by HTTP/2's settings (max_streams, the
 * header table) and by nghttp2's own limits on what a peer can make it
 * queue, so by the number of sessions. The caller sets the limits:
 *
 *   session_max  a body grows only while its session's request memory
 *                stays within this; the call that would pass it is
 *                answered RESOURCE_EXHAUSTED at once, and the session's
 *                other calls go on;
 *   max          a body grows only while all sessions' request memory
 *                stays within this: make_room ends sessions that hold
 *                more than `asking` to make room, or answers false when
 *                none does, and then `asking` ends (h2_feed fails).
 *
 * 0 is no limit. The counters say what h2.c did at a limit, for the
 * caller's statistics (it may take and zero them); nothing here logs. */
struct h2_budget {
    size_t used;
    size_t requests;
    size_t max;
    size_t session_max;
    /* End sessions other than asking (h2_free) until requests + need fits
     * max and answer true, or answer false. */
    bool (*make_room)(struct h2_budget *b, size_t need,
                      const struct h2_conn *asking);
    uint64_t refused_streams;           /* at session_max */
    uint64_t expired_streams;           /* by h2_expire */
    /* Streaming calls (the caller sets these too):
     *   streaming       is this :path a streaming call? NULL: none is;
     *   stream_idle_ms  h2_expire resets (RST_STREAM CANCEL) a streaming
     *                   call whose client, its side still open, sent no
     *                   message for this long; 0 = never;
     *   stream_output_max  a streaming call whose output the peer's flow
     *                   control has not taken passes this: it is reset
     *                   (RST_STREAM ENHANCE_YOUR_CALM, which gRPC clients
     *                   report as RESOURCE_EXHAUSTED); 0 = no limit. */
    bool (*streaming)(const char *path);
    int64_t stream_idle_ms;
    size_t stream_output_max;
    uint64_t idle_streams;              /* reset at stream_idle_ms */
    uint64_t output_reset_streams;      /* reset at stream_output_max */
};

/* Why h2_feed failed. */
enum h2_failure {
    H2_OK = 0,
    H2_PROTOCOL,                        /* not HTTP/2, or a protocol error */
    H2_NO_MEMORY,
    H2_OVER_BUDGET                      /* it held the most at budget max */
};

/* A server session whose messages are at most max_message bytes, counted
 * in budget (which must outlive it); its SETTINGS frame is the first
 * output. NULL without memory. */
struct h2_conn *h2_new(size_t max_message, uint32_t max_streams,
                       struct h2_budget *budget);
void h2_free(struct h2_conn *h);

/* Bytes read from the peer at now_ms (the caller's clock in
 * milliseconds: a stream's age is measured from it). -1 when the
 * connection must close (h2_failure says why): not HTTP/2 (a client that
 * sent anything but the preface), a protocol error or the budget's max (a
 * GOAWAY is in the output then), or no memory. */
int h2_feed(struct h2_conn *h, const unsigned char *data, size_t len,
            int64_t now_ms);
enum h2_failure h2_failure(const struct h2_conn *h);

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

/* Reset (RST_STREAM CANCEL) every stream still open timeout_ms after its
 * headers came, its request not ended or its answer not taken, and free
 * what it holds; the frames are in the output. A streaming call open is
 * not bounded so, but by the budget's stream_idle_ms (its GONE event is
 * queued). The number reset; none when timeout_ms is 0 and no streaming
 * call idles. */
size_t h2_expire(struct h2_conn *h, int64_t now_ms, int64_t timeout_ms);

/* What the session holds (CLIENT LIST's figures). */
struct h2_usage {
    size_t memory;              /* all of it */
    size_t request_memory;      /* of which its request bodies' buffers:
                                   what the limits bound */
    size_t request_bytes;       /* the bytes in them */
    size_t streams;
};
struct h2_usage h2_usage(const struct h2_conn *h);

/* Its request memory alone, for the budget's checks on every body that
 * grows (grpc.c looks for the session holding the most). */
size_t h2_request_memory(const struct h2_conn *h);

/* The headers of the oldest stream not reset yet came at this time;
 * INT64_MAX when there is none. */
int64_t h2_oldest_stream_ms(const struct h2_conn *h);

/* ---- streaming calls ------------------------------------------------------
 *
 * Every streaming call the caller was told OPEN of ends in exactly one of
 * two ways: the caller ends it (h2_stream_end: no event follows), or a
 * GONE event comes (the peer reset it, the stream ended otherwise, or h2.c
 * reset it at a limit: a message over max_message, stream_idle_ms,
 * stream_output_max). h2_free() sends no event: the caller drops what it
 * keeps for the session's calls itself. Events come out of h2_feed and
 * h2_expire; drain them after each (and after an h2_stream_send that
 * answered 1). */
enum h2_event_kind {
    H2_OPEN,            /* headers came: path */
    H2_MESSAGE,         /* one whole message: message, len */
    H2_HALF_CLOSED,     /* the client sent END_STREAM: no more messages */
    H2_GONE             /* the stream is gone: drop what user names */
};

struct h2_event {
    enum h2_event_kind kind;
    int32_t stream;
    void *user;                     /* h2_stream_set_user()'s, or NULL */
    const char *path;               /* OPEN */
    const unsigned char *message;   /* MESSAGE: the prefix taken off; valid
                                       until the next h2_feed */
    size_t len;
};

/* The next event, oldest first; false when none waits. */
bool h2_next_event(struct h2_conn *h, struct h2_event *ev);

/* What the caller keeps for the stream, handed back by its GONE event. */
void h2_stream_set_user(struct h2_conn *h, int32_t stream, void *user);

/* One message on the stream (the response headers first the first time),
 * sent as the peer's flow control takes it; what waits is counted in the
 * budget. 0; 1 when the stream is gone or was reset now at
 * stream_output_max (a GONE event follows); -1 without memory. */
int h2_stream_send(struct h2_conn *h, int32_t stream,
                   const unsigned char *message, size_t len);

/* End the stream with status and why (trailers after what waits to be
 * sent; headers and trailers in one frame when nothing was sent). No
 * event follows. 0, or -1 without memory. */
int h2_stream_end(struct h2_conn *h, int32_t stream, enum grpc_status status,
                  const char *why);

/* Streaming calls open (told OPEN, not ended, not gone). */
size_t h2_streaming(const struct h2_conn *h);

#endif
