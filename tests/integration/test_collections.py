"""Lists, hashes and sorted sets around the keyspace, beyond the reply
bytes the differential suite compares (test_difftest.py): -WRONGTYPE
between every pair of types, limiter keys included; a 1,000,000-member
sorted set through BGREWRITEAOF, a restart and a full sync, with the
longest PING stall of the primary reported; maxmemory admission of a
collection that grows; COPY, RENAME, MOVE, SCAN TYPE, MEMORY USAGE,
WATCH and expiry on collections; a replica fed writes of every type."""
import hashlib
import threading
import time

import pytest

import harness
from test_journal import fingerprint, kill9, start
from test_replication import caught_up, follow, pair

WRONGTYPE = (b"-WRONGTYPE Operation against a key holding the wrong kind "
             b"of value\r\n")

# One key of every type, made by the command that makes it.
MAKERS = {
    "string": ("SET", "{k}s", "v"),
    "counter": ("INCR", "{k}n"),
    "throttle": ("CL.THROTTLE", "{k}t", 5, 10, 60),
    "list": ("RPUSH", "{k}l", "a", "b"),
    "hash": ("HSET", "{k}h", "f", "1"),
    "zset": ("ZADD", "{k}z", 1, "m"),
    "fixed": ("RL.FIXED", "{k}f", 5, 60),
    "sliding": ("RL.SLIDING", "{k}w", 5, 60),
    "log": ("RL.LOG", "{k}g", 5, 60),
    "tiers": ("RL.TIERS", "{k}r", 5, 1, 10, 10),
    "gcra": ("GCRA", "{k}c", 5, 10, 60),
}
STRINGS = {"string", "counter", "throttle"}

# A read and a write of each collection type, {} the key.
PROBES = {
    "list": [("LLEN", "{}"), ("LRANGE", "{}", 0, -1), ("LPUSH", "{}", "x"),
             ("RPOP", "{}"), ("LMOVE", "{}", "{k}other", "LEFT", "RIGHT")],
    "hash": [("HGET", "{}", "f"), ("HGETALL", "{}"), ("HSET", "{}", "f", 1),
             ("HINCRBY", "{}", "f", 1), ("HSCAN", "{}", 0)],
    "zset": [("ZCARD", "{}"), ("ZRANGE", "{}", 0, -1), ("ZADD", "{}", 1, "m"),
             ("ZINCRBY", "{}", 1, "m"), ("ZSCAN", "{}", 0),
             ("ZREMRANGEBYSCORE", "{}", "-inf", "+inf")],
    "string": [("GET", "{}"), ("INCR", "{}"), ("APPEND", "{}", "x")],
}


def make_every_type(c):
    keys = {}
    for name, cmd in MAKERS.items():
        reply = c.command(*cmd)
        assert not reply.startswith(b"-"), (cmd, reply)
        keys[name] = cmd[1]
    return keys


def probe_type(name):
    """The PROBES family a key made as `name` belongs to."""
    if name in STRINGS:
        return "string"
    return name if name in PROBES else None


def test_wrongtype_between_every_pair_of_types(start_daemon):
    d = start_daemon()
    c = d.raw()
    keys = make_every_type(c)
    for name, key in keys.items():
        own = probe_type(name)
        for family, probes in PROBES.items():
            if family == own:
                continue
            for probe in probes:
                cmd = [key if a == "{}" else a for a in probe]
                before = c.command("TYPE", key)
                assert c.command(*cmd) == WRONGTYPE, (name, cmd)
                assert c.command("TYPE", key) == before
    # The limiter commands refuse a collection as Redis refuses a string
    # command on one: WRONGTYPE, the collection untouched.
    for name in ("list", "hash", "zset"):
        key = keys[name]
        for cmd in (("CL.THROTTLE", key, 5, 10, 60), ("RL.FIXED", key, 5, 60),
                    ("RL.LOG", key, 5, 60), ("GCRA", key, 5, 10, 60),
                    ("INCREX", key, "BYINT", 1)):
            reply = c.command(*cmd)
            assert reply.startswith(b"-WRONGTYPE"), (cmd, reply)
        assert c.command("TYPE", key) == b"+%s\r\n" % name.encode()
    # SET replaces any of them, as Redis's SET does.
    for name in ("list", "hash", "zset"):
        assert c.command("SET", keys[name], "now a string") == b"+OK\r\n"
        assert c.command("TYPE", keys[name]) == b"+string\r\n"


def test_keyspace_commands_on_collections(start_daemon):
    d = start_daemon()
    c = d.raw()
    assert c.command("RPUSH", "l", "a", "b", "c") == b":3\r\n"
    assert c.command("HSET", "h", "f1", "v1", "f2", "v2") == b":2\r\n"
    assert c.command("ZADD", "z", 1, "a", "2.5", "b") == b":2\r\n"
    assert c.command("SET", "s", "x") == b"+OK\r\n"
    for key, kind in (("l", b"list"), ("h", b"hash"), ("z", b"zset")):
        assert c.command("TYPE", key) == b"+" + kind + b"\r\n"
        assert c.command("SCAN", 0, "TYPE", kind, "COUNT", 100) == \
            b"*2\r\n$1\r\n0\r\n*1\r\n$1\r\n%s\r\n" % key.encode()
        assert int(c.command("MEMORY", "USAGE", key)[1:-2]) > 0
        assert c.command("COPY", key, key + "2") == b":1\r\n"
        assert c.command("RENAME", key + "2", key + "3") == b"+OK\r\n"
    assert c.command("LRANGE", "l3", 0, -1) == \
        b"*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"
    assert c.command("HGETALL", "h3") == \
        b"*4\r\n$2\r\nf1\r\n$2\r\nv1\r\n$2\r\nf2\r\n$2\r\nv2\r\n"
    assert c.command("ZRANGE", "z3", 0, -1, "WITHSCORES") == \
        b"*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$3\r\n2.5\r\n"
    assert c.command("MOVE", "z3", 1) == b":1\r\n"
    assert c.command("SELECT", 1) == b"+OK\r\n"
    assert c.command("ZSCORE", "z3", "b") == b"$3\r\n2.5\r\n"
    assert c.command("SELECT", 0) == b"+OK\r\n"
    # Expiry: a collection expires as any key; the last element gone takes
    # the key (and its expiry) with it.
    assert c.command("PEXPIRE", "l", 100000) == b":1\r\n"
    assert 0 < int(c.command("PTTL", "l")[1:-2]) <= 100000
    assert c.command("LPOP", "l", 3) == b"*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"
    assert c.command("EXISTS", "l") == b":0\r\n"
    assert c.command("PTTL", "l") == b":-2\r\n"
    assert c.command("HDEL", "h", "f1", "f2") == b":2\r\n"
    assert c.command("EXISTS", "h") == b":0\r\n"
    assert c.command("ZREMRANGEBYRANK", "z", 0, -1) == b":2\r\n"
    assert c.command("EXISTS", "z") == b":0\r\n"


def test_watch_hears_every_collection_write(start_daemon):
    d = start_daemon()
    c, other = d.raw(), d.raw()
    writes = [("RPUSH", "k", "x"), ("LPOP", "k"), ("HSET", "k", "f", "v"),
              ("HDEL", "k", "f"), ("ZADD", "k", 1, "m"), ("ZINCRBY", "k", 1, "m"),
              ("ZREM", "k", "m")]
    for w in writes:
        assert c.command("WATCH", "k") == b"+OK\r\n"
        assert other.command(*w)[:1] in (b":", b"$", b"*", b"+"), w
        assert c.command("MULTI") == b"+OK\r\n"
        assert c.command("PING") == b"+QUEUED\r\n"
        assert c.command("EXEC") == b"*-1\r\n", w


@pytest.mark.allocator
def test_a_growing_collection_is_admitted_under_maxmemory(start_daemon):
    d = start_daemon("--maxmemory", "8mb")
    c = d.raw()
    oom = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"
    value = b"v" * 1000
    replies = {}
    n = 0
    for n in range(20000):
        reply = c.command("RPUSH", "l", value)
        if reply == oom:
            break
        assert reply == b":%d\r\n" % (n + 1)
    else:
        pytest.fail("8 MB held 20 MB of list")
    assert c.command("LLEN", "l") == b":%d\r\n" % n
    # Refused: nothing changed, every other type refused alike, reads and
    # deletions still work.
    for cmd in (("HSET", "h", "f", value), ("ZADD", "z", 1, value)):
        replies[cmd[0]] = c.command(*cmd)
    assert replies == {"HSET": oom, "ZADD": oom}
    assert c.command("EXISTS", "h", "z") == b":0\r\n"
    assert c.command("LINDEX", "l", -1) == b"$1000\r\n" + value + b"\r\n"
    assert c.command("LTRIM", "l", 0, 99) == b"+OK\r\n"
    assert c.command("HSET", "h", "f", value) == b":1\r\n"


def member(i):
    return "member:%07d" % i


def fill_zset(c, key, n, batch=1000):
    """n members (score i) in ZADDs of `batch` members, pipelined."""
    for start in range(0, n, batch * 20):
        payload = b""
        count = 0
        for b in range(start, min(n, start + batch * 20), batch):
            args = ["ZADD", key]
            for i in range(b, min(n, b + batch)):
                args += [i, member(i)]
            payload += harness.resp_command(*args)
            count += 1
        c.send(payload)
        for _ in range(count):
            reply = c.reply_bytes(timeout=60)
            assert reply.startswith(b":"), reply


def zset_digest(c, key, n):
    """ZCARD and md5 of every (member, score) in rank order, read in
    pieces."""
    h = hashlib.md5()
    assert c.command("ZCARD", key) == b":%d\r\n" % n
    step = 50000
    for start in range(0, n, step):
        h.update(c.command("ZRANGE", key, start, start + step - 1,
                           "WITHSCORES", timeout=60))
    return h.hexdigest()


class Pinger:
    """PINGs the server one at a time from a thread; the longest wait."""

    def __init__(self, d):
        self.conn = d.raw(timeout=120)
        self.longest = 0.0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.is_set():
            t = time.monotonic()
            assert self.conn.command("PING") == b"+PONG\r\n"
            self.longest = max(self.longest, time.monotonic() - t)
            time.sleep(0.001)

    def end(self):
        self.stop.set()
        self.thread.join(130)
        return self.longest


N_BIG = 1000000


@pytest.mark.allocator
def test_a_million_member_zset_survives_rewrite_restart_and_full_sync(
        start_daemon, tmp_path, record_property):
    work = str(tmp_path / "data")
    # No automatic rewrite: the test asks for its own.
    p = start(start_daemon, work, "--auto-aof-rewrite-percentage", "0")
    c = p.raw(timeout=120)
    ping = Pinger(p)
    fill_zset(c, "big", N_BIG)
    fill_stall = ping.end()
    want = zset_digest(c, "big", N_BIG)
    assert c.command("ZSCORE", "big", member(777777)) == b"$6\r\n777777\r\n"
    # RENAME and MOVE hand the set over: nothing copied is kept.
    mem = p.info("memory")
    for cmd in (("RENAME", "big", "big2"), ("MOVE", "big2", 3),
                ("SELECT", 3), ("RENAME", "big2", "big"), ("MOVE", "big", 0),
                ("SELECT", 0)):
        assert c.command(*cmd) in (b"+OK\r\n", b":1\r\n"), cmd
    after = p.info("memory")
    assert abs(after["used_memory"] - mem["used_memory"]) < 4 << 20

    ping = Pinger(p)
    assert c.command("BGREWRITEAOF") == \
        b"+Background append only file rewriting started\r\n"
    assert harness.wait_until(
        lambda: p.info("persistence")["aof_rewrite_in_progress"] == 0 and
        p.info("persistence")["aof_rewrite_scheduled"] == 0, 120)
    rewrite_stall = ping.end()
    assert p.info("persistence")["aof_last_bgrewrite_status"] == "ok"
    # Writes after the rewrite go to the new incr file, as effects.
    assert c.command("ZADD", "big", -1, "first") == b":1\r\n"
    assert c.command("ZREM", "big", member(0)) == b":1\r\n"
    want = zset_digest(c, "big", N_BIG)

    # A replica's full sync, while the primary keeps answering.
    r = start_daemon(fakeclock=True, name="replica")
    r.clock.set(p.clock.ns)
    ping = Pinger(p)
    rc = r.raw(timeout=120)
    assert rc.command("REPLICAOF", "127.0.0.1", p.port) == b"+OK\r\n"
    assert harness.wait_until(
        lambda: r.info("replication").get("master_link_status") == "up", 120)
    sync_stall = ping.end()
    assert c.command("ZADD", "big", "5.5", member(5)) == b":0\r\n"
    assert caught_up(p, r)
    want = zset_digest(c, "big", N_BIG)
    assert zset_digest(rc, "big", N_BIG) == want

    # kill -9 and a restart from the rewritten base plus its journal.
    kill9(p)
    t = start(start_daemon, work, "--auto-aof-rewrite-percentage", "0",
              clock_ns=p.clock.ns)
    ping_start = time.monotonic()
    tc = t.raw(timeout=120)
    assert zset_digest(tc, "big", N_BIG) == want
    load_s = time.monotonic() - ping_start
    report = ("longest PING stall on the primary: filling %.1f ms, "
              "BGREWRITEAOF %.1f ms, full sync %.1f ms"
              % (fill_stall * 1e3, rewrite_stall * 1e3, sync_stall * 1e3))
    print(report)
    record_property("ping_stalls", report)
    record_property("restart_read_s", "%.1f" % load_s)


def test_a_replica_fed_every_type_ends_equal(start_daemon):
    p, r = pair(start_daemon)
    follow(r, p)
    c = p.raw()
    for i in range(300):
        k = "k%d" % (i % 17)
        for cmd in (("RPUSH", "l" + k, i), ("LPUSH", "l" + k, -i),
                    ("LTRIM", "l" + k, 0, 20), ("HSET", "h" + k, "f%d" % (i % 5), i),
                    ("HINCRBY", "h" + k, "n", i), ("HDEL", "h" + k, "f%d" % (i % 7)),
                    ("ZADD", "z" + k, i % 13, "m%d" % (i % 11)),
                    ("ZREMRANGEBYSCORE", "z" + k, 0, i % 3),
                    ("ZINCRBY", "z" + k, "0.5", "m1"), ("LPOP", "l" + k),
                    ("LMOVE", "l" + k, "lk0", "LEFT", "RIGHT"),
                    ("ZPOPMIN", "z" + k), ("HSET", "h" + k, "x" * 70, i)):
            c.command(*cmd)
        if i % 50 == 0:
            c.command("SET", "l" + k, "replaced")
    assert caught_up(p, r)
    assert fingerprint(r) == fingerprint(p)


def test_cluster_routes_collection_commands_by_slot(start_daemon, tmp_path):
    port = harness.free_port()
    conf = tmp_path / "cluster.conf"
    conf.write_text("cluster-mode yes\ncluster-node %s 127.0.0.1:%d 0-16383\n"
                    % ("a" * 40, port))
    d = start_daemon(config_file=str(conf), port=port)
    c = d.raw()
    crossslot = b"-CROSSSLOT Keys in request don't hash to the same slot\r\n"
    assert c.command("RPUSH", "a", "x") == b":1\r\n"
    assert c.command("LMOVE", "a", "b", "LEFT", "RIGHT") == crossslot
    assert c.command("RPUSH", "{u}a", "x", "y") == b":2\r\n"
    assert c.command("LMOVE", "{u}a", "{u}b", "LEFT", "RIGHT") == b"$1\r\nx\r\n"
    assert c.command("RENAME", "{u}b", "c") == crossslot
    assert c.command("COMMAND", "GETKEYS", "LMOVE", "s", "d", "LEFT", "LEFT") \
        == b"*2\r\n$1\r\ns\r\n$1\r\nd\r\n"
    for cmd in (("ZADD", "z", 1, "m"), ("HSET", "h", "f", "v"),
                ("ZRANGE", "z", 0, -1), ("HGETALL", "h"), ("LLEN", "a")):
        assert not c.command(*cmd).startswith(b"-"), cmd
