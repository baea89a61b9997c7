/*
 * iostats.c - per-thread I/O counters (see iostats.h).
 */
#include "server/iostats.h"

#include <string.h>

static struct io_counters slots[IOSTATS_SLOTS];
static struct io_figures bases[IOSTATS_SLOTS];  /* at the last reset */
static _Thread_local unsigned my_slot;
static unsigned threads_running = 1;
static unsigned clients[IOSTATS_SLOTS];

void
io_counters_use(unsigned slot)
{
    my_slot = slot < IOSTATS_SLOTS ? slot : 0;
}

unsigned
io_counters_slot(void)
{
    return my_slot;
}

struct io_counters *
io_counters_mine(void)
{
    return &slots[my_slot];
}

static void
read_slot(unsigned t, struct io_figures *f)
{
    const struct io_counters *k = &slots[t];
    f->reads = atomic_load_explicit(&k->reads, memory_order_relaxed);
    f->writes = atomic_load_explicit(&k->writes, memory_order_relaxed);
    f->bytes_in = atomic_load_explicit(&k->bytes_in, memory_order_relaxed);
    f->bytes_out = atomic_load_explicit(&k->bytes_out, memory_order_relaxed);
}

void
io_figures_of(unsigned t, struct io_figures *out)
{
    memset(out, 0, sizeof(*out));
    if (t >= IOSTATS_SLOTS) {
        return;
    }
    read_slot(t, out);
    out->reads -= bases[t].reads;
    out->writes -= bases[t].writes;
    out->bytes_in -= bases[t].bytes_in;
    out->bytes_out -= bases[t].bytes_out;
}

void
io_figures_total(struct io_figures *out)
{
    memset(out, 0, sizeof(*out));
    for (unsigned t = 0; t < IOSTATS_SLOTS; t++) {
        struct io_figures f;
        io_figures_of(t, &f);
        out->reads += f.reads;
        out->writes += f.writes;
        out->bytes_in += f.bytes_in;
        out->bytes_out += f.bytes_out;
    }
}

void
io_figures_reset(void)
{
    for (unsigned t = 0; t < IOSTATS_SLOTS; t++) {
        read_slot(t, &bases[t]);
    }
}

void
io_threads_set(unsigned n)
{
    threads_running = n;
}

unsigned
io_threads_running(void)
{
    return threads_running;
}

void
io_clients_add(unsigned t, int delta)
{
    if (t < IOSTATS_SLOTS && (delta > 0 || clients[t] > 0)) {
        clients[t] = (unsigned)((int)clients[t] + delta);
    }
}

unsigned
io_clients_of(unsigned t)
{
    return t < IOSTATS_SLOTS ? clients[t] : 0;
}
