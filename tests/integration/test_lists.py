"""Redis's lists, byte for byte against Debian's redis-server 7.0.15 in
RESP2 and RESP3: every list command's replies, its errors and which of
them wins when several apply, long lists that span many of cellgate's
nodes, and a long random run compared reply by reply; a journal replayed
after kill -9 giving back the acknowledged lists; the journal's bytes per
LPUSH the same for a list of 10 and of 100,000 elements (element effects,
not whole keys)."""
import os
import random

import pytest

import harness
from harness import resp_command
from test_journal import fingerprint, incr_files, kill9, start
from test_replication import caught_up, follow, pair

LONG_MIN = -(1 << 63)
LONG_MAX = (1 << 63) - 1


def conns(server, redis_server, proto):
    ours = server.raw()
    theirs = harness.RawConn(port=redis_server.port)
    for c in (ours, theirs):
        c.command("FLUSHALL")
        if proto == 3:
            assert c.command("HELLO", 3).startswith(b"%")
    return ours, theirs


def same(ours, theirs, cmds):
    """Send every command to both (pipelined) and compare reply bytes."""
    data = b"".join(resp_command(*cmd) for cmd in cmds)
    ours.send(data)
    theirs.send(data)
    for cmd in cmds:
        a, b = ours.reply_bytes(), theirs.reply_bytes()
        assert a == b, (cmd, a, b)


# Each case: the commands of one scenario, run on an empty database.
CASES = {
    "push_and_pop": [
        ("LPUSH", "k", "a", "b", "c"), ("RPUSH", "k", "d", "e"),
        ("LRANGE", "k", 0, -1), ("LLEN", "k"), ("LPOP", "k"),
        ("RPOP", "k"), ("LPOP", "k", 2), ("RPOP", "k", 0), ("LPOP", "k", 5),
        ("EXISTS", "k"), ("LPOP", "k"), ("LPOP", "k", 3), ("RPOP", "k", 0),
        ("LPUSHX", "k", "x"), ("RPUSHX", "k", "x", "y"), ("EXISTS", "k"),
        ("RPUSH", "k", ""), ("LPUSHX", "k", "x", "y"), ("RPUSHX", "k", "z"),
        ("LRANGE", "k", 0, -1), ("RPOP", "k", 10), ("LLEN", "k"),
        ("LLEN", "missing"),
    ],
    "pop_count_errors": [
        ("RPUSH", "k", "a"), ("LPOP", "k", -1), ("LPOP", "k", "x"),
        ("RPOP", "k", "1.5"), ("LPOP", "k", 1, 2), ("RPOP", "k", 1, 2),
        ("LPOP", "missing", -1), ("LPOP", "missing", "x"),
        ("LPOP", "missing", 0), ("RPOP", "missing", 3), ("LPOP", "k", ""),
        ("LPOP", "k", LONG_MAX), ("LPOP", "k"), ("LPOP",), ("LPUSH", "k"),
        ("RPUSHX", "k"),
    ],
    "index_and_set": [
        ("RPUSH", "k", "a", "b", "c"), ("LINDEX", "k", 0),
        ("LINDEX", "k", -1), ("LINDEX", "k", -3), ("LINDEX", "k", -4),
        ("LINDEX", "k", 3), ("LINDEX", "k", "x"), ("LINDEX", "missing", "x"),
        ("LINDEX", "k", LONG_MIN), ("LINDEX", "k", LONG_MAX),
        ("LINDEX", "k", "99999999999999999999"),
        ("LSET", "k", 1, "B"), ("LSET", "k", -1, "C"), ("LSET", "k", 3, "x"),
        ("LSET", "k", -4, "x"), ("LSET", "k", "x", "y"),
        ("LSET", "missing", "x", "y"), ("LSET", "missing", 0, "y"),
        ("LSET", "k", LONG_MIN, "y"), ("LRANGE", "k", 0, -1),
    ],
    "ranges": [
        ("RPUSH", "k", *"abcdefgh"),
        *[("LRANGE", "k", s, e)
          for s in (0, 1, -1, -3, -8, -9, -100, 7, 8, 100, LONG_MIN, LONG_MAX)
          for e in (0, 2, -1, -2, -8, -9, -100, 7, 8, 100, LONG_MIN,
                    LONG_MAX)],
        ("LRANGE", "k", "x", 0), ("LRANGE", "k", 0, "y"),
        ("LRANGE", "missing", "x", 0), ("LRANGE", "missing", 0, -1),
    ],
    "trims": [
        ("RPUSH", "k", *"abcdefgh"), ("LTRIM", "k", 0, -1),
        ("LRANGE", "k", 0, -1), ("LTRIM", "k", 1, -2), ("LRANGE", "k", 0, -1),
        ("LTRIM", "k", -100, 100), ("LTRIM", "k", 2, 3),
        ("LRANGE", "k", 0, -1), ("LTRIM", "k", 1, 0), ("EXISTS", "k"),
        ("RPUSH", "k", *"abc"), ("LTRIM", "k", 5, 10), ("EXISTS", "k"),
        ("RPUSH", "k", *"abc"), ("LTRIM", "k", -1, -1), ("LRANGE", "k", 0, -1),
        ("LTRIM", "k", LONG_MIN, LONG_MAX), ("LRANGE", "k", 0, -1),
        ("LTRIM", "k", "x", 0), ("LTRIM", "missing", 0, 1),
        ("LTRIM", "missing", "x", 1), ("EXISTS", "missing"),
    ],
    "rem": [
        ("RPUSH", "k", *"abacabaa"), ("LREM", "k", 2, "a"),
        ("LRANGE", "k", 0, -1), ("LREM", "k", -1, "a"), ("LRANGE", "k", 0, -1),
        ("LREM", "k", 0, "b"), ("LRANGE", "k", 0, -1), ("LREM", "k", 1, "z"),
        ("LREM", "k", "x", "a"), ("LREM", "missing", "x", "a"),
        ("LREM", "missing", 0, "a"), ("LREM", "k", LONG_MIN, "a"),
        ("LRANGE", "k", 0, -1), ("LREM", "k", 0, "c"), ("EXISTS", "k"),
    ],
    "insert": [
        ("LINSERT", "missing", "BEFORE", "a", "x"),
        ("LINSERT", "missing", "middle", "a", "x"),
        ("RPUSH", "k", "a", "b", "a"), ("LINSERT", "k", "before", "a", "x"),
        ("LINSERT", "k", "AFTER", "a", "y"), ("LINSERT", "k", "after", "z", 1),
        ("LINSERT", "k", "after", "b", ""), ("LINSERT", "k", "nowhere", "a", 1),
        ("LRANGE", "k", 0, -1),
    ],
    "lpos": [
        ("RPUSH", "k", *"abcabcab"),
        ("LPOS", "k", "a"), ("LPOS", "k", "z"), ("LPOS", "k", "b", "RANK", 2),
        ("LPOS", "k", "b", "RANK", -1), ("LPOS", "k", "b", "RANK", -3),
        ("LPOS", "k", "b", "RANK", -4), ("LPOS", "k", "a", "COUNT", 0),
        ("LPOS", "k", "a", "COUNT", 2), ("LPOS", "k", "a", "COUNT", 9),
        ("LPOS", "k", "z", "COUNT", 1), ("LPOS", "k", "a", "RANK", -2,
                                         "COUNT", 0),
        ("LPOS", "k", "a", "MAXLEN", 3), ("LPOS", "k", "c", "MAXLEN", 2),
        ("LPOS", "k", "a", "COUNT", 0, "MAXLEN", 4),
        ("LPOS", "k", "a", "RANK", -1, "MAXLEN", 1),
        ("LPOS", "k", "a", "RANK", 0), ("LPOS", "k", "a", "RANK", "x"),
        ("LPOS", "k", "a", "COUNT", -1), ("LPOS", "k", "a", "COUNT", "x"),
        ("LPOS", "k", "a", "MAXLEN", -1), ("LPOS", "k", "a", "MAXLEN", "x"),
        ("LPOS", "k", "a", "RANK"), ("LPOS", "k", "a", "BOGUS", 1),
        ("LPOS", "k", "a", "RANK", 0, "COUNT", -1),
        ("LPOS", "k", "a", "COUNT", -1, "RANK", 0),
        ("LPOS", "k", "a", "RANK", LONG_MIN),
        ("LPOS", "k", "a", "RANK", LONG_MIN, "COUNT", 0),
        ("LPOS", "k", "a", "RANK", LONG_MIN, "COUNT", 1),
        ("LPOS", "k", "a", "RANK", LONG_MAX),
        ("LPOS", "k", "a", "RANK", LONG_MAX, "COUNT", 0),
        ("LPOS", "missing", "a"), ("LPOS", "missing", "a", "COUNT", 0),
        ("LPOS", "missing", "a", "RANK", 0),
        ("LPOS", "k", "a", "rank", 2, "count", 1, "maxlen", 0),
    ],
    "move": [
        ("RPUSH", "s", *"abc"), ("LMOVE", "s", "d", "LEFT", "RIGHT"),
        ("LMOVE", "s", "d", "right", "left"), ("LMOVE", "s", "d", "left",
                                               "left"),
        ("LRANGE", "d", 0, -1), ("EXISTS", "s"),
        ("LMOVE", "s", "d", "LEFT", "RIGHT"), ("LMOVE", "d", "d", "LEFT",
                                               "RIGHT"),
        ("LRANGE", "d", 0, -1), ("LMOVE", "d", "d", "RIGHT", "LEFT"),
        ("LMOVE", "d", "d", "LEFT", "LEFT"), ("LRANGE", "d", 0, -1),
        ("LMOVE", "d", "d", "up", "LEFT"), ("LMOVE", "d", "d", "LEFT", "up"),
        ("LMOVE", "missing", "d", "up", "LEFT"),
        ("LMOVE", "missing", "d", "LEFT", "LEFT"),
        ("SET", "str", "v"), ("LMOVE", "d", "str", "LEFT", "LEFT"),
        ("LMOVE", "str", "d", "LEFT", "LEFT"),
        ("LMOVE", "missing", "str", "LEFT", "LEFT"), ("LRANGE", "d", 0, -1),
        ("RPUSH", "one", "x"), ("LMOVE", "one", "one", "LEFT", "RIGHT"),
        ("LRANGE", "one", 0, -1), ("LMOVE", "one", "two", "RIGHT", "LEFT"),
        ("EXISTS", "one"), ("LRANGE", "two", 0, -1),
    ],
    "wrongtype": [
        ("SET", "s", "v"), ("LPUSH", "s", "a"), ("RPUSH", "s", "a"),
        ("LPUSHX", "s", "a"), ("RPUSHX", "s", "a"), ("LPOP", "s"),
        ("RPOP", "s", 2), ("LPOP", "s", -1), ("LLEN", "s"),
        ("LINDEX", "s", 0), ("LINDEX", "s", "x"), ("LRANGE", "s", 0, -1),
        ("LRANGE", "s", "x", 1), ("LTRIM", "s", 0, 1), ("LTRIM", "s", "x", 1),
        ("LREM", "s", 0, "a"), ("LREM", "s", "x", "a"), ("LSET", "s", 0, "a"),
        ("LSET", "s", "x", "a"), ("LPOS", "s", "a"),
        ("LPOS", "s", "a", "RANK", 0), ("LINSERT", "s", "BEFORE", "a", "b"),
        ("LINSERT", "s", "nope", "a", "b"), ("GET", "s"), ("TYPE", "s"),
        ("RPUSH", "l", "a"), ("GET", "l"), ("TYPE", "l"),
    ],
    "binary_and_big_elements": [
        ("RPUSH", "k", b"\x00\r\n\xff", b"", b"x" * 20000, b"y" * 127,
         b"z" * 128, b"w" * 16384),
        ("LRANGE", "k", 0, -1), ("LPOS", "k", b"x" * 20000),
        ("LSET", "k", 0, b"q" * 9000), ("LINDEX", "k", 0),
        ("LREM", "k", 0, b""), ("LINSERT", "k", "BEFORE", b"y" * 127,
                                b"\x00"),
        ("LRANGE", "k", 0, -1), ("RPOP", "k", 3), ("LPOP", "k", 3),
    ],
}


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("case", sorted(CASES))
def test_replies_as_redis(server, redis_server, case, proto):
    ours, theirs = conns(server, redis_server, proto)
    same(ours, theirs, CASES[case])


def long_list_cmds(n):
    """A list of n elements of many sizes (values repeat, so searches find
    several), then reads and writes all along it."""
    rnd = random.Random(n)
    vals = [b"v%d" % (i % 37) if i % 5 else b"%d-" % i * rnd.randrange(1, 300)
            for i in range(n)]
    cmds = []
    for i in range(0, n, 100):
        cmds.append(("RPUSH" if i % 200 else "LPUSH", "L", *vals[i:i + 100]))
    cmds += [("LLEN", "L"), ("LRANGE", "L", 0, -1)]
    for i in range(0, n, max(1, n // 50)):
        cmds += [("LINDEX", "L", i), ("LINDEX", "L", -i - 1),
                 ("LSET", "L", i, b"set%d" % i), ("LRANGE", "L", i, i + 150),
                 ("LRANGE", "L", -i - 150, -i)]
    cmds += [("LPOS", "L", b"v3", "COUNT", 0),
             ("LPOS", "L", b"v3", "RANK", -5, "COUNT", 7),
             ("LPOS", "L", b"v4", "RANK", 3, "MAXLEN", n // 2),
             ("LINSERT", "L", "BEFORE", b"v5", b"ins"),
             ("LINSERT", "L", "AFTER", b"v6", b"ins" * 3000),
             ("LREM", "L", 10, b"v7"), ("LREM", "L", -10, b"v8"),
             ("LREM", "L", 0, b"v9"), ("LRANGE", "L", 0, -1),
             ("LTRIM", "L", n // 10, -n // 10), ("LRANGE", "L", 0, -1),
             ("LPOP", "L", n // 4), ("RPOP", "L", n // 4),
             ("LRANGE", "L", 0, -1), ("LMOVE", "L", "L", "LEFT", "RIGHT"),
             ("LMOVE", "L", "M", "RIGHT", "LEFT"), ("LRANGE", "L", 0, -1),
             ("LRANGE", "M", 0, -1)]
    return cmds


@pytest.mark.parametrize("n", [100, 5000])
def test_long_lists_as_redis(server, redis_server, n):
    ours, theirs = conns(server, redis_server, 2)
    same(ours, theirs, long_list_cmds(n))


def random_cmds(seed, steps):
    rnd = random.Random(seed)
    keys = ["a", "b", "c"]

    def val():
        r = rnd.random()
        if r < 0.05:
            return b"big" * rnd.randrange(1000, 4000)
        if r < 0.2:
            return b"%d" % rnd.randrange(-5, 5)
        return rnd.choice([b"x", b"y", b"z", b"", b"xy"])

    def idx():
        return rnd.choice([rnd.randrange(-30, 30), rnd.randrange(-400, 400)])

    out = []
    for _ in range(steps):
        k = rnd.choice(keys)
        op = rnd.randrange(16)
        if op < 4:
            out.append((rnd.choice(["LPUSH", "RPUSH", "LPUSHX", "RPUSHX"]), k,
                        *[val() for _ in range(rnd.choice([1, 1, 3, 60]))]))
        elif op < 6:
            args = [rnd.choice(["LPOP", "RPOP"]), k]
            if rnd.random() < 0.5:
                args.append(rnd.randrange(0, 20))
            out.append(tuple(args))
        elif op == 6:
            out.append(("LINDEX", k, idx()))
        elif op == 7:
            out.append(("LSET", k, idx(), val()))
        elif op == 8:
            out.append(("LRANGE", k, idx(), idx()))
        elif op == 9:
            if rnd.random() < 0.2:
                out.append(("LTRIM", k, idx(), idx()))
            else:
                out.append(("LTRIM", k, rnd.randrange(0, 3),
                            -rnd.randrange(1, 3)))
        elif op == 10:
            out.append(("LREM", k, rnd.randrange(-3, 4), val()))
        elif op == 11:
            out.append(("LINSERT", k, rnd.choice(["BEFORE", "AFTER"]),
                        val(), val()))
        elif op == 12:
            args = ["LPOS", k, val()]
            if rnd.random() < 0.5:
                args += ["RANK", rnd.choice([-3, -1, 1, 2, 5])]
            if rnd.random() < 0.5:
                args += ["COUNT", rnd.randrange(0, 4)]
            if rnd.random() < 0.3:
                args += ["MAXLEN", rnd.randrange(0, 50)]
            out.append(tuple(args))
        elif op == 13:
            out.append(("LMOVE", k, rnd.choice(keys),
                        rnd.choice(["LEFT", "RIGHT"]),
                        rnd.choice(["LEFT", "RIGHT"])))
        else:
            out.append(("LLEN", k))
    out += [("LRANGE", k, 0, -1) for k in keys]
    return out


@pytest.mark.parametrize("proto", [2, 3])
def test_a_random_run_as_redis(server, redis_server, proto):
    ours, theirs = conns(server, redis_server, proto)
    cmds = random_cmds(28 + proto, 6000)
    for i in range(0, len(cmds), 500):
        same(ours, theirs, cmds[i:i + 500])


def test_the_acknowledged_lists_survive_kill_9(start_daemon, tmp_path):
    work = str(tmp_path / "data")
    d = start(start_daemon, work, "--appendfsync", "always")
    c = d.raw()
    for cmd in random_cmds(7, 3000):
        c.command(*cmd)
    for cmd in long_list_cmds(3000):
        c.command(*cmd)
    c.command("RPUSH", "ttl", "a", "b")
    c.command("EXPIRE", "ttl", 1000)
    c.command("MULTI")
    c.command("LMOVE", "M", "N", "LEFT", "LEFT")
    c.command("LPUSH", "N", "in-multi")
    assert c.command("EXEC").startswith(b"*2\r\n")
    before = fingerprint(d)
    assert any(k[1] == b"L" for k in before)
    kill9(d)
    t = start(start_daemon, work, clock_ns=d.clock.ns)
    assert fingerprint(t) == before
    assert t.stop() == []


def journal_bytes_per_lpush(d, key, n):
    c = d.raw()
    for i in range(0, n, 1000):
        batch = [b"e%d" % j for j in range(i, min(n, i + 1000))]
        c.command("RPUSH", key, *batch)
    c.command("PING")
    path = incr_files(d)[-1]
    size = os.path.getsize(path)
    for i in range(100):
        reply = c.command("LPUSH", key, b"new%03d" % i)
        assert reply == b":%d\r\n" % (n + i + 1)
    return (os.path.getsize(path) - size) / 100


def test_journal_bytes_per_lpush_do_not_grow_with_the_list(start_daemon,
                                                           tmp_path):
    d = start(start_daemon, str(tmp_path / "data"), "--appendfsync", "always")
    short = journal_bytes_per_lpush(d, "k010", 10)
    long = journal_bytes_per_lpush(d, "k1e5", 100000)
    assert short == long, (short, long)
    assert short < 64, short
    c = d.raw()
    assert c.command("LLEN", "k1e5") == b":100100\r\n"
    assert c.command("LINDEX", "k1e5", 0) == b"$6\r\nnew099\r\n"


LIST_COMMANDS = ["lpush", "rpush", "lpushx", "rpushx", "lpop", "rpop", "llen",
                 "lindex", "lrange", "ltrim", "lrem", "lset", "lpos",
                 "linsert", "lmove", "rpoplpush", "lmpop", "blpop", "brpop", "blmove",
                 "brpoplpush", "blmpop"]


@pytest.mark.parametrize("proto", [2, 3])
def test_command_info_as_redis(server, redis_server, proto):
    ours, theirs = conns(server, redis_server, proto)
    same(ours, theirs, [("COMMAND", "INFO", name) for name in LIST_COMMANDS])
    same(ours, theirs, [("COMMAND", "GETKEYS", "LMOVE", "a", "b", "LEFT",
                         "RIGHT"),
                        ("COMMAND", "GETKEYS", "LPUSH", "k", "a", "b")])


def test_the_list_category(r):
    assert sorted(r.command_list(category="list")) == sorted(
        n.encode() for n in LIST_COMMANDS)
    writes = set(r.command_list(category="write"))
    assert sorted(n for n in LIST_COMMANDS if n.encode() in writes) == sorted(
        ["lpush", "rpush", "lpushx", "rpushx", "lpop", "rpop", "ltrim",
         "lrem", "lset", "linsert", "lmove", "rpoplpush", "lmpop", "blpop", "brpop",
         "blmove", "brpoplpush", "blmpop"])


def test_a_replica_fed_list_writes_ends_equal(start_daemon):
    """The replica gets the element effects (and a LMOVE's two as one
    group), a full sync the whole lists: both end equal to the primary."""
    p, r = pair(start_daemon)
    c = p.raw()
    for cmd in long_list_cmds(2000):
        c.command(*cmd)
    follow(r, p)                       # a full sync of long lists
    for cmd in random_cmds(11, 3000):
        c.command(*cmd)
    c.command("MULTI")
    c.command("LMOVE", "a", "fresh", "LEFT", "RIGHT")
    c.command("RPUSH", "fresh", "x")
    c.command("EXEC")
    assert caught_up(p, r)
    assert fingerprint(r) == fingerprint(p)


def test_watch_hears_list_writes_and_not_what_changes_nothing(start_daemon):
    d = start_daemon()
    c, other = d.raw(), d.raw()
    other.command("RPUSH", "k", "a", "b", "c")
    heard = [("RPUSH", "k", "x"), ("LPUSH", "k", "y"), ("RPUSHX", "k", "z"),
             ("LPOP", "k"), ("RPOP", "k", 1), ("LSET", "k", 0, "s"),
             ("LINSERT", "k", "BEFORE", "s", "i"), ("LREM", "k", 1, "i"),
             ("LTRIM", "k", 0, -1),                 # Redis signals it too
             ("LMOVE", "k", "k", "LEFT", "RIGHT"),
             ("LMOVE", "other", "k", "LEFT", "LEFT")]
    unheard = [("LREM", "k", 0, "nothing"), ("LINSERT", "k", "AFTER", "no",
                                             "x"),
               ("LPOP", "k", 0), ("LSET", "k", 99, "x"), ("LRANGE", "k", 0, 1),
               ("LPUSHX", "missing", "x"), ("LPOS", "k", "s")]
    other.command("RPUSH", "other", "o")
    for w, want in [(w, b"*-1\r\n") for w in heard] + \
                   [(w, b"*1\r\n+PONG\r\n") for w in unheard]:
        assert c.command("WATCH", "k") == b"+OK\r\n"
        other.command(*w)
        assert c.command("MULTI") == b"+OK\r\n"
        assert c.command("PING") == b"+QUEUED\r\n"
        assert c.command("EXEC") == want, w


@pytest.mark.allocator
def test_list_growth_is_admitted_under_maxmemory(start_daemon):
    d = start_daemon("--maxmemory", "8mb")
    c = d.raw()
    oom = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"
    value = b"v" * 1000
    for n in range(20000):
        reply = c.command("RPUSH", "l", value)
        if reply == oom:
            break
        assert reply == b":%d\r\n" % (n + 1)
    else:
        pytest.fail("8 MB held 20 MB of list")
    llen = c.command("LLEN", "l")
    assert llen == b":%d\r\n" % n
    # Every growth refused, nothing changed; reads and shrinking work.
    for cmd in (("LPUSH", "l", value), ("LPUSH", "new", value),
                ("LINSERT", "l", "BEFORE", value, value),
                ("LSET", "l", 0, value * 2),
                ("LMOVE", "l", "new", "LEFT", "LEFT")):
        assert c.command(*cmd) == oom, cmd
    assert c.command("LLEN", "l") == llen
    assert c.command("EXISTS", "new") == b":0\r\n"
    assert c.command("LPOP", "l", 2) == b"*2\r\n" + (
        b"$1000\r\n" + value + b"\r\n") * 2
    assert c.command("LTRIM", "l", 0, 99) == b"+OK\r\n"
    assert c.command("LPUSH", "l", value) == b":101\r\n"
    assert c.command("LMOVE", "l", "new", "LEFT", "LEFT") == \
        b"$1000\r\n" + value + b"\r\n"
