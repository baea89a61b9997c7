/*
 * fixture.h - what the unit suites that drive the server in-process share:
 * a client without a socket, running a command through the real
 * dispatcher, and taking its reply out of the output buffer.
 */
#ifndef CELLGATE_TEST_FIXTURE_H
#define CELLGATE_TEST_FIXTURE_H

#include <stdarg.h>
#include <stddef.h>

#include "protocol/obuf.h"
#include "server/client.h"

/* A client as a test uses it: authenticated, RESP proto, no socket
 * (calloc'd; the suite frees it, with what its own tests attached). */
struct conn *fx_client(int proto);

/* All of o's bytes, taken out, as a NUL-terminated string the caller
 * frees (n: its length, may be NULL). */
char *fx_take(struct obuf *o, size_t *n);

/* Run one command for c, given as NULL-terminated words, through
 * cmd_execute() in the selected database; its reply (fx_take()). */
char *fx_run(struct conn *c, const char *first, ...);
char *fx_vrun(struct conn *c, const char *first, va_list ap);

/* The reply got must be want; frees got. */
void fx_expect(const char *want, char *got);

#endif
