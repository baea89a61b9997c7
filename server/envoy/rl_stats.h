/*
 * rl_stats.h - the statistics of named limits, as envoyproxy/ratelimit
 * counts them (total_hits, over_limit, near_limit, within_limit,
 * shadow_mode per stats key; total_negative_hits, the units Envoy's
 * is_negative_hits gave back; global_shadow_mode, the requests
 * rls-shadow-mode let through), for the Prometheus endpoint.
 *
 * A stats key is the matched configuration path ("path_/login.user"), so
 * the series follow the size of the limits file; detailed_metric and
 * value_to_metric put request values in it, which only the file can ask
 * for. Past RL_STATS_MAX keys, new ones are counted under the key
 * "__other__" of their domain, so a flood of values cannot grow memory or
 * the scrape without bound. A reload of the limits starts them again.
 */
#ifndef CELLGATE_RL_STATS_H
#define CELLGATE_RL_STATS_H

#include <stddef.h>
#include <stdint.h>

struct textbuf;

#define RL_STATS_MAX 10000

struct rl_stats_delta {
    uint64_t total_hits;
    uint64_t over_limit;
    uint64_t near_limit;
    uint64_t within_limit;
    uint64_t shadow_mode;
    uint64_t total_negative_hits;   /* units given back */
};

/* Count d under domain's stats key. */
void rl_stats_add(const char *domain, size_t dlen, const char *key,
                  size_t klen, const struct rl_stats_delta *d);

/* One request that rls-shadow-mode turned from OVER_LIMIT to OK. Not
 * per key, and not forgotten by a reload (it counts the service's
 * answers, not the file's limits). */
void rl_stats_global_shadow(void);

/* Forget every key (a reload: the keys come from the file). */
void rl_stats_reset(void);

/* The counters in Prometheus's text format. */
void rl_stats_render(struct textbuf *b);

#endif
