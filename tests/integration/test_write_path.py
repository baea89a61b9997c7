"""The one write path, proved from the outside for every command that writes.

The writing commands are the server's own list: every entry of COMMAND
(subcommands included) flagged "write". Each must have sample invocations
in SAMPLES below (a write-flagged command without one fails the test,
naming it), and every sample, on a primary (journal on, fsync always) with
one replica, all on one fake clock:

  1. WATCH: a transaction watching the keys the sample touches, on the
     primary and on the replica, is aborted by it (EXEC answers a null
     array), and not without it; its effects are one journal record;
  2. replication: after WAIT 1, the replica's view of the keyspace (every
     key of every database: TYPE, PTTL and the type's own read-only view)
     is the primary's, byte for byte;
  3. the journal: kill -9 the primary, restart it on its files, and the
     view is what it was before the kill;
  4. the same command twice in MULTI/EXEC (or the sample's own pair, for
     a command that cannot run twice, RENAME): one journal record, on the
     replica, and through a kill -9 alike.

Then keys the wheel expires, and keys evicted under maxmemory volatile-ttl,
are gone from the replica and after a restart too.
"""
import os
import socket

import pytest

import harness
from harness import resp_command
from test_journal import incr_files, kill9, records
from test_named_limits import limits_dir

DATABASES = 16

# ---- the writing commands, and what each sample touches -----------------


class Sample:
    """One invocation that really changes keys: `cmd` (run in database
    `db`) after `setup` (commands run in database 0, SELECT allowed), and
    the (db, key) pairs it changes, which WATCH must see. `multi`: the
    commands of its MULTI/EXEC round, each answered without an error (cmd
    twice unless given)."""

    def __init__(self, cmd, touches, setup=(), db=0, multi=None):
        self.cmd = tuple(a if isinstance(a, bytes) else str(a) for a in cmd)
        self.touches = list(touches)
        self.setup = [tuple(str(a) for a in c) for c in setup]
        self.db = db
        self.multi = ([tuple(str(a) for a in c) for c in multi] if multi is not None
                      else [self.cmd, self.cmd])

    def __repr__(self):
        return " ".join(self.cmd)


def S(*cmd, touches=None, setup=(), db=0, multi=None):
    return Sample(cmd, touches if touches is not None else [(db, cmd[1])],
                  setup, db, multi)


# The fake clock's time (it stands still): EXPIREAT an hour later.
NOW_S = harness.FAKE_EPOCH_NS // 1000000000


SEEDS = [("CL.THROTTLE", "seed:gcra", 5, 1, 3600),
         ("RL.LOG", "seed:log", 5, 600, "META", "seed"),
         ("SELECT", 1), ("RL.FIXED", "seed:db1", 3, 600), ("SELECT", 0)]

# DUMP payloads of redis-server 7.0.15: the string "v", a list x y, a
# sorted set {a: 1.5}.
WP_STRING = b"\x00\x01v\x0a\x00\x91\x08\xce\xb2\x19\x38\x8a\xce"
WP_LIST = (b"\x12\x01\x02\r\r\x00\x00\x00\x02\x00\x81x\x02\x81y\x02\xff\n"
           b"\x00~\x97[V\x8d\x1a\xfao")
WP_ZSET = (b"\x11\x0f\x0f\x00\x00\x00\x02\x00\x81a\x02\x831.5\x04\xff\n\x00"
           b"\x08\x0cn\x19\x80\x8e}\x98")

# MIGRATE's target: the port of the redis-server the test starts.
SINK = "<sink-port>"

SAMPLES = {
    "cl.throttle": [
        S("CL.THROTTLE", "k", 5, 1, 60),
        S("CL.THROTTLE", "k", 5, 1, 60, 3, setup=[("CL.THROTTLE", "k", 5, 1, 60)]),
        S("CL.THROTTLE", "k", 0, 1, 10, "MS"),
    ],
    "gcra": [
        S("GCRA", "k", 5, 10, 60),
        S("GCRA", "k", 5, 10, 60, "TOKENS", 3, setup=[("GCRA", "k", 5, 10, 60)]),
    ],
    "increx": [
        S("INCREX", "k", "BYINT", 3, "EX", 100),
        S("INCREX", "k", "BYFLOAT", "2.5", "PX", 5000),
        S("INCREX", "k", "PERSIST", setup=[("INCREX", "k", "BYINT", 7, "EX", 100)]),
        S("INCREX", "k", "BYINT", 5, "UBOUND", 2, "SATURATE",
          setup=[("INCREX", "k", "BYINT", 1, "PX", 90000)]),
    ],
    "rl.fixed": [
        S("RL.FIXED", "k", 3, 60),
        S("RL.FIXED", "k", 3, 60, "COST", 2, "ALIGN"),
        S("RL.FIXED", "k", 3, 60, "COST", -1, setup=[("RL.FIXED", "k", 3, 60, "COST", 2)]),
    ],
    "rl.sliding": [
        S("RL.SLIDING", "k", 3, 60),
        S("RL.SLIDING", "k", 3, 60, "COST", 2, setup=[("RL.SLIDING", "k", 3, 60)]),
    ],
    "rl.log": [
        S("RL.LOG", "k", 5, 60, "META", "alice"),
        S("RL.LOG", "k", 5, 60, "META", "bob", "COST", 2,
          setup=[("RL.LOG", "k", 5, 120, "META", "alice")]),
        # A refund that empties the log: the key goes.
        S("RL.LOG", "k", 5, 60, "COST", -1, setup=[("RL.LOG", "k", 5, 60)]),
    ],
    "rl.tiers": [
        S("RL.TIERS", "k", 5, 1, 10, 10, "COST", 3),
        S("RL.TIERS", "k", 5, 1, 10, 10, setup=[("RL.TIERS", "k", 5, 1, 10, 10)]),
    ],
    "rl.all": [
        # Both parts allowed: both keys change; the second part on a key the
        # first has just taken from.
        S("RL.ALL", 2, 5, "CL.THROTTLE", "a", 5, 1, 60, 4, "RL.FIXED", "b", 3, 60,
          touches=[(0, "a"), (0, "b")]),
        S("RL.ALL", 2, 4, "RL.FIXED", "a", 5, 60, 6, "RL.FIXED", "a", 5, 60, "COST", 2,
          touches=[(0, "a")], setup=[("RL.FIXED", "a", 5, 120)]),
    ],
    "rl.acquire": [
        S("RL.ACQUIRE", "k", 3, 60, "HOLDER", "a"),
        S("RL.ACQUIRE", "k", 3, 60000, "HOLDER", "b", "MS",
          setup=[("RL.ACQUIRE", "k", 3, 60, "HOLDER", "a")]),
        # A retry: the same slot, its end moved on.
        S("RL.ACQUIRE", "k", 3, 90, "HOLDER", "a",
          setup=[("RL.ACQUIRE", "k", 3, 60, "HOLDER", "a")]),
    ],
    "rl.refresh": [
        S("RL.REFRESH", "k", "a", 90, setup=[("RL.ACQUIRE", "k", 3, 60, "HOLDER", "a")]),
    ],
    "rl.release": [
        S("RL.RELEASE", "k", "a", setup=[("RL.ACQUIRE", "k", 3, 60, "HOLDER", "a"),
                                         ("RL.ACQUIRE", "k", 3, 90, "HOLDER", "b")]),
        # The last lease released: the key goes.
        S("RL.RELEASE", "k", "a", setup=[("RL.ACQUIRE", "k", 3, 60, "HOLDER", "a")]),
    ],
    "rl.check": [
        S("RL.CHECK", "api", "remote_address=10.0.0.1",
          touches=[(0, "api_remote_address_10.0.0.1")]),
        S("RL.CHECK", "api", "plan=gcra", touches=[(0, "api_plan_gcra")]),
        S("RL.CHECK", "api", "plan=sliding", "HITS", 2,
          touches=[(0, "api_plan_sliding")]),
        S("RL.CHECK", "api", "path=/login", "user=bob", db=3,
          touches=[(3, "api_path_/login_user_bob")]),
    ],
    "del": [
        S("DEL", "k", setup=[("RL.FIXED", "k", 3, 60)]),
        S("DEL", "a", "b", "nosuch", touches=[(0, "a"), (0, "b")],
          setup=[("RL.LOG", "a", 3, 60, "META", "x"), ("CL.THROTTLE", "b", 5, 1, 60)]),
        S("DEL", "k", db=2, touches=[(2, "k")],
          setup=[("SELECT", 2), ("RL.TIERS", "k", 5, 1, 10, 10), ("SELECT", 0)]),
    ],
    "move": [
        S("MOVE", "k", 7, touches=[(0, "k"), (7, "k")],
          setup=[("RL.LOG", "k", 5, 60, "META", "m")]),
        S("MOVE", "k", 0, db=4, touches=[(4, "k"), (0, "k")],
          setup=[("SELECT", 4), ("CL.THROTTLE", "k", 5, 1, 60), ("SELECT", 0)]),
    ],
    "swapdb": [
        S("SWAPDB", 5, 6, touches=[(5, "a"), (6, "b")],
          setup=[("SELECT", 5), ("RL.FIXED", "a", 3, 60),
                 ("SELECT", 6), ("RL.LOG", "b", 3, 60, "META", "b"), ("SELECT", 0)]),
        S("SWAPDB", 0, 9, touches=[(0, "seed:gcra"), (9, "z")],
          setup=[("SELECT", 9), ("INCREX", "z", "BYINT", 4, "EX", 50), ("SELECT", 0)]),
    ],
    "flushdb": [
        S("FLUSHDB", touches=[(0, "seed:gcra"), (0, "seed:log")]),
        S("FLUSHDB", db=1, touches=[(1, "seed:db1")]),
    ],
    "flushall": [
        S("FLUSHALL", touches=[(0, "seed:gcra"), (1, "seed:db1")]),
    ],
    # ---- strings ----
    "set": [
        S("SET", "k", "v"),
        S("SET", "k", "v", "EX", 100),
        S("SET", "k", "v2", "GET", setup=[("SET", "k", "v1")]),
        S("SET", "k", "v2", "KEEPTTL", setup=[("SET", "k", "v1", "PX", 5000)]),
        S("SET", "k", "v", "NX", "PXAT", (NOW_S + 3600) * 1000),
        # A limiter key becomes a string.
        S("SET", "seed:gcra", "v"),
    ],
    "setnx": [S("SETNX", "k", "v")],
    "setex": [S("SETEX", "k", 100, "v"),
              S("SETEX", "k", 100, "v2", setup=[("SET", "k", "v1")])],
    "psetex": [S("PSETEX", "k", 100000, "v")],
    "getset": [S("GETSET", "k", "v2", setup=[("SET", "k", "v1", "EX", 100)])],
    "getdel": [S("GETDEL", "k", setup=[("SET", "k", "v")])],
    "getex": [
        S("GETEX", "k", "EX", 100, setup=[("SET", "k", "v")]),
        S("GETEX", "k", "PERSIST", setup=[("SET", "k", "v", "EX", 100)]),
        S("GETEX", "k", "EXAT", NOW_S + 3600, setup=[("SET", "k", "v")]),
    ],
    "mset": [S("MSET", "a", 1, "b", 2, touches=[(0, "a"), (0, "b")],
               setup=[("SET", "b", "old", "EX", 100)])],
    "msetnx": [S("MSETNX", "a", 1, "b", 2, touches=[(0, "a"), (0, "b")])],
    "incr": [S("INCR", "k"),
             S("INCR", "k", setup=[("SET", "k", 41, "EX", 100)])],
    "incrby": [S("INCRBY", "k", 5), S("INCRBY", "k", -7, setup=[("SET", "k", 3)])],
    "incrbyfloat": [S("INCRBYFLOAT", "k", "2.5"),
                    S("INCRBYFLOAT", "k", "0.1", setup=[("SET", "k", "1.2", "PX", 90000)])],
    "decr": [S("DECR", "k"), S("DECR", "k", setup=[("SET", "k", 10)])],
    "decrby": [S("DECRBY", "k", 5), S("DECRBY", "k", 5, setup=[("SET", "k", 10, "EX", 100)])],
    "append": [S("APPEND", "k", "xyz"), S("APPEND", "k", "b", setup=[("SET", "k", "a")])],
    "setrange": [S("SETRANGE", "k", 2, "xy", setup=[("SET", "k", "abcdef")]),
                 S("SETRANGE", "k", 3, "z")],
    # ---- expiry ----
    "expire": [S("EXPIRE", "k", 100, setup=[("SET", "k", "v")]),
               S("EXPIRE", "k", 0, setup=[("SET", "k", "v")]),       # deletes it
               S("EXPIRE", "k", 50, "LT", setup=[("SET", "k", "v", "EX", 100)])],
    "pexpire": [S("PEXPIRE", "k", 100000, setup=[("SET", "k", "v")])],
    "expireat": [S("EXPIREAT", "k", NOW_S + 3600, setup=[("SET", "k", "v")]),
                 S("EXPIREAT", "k", NOW_S - 1, setup=[("SET", "k", "v")])],   # deletes it
    "pexpireat": [S("PEXPIREAT", "k", (NOW_S + 3600) * 1000, setup=[("SET", "k", "v")])],
    "persist": [S("PERSIST", "k", setup=[("SET", "k", "v", "EX", 100)])],
    # ---- the keyspace ----
    "unlink": [S("UNLINK", "a", "b", "nosuch", touches=[(0, "a"), (0, "b")],
                 setup=[("SET", "a", "v"), ("RL.FIXED", "b", 3, 60)])],
    # RENAME and RENAMENX cannot run twice: the source is gone.
    "rename": [
        S("RENAME", "a", "b", touches=[(0, "a"), (0, "b")], setup=[("SET", "a", "v", "EX", 100)],
          multi=[("RENAME", "a", "b"), ("RENAME", "b", "c")]),
        S("RENAME", "seed:log", "b", touches=[(0, "seed:log"), (0, "b")],
          setup=[("SET", "b", "old")],
          multi=[("RENAME", "seed:log", "b"), ("RENAME", "b", "seed:log")]),
    ],
    "renamenx": [
        S("RENAMENX", "a", "b", touches=[(0, "a"), (0, "b")], setup=[("SET", "a", "v")],
          multi=[("RENAMENX", "a", "b"), ("RENAMENX", "b", "c")]),
    ],
    # ---- lists ----
    "lpush": [S("LPUSH", "l", "a", "b"), S("LPUSH", "l", "c", setup=[("RPUSH", "l", "x")])],
    "rpush": [S("RPUSH", "l", "a", "b", setup=[("RPUSH", "l", "x"), ("EXPIRE", "l", 100)])],
    "lpushx": [S("LPUSHX", "l", "a", setup=[("RPUSH", "l", "x")])],
    "rpushx": [S("RPUSHX", "l", "a", "b", setup=[("RPUSH", "l", "x")])],
    "lpop": [S("LPOP", "l", setup=[("RPUSH", "l", "x", "y")]),
             S("LPOP", "l", 5, setup=[("RPUSH", "l", "x", "y")],
               multi=[("LPOP", "l", 5), ("RPUSH", "l", "z")])],
    "rpop": [S("RPOP", "l", 2, setup=[("RPUSH", "l", *range(300))])],
    "ltrim": [S("LTRIM", "l", 1, -2, setup=[("RPUSH", "l", *range(10))])],
    "lrem": [S("LREM", "l", -1, "x", setup=[("RPUSH", "l", "x", "y", "x", "x")])],
    "lset": [S("LSET", "l", -1, "new", setup=[("RPUSH", "l", "x", "y")])],
    "linsert": [S("LINSERT", "l", "BEFORE", "y", "w", setup=[("RPUSH", "l", "x", "y")])],
    "lmove": [
        S("LMOVE", "l", "m", "LEFT", "RIGHT", touches=[(0, "l"), (0, "m")],
          setup=[("RPUSH", "l", "x", "y", "z")]),
        S("LMOVE", "l", "l", "RIGHT", "LEFT", setup=[("RPUSH", "l", "x", "y", "z")]),
    ],
    # ---- hashes ----
    "hset": [S("HSET", "h", "f", "v", "g", "w"),
             S("HSET", "h", "f", "x" * 100, setup=[("HSET", "h", "a", 1, "b", 2)])],
    "hsetnx": [S("HSETNX", "h", "g", "v", setup=[("HSET", "h", "f", "v")],
                 multi=[("HSETNX", "h", "g", "v"), ("HSETNX", "h", "i", "v")])],
    "hmset": [S("HMSET", "h", "f", "v", "g", "w", setup=[("HSET", "h", "g", 1)])],
    "hdel": [S("HDEL", "h", "f", setup=[("HSET", "h", "f", 1, "g", 2)],
               multi=[("HDEL", "h", "f"), ("HDEL", "h", "g")])],
    "hincrby": [S("HINCRBY", "h", "n", 5, setup=[("HSET", "h", "f", "v")])],
    "hincrbyfloat": [S("HINCRBYFLOAT", "h", "n", "1.5", setup=[("HSET", "h", "n", "2")])],
    # ---- sorted sets ----
    "zadd": [S("ZADD", "z", 1, "a", "2.5", "b"),
             S("ZADD", "z", "GT", "CH", 7, "m1", setup=[("ZADD", "z", *[
                 x for i in range(200) for x in (i, "m%d" % i)])]),
             S("ZADD", "z", "INCR", "2.5", "a", setup=[("ZADD", "z", 1, "a")],
               multi=[("ZADD", "z", "INCR", "2.5", "a"), ("ZADD", "z", 0, "b")])],
    "zincrby": [S("ZINCRBY", "z", "0.25", "a", setup=[("ZADD", "z", 1, "a", 2, "b")])],
    "zrem": [S("ZREM", "z", "a", setup=[("ZADD", "z", 1, "a", 2, "b")],
               multi=[("ZREM", "z", "a"), ("ZREM", "z", "b")])],
    "zremrangebyscore": [S("ZREMRANGEBYSCORE", "z", "-inf", "(2",
                           setup=[("ZADD", "z", 1, "a", 2, "b", 3, "c")])],
    "zremrangebyrank": [S("ZREMRANGEBYRANK", "z", 0, 1,
                          setup=[("ZADD", "z", 1, "a", 2, "b", 3, "c")])],
    "zremrangebylex": [S("ZREMRANGEBYLEX", "z", "[a", "(c",
                         setup=[("ZADD", "z", 0, "a", 0, "b", 0, "c")])],
    "zpopmin": [S("ZPOPMIN", "z", setup=[("ZADD", "z", 1, "a", 2, "b", 3, "c")])],
    "zpopmax": [S("ZPOPMAX", "z", 2, setup=[("ZADD", "z", 1, "a", 2, "b", 3, "c")])],
    # ---- list moves, pops of several keys and the blocking pops (their
    # key non-empty, so they answer at once) ----
    "rpoplpush": [S("RPOPLPUSH", "l", "m", touches=[(0, "l"), (0, "m")],
                    setup=[("RPUSH", "l", "x", "y", "z")])],
    "lmpop": [S("LMPOP", 2, "n", "l", "LEFT", "COUNT", 2, touches=[(0, "l")],
                setup=[("RPUSH", "l", "x", "y", "z")])],
    "blpop": [S("BLPOP", "l", 0, setup=[("RPUSH", "l", "x", "y")])],
    "brpop": [S("BRPOP", "l", "m", 0, setup=[("RPUSH", "l", "x", "y")])],
    "brpoplpush": [S("BRPOPLPUSH", "l", "m", 0, touches=[(0, "l"), (0, "m")],
                     setup=[("RPUSH", "l", "x", "y")])],
    "blmove": [S("BLMOVE", "l", "m", "LEFT", "RIGHT", "0.5",
                 touches=[(0, "l"), (0, "m")], setup=[("RPUSH", "l", "x", "y")])],
    "blmpop": [S("BLMPOP", 0, 1, "l", "RIGHT", touches=[(0, "l")],
                 setup=[("RPUSH", "l", "x", "y")])],
    "zmpop": [S("ZMPOP", 1, "z", "MIN", touches=[(0, "z")],
                setup=[("ZADD", "z", 1, "a", 2, "b", 3, "c")])],
    "bzpopmin": [S("BZPOPMIN", "z", 0, setup=[("ZADD", "z", 1, "a", 2, "b")])],
    "bzpopmax": [S("BZPOPMAX", "z", 0, setup=[("ZADD", "z", 1, "a", 2, "b")])],
    "bzmpop": [S("BZMPOP", 0, 1, "z", "MAX", "COUNT", 2, touches=[(0, "z")],
                 setup=[("ZADD", "z", 1, "a", 2, "b", 3, "c")])],
    # ---- the sorted-set algebra's STORE forms and ZRANGESTORE ----
    "zunionstore": [S("ZUNIONSTORE", "d", 2, "a", "b", touches=[(0, "d")], setup=[
        ("ZADD", "a", 1, "x"), ("SADD", "b", "y"), ("SET", "d", "v", "EX", 100)])],
    "zinterstore": [S("ZINTERSTORE", "d", 2, "a", "b", "WEIGHTS", 1, 0, touches=[(0, "d")],
                      setup=[("ZADD", "a", 1, "x", 2, "y"), ("ZADD", "b", 5, "y")])],
    "zdiffstore": [S("ZDIFFSTORE", "d", 2, "a", "b", touches=[(0, "d")],
                     setup=[("ZADD", "a", 1, "x", 2, "y"), ("ZADD", "b", 5, "y")])],
    "zrangestore": [S("ZRANGESTORE", "d", "z", 0, 1, touches=[(0, "d")],
                      setup=[("ZADD", "z", 1, "a", 2, "b", 3, "c")])],
    # ---- sets ----
    "sadd": [S("SADD", "s", "a", 1, 3),
             S("SADD", "s", *range(600), setup=[("SADD", "s", "x", 5)])],
    "srem": [S("SREM", "s", "a", setup=[("SADD", "s", "a", "b")],
               multi=[("SREM", "s", "a"), ("SREM", "s", "b")])],
    "spop": [S("SPOP", "s", setup=[("SADD", "s", "a")]),
             S("SPOP", "s", 2, setup=[("SADD", "s", *range(10))]),
             S("SPOP", "s", 595, setup=[("SADD", "s", *range(600))])],
    "smove": [S("SMOVE", "s", "t", "a", touches=[(0, "s"), (0, "t")],
                setup=[("SADD", "s", "a", "b")])],
    "sinterstore": [S("SINTERSTORE", "d", "s", "t", setup=[
        ("SADD", "s", 1, 2, 3), ("SADD", "t", 2, 3, 4), ("SET", "d", "x", "EX", 100)])],
    "sunionstore": [S("SUNIONSTORE", "d", "s", "t",
                      setup=[("SADD", "s", "a"), ("SADD", "t", "b", 7)])],
    "sdiffstore": [S("SDIFFSTORE", "d", "s", "s", setup=[("SADD", "s", "a"),
                                                         ("SADD", "d", "z")])],
    "copy": [
        S("COPY", "a", "b", touches=[(0, "b")], setup=[("SET", "a", "v", "EX", 100)]),
        S("COPY", "l", "b", touches=[(0, "b")], setup=[("RPUSH", "l", "x", "y")]),
        S("COPY", "a", "b", "DB", 3, touches=[(3, "b")], setup=[("SET", "a", "v")]),
        S("COPY", "seed:gcra", "b", "REPLACE", touches=[(0, "b")], setup=[("SET", "b", "x")]),
    ],
    "restore": [
        S("RESTORE", "r", 0, WP_STRING, "REPLACE"),
        S("RESTORE", "r", 100000, WP_LIST, "REPLACE", setup=[("SET", "r", "x")]),
        S("RESTORE", "r", 0, WP_ZSET, "IDLETIME", 5, "REPLACE"),
    ],
    "restore-asking": [S("RESTORE-ASKING", "r", 0, WP_LIST, "FREQ", 3, "REPLACE")],
    # To a redis-server the test starts (SINK: its port): the keys moved
    # are deleted here, as one group.
    "migrate": [
        S("MIGRATE", "127.0.0.1", SINK, "m", 0, 5000, "REPLACE",
          setup=[("SET", "m", "v")], touches=[(0, "m")]),
        S("MIGRATE", "127.0.0.1", SINK, "", 3, 5000, "REPLACE", "KEYS", "m", "n",
          setup=[("RPUSH", "m", "a"), ("SET", "n", "1")], touches=[(0, "m"), (0, "n")]),
    ],
}

# Flagged write, yet no key can change: FUNCTION's subcommands change the
# libraries (their record is the whole set: test_functions.py). Each is run
# and must leave the keys as they were, and the same libraries on the
# primary, on the replica and after a restart.
WP_LIB = ("#!lua name=wp\nredis.register_function('wp1', function() "
          "return 1 end)")
# FUNCTION DUMP of library mylib, from redis-server 7.0.15.
WP_DUMP = (b"\xf5\x40\x46#!lua name=mylib\nredis.register_function('f', "
           b"function() return 1 end)\x0a\x00\xc5\x31\xde\xfc\x4f\xf4\x45\x99")
WRITES_NO_KEY = {
    "function|load": [("FUNCTION", "LOAD", "REPLACE", WP_LIB)],
    "function|delete": [("FUNCTION", "LOAD", "REPLACE", WP_LIB),
                        ("FUNCTION", "DELETE", "wp")],
    "function|restore": [("FUNCTION", "RESTORE", WP_DUMP, "REPLACE")],
    "function|flush": [("FUNCTION", "FLUSH")],
}


def libraries(d):
    listed, _ = parse(d.raw().command("FUNCTION", "LIST", "WITHCODE"))
    return sorted(repr(x) for x in listed)


# ---- RESP ------------------------------------------------------------------


def parse(data, i=0):
    """One RESP2/3 reply from data at i: (value, next i). Simple strings
    and errors as bytes with their first byte, aggregates as lists."""
    j = data.index(b"\r\n", i)
    t, line = data[i:i + 1], data[i + 1:j]
    i = j + 2
    if t in (b"$", b"=", b"!"):
        n = int(line)
        if n < 0:
            return None, i
        return data[i:i + n], i + n + 2
    if t in (b"*", b"~", b">", b"%", b"|"):
        n = int(line)
        if n < 0:
            return None, i
        if t in (b"%", b"|"):
            n *= 2
        out = []
        for _ in range(n):
            v, i = parse(data, i)
            out.append(v)
        return out, i
    return t + line, i


def pipeline(conn, cmds):
    """Send every command at once; their raw replies, in order."""
    out = []
    for i in range(0, len(cmds), 1000):
        chunk = cmds[i:i + 1000]
        conn.send(b"".join(resp_command(*c) for c in chunk))
        out += [conn.reply_bytes() for _ in chunk]
    return out


def writing_commands(conn):
    """Every command and subcommand the server flags "write", by name."""
    table, _ = parse(conn.command("COMMAND"))
    out = set()

    def walk(entry):
        name, flags = entry[0].decode().lower(), entry[2]
        if b"+write" in flags:
            out.add(name)
        if len(entry) > 9 and entry[9]:
            for sub in entry[9]:
                walk(sub)

    for entry in table:
        walk(entry)
    return out


# ---- what a daemon holds ------------------------------------------------

# Each type's own read-only view of a key, beside TYPE and PTTL.
TYPE_VIEW = {
    b"+gcra\r\n": lambda k: [("GET", k), ("CL.THROTTLE", k, 1000000, 1, 60, 1, "PEEK")],
    b"+fixed\r\n": lambda k: [("RL.FIXED", k, 1000000, 60, "PEEK")],
    b"+sliding\r\n": lambda k: [("RL.SLIDING", k, 1000000, 60, "PEEK")],
    b"+tiers\r\n": lambda k: [("RL.TIERS", k, 1000000, 1, 1000000, 10, "PEEK")],
    b"+log\r\n": lambda k: [("RL.ENTRIES", k)],
    b"+lease\r\n": lambda k: [("RL.LEASES", k, "MS")],
    b"+string\r\n": lambda k: [("GET", k)],
    b"+list\r\n": lambda k: [("LRANGE", k, 0, -1)],
    b"+hash\r\n": lambda k: [("HGETALL", k)],   # small ones: Redis's order
    b"+zset\r\n": lambda k: [("ZRANGE", k, 0, -1, "WITHSCORES")],
    b"+set\r\n": lambda k: [("SMEMBERS", k)],
}


def hash_in_order(reply):
    """HGETALL's reply as it must be equal everywhere: as it is for a hash
    Redis keeps as a listpack (up to 512 fields of up to 64 bytes: its
    order is part of the state), its pairs sorted for a larger one (a hash
    table's order is its own, as on Redis's replicas)."""
    flat, _ = parse(reply)
    if len(flat) <= 2 * 512 and all(len(x) <= 64 for x in flat):
        return reply
    return sorted(zip(flat[0::2], flat[1::2]))


def set_in_order(reply):
    """SMEMBERS's reply as it must be equal everywhere: as it is for a set
    small enough to be compact (its order is part of the state), its
    members sorted for a larger one (a hash table's order is its own)."""
    flat, _ = parse(reply)
    if len(flat) <= 128 and all(len(x) <= 64 for x in flat):
        return reply
    return sorted(flat)


def view(d):
    """Every key of every database: {(db, key): raw replies of TYPE, PTTL
    and its type's view}. Exact bytes: the clock stands still."""
    c = d.raw()
    out = {}
    for db in range(DATABASES):
        assert c.command("SELECT", db) == b"+OK\r\n"
        keys, _ = parse(c.command("KEYS", "*"))
        keys = sorted(keys)
        if not keys:
            continue
        heads = pipeline(c, [cmd for k in keys for cmd in (("TYPE", k), ("PTTL", k))])
        more = [TYPE_VIEW.get(heads[2 * i], lambda k: [])(k) for i, k in enumerate(keys)]
        tails = pipeline(c, [cmd for cmds in more for cmd in cmds])
        for i, k in enumerate(keys):
            n = len(more[i])
            out[(db, k)] = tuple(heads[2 * i:2 * i + 2]) + tuple(
                hash_in_order(t) if heads[2 * i] == b"+hash\r\n"
                else set_in_order(t) if heads[2 * i] == b"+set\r\n" else t
                for t in tails[:n])
            tails = tails[n:]
    c.close()
    return out


# ---- a primary with a replica, on one clock ------------------------------


class Pair:
    """A journaled primary and a replica, sharing one fake clock; the
    primary can be killed and restarted on its files and port."""

    def __init__(self, start_daemon, tmp_path, *primary_args):
        self.start_daemon = start_daemon
        self.clock = harness.FakeClock(str(tmp_path / "clock"))
        self.env = {"FAKECLOCK_FILE": self.clock.path}
        self.work = str(tmp_path / "primary")
        os.makedirs(self.work)
        self.args = ("--dir", self.work, "--appendonly", "yes",
                     "--appendfsync", "always",
                     "--limits-file", limits_dir(tmp_path)) + primary_args
        self.restarts = 0
        self.p = start_daemon(*self.args, fakeclock=True, env=self.env,
                              name="primary")
        self.p.data = self.work
        self.r = start_daemon("--replicaof", "127.0.0.1 %d" % self.p.port,
                              fakeclock=True, env=self.env, name="replica")
        self.wait_link()

    def wait_link(self):
        assert harness.wait_until(
            lambda: self.r.info("replication").get("master_link_status") == "up",
            20, interval=0.01), "the replica never linked up"

    def replicate(self, conn=None):
        """WAIT 1 on conn (the writer's connection): the replica has it all."""
        conn = conn or self.p.raw()
        assert conn.command("WAIT", 1, 5000) == b":1\r\n"

    def restart_primary(self):
        """kill -9, then a primary on the same files (on a new port, which
        the replica is told at once rather than on its next retry)."""
        kill9(self.p)
        self.restarts += 1
        self.p = self.start_daemon(*self.args, fakeclock=True, env=self.env,
                                   name="primary-%d" % self.restarts)
        self.p.data = self.work
        assert self.r.raw().command("REPLICAOF", "127.0.0.1", self.p.port) == b"+OK\r\n"
        return self.p


def run_setup(conn, cmds):
    for c in cmds:
        got = conn.command(*c)
        assert not got.startswith(b"-"), (c, got)


def exec_reply_ok(got, n):
    value, _ = parse(got)
    assert isinstance(value, list) and len(value) == n, got
    errors = [v for v in value if isinstance(v, bytes) and v.startswith(b"-")]
    assert errors == [], got


def watch_all(conn, sample):
    for db, key in sample.touches:
        assert conn.command("SELECT", db) == b"+OK\r\n"
        assert conn.command("WATCH", key) == b"+OK\r\n"
    assert conn.command("MULTI") == b"+OK\r\n"
    assert conn.command("PING") == b"+QUEUED\r\n"


def watch_sees(pair, sample):
    """WATCH on the keys the sample touches, MULTI, PING, on the primary
    and on the replica (whose writes come from the stream); the sample
    runs on another connection: each EXEC must answer a null array. A
    control round without the sample first must EXEC normally. The
    sample's effects are one journal record (all or nothing).
    Returns the connection that wrote."""
    p = pair.p
    a, b, ra = p.raw(), p.raw(), pair.r.raw()
    for conn in (a, ra):
        watch_all(conn, sample)
        assert conn.command("EXEC") == b"*1\r\n+PONG\r\n", "WATCH fired with no write"
        watch_all(conn, sample)
    assert b.command("SELECT", sample.db) == b"+OK\r\n"
    path = incr_files(p)[-1]
    n0 = len(records(path))
    got = b.command(*sample.cmd)
    assert not got.startswith(b"-"), got
    assert len(records(path)) == n0 + 1, "%s: %d journal records, not one" \
        % (sample, len(records(path)) - n0)
    assert a.command("EXEC") == b"*-1\r\n", \
        "%r did not abort a transaction watching %r" % (sample, sample.touches)
    pair.replicate(b)
    assert ra.command("EXEC") == b"*-1\r\n", \
        "%r did not abort a transaction on the replica watching %r" \
        % (sample, sample.touches)
    a.close()
    ra.close()
    return b


def prepare(pair, sample):
    c = pair.p.raw()
    assert c.command("FLUSHALL") == b"+OK\r\n"
    run_setup(c, SEEDS)
    run_setup(c, sample.setup)
    c.close()


def survives(pair, sample, what):
    """The replica holds the primary's view; a kill -9 keeps it."""
    before = view(pair.p)
    assert view(pair.r) == before, "%s (%s): the replica differs" % (sample, what)
    pair.restart_primary()
    assert view(pair.p) == before, "%s (%s): differs after kill -9" % (sample, what)
    return before


def test_every_writing_command_has_samples(start_daemon):
    d = start_daemon()
    found = writing_commands(d.raw())
    assert {"cl.throttle", "del", "flushall"} <= found, found   # the list is real
    missing = sorted(found - set(SAMPLES) - set(WRITES_NO_KEY))
    assert missing == [], ("commands flagged write with no sample in "
                           "test_write_path.SAMPLES: %s" % ", ".join(missing))
    stale = sorted((set(SAMPLES) | set(WRITES_NO_KEY)) - found)
    assert stale == [], "samples for commands not flagged write: %s" % stale


def all_samples():
    return [(name, i) for name in sorted(SAMPLES) for i in range(len(SAMPLES[name]))]


def with_sink(sample, port):
    """sample with MIGRATE's target port in place of SINK."""
    def put(cmd):
        return tuple(str(port) if a == SINK else a for a in cmd)
    out = Sample(put(sample.cmd), sample.touches, (), sample.db, [])
    out.setup, out.multi = sample.setup, [put(c) for c in sample.multi]
    return out


def test_every_write_is_watched_replicated_and_journaled(start_daemon, tmp_path):
    pair = Pair(start_daemon, tmp_path)
    sink = harness.RedisServer(str(tmp_path / "sink")).start()
    found = writing_commands(pair.p.raw())
    checked = set()
    for name, i in all_samples():
        if name not in found:
            continue
        sample = with_sink(SAMPLES[name][i], sink.port)
        # One command, watched.
        prepare(pair, sample)
        start_view = view(pair.p)
        watch_sees(pair, sample)
        after = survives(pair, sample, "single")
        assert after != start_view, "%s changed nothing" % sample
        pair.wait_link()
        # The same command twice in one transaction: one journal record.
        prepare(pair, sample)
        path = incr_files(pair.p)[-1]
        n0 = len(records(path))
        c = pair.p.raw()
        assert c.command("SELECT", sample.db) == b"+OK\r\n"
        n = len(sample.multi)
        got = pipeline(c, [("MULTI",)] + sample.multi + [("EXEC",)])
        assert got[:n + 1] == [b"+OK\r\n"] + [b"+QUEUED\r\n"] * n, got
        exec_reply_ok(got[n + 1], n)
        recs = records(path)
        assert len(recs) == n0 + 1, "%s in MULTI: %d journal records" \
            % (sample.multi, len(recs) - n0)
        pair.replicate(c)
        survives(pair, sample, "MULTI/EXEC")
        pair.wait_link()
        checked.add(name)
    for name, cmds in sorted(WRITES_NO_KEY.items()):
        if name not in found:
            continue
        prepare(pair, Sample(("PING",), []))
        before = view(pair.p)
        c = pair.p.raw()
        run_setup(c, cmds)
        pair.replicate(c)
        assert view(pair.p) == before == view(pair.r)
        want = libraries(pair.p)
        assert libraries(pair.r) == want, name
        pair.restart_primary()
        assert view(pair.p) == before
        assert libraries(pair.p) == want, name
        pair.wait_link()
        checked.add(name)
    sink.stop()
    assert checked == found


def test_keys_the_wheel_expires_are_gone_on_the_replica_and_after_a_restart(
        start_daemon, tmp_path):
    pair = Pair(start_daemon, tmp_path)
    c = pair.p.raw()
    run_setup(c, [("CL.THROTTLE", "gcra", 0, 1, 10),
                  ("GCRA", "redis-gcra", 0, 1, 10),
                  ("RL.FIXED", "fixed", 3, 10),
                  ("RL.SLIDING", "sliding", 3, 10),
                  ("RL.LOG", "log", 3, 10, "META", "m"),
                  ("RL.TIERS", "tiers", 3, 10),
                  ("INCREX", "counter", "BYINT", 1, "EX", 10),
                  ("SELECT", 3), ("RL.FIXED", "db3", 3, 10), ("SELECT", 0),
                  ("RL.FIXED", "stays", 3, 3600)])
    pair.replicate(c)
    assert view(pair.r) == view(pair.p)
    expired0 = pair.p.info("stats")["expired_keys"]
    pair.clock.advance(seconds=30)
    # No key is read meanwhile (a read would expire it lazily): the
    # wheel does it, on both sides.
    for d in (pair.p, pair.r):
        assert harness.wait_until(lambda: d.info("keyspace").get("db0", {}).get("keys") == 1
                                  and "db3" not in d.info("keyspace"), 10), d.name
    assert pair.p.info("stats")["expired_keys"] - expired0 == 8
    pair.replicate(c)
    after = view(pair.p)
    assert sorted(after) == [(0, b"stays")]
    assert view(pair.r) == after
    pair.restart_primary()
    assert view(pair.p) == after
    pair.wait_link()
    assert view(pair.r) == after


def add_keys(conn, prefix, n, period):
    """n new CL.THROTTLE keys, pipelined; the replies."""
    out = []
    for start in range(0, n, 500):
        out += pipeline(conn, [("CL.THROTTLE", "%s:%d" % (prefix, i), 5, 1, period)
                               for i in range(start, min(n, start + 500))])
    return out


@pytest.mark.allocator
def test_evicted_keys_are_gone_on_the_replica_and_after_a_restart(
        start_daemon, tmp_path):
    pair = Pair(start_daemon, tmp_path, "--maxmemory-policy", "volatile-ttl")
    c = pair.p.raw()
    add_keys(c, "long", 2000, 86400)
    add_keys(c, "short", 2000, 30)
    pair.replicate(c)
    mem = pair.p.info("memory")
    # maxmemory counts neither the replica's output buffer nor the
    # journal's (mem_not_counted_for_evict), as Redis: a replica that lags
    # on a loaded machine changes nothing. The 4,000 new keys (about 200
    # KiB) force evictions.
    counted = mem["used_memory"] - mem["mem_not_counted_for_evict"]
    assert c.command("CONFIG", "SET", "maxmemory", counted + 128 * 1024) == b"+OK\r\n"
    replies = add_keys(c, "new", 4000, 3600)
    assert not [x for x in replies if x.startswith(b"-")], \
        [x for x in replies if x.startswith(b"-")][:3]
    # Eviction stops here: what the views compare is settled.
    assert c.command("CONFIG", "SET", "maxmemory", 0) == b"+OK\r\n"
    evicted = pair.p.info("stats")["evicted_keys"]
    assert evicted > 0
    pair.replicate(c)
    before = view(pair.p)
    short_left = sum(1 for (db, k) in before if k.startswith(b"short:"))
    assert short_left < 2000                      # evicted: the closest to fresh
    assert len(before) == 8000 - evicted
    assert view(pair.r) == before
    pair.restart_primary()
    assert view(pair.p) == before
    pair.wait_link()
    assert view(pair.r) == before


def lagging_replica(port):
    """A replica that asks for the stream and never reads it: its small
    receive window fills, and the rest waits in the primary's output
    buffer for it."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(harness.IO_TIMEOUT)
    s.connect(("127.0.0.1", port))
    s.sendall(resp_command("REPLCONF", "listening-port", 1))
    got = b""
    while len(got) < 5:         # Redis takes no PSYNC with a reply pending
        more = s.recv(5 - len(got))
        assert more, got
        got += more
    assert got == b"+OK\r\n"
    s.sendall(resp_command("PSYNC", "?", -1))
    return s


def online(info):
    return info.get("connected_slaves") == 1 and \
        info.get("slave0", {}).get("state") == "online"


MIB = 1024 * 1024


def evict_beside_a_lagging_replica(conn, info):
    """With a replica far behind, maxmemory 2 MiB over the memory in use,
    the keys past it are evicted and every write is admitted: the
    replica's output buffer is not counted (Redis's
    freeMemoryGetNotCountedMemory()). The INFO memory of the end."""
    used = info("memory")["used_memory"]
    assert conn.command("CONFIG", "SET", "maxmemory", used + 2 * MIB) == b"+OK\r\n"
    big = "x" * (64 * 1024)
    # About 26 MiB of stream, far more than the socket buffers hold; one
    # write a round trip, as cellgate's stream carries a key written many
    # times in one pass once.
    replies = [conn.command("SET", "big", big) for _ in range(400)]
    assert set(replies) == {b"+OK\r\n"}, [x for x in replies if x != b"+OK\r\n"][:1]
    mem = info("memory")
    assert mem["mem_clients_slaves"] > 8 * MIB, mem
    assert mem["mem_not_counted_for_evict"] > 8 * MIB, mem
    assert mem["used_memory"] > used + 8 * MIB            # it is in used_memory
    # About 3 MiB of new volatile keys: past maxmemory by themselves.
    value = "v" * 1000
    replies = pipeline(conn, [("SET", "new:%d" % i, value, "EX", 3600)
                              for i in range(3000)])
    assert set(replies) == {b"+OK\r\n"}, [x for x in replies if x != b"+OK\r\n"][:1]
    assert info("stats")["evicted_keys"] > 0
    mem = info("memory")
    counted = mem["used_memory"] - mem["mem_not_counted_for_evict"]
    assert counted <= mem["maxmemory"] + 64 * 1024, mem
    return mem


@pytest.mark.allocator
def test_a_lagging_replicas_buffer_is_not_counted_for_maxmemory_as_redis(
        start_daemon, tmp_path):
    """A replica that stops reading holds the stream in the primary's
    output buffer; maxmemory does not count it, as Redis: writes are
    admitted and evict keys, where counting it answered -OOM."""
    d = start_daemon("--maxmemory-policy", "volatile-ttl")
    ref = harness.RedisServer(str(tmp_path / "redis"),
                              ["--maxmemory-policy", "volatile-ttl",
                               "--repl-diskless-sync", "no"]).start()
    replicas = []
    try:
        for port, info in ((d.port, d.info), (ref.port, ref.client().info)):
            replicas.append(lagging_replica(port))
            assert harness.wait_until(lambda: online(info("replication")), 20,
                                      interval=0.01), info("replication")
        mine = evict_beside_a_lagging_replica(d.raw(), d.info)
        theirs = evict_beside_a_lagging_replica(harness.RawConn(port=ref.port),
                                                ref.client().info)
        # No journal file: the replica's buffer, as Redis's mem_clients_slaves
        # less its backlog, which Redis counts in used_memory; beside it
        # the buffer of a pass's records for the stream, kept up to 1 MiB.
        assert mine["mem_aof_buffer"] == theirs["mem_aof_buffer"] == 0
        assert mine["mem_clients_slaves"] <= mine["mem_not_counted_for_evict"] \
            <= mine["mem_clients_slaves"] + MIB + 64 * 1024, mine
    finally:
        for s in replicas:
            s.close()
        ref.stop()


def test_the_journals_buffer_is_not_counted_for_maxmemory(start_daemon, tmp_path):
    """INFO memory's mem_aof_buffer, with the journal on: its buffer,
    part of mem_not_counted_for_evict as Redis's AOF buffer (beside the
    buffer of the pass's records on their way to it)."""
    d = start_daemon("--dir", str(tmp_path), "--appendonly", "yes")
    c = d.raw()
    assert c.command("SET", "k", "v") == b"+OK\r\n"
    mem = d.info("memory")
    assert mem["mem_aof_buffer"] > 0
    assert mem["mem_clients_slaves"] == 0
    assert mem["mem_not_counted_for_evict"] >= mem["mem_aof_buffer"]
    assert c.command("CONFIG", "SET", "appendonly", "no") == b"+OK\r\n"
    assert d.info("memory")["mem_aof_buffer"] == 0


@pytest.mark.parametrize("cmd,setup,keys", [
    (("MOVE", "k", 7), [("RL.LOG", "k", 5, 60, "META", "m")], [(0, "k"), (7, "k")]),
    (("DEL", "a", "b"), [("RL.FIXED", "a", 3, 60), ("CL.THROTTLE", "b", 5, 1, 60)],
     [(0, "a"), (0, "b")]),
], ids=["move", "del-two-keys"])
def test_a_command_torn_anywhere_in_the_journal_is_lost_whole(
        start_daemon, tmp_path, cmd, setup, keys):
    """A command's effects are one record: cut anywhere inside it, a
    restart has the keys as before the command, never half of it (a MOVE
    was a SET in the new database and a DEL in the old: cut between them,
    the key came back in both)."""
    work = str(tmp_path / "data")
    os.makedirs(work)
    d = start_daemon("--dir", work, "--appendonly", "yes", "--appendfsync", "always",
                     "--aof-load-truncated", "yes", fakeclock=True)
    d.data = work
    c = d.raw()
    run_setup(c, setup)
    before = view(d)
    assert not c.command(*cmd).startswith(b"-")
    kill9(d)
    path = incr_files(d)[-1]
    off, length = records(path)[-1]
    whole = open(path, "rb").read()
    cuts = sorted({off + 1, off + 12, off + length // 2, off + length - 1} |
                  {o for o, _ in records(path) if o > off})
    for cut in cuts:
        trial = str(tmp_path / ("cut%d" % cut))
        os.makedirs(os.path.join(trial, "appendonlydir"))
        for name in os.listdir(os.path.join(work, "appendonlydir")):
            data = open(os.path.join(work, "appendonlydir", name), "rb").read()
            if name == os.path.basename(path):
                data = whole[:cut]
            open(os.path.join(trial, "appendonlydir", name), "wb").write(data)
        t = start_daemon("--dir", trial, "--appendonly", "yes",
                         "--aof-load-truncated", "yes", fakeclock=d.clock.ns)
        assert view(t) == before, "cut at %d of the record at %d" % (cut, off)
        assert t.stop() == []
    t = start_daemon("--dir", work, "--appendonly", "yes", fakeclock=d.clock.ns)
    gone = view(t)
    assert [k for k in keys if (k[0], k[1].encode()) in gone] != \
        [k for k in keys if (k[0], k[1].encode()) in before]
