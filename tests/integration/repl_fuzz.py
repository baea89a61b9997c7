"""The replication fuzzer: seeded random traffic on a primary with replicas,
with faults between the bursts, and every key of every database compared
on every node once their offsets match.

    python3 tests/integration/repl_fuzz.py --seconds 600 [--seed N]
    python3 tests/integration/repl_fuzz.py --round-seed S   # replay one round

Each round starts three fresh daemons (appendonly yes, all on one fake wall
clock: a single file they all read, so stepping it moves every node at
once and TTLs compare exactly; replication's own timers run on the real
monotonic clock), in a star (primary + 2 replicas) or a chain (primary ->
r1 -> r2), with repl-backlog-size 1mb or 16kb. Then, until its time is up
and for a bounded number of steps: a burst of writes to the primary over
every key type and writing command (CL.THROTTLE, RL.FIXED/SLIDING/LOG/
TIERS, GCRA, INCREX, RL.CHECK, DEL, MOVE, SWAPDB, FLUSHDB, FLUSHALL, SELECT,
MULTI/EXEC, WAIT; Redis's string commands: SET with NX|XX, GET and
EX|PX|EXAT|PXAT|KEEPTTL, SETNX, SETEX, PSETEX, GETSET, GETDEL, GETEX,
MSET, MSETNX, INCR(BY), DECR(BY), INCRBYFLOAT, APPEND, SETRANGE and the
reads GET, MGET, STRLEN, GETRANGE, with values of any bytes up to 300 KB;
EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT with NX|XX|GT|LT, PERSIST, TTL, PTTL,
(P)EXPIRETIME on keys of every kind, limiters' too; RENAME, RENAMENX, COPY
with DB and REPLACE, UNLINK, TOUCH, across kinds; RESTORE (REPLACE, ABSTTL,
IDLETIME, FREQ) of a payload the primary DUMPed just before, MIGRATE KEYS
(COPY, REPLACE) to a redis-server beside the round; Redis's lists: LPUSH,
RPUSH, LPUSHX, RPUSHX, LPOP and RPOP with a count, LTRIM, LREM, LSET,
LINSERT, LMOVE, RPOPLPUSH, LMPOP, the blocking BLPOP, BRPOP, BLMOVE,
BRPOPLPUSH and BLMPOP (a timeout of 1 ms) and the reads LRANGE, LINDEX, LLEN, LPOS with RANK|COUNT|
MAXLEN; hashes: HSET, HMSET, HSETNX, HDEL, HINCRBY, HINCRBYFLOAT and the
reads HGET, HMGET, HEXISTS, HSTRLEN, HLEN, HGETALL, HKEYS, HVALS, HSCAN;
sorted sets: ZADD with NX|XX|GT|LT|CH|INCR, ZINCRBY, ZREM,
ZREMRANGEBYSCORE|RANK|LEX, ZPOPMIN, ZPOPMAX, ZMPOP, BZPOPMIN, BZPOPMAX,
BZMPOP and the reads ZRANGE (by rank,
BYSCORE, BYLEX, REV, LIMIT, WITHSCORES), ZSCORE, ZRANK, ZREVRANK, ZCARD,
ZCOUNT, ZLEXCOUNT, ZSCAN; the algebra's ZUNIONSTORE, ZINTERSTORE and
ZDIFFSTORE with WEIGHTS and AGGREGATE, ZRANGESTORE, and the reads ZUNION,
ZINTERCARD, ZRANDMEMBER, HRANDFIELD; sets: SADD, SREM, SPOP with and
without a count, SMOVE, SINTERSTORE, SUNIONSTORE, SDIFFSTORE and the reads
SINTER, SUNION, SDIFF, SISMEMBER, SMISMEMBER, SINTERCARD, SCARD, SMEMBERS,
SRANDMEMBER, SSCAN), Lua scripts (EVAL) running a few of those
through redis.pcall (their effects reach the replicas as one group),
sometimes a step of the clock, and a fault
drawn at random. Every kind's commands now and then name a key of another
kind (WRONGTYPE; SET, RENAME, COPY, MOVE, EXPIRE, DEL of collections), and
collections are sometimes big: one write of hundreds to thousands of
elements (past a sorted set's 128, a hash's 512 and a set's 512 compact
entries),
members and values over 64 bytes, lists of thousands (both encodings, and
element effects of every size, cross the faults):

    link-drop         CLIENT KILL TYPE replica on a node that has replicas
    restart-data      kill -9 of a replica, restarted on its data dir
    restart-empty     kill -9 of a replica, restarted on an empty dir
    overlap           two replicas ask for a full sync while the first
                      one's snapshot child is still writing (held open by
                      rdb-key-save-delay)
    backlog-overflow  a replica stopped (SIGSTOP) while more than the
                      backlog is written, its link killed, then continued:
                      it must come back by a full sync
    promote           REPLICAOF NO ONE on a replica while writes continue
                      to it, then the others (the old primary too) follow it
    kill-primary      kill -9 of the primary, the most advanced replica (or
                      another) promoted, the others follow it, the old
                      primary restarted (with its data or empty) as a replica
    repoint           a replica follows another node (star <-> chain)
    bgrewrite         BGREWRITEAOF on a node while the stream flows

After each step (sometimes) and at the end of the round, once every node's
offset equals its primary's (bounded wait), every key of every database on
every node is compared: TYPE, PTTL and its state (GET of a string, a
CL.THROTTLE or INCREX key, RL.ENTRIES of a log, a PEEK ... MS of the other
limiters, a log or tiers key that keeps no entry included; a list's
LRANGE 0 -1, a sorted set's ZRANGE 0 -1 WITHSCORES, a hash's HGETALL in
its order while it is compact, its pairs in any order once large: see
HashState).
After a kill -9 preceded by a WAIT that every replica acknowledged, the new
primary must hold exactly what the dead one held when WAIT answered; a node
killed at a quiet point and restarted alone on its data (appendonly) must
hold exactly what it held.

A finding raises Finding with the round's seed and its step log; the
round replays with --round-seed (the same draws; where a draw depends on
what the daemons did, such as which replica is the most advanced after a
kill -9, the steps may part from the logged ones).
"""
import argparse
import os
import random
import shutil
import signal
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import harness  # noqa: E402

DBS = 4                 # databases the traffic writes in (all 16 compared)
ALL_DBS = 16
NKEYS = 6               # names per key kind
CONVERGE_S = 120 if harness.SANITIZE else 60
STEPS_MAX = 40          # per round: every loop is bounded in count too

LIMITS_YAML = """\
domain: fz
descriptors:
  - key: remote_address
    rate_limit: {unit: minute, requests_per_unit: 3}
  - key: plan
    value: gcra
    rate_limit: {unit: second, requests_per_unit: 2, cellgate_algorithm: gcra}
  - key: plan
    value: sliding
    rate_limit: {unit: minute, requests_per_unit: 4, cellgate_algorithm: sliding_window}
"""

# Each key name keeps its parameters, so a PEEK with them reads its state.
GCRA_P = [(5, 1, 60), (2, 10, 1), (20, 3, 3600)]
FIXED_P = [(5, 60, False), (3, 10, True), (100, 3600, False)]
SLIDING_P = [(5, 60), (3, 10), (50, 3600)]
LOG_P = [(5, (60, 10)), (3, (10, 2)), (20, (3600, 60))]
TIERS_P = [(5, 1, 10, 10), (3, 2, 6, 30), (100, 60, 1000, 3600)]
RGCRA_P = [(5, 10, "60"), (0, 1, "1.5"), (3, 2, "10")]


# String values: integers in any spelling, the int64 edges, text across the
# 12 bytes a string keeps inline, bytes of any kind.
VALUES = [b"0", b"1", b"-1", b"42", b"9223372036854775807", b"-9223372036854775808",
          b"01", b"+1", b"-0", b"1.5", b"3e2", b"abc", b"", b"x" * 12, b"y" * 13,
          b"\x00\r\n\xff", b"18446744073709551615"]


# Elements, fields and members that repeat, around the 64 bytes a compact
# hash or sorted set keeps; scores and ranges in Redis's spellings.
MEMBERS = [b"a", b"b", b"c", b"1", b"-2", b"10", b"1.5", b"", b"\x00\r\n\xff",
           b"x" * 64, b"y" * 65, b"n1", b"f1"]
SCORES = ["1.5", "-0.25", "2.5e3", "-0", "+inf", "-inf", "inf", "1e300",
          "3.0000000000000001", "-1e-300", "0.1"]
BAD_SCORES = ["nan", "x", "", "1e"]
SCORE_MIN = ["-inf", "0", "(1", "-5", "(-inf", "2.5", "x"]
SCORE_MAX = ["+inf", "5", "(10", "0", "(+inf", "-1", "inf"]
LEX_MIN = ["-", "[a", "(b", "[m1", "(m5", "+", "[", "x"]
LEX_MAX = ["+", "[c", "(m9", "[m2", "(z", "-", "(", "[\xff"]


class Finding(AssertionError):
    pass


def lua_quote(arg):
    """arg as a Lua string literal: every byte but letters and digits
    escaped as \\ddd, so any value survives."""
    if isinstance(arg, bytes):
        data = arg
    else:
        data = str(arg).encode()
    return '"' + "".join(chr(b) if chr(b).isalnum() and b < 128 else "\\%d" % b
                         for b in data) + '"'


def _int(reply):
    return int(reply[1:-2])


def _info(raw):
    """INFO replication of a RawConn as a dict of str."""
    b = raw.command("INFO", "replication")
    text = b.split(b"\r\n", 1)[1].decode()
    out = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith("#"):
            k, v = line.split(":", 1)
            out[k] = v
    return out


class Node:
    """One of a round's three daemons, across its incarnations."""

    def __init__(self, rnd, name):
        self.rnd = rnd
        self.name = name
        self.inc = 0
        self.daemon = None
        self.dir = None
        self.upstream = None        # the Node it follows; None: a primary
        self._raw = None

    def start(self, empty, replicaof=None, extra=()):
        """A new incarnation on the same port (its followers reconnect to
        it), on its data dir or an empty one."""
        port = self.daemon.port if self.daemon is not None else None
        self.inc += 1
        if empty or self.dir is None:
            self.dir = os.path.join(self.rnd.dir, "%s.%d" % (self.name, self.inc))
        args = ["--appendonly", "yes", "--limits-file", self.rnd.limits,
                "--repl-backlog-size", self.rnd.backlog] + list(extra)
        if replicaof is not None:
            args += ["--replicaof", "127.0.0.1 %d" % replicaof.port]
        d = harness.Daemon(self.dir, extra_args=args, fakeclock=True, port=port,
                           name="%s.%d" % (self.name, self.inc),
                           env={"FAKECLOCK_FILE": self.rnd.clock.path})
        try:
            d.start()
        except harness.DaemonError:
            # Another process took the port meanwhile: a new one, and the
            # followers told (they would wait for the old one forever).
            if port is None or "already in use" not in d.log():
                raise
            d = harness.Daemon(self.dir, extra_args=args, fakeclock=True,
                               name="%s.%d" % (self.name, self.inc),
                               env={"FAKECLOCK_FILE": self.rnd.clock.path}).start()
            self.daemon = d
            for f in self.rnd.followers(self):
                if f.alive():
                    self.rnd.follow(f, self)
        self.daemon = d
        self._raw = None
        self.upstream = replicaof
        return self

    @property
    def port(self):
        return self.daemon.port

    def alive(self):
        return self.daemon is not None and self.daemon.alive()

    def raw(self):
        if self._raw is None:
            self._raw = self.daemon.raw(timeout=30)
        return self._raw

    def cmd(self, *args):
        try:
            return self.raw().command(*args)
        except (OSError, EOFError, TimeoutError):
            self._raw = None
            raise

    def info(self):
        return _info(self.raw())

    def kill9(self):
        d = self.daemon
        self.rnd.check_clean(self)
        d.proc.kill()
        d.proc.wait(10)
        d.stopped = True
        d.close_clients()
        with harness._live_lock:
            if d in harness._live:
                harness._live.remove(d)
        self._raw = None

    def stop(self):
        self._raw = None
        return self.daemon.stop() if self.daemon is not None else []


class Round:
    """One round: three nodes, a bounded number of steps, seeded."""

    def __init__(self, seed, seconds, workdir, stats, log=print, topology=None,
                 backlog=None):
        self.seed = seed
        self.rng = random.Random(seed)
        self.deadline = time.monotonic() + seconds
        self.dir = workdir
        self.stats = stats
        self.say = log
        self.steps = []
        self.backlog = self.rng.choice(["1mb", "16kb"])
        self.topology = self.rng.choice(["star", "chain"])
        self.backlog = backlog or self.backlog
        self.topology = topology or self.topology
        os.makedirs(workdir, exist_ok=True)
        self.limits = os.path.join(workdir, "limits")
        os.makedirs(self.limits, exist_ok=True)
        with open(os.path.join(self.limits, "fz.yaml"), "w") as f:
            f.write(LIMITS_YAML)
        self.clock = harness.FakeClock(os.path.join(workdir, "clock"))
        self.nodes = [Node(self, n) for n in ("n0", "n1", "n2")]
        self.primary = None
        self.writer_db = 0
        self.writer = None
        self.reader = None          # DUMPs for RESTORE, on the primary
        self.sink = None            # MIGRATE's target, started when first used

    # ---- the log a finding prints -----------------------------------------

    def step(self, text):
        self.steps.append(text)

    def fail(self, what):
        tail = "\n".join("  %3d %s" % (i, s) for i, s in enumerate(self.steps))
        logs = []
        for n in self.nodes:
            if n.daemon is not None:
                logs.append("--- %s (%s) ---\n%s" % (n.daemon.name, n.daemon.log_path,
                                                     harness.log_tail(n.daemon.log(), 40)))
        raise Finding("replication fuzzer finding: %s\nround seed %d (replay: python3 "
                      "tests/integration/repl_fuzz.py --round-seed %d)\nbacklog %s, "
                      "topology %s\nsteps:\n%s\n%s"
                      % (what, self.seed, self.seed, self.backlog, self.topology, tail,
                         "\n".join(logs)))

    def check_clean(self, node):
        problems = node.daemon.check_alive()
        if problems:
            self.fail("%s: %s" % (node.daemon.name, "; ".join(problems)))

    # ---- topology ---------------------------------------------------------

    def live(self):
        return [n for n in self.nodes if n.alive()]

    def replicas(self):
        return [n for n in self.nodes if n.upstream is not None]

    def followers(self, node):
        return [n for n in self.nodes if n.upstream is node]

    def chain_of(self, node):
        seen = []
        while node is not None and node not in seen:
            seen.append(node)
            node = node.upstream
        return seen

    def start(self):
        n0, n1, n2 = self.nodes
        for n in self.nodes:
            n.start(empty=True)
        self.primary = n0
        self.step("start %s topology, backlog %s" % (self.topology, self.backlog))
        self.follow(n1, n0)
        self.follow(n2, n1 if self.topology == "chain" else n0)
        self.connect_writer()

    def follow(self, node, upstream):
        got = node.cmd("REPLICAOF", "127.0.0.1", upstream.port)
        # "+OK Already connected to specified master" when it already does.
        if not got.startswith(b"+OK"):
            self.fail("%s answered %r to REPLICAOF" % (node.name, got))
        node.upstream = upstream
        self.step("%s REPLICAOF %s" % (node.name, upstream.name))

    def connect_writer(self):
        self.reader = None
        self.writer = self.primary.raw()
        self.writer_db = 0
        self.writer.command("SELECT", 0)

    # ---- traffic ----------------------------------------------------------

    def key(self, kind):
        r = self.rng
        # Now and then a name of another kind: WRONGTYPE must be alike too.
        if r.random() < 0.03:
            kind = r.choice(["g", "f", "s", "l", "t", "r", "c", "x", "q", "h", "z",
                             "S"])
        return "%s:%d" % (kind, r.randrange(NKEYS))

    def expiry(self):
        r = self.rng
        now_ms = self.clock.ns // 1000000
        return r.choice([["EX", r.randint(1, 120)], ["PX", r.randint(1, 90000)],
                         ["EXAT", now_ms // 1000 + r.randint(-5, 100)],
                         ["PXAT", now_ms + r.randint(-500, 60000)], ["PERSIST"]])

    # ---- strings, expiry, key commands ------------------------------------

    def value(self):
        """A string value: integers in any spelling, text around the 12
        bytes kept inline, any bytes, now and then tens or hundreds of KB."""
        r = self.rng
        w = r.random()
        if w < 0.45:
            return r.choice(VALUES)
        if w < 0.7:
            return str(r.randint(-1000, 1000))
        if w < 0.97:
            return r.randbytes(r.randint(0, 40))
        if w < 0.995:
            return r.randbytes(1) * r.randint(1000, 20000)
        return b"z" * r.randint(100000, 300000)

    def string_key(self):
        """Mostly a string's name; sometimes a limiter's (WRONGTYPE, or SET
        replacing it)."""
        r = self.rng
        return self.key("v") if r.random() < 0.85 else self.key(r.choice("gfsltrcxqhz"))

    def string_command(self):
        """One of Redis's string commands, with its options."""
        r = self.rng
        k = self.string_key()
        w = r.random()
        if w < 0.2:
            args = ["SET", k, self.value()]
            if r.random() < 0.3:
                args.append(r.choice(["NX", "XX"]))
            if r.random() < 0.2:
                args.append("GET")
            if r.random() < 0.5:
                e = self.expiry()
                args += ["KEEPTTL"] if e == ["PERSIST"] else e
            return args
        if w < 0.25:
            return [r.choice(["SETNX", "GETSET"]), k, self.value()]
        if w < 0.3:
            if r.random() < 0.5:
                return ["SETEX", k, r.choice([1, 2, 10, 120, 0]), self.value()]
            return ["PSETEX", k, r.choice([1, 500, 1500, 90000, -5]), self.value()]
        if w < 0.34:
            return ["GETDEL", k]
        if w < 0.4:
            return ["GETEX", k] + (self.expiry() if r.random() < 0.7 else [])
        if w < 0.46:
            args = [r.choice(["MSET", "MSET", "MSETNX"])]
            for _ in range(r.randint(1, 4)):
                args += [self.string_key(), self.value()]
            return args
        if w < 0.58:
            c = r.choice(["INCR", "DECR", "INCRBY", "DECRBY"])
            if c.endswith("BY"):
                return [c, k, r.choice([1, -1, 5, 1000, "9223372036854775807",
                                        "-9223372036854775808", "x"])]
            return [c, k]
        if w < 0.64:
            return ["INCRBYFLOAT", k, r.choice(["0.1", "-1.5", "3e2", "1", "-0.25",
                                                "1e308", "abc"])]
        if w < 0.76:
            return ["APPEND", k, self.value()]
        if w < 0.84:
            off = r.choice([0, 1, 5, 11, 12, 13, 20, 40, r.randint(0, 2000),
                            r.randint(0, 200000)])
            return ["SETRANGE", k, off, self.value()]
        if w < 0.9:
            return ["MGET"] + [self.string_key() for _ in range(r.randint(1, 4))]
        return [r.choice(["GET", "STRLEN"]), k] if r.random() < 0.6 else \
            ["GETRANGE", k, r.randint(-20, 20), r.randint(-20, 20)]

    def expiry_command(self):
        """An expiry command on a key of any kind, limiters' included."""
        r = self.rng
        k = self.key(r.choice("gfsltrcxvvqhzqhz"))
        now_ms = self.clock.ns // 1000000
        w = r.random()
        if w < 0.6:
            cmd, t = r.choice([
                ("EXPIRE", r.choice([0, 1, 2, 10, 60, 3600, -1])),
                ("PEXPIRE", r.choice([1, 500, 999, 1000, 1500, 61000, 0])),
                ("EXPIREAT", now_ms // 1000 + r.randint(-2, 120)),
                ("PEXPIREAT", now_ms + r.randint(-500, 90000))])
            args = [cmd, k, t]
            if r.random() < 0.3:
                args.append(r.choice(["NX", "XX", "GT", "LT"]))
            return args
        if w < 0.8:
            return ["PERSIST", k]
        return [r.choice(["TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"]), k]

    def key_command(self):
        """RENAME(NX), COPY, UNLINK, TOUCH across every kind of key; DUMP
        and RESTORE, MIGRATE."""
        r = self.rng
        a = self.key(r.choice("gfsltrcxvqhzqhzS"))
        b = self.key(r.choice("gfsltrcxvqhzqhzS"))
        w = r.random()
        if w < 0.06:
            return self.restore_command(a, b)
        if w < 0.1:
            return self.migrate_command()
        if w < 0.3:
            return [r.choice(["RENAME", "RENAMENX"]), a, b]
        if w < 0.6:
            args = ["COPY", a, b]
            if r.random() < 0.4:
                args += ["DB", r.randrange(DBS)]
            if r.random() < 0.5:
                args.append("REPLACE")
            return args
        if w < 0.85:
            return ["UNLINK"] + [self.key(r.choice("gfsltrcxvqhzS"))
                                 for _ in range(r.randint(1, 3))]
        return [r.choice(["TOUCH", "EXISTS"]), a, b]

    def restore_command(self, a, b):
        """RESTORE of b from a's payload as the primary DUMPs it now (in
        database 0: a payload holds no database), with its options; DUMP
        when a is not there."""
        r = self.rng
        if self.reader is None:
            self.reader = self.primary.raw()
        payload = self.reader.command("DUMP", a)
        if not payload.startswith(b"$") or payload.startswith(b"$-1"):
            return ["DUMP", a]
        payload = payload[payload.index(b"\r\n") + 2:-2]
        ttl = r.choice([0, 0, 1, 5000, 10 ** 9])
        args = ["RESTORE", b, ttl, payload]
        if r.random() < 0.6:
            args.append("REPLACE")
        if ttl and r.random() < 0.3:
            args[2] = self.clock.ns // 10 ** 6 + ttl
            args.append("ABSTTL")
        if r.random() < 0.2:
            args += r.choice([["IDLETIME", 100], ["FREQ", 3]])
        return args

    def migrate_command(self):
        """MIGRATE of a few keys to a redis-server beside the round (its
        own clock; it takes no limiter key and relays its error for one),
        with COPY and REPLACE now and then."""
        r = self.rng
        if self.sink is None:
            self.sink = harness.RedisServer(os.path.join(self.dir, "sink"))
            self.sink.start()
        args = ["MIGRATE", "127.0.0.1", self.sink.port, "", r.randrange(DBS), 5000]
        if r.random() < 0.3:
            args.append("COPY")
        if r.random() < 0.7:
            args.append("REPLACE")
        return args + ["KEYS"] + [self.key(r.choice("qhzSvgx"))
                                  for _ in range(r.randint(1, 3))]

    # ---- lists, hashes, sorted sets ---------------------------------------

    def coll_key(self, kind):
        """Mostly a collection of this kind; sometimes a name of another
        collection, a string or a limiter (WRONGTYPE)."""
        r = self.rng
        if r.random() < 0.08:
            return self.key(r.choice("qhzSvglx"))
        return self.key(kind)

    def member(self):
        """An element, field or member: a few that repeat (so LREM, LINSERT,
        HDEL and ZREM meet them), numbers, any bytes, and now and then one
        over the 64 bytes a compact hash or sorted set keeps."""
        r = self.rng
        w = r.random()
        if w < 0.5:
            return r.choice(MEMBERS)
        if w < 0.8:
            return "m%d" % r.randrange(200)
        if w < 0.95:
            return r.randbytes(r.randint(0, 30))
        return r.randbytes(1) * r.randint(65, 400)

    def many(self, pairs):
        """Arguments for a big write: hundreds or thousands of elements
        (pairs: a score or field before each), past every compact bound."""
        r = self.rng
        n = r.choice([129, 200, 513, 600, r.randint(130, 3000)])
        out = []
        tag = r.randrange(1000)
        for i in range(n):
            m = "b%d:%d" % (tag, i) if r.random() < 0.97 else self.member()
            if pairs == "score":
                out += [self.score(good=True), m]
            elif pairs == "value":
                out += [m, self.member()]
            else:
                out.append(m)
        return out

    def score(self, good=False):
        """A score: small integers (ties, so members order by their
        bytes), Redis's spellings of floats and infinities, rarely one it
        refuses."""
        r = self.rng
        w = r.random()
        if w < 0.6:
            return r.randint(-20, 20)
        if w < 0.97 or good:
            return r.choice(SCORES)
        return r.choice(BAD_SCORES)

    def list_command(self):
        r = self.rng
        k = self.coll_key("q")
        w = r.random()
        if w < 0.3:
            args = [r.choice(["LPUSH", "RPUSH", "LPUSH", "RPUSH", "LPUSHX",
                              "RPUSHX"]), k]
            if r.random() < 0.03:
                return args + self.many(None)
            return args + [self.member() for _ in range(r.randint(1, 6))]
        if w < 0.45:
            args = [r.choice(["LPOP", "RPOP"]), k]
            if r.random() < 0.5:
                args.append(r.choice([0, 1, 2, 5, 100, -1]))
            return args
        if w < 0.52:
            return ["LTRIM", k, r.choice([0, 1, 2, -3, -100, 5, 200]),
                    r.choice([-1, -2, 0, 3, 10, 150, 1000, -200])]
        if w < 0.59:
            return ["LREM", k, r.choice([0, 1, -1, 2, -3, 100]), self.member()]
        if w < 0.65:
            return ["LSET", k, r.choice([0, -1, 1, 5, -3, 300, -1000]), self.member()]
        if w < 0.72:
            return ["LINSERT", k, r.choice(["BEFORE", "AFTER"]), self.member(),
                    self.member()]
        if w < 0.80:
            return self.list_move(k)
        if w < 0.88:
            return ["LRANGE", k, r.randint(-10, 10), r.choice([-1, 3, 50, -5])]
        if w < 0.94:
            args = ["LPOS", k, self.member()]
            if r.random() < 0.4:
                args += ["RANK", r.choice([1, 2, -1, -2])]
            if r.random() < 0.4:
                args += ["COUNT", r.choice([0, 1, 3])]
            if r.random() < 0.2:
                args += ["MAXLEN", r.choice([0, 1, 10])]
            return args
        if r.random() < 0.5:
            return ["LLEN", k]
        return ["LINDEX", k, r.choice([0, -1, 1, 5, -3, 300])]

    def hash_command(self):
        r = self.rng
        k = self.coll_key("h")
        w = r.random()
        if w < 0.35:
            args = [r.choice(["HSET", "HSET", "HMSET"]), k]
            if r.random() < 0.03:
                return args + self.many("value")
            for _ in range(r.randint(1, 4)):
                args += [self.member(), self.member()]
            return args
        if w < 0.42:
            return ["HSETNX", k, self.member(), self.member()]
        if w < 0.55:
            return ["HDEL", k] + [self.member() for _ in range(r.randint(1, 4))]
        if w < 0.65:
            return ["HINCRBY", k, r.choice(["n1", "n2", "m1"]) if r.random() < 0.7
                    else self.member(), r.choice([1, -1, 7, 1000, "9223372036854775807",
                                                  "x"])]
        if w < 0.72:
            return ["HINCRBYFLOAT", k, r.choice(["f1", "f2", "n1"]) if r.random() < 0.7
                    else self.member(), r.choice(["0.1", "-1.5", "3e2", "1", "1e308",
                                                  "x"])]
        if w < 0.8:
            return [r.choice(["HGET", "HEXISTS", "HSTRLEN"]), k, self.member()]
        if w < 0.85:
            return ["HMGET", k] + [self.member() for _ in range(r.randint(1, 4))]
        if w < 0.93:
            return [r.choice(["HGETALL", "HKEYS", "HVALS", "HLEN"]), k]
        return ["HSCAN", k, r.choice([0, 0, 1, 3]), "COUNT", r.choice([1, 10, 1000])]

    def list_move(self, k):
        """LMOVE, RPOPLPUSH, LMPOP and the blocking list pops, these with
        a timeout of a millisecond (an empty key answers nil at once)."""
        r = self.rng
        side = lambda: r.choice(["LEFT", "RIGHT"])
        v = r.random()
        if v < 0.3:
            return ["LMOVE", k, self.coll_key("q"), side(), side()]
        if v < 0.45:
            return ["RPOPLPUSH", k, self.coll_key("q")]
        if v < 0.6:
            return ["LMPOP", 2, k, self.coll_key("q"), side(), "COUNT", r.choice([1, 3, 50])]
        if v < 0.75:
            return [r.choice(["BLPOP", "BRPOP"]), k, self.coll_key("q"), "0.001"]
        if v < 0.85:
            return ["BLMOVE", k, self.coll_key("q"), side(), side(), "0.001"]
        if v < 0.92:
            return ["BRPOPLPUSH", k, self.coll_key("q"), "0.001"]
        return ["BLMPOP", "0.001", 1, k, side(), "COUNT", r.choice([1, 2, 9])]

    def zalg_command(self):
        """The algebra's STORE forms (a destination of any kind replaced
        whole, or deleted by an empty result), ZRANGESTORE, and reads among
        them (ZUNION, ZINTERCARD, ZRANDMEMBER, HRANDFIELD)."""
        r = self.rng
        n = r.randint(1, 3)
        keys = [self.coll_key("z") for _ in range(n)]
        op = r.choice(["ZUNIONSTORE", "ZUNIONSTORE", "ZINTERSTORE", "ZINTERSTORE",
                       "ZDIFFSTORE", "ZRANGESTORE", "ZRANGESTORE", "ZUNION", "ZINTERCARD",
                       "ZRANDMEMBER", "HRANDFIELD"])
        if op == "ZRANGESTORE":
            if r.random() < 0.5:
                return [op, self.coll_key("z"), keys[0], r.randint(-5, 5), r.choice([-1, 3, 200])]
            return [op, self.coll_key("z"), keys[0], r.choice(SCORE_MIN), r.choice(SCORE_MAX),
                    "BYSCORE", "LIMIT", r.randint(0, 3), r.choice([-1, 1, 5])]
        if op == "ZRANDMEMBER":
            return [op, keys[0], r.choice([1, 3, -5, 300]), "WITHSCORES"]
        if op == "HRANDFIELD":
            return [op, self.coll_key("h"), r.choice([1, 5, -3]), "WITHVALUES"]
        args = [op] + ([self.coll_key("z")] if op.endswith("STORE") else []) + [n] + keys
        if op in ("ZUNIONSTORE", "ZINTERSTORE", "ZUNION"):
            if r.random() < 0.5:
                args += ["WEIGHTS"] + [r.choice([1, 0, -1, 2, "0.5", "inf", "-inf"]) for _ in keys]
            if r.random() < 0.4:
                args += ["AGGREGATE", r.choice(["SUM", "MIN", "MAX"])]
        return args

    def zset_command(self):
        r = self.rng
        if r.random() < 0.1:
            return self.zalg_command()
        k = self.coll_key("z")
        w = r.random()
        if w < 0.35:
            args = ["ZADD", k]
            for opt in ("NX", "XX", "GT", "LT", "CH"):
                if r.random() < 0.12:
                    args.append(opt)
            if r.random() < 0.03:
                return args + self.many("score")
            if r.random() < 0.12:
                return args + ["INCR", self.score(), self.member()]
            for _ in range(r.randint(1, 4)):
                args += [self.score(), self.member()]
            return args
        if w < 0.42:
            return ["ZINCRBY", k, self.score(), self.member()]
        if w < 0.52:
            return ["ZREM", k] + [self.member() for _ in range(r.randint(1, 4))]
        if w < 0.57:
            return ["ZREMRANGEBYSCORE", k, r.choice(SCORE_MIN), r.choice(SCORE_MAX)]
        if w < 0.61:
            return ["ZREMRANGEBYRANK", k, r.randint(-10, 10), r.choice([-1, 2, 5, -100])]
        if w < 0.65:
            return ["ZREMRANGEBYLEX", k, r.choice(LEX_MIN), r.choice(LEX_MAX)]
        if w < 0.72:
            v = r.random()
            if v < 0.2:
                return ["ZMPOP", 2, k, self.coll_key("z"), r.choice(["MIN", "MAX"]),
                        "COUNT", r.choice([1, 4, 100])]
            if v < 0.3:
                return [r.choice(["BZPOPMIN", "BZPOPMAX"]), k, "0.001"]
            if v < 0.4:
                return ["BZMPOP", "0.001", 1, k, r.choice(["MIN", "MAX"])]
            args = [r.choice(["ZPOPMIN", "ZPOPMAX"]), k]
            if r.random() < 0.5:
                args.append(r.choice([0, 1, 3, 50, -1]))
            return args
        if w < 0.85:
            v = r.random()
            if v < 0.4:
                args = ["ZRANGE", k, r.randint(-5, 5), r.choice([-1, 3, 100])]
            elif v < 0.7:
                args = ["ZRANGE", k, r.choice(SCORE_MIN), r.choice(SCORE_MAX), "BYSCORE"]
            else:
                args = ["ZRANGE", k, r.choice(LEX_MIN), r.choice(LEX_MAX), "BYLEX"]
            if r.random() < 0.3:
                args.append("REV")
            if v >= 0.4 and r.random() < 0.3:
                args += ["LIMIT", r.randint(0, 3), r.choice([-1, 1, 5])]
            if v < 0.7 and r.random() < 0.5:
                args.append("WITHSCORES")
            return args
        if w < 0.92:
            return [r.choice(["ZSCORE", "ZRANK", "ZREVRANK"]), k, self.member()]
        if w < 0.94:
            return ["ZCARD", k]
        if w < 0.96:
            return ["ZCOUNT", k, r.choice(SCORE_MIN), r.choice(SCORE_MAX)] \
                if r.random() < 0.5 else \
                ["ZLEXCOUNT", k, r.choice(LEX_MIN), r.choice(LEX_MAX)]
        return ["ZSCAN", k, 0, "COUNT", r.choice([1, 10, 1000])]

    def set_member(self):
        """Small integers mostly (an intset's), else any member."""
        r = self.rng
        return str(r.randint(-20, 60)) if r.random() < 0.55 else self.member()

    def set_command(self):
        """Every set command; SPOP's random picks are the primary's, which
        its replicas must end up equal to (the members it took)."""
        r = self.rng
        k = self.coll_key("S")
        w = r.random()
        if w < 0.3:
            if r.random() < 0.03:
                n = r.randint(100, 700)
                return ["SADD", k] + [str(i) if r.random() < 0.8 else "w%d" % i
                                      for i in range(n)]
            return ["SADD", k] + [self.set_member() for _ in range(r.randint(1, 4))]
        if w < 0.42:
            return ["SREM", k] + [self.set_member() for _ in range(r.randint(1, 4))]
        if w < 0.54:
            args = ["SPOP", k]
            if r.random() < 0.6:
                args.append(r.choice([0, 1, 2, 5, 50, 600, -1]))
            return args
        if w < 0.62:
            return ["SMOVE", k, self.coll_key("S"), self.set_member()]
        if w < 0.74:
            return [r.choice(["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"]),
                    self.coll_key("S")] + [self.coll_key("S")
                                           for _ in range(r.randint(1, 3))]
        if w < 0.8:
            return [r.choice(["SINTER", "SUNION", "SDIFF"])] + \
                [self.coll_key("S") for _ in range(r.randint(1, 3))]
        if w < 0.86:
            return [r.choice(["SISMEMBER", "SMISMEMBER"]), k, self.set_member()]
        if w < 0.9:
            return ["SINTERCARD", 2, k, self.coll_key("S"), "LIMIT", r.choice([0, 1, 5])]
        if w < 0.95:
            return [r.choice(["SCARD", "SMEMBERS"]), k] if r.random() < 0.7 \
                else ["SRANDMEMBER", k, r.choice([1, 3, -5, 100])]
        return ["SSCAN", k, 0, "COUNT", r.choice([1, 10, 1000])]

    def script_command(self):
        """EVAL of a body calling 1-4 random commands with redis.pcall (an
        error inside does not stop the rest, as in a script that checks)."""
        r = self.rng
        calls = []
        while len(calls) < r.randint(1, 4):
            cmd = self.command(in_script=True)
            if cmd[0] in ("WAIT", "RL.CHECK"):
                continue        # not allowed in a script / not Redis's
            calls.append("redis.pcall(%s)" % ", ".join(lua_quote(a) for a in cmd))
        return ["EVAL", " ".join(calls) + " return 1", 0]

    def command(self, in_script=False):
        """One random write (or read) for the primary."""
        r = self.rng
        w = r.random()
        if not in_script and w < 0.05:
            return self.script_command()
        if w < 0.22:
            return self.string_command()
        if w < 0.31:
            return self.expiry_command()
        if w < 0.36:
            return self.key_command()
        if w < 0.46:
            return self.list_command()
        if w < 0.54:
            return self.hash_command()
        if w < 0.64:
            return self.zset_command()
        if w < 0.71:
            return self.set_command()
        w = r.random()
        if w < 0.14:
            k = self.key("g")
            b, c, p = GCRA_P[int(k[-1]) % 3]
            args = ["CL.THROTTLE", k, b, c, p]
            if r.random() < 0.4:
                args.append(r.choice([0, 1, 2, 3, 30]))
            return args
        if w < 0.24:
            k = self.key("f")
            lim, win, align = FIXED_P[int(k[-1]) % 3]
            args = ["RL.FIXED", k, lim, win]
            if r.random() < 0.4:
                args += ["COST", r.choice([-2, 0, 1, 2, 4])]
            if align:
                args.append("ALIGN")
            return args
        if w < 0.32:
            k = self.key("s")
            lim, win = SLIDING_P[int(k[-1]) % 3]
            args = ["RL.SLIDING", k, lim, win]
            if r.random() < 0.3:
                args += ["COST", r.choice([-1, 1, 2, 3])]
            return args
        if w < 0.42:
            k = self.key("l")
            lim, wins = LOG_P[int(k[-1]) % 3]
            args = ["RL.LOG", k, lim, r.choice(wins)]
            if r.random() < 0.3:
                args += ["COST", r.choice([-1, 1, 2])]
            if r.random() < 0.6:
                args += ["META", r.choice(["alice", "bob", "", "x" * r.randint(1, 40)])]
            return args
        if w < 0.50:
            k = self.key("t")
            spec = TIERS_P[int(k[-1]) % 3]
            if r.random() < 0.3:
                spec = spec[:2]             # a call with fewer tiers
            args = ["RL.TIERS", k] + list(spec)
            if r.random() < 0.3:
                args += ["COST", r.choice([-1, 1, 2, 5])]
            return args
        if w < 0.56:
            k = self.key("r")
            b, t, p = RGCRA_P[int(k[-1]) % 3]
            args = ["GCRA", k, b, t, p]
            if r.random() < 0.3:
                args += ["TOKENS", r.choice([1, 2, 5])]
            return args
        if w < 0.66:
            k = self.key(r.choice(["c", "x"]))
            args = ["INCREX", k]
            if k.startswith("x"):
                args += ["BYFLOAT", r.choice(["1.5", "-0.25", "3e2", "0.1"])]
            elif r.random() < 0.8:
                args += ["BYINT", r.randint(-5, 10)]
            if r.random() < 0.3:
                args += ["UBOUND", r.randint(5, 50)]
                if r.random() < 0.5:
                    args.append("SATURATE")
            if r.random() < 0.6:
                args += self.expiry()
                if args[-1] != "PERSIST" and r.random() < 0.3:
                    args.append("ENX")
            if r.random() < 0.15:
                args.append(r.choice(["NX", "XX"]))
            return args
        if w < 0.70:
            return ["RL.CHECK", "fz", r.choice(
                ["remote_address=10.0.0.%d" % r.randrange(4), "plan=gcra", "plan=sliding"])]
        if w < 0.75:
            return ["DEL"] + [self.key(r.choice("gfsltrcxqhz")) for _ in range(r.randint(1, 3))]
        if w < 0.79:
            return ["MOVE", self.key(r.choice("gfsltrcxqhz")), r.randrange(DBS)]
        if w < 0.80:
            return ["SWAPDB", r.randrange(DBS), r.randrange(DBS)]
        if w < 0.805:
            return ["FLUSHDB"]
        if w < 0.807:
            return ["FLUSHALL"]
        if w < 0.86:
            return ["SELECT", r.randrange(DBS)]
        if w < 0.87:
            return ["WAIT", r.randint(0, 2), r.choice([0, 1, 20])]
        if w < 0.90:
            return ["CL.THROTTLE", self.key("g"), 5, 1, 60, 1, "PEEK"]
        return ["CL.THROTTLE", self.key("g"), 5, 1, 60]

    def burst(self, n, to=None):
        """n commands (MULTI blocks count as one) to the primary, pipelined
        in batches; every reply read. Returns the commands sent."""
        r = self.rng
        node = to or self.primary
        conn = self.writer
        sent = 0
        batch = []
        for _ in range(n):
            if r.random() < 0.05:
                block = [["MULTI"]] + [self.command() for _ in range(r.randint(1, 5))]
                block = [c for c in block if c[0] not in ("WAIT", "SELECT")]
                block.append(["EXEC"])
                batch += block
            else:
                c = self.command()
                if c[0] == "WAIT" and c[2] == 0:
                    c[2] = 1                # never block without a bound
                batch.append(c)
            if len(batch) >= 32:
                sent += self._send(conn, node, batch)
                batch = []
        if batch:
            sent += self._send(conn, node, batch)
        self.stats["commands"] += sent
        return sent

    def _send(self, conn, node, batch):
        conn.send(b"".join(harness.resp_command(*c) for c in batch))
        for c in batch:
            try:
                rep = conn.reply_bytes(timeout=30)
            except (OSError, EOFError, TimeoutError) as e:
                self.fail("%s stopped answering the writer (%r) at %r" % (node.name, e, c))
            if rep.startswith((b"-READONLY", b"-NOREPLICAS", b"-OOM", b"-LOADING")):
                self.fail("%s answered %r to %r" % (node.name, rep, c))
            if c[0] == "SELECT" and rep == b"+OK\r\n":
                self.writer_db = int(c[1])
        return len(batch)

    # ---- waiting and comparing -------------------------------------------

    def wait(self, what, pred, timeout=CONVERGE_S):
        deadline = time.monotonic() + timeout
        while True:
            v = pred()
            if v:
                return v
            if time.monotonic() >= deadline:
                self.fail("timed out after %d s waiting for %s" % (timeout, what))
            time.sleep(0.02)

    def offsets_match(self):
        """Every replica up and at its upstream's offset (read upstream
        first: an upstream only grows, so equality is exact)."""
        for n in self.live():
            self.check_clean(n)
        p = self.primary.info()
        if p.get("role") != "master":
            return False
        want = int(p["master_repl_offset"])
        for n in self.replicas():
            i = n.info()
            if i.get("master_link_status") != "up" or \
                    int(i["slave_repl_offset"]) != want or \
                    i.get("master_port") != str(n.upstream.port):
                return False
        again = int(self.primary.info()["master_repl_offset"])
        return again == want

    def converge(self, why):
        """Bounded wait for matching offsets, then the same keys on every
        node (retried while offsets move: a PING may pass meanwhile)."""
        self.stats["checks"] += 1
        self.step("check (%s)" % why)
        deadline = time.monotonic() + CONVERGE_S
        last = None
        while True:
            self.wait("matching offsets", self.offsets_match,
                      max(1.0, deadline - time.monotonic()))
            prints = [(n, fingerprint(n.raw())) for n in [self.primary] + self.replicas()]
            base = prints[0][1]
            bad = [(n, fp) for n, fp in prints[1:] if fp != base]
            if not bad:
                return base
            last = (prints[0][0], base, bad)
            if time.monotonic() >= deadline:
                break
            time.sleep(0.1)
        p, base, bad = last
        lines = []
        for n, fp in bad:
            lines += diff(p.name, base, n.name, fp)
        self.fail("the nodes differ after their offsets matched:\n" + "\n".join(lines[:40]))

    # ---- faults -----------------------------------------------------------

    def fault(self):
        r = self.rng
        kinds = ["link-drop", "restart-data", "restart-empty", "overlap",
                 "backlog-overflow", "promote", "kill-primary", "repoint", "bgrewrite"]
        kind = r.choice(kinds)
        self.stats["faults"][kind] = self.stats["faults"].get(kind, 0) + 1
        getattr(self, "f_" + kind.replace("-", "_"))()
        return kind

    def f_link_drop(self):
        ups = [n for n in self.live() if self.followers(n)]
        x = self.rng.choice(ups)
        got = x.cmd("CLIENT", "KILL", "TYPE", "replica")
        self.step("link-drop: CLIENT KILL TYPE replica on %s -> %r" % (x.name, got))
        self.burst(self.rng.randint(0, 60))

    def _restart_replica(self, empty):
        x = self.rng.choice(self.replicas())
        up = x.upstream
        # Sometimes from a quiet, converged point: then its journal must
        # give back exactly what it held.
        held = None
        if not empty and self.rng.random() < 0.5:
            held = self.converge("before kill -9 of %s" % x.name)
        self.step("kill -9 %s (replica of %s), restart %s"
                  % (x.name, up.name, "empty" if empty else "on its data"))
        x.kill9()
        if held is not None:
            self.restart_alone(x, held)
            self.follow(x, up)
            self.burst(self.rng.randint(0, 40))
            return
        self.burst(self.rng.randint(0, 80))
        if self.rng.random() < 0.5:
            x.start(empty=empty, replicaof=up)
            self.step("  %s started with --replicaof %s" % (x.name, up.name))
        else:
            x.start(empty=empty)
            self.follow(x, up)
        self.burst(self.rng.randint(0, 40))

    def restart_alone(self, x, held):
        """x restarted on its data as a primary of its own: it must hold
        `held`, what it held when it was killed."""
        x.start(empty=False)
        self.step("  %s restarted on its data alone: it must hold what it held" % x.name)
        got = fingerprint(x.raw())
        if got != held:
            self.fail("%s lost or changed keys across kill -9 and a restart on its "
                      "journal:\n%s" % (x.name, "\n".join(diff("before", held, "after",
                                                                  got)[:40])))
        self.stats["journal_checks"] += 1

    def f_restart_data(self):
        self._restart_replica(False)

    def f_restart_empty(self):
        self._restart_replica(True)

    def shared_snapshots(self, node):
        """Full syncs that met a snapshot under way (overlapping)."""
        log = node.daemon.log()
        return log.count("with the snapshot under way") + \
            log.count("waiting for the next snapshot")

    def full_syncs_asked(self, node):
        return node.daemon.log().count("asks for synchronization: full resync")

    def f_overlap(self):
        """Two replicas of the primary ask for a full sync, the second while
        the first one's snapshot is still being written."""
        p = self.primary
        a, b = self.rng.sample(self.replicas(), 2)
        keys = sum(_int(p.cmd("SELECT", db) and p.cmd("DBSIZE")) for db in range(ALL_DBS))
        delay = max(1000, min(50000, 1500000 // max(1, keys)))
        p.cmd("SELECT", 0)
        assert p.cmd("CONFIG", "SET", "rdb-key-save-delay", delay) == b"+OK\r\n"
        self.step("overlap: rdb-key-save-delay %d on %s (%d keys); %s then %s full sync"
                  % (delay, p.name, keys, a.name, b.name))
        shared = self.shared_snapshots(p)
        for x in (a, b):
            # NO ONE gives it an id the primary does not know: a full sync
            # (a snapshot started for it, or one under way it shares).
            before = self.full_syncs_asked(p)
            assert x.cmd("REPLICAOF", "NO", "ONE") == b"+OK\r\n"
            self.follow(x, p)
            self.wait("%s to ask %s for a full sync" % (x.name, p.name),
                      lambda: self.full_syncs_asked(p) > before, 30)
            if x is a:
                self.burst(self.rng.randint(0, 100))
        self.burst(self.rng.randint(0, 100))
        assert p.cmd("CONFIG", "SET", "rdb-key-save-delay", 0) == b"+OK\r\n"
        if self.shared_snapshots(p) > shared:
            self.stats["overlaps_seen"] += 1

    def f_backlog_overflow(self):
        """A replica is stopped while more than the backlog is written to
        its upstream, then its link is killed: it needs a full sync."""
        x = self.rng.choice(self.replicas())
        up = x.upstream
        size = 16384 if self.backlog == "16kb" else 1 << 20
        self.step("backlog-overflow: SIGSTOP %s, more than %d bytes to %s"
                  % (x.name, size, up.name))
        os.kill(x.daemon.proc.pid, signal.SIGSTOP)
        try:
            start = int(_info(self.writer)["master_repl_offset"])
            for _ in range(200):
                self.burst(100)
                if int(_info(self.writer)["master_repl_offset"]) - start > size + 4096:
                    break
            got = up.cmd("CLIENT", "KILL", "TYPE", "replica")
            self.step("  CLIENT KILL TYPE replica on %s -> %r" % (up.name, got))
        finally:
            os.kill(x.daemon.proc.pid, signal.SIGCONT)
        self.burst(self.rng.randint(0, 50))

    def f_promote(self):
        """REPLICAOF NO ONE on a replica; writes go to it at once; the others
        follow it (the old primary too)."""
        y = self.rng.choice(self.replicas())
        old = self.primary
        assert y.cmd("REPLICAOF", "NO", "ONE") == b"+OK\r\n"
        y.upstream = None
        self.primary = y
        self.connect_writer()
        self.step("promote %s (the primary was %s)" % (y.name, old.name))
        self.burst(self.rng.randint(0, 60))
        for n in self.rng.sample(self.nodes, 3):
            if n is not y and (n.upstream is None or n.upstream is not y
                               and self.rng.random() < 0.7):
                self.follow(n, y)
                self.burst(self.rng.randint(0, 30))
        self.fix_cycles()

    def fix_cycles(self):
        for n in self.nodes:
            if n.upstream is not None and self.primary not in self.chain_of(n):
                self.follow(n, self.primary)

    def f_kill_primary(self):
        """kill -9 of the primary; the most advanced replica (sometimes
        another) takes over. After a WAIT every replica acknowledged, the
        new primary must hold what the dead one held."""
        old = self.primary
        strict = None
        mine = self.followers(old)
        if self.rng.random() < 0.6:
            rep = self.writer.command("WAIT", len(mine), 5000)
            self.step("WAIT %d 5000 on %s -> %r" % (len(mine), old.name, rep))
            if _int(rep) == len(mine):
                strict = True
        held = fingerprint(old.raw())   # the writer is quiet: all it acknowledged
        pinfo = old.info()
        history = pinfo["master_replid"]
        online = sum("state=online" in v for k, v in pinfo.items()
                     if k.startswith("slave") and k[5:].isdigit())
        self.step("kill -9 primary %s" % old.name)
        old.kill9()
        survivors = [n for n in self.nodes if n is not old]
        self.wait("the survivors to see their links down", lambda: all(
            n.info().get("master_link_status") == "down"
            for n in survivors if n.upstream is old), 30)
        # What each survivor has: a chain's second hop may still be passing
        # on what its upstream got.
        self.wait("the second hop to settle", lambda: all(
            n.upstream is old or n.info().get("master_link_status") != "up" or
            int(n.info()["slave_repl_offset"]) ==
            int(n.upstream.info()["slave_repl_offset"]) for n in survivors), 30)
        # Offsets compare within one history (replication ID) only: a
        # survivor still on an older one (its full sync cut short) is
        # behind whatever its offset says.
        infos = {n: n.info() for n in survivors}
        offs = {n: int(i["slave_repl_offset"]) for n, i in infos.items()}
        same = [n for n in survivors if infos[n]["master_replid"] == history]
        best = max([offs[n] for n in same] or [-1])
        if same and self.rng.random() < 0.8:
            y = self.rng.choice([n for n in same if offs[n] == best])
        else:
            y = self.rng.choice(survivors)
        # Each of `mine` acknowledged everything WAIT waited for.
        strict = held if strict and mine and y in same and \
            offs[y] >= min(offs[n] for n in mine) else None
        assert y.cmd("REPLICAOF", "NO", "ONE") == b"+OK\r\n"
        y.upstream = None
        self.primary = y
        self.step("promote %s (offsets %s)" % (
            y.name, ", ".join("%s=%d" % (n.name, o) for n, o in sorted(
                offs.items(), key=lambda t: t[0].name))))
        if strict is not None:
            self.step("  it must hold what %s held when WAIT answered" % old.name)
            got = fingerprint(y.raw())
            if got != strict:
                self.fail("a write WAIT acknowledged is missing after failover:\n" +
                          "\n".join(diff(old.name, strict, y.name, got)[:40]))
            self.stats["wait_checks"] += 1
        elif y in same and offs[y] == best:
            # Without WAIT nothing is promised; how often the most advanced
            # replica had everything anyway is counted.
            got = fingerprint(y.raw())
            key = "kill9_nothing_lost" if got == held else "kill9_lost"
            self.stats[key] += 1
            if got != held:
                # A replica that was not online (resyncing after a fault)
                # when the primary died is expected to lack writes.
                self.stats["kill9_lost_all_online"] += online == len(mine)
                self.step("  %s lacks %d keys' last writes (no WAIT: allowed; %d of %d "
                          "replicas online)" % (y.name, len(diff("", held, "", got)),
                                                online, len(mine)))
                if os.environ.get("REPL_FUZZ_SHOW_LOSS"):
                    self.say("\n".join(self.steps[-12:] + diff(old.name, held, y.name,
                                                                   got)[:6]))
        for n in survivors:
            if n is not y and (n.upstream is old or self.rng.random() < 0.5):
                self.follow(n, y)
        self.fix_cycles()
        self.connect_writer()
        self.burst(self.rng.randint(0, 60))
        empty = self.rng.random() < 0.5
        if not empty and self.rng.random() < 0.5:
            self.restart_alone(old, held)
            self.follow(old, y)
        else:
            old.start(empty=empty, replicaof=y)
            self.step("  %s restarted %s with --replicaof %s"
                      % (old.name, "empty" if empty else "on its data", y.name))
        self.burst(self.rng.randint(0, 40))

    def f_repoint(self):
        x = self.rng.choice(self.replicas())
        options = [n for n in self.nodes if n is not x and n is not x.upstream
                   and x not in self.chain_of(n)]
        if not options:
            self.step("repoint: nothing to do")
            return
        self.follow(x, self.rng.choice(options))
        self.burst(self.rng.randint(0, 40))

    def f_bgrewrite(self):
        x = self.rng.choice(self.live())
        got = x.cmd("BGREWRITEAOF")
        self.step("BGREWRITEAOF on %s -> %r" % (x.name, got))
        self.burst(self.rng.randint(0, 80))

    def clock_step(self):
        r = self.rng
        ms = r.choice([1, 250, 999, 1000, 1500, 5000, 11000, 61000, 3600000])
        self.clock.advance(ms=ms)
        self.step("clock +%d ms" % ms)

    # ---- the round --------------------------------------------------------

    def run(self):
        try:
            self._run()
        except Finding:
            raise
        except Exception:
            # A step that broke (a reply not as expected, a daemon that
            # stopped answering): reported with the seed and steps too.
            self.fail("a step failed:\n" + traceback.format_exc())

    def _run(self):
        try:
            self.start()
            self.burst(self.rng.randint(50, 200))
            self.converge("after the first sync")
            for i in range(STEPS_MAX):
                if time.monotonic() >= self.deadline:
                    break
                if self.rng.random() < 0.3:
                    self.clock_step()
                n = self.burst(self.rng.randint(10, 300))
                self.step("burst of %d to %s" % (n, self.primary.name))
                kind = self.fault()
                self.stats["steps"] += 1
                if self.rng.random() < 0.4:
                    self.converge("after %s" % kind)
            if self.rng.random() < 0.5:
                self.clock_step()
            self.converge("end of the round")
        finally:
            problems = []
            for n in self.nodes:
                if n.daemon is not None and not n.daemon.stopped:
                    problems += ["%s: %s" % (n.daemon.name, p) for p in n.stop()]
            if self.sink is not None:
                self.sink.stop()
        if problems:
            self.fail("; ".join(problems))


def fingerprint(raw):
    """Every key of every database: TYPE, PTTL and its state read without
    changing it. A log or tiers key that keeps no entry (an EXPIRE or
    PERSIST held it past its last one) is compared too: a snapshot, the
    journal and a full sync give it back as it was (a load dropped it
    before efc6a6f; this fuzzer met it within seconds once EXPIRE reached
    limiter keys)."""
    out = {}
    for db in range(ALL_DBS):
        raw.command("SELECT", db)
        keys = raw.command("KEYS", "*")
        for k in sorted(keys.split(b"\r\n")[2::2]):
            t = raw.command("TYPE", k)
            entry = [t, raw.command("PTTL", k)]
            entry += [raw.command(*a) for a in state_reads(k, t)]
            if t == b"+hash\r\n":
                entry.append(hash_state(raw, k))
            elif t == b"+set\r\n":
                entry.append(set_state(raw, k))
            out[(db, k)] = tuple(entry)
    raw.command("SELECT", 0)
    return out


def state_reads(k, t):
    """Reads that show a key's state: its parameters follow from its name
    (RL.CHECK's keys and names of another kind get default ones)."""
    try:
        i = int(k[-1:]) % 3
    except ValueError:
        i = 0
    kind = k[:2]
    if t == b"+gcra\r\n" or t == b"+string\r\n":
        return [("GET", k)]
    if t == b"+fixed\r\n":
        lim, win, align = FIXED_P[i] if kind == b"f:" else (3, 60, False)
        return [("RL.FIXED", k, lim, win, "PEEK", "MS") + (("ALIGN",) if align else ())]
    if t == b"+sliding\r\n":
        lim, win = SLIDING_P[i] if kind == b"s:" else (4, 60)
        return [("RL.SLIDING", k, lim, win, "PEEK", "MS")]
    if t == b"+log\r\n":
        lim, wins = LOG_P[i] if kind == b"l:" else (5, (60,))
        return [("RL.ENTRIES", k, "COUNT", 100000),
                ("RL.LOG", k, lim, wins[0], "PEEK", "MS")]
    if t == b"+tiers\r\n":
        spec = TIERS_P[i] if kind == b"t:" else (5, 1)
        return [("RL.TIERS", k) + tuple(spec) + ("PEEK", "MS")]
    if t == b"+list\r\n":
        return [("LRANGE", k, 0, -1)]
    if t == b"+zset\r\n":
        return [("ZRANGE", k, 0, -1, "WITHSCORES")]
    return []


def bulks(reply):
    """The bulk strings of a RESP2 array reply, in order (None for a nil
    one), binary ones included."""
    i = reply.index(b"\r\n")
    assert reply[:1] == b"*", reply[:80]
    out = []
    for _ in range(int(reply[1:i])):
        i += 2
        j = reply.index(b"\r\n", i)
        n = int(reply[i + 1:j])
        out.append(None if n < 0 else reply[j + 2:j + 2 + n])
        i = j if n < 0 else j + 2 + n
    return out


class HashState:
    """A hash as HGETALL shows it. Its order is part of what a replica
    must reproduce while the hash is compact (Redis's listpack: up to 512
    fields of up to 64 bytes, never converted back); a large one's order is
    its table's (keyed per process), so only its pairs compare. The
    encoding is not shown by any command here but HSCAN's: a compact hash
    answers HSCAN 0 COUNT 1 with every field and cursor 0, a large one
    (nearly always) does not. So two nodes' orders compare when both
    answered so and the pairs are small; a large hash that shrank and
    whose table holds every field in its last bucket on both nodes could
    pass for compact (then a reordered chain is no finding: Redis's
    replicas differ there too), which the small-count rule makes rare."""

    def __init__(self, pairs, one_shot):
        self.pairs = pairs
        self.sorted = sorted(pairs)
        large = len(pairs) > 512 or any(len(f) > 64 or len(v) > 64 for f, v in pairs)
        self.ordered = one_shot and not large

    def __eq__(self, other):
        if not isinstance(other, HashState):
            return NotImplemented
        if self.sorted != other.sorted:
            return False
        return not (self.ordered and other.ordered) or self.pairs == other.pairs

    __hash__ = None

    def __repr__(self):
        return "hash(%s%d pairs: %r)" % ("ordered, " if self.ordered else "",
                                        len(self.pairs), self.pairs[:6])


def hash_state(raw, k):
    flat = bulks(raw.command("HGETALL", k))
    pairs = list(zip(flat[0::2], flat[1::2]))
    scan = raw.command("HSCAN", k, 0, "COUNT", 1)
    one_shot = scan.startswith(b"*2\r\n$1\r\n0\r\n*%d\r\n" % len(flat))
    return HashState(pairs, one_shot)


class SetState:
    """A set as SMEMBERS shows it: in order while compact (SSCAN 0 COUNT 1
    answers it whole: an intset's order is Redis's, the other members' the
    order their effects gave), else its members sorted (a large set's
    order is its table's, keyed per process)."""

    def __init__(self, members, one_shot):
        self.members = members
        self.sorted = sorted(members)
        self.ordered = one_shot and len(members) <= 512

    def __eq__(self, other):
        if not isinstance(other, SetState):
            return NotImplemented
        if self.sorted != other.sorted:
            return False
        return not (self.ordered and other.ordered) or self.members == other.members

    __hash__ = None

    def __repr__(self):
        return "set(%s%d members: %r)" % ("ordered, " if self.ordered else "",
                                         len(self.members), self.members[:6])


def set_state(raw, k):
    members = bulks(raw.command("SMEMBERS", k))
    scan = raw.command("SSCAN", k, 0, "COUNT", 1)
    one_shot = scan.startswith(b"*2\r\n$1\r\n0\r\n*%d\r\n" % len(members))
    return SetState(members, one_shot)


def diff(na, a, nb, b):
    lines = []
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            lines.append("db %d key %r: %s %r / %s %r" % (key[0], key[1], na, a.get(key),
                                                       nb, b.get(key)))
    return lines


def new_stats():
    return {"rounds": 0, "steps": 0, "commands": 0, "checks": 0, "faults": {},
            "overlaps_seen": 0, "wait_checks": 0, "journal_checks": 0,
            "kill9_nothing_lost": 0, "kill9_lost": 0, "kill9_lost_all_online": 0}


def run(seed, seconds, round_seconds=30.0, workdir=None, log=print, rounds=None):
    """Rounds of about round_seconds each until `seconds` are spent (or
    `rounds` of them), seeds seed*1000+i. Raises Finding; returns the
    stats. The work directories of passing rounds are removed."""
    stats = new_stats()
    base = workdir or tempfile.mkdtemp(prefix="cellgate-replfuzz-")
    end = time.monotonic() + seconds
    t0 = time.monotonic()
    i = 0
    while time.monotonic() < end and (rounds is None or i < rounds) and i < 100000:
        rs = seed * 1000 + i
        left = end - time.monotonic()
        rnd = Round(rs, min(round_seconds, max(1.0, left)),
                    os.path.join(base, "round-%d" % rs), stats, log)
        rnd.run()
        stats["rounds"] += 1
        log("round %d (seed %d, %s, backlog %s): %d steps, %d commands so far, %.0f s"
            % (i, rs, rnd.topology, rnd.backlog, len(rnd.steps), stats["commands"],
               time.monotonic() - t0))
        shutil.rmtree(rnd.dir, ignore_errors=True)
        i += 1
    stats["seconds"] = round(time.monotonic() - t0, 1)
    if workdir is None:
        shutil.rmtree(base, ignore_errors=True)
    return stats


def replay(round_seed, seconds=60.0, log=print):
    stats = new_stats()
    base = tempfile.mkdtemp(prefix="cellgate-replfuzz-replay-")
    Round(round_seed, seconds, os.path.join(base, "round"), stats, log).run()
    stats["rounds"] = 1
    shutil.rmtree(base, ignore_errors=True)
    return stats


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--round-seconds", type=float, default=30)
    ap.add_argument("--round-seed", type=int, default=None,
                    help="replay one round (its steps; not the daemons' timing)")
    a = ap.parse_args()
    if a.round_seed is not None:
        stats = replay(a.round_seed, a.round_seconds)
    else:
        seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 20)
        print("repl-fuzz: seed %d, %d s, binary %s (SANITIZE=%s)"
              % (seed, a.seconds, harness.BIN, harness.SANITIZE), flush=True)
        stats = run(seed, a.seconds, a.round_seconds,
                    log=lambda s: print(s, flush=True))
    print("repl-fuzz: no finding: %s" % stats)


if __name__ == "__main__":
    main()
