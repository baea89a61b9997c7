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
 * is_negative_hits gives its hits back.
 */
#include "server/envoy/rls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/time.h"
#include "protocol/health.pb-c.h"
#include "protocol/rls.pb-c.h"
#include "server/clock.h"
#include "server/cluster/cluster.h"
#include "server/keyspace.h"
#include "server/envoy/named_limits.h"
#include "server/server.h"

#define RLS_PATH "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
#define RLS_SERVICE "envoy.service.ratelimit.v3.RateLimitService"
#define HEALTH_PATH "/grpc.health.v1.Health/Check"
#define WATCH_PATH "/grpc.health.v1.Health/Watch"

typedef Envoy__Service__Ratelimit__V3__RateLimitRequest Request;
typedef Envoy__Service__Ratelimit__V3__RateLimitDescriptor Descriptor;
typedef Envoy__Service__Ratelimit__V3__RateLimitResponse Response;
typedef Envoy__Service__Ratelimit__V3__RateLimitResponse__DescriptorStatus Status;
typedef Envoy__Service__Ratelimit__V3__RateLimitResponse__RateLimit Limit;
typedef Envoy__Service__Ratelimit__V3__Duration Duration;
typedef Envoy__Service__Ratelimit__V3__HeaderValue Header;

/* A call's allocations: decoding a request allocates each message, array
 * and string, so they come from an arena reset per call (malloc beyond
 * it), and the answer is packed into one buffer kept between calls. */
static unsigned char arena[16384] __attribute__((aligned(16)));
static size_t arena_used;
static size_t arena_spilled;            /* allocations malloc took */
static unsigned char *packed;
static size_t packed_cap;

static void *
arena_alloc(void *data, size_t size)
{
    size_t at = (arena_used + 15) & ~(size_t)15;
    (void)data;
    if (size <= sizeof(arena) && at <= sizeof(arena) - size) {
        arena_used = at + size;
        return arena + at;
    }
    arena_spilled++;
    return malloc(size);
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

/* The answer's bytes: m packed into the kept buffer. */
static enum grpc_status
pack(const ProtobufCMessage *m, struct rls_answer *a)
{
    size_t len = protobuf_c_message_get_packed_size(m);
    if (len > packed_cap) {
        unsigned char *p = realloc(packed, len);
        if (p == NULL) {
            a->why = "out of memory";
            return GRPC_RESOURCE_EXHAUSTED;
        }
        packed = p;
        packed_cap = len;
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

static int64_t
ceil_seconds(int64_t ns)
{
    return ns <= 0 ? 0 : ns / NS_PER_SEC + (ns % NS_PER_SEC != 0);
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

/* RateLimit-Limit, -Remaining and -Reset of status i into h[0..3). */
static void
limit_headers(const struct nl_status *s, Header *h, char text[3][24],
              Header **ph)
{
    static const char *const names[3] = { "RateLimit-Limit",
                                          "RateLimit-Remaining",
                                          "RateLimit-Reset" };
    snprintf(text[0], 24, "%u", s->requests_per_unit);
    snprintf(text[1], 24, "%u", s->remaining);
    snprintf(text[2], 24, "%lld", (long long)ceil_seconds(s->reset_ns));
    for (int i = 0; i < 3; i++) {
        envoy__service__ratelimit__v3__header_value__init(&h[i]);
        h[i].key = (char *)names[i];
        h[i].value = text[i];
        ph[i] = &h[i];
    }
}

/* The response for statuses st[0..n), n <= NL_MAX_DESCRIPTORS. */
static enum grpc_status
answer(const struct nl_status *st, size_t n, enum nl_code overall,
       struct rls_answer *a)
{
    Response r = ENVOY__SERVICE__RATELIMIT__V3__RATE_LIMIT_RESPONSE__INIT;
    Status s[NL_MAX_DESCRIPTORS];
    Limit l[NL_MAX_DESCRIPTORS];
    Duration d[NL_MAX_DESCRIPTORS];
    Status *ps[NL_MAX_DESCRIPTORS];
    for (size_t i = 0; i < n; i++) {
        envoy__service__ratelimit__v3__rate_limit_response__descriptor_status__init(&s[i]);
        s[i].code = (int)st[i].code;
        s[i].limit_remaining = st[i].remaining;
        if (st[i].has_limit) {
            envoy__service__ratelimit__v3__rate_limit_response__rate_limit__init(&l[i]);
            l[i].name = (char *)st[i].name;
            l[i].requests_per_unit = st[i].requests_per_unit;
            l[i].unit = (int)st[i].unit;
            s[i].current_limit = &l[i];
            envoy__service__ratelimit__v3__duration__init(&d[i]);
            d[i].seconds = ceil_seconds(st[i].reset_ns);
            s[i].duration_until_reset = &d[i];
        }
        ps[i] = &s[i];
    }
    r.overall_code = (int)named_limits_global_shadow(overall);
    r.n_statuses = n;
    r.statuses = ps;
    Header h[3], *ph[3];
    char text[3][24];
    int pick = srv.conf.grpc_response_headers ? headers_status(st, n) : -1;
    if (pick >= 0) {
        limit_headers(&st[pick], h, text, ph);
        r.n_response_headers_to_add = 3;
        r.response_headers_to_add = ph;
    }
    return pack(&r.base, a);
}

/* ---- across the shards ----------------------------------------------- */

static rls_late_fn late;

void
rls_late_answer(rls_late_fn fn)
{
    late = fn;
}

void
rls_cancel(void *ctx)
{
    rls_forward_cancel(ctx);
}

/* The statuses of a call that waited on other nodes, answered. */
static void
finished(const struct rls_caller *caller, const struct nl_status *st,
         size_t n, enum nl_code overall)
{
    struct rls_answer a = { NULL, 0, NULL, false };
    enum grpc_status rc = answer(st, n, overall, &a);
    late(caller, rc, &a);
}

/* Decide the call's n descriptors: here, or (cluster-mode yes) where
 * their counters are; GRPC_OK with the answer or a->waiting. */
static enum grpc_status
decide(const Request *req, const struct nl_descriptor *d,
       const struct rls_caller *caller, struct rls_answer *a)
{
    struct nl_status st[NL_MAX_DESCRIPTORS];
    enum nl_code overall;
    static char err[160];
    size_t dlen = strlen(req->domain), n = req->n_descriptors;
    int64_t now = clock_wall_now();
    enum rls_outcome o = RLS_DECIDED;
    if (cluster_routing()) {
        o = rls_forward_decide(req->domain, dlen, d, n, now, st, &overall,
                               caller, finished, err, sizeof(err));
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
    return answer(st, n, overall, a);
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
        rc = decide(req, d, caller, a);
        clock_batch_close();
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
