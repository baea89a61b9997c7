"""The blocking pops (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN,
BZPOPMAX, BZMPOP) and their non-blocking kin (RPOPLPUSH, LMPOP, ZMPOP) side
by side with Debian's redis-server 7.0.15.

A driver opens several clients on each server and plays one script on
both: clients block on keys in a set order (each block is seen in INFO's
blocked_clients before the next step, so the order is the script's), other
clients push, and every reply each client gets is recorded; the two
servers' transcripts must be equal byte for byte: who was served, in which
order, with what. Redis's tests/unit/type/list.tcl and zset.tcl blocking
cases are the list of behaviours covered (FIFO service, several keys, a
BLMOVE feeding another waiter, the wrong type at the destination, MULTI,
scripts, SWAPDB/MOVE/RENAME, the selected database, timeouts, CLIENT
UNBLOCK, CLIENT KILL, a client that goes). Then what only cellgate can
show: the journal after kill -9 and a replica hold the pops' effects."""
import re
import time

import pytest

import harness
import redis_cases
from test_journal import fingerprint, kill9, start

BLOCKED = re.compile(rb"blocked_clients:(\d+)")


def blocked_count(ctl):
    return int(BLOCKED.search(ctl.command("INFO", "clients")).group(1))


def wait_blocked(ctl, n):
    """Until the server counts n clients blocked (bounded)."""
    assert harness.wait_until(lambda: blocked_count(ctl) == n, 10,
                              interval=0.002), "blocked_clients never reached %d" % n


def play(port, steps, nclients=4):
    """The transcript of steps on one server: a list of (client, reply).

    ("call", i, *args): client i sends and reads its reply;
    ("block", i, *args): client i sends a command that blocks: the step
      ends once the server counts one more blocked client;
    ("send", i, *args): client i sends, nothing awaited;
    ("read", i): the next reply client i got (a blocked one's answer);
    ("close", i): client i goes; ("settle", n): until n are blocked."""
    conns = [harness.RawConn(port) for _ in range(nclients)]
    ctl = harness.RawConn(port)
    out = []
    try:
        ctl.command("FLUSHALL")
        for step in steps:
            kind, args = step[0], step[1:]
            if kind == "call":
                reply = conns[args[0]].command(*args[1:])
                # HELLO's answer holds the client's id, which differs.
                hello = args[1].upper() == "HELLO"
                out.append((args[0], reply[:1] if hello else reply))
            elif kind == "block":
                before = blocked_count(ctl)
                conns[args[0]].send(harness.resp_command(*args[1:]))
                wait_blocked(ctl, before + 1)
            elif kind == "send":
                conns[args[0]].send(harness.resp_command(*args[1:]))
            elif kind == "read":
                out.append((args[0], conns[args[0]].reply_bytes(timeout=10)))
            elif kind == "close":
                conns[args[0]].close()
            elif kind == "settle":
                wait_blocked(ctl, args[0])
            else:
                raise AssertionError(kind)
        out.append(("blocked", blocked_count(ctl)))
    finally:
        for c in conns + [ctl]:
            c.close()
    return out


SCRIPTS = {
    "fifo": [
        ("block", 0, "BLPOP", "k", "0"), ("block", 1, "BLPOP", "k", "0"),
        ("block", 2, "BRPOP", "k", "0"),
        ("call", 3, "RPUSH", "k", "a", "b"), ("read", 0), ("read", 1),
        ("call", 3, "LPUSH", "k", "c", "d"), ("read", 2),
        ("call", 3, "LRANGE", "k", "0", "-1")],
    "several-keys": [
        ("block", 0, "BLPOP", "k1", "k2", "k1", "0"),
        ("block", 1, "BRPOP", "k2", "0"), ("block", 2, "BLPOP", "k3", "k2", "0"),
        ("call", 3, "RPUSH", "k2", "x", "y"), ("read", 0), ("read", 1),
        ("call", 3, "RPUSH", "k3", "z"), ("read", 2), ("call", 3, "EXISTS", "k2")],
    "blmove-chain": [
        ("block", 0, "BLMOVE", "src", "dst", "LEFT", "RIGHT", "0"),
        ("block", 1, "BRPOPLPUSH", "dst", "dst2", "0"),
        ("block", 2, "BLPOP", "dst2", "0"),
        ("call", 3, "RPUSH", "src", "v", "w"), ("read", 0), ("read", 1), ("read", 2),
        ("call", 3, "LRANGE", "src", "0", "-1"), ("call", 3, "KEYS", "*")],
    "blmove-rotate-and-sides": [
        ("block", 0, "BLMOVE", "r", "r", "RIGHT", "LEFT", "0"),
        ("call", 3, "RPUSH", "r", "1"), ("read", 0),
        ("block", 1, "BLMOVE", "e", "d", "right", "left", "0"),
        ("call", 3, "RPUSH", "e", "1", "2", "3"), ("read", 1),
        ("call", 3, "LRANGE", "e", "0", "-1"), ("call", 3, "LRANGE", "d", "0", "-1")],
    "wrongtype-destination": [
        ("block", 0, "BRPOPLPUSH", "s", "d", "0"), ("block", 1, "BLPOP", "s", "0"),
        ("call", 3, "SET", "d", "str"), ("call", 3, "RPUSH", "s", "v"),
        ("read", 0), ("read", 1), ("call", 3, "EXISTS", "s")],
    "multi-push-then-pop": [
        ("block", 0, "BLPOP", "k", "0"),
        ("call", 3, "MULTI"), ("call", 3, "RPUSH", "k", "a"), ("call", 3, "LPOP", "k"),
        ("call", 3, "EXEC"), ("call", 3, "RPUSH", "k2", "x"),
        ("call", 3, "MULTI"), ("call", 3, "RPUSH", "k", "b", "c"),
        ("call", 3, "RPUSH", "k", "d"), ("call", 3, "EXEC"), ("read", 0),
        ("call", 3, "LRANGE", "k", "0", "-1")],
    "multi-does-not-block": [
        ("call", 0, "MULTI"), ("call", 0, "BLPOP", "n", "0"), ("call", 0, "BRPOP", "n", "0"),
        ("call", 0, "BLMOVE", "n", "d", "LEFT", "LEFT", "0"),
        ("call", 0, "BRPOPLPUSH", "n", "d", "0"), ("call", 0, "BLMPOP", "0", "1", "n", "LEFT"),
        ("call", 0, "BZPOPMIN", "n", "0"), ("call", 0, "BZPOPMAX", "n", "0"),
        ("call", 0, "BZMPOP", "0", "1", "n", "MAX"), ("call", 0, "EXEC")],
    "type-of-the-ready-key": [
        ("block", 0, "BLPOP", "k", "0"), ("block", 1, "BZPOPMIN", "k", "0"),
        ("block", 2, "BZMPOP", "0", "1", "k", "MAX", "COUNT", "5"),
        ("call", 3, "ZADD", "k", "1", "a", "2", "b", "3", "c"), ("read", 1), ("read", 2),
        ("call", 3, "RPUSH", "k", "x"), ("read", 0)],
    "zsets": [
        ("block", 0, "BZPOPMAX", "z1", "z2", "0"), ("block", 1, "BZPOPMIN", "z2", "0"),
        ("block", 2, "BZMPOP", "0", "2", "z3", "z2", "MIN", "COUNT", "2"),
        ("call", 3, "ZADD", "z2", "1.5", "a", "2", "b", "-3", "c", "7", "d", "inf", "e"),
        ("read", 0), ("read", 1), ("read", 2), ("call", 3, "ZRANGE", "z2", "0", "-1",
                                                "WITHSCORES")],
    "blmpop-count": [
        ("block", 0, "BLMPOP", "0", "2", "k1", "k2", "RIGHT", "COUNT", "2"),
        ("block", 1, "BLMPOP", "0", "1", "k2", "LEFT"),
        ("block", 2, "BLMPOP", "0", "1", "k2", "LEFT", "COUNT", "10"),
        ("call", 3, "RPUSH", "k2", "a", "b", "c", "d"), ("read", 0), ("read", 1),
        ("read", 2), ("call", 3, "EXISTS", "k2")],
    "script-push": [
        ("block", 0, "BLPOP", "k", "0"), ("block", 1, "BLPOP", "k", "0"),
        ("call", 3, "EVAL", "redis.call('rpush', KEYS[1], 'a', 'b');"
         "return redis.call('lpop', KEYS[1])", "1", "k"),
        ("read", 0), ("call", 3, "EVAL", "return redis.call('blmpop', 0, 1, KEYS[1], "
                      "'left')", "1", "k"),
        ("call", 3, "EVAL", "return redis.pcall('blpop', KEYS[1], 0)", "1", "k"),
        ("call", 3, "EVAL", "return redis.pcall('bzpopmax', KEYS[1], 0)", "1", "k"),
        ("call", 3, "EVAL", "return redis.call('bzmpop', 0, 1, KEYS[1], 'min')", "1",
         "k"), ("call", 3, "RPUSH", "k", "c"), ("read", 1)],
    "databases": [
        ("call", 0, "SELECT", "1"), ("block", 0, "BLPOP", "k", "0"),
        ("call", 3, "RPUSH", "k", "db0"), ("call", 3, "LLEN", "k"),
        ("call", 3, "MOVE", "k", "1"), ("read", 0),
        ("block", 0, "BLPOP", "k", "0"), ("call", 3, "RPUSH", "k", "swapped"),
        ("call", 3, "SWAPDB", "0", "1"), ("read", 0),
        ("block", 0, "BLPOP", "k", "0"), ("call", 3, "SELECT", "1"),
        ("call", 3, "RPUSH", "tmp", "renamed"), ("call", 3, "RENAME", "tmp", "k"),
        ("read", 0), ("block", 0, "BZPOPMIN", "z", "0"),
        ("call", 3, "ZADD", "z0", "1", "copied"), ("call", 3, "COPY", "z0", "z"),
        ("read", 0)],
    "pipeline-after-a-block": [
        ("send", 0, "BLPOP", "k", "0"), ("send", 0, "PING"), ("send", 0, "LLEN", "k"),
        ("settle", 1), ("call", 3, "RPUSH", "k", "a", "b"), ("read", 0), ("read", 0),
        ("read", 0)],
    "timeouts": [
        ("send", 0, "BLPOP", "k", "0.05"), ("read", 0),
        ("send", 0, "BZPOPMIN", "k", ".01"), ("read", 0),
        ("send", 0, "BLMOVE", "k", "d", "LEFT", "LEFT", "0.02"), ("read", 0),
        ("send", 0, "BRPOPLPUSH", "k", "d", "0.001"), ("read", 0),
        ("send", 0, "BLMPOP", "0.01", "1", "k", "LEFT"), ("read", 0),
        ("send", 0, "BZMPOP", "1e-9", "1", "k", "MIN"), ("read", 0),
        ("call", 0, "HELLO", "3"), ("send", 0, "BLPOP", "k", "0.01"), ("read", 0),
        ("send", 0, "BLMOVE", "k", "d", "LEFT", "LEFT", "0.01"), ("read", 0),
        ("send", 0, "BZMPOP", "0.01", "1", "k", "MIN"), ("read", 0)],
    "resp3-served": [
        ("call", 0, "HELLO", "3"), ("call", 1, "HELLO", "3"),
        ("block", 0, "BZPOPMIN", "z", "0"), ("block", 1, "BZMPOP", "0", "1", "z", "MAX",
                                             "COUNT", "3"),
        ("call", 3, "ZADD", "z", "1", "a", "2.5", "b", "3", "c"), ("read", 0), ("read", 1),
        ("block", 0, "BLMPOP", "0", "1", "l", "LEFT", "COUNT", "2"),
        ("call", 3, "RPUSH", "l", "x"), ("read", 0)],
    "unblock": [
        ("block", 0, "BLPOP", "k", "0"), ("block", 1, "BZPOPMIN", "k", "100"),
        ("call", 3, "CLIENT", "UNBLOCK", "CLIENTID0", "ERROR"), ("read", 0),
        ("call", 3, "CLIENT", "UNBLOCK", "CLIENTID1"), ("read", 1),
        ("call", 3, "CLIENT", "UNBLOCK", "CLIENTID1", "TIMEOUT"),
        ("call", 0, "PING"), ("call", 1, "PING")],
    "kill-and-disconnect": [
        ("block", 0, "BLPOP", "k", "0"), ("block", 1, "BLPOP", "k", "0"),
        ("block", 2, "BLPOP", "k", "0"),
        ("call", 3, "CLIENT", "KILL", "ID", "CLIENTID0"), ("close", 1), ("settle", 1),
        ("call", 3, "RPUSH", "k", "a", "b"), ("read", 2), ("call", 3, "LRANGE", "k", "0",
                                                             "-1")],
    "pause-write": [
        ("call", 3, "CLIENT", "PAUSE", "100000", "WRITE"),
        ("send", 0, "BLPOP", "k", "0"), ("send", 1, "RPUSH", "k", "x"),
        ("call", 2, "LLEN", "k"), ("call", 3, "CLIENT", "UNPAUSE"), ("read", 0),
        ("read", 1), ("call", 3, "LLEN", "k")],
}


@pytest.fixture(scope="module")
def both(redis_server, module_daemon):
    return redis_server, module_daemon


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_served_as_redis_serves(both, name):
    ref, ours = both
    steps = SCRIPTS[name]
    got = [play_with_ids(s.port, steps) for s in (ref, ours)]
    assert got[1] == got[0]


def play_with_ids(port, steps):
    """play(), with each CLIENTIDn argument the id client n has: ids are
    numbered from the next id the server gives (asked on a throwaway
    connection), as play() connects its clients in order right after."""
    probe = harness.RawConn(port)
    first = int(probe.command("CLIENT", "ID")[1:-2]) + 1
    probe.close()
    fixed = [tuple(str(first + int(a[8:])) if isinstance(a, str) and
                   a.startswith("CLIENTID") else a for a in s) for s in steps]
    return play(port, fixed)


# ---- the non-blocking forms and every error, byte for byte -----------------

ERRORS = [
    ["BLPOP", "k", "-1"], ["BLPOP", "k", "abc"], ["BLPOP", "k", "1e400"],
    ["BLPOP", "k", "inf"], ["BLPOP", "k", "nan"], ["BLPOP", "k", " 1"],
    ["BLPOP", "k", ""], ["BRPOP", "k"], ["BLMOVE", "k", "d", "UP", "LEFT", "0"],
    ["BLMOVE", "k", "d", "LEFT", "LEFT", "x"], ["BRPOPLPUSH", "k", "d", "-0.5"],
    ["BZPOPMIN", "k", "-1"], ["BZPOPMAX", "k", "x"], ["BLMPOP", "0", "0", "x", "LEFT"],
    ["BLMPOP", "-1", "1", "x", "LEFT"], ["BLMPOP", "0.01", "1", "x", "LEFT", "COUNT", "0"],
    ["BLMPOP", "a", "1", "x", "LEFT"], ["BLMPOP", "0.01", "a", "x", "LEFT"],
    ["BLMPOP", "a", "1", "x", "MIDDLE"], ["BZMPOP", "a", "2", "x", "MIN"],
    ["LMPOP", "0", "x", "LEFT"], ["LMPOP", "-1", "x", "LEFT"], ["LMPOP", "a", "x", "LEFT"],
    ["LMPOP", "3", "x", "LEFT"], ["LMPOP", "1000000000000", "x", "LEFT"],
    ["LMPOP", "9223372036854775807", "x", "LEFT"], ["LMPOP", "1", "x", "MIDDLE"],
    ["LMPOP", "1", "x", "LEFT", "COUNT"], ["LMPOP", "1", "x", "LEFT", "COUNT", "-1"],
    ["LMPOP", "1", "x", "LEFT", "COUNT", "1", "COUNT", "2"], ["LMPOP", "1", "x", "k", "LEFT"],
    ["ZMPOP", "1", "x", "MIDDLE"], ["ZMPOP", "1", "x", "min", "count", "0"],
    ["ZMPOP", "1", "x", "min", "foo"], ["ZMPOP", "1", "z"], ["RPOPLPUSH", "x"],
    ["CLIENT", "UNBLOCK", "999999"], ["CLIENT", "UNBLOCK", "999999", "TIMEOUT"],
    ["CLIENT", "UNBLOCK", "999999", "foo"], ["CLIENT", "UNBLOCK", "abc"],
    ["CLIENT", "UNBLOCK", "1", "ERROR", "x"],
]

FORMS = [
    ["RPUSH", "l", "a", "b", "c"], ["ZADD", "z", "1", "a", "2", "b", "3", "c", "-1.5", "d"],
    ["SET", "str", "v"],
    ["LMPOP", "1", "l", "left"], ["LMPOP", "2", "nokey", "l", "RIGHT", "COUNT", "5"],
    ["LMPOP", "1", "nokey", "LEFT"], ["LMPOP", "2", "nokey", "str", "LEFT"],
    ["LMPOP", "2", "l", "str", "LEFT"], ["ZMPOP", "1", "z", "MIN"],
    ["ZMPOP", "2", "nokey", "z", "max", "COUNT", "2"], ["ZMPOP", "1", "z", "MAX", "COUNT", "9"],
    ["EXISTS", "z"], ["ZMPOP", "1", "str", "MIN"], ["ZMPOP", "1", "nokey", "MIN"],
    ["RPUSH", "l", "1", "2", "3"], ["RPOPLPUSH", "l", "l2"], ["RPOPLPUSH", "l", "l"],
    ["RPOPLPUSH", "nokey", "l"], ["RPOPLPUSH", "str", "l"], ["RPOPLPUSH", "l", "str"],
    ["LRANGE", "l", "0", "-1"], ["LRANGE", "l2", "0", "-1"],
    ["BLPOP", "nokey", "l", "0"], ["BRPOP", "str", "l", "0"], ["BRPOP", "l", "str", "0"],
    ["RPUSH", "l", "p", "q", "r"], ["BLMOVE", "l", "l3", "RIGHT", "LEFT", "0"], ["BLMOVE", "l", "str", "LEFT", "LEFT", "0"],
    ["BLMOVE", "str", "l", "LEFT", "LEFT", "0"], ["BRPOPLPUSH", "l2", "l3", "0"],
    ["ZADD", "z", "1", "a", "2", "b"], ["BZPOPMIN", "nokey", "z", "0"],
    ["BZPOPMAX", "z", "0"], ["BZPOPMIN", "str", "0"],
    ["RPUSH", "l", "x", "y"], ["BLMPOP", "0", "2", "nokey", "l", "LEFT", "COUNT", "1"],
    ["ZADD", "z", "5", "e", "6", "f"], ["BZMPOP", "0", "1", "z", "MAX", "COUNT", "10"],
    ["EVAL", "return redis.call('blpop', KEYS[1], 0)", "1", "k"],
    ["EVAL", "return redis.pcall('brpoplpush', KEYS[1], 'd', 0)", "1", "k"],
    ["EVAL", "return redis.pcall('blmove', KEYS[1], 'd', 'left', 'left', 0)", "1", "k"],
    ["EVAL", "return redis.pcall('brpop', KEYS[1], 0)", "1", "k"],
    ["EVAL", "return redis.pcall('bzpopmin', KEYS[1], 0)", "1", "k"],
    ["EVAL", "return redis.call('blmpop', 0, 1, KEYS[1], 'left')", "1", "k"],
    ["EVAL", "return redis.call('bzmpop', 0, 1, KEYS[1], 'min')", "1", "k"],
    ["EVAL", "redis.call('rpush', KEYS[1], 'a'); "
     "return redis.call('blmpop', 0, 1, KEYS[1], 'left')", "1", "k"],
    ["COMMAND", "INFO", "blpop", "brpop", "blmove", "brpoplpush", "blmpop", "bzpopmin",
     "bzpopmax", "bzmpop", "lmpop", "zmpop", "rpoplpush"],
    ["COMMAND", "GETKEYS", "blmpop", "0", "2", "a", "b", "left"],
    ["COMMAND", "GETKEYS", "zmpop", "2", "a", "b", "min"],
    ["COMMAND", "GETKEYS", "blpop", "a", "b", "0"],
    ["COMMAND", "GETKEYSANDFLAGS", "brpoplpush", "a", "b", "0"],
]


def conversation(port, proto, steps):
    conn = harness.RawConn(port)
    try:
        conn.command("FLUSHALL")
        if proto == 3:
            conn.command("HELLO", "3")
        return [conn.command(*s) for s in steps]
    finally:
        conn.close()


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("steps", [ERRORS, FORMS], ids=["errors", "forms"])
def test_same_bytes_as_redis(both, steps, proto):
    ref, ours = both
    assert conversation(ours.port, proto, steps) == conversation(ref.port, proto, steps)


# ---- what INFO and CLIENT LIST show -----------------------------------------

def test_info_and_client_list_show_the_blocked(both):
    for s in both:
        waiter, timed, ctl = (harness.RawConn(s.port) for _ in range(3))
        try:
            ctl.command("FLUSHALL")
            wid = int(waiter.command("CLIENT", "ID")[1:-2])
            tid = int(timed.command("CLIENT", "ID")[1:-2])
            waiter.send(harness.resp_command("BLPOP", "k", "0"))
            wait_blocked(ctl, 1)
            timed.send(harness.resp_command("BZPOPMIN", "z", "100"))
            wait_blocked(ctl, 2)
            info = ctl.command("INFO", "clients")
            assert b"blocked_clients:2\r\n" in info
            assert b"clients_in_timeout_table:1\r\n" in info
            line = [x for x in ctl.command("CLIENT", "LIST", "ID", wid).split(b"\n")
                    if b"id=%d " % wid in x][0]
            assert b" flags=b " in line and b" cmd=blpop " in line
            ctl.command("RPUSH", "k", "a")
            assert waiter.reply_bytes() == b"*2\r\n$1\r\nk\r\n$1\r\na\r\n"
            assert b" flags=N " in ctl.command("CLIENT", "LIST", "ID", wid)
            ctl.command("CLIENT", "UNBLOCK", tid)
            assert timed.reply_bytes() == b"*-1\r\n"
            info = ctl.command("INFO", "clients")
            assert b"blocked_clients:0\r\n" in info
            assert b"clients_in_timeout_table:0\r\n" in info
        finally:
            for c in (waiter, timed, ctl):
                c.close()


# ---- what only cellgate shows: the journal, a replica, I/O threads ---------

def serve_some(d):
    """Blocked clients of every kind served by pushes: the pops' effects
    (and a BLMOVE's push) are what the journal and a replica must hold."""
    c, w = d.raw(), [d.raw() for _ in range(4)]
    c.command("RPUSH", "keep", "k1", "k2")
    c.command("ZADD", "zkeep", "1", "a", "2", "b")
    w[0].send(harness.resp_command("BLPOP", "q", "0"))
    w[1].send(harness.resp_command("BLMOVE", "src", "dst", "LEFT", "RIGHT", "0"))
    w[2].send(harness.resp_command("BZPOPMIN", "z", "0"))
    w[3].send(harness.resp_command("BLMPOP", "0", "1", "m", "RIGHT", "COUNT", "2"))
    wait_blocked(c, 4)
    c.command("RPUSH", "q", "1", "2", "3")
    c.command("RPUSH", "src", "moved", "stays")
    c.command("ZADD", "z", "1", "low", "2", "high")
    c.command("MULTI")
    c.command("RPUSH", "m", "a", "b", "c")
    c.command("EXEC")
    replies = [x.reply_bytes() for x in w]
    assert replies == [b"*2\r\n$1\r\nq\r\n$1\r\n1\r\n", b"$5\r\nmoved\r\n",
                       b"*3\r\n$1\r\nz\r\n$3\r\nlow\r\n$1\r\n1\r\n",
                       b"*2\r\n$1\r\nm\r\n*2\r\n$1\r\nc\r\n$1\r\nb\r\n"]
    return c


def test_journal_after_kill9_holds_the_pops(start_daemon, tmp_path):
    work = str(tmp_path / "data")
    d = start(start_daemon, work)
    c = serve_some(d)
    assert c.command("LRANGE", "q", "0", "-1") == b"*2\r\n$1\r\n2\r\n$1\r\n3\r\n"
    want = fingerprint(d)
    kill9(d)
    d2 = start(start_daemon, work)
    assert fingerprint(d2) == want


def test_a_replica_ends_equal_and_refuses_blocking_pops(start_daemon):
    p = start_daemon(fakeclock=True, name="primary")
    r = start_daemon(fakeclock=True, name="replica")
    r.clock.set(p.clock.ns)
    rc = r.raw()
    assert rc.command("REPLICAOF", "127.0.0.1", p.port) == b"+OK\r\n"
    assert harness.wait_until(
        lambda: r.info("replication").get("master_link_status") == "up", 10)
    serve_some(p)
    want = p.info("replication")["master_repl_offset"]
    assert harness.wait_until(
        lambda: r.info("replication")["slave_repl_offset"] == want, 10)
    assert fingerprint(r) == fingerprint(p)
    # As Redis: a blocking pop is a write, which a read-only replica
    # refuses (Redis answers the same text).
    assert rc.command("BLPOP", "q", "0").startswith(b"-READONLY ")


def test_io_threads_deliver_the_served_reply(start_daemon):
    d = start_daemon("--io-threads", "3")
    ctl = d.raw()
    waiters = [d.raw() for _ in range(6)]
    for i, w in enumerate(waiters):
        w.send(harness.resp_command("BLPOP", "k", "0") + harness.resp_command("PING"))
        wait_blocked(ctl, i + 1)
    ctl.command("RPUSH", "k", *[str(i) for i in range(6)])
    for i, w in enumerate(waiters):
        assert w.reply_bytes() == b"*2\r\n$1\r\nk\r\n$1\r\n%d\r\n" % i
        assert w.reply_bytes() == b"+PONG\r\n"
    waiters[0].send(harness.resp_command("BRPOP", "k", "0.01"))
    assert waiters[0].reply_bytes() == b"*-1\r\n"
    waiters[1].send(harness.resp_command("BRPOP", "k", "0"))
    wait_blocked(ctl, 1)
    waiters[1].close()
    wait_blocked(ctl, 0)
    # A reply pipelined before the pop goes out while it waits (its
    # socket moves to the main loop), and what follows runs after it.
    w = waiters[2]
    w.send(harness.resp_command("PING") + harness.resp_command("BLPOP", "k", "0") +
           harness.resp_command("PING"))
    assert w.reply_bytes() == b"+PONG\r\n"
    wait_blocked(ctl, 1)
    ctl.command("RPUSH", "k", "last")
    assert w.reply_bytes() == b"*2\r\n$1\r\nk\r\n$4\r\nlast\r\n"
    assert w.reply_bytes() == b"+PONG\r\n"
    # Stopped with clients waiting (one with a timer): a clean exit (the
    # harness checks the exit code and the sanitizers' reports).
    waiters[3].send(harness.resp_command("BLPOP", "k", "100"))
    waiters[4].send(harness.resp_command("BZPOPMIN", "k", "0"))
    wait_blocked(ctl, 2)


def test_client_unblock_answers_a_wait_as_redis(both):
    """WAIT with no replica waits (for ever with timeout 0): CLIENT UNBLOCK
    answers it with the count a timeout would give, or -UNBLOCKED."""
    for unblock_type, want in ((("TIMEOUT",), b":0\r\n"), (("ERROR",),
                               b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n")):
        got = []
        for s in both:
            w, ctl = harness.RawConn(s.port), harness.RawConn(s.port)
            try:
                wid = int(w.command("CLIENT", "ID")[1:-2])
                w.send(harness.resp_command("WAIT", "1", "0") +
                       harness.resp_command("PING"))
                assert harness.wait_until(
                    lambda: b" flags=b " in ctl.command("CLIENT", "LIST", "ID", wid),
                    10, interval=0.002)
                got.append((ctl.command("CLIENT", "UNBLOCK", wid, *unblock_type),
                            w.reply_bytes(), w.reply_bytes(),
                            ctl.command("CLIENT", "UNBLOCK", wid)))
            finally:
                w.close()
                ctl.close()
        assert got[0] == got[1] == [(b":1\r\n", want, b"+PONG\r\n", b":0\r\n")][0]


@pytest.mark.parametrize("proto", [2, 3])
def test_redis_list_tcl_cases(server, redis_server, proto):
    """Redis 7.0.15's tests/unit/type/list.tcl cases for the blocking pops and
    the moves (redis_tcl/list.cmds): who is served, what each blocked client
    receives and what the keys hold after, as on redis-server."""
    assert redis_cases.run("list.cmds", server.port, redis_server.port, proto) == []
