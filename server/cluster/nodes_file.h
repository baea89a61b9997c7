/*
 * nodes_file.h - the view (view.h) as Redis Cluster's nodes.conf, the file
 * cluster-config-file names: one line per node as CLUSTER NODES prints it,
 * then "vars currentEpoch N lastVoteEpoch N".
 *
 *   <id> <ip>:<port>@<cport>[,<hostname>] <flags> <primary id|-> \
 *       <ping-sent> <pong-received> <config-epoch> <link-state> \
 *       <slot>|<first>-<last>|[<slot>->-<id>]|[<slot>-<-<id>] ...
 *
 * Formatting and parsing are pure (text in, view out and back); saving
 * rewrites a file of up to a page in place (one padded write, as Redis 7.0)
 * and replaces a larger one (a temporary file, fsync, rename, fsync of the
 * folder), a kill -9 tearing neither; the file is locked with flock() as long as the process
 * runs, as Redis locks it, so two nodes never share one file. The lock
 * moves to each new file before the rename, so it never lapses.
 */
#ifndef CELLGATE_CLUSTER_NODES_FILE_H
#define CELLGATE_CLUSTER_NODES_FILE_H

#include <stdbool.h>
#include <stddef.h>

struct cluster_node_v;
struct textbuf;

/* One node's line without its "\n", as CLUSTER NODES and the file write
 * it (use_pport: the plaintext port where a TLS port would be). */
void nodes_file_node_line(struct textbuf *t, const struct cluster_node_v *n,
                          bool use_pport);

/* Every node not flagged with any bit of filter (VIEW_NODE_*), a line
 * each with "\n": CLUSTER NODES with filter 0. */
void nodes_file_nodes(struct textbuf *t, int filter);

/* The whole file: the nodes but those in handshake, then the vars line. */
void nodes_file_format(struct textbuf *t);

/* Read the file's text into the view, which must be empty (view_free()
 * first). 0, or -1 with err naming the line number and the line (the
 * view is left empty). */
int nodes_file_parse(const char *text, size_t len, char *err, size_t errlen);

/* path: cluster-config-file, made relative to dir as Redis's chdir makes
 * it. */
void nodes_file_path(char *out, size_t outlen);

/* At start-up: lock the file (creating it empty if missing). 0, or -1 with
 * err (another node holds it: Redis's message). */
int nodes_file_lock(char *err, size_t errlen);

/* At start-up, after nodes_file_lock: 1 when the file held a view (now
 * loaded), 0 when it is empty (the caller makes a new view and saves it),
 * -1 with err for a file that cannot be read or is corrupt. */
int nodes_file_load(char *err, size_t errlen);

/* Write the view to the file, in place when it fits a page, else to a new
 * file that replaces the old one by rename, so a kill -9 never leaves a
 * torn file. do_fsync (Redis's CLUSTER_TODO_FSYNC_CONFIG): the write is
 * flushed to the disk before the call returns (the page, or the new file
 * and then the folder), so the change survives a power loss too.
 * 0, or -1 with err (the old file stays). */
int nodes_file_save(bool do_fsync, char *err, size_t errlen);

/* The lock's descriptor, -1 when none (a forked child closes it, so a
 * child outliving a kill -9 of its parent does not keep the lock). */
int nodes_file_lock_fd(void);

/* At exit: release the lock. */
void nodes_file_unlock(void);

#endif
