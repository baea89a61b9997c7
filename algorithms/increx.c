/*
 * increx.c - see increx.h.
 */
#include "algorithms/increx.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/num.h"

size_t
increx_format_float(long double v, char *buf, size_t len)
{
    if (isinf(v)) {
        return (size_t)snprintf(buf, len, "%s", v > 0 ? "inf" : "-inf");
    }
    int n = snprintf(buf, len, "%.17Lf", v);
    if (n < 0 || (size_t)n + 1 > len) {
        return 0;
    }
    size_t l = (size_t)n;
    if (memchr(buf, '.', l) != NULL) {
        while (buf[l - 1] == '0') {
            l--;
        }
        if (buf[l - 1] == '.') {
            l--;
        }
    }
    if (l == 2 && buf[0] == '-' && buf[1] == '0') {
        buf[0] = '0';
        l = 1;
    }
    buf[l] = '\0';
    return l;
}

void
increx_canonical(long double v, struct increx_value *out)
{
    char text[INCREX_TEXT_MAX];
    size_t n = increx_format_float(v, text, sizeof(text));
    out->is_float = !num_parse_i64(text, n, &out->i);
    out->f = out->is_float ? strtold(text, NULL) : (long double)out->i;
}

size_t
increx_format(const struct increx_value *v, char *buf, size_t len)
{
    if (v->is_float) {
        return increx_format_float(v->f, buf, len);
    }
    size_t n = num_fmt_i64(buf, v->i);
    buf[n] = '\0';
    return n;
}

static enum increx_status
apply_int(const struct increx_params *p, int64_t old, struct increx_value *out,
          struct increx_value *applied)
{
    int64_t v;
    bool overflow = __builtin_add_overflow(old, p->inc_i, &v);
    bool above = overflow ? p->inc_i > 0 : v > p->ub_i;
    bool below = overflow ? p->inc_i < 0 : v < p->lb_i;
    if (above || below) {
        if (!p->saturate) {
            return INCREX_REFUSED;
        }
        v = above ? p->ub_i : p->lb_i;
    }
    int64_t delta;
    if (__builtin_sub_overflow(v, old, &delta)) {
        return INCREX_APPLIED_OVERFLOWS;
    }
    *out = (struct increx_value){ false, v, (long double)v };
    *applied = (struct increx_value){ false, delta, (long double)delta };
    return INCREX_APPLIED;
}

static enum increx_status
apply_float(const struct increx_params *p, long double old,
            struct increx_value *out, struct increx_value *applied)
{
    long double v = old + p->inc_f;
    bool above = isnan(v) ? p->inc_f > 0 : v > p->ub_f;
    bool below = isnan(v) ? p->inc_f < 0 : v < p->lb_f;
    if (isinf(v)) {
        above = v > 0;
        below = v < 0;
    }
    if (above || below) {
        if (!p->saturate) {
            return INCREX_REFUSED;
        }
        v = above ? p->ub_f : p->lb_f;
        if (isinf(v)) {
            return INCREX_APPLIED_INFINITE;     /* an infinite bound */
        }
    }
    increx_canonical(v, out);
    long double delta = out->f - old;
    if (isinf(delta)) {
        return INCREX_APPLIED_INFINITE;
    }
    increx_canonical(delta, applied);
    return INCREX_APPLIED;
}

enum increx_status
increx_apply(const struct increx_params *p, const struct increx_value *old,
             struct increx_value *out, struct increx_value *applied)
{
    if (!p->by_float) {
        return apply_int(p, old->i, out, applied);
    }
    return apply_float(p, old->is_float ? old->f : (long double)old->i, out,
                       applied);
}
