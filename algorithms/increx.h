/*
 * increx.h - the arithmetic of INCREX (Redis 8.8, Valkey 9.2): a counter
 * moved by an integer (int64) or a float (long double) increment, kept
 * within [LBOUND, UBOUND] (the type's limits when absent): a result outside
 * is refused (nothing changes) or, with SATURATE, clamped to the bound it
 * passed.
 *
 * Float values are what Redis stores: the "human" text of the long double
 * (%.17Lf, trailing zeros and point dropped, never "-0"), read back. Pure:
 * no clock, no allocation.
 */
#ifndef CELLGATE_INCREX_H
#define CELLGATE_INCREX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest human text of a long double (LDBL_MAX has 4933 digits). */
#define INCREX_TEXT_MAX 5120

/* A counter's value: an int64, or a long double when its text is not one. */
struct increx_value {
    bool is_float;
    int64_t i;
    long double f;
};

struct increx_params {
    bool by_float;
    int64_t inc_i;              /* BYINT (default 1) */
    long double inc_f;          /* BYFLOAT, finite */
    int64_t lb_i, ub_i;         /* bounds, INT64_MIN/MAX when absent */
    long double lb_f, ub_f;     /* bounds, -/+LDBL_MAX when absent */
    bool saturate;
};

enum increx_status {
    INCREX_APPLIED,             /* *out and *applied hold the new value */
    INCREX_REFUSED,             /* out of bounds or overflow: unchanged */
    INCREX_APPLIED_OVERFLOWS,   /* SATURATE: the applied delta would not fit */
    INCREX_APPLIED_INFINITE     /* SATURATE: the applied delta is infinite */
};

/* Apply one INCREX to old (0 when the key is missing). Integer mode wants
 * an integer old value (the caller checks). */
enum increx_status increx_apply(const struct increx_params *p,
                                const struct increx_value *old,
                                struct increx_value *out,
                                struct increx_value *applied);

/* Redis's human text of v (ld2string LD_STR_HUMAN; "inf"/"-inf"); its
 * length, 0 if buf (at least INCREX_TEXT_MAX bytes) is too small. */
size_t increx_format_float(long double v, char *buf, size_t len);

/* The value a float result becomes once stored as text: an int64 when
 * the text is one, else the long double the text reads back as. */
void increx_canonical(long double v, struct increx_value *out);

/* The text of a value (GET, the reply): decimal or human float. */
size_t increx_format(const struct increx_value *v, char *buf, size_t len);

#endif
