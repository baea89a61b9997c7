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
from test_journal import fingerprint, kill9, start

BLOCKED = re.compile(rb"blocked_clients:(\d+)")


def blocked_count(ctl):
    return int(BLOCKED.search(ctl.command("INFO", "clients")).group(1))


def wait_blocked(ctl, n):
    """Until the server counts n clients blocked (bounded)."""
    assert harness.wait_until(lambda: blocked_count(ctl) == n, 10), \
        "blocked_clients never reached %d" % n


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
