"""Redis's sets: replies compared byte for byte with redis-server 7.0
(RESP2 and RESP3, errors and their precedence included) wherever Redis's
answer is determined (an intset's order, counts, errors, single members),
the intset's conversion at its 513th member, the *STORE forms replacing or
deleting their destination, SPOP and SRANDMEMBER by shape, count and
membership, WATCH, maxmemory, scripts, and the sets given back by the
journal after kill -9, by a snapshot and by a replica, SPOP's removals
included."""
import os
import random

import pytest

import harness
import redis_cases
from test_cluster_nodes import cluster, keys_on_each_node  # noqa: F401
from test_journal import fingerprint, kill9, set_members, start


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


SET_COMMANDS = ("sadd", "srem", "sismember", "smismember", "scard",
                "smembers", "srandmember", "spop", "smove", "sscan",
                "sinter", "sintercard", "sinterstore", "sunion",
                "sunionstore", "sdiff", "sdiffstore")

M65 = "m" * 65

# Every multi-member reply here is of an all-integer set (an intset in
# Redis, in value order) or of one member: the others' order is Redis's
# hash table's.
SCRIPT = [
    # SADD, SCARD, SMEMBERS of an intset: value order, duplicates once.
    ("SADD", "s", "5", "3", "-1", "3", "100", "0"), ("SCARD", "s"),
    ("SMEMBERS", "s"), ("SADD", "s", "3"), ("SADD", "s"), ("SADD", "s", "7"),
    ("SMEMBERS", "s"), ("SCARD", "nokey"), ("SMEMBERS", "nokey"),
    ("SADD", "big", "9223372036854775807", "-9223372036854775808", "0"),
    ("SMEMBERS", "big"),
    # SISMEMBER, SMISMEMBER: integers written other ways are not members.
    ("SISMEMBER", "s", "3"), ("SISMEMBER", "s", "4"), ("SISMEMBER", "s", "03"),
    ("SISMEMBER", "s", "+3"), ("SISMEMBER", "s", " 3"),
    ("SISMEMBER", "nokey", "3"), ("SISMEMBER", "s"),
    ("SMISMEMBER", "s", "3", "4", "5"), ("SMISMEMBER", "nokey", "a", "b"),
    ("SMISMEMBER", "s"),
    # SREM: counts, the key gone once empty.
    ("SREM", "s", "3", "3", "nope", "0"), ("SMEMBERS", "s"),
    ("SREM", "nokey", "a"), ("SREM", "s"),
    ("SADD", "gone", "1", "2"), ("SREM", "gone", "1", "2", "3"),
    ("EXISTS", "gone"),
    # Strings: one member replies only.
    ("SADD", "w", "a"), ("SMEMBERS", "w"), ("SADD", "w", "a", "b", "c"),
    ("SCARD", "w"), ("SISMEMBER", "w", "b"), ("SREM", "w", "a", "b"),
    ("SMEMBERS", "w"), ("SPOP", "w"), ("EXISTS", "w"), ("SPOP", "w"),
    ("SADD", "bin", "", "\x00\r\n"), ("SISMEMBER", "bin", ""),
    ("SISMEMBER", "bin", "\x00\r\n"), ("SCARD", "bin"),
    ("SADD", "lng", M65), ("SMEMBERS", "lng"), ("SISMEMBER", "lng", M65),
    # Past int64: no intset member.
    ("SADD", "ovf", "9223372036854775808"), ("SMEMBERS", "ovf"),
    # SRANDMEMBER: its count and errors; the whole set at count >= size.
    ("SRANDMEMBER", "nokey"), ("SRANDMEMBER", "nokey", "5"),
    ("SRANDMEMBER", "nokey", "-5"), ("SRANDMEMBER", "s", "0"),
    ("SRANDMEMBER", "s", "100"), ("SRANDMEMBER", "s", "6"),
    ("SRANDMEMBER", "s", "x"), ("SRANDMEMBER", "s", "1.5"),
    ("SRANDMEMBER", "s", "-9223372036854775808"),
    ("SRANDMEMBER", "s", "-9223372036854775807x"),
    ("SRANDMEMBER", "s", "1", "2"), ("SRANDMEMBER", "nokey", "x"),
    ("SRANDMEMBER", "lng"), ("SRANDMEMBER", "lng", "-3"),
    ("SRANDMEMBER", "lng", "1"),
    # SPOP: count first, then the key; count >= size answers all.
    ("SPOP", "nokey"), ("SPOP", "nokey", "3"), ("SPOP", "nokey", "x"),
    ("SPOP", "s", "-1"), ("SPOP", "s", "x"), ("SPOP", "s", "0"),
    ("SPOP", "s", "1", "2"), ("SPOP", "s", "1.5"),
    ("SADD", "p", "3", "1", "2"), ("SPOP", "p", "3"), ("EXISTS", "p"),
    ("SADD", "p", "9", "8"), ("SPOP", "p", "100"), ("EXISTS", "p"),
    ("SADD", "p1", "x"), ("SPOP", "p1", "1"), ("EXISTS", "p1"),
    # SMOVE: Redis's order of answers.
    ("SADD", "src", "1", "2", "3"), ("SADD", "dst", "3", "4"),
    ("SMOVE", "src", "dst", "1"), ("SMEMBERS", "src"), ("SMEMBERS", "dst"),
    ("SMOVE", "src", "dst", "3"), ("SMEMBERS", "src"), ("SMEMBERS", "dst"),
    ("SMOVE", "src", "dst", "9"), ("SMOVE", "src", "src", "2"),
    ("SMOVE", "src", "src", "9"), ("SMOVE", "nokey", "dst", "1"),
    ("SMOVE", "src", "fresh", "2"), ("EXISTS", "src"), ("SMEMBERS", "fresh"),
    ("SET", "str", "x"), ("SMOVE", "nokey", "str", "1"),
    ("SMOVE", "fresh", "str", "2"), ("SMOVE", "str", "fresh", "2"),
    ("SMOVE", "fresh", "str", "nope"), ("SMOVE", "fresh", "dst"),
    # SINTER, SUNION, SDIFF of intsets, and their STORE forms.
    ("DEL", "a", "b", "c"), ("SADD", "a", "1", "2", "3", "4", "5"),
    ("SADD", "b", "4", "5", "6", "7"), ("SADD", "c", "5", "7", "9"),
    ("SINTER", "a", "b"), ("SINTER", "a", "b", "c"), ("SINTER", "a"),
    ("SINTER", "a", "nokey"), ("SINTER", "a", "a"), ("SINTER", "c", "b"),
    ("SUNION", "a", "b", "c"), ("SUNION", "nokey"), ("SUNION", "a", "nokey"),
    ("SDIFF", "a", "b"), ("SDIFF", "a", "b", "c"), ("SDIFF", "nokey", "a"),
    ("SDIFF", "a", "a"), ("SDIFF", "a", "nokey", "a"), ("SDIFF", "b", "a"),
    ("SDIFF", "a", "nokey"),
    ("SINTERSTORE", "d", "a", "b"), ("SMEMBERS", "d"),
    ("SUNIONSTORE", "d", "a", "c"), ("SMEMBERS", "d"),
    ("SDIFFSTORE", "d", "a", "b"), ("SMEMBERS", "d"),
    ("SINTERSTORE", "d", "a", "nokey"), ("EXISTS", "d"),
    ("SUNIONSTORE", "d", "a"), ("SDIFFSTORE", "d", "a", "a"), ("EXISTS", "d"),
    ("SUNIONSTORE", "d", "nokey"), ("EXISTS", "d"),
    ("SUNIONSTORE", "a", "a", "b"), ("SMEMBERS", "a"),
    ("SINTERSTORE", "a", "a", "c"), ("SMEMBERS", "a"),
    # A STORE replaces a key of another type, and its expiry.
    ("SET", "sv", "x", "EX", "100"), ("SUNIONSTORE", "sv", "b"),
    ("TYPE", "sv"), ("TTL", "sv"), ("SMEMBERS", "sv"),
    ("RPUSH", "lst", "1"), ("SINTERSTORE", "lst", "b", "c"), ("TYPE", "lst"),
    ("HSET", "hh", "f", "v"), ("SDIFFSTORE", "hh", "nokey"), ("TYPE", "hh"),
    ("SADD", "ex", "1"), ("EXPIRE", "ex", "100"), ("SUNIONSTORE", "ex", "c"),
    ("TTL", "ex"),
    # Wrong types: every source is checked before an absent one counts.
    ("SINTER", "nokey", "str"), ("SINTER", "str"), ("SUNION", "a", "str"),
    ("SDIFF", "nokey", "str"), ("SINTERSTORE", "d", "nokey", "str"),
    ("SUNIONSTORE", "d", "str"), ("SDIFFSTORE", "d", "a", "str"),
    ("SINTERCARD", "2", "nokey", "str"),
    ("SADD", "str", "a"), ("SREM", "str", "a"), ("SISMEMBER", "str", "a"),
    ("SMISMEMBER", "str", "a"), ("SCARD", "str"), ("SMEMBERS", "str"),
    ("SRANDMEMBER", "str"), ("SRANDMEMBER", "str", "2"), ("SPOP", "str"),
    ("SPOP", "str", "2"), ("SPOP", "str", "x"), ("SSCAN", "str", "0"),
    ("GET", "a"), ("LPUSH", "a", "x"), ("HSET", "a", "f", "v"),
    ("ZADD", "a", "1", "m"), ("INCR", "a"), ("TYPE", "a"),
    # SINTERCARD: numkeys, LIMIT and their errors.
    ("SINTERCARD", "2", "b", "c"), ("SINTERCARD", "1", "b"),
    ("SINTERCARD", "2", "b", "c", "LIMIT", "1"),
    ("SINTERCARD", "2", "b", "c", "limit", "0"),
    ("SINTERCARD", "2", "b", "c", "LIMIT", "1", "LIMIT", "5"),
    ("SINTERCARD", "2", "b", "nokey"), ("SINTERCARD", "0", "b"),
    ("SINTERCARD", "-1", "b"), ("SINTERCARD", "x", "b"),
    ("SINTERCARD", "3", "b", "c"), ("SINTERCARD", "1", "b", "LIMIT"),
    ("SINTERCARD", "1", "b", "LIMIT", "-1"),
    ("SINTERCARD", "1", "b", "LIMIT", "x"), ("SINTERCARD", "1", "b", "FOO"),
    ("SINTERCARD", "1"),
    # SSCAN: cursor first, then the key, then the options.
    ("SSCAN", "b", "0"), ("SSCAN", "b", "123"), ("SSCAN", "b", "-1"),
    ("SSCAN", "b", "0", "COUNT", "1"), ("SSCAN", "b", "0", "MATCH", "*5*"),
    ("SSCAN", "b", "0", "MATCH", "[46]", "COUNT", "100"),
    ("SSCAN", "b", "x"), ("SSCAN", "b", ""), ("SSCAN", "b", "1.5"),
    ("SSCAN", "b", "0", "COUNT", "0"), ("SSCAN", "b", "0", "COUNT", "x"),
    ("SSCAN", "b", "0", "MATCH"), ("SSCAN", "b", "0", "TYPE", "set"),
    ("SSCAN", "nokey", "0", "COUNT", "x"), ("SSCAN", "nokey", "x"),
    ("SSCAN", "b"),
    # Arity.
    ("SCARD",), ("SCARD", "a", "b"), ("SISMEMBER", "a", "1", "2"),
    ("SMEMBERS", "a", "b"), ("SMOVE", "a", "b"), ("SINTER",),
    ("SINTERSTORE", "d"), ("SUNION",), ("SDIFFSTORE", "d"), ("SPOP",),
    ("SRANDMEMBER",), ("SSCAN", "a"), ("SREM", "a"), ("SADD", "a"),
    # COPY, RENAME and MOVE keep the set.
    ("COPY", "b", "bc"), ("SMEMBERS", "bc"), ("SADD", "bc", "0"),
    ("SMEMBERS", "b"), ("RENAME", "bc", "br"), ("SMEMBERS", "br"),
    ("MOVE", "br", "1"), ("SELECT", "1"), ("SMEMBERS", "br"), ("TYPE", "br"),
    ("SELECT", "0"), ("EXISTS", "br"), ("SET", "b2s", "x"),
    ("COPY", "b", "b2s", "REPLACE"), ("SMEMBERS", "b2s"),
    ("SET", "b2s", "x"), ("GET", "b2s"),
    ("SCAN", "0", "TYPE", "set", "MATCH", "b*", "COUNT", "1000"),
]


def scan_keys(reply):
    return sorted(reply.split(b"\r\n")[5:-1:2])


@pytest.mark.parametrize("proto", [2, 3])
def test_replies_match_redis(both, proto):
    if proto == 3:
        for c in both:
            assert c.command("HELLO", "3")[:1] == b"%"
    for cmd in SCRIPT:
        if cmd[0] == "SCAN":
            got, want = [scan_keys(c.command(*cmd)) for c in both]
            assert got == want
            continue
        same(both, *cmd)


def test_command_info_matches_redis(both):
    for name in SET_COMMANDS:
        same(both, "COMMAND", "INFO", name)
    for line in (("sadd", "k", "m"), ("smove", "a", "b", "m"),
                 ("sinter", "a", "b", "c"), ("sinterstore", "d", "a", "b"),
                 ("sintercard", "2", "a", "b", "LIMIT", "1"),
                 ("sunionstore", "d", "a"), ("sscan", "k", "0")):
        same(both, "COMMAND", "GETKEYS", *line)


@pytest.mark.parametrize("proto", ["2", "3"])
def test_command_docs_match_redis(both, proto):
    """Summary, version, group and arguments as Redis documents them (but
    what no row of cellgate's table keeps: history, deprecation)."""
    from test_differential import docs_kept, resp_tree
    for c in both:
        c.command("HELLO", proto)
    for name in SET_COMMANDS:
        got, want = [resp_tree(c.command("COMMAND", "DOCS", name))
                     for c in both]
        assert got[0] == want[0], name
        assert docs_kept(got[1]) == docs_kept(want[1]), name


def members(reply):
    """A flat reply's bulk strings, sorted."""
    return sorted(reply.split(b"\r\n")[2:-1:2])


def sscan_cursor(c, key):
    return c.command("SSCAN", key, "0", "COUNT", "1").split(b"\r\n")[2]


def test_intset_order_and_conversion_as_redis(both):
    """Random integer writes keep Redis's intset order; the 513th integer,
    a string or a 65-bit number makes a hash table (SSCAN no longer answers
    whole), and the set never goes back."""
    rng = random.Random(3701)
    for _ in range(200):
        k = rng.choice(("i1", "i2"))
        vals = [str(rng.randrange(-300, 300)) for _ in range(rng.randrange(1, 4))]
        same(both, rng.choice(("SADD", "SADD", "SREM")), k, *vals)
        same(both, "SMEMBERS", k)
        same(both, "SRANDMEMBER", k, "1000")
        same(both, "SSCAN", k, "0")
    for c in both:
        for i in range(0, 512, 64):
            c.command("SADD", "n", *[str(j) for j in range(i, i + 64)])
        assert sscan_cursor(c, "n") == b"0"
        assert c.command("SADD", "n", "0") == b":0\r\n"
        assert c.command("SADD", "n", "512") == b":1\r\n"
        assert sscan_cursor(c, "n") != b"0"
        c.command("SREM", "n", *[str(j) for j in range(500)])
        assert sscan_cursor(c, "n") != b"0"     # never back
        for i in range(0, 300, 50):
            c.command("SADD", "st", *[str(j) for j in range(i, i + 50)])
        c.command("SADD", "st", "x")
        assert sscan_cursor(c, "st") != b"0"
    same(both, "SCARD", "n")
    assert members(both[0].command("SMEMBERS", "n")) == \
        members(both[1].command("SMEMBERS", "n"))
    # A union, difference or SPOP-all whose result is all integers answers
    # in value order, whatever its sources were.
    same(both, "SADD", "mix", "b", "10", "a", "2")
    same(both, "SREM", "mix", "a", "b")
    same(both, "SUNION", "mix", "i1")
    same(both, "SDIFF", "mix", "i2")
    same(both, "SPOP", "mix", "5")


def test_large_set_scan_returns_every_member(both):
    cg, rd = both
    for c in both:
        for i in range(0, 1000, 100):
            c.command("SADD", "big", *["m:%d" % j for j in range(i, i + 100)])
    seen = set()
    cursor, steps = b"0", 0
    while True:
        parts = cg.command("SSCAN", "big", cursor, "COUNT", "30").split(b"\r\n")
        cursor = parts[2]
        seen.update(parts[5:-1:2])
        steps += 1
        if cursor == b"0" or steps > 1000:
            break
    assert steps > 5
    assert sorted(seen) == members(rd.command("SMEMBERS", "big"))
    reply = cg.command("SSCAN", "big", "0", "MATCH", "nothing*", "COUNT", "5")
    assert reply.endswith(b"*0\r\n")


@pytest.mark.parametrize("size", [10, 300])
def test_algebra_of_string_sets_matches_redis_as_sets(both, size):
    """Sets with strings (a hash table in Redis): every result compared as
    a set, and its count exactly."""
    rng = random.Random(size)
    for c in both:
        c.command("FLUSHALL")
    for k in ("x", "y", "z"):
        ms = ["e%d" % rng.randrange(size) for _ in range(size)]
        ms += [str(rng.randrange(size)) for _ in range(size // 2)]
        same(both, "SADD", k, *ms)
    for cmd in (("SINTER", "x", "y"), ("SINTER", "x", "y", "z"),
                ("SUNION", "x", "y", "z"), ("SDIFF", "x", "y"),
                ("SDIFF", "z", "x", "y"), ("SMEMBERS", "x")):
        got, want = [c.command(*cmd) for c in both]
        assert got.split(b"\r\n")[0] == want.split(b"\r\n")[0], cmd
        assert members(got) == members(want), cmd
    for cmd in (("SINTERSTORE", "d1", "x", "y"), ("SUNIONSTORE", "d2", "x", "z"),
                ("SDIFFSTORE", "d3", "y", "z"), ("SINTERCARD", "3", "x", "y", "z"),
                ("SINTERCARD", "2", "x", "y", "LIMIT", "3"), ("SCARD", "d1"),
                ("SCARD", "d2"), ("SCARD", "d3"), ("SMISMEMBER", "x", "e1", "1")):
        same(both, *cmd)
    for k in ("d1", "d2", "d3"):
        assert set_members(both[0], k) == set_members(both[1], k)


def test_spop_and_srandmember_by_shape_count_and_membership(server):
    c = server.raw()
    for size, kind in ((20, "%d"), (20, "m%d"), (600, "m%d")):
        c.command("DEL", "s")
        all_ = {(kind % i).encode() for i in range(size)}
        c.command("SADD", "s", *sorted(all_))
        for count in (1, 3, size // 3, size // 2, size - 1):
            got = members(c.command("SRANDMEMBER", "s", count))
            assert len(got) == count and len(set(got)) == count
            assert set(got) <= all_
        got = members(c.command("SRANDMEMBER", "s", -size * 3))
        assert len(got) == size * 3 and set(got) <= all_
        assert len(set(got)) > size // 2      # 3n draws miss few
        # SPOP with every strategy: distinct members, all gone.
        left = set(all_)
        for count in (1, 2, size // 4, size // 2):
            if count >= len(left):
                break
            reply = c.command("SPOP", "s", count)
            got = members(reply)
            assert reply.startswith(b"*%d\r\n" % count)
            assert len(set(got)) == count and set(got) <= left
            left -= set(got)
            assert set(members(c.command("SMEMBERS", "s"))) == left
        one = c.command("SPOP", "s").split(b"\r\n")[1]
        assert one in left
        left.discard(one)
        assert c.command("SCARD", "s") == b":%d\r\n" % len(left)
    # Redis's third case (few kept) builds the kept members into a new set
    # by adding: all integers, it is an intset again, sorted and answered
    # whole by SSCAN, though the set was a hash table.
    c.command("DEL", "h")
    c.command("SADD", "h", *range(600))
    c.command("SPOP", "h", 595)
    kept = [int(m) for m in c.command("SMEMBERS", "h").split(b"\r\n")[2:-1:2]]
    assert len(kept) == 5 and kept == sorted(kept)
    assert sscan_cursor(c, "h") == b"0"


# ---- WATCH, MULTI, scripts and maxmemory ---------------------------------

@pytest.mark.parametrize("write,aborts", [
    (("SADD", "w", "1"), False), (("SADD", "w", "2"), True),
    (("SREM", "w", "9"), False), (("SREM", "w", "1"), True),
    (("SPOP", "w"), True), (("SPOP", "w", "0"), False),
    (("SMOVE", "w", "o", "9"), False), (("SMOVE", "w", "o", "1"), True),
    (("SMOVE", "o2", "w", "5"), True), (("SMOVE", "o2", "w", "1"), False),
    (("SINTERSTORE", "w", "nokey"), True),
    (("SUNIONSTORE", "w", "w"), True), (("SINTERSTORE", "x", "w"), False),
    (("SMEMBERS", "w"), False), (("DEL", "w"), True),
])
def test_watch_as_redis(server, redis_server, write, aborts):
    for d in (server, redis_server):
        c = harness.RawConn(port=d.port)
        other = harness.RawConn(port=d.port)
        c.command("FLUSHALL")
        c.command("SADD", "w", "1")
        c.command("SADD", "o2", "5", "1")
        assert c.command("WATCH", "w") == b"+OK\r\n"
        other.command(*write)
        c.command("MULTI")
        c.command("PING")
        assert (c.command("EXEC") == b"*-1\r\n") == aborts, (d, write)
        c.close()
        other.close()


def test_multi_and_scripts_as_redis(both):
    for c in both:
        c.command("SADD", "q", "3", "1")
    same(both, "MULTI")
    same(both, "SADD", "q", "2")
    same(both, "SMEMBERS", "q")
    same(both, "SINTERCARD", "1", "q")
    same(both, "EXEC")
    script = ("redis.call('SADD', KEYS[1], ARGV[1], ARGV[2]) "
              "return {redis.call('SISMEMBER', KEYS[1], ARGV[1]), "
              "redis.call('SCARD', KEYS[1]), redis.call('SMEMBERS', KEYS[1]), "
              "redis.pcall('SADD', 'str', 'x')}")
    same(both, "SET", "str", "v")
    same(both, "EVAL", script, "1", "q", "7", "5")
    for c in both:
        c.command("HELLO", "3")
    same(both, "EVAL", "return redis.call('SMEMBERS', KEYS[1])", "1", "q")


@pytest.mark.allocator
def test_a_write_that_does_not_fit_maxmemory_changes_nothing(start_daemon):
    d = start_daemon("--maxmemory", "8mb")
    c = d.raw()
    oom = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"
    assert c.command("SADD", "k", "a") == b":1\r\n"
    big = b"v" * (2 << 20)
    n = 0
    while True:
        got = c.command("SADD", "k", b"%d" % n + big)
        if got == oom:
            break
        assert got == b":1\r\n"
        n += 1
        assert n < 10
    assert c.command("SCARD", "k") == b":%d\r\n" % (n + 1)
    assert c.command("SADD", "new", b"1" + big, b"2" + big, b"3" + big) == oom
    assert c.command("EXISTS", "new") == b":0\r\n"
    assert c.command("SREM", "k", b"0" + big) == b":1\r\n"


def test_memory_usage_and_type(both):
    cg, _ = both
    for c in both:
        c.command("SADD", "ms", *[str(i) for i in range(10)])
    same(both, "TYPE", "ms")
    got = int(cg.command("MEMORY", "USAGE", "ms").split(b"\r\n")[0][1:])
    assert 0 < got < 200
    cg.command("SADD", "ml", *["member:%d" % i for i in range(1000)])
    big = int(cg.command("MEMORY", "USAGE", "ml").split(b"\r\n")[0][1:])
    assert big > 1000 * 9


def test_cross_slot_in_a_cluster(cluster):
    """Every key of a multi-key set command routes (SINTERCARD's through
    numkeys); keys of one slot run."""
    c = cluster.nodes[0].raw()
    for cmd in (("SINTER", "{a}1", "{b}1"), ("SUNIONSTORE", "{a}1", "{b}1"),
                ("SMOVE", "{a}1", "{b}1", "m"),
                ("SINTERCARD", "2", "{a}1", "{b}1"),
                ("SDIFFSTORE", "{a}1", "{a}2", "{b}1")):
        assert c.command(*cmd) == (
            b"-CROSSSLOT Keys in request don't hash to the same slot\r\n"), cmd
    own = keys_on_each_node("own", 1)[0][0]
    assert c.command("SADD", own, "1") == b":1\r\n"
    assert c.command("SINTERCARD", "1", own) == b":1\r\n"


# ---- persistence and replication ---------------------------------------

def build(c, rng, keys):
    """Sets of every kind: intsets and string sets through random writes,
    one past 512 integers, one past 128 strings, STORE results, SPOPs."""
    for _ in range(600):
        k = rng.choice(keys)
        p = rng.random()
        m = str(rng.randrange(100)) if p < 0.5 else "w%d" % rng.randrange(60)
        if p < 0.55 or 0.7 < p < 0.8:
            c.command("SADD", k, m, str(rng.randrange(50)))
        elif p < 0.7:
            c.command("SREM", k, m)
        elif p < 0.85:
            c.command("SPOP", k, rng.randrange(3))
        elif p < 0.9:
            c.command("SMOVE", k, rng.choice(keys), m)
        else:
            c.command(rng.choice(("SUNIONSTORE", "SINTERSTORE", "SDIFFSTORE")),
                      rng.choice(keys), k, rng.choice(keys))
    c.command("SADD", "conv_int", *[str(i) for i in range(600)])
    c.command("SADD", "conv_str", *["s%d" % i for i in range(200)])
    c.command("SPOP", "conv_str", 150)
    c.command("SADD", "ttl", "a", "1")
    c.command("PEXPIRE", "ttl", 500000)


def exact(c, keys):
    """Each set's members in its order while compact (SSCAN answers it
    whole), else sorted (a large one's order is its table's)."""
    return {k: c.command("SMEMBERS", k) if sscan_cursor(c, k) == b"0"
            else members(c.command("SMEMBERS", k)) for k in keys}


KEYS = ("s1", "s2", "s3", "s4", "conv_int", "conv_str", "ttl")


def test_journal_replay_after_kill_9_gives_the_acknowledged_sets(
        start_daemon, tmp_path):
    work = str(tmp_path / "data")
    d = start(start_daemon, work, "--appendfsync", "always")
    c = d.raw()
    build(c, random.Random(7), KEYS[:4])
    before = fingerprint(d)
    want = exact(c, KEYS)
    kill9(d)
    t = start(start_daemon, work, clock_ns=d.clock.ns)
    assert fingerprint(t) == before
    assert exact(t.raw(), KEYS) == want
    # A rewrite's base, then more effects: both read back.
    tc = t.raw()
    assert tc.command("BGREWRITEAOF").startswith(b"+")
    assert harness.wait_until(
        lambda: t.info("persistence")["aof_rewrite_in_progress"] == 0, 30)
    build(tc, random.Random(8), KEYS[:4])
    before = fingerprint(t)
    want = exact(tc, KEYS)
    kill9(t)
    u = start(start_daemon, work, clock_ns=d.clock.ns)
    assert fingerprint(u) == before
    assert exact(u.raw(), KEYS) == want


def test_snapshot_keeps_the_sets(start_daemon, tmp_path):
    work = str(tmp_path / "snap")
    os.makedirs(work)
    d = start_daemon("--dir", work, "--appendonly", "no", "--save", "",
                     fakeclock=True)
    c = d.raw()
    build(c, random.Random(11), KEYS[:4])
    want = exact(c, KEYS)
    before = fingerprint(d)
    assert c.command("SAVE") == b"+OK\r\n"
    assert d.stop() == []
    t = start_daemon("--dir", work, "--appendonly", "no", "--save", "",
                     fakeclock=True)
    t.clock.set(d.clock.ns)
    assert exact(t.raw(), KEYS) == want
    assert fingerprint(t) == before


def test_a_replica_gets_the_sets_by_full_sync_and_stream(start_daemon):
    """A full sync carries whole sets; the stream carries each write as
    its element effect (SPOP's as the members it took), so the replica
    ends with the same members."""
    from test_replication import caught_up, follow, pair
    p, r = pair(start_daemon)
    pc = p.raw()
    build(pc, random.Random(21), KEYS[:4])
    follow(r, p)
    assert caught_up(p, r)
    assert exact(r.raw(), KEYS) == exact(pc, KEYS)
    build(pc, random.Random(22), KEYS[:4])
    pc.command("SPOP", "conv_int", 100)
    pc.command("SPOP", "conv_int", 450)
    assert caught_up(p, r)
    assert exact(r.raw(), KEYS) == exact(pc, KEYS)
    assert fingerprint(r) == fingerprint(p)


@pytest.mark.parametrize("proto", [2, 3])
def test_redis_set_tcl_cases(server, redis_server, proto):
    """Redis 7.0.15's tests/unit/type/set.tcl case by case (redis_tcl/set.cmds):
    every reply of its cases' commands as redis-server's, WATCH around SMOVE
    and SPOP's counts included."""
    assert redis_cases.run("set.cmds", server.port, redis_server.port, proto) == []


@pytest.mark.parametrize("proto", [2, 3])
def test_redis_keyspace_tcl_cases(server, redis_server, proto):
    """Redis 7.0.15's tests/unit/keyspace.tcl and multi.tcl cases over sets,
    RANDOMKEY and the blocking pops (redis_tcl/keyspace.cmds): COPY, MOVE
    and RENAME of sets with and without expiry, RANDOMKEY on an empty
    database, blocking pops inside MULTI, as on redis-server."""
    assert redis_cases.run("keyspace.cmds", server.port, redis_server.port, proto) == []
