/*
 * nodes_file.c - the view as nodes.conf (see nodes_file.h): Redis 7.0.15's
 * clusterGenNodeDescription() layout out, clusterLoadConfig()'s reading in,
 * a save that no kill -9 tears and flock()'s lock.
 *
 * Reading is stricter than Redis in one way: Redis stops with an assertion
 * on an unknown flag or a bracket without '-'; here any line that cannot be
 * read refuses the start with its number and its text.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/args.h"
#include "lib/file.h"
#include "lib/mem.h"
#include "lib/num.h"
#include "lib/textbuf.h"
#include "server/clock.h"
#include "server/cluster/nodes_file.h"
#include "server/cluster/view.h"
#include "server/log.h"
#include "server/server.h"

#define PATH_LEN 4096

static int lock_fd = -1;

/* ---- formatting ------------------------------------------------------- */

static const struct {
    int flag;
    const char *name;
} flag_names[] = {
    { VIEW_NODE_MYSELF, "myself" }, { VIEW_NODE_MASTER, "master" },
    { VIEW_NODE_SLAVE, "slave" }, { VIEW_NODE_PFAIL, "fail?" },
    { VIEW_NODE_FAIL, "fail" }, { VIEW_NODE_HANDSHAKE, "handshake" },
    { VIEW_NODE_NOADDR, "noaddr" }, { VIEW_NODE_NOFAILOVER, "nofailover" },
};
#define NFLAGS (sizeof(flag_names) / sizeof(flag_names[0]))

static void
format_flags(struct textbuf *t, int flags)
{
    bool any = false;
    for (size_t i = 0; i < NFLAGS; i++) {
        if (flags & flag_names[i].flag) {
            textbuf_printf(t, "%s%s", any ? "," : "", flag_names[i].name);
            any = true;
        }
    }
    if (!any) {
        textbuf_printf(t, "noflags");
    }
}

static void
format_slots(struct textbuf *t, const struct cluster_node_v *n)
{
    unsigned slot = 0, first, last;
    while (view_next_range(n, &slot, &first, &last)) {
        if (first == last) {
            textbuf_printf(t, " %u", first);
        } else {
            textbuf_printf(t, " %u-%u", first, last);
        }
    }
}

/* Only myself's line carries the slots it migrates or imports. */
static void
format_moving(struct textbuf *t)
{
    for (unsigned j = 0; j < CLUSTER_SLOTS; j++) {
        if (cview.migrating_to[j] != NULL) {
            textbuf_printf(t, " [%u->-%s]", j, cview.migrating_to[j]->name);
        } else if (cview.importing_from[j] != NULL) {
            textbuf_printf(t, " [%u-<-%s]", j, cview.importing_from[j]->name);
        }
    }
}

void
nodes_file_node_line(struct textbuf *t, const struct cluster_node_v *n,
                     bool use_pport)
{
    int port = use_pport && n->pport != 0 ? n->pport : n->port;
    textbuf_printf(t, "%s %s:%d@%d%s%s ", n->name, n->ip, port, n->cport,
                   n->hostname[0] != '\0' ? "," : "", n->hostname);
    format_flags(t, n->flags);
    /* A replica shows its primary's epoch, as Redis. */
    uint64_t epoch = n->config_epoch;
    if (view_node_is_replica(n) && n->primary != NULL) {
        epoch = n->primary->config_epoch;
    }
    textbuf_printf(t, " %s %lld %lld %llu %s",
                   n->primary != NULL ? n->primary->name : "-",
                   (long long)n->ping_sent, (long long)n->pong_received,
                   (unsigned long long)epoch,
                   n->link != NULL || (n->flags & VIEW_NODE_MYSELF)
                   ? "connected" : "disconnected");
    format_slots(t, n);
    if (n->flags & VIEW_NODE_MYSELF) {
        format_moving(t);
    }
}

void
nodes_file_nodes(struct textbuf *t, int filter)
{
    for (size_t i = 0; i < cview.nnodes; i++) {
        if (cview.nodes[i]->flags & filter) {
            continue;
        }
        nodes_file_node_line(t, cview.nodes[i], false);
        textbuf_append(t, "\n", 1);
    }
}

void
nodes_file_format(struct textbuf *t)
{
    nodes_file_nodes(t, VIEW_NODE_HANDSHAKE);
    textbuf_printf(t, "vars currentEpoch %llu lastVoteEpoch %llu\n",
                   (unsigned long long)cview.current_epoch,
                   (unsigned long long)cview.last_vote_epoch);
}

/* ---- parsing ---------------------------------------------------------- */

/* The words of one line, decoded in place in a copy of it. */
#define HEAD_WORDS 8
struct line {
    char *text;             /* the copy, words decoded into it */
    size_t len;
    size_t pos;             /* where the next word starts */
    char *word[HEAD_WORDS];
    size_t wlen[HEAD_WORDS];
    int nwords;             /* up to HEAD_WORDS read into word[] */
};

/* The next word, NUL-terminated in place; false at the end or on a quote
 * that does not close (*bad set). */
static bool
next_word(struct line *l, char **w, size_t *wl, bool *bad)
{
    size_t start = l->pos;
    while (start < l->len && (l->text[start] == ' ' || l->text[start] == '\t')) {
        start++;
    }
    size_t pos = l->pos;
    enum args_status st = args_next(l->text, l->len, &pos, l->text + start, wl);
    if (st != ARGS_WORD) {
        *bad = st != ARGS_END;
        return false;
    }
    /* Decoding never lengthens a word, so its NUL lands at most on the
     * separator after it, which is then skipped (the end of the line has
     * the copy's NUL). */
    l->text[start + *wl] = '\0';
    l->pos = start + *wl >= pos && pos < l->len ? pos + 1 : pos;
    *w = l->text + start;
    return true;
}

/* A node by name from a line: the one known, or a new one added. */
static struct cluster_node_v *
node_named(const char *name, size_t len)
{
    struct cluster_node_v *n = view_lookup(name, len);
    if (n == NULL && len == CLUSTER_ID_LEN) {
        n = view_node_create(name, 0);
        if (n != NULL && view_node_add(n) != 0) {
            mem_free(n);
            n = NULL;
        }
    }
    return n;
}

static bool
parse_int(const char *s, int64_t min, int64_t max, int64_t *out)
{
    return num_parse_i64(s, strlen(s), out) && *out >= min && *out <= max;
}

/* ip:port[@cport][,hostname] */
static const char *
parse_address(struct cluster_node_v *n, char *addr)
{
    char *host = strchr(addr, ',');
    if (host != NULL) {
        *host++ = '\0';
    }
    view_node_set_hostname(n, host != NULL ? host : "",
                           host != NULL ? strlen(host) : 0);
    char *colon = strrchr(addr, ':');
    if (colon == NULL) {
        return "no port in the address";
    }
    *colon = '\0';
    if (strlen(addr) >= VIEW_IP_LEN) {
        return "address too long";
    }
    memcpy(n->ip, addr, strlen(addr) + 1);
    char *bus = strchr(colon + 1, '@');
    if (bus != NULL) {
        *bus++ = '\0';
    }
    int64_t port, cport;
    if (!parse_int(colon + 1, 0, 65535, &port)) {
        return "bad port";
    }
    cport = port + VIEW_PORT_INCR;      /* an old file without @cport */
    if (bus != NULL && !parse_int(bus, 0, 65535, &cport)) {
        return "bad bus port";
    }
    n->port = (int)port;
    n->cport = (int)cport;
    return NULL;
}

static const char *
parse_flags(struct cluster_node_v *n, char *flags, int64_t now)
{
    char *save = NULL;
    for (char *f = strtok_r(flags, ",", &save); f != NULL;
         f = strtok_r(NULL, ",", &save)) {
        size_t i = 0;
        while (i < NFLAGS && strcasecmp(f, flag_names[i].name) != 0) {
            i++;
        }
        if (i == NFLAGS) {
            if (strcasecmp(f, "noflags") == 0) {
                continue;
            }
            return "unknown flag";
        }
        if (flag_names[i].flag == VIEW_NODE_MYSELF) {
            if (cview.myself != NULL && cview.myself != n) {
                return "a second myself";
            }
            cview.myself = n;
        }
        if (flag_names[i].flag == VIEW_NODE_FAIL) {
            n->fail_time = now;
        }
        n->flags |= flag_names[i].flag;
    }
    return NULL;
}

/* [<slot>->-<id>] or [<slot>-<-<id>] */
static const char *
parse_moving(char *w)
{
    char *dash = strchr(w, '-');
    int64_t slot;
    if (dash == NULL || (dash[1] != '>' && dash[1] != '<') || dash[2] != '-') {
        return "bad migrating/importing slot";
    }
    char dir = dash[1];
    *dash = '\0';
    char *id = dash + 3, *end = strchr(id, ']');
    if (!parse_int(w + 1, 0, CLUSTER_SLOTS - 1, &slot) || end == NULL ||
        end[1] != '\0') {
        return "bad migrating/importing slot";
    }
    struct cluster_node_v *to = node_named(id, (size_t)(end - id));
    if (to == NULL) {
        return "bad node id in a migrating/importing slot";
    }
    if (dir == '>') {
        cview.migrating_to[slot] = to;
    } else {
        cview.importing_from[slot] = to;
    }
    return NULL;
}

static const char *
parse_slot(struct cluster_node_v *n, char *w)
{
    if (w[0] == '[') {
        return parse_moving(w);
    }
    int64_t first, last;
    char *dash = strchr(w, '-');
    if (dash != NULL) {
        *dash = '\0';
    }
    if (!parse_int(w, 0, CLUSTER_SLOTS - 1, &first) ||
        !parse_int(dash != NULL ? dash + 1 : w, 0, CLUSTER_SLOTS - 1, &last)) {
        return "bad slot";
    }
    while (first <= last) {
        view_add_slot(n, (unsigned)first++);
    }
    return NULL;
}

static const char *
parse_vars(struct line *l)
{
    char *name, *value;
    size_t nl, vl;
    bool bad = false;
    while (next_word(l, &name, &nl, &bad)) {
        uint64_t v;
        if (!next_word(l, &value, &vl, &bad)) {
            return "vars without a value";
        }
        if (!num_parse_u64_digits(value, vl, &v)) {
            return "bad vars value";
        }
        if (strcasecmp(name, "currentEpoch") == 0) {
            cview.current_epoch = v;
        } else if (strcasecmp(name, "lastVoteEpoch") == 0) {
            cview.last_vote_epoch = v;
        } else {
            log_warning("Skipping unknown cluster config variable '%s'", name);
        }
    }
    return bad ? "unbalanced quotes" : NULL;
}

/* The first eight words: the node, its address, flags, primary, times,
 * epoch (the link state is not kept). */
static const char *
parse_node_head(struct line *l, struct cluster_node_v **out, int64_t now)
{
    char **w = l->word;
    struct cluster_node_v *n = node_named(w[0], l->wlen[0]);
    int64_t ping, pong;
    uint64_t epoch;
    const char *why;
    if (n == NULL) {
        return "bad node id";
    }
    if ((why = parse_address(n, w[1])) != NULL ||
        (why = parse_flags(n, w[2], now)) != NULL) {
        return why;
    }
    if (w[3][0] != '-') {
        struct cluster_node_v *p = node_named(w[3], l->wlen[3]);
        if (p == NULL || p == n) {
            return "bad primary id";
        }
        n->primary = p;
        view_node_add_replica(p, n);
    }
    if (!parse_int(w[4], INT64_MIN, INT64_MAX, &ping) ||
        !parse_int(w[5], INT64_MIN, INT64_MAX, &pong) ||
        !num_parse_u64_digits(w[6], l->wlen[6], &epoch)) {
        return "bad ping, pong or epoch";
    }
    n->ping_sent = ping != 0 ? now : 0;
    n->pong_received = pong != 0 ? now : 0;
    n->config_epoch = view_node_is_replica(n) && n->primary != NULL ? 0 : epoch;
    *out = n;
    return NULL;
}

static const char *
parse_line(struct line *l, int64_t now)
{
    bool bad = false;
    struct cluster_node_v *n;
    const char *why;
    while (l->nwords < HEAD_WORDS &&
           next_word(l, &l->word[l->nwords], &l->wlen[l->nwords], &bad)) {
        l->nwords++;
        if (l->nwords == 1 && strcasecmp(l->word[0], "vars") == 0) {
            return parse_vars(l);
        }
    }
    if (bad) {
        return "unbalanced quotes";
    }
    if (l->nwords == 0) {
        return NULL;                    /* a blank line */
    }
    if (l->nwords < HEAD_WORDS) {
        return "fewer than 8 fields";
    }
    if ((why = parse_node_head(l, &n, now)) != NULL) {
        return why;
    }
    char *w;
    size_t wl;
    while (next_word(l, &w, &wl, &bad)) {
        if ((why = parse_slot(n, w)) != NULL) {
            return why;
        }
    }
    return bad ? "unbalanced quotes" : NULL;
}

static int
refuse(int lineno, const char *why, const char *text, size_t len, char *err,
       size_t errlen)
{
    snprintf(err, errlen, "corrupt cluster config file, line %d: %s: '%.*s'",
             lineno, why, (int)(len > 200 ? 200 : len), text);
    view_free();
    return -1;
}

/* Parse one line of len bytes at text; 0, or -1 with err. */
static int
parse_one(const char *text, size_t len, int lineno, int64_t now, char *err,
          size_t errlen)
{
    struct line l;
    memset(&l, 0, sizeof(l));
    l.text = mem_malloc(len + 1);
    if (l.text == NULL) {
        snprintf(err, errlen, "out of memory reading the cluster config file");
        view_free();
        return -1;
    }
    memcpy(l.text, text, len);
    l.text[len] = '\0';
    l.len = len;
    const char *why = memchr(text, '\0', len) != NULL ? "a NUL byte"
                      : parse_line(&l, now);
    mem_free(l.text);
    return why == NULL ? 0 : refuse(lineno, why, text, len, err, errlen);
}

int
nodes_file_parse(const char *text, size_t len, char *err, size_t errlen)
{
    int64_t now = clock_wall_us() / 1000;
    int lineno = 0;
    for (size_t off = 0; off < len;) {
        const char *nl = memchr(text + off, '\n', len - off);
        size_t end = nl != NULL ? (size_t)(nl - text) : len;
        lineno++;
        if (parse_one(text + off, end - off, lineno, now, err, errlen) != 0) {
            return -1;
        }
        off = end + 1;
    }
    if (cview.myself == NULL) {
        return refuse(lineno, "no node is flagged myself", "", 0, err, errlen);
    }
    /* A hand-edited file may say less than the nodes do. */
    if (view_max_epoch() > cview.current_epoch) {
        cview.current_epoch = view_max_epoch();
    }
    return 0;
}

/* ---- the file --------------------------------------------------------- */

void
nodes_file_path(char *out, size_t outlen)
{
    const char *f = srv.conf.cluster_config_file;
    if (f[0] == '/') {
        snprintf(out, outlen, "%s", f);
    } else {
        snprintf(out, outlen, "%s/%s", srv.conf.dir, f);
    }
}

int
nodes_file_lock(char *err, size_t errlen)
{
    char path[PATH_LEN];
    nodes_file_path(path, sizeof(path));
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "Can't open %s in order to acquire a lock: %s",
                 path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK) {
            snprintf(err, errlen, "Sorry, the cluster configuration file %s "
                     "is already used by a different Redis Cluster node. "
                     "Please make sure that different nodes use different "
                     "cluster configuration files.", path);
        } else {
            snprintf(err, errlen, "Impossible to lock %s: %s", path,
                     strerror(errno));
        }
        close(fd);
        return -1;
    }
    nodes_file_unlock();
    lock_fd = fd;
    srv.cluster_lock_fd = fd;
    return 0;
}

int
nodes_file_load(char *err, size_t errlen)
{
    char path[PATH_LEN];
    size_t len;
    nodes_file_path(path, sizeof(path));
    unsigned char *text = file_read_all(path, &len);
    if (text == NULL) {
        if (errno == ENOENT) {
            return 0;
        }
        snprintf(err, errlen, "Loading the cluster node config from %s: %s",
                 path, strerror(errno));
        return -1;
    }
    if (len == 0) {
        free(text);
        return 0;
    }
    view_free();
    int rc = nodes_file_parse((const char *)text, len, err, errlen);
    free(text);
    if (rc != 0) {
        return -1;
    }
    log_notice("Node configuration loaded, I'm %.40s", cview.myself->name);
    return 1;
}

static bool
write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        p += n;
        len -= (size_t)n;
    }
    return true;
}

/* The new file's descriptor takes the lock before its rename, so the name
 * is never unlocked; the old file's lock goes with its descriptor. */
static int
replace_file(const char *path, const struct textbuf *t, bool do_fsync)
{
    char tmp[PATH_LEN + 32];
    snprintf(tmp, sizeof(tmp), "%s.tmp-%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    /* The rename swaps whole files, so a kill -9 at any point leaves the
     * old file or the new one, never a torn one: the page cache outlives
     * the process. Only when asked (Redis's CLUSTER_TODO_FSYNC_CONFIG) are
     * the data and then the rename made durable against a power loss;
     * Redis 7.0 does not fsync the other saves either, and a slot move
     * makes several of them on each node. */
    bool ok = fd >= 0 && write_all(fd, t->p, t->len) &&
              (!do_fsync || fsync(fd) == 0) &&
              (lock_fd < 0 || flock(fd, LOCK_EX | LOCK_NB) == 0) &&
              rename(tmp, path) == 0;
    int e = errno;
    if (!ok) {
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        errno = e;
        return -1;
    }
    if (lock_fd >= 0) {
        close(lock_fd);
        lock_fd = fd;
        srv.cluster_lock_fd = fd;
    } else {
        close(fd);
    }
    if (do_fsync) {
        file_sync_parent(path);
    }
    return 0;
}

/* A save of a small file rewrites it in place through the lock's
 * descriptor, as Redis 7.0's clusterSaveConfig(): one pwrite() of the text
 * padded with newlines to the old size (a blank line reads as nothing),
 * then ftruncate(). A write that stays within the first page is all or
 * nothing when a kill -9 lands (the kernel copies a page at a time and
 * stops between pages only), and the padding keeps the file whole until
 * the truncate; so no torn file either way. It spares what a rename costs
 * on every slot move: a new inode, ext4 writing the new file out at the
 * rename (auto_da_alloc), and freeing the old one's blocks. A save that
 * must survive a power loss (do_fsync) adds one fdatasync() between the
 * write and the truncate, as Redis 7.0's one fsync: the size has not
 * changed then unless the file grew, so the flush is the data page alone,
 * with no journal commit, where a new file and a rename cost two flushes
 * and a commit (a move that races the new owner's PONG takes such a save
 * on the old owner). Like Redis 7.0's, that page is rewritten in place: a
 * power cut in the middle of the device writing that one page is the one
 * case it does not cover (4 KiB device writes are atomic on current SSDs
 * and virtual disks). Larger files and file systems without fallocate()
 * when the file grows take the rename.
 * Returns 1 when done, 0 when the rename must do it, -1 on an error. */
#define IN_PLACE_MAX 4096

static int
rewrite_in_place(const struct textbuf *t, bool do_fsync)
{
    struct stat st;
    if (lock_fd < 0 || t->len > IN_PLACE_MAX || fstat(lock_fd, &st) != 0 ||
        st.st_size > IN_PLACE_MAX || st.st_nlink == 0) {
        return 0;                       /* nlink 0: the name went away */
    }
    /* Growing, the blocks are reserved first, so a full disk refuses the
     * whole write rather than cutting it short. */
    if (t->len > (size_t)st.st_size &&
        fallocate(lock_fd, FALLOC_FL_KEEP_SIZE, 0, IN_PLACE_MAX) != 0) {
        return 0;
    }
    char page[IN_PLACE_MAX];
    size_t size = (size_t)st.st_size > t->len ? (size_t)st.st_size : t->len;
    memcpy(page, t->p, t->len);
    memset(page + t->len, '\n', size - t->len);
    ssize_t n = pwrite(lock_fd, page, size, 0);
    if (n != (ssize_t)size) {
        if (n >= 0) {
            errno = EIO;                /* short: the rest of the page lost */
        }
        return -1;
    }
    if (do_fsync && fdatasync(lock_fd) != 0) {
        return -1;
    }
    if (size != t->len && ftruncate(lock_fd, (off_t)t->len) != 0) {
        return -1;
    }
    return 1;
}

int
nodes_file_save(bool do_fsync, char *err, size_t errlen)
{
    char path[PATH_LEN];
    struct textbuf t = { NULL, 0, 0, false };
    nodes_file_path(path, sizeof(path));
    nodes_file_format(&t);
    if (t.oom) {
        textbuf_free(&t);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int rc = rewrite_in_place(&t, do_fsync);
    rc = rc == 0 ? replace_file(path, &t, do_fsync) : rc < 0 ? -1 : 0;
    textbuf_free(&t);
    if (rc != 0) {
        snprintf(err, errlen, "writing %s: %s", path, strerror(errno));
    }
    return rc;
}

int
nodes_file_lock_fd(void)
{
    return lock_fd;
}

void
nodes_file_unlock(void)
{
    if (lock_fd >= 0) {
        close(lock_fd);
        lock_fd = -1;
        srv.cluster_lock_fd = 0;
    }
}
