"""Redis's hashes: replies compared byte for byte with redis-server 7.0
(RESP2 and RESP3, errors and their precedence included), the field order
of a listpack-encoded hash through HSET/HDEL/HSETNX/HINCRBY sequences and
the points where Redis stops keeping one, WATCH, maxmemory, and the
hashes given back whole (order included) by the journal after kill -9 and
by a snapshot."""
import os
import random

import pytest

import harness
from test_journal import fingerprint, kill9, start


@pytest.fixture
def both(server, redis_server):
    """Two raw connections: cellgate's and redis-server's (flushed)."""
    rc = harness.RawConn(port=redis_server.port)
    rc.command("FLUSHALL")
    yield server.raw(), rc
    rc.close()


def same(both, *args):
    cg, rd = both
    want = rd.command(*args)
    got = cg.command(*args)
    assert got == want, args
    return got


HASH_COMMANDS = ("hset", "hsetnx", "hmset", "hget", "hmget", "hdel", "hlen",
                 "hexists", "hincrby", "hincrbyfloat", "hgetall", "hkeys",
                 "hvals", "hstrlen", "hscan")

F65 = "f" * 65
V65 = "v" * 65

SCRIPT = [
    # HSET, HMSET and their arity.
    ("HSET", "h", "a", "1", "b", "2", "c", "3"),
    ("HSET", "h", "b", "20", "d", "4", "b", "200"),
    ("HSET", "h", "a"),
    ("HSET", "h", "a", "1", "b"),
    ("HSET", "h"),
    ("HMSET", "h", "e", "5"),
    ("HMSET", "h", "e", "5", "f"),
    ("HMSET", "h"),
    ("HGETALL", "h"), ("HKEYS", "h"), ("HVALS", "h"), ("HLEN", "h"),
    # HSETNX.
    ("HSETNX", "h", "a", "x"), ("HSETNX", "h", "z", "26"),
    ("HSETNX", "new", "f", "v"), ("HSETNX", "h", "a"),
    # Reads of fields there and not, of keys there and not.
    ("HGET", "h", "a"), ("HGET", "h", "nope"), ("HGET", "nokey", "a"),
    ("HMGET", "h", "a", "nope", "b"), ("HMGET", "nokey", "a", "b"),
    ("HMGET", "h"),
    ("HEXISTS", "h", "a"), ("HEXISTS", "h", "nope"), ("HEXISTS", "nokey", "a"),
    ("HSTRLEN", "h", "b"), ("HSTRLEN", "h", "nope"), ("HSTRLEN", "nokey", "a"),
    ("HLEN", "nokey"), ("HGETALL", "nokey"), ("HKEYS", "nokey"),
    ("HVALS", "nokey"),
    # HINCRBY and its errors, in Redis's order.
    ("HINCRBY", "h", "a", "10"), ("HINCRBY", "h", "cnt", "-5"),
    ("HINCRBY", "h", "a", "x"), ("HINCRBY", "h", "a", "1.5"),
    ("HINCRBY", "h", "a", "99999999999999999999"),
    ("HSET", "h", "txt", "hello", "big", "9223372036854775800",
     "neg", "-9223372036854775800", "sp", " 1", "plus", "+1", "zero", "0",
     "lead", "01"),
    ("HINCRBY", "h", "txt", "1"), ("HINCRBY", "h", "sp", "1"),
    ("HINCRBY", "h", "plus", "1"), ("HINCRBY", "h", "lead", "1"),
    ("HINCRBY", "h", "big", "7"), ("HINCRBY", "h", "big", "8"),
    ("HINCRBY", "h", "neg", "-8"), ("HINCRBY", "h", "neg", "-9"),
    ("HINCRBY", "h", "big", "-9223372036854775808"),
    ("HINCRBY", "h", "txt", "x"),
    ("HINCRBY", "nokey2", "f", "3"),
    ("HINCRBY", "h", "a"),
    # HINCRBYFLOAT: parse, NaN/Infinity, the stored value's checks.
    ("HINCRBYFLOAT", "h", "fl", "1.5"), ("HINCRBYFLOAT", "h", "fl", "0.1"),
    ("HINCRBYFLOAT", "h", "fl", "-1.6"), ("HINCRBYFLOAT", "h", "fl", "5.0e3"),
    ("HINCRBYFLOAT", "h", "fl", "1e-20"),
    ("HINCRBYFLOAT", "h", "a", "2.5"), ("HINCRBYFLOAT", "h", "zero", "-0"),
    ("HINCRBYFLOAT", "h", "fl", "abc"), ("HINCRBYFLOAT", "h", "fl", ""),
    ("HINCRBYFLOAT", "h", "fl", "inf"), ("HINCRBYFLOAT", "h", "fl", "-inf"),
    ("HINCRBYFLOAT", "h", "fl", "nan"), ("HINCRBYFLOAT", "h", "txt", "1"),
    ("HINCRBYFLOAT", "h", "txt", "abc"), ("HINCRBYFLOAT", "h", "sp", "1"),
    ("HINCRBYFLOAT", "h", "tiny", "0x10"), ("HINCRBYFLOAT", "h", "tiny", " 1"),
    # (Results past 64 bytes make a hashtable: on a key of their own.)
    ("HINCRBYFLOAT", "hf", "huge", "1e308"),
    ("HINCRBYFLOAT", "hf", "huge", "1e308"),
    ("HINCRBYFLOAT", "hf", "huge", "1.7e308"),
    ("HINCRBYFLOAT", "hf", "ld", "1e4000"),
    ("HINCRBYFLOAT", "hf", "ld", "3.0000000000000000001"),
    ("HINCRBYFLOAT", "hf", "small", "3.0000000000000000001"),
    ("HMGET", "hf", "huge", "ld", "small"),
    ("HINCRBYFLOAT", "h", "f"),
    ("HGETALL", "h"),
    # HDEL.
    ("HDEL", "h", "a", "a", "nope", "b"), ("HDEL", "nokey", "a"),
    ("HDEL", "h"),
    ("HDEL", "new", "f"), ("EXISTS", "new"),
    ("HGETALL", "h"),
    # Wrong types, both ways.
    ("SET", "s", "str"),
    ("HSET", "s", "a", "1"), ("HMSET", "s", "a", "1"), ("HSETNX", "s", "a", "1"),
    ("HGET", "s", "a"), ("HMGET", "s", "a"), ("HDEL", "s", "a"),
    ("HLEN", "s"), ("HEXISTS", "s", "a"), ("HSTRLEN", "s", "a"),
    ("HINCRBY", "s", "a", "1"), ("HINCRBYFLOAT", "s", "a", "1"),
    ("HINCRBY", "s", "a", "x"), ("HINCRBYFLOAT", "s", "a", "x"),
    ("HINCRBYFLOAT", "s", "a", "inf"),
    ("HGETALL", "s"), ("HKEYS", "s"), ("HVALS", "s"), ("HSCAN", "s", "0"),
    ("HSCAN", "s", "x"), ("HSET", "s", "a"),
    ("GET", "h"), ("INCR", "h"), ("TYPE", "h"),
    # HSCAN: cursor first, then the key, then the options.
    ("HSCAN", "h", "0"), ("HSCAN", "h", "12345"), ("HSCAN", "h", "-1"),
    ("HSCAN", "h", "0", "COUNT", "1"), ("HSCAN", "h", "0", "count", "1000"),
    ("HSCAN", "h", "0", "MATCH", "*i*"), ("HSCAN", "h", "0", "MATCH", "*"),
    ("HSCAN", "h", "0", "MATCH", "[bt]*", "COUNT", "5"),
    ("HSCAN", "h", "x"), ("HSCAN", "h", ""), ("HSCAN", "h", " 1"),
    ("HSCAN", "h", "18446744073709551616"), ("HSCAN", "h", "1.5"),
    ("HSCAN", "h", "0", "COUNT", "0"), ("HSCAN", "h", "0", "COUNT", "-1"),
    ("HSCAN", "h", "0", "COUNT", "x"), ("HSCAN", "h", "0", "MATCH"),
    ("HSCAN", "h", "0", "TYPE", "hash"), ("HSCAN", "h", "0", "NOVALUES"),
    ("HSCAN", "h", "0", "COUNT", "x", "MATCH"),
    ("HSCAN", "nokey", "0", "COUNT", "x"), ("HSCAN", "nokey", "x"),
    ("HSCAN", "h"),
    # COPY, RENAME and MOVE keep the hash, order included.
    ("COPY", "h", "hc"), ("HGETALL", "hc"), ("HSET", "hc", "new", "1"),
    ("HDEL", "hc", "c"), ("HGETALL", "hc"), ("HGETALL", "h"),
    ("RENAME", "hc", "hr"), ("HGETALL", "hr"), ("MOVE", "hr", "1"),
    ("SELECT", "1"), ("HGETALL", "hr"), ("HSET", "hr", "c", "back"),
    ("HGETALL", "hr"), ("TYPE", "hr"), ("SELECT", "0"), ("EXISTS", "hr"),
    ("SET", "h2s", "x"), ("COPY", "h", "h2s", "REPLACE"), ("HLEN", "h2s"),
    ("SET", "h2s", "x"), ("GET", "h2s"),
    # Empty fields and values, binary bytes.
    ("HSET", "bin", "", "", "\x00\r\n", "\xff"),
    ("HGETALL", "bin"), ("HGET", "bin", ""), ("HSTRLEN", "bin", "\x00\r\n"),
    # Long fields and values (a hashtable hash from the start).
    ("HSET", "long", F65, "1", "x", V65),
    ("HGET", "long", F65), ("HSTRLEN", "long", "x"), ("HLEN", "long"),
    ("HINCRBY", "long", F65, "1"),
    ("HDEL", "long", F65, "x"), ("EXISTS", "long"),
]


@pytest.mark.parametrize("proto", [2, 3])
def test_replies_match_redis(both, proto):
    if proto == 3:
        for c in both:
            assert c.command("HELLO", "3")[:1] == b"%"
    for cmd in SCRIPT:
        same(both, *cmd)


def test_command_info_matches_redis(both):
    for name in HASH_COMMANDS:
        same(both, "COMMAND", "INFO", name)
        same(both, "COMMAND", "GETKEYS", name, "k", "f", "v")


@pytest.mark.parametrize("proto", ["2", "3"])
def test_command_docs_match_redis(both, proto):
    """Summary, version, group and arguments as Redis documents them (but
    what no row of cellgate's table keeps: history, deprecation)."""
    from test_differential import docs_kept, resp_tree
    for c in both:
        c.command("HELLO", proto)
    for name in HASH_COMMANDS:
        got, want = [resp_tree(c.command("COMMAND", "DOCS", name))
                     for c in both]
        assert got[0] == want[0], name
        assert docs_kept(got[1]) == docs_kept(want[1]), name


# ---- the listpack's order ------------------------------------------------

def random_ops(rng, n, keys=("h1", "h2", "h3"), fields=40, long_every=0):
    """A random sequence of hash writes that keeps (unless long_every) to
    listpack-sized fields and values."""
    ops = []
    for _ in range(n):
        k = rng.choice(keys)
        f = "f%d" % rng.randrange(fields)
        p = rng.random()
        if long_every and rng.randrange(long_every) == 0:
            ops.append(("HSET", k, f, "L" * 65))
        elif p < 0.35:
            pairs = []
            for _ in range(rng.randrange(1, 4)):
                pairs += ["f%d" % rng.randrange(fields),
                          "v%d" % rng.randrange(1000)]
            ops.append(("HSET", k) + tuple(pairs))
        elif p < 0.5:
            ops.append(("HDEL", k, f, "f%d" % rng.randrange(fields)))
        elif p < 0.6:
            ops.append(("HSETNX", k, f, "nx%d" % rng.randrange(100)))
        elif p < 0.75:
            ops.append(("HINCRBY", k, "n%d" % rng.randrange(8),
                        rng.randrange(-50, 50)))
        elif p < 0.85:
            ops.append(("HINCRBYFLOAT", k, "x%d" % rng.randrange(4),
                        rng.choice(["0.5", "-1.25", "3", "1e3", "0.1"])))
        else:
            ops.append(("HMSET", k, f, "m%d" % rng.randrange(100)))
    return ops


def read_all(c, key):
    return (c.command("HGETALL", key), c.command("HKEYS", key),
            c.command("HVALS", key), c.command("HSCAN", key, "0"),
            c.command("HSCAN", key, "0", "MATCH", "f1*"))


def test_listpack_order_matches_redis_through_random_writes(both):
    rng = random.Random(2801)
    for i, op in enumerate(random_ops(rng, 3000)):
        same(both, *op)
        if i % 100 == 0:
            for k in ("h1", "h2", "h3"):
                assert read_all(both[0], k) == read_all(both[1], k), (i, k)
    for k in ("h1", "h2", "h3"):
        assert read_all(both[0], k) == read_all(both[1], k)


def scan_cursor(c, key):
    reply = c.command("HSCAN", key, "0", "COUNT", "1")
    return reply.split(b"\r\n")[2]


def test_conversion_at_513_fields_and_65_bytes_as_redis(both):
    """While Redis keeps a listpack HSCAN answers it whole (cursor 0); a
    hashtable of many fields takes several steps. (Redis 7.0.15's
    hash-max-listpack-entries is 512, not zsets' 128.) Both convert at the
    same writes, and never back."""
    for c in both:
        for i in range(512):
            c.command("HSET", "n", "f%d" % i, "v")
        assert scan_cursor(c, "n") == b"0"
        assert c.command("HSET", "n", "f0", "w") == b":0\r\n"
        assert scan_cursor(c, "n") == b"0"
        assert c.command("HSET", "n", "f512", "v") == b":1\r\n"
        assert scan_cursor(c, "n") != b"0"
        for i in range(500):
            c.command("HDEL", "n", "f%d" % i)
        assert scan_cursor(c, "n") != b"0"          # never back
        # A 64-byte field and value keep the listpack; 65 bytes do not.
        for i in range(100):
            c.command("HSET", "m", "f%d" % i, "v")
        c.command("HSET", "m", "F" * 64, "V" * 64)
        assert scan_cursor(c, "m") == b"0"
        c.command("HSET", "v65", "a", "1")
        for i in range(100):
            c.command("HSET", "v65", "f%d" % i, "v")
        c.command("HSET", "v65", "x", V65)
        assert scan_cursor(c, "v65") != b"0"
        for i in range(100):
            c.command("HSET", "f65", "f%d" % i, "v")
        c.command("HINCRBY", "f65", F65, 1)
        assert scan_cursor(c, "f65") != b"0"
        # One long string anywhere in an HSET converts before any is set.
        for i in range(100):
            c.command("HSET", "any", "f%d" % i, "v")
        c.command("HSET", "any", "f1", "short", "f2", V65)
        assert scan_cursor(c, "any") != b"0"
        # HINCRBYFLOAT's long result converts too.
        for i in range(100):
            c.command("HSET", "fl", "f%d" % i, "v")
        c.command("HINCRBYFLOAT", "fl", "x", "1e70")
        assert scan_cursor(c, "fl") != b"0"
    for k in ("n", "m", "v65", "f65", "any", "fl"):
        assert sorted_pairs(both[0], k) == sorted_pairs(both[1], k)
    assert read_all(both[0], "m") == read_all(both[1], "m")


def sorted_pairs(c, key):
    parts = c.command("HGETALL", key).split(b"\r\n")[2:-1:2]
    return sorted(zip(parts[0::2], parts[1::2]))


def test_large_hash_scan_returns_every_field(both):
    cg, rd = both
    for c in both:
        for i in range(0, 1000, 50):
            args = []
            for j in range(i, i + 50):
                args += ["field:%d" % j, "value:%d" % j]
            c.command("HSET", "big", *args)
    seen = {}
    cursor = b"0"
    steps = 0
    while True:
        reply = cg.command("HSCAN", "big", cursor, "COUNT", "30")
        parts = reply.split(b"\r\n")
        cursor = parts[2]
        items = parts[5:-1:2]
        for f, v in zip(items[0::2], items[1::2]):
            seen[f] = v
        steps += 1
        if cursor == b"0":
            break
    assert steps > 5
    assert seen == dict(sorted_pairs(rd, "big"))
    # MATCH filters what a step visited.
    reply = cg.command("HSCAN", "big", "0", "MATCH", "nothing*", "COUNT", "5")
    assert reply.endswith(b"*0\r\n")


# ---- WATCH and maxmemory ------------------------------------------------

@pytest.mark.parametrize("write,aborts", [
    (("HSET", "w", "a", "2"), True), (("HSET", "w", "new", "2"), True),
    (("HMSET", "w", "a", "1"), True), (("HSETNX", "w", "a", "2"), False),
    (("HSETNX", "w", "b", "2"), True), (("HDEL", "w", "nope"), False),
    (("HDEL", "w", "a"), True), (("HINCRBY", "w", "n", 1), True),
    (("HINCRBYFLOAT", "w", "n", 1), True), (("HINCRBY", "w", "a", "x"), False),
    (("HGETALL", "w"), False), (("DEL", "w"), True),
])
def test_watch_as_redis(server, redis_server, write, aborts):
    for d in (server, redis_server):
        c = harness.RawConn(port=d.port)
        other = harness.RawConn(port=d.port)
        c.command("FLUSHALL")
        c.command("HSET", "w", "a", "1")
        assert c.command("WATCH", "w") == b"+OK\r\n"
        other.command(*write)
        c.command("MULTI")
        c.command("PING")
        assert (c.command("EXEC") == b"*-1\r\n") == aborts, (d, write)
        c.close()
        other.close()


@pytest.mark.allocator
def test_a_write_that_does_not_fit_maxmemory_changes_nothing(start_daemon):
    d = start_daemon("--maxmemory", "8mb")
    c = d.raw()
    oom = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"
    assert c.command("HSET", "k", "a", "1") == b":1\r\n"
    big = b"v" * (2 << 20)
    n = 0
    while True:
        got = c.command("HSET", "k", "f%d" % n, big)
        if got == oom:
            break
        assert got == b":1\r\n"
        n += 1
        assert n < 10
    assert c.command("HLEN", "k") == b":%d\r\n" % (n + 1)
    assert c.command("HSET", "new", "f", big, "g", big, "h", big,
                     "i", big) == oom
    assert c.command("EXISTS", "new") == b":0\r\n"
    # Deleting still works, and makes room.
    assert c.command("HDEL", "k", "f0") == b":1\r\n"


# ---- persistence: the journal and the snapshot --------------------------

def build(c, rng, keys):
    """Hashes of every kind: listpack ones through random writes, one
    converted by a long value, one by its 513th field, one emptied."""
    for op in random_ops(rng, 1500, keys=keys):
        assert c.command(*op)[:1] in (b":", b"$", b"+", b"-")
    c.command("HSET", "conv_long", "a", "1", "b", V65)
    for i in range(600):
        c.command("HSET", "conv_many", "f%d" % i, i)
    c.command("HSET", "gone", "a", "1", "b", "2")
    c.command("HDEL", "gone", "a", "b")
    c.command("HSET", "ttl", "a", "1")
    c.command("PEXPIRE", "ttl", 500000)


def exact(c, keys):
    return {k: read_all(c, k) for k in keys}


def test_journal_replay_after_kill_9_gives_the_acknowledged_hashes(
        start_daemon, redis_server, tmp_path):
    keys = ("h1", "h2", "h3", "h4")
    work = str(tmp_path / "data")
    d = start(start_daemon, work, "--appendfsync", "always")
    c = d.raw()
    build(c, random.Random(7), keys)
    # Redis, given the same writes, keeps the same listpack order.
    rd = harness.RawConn(port=redis_server.port)
    rd.command("FLUSHALL")
    build(rd, random.Random(7), keys)
    assert exact(c, keys) == exact(rd, keys)
    before = fingerprint(d)
    want = exact(c, keys)
    kill9(d)
    t = start(start_daemon, work, clock_ns=d.clock.ns)
    tc = t.raw()
    assert fingerprint(t) == before
    assert exact(tc, keys) == want
    assert tc.command("EXISTS", "gone") == b":0\r\n"
    # More writes after the restart, then a snapshot base, then more in
    # the journal: the order survives both.
    rng = random.Random(8)
    ops = random_ops(rng, 800, keys=keys)
    for op in ops[:400]:
        same((tc, rd), *op)
    assert tc.command("BGREWRITEAOF").startswith(b"+")
    assert harness.wait_until(
        lambda: t.info("persistence")["aof_rewrite_in_progress"] == 0, 30)
    for op in ops[400:]:
        same((tc, rd), *op)
    want = exact(tc, keys)
    assert want == exact(rd, keys)
    before = fingerprint(t)
    assert t.stop() == []
    u = start(start_daemon, work, clock_ns=d.clock.ns)
    uc = u.raw()
    assert exact(uc, keys) == want
    assert fingerprint(u) == before
    # Still a listpack where Redis keeps one: writes go on in its order.
    for op in random_ops(random.Random(9), 300, keys=keys):
        same((uc, rd), *op)
    assert exact(uc, keys) == exact(rd, keys)
    rd.close()


def test_snapshot_keeps_the_order(start_daemon, tmp_path):
    work = str(tmp_path / "snap")
    os.makedirs(work)
    d = start_daemon("--dir", work, "--appendonly", "no", "--save", "",
                     fakeclock=True)
    c = d.raw()
    keys = ("h1", "h2", "h3")
    build(c, random.Random(11), keys)
    want = exact(c, keys)
    before = fingerprint(d)
    assert c.command("SAVE") == b"+OK\r\n"
    assert d.stop() == []
    t = start_daemon("--dir", work, "--appendonly", "no", "--save", "",
                     fakeclock=True)
    t.clock.set(d.clock.ns)
    assert exact(t.raw(), keys) == want
    assert fingerprint(t) == before


def test_a_replica_gets_the_hashes_by_full_sync_and_stream(start_daemon):
    """A full sync carries whole hashes; the stream carries each write as
    its element effect, replayed into the same order."""
    from test_replication import caught_up, follow, pair
    keys = ("h1", "h2", "h3", "h4")
    p, r = pair(start_daemon)
    pc = p.raw()
    build(pc, random.Random(21), keys)
    follow(r, p)
    assert caught_up(p, r)
    rc = r.raw()
    assert exact(rc, keys) == exact(pc, keys)
    # Listpack ones (compared in order) and hashtable ones (compared as
    # sets by the fingerprint: their order is their table's, which a full
    # sync rebuilds).
    rng = random.Random(22)
    for i, op in enumerate(random_ops(rng, 1500, keys=keys)):
        pc.command(*op)
        if i % 3 == 0:
            pc.command(*random_ops(rng, 1, keys=("conv_many", "big"),
                                   long_every=50)[0])
    pc.command("HDEL", "conv_long", "a", "b")
    assert caught_up(p, r)
    assert exact(rc, keys) == exact(pc, keys)
    assert fingerprint(r) == fingerprint(p)
