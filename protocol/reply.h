/*
 * reply.h - RESP2/RESP3 reply composer.
 *
 * Appends one reply element to an obuf. Integers and headers are formatted
 * by hand (num.h), never with snprintf. Functions return 0, or -1 when the
 * obuf ran out of memory (obuf->oom stays set; the caller closes the
 * connection after the batch).
 */
#ifndef CELLGATE_REPLY_H
#define CELLGATE_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "protocol/obuf.h"

int reply_status(struct obuf *o, const char *s);          /* +s */
int reply_ok(struct obuf *o);                             /* +OK */
/* -msg: msg starts with the error code ("ERR ...", "WRONGTYPE ..."); CR and
 * LF inside it are turned into spaces so the reply stays one line. */
int reply_error(struct obuf *o, const char *msg, size_t len);
int reply_errorz(struct obuf *o, const char *msg);
/* +s of len bytes, CR and LF turned into spaces (a status whose text came
 * from elsewhere: a script's {ok=...}). */
int reply_status_bytes(struct obuf *o, const char *s, size_t len);
int reply_int(struct obuf *o, int64_t v);
int reply_bulk(struct obuf *o, const void *s, size_t len);
int reply_bulkz(struct obuf *o, const char *s);
int reply_bulk_i64(struct obuf *o, int64_t v);
/* A double as Redis 7.0 writes one (%.17g, inf, -inf): a bulk string in
 * RESP2, ",<d>" in RESP3. */
int reply_double(struct obuf *o, double d, int proto);
/* A double already written as text (a bulk string in RESP2, ",text" in
 * RESP3), as Redis's addReplyHumanLongDouble sends one. */
int reply_double_text(struct obuf *o, const char *s, size_t len, int proto);
int reply_bulk_u64(struct obuf *o, uint64_t v);
int reply_null(struct obuf *o, int proto);                /* $-1 or _ */
int reply_null_array(struct obuf *o, int proto);          /* *-1 or _ */
int reply_array(struct obuf *o, size_t n);                /* *n */
int reply_map(struct obuf *o, size_t pairs, int proto);   /* %n or *2n */
int reply_set(struct obuf *o, size_t n, int proto);       /* ~n or *n */
/* Verbatim text (RESP3 "=len\r\ntxt:...") or a bulk string in RESP2. */
int reply_verbatim(struct obuf *o, const char *s, size_t len, int proto);
/* reply_verbatim() with another three-byte format than "txt". */
int reply_verbatim_as(struct obuf *o, const char *s, size_t len,
                      const char format[3], int proto);
/* A big number ("(digits" in RESP3, a bulk string in RESP2); the text is
 * sent as given, CR and LF turned into spaces, as Redis sends a script's
 * {big_number=...}. */
int reply_big_number(struct obuf *o, const char *s, size_t len, int proto);

/* The five-integer limiter reply in one go (the hot path). */
int reply_int5(struct obuf *o, const int64_t v[5]);

#endif
