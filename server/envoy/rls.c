/*
 * rls.c - the gRPC services on grpc-port: Envoy's rate limit service
 * (ShouldRateLimit) and gRPC health checking (Check, and Watch, a
 * streaming call: stream_service.h). A call's message in, its answer out,
 * no I/O (grpc.c owns the connections).
 *
 * ShouldRateLimit decodes the request (protobuf-c, from protocol/rls.proto),
 * decides its descriptors with named_limits_check() in database 0, on the
 * same counters RL.CHECK uses, and encodes one status per descriptor, as
 * envoyproxy/ratelimit answers: OK or OVER_LIMIT, the limit, what is left,
 * and the time to the end of the window; OK with no limit for a descriptor
 * nothing matches. The overall code is named_limits_overall()'s (quota
 * mode as that service has it), then rls-shadow-mode's; a descriptor with
 * is_negative_hits gives its hits back. With rls-response-dynamic-metadata
 * the answer carries dynamic_metadata as that service builds it (below).
 */
#include "server/envoy/rls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "lib/mem.h"
#include "protocol/health.pb-c.h"
#include "protocol/rls.pb-c.h"
#include "server/clock.h"
#include "server/cluster/cluster.h"
#include "server/keyspace.h"
#include "server/envoy/named_limits.h"
#include "server/envoy/rls_metadata.h"
#include "server/envoy/rls_wire.h"
#include "server/server.h"

#define RLS_PATH "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
#define RLS_SERVICE "envoy.service.ratelimit.v3.RateLimitService"
#define HEALTH_PATH "/grpc.health.v1.Health/Check"
#define WATCH_PATH "/grpc.health.v1.Health/Watch"

typedef Envoy__Service__Ratelimit__V3__RateLimitRequest Request;
typedef Envoy__Service__Ratelimit__V3__RateLimitDescriptor Descriptor;
typedef Envoy__Service__Ratelimit__V3__Struct Struct;

/* A call's allocations: decoding a request allocates each message, array
 * and string, so they come from an arena reset per call (malloc beyond
 * it), and the answer is packed into one buffer kept between calls. */
static unsigned char arena[16384] __attribute__((aligned(16)));
static size_t arena_used;
static size_t arena_spilled;            /* allocations malloc took */
static unsigned char *packed;
static size_t packed_cap;

/* size bytes of the arena, or NULL when it is full. */
static void *
arena_take(size_t size)
{
    size_t at = (arena_used + 15) & ~(size_t)15;
    if (size <= sizeof(arena) && at <= sizeof(arena) - size) {
        arena_used = at + size;
        return arena + at;
    }
    return NULL;
}

static void *
arena_alloc(void *data, size_t size)
{
    void *p = arena_take(size);
    (void)data;
    if (p != NULL) {
        return p;
    }
    arena_spilled++;
    return malloc(size);
}

/* What rls.c builds itself (dynamic_metadata's objects) comes from the
 * arena too; past it, from blocks chained here and freed together once
 * the answer is packed (nothing walks those objects to free them). */
struct spill {
    struct spill *next;
    max_align_t data[];
};
static struct spill *spills;

static void *
scratch(size_t size)
{
    void *p = arena_take(size);
    if (p == NULL && size <= SIZE_MAX - sizeof(struct spill)) {
        struct spill *s = malloc(sizeof(*s) + size);
        if (s != NULL) {
            s->next = spills;
            spills = s;
            p = s->data;
        }
    }
    return p;
}

static void
scratch_release(void)
{
    while (spills != NULL) {
        struct spill *s = spills;
        spills = s->next;
        free(s);
    }
}

static void
arena_free(void *data, void *p)
{
    (void)data;
    if ((unsigned char *)p < arena || (unsigned char *)p >= arena + sizeof(arena)) {
        free(p);
    }
}

static ProtobufCAllocator arena_allocator = { arena_alloc, arena_free, NULL };

/* A call starts with the whole arena, nothing spilled. */
static void
arena_reset(void)
{
    arena_used = 0;
    arena_spilled = 0;
}

/* The kept buffer, len bytes at least; false when out of memory. */
static bool
reserve(size_t len)
{
    if (len > packed_cap) {
        unsigned char *p = realloc(packed, len);
        if (p == NULL) {
            return false;
        }
        packed = p;
        packed_cap = len;
    }
    return true;
}

/* The answer's bytes: m packed into the kept buffer. */
static enum grpc_status
pack(const ProtobufCMessage *m, struct rls_answer *a)
{
    size_t len = protobuf_c_message_get_packed_size(m);
    if (!reserve(len)) {
        a->why = "out of memory";
        return GRPC_RESOURCE_EXHAUSTED;
    }
    a->message = packed;
    a->len = protobuf_c_message_pack(m, packed);
    return GRPC_OK;
}

/* ---- ShouldRateLimit ------------------------------------------------------ */

/* Every entry of every descriptor in one array; d[i].entries into it. */
static bool
read_descriptors(const Request *req, struct nl_descriptor *d,
                 struct limits_entry **entries)
{
    size_t total = 0, at = 0;
    for (size_t i = 0; i < req->n_descriptors; i++) {
        total += req->descriptors[i]->n_entries;
    }
    *entries = arena_alloc(NULL, (total ? total : 1) * sizeof(**entries));
    if (*entries == NULL) {
        return false;
    }
    for (size_t i = 0; i < req->n_descriptors; i++) {
        const Descriptor *in = req->descriptors[i];
        memset(&d[i], 0, sizeof(d[i]));
        d[i].entries = *entries + at;
        d[i].n = in->n_entries;
        for (size_t j = 0; j < in->n_entries; j++, at++) {
            (*entries)[at].key = in->entries[j]->key;
            (*entries)[at].klen = strlen(in->entries[j]->key);
            (*entries)[at].value = in->entries[j]->value;
            (*entries)[at].vlen = strlen(in->entries[j]->value);
        }
        /* A descriptor's own hits_addend (0 included) wins; else the
         * request's, where 0 means 1. */
        d[i].hits = in->hits_addend != NULL ? in->hits_addend->value
                    : req->hits_addend > 0 ? req->hits_addend : 1;
        d[i].negative = in->is_negative_hits;
        d[i].has_override = in->limit != NULL;
        d[i].override_unit = LIMITS_UNIT_UNKNOWN;
        if (in->limit != NULL) {
            /* envoy.type.v3.RateLimitUnit: SECOND (1) to YEAR (6), the
             * numbers of limits.h; another value is no override. */
            int unit = (int)in->limit->unit;
            d[i].override_requests = in->limit->requests_per_unit;
            if (unit >= LIMITS_SECOND && unit <= LIMITS_YEAR) {
                d[i].override_unit = (enum limits_unit)unit;
            }
        }
    }
    return true;
}

/* The status whose limit headers envoyproxy/ratelimit sends: the one with
 * the least remaining (the first of equals), or the last over its limit;
 * -1 when no status has a limit. */
static int
headers_status(const struct nl_status *st, size_t n)
{
    int pick = -1;
    uint32_t least = UINT32_MAX;
    for (size_t i = 0; i < n; i++) {
        if (!st[i].has_limit) {
            continue;
        }
        /* An over descriptor in quota mode does not refuse by itself, so
         * it is only the least remaining, as there. */
        bool refuses = st[i].code == NL_OVER_LIMIT && !st[i].quota;
        if (refuses || st[i].remaining < least) {
            pick = (int)i;
            least = refuses ? 0 : st[i].remaining;
        }
    }
    return pick;
}

/* RateLimit-Limit, -Remaining and -Reset of status s into h[0..3). */
static void
limit_headers(const struct nl_status *s, struct rls_wire_header *h,
              char text[3][24])
{
    static const char *const names[3] = { "RateLimit-Limit",
                                          "RateLimit-Remaining",
                                          "RateLimit-Reset" };
    snprintf(text[0], 24, "%u", s->requests_per_unit);
    snprintf(text[1], 24, "%u", s->remaining);
    snprintf(text[2], 24, "%lld", (long long)rls_wire_seconds(s->reset_ns));
    for (int i = 0; i < 3; i++) {
        h[i].key = names[i];
        h[i].value = text[i];
    }
}

/* The response for statuses st[0..n), n <= NL_MAX_DESCRIPTORS, with
 * dynamic_metadata dm (NULL: none), written by rls_wire.c into the kept
 * buffer. */
static enum grpc_status
answer(const struct nl_status *st, size_t n, enum nl_code overall,
       Struct *dm, struct rls_answer *a)
{
    struct rls_wire_header h[3];
    char text[3][24];
    struct rls_wire_answer w = { named_limits_global_shadow(overall), st, n,
                                 h, 0, dm };
    int pick = srv.conf.grpc_response_headers ? headers_status(st, n) : -1;
    if (pick >= 0) {
        limit_headers(&st[pick], h, text);
        w.nheaders = 3;
    }
    struct rls_wire_sizes z;
    size_t len = rls_wire_size(&w, &z);
    if (!reserve(len)) {
        a->why = "out of memory";
        return GRPC_RESOURCE_EXHAUSTED;
    }
    a->message = packed;
    a->len = rls_wire_write(&w, &z, packed);
    return GRPC_OK;
}

/* ---- dynamic_metadata ------------------------------------------------ */

/* rls-response-dynamic-metadata: the Struct of req decided as st[0..n)
 * (rls_metadata.c), each descriptor that passed (not OVER_LIMIT) bringing
 * its limit's metadata; NULL in *dm when out of memory (false). */
static bool
metadata_now(const Request *req, const struct nl_status *st, size_t n,
             Struct **dm)
{
    Struct *passed[NL_MAX_DESCRIPTORS];
    for (size_t i = 0; i < n; i++) {
        passed[i] = NULL;
        if (st[i].code != NL_OVER_LIMIT && st[i].meta != NULL &&
            (passed[i] = rls_metadata_struct(st[i].meta, scratch)) == NULL) {
            return false;
        }
    }
    *dm = rls_metadata_build(req, passed, n, scratch);
    return *dm != NULL;
}

/* ---- across the shards ----------------------------------------------- */

static rls_late_fn late;

void
rls_late_answer(rls_late_fn fn)
{
    late = fn;
}

/* The statuses of a call that waited on other nodes, answered. */
static void
finished(const struct rls_caller *caller, const struct nl_status *st,
         size_t n, enum nl_code overall)
{
    struct rls_answer a = { NULL, 0, NULL, false };
    enum grpc_status rc = answer(st, n, overall, NULL, &a);
    late(caller, rc, &a);
}

/* A call that waits on other nodes and answers with dynamic_metadata
 * keeps what building it takes once the statuses are in, apart from the
 * decoded request (the arena is the next call's by then) and from the
 * running limits (a reload may free them meanwhile): the request's bytes
 * and each descriptor's limit metadata packed as a Struct (off[i] to
 * off[i + 1] of meta; empty: none). rls_forward holds the call with this
 * record as its ctx, so finished_meta() has it at once. Counted in
 * used_memory, as rls_forward's calls are, and bounded in all. */
#define PENDING_MAX_BYTES (64u << 20)

struct pending {
    struct rls_caller caller;       /* the connection's */
    TAILQ_ENTRY(pending) next;
    bool broken;                    /* its metadata found no memory */
    unsigned char *meta;
    size_t off[NL_MAX_DESCRIPTORS + 1];
    size_t len, held;
    unsigned char msg[];
};
static TAILQ_HEAD(, pending) pendings = TAILQ_HEAD_INITIALIZER(pendings);
static size_t pending_bytes;

static void *
scratch_pb_alloc(void *data, size_t size)
{
    (void)data;
    return scratch(size);
}

static void
scratch_pb_free(void *data, void *p)
{
    (void)data;
    (void)p;                        /* scratch_release() frees it all */
}

static ProtobufCAllocator scratch_allocator = { scratch_pb_alloc,
                                                scratch_pb_free, NULL };

static struct pending *
pending_new(const struct rls_caller *caller, const unsigned char *msg,
            size_t len)
{
    size_t held = sizeof(struct pending) + len;
    if (len > PENDING_MAX_BYTES || pending_bytes > PENDING_MAX_BYTES - len) {
        return NULL;
    }
    struct pending *p = mem_calloc(1, held);
    if (p == NULL) {
        return NULL;
    }
    p->caller = *caller;
    p->len = len;
    p->held = held;
    memcpy(p->msg, msg, len);
    pending_bytes += held;
    return p;
}

static void
pending_free(struct pending *p)
{
    pending_bytes -= p->held;
    mem_free(p->meta);
    mem_free(p);
}

/* Each descriptor's limit metadata (st[i].meta, valid now) packed into p;
 * p->broken when memory ran out. */
static void
pending_keep(struct pending *p, const struct nl_status *st, size_t n)
{
    Struct *s[NL_MAX_DESCRIPTORS];
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        s[i] = st[i].meta != NULL ? rls_metadata_struct(st[i].meta, scratch)
                                  : NULL;
        p->off[i] = total;
        if (st[i].meta != NULL && s[i] == NULL) {
            p->broken = true;
            return;
        }
        total += s[i] != NULL ? protobuf_c_message_get_packed_size(&s[i]->base)
                              : 0;
    }
    p->off[n] = total;
    if (total > 0 && (p->meta = mem_malloc(total)) == NULL) {
        p->broken = true;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] != NULL) {
            protobuf_c_message_pack(&s[i]->base, p->meta + p->off[i]);
        }
    }
    p->held += total;
    pending_bytes += total;
}

/* The answer of a pending call decided as st[0..n), with its Struct. */
static enum grpc_status
late_with_metadata(const struct pending *p, const struct nl_status *st,
                   size_t n, enum nl_code overall, struct rls_answer *a)
{
    Struct *passed[NL_MAX_DESCRIPTORS], *dm = NULL;
    Request *req = p->broken ? NULL
        : envoy__service__ratelimit__v3__rate_limit_request__unpack(
              &scratch_allocator, p->len, p->msg);
    for (size_t i = 0; req != NULL && i < n; i++) {
        size_t len = p->off[i + 1] - p->off[i];
        passed[i] = NULL;
        if (st[i].code != NL_OVER_LIMIT && len > 0 &&
            (passed[i] = envoy__service__ratelimit__v3__struct__unpack(
                 &scratch_allocator, len, p->meta + p->off[i])) == NULL) {
            req = NULL;
        }
    }
    if (req != NULL && req->n_descriptors == n) {
        dm = rls_metadata_build(req, passed, n, scratch);
    }
    if (dm == NULL) {
        a->why = "out of memory";
        return GRPC_RESOURCE_EXHAUSTED;
    }
    return answer(st, n, overall, dm, a);
}

static void
finished_meta(const struct rls_caller *caller, const struct nl_status *st,
              size_t n, enum nl_code overall)
{
    struct pending *p = caller->ctx;
    struct rls_caller to = p->caller;
    struct rls_answer a = { NULL, 0, NULL, false };
    TAILQ_REMOVE(&pendings, p, next);
    arena_reset();                  /* no call is being decoded now */
    enum grpc_status rc = late_with_metadata(p, st, n, overall, &a);
    scratch_release();
    pending_free(p);
    late(&to, rc, &a);
}

void
rls_cancel(void *ctx)
{
    rls_forward_cancel(ctx);
    for (struct pending *p = TAILQ_FIRST(&pendings), *next; p != NULL;
         p = next) {
        next = TAILQ_NEXT(p, next);
        if (p->caller.ctx == ctx) {
            rls_forward_cancel(p);
            TAILQ_REMOVE(&pendings, p, next);
            pending_free(p);
        }
    }
}

/* rls_forward_decide() for the call req (its bytes msg, len), held as a
 * pending record when its answer carries dynamic_metadata. */
static enum rls_outcome
forward(const Request *req, const unsigned char *msg, size_t len,
        const struct nl_descriptor *d, const struct rls_caller *caller,
        bool meta, int64_t now, struct nl_status *st, enum nl_code *overall,
        char *err, size_t errlen)
{
    struct rls_caller via = *caller;
    struct pending *p = NULL;
    size_t n = req->n_descriptors;
    if (meta) {
        if ((p = pending_new(caller, msg, len)) == NULL) {
            snprintf(err, errlen, "OOM");
            return RLS_FAILED;
        }
        via.ctx = p;
    }
    enum rls_outcome o = rls_forward_decide(req->domain, strlen(req->domain),
                                            d, n, now, st, overall, &via,
                                            meta ? finished_meta : finished,
                                            err, errlen);
    if (p != NULL && o == RLS_WAITING) {
        pending_keep(p, st, n);
        TAILQ_INSERT_TAIL(&pendings, p, next);
    } else if (p != NULL) {
        pending_free(p);
    }
    return o;
}

/* Decide the call's n descriptors: here, or (cluster-mode yes) where
 * their counters are; GRPC_OK with the answer or a->waiting. */
static enum grpc_status
decide(const Request *req, const unsigned char *msg, size_t len,
       const struct nl_descriptor *d, const struct rls_caller *caller,
       struct rls_answer *a)
{
    struct nl_status st[NL_MAX_DESCRIPTORS];
    enum nl_code overall;
    static char err[160];
    size_t dlen = strlen(req->domain), n = req->n_descriptors;
    int64_t now = clock_wall_now();
    bool meta = srv.conf.rls_response_dynamic_metadata;
    enum rls_outcome o = RLS_DECIDED;
    Struct *dm = NULL;
    if (cluster_routing()) {
        o = forward(req, msg, len, d, caller, meta, now, st, &overall, err,
                    sizeof(err));
    } else if (named_limits_check(req->domain, dlen, d, n, NULL, false, now,
                                  st, &overall, err, sizeof(err)) != 0) {
        o = RLS_FAILED;
    }
    if (o == RLS_FAILED) {
        a->why = err;
        return strcmp(err, "OOM") == 0 ? GRPC_RESOURCE_EXHAUSTED
                                       : GRPC_UNAVAILABLE;
    }
    if (o == RLS_WAITING) {
        a->waiting = true;
        return GRPC_OK;
    }
    if (meta && !metadata_now(req, st, n, &dm)) {
        a->why = "out of memory";
        return GRPC_RESOURCE_EXHAUSTED;
    }
    return answer(st, n, overall, dm, a);
}

static enum grpc_status
should_rate_limit(const unsigned char *msg, size_t len,
                  const struct rls_caller *caller, struct rls_answer *a)
{
    struct nl_descriptor d[NL_MAX_DESCRIPTORS];
    struct limits_entry *entries = NULL;
    arena_reset();
    Request *req = envoy__service__ratelimit__v3__rate_limit_request__unpack(
        &arena_allocator, len, msg);
    enum grpc_status rc = GRPC_OK;
    if (req == NULL) {
        a->why = "the request is not a valid RateLimitRequest";
        return GRPC_INVALID_ARGUMENT;
    }
    if (req->domain[0] == '\0') {
        a->why = "rate limit domain must not be empty";
        rc = GRPC_UNKNOWN;
    } else if (req->n_descriptors == 0) {
        a->why = "rate limit descriptor list must not be empty";
        rc = GRPC_UNKNOWN;
    } else if (req->n_descriptors > NL_MAX_DESCRIPTORS) {
        a->why = "more descriptors in one request than cellgate takes (64)";
        rc = GRPC_INVALID_ARGUMENT;
    } else if (!read_descriptors(req, d, &entries)) {
        a->why = "out of memory";
        rc = GRPC_RESOURCE_EXHAUSTED;
    } else {
        /* Envoy's counters are database 0's, whatever RESP selected. */
        keyspace_select(0);
        clock_batch_open();
        rc = decide(req, msg, len, d, caller, a);
        clock_batch_close();
        scratch_release();
    }
    if (entries != NULL) {
        arena_free(NULL, entries);
    }
    /* Walking the decoded request to free it only matters for what
     * spilled past the arena; the arena itself is reset by the next call. */
    if (arena_spilled > 0) {
        envoy__service__ratelimit__v3__rate_limit_request__free_unpacked(
            req, &arena_allocator);
    }
    return rc;
}

/* ---- Health/Check and Health/Watch ------------------------------------------ */

typedef Grpc__Health__V1__HealthCheckResponse__ServingStatus Serving;
#define SERVING GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING
#define NOT_SERVING \
    GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING
#define SERVICE_UNKNOWN \
    GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVICE_UNKNOWN

/* The one answer Check and Watch both give: NOT_SERVING while the server
 * shuts down or cannot write its journal (-MISCONF: a decision's counter
 * could not be kept), SERVING otherwise. */
static Serving
serving_status(void)
{
    return srv.shutting_down || srv.persist_refusing ? NOT_SERVING : SERVING;
}

/* The request's service: "" (the server) or the rate limit service is
 * known; -1 when the message is not a HealthCheckRequest. */
static int
health_request_known(const unsigned char *msg, size_t len)
{
    arena_reset();
    Grpc__Health__V1__HealthCheckRequest *req =
        grpc__health__v1__health_check_request__unpack(&arena_allocator, len,
                                                       msg);
    if (req == NULL) {
        return -1;
    }
    bool known = req->service[0] == '\0' ||
                 strcmp(req->service, RLS_SERVICE) == 0;
    grpc__health__v1__health_check_request__free_unpacked(req,
                                                          &arena_allocator);
    return known;
}

static enum grpc_status
health_check(const unsigned char *msg, size_t len, struct rls_answer *a)
{
    Grpc__Health__V1__HealthCheckResponse r =
        GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
    int known = health_request_known(msg, len);
    if (known < 0) {
        a->why = "the request is not a valid HealthCheckRequest";
        return GRPC_INVALID_ARGUMENT;
    }
    if (!known) {
        a->why = "unknown service";
        return GRPC_NOT_FOUND;
    }
    r.status = serving_status();
    return pack(&r.base, a);
}

/* A Watch call, as grpc's health service answers it: the status at once,
 * then each change; an unknown service is SERVICE_UNKNOWN (not an error:
 * it may be registered later), and the stream stays open either way. */
struct watch {
    bool asked;                 /* its request came */
    bool known;
    int sent;                   /* the status last sent; -1: none */
    unsigned char out[8];       /* a HealthCheckResponse is 2 bytes */
};

static void *
watch_open(void *caller_ctx, int32_t stream, int64_t now_ms,
           enum grpc_status *refuse, const char **why)
{
    struct watch *w = calloc(1, sizeof(*w));
    (void)caller_ctx;
    (void)stream;
    (void)now_ms;
    if (w == NULL) {
        *refuse = GRPC_RESOURCE_EXHAUSTED;
        *why = "out of memory";
        return NULL;
    }
    w->sent = -1;
    return w;
}

/* The status now, when it is not the one last sent. */
static enum grpc_status
watch_due(void *st, int64_t now_ms, const unsigned char **out,
          size_t *out_len, const char **why)
{
    struct watch *w = st;
    Grpc__Health__V1__HealthCheckResponse r =
        GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
    (void)now_ms;
    (void)why;
    r.status = w->known ? serving_status() : SERVICE_UNKNOWN;
    if (!w->asked || (int)r.status == w->sent ||
        protobuf_c_message_get_packed_size(&r.base) > sizeof(w->out)) {
        return GRPC_OK;
    }
    *out_len = protobuf_c_message_pack(&r.base, w->out);
    *out = w->out;
    w->sent = (int)r.status;
    return GRPC_OK;
}

/* The request; a server-streaming call has one, later ones are not read
 * (as grpc's generated servers leave them). */
static enum grpc_status
watch_message(void *st, const unsigned char *msg, size_t len, int64_t now_ms,
              const unsigned char **out, size_t *out_len, const char **why)
{
    struct watch *w = st;
    if (w->asked) {
        return GRPC_OK;
    }
    int known = health_request_known(msg, len);
    if (known < 0) {
        *why = "the request is not a valid HealthCheckRequest";
        return GRPC_INVALID_ARGUMENT;
    }
    w->asked = true;
    w->known = known;
    return watch_due(w, now_ms, out, out_len, why);
}

/* Half-closed after its request, as every client sends it: it goes on.
 * Without one there is nothing to watch. */
static bool
watch_half_closed(void *st, enum grpc_status *status, const char **why)
{
    struct watch *w = st;
    if (w->asked) {
        return false;
    }
    *status = GRPC_INVALID_ARGUMENT;
    *why = "a Watch call carries one HealthCheckRequest";
    return true;
}

static void
watch_close(void *st)
{
    free(st);
}

const struct grpc_stream_service rls_health_watch = {
    .path = WATCH_PATH,
    .open = watch_open,
    .message = watch_message,
    .half_closed = watch_half_closed,
    .due = watch_due,
    .close = watch_close,
};

enum grpc_status
rls_serve(const char *path, const unsigned char *msg, size_t len,
          const struct rls_caller *caller, struct rls_answer *a)
{
    static char why[H2_PATH_MAX + 64];
    memset(a, 0, sizeof(*a));
    if (strcmp(path, RLS_PATH) == 0) {
        return should_rate_limit(msg, len, caller, a);
    }
    if (strcmp(path, HEALTH_PATH) == 0) {
        return health_check(msg, len, a);
    }
    /* As gRPC servers word it. */
    const char *slash = path[0] == '/' ? strchr(path + 1, '/') : NULL;
    if (slash == NULL) {
        snprintf(why, sizeof(why), "malformed method name: \"%s\"", path);
    } else if (strncmp(path + 1, RLS_SERVICE, strlen(RLS_SERVICE)) == 0 &&
               slash == path + 1 + strlen(RLS_SERVICE)) {
        snprintf(why, sizeof(why), "unknown method %s for service %s",
                 slash + 1, RLS_SERVICE);
    } else {
        snprintf(why, sizeof(why), "unknown service %.*s",
                 (int)(slash - path - 1), path + 1);
    }
    a->why = why;
    return GRPC_UNIMPLEMENTED;
}
