/*
 * iostats.h - the counters of the threads that do client I/O: reads,
 * writes and bytes per thread (the main thread is thread 0, the I/O
 * threads 1..N-1, the busy server's lender one more), and how many
 * clients each thread serves.
 *
 * Each thread counts in a slot of its own, written by that thread alone
 * with a relaxed load and store (no locked instruction on the request
 * path); readers (INFO, on the main thread) sum the slots. CONFIG
 * RESETSTAT does not write the slots: it notes what they hold, and
 * readers subtract that.
 */
#ifndef CELLGATE_IOSTATS_H
#define CELLGATE_IOSTATS_H

#include <stdatomic.h>
#include <stdint.h>

#define IOTHREADS_MAX 128       /* io-threads' bound, the main thread one */
#define IOSTATS_SLOTS (IOTHREADS_MAX + 1)   /* and the busy lender's */

struct io_counters {
    _Atomic uint64_t reads;         /* reads that brought bytes */
    _Atomic uint64_t writes;        /* writes of replies */
    _Atomic uint64_t bytes_in;
    _Atomic uint64_t bytes_out;
};

/* What a reader gets of one slot, or of all. */
struct io_figures {
    uint64_t reads;
    uint64_t writes;
    uint64_t bytes_in;
    uint64_t bytes_out;
};

/* The calling thread counts in slot `slot` from now on (0 until then). */
void io_counters_use(unsigned slot);
unsigned io_counters_slot(void);
struct io_counters *io_counters_mine(void);

static inline void
io_count(_Atomic uint64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* Slot t's figures since the last reset, and every slot's summed. */
void io_figures_of(unsigned t, struct io_figures *out);
void io_figures_total(struct io_figures *out);

/* CONFIG RESETSTAT (main thread). */
void io_figures_reset(void);

/* The threads serving clients (io-threads as running: 1 = the main thread
 * alone) and each one's clients (main thread only: it assigns them). */
void io_threads_set(unsigned n);
unsigned io_threads_running(void);
void io_clients_add(unsigned t, int delta);
unsigned io_clients_of(unsigned t);

#endif
