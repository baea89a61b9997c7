"""Keyspace notifications (notify-keyspace-events) as Redis 7.0.15 publishes
them: the same commands sent to cellgate and to redis-server, a subscriber
on '__key*__:*' on each, the two message streams compared byte for byte
(channel and payload, in order), under several class sets; a fixed list
covering every command class, blocked clients served, a transaction and a
script, a seeded random stream from the differential suite's grammar,
expiry and eviction; the option's CONFIG SET/GET/REWRITE; and the names
cellgate's own limiter commands publish (docs/commands.md)."""
import os
import random
import threading
import time

import pytest
import redis

import difftest
import harness

PATTERN = "__key*__:*"
END = b"__keyevent@15__:end"        # a marker both streams end with
DEADLINE = 20                       # seconds: a stream that never ends


def events(port, flags, body, pattern=PATTERN):
    """The messages a subscriber on pattern receives while body(client)
    runs on a server whose keys were flushed, under notify-keyspace-events
    flags: [(channel, payload)], up to the END marker."""
    c = redis.Redis(port=port, socket_timeout=harness.IO_TIMEOUT)
    c.flushall()
    c.config_set("notify-keyspace-events", flags)
    p = c.pubsub()
    p.psubscribe(pattern, END)
    for _ in range(2):
        assert p.get_message(timeout=5)["type"] == "psubscribe"
    try:
        body(c)
        c.publish(END, b"end")
        out, deadline = [], time.monotonic() + DEADLINE
        while time.monotonic() < deadline:
            m = p.get_message(timeout=1)
            if m is None or m["type"] != "pmessage":
                continue
            if m["channel"] == END:
                if m["pattern"] == END:
                    return out
                continue
            out.append((m["channel"], m["data"]))
        raise AssertionError("no end marker: %r" % out[-5:])
    finally:
        p.close()
        c.config_set("notify-keyspace-events", "")
        c.close()


def both(cg, ref, flags, body, pattern=PATTERN):
    return (events(cg.port, flags, body, pattern),
            events(ref.port, flags, body, pattern))


def run_all(cmds):
    def body(c):
        for cmd in cmds:
            try:
                c.execute_command(*cmd)
            except redis.ResponseError:
                pass
    return body


# Every class, every event: strings, expiry, keys, lists, sets, sorted sets,
# hashes, the STORE forms' "del", emptied collections' "del", reads of
# missing keys (keymiss) and new keys.
FIXED = [
    ("SET", "s", "1"), ("SET", "s", "2", "EX", "100"), ("SET", "s", "3", "NX"),
    ("SETNX", "s2", "x"), ("SETEX", "s3", "100", "v"), ("PSETEX", "s4", "100000", "v"),
    ("GETSET", "s2", "y"), ("INCR", "n"), ("DECR", "n"), ("INCRBY", "n", "5"),
    ("DECRBY", "n", "2"), ("INCRBYFLOAT", "f", "1.5"), ("APPEND", "s", "x"),
    ("SETRANGE", "s", "3", "zz"), ("SETRANGE", "s", "1", ""), ("GETDEL", "s"),
    ("GETDEL", "nokey"), ("GETEX", "s2", "PX", "100000"), ("GETEX", "s2", "PERSIST"),
    ("GETEX", "s2", "PERSIST"), ("GETEX", "s3", "PXAT", "1"), ("MSET", "m1", "1", "m2", "2"),
    ("MSETNX", "m3", "1", "m4", "2"), ("MSETNX", "m3", "1", "m5", "2"),
    ("EXPIRE", "m1", "100"), ("PEXPIRE", "m1", "1000", "GT"), ("PEXPIRE", "m1", "200000", "GT"), ("EXPIREAT", "m2", "1"),
    ("PEXPIREAT", "m4", "99999999999999"), ("PERSIST", "m4"), ("PERSIST", "m4"),
    ("TTL", "m1"), ("GET", "missing"), ("STRLEN", "missing"),
    ("DEL", "m3", "nokey", "m4"), ("UNLINK", "m1"), ("SET", "r1", "v"),
    ("RENAME", "r1", "r2"), ("SET", "r3", "v"), ("RENAME", "r3", "r2"),
    ("RENAMENX", "r2", "r4"), ("COPY", "r4", "r5"), ("COPY", "r4", "r5", "REPLACE"),
    ("COPY", "r4", "r6", "DB", "2"), ("COPY", "missing", "r7"), ("MOVE", "r5", "1"),
    ("MOVE", "missing", "1"), ("EXISTS", "r4"), ("TYPE", "missing"),
    ("LPUSH", "l", "a", "b", "c"), ("RPUSH", "l", "d"), ("LPUSHX", "l", "e"),
    ("RPUSHX", "nol", "e"), ("LINSERT", "l", "BEFORE", "a", "x"),
    ("LINSERT", "l", "BEFORE", "none", "x"), ("LSET", "l", "0", "y"), ("LREM", "l", "0", "x"),
    ("LREM", "l", "0", "none"), ("LTRIM", "l", "0", "-1"), ("LTRIM", "l", "1", "3"),
    ("LPOP", "l"), ("RPOP", "l", "2"), ("LPOP", "l", "0"), ("RPUSH", "l", "1", "2", "3"),
    ("LMOVE", "l", "l2", "LEFT", "RIGHT"), ("RPOPLPUSH", "l", "l"),
    ("LMOVE", "l", "l2", "RIGHT", "LEFT"), ("LMOVE", "l", "l2", "LEFT", "LEFT"),
    ("LMPOP", "2", "nol", "l2", "RIGHT", "COUNT", "2"), ("LMPOP", "1", "l2", "LEFT"),
    ("LRANGE", "l2", "0", "-1"), ("LRANGE", "nol", "0", "-1"),
    ("SADD", "a", "1", "2", "3"), ("SADD", "a", "1"), ("SADD", "b", "3", "4", "x"),
    ("SREM", "a", "9"), ("SREM", "a", "1"), ("SMOVE", "a", "c", "2"),
    ("SMOVE", "a", "b", "3"), ("SMOVE", "a", "b", "9"), ("SINTERSTORE", "d", "b", "c"),
    ("SINTERSTORE", "d", "b", "nos"), ("SUNIONSTORE", "d", "b", "c"),
    ("SDIFFSTORE", "d", "b", "b"), ("SDIFFSTORE", "e", "b", "c"), ("SPOP", "c"),
    ("SPOP", "e", "0"), ("SADD", "e", "1", "2"), ("SPOP", "e", "10"),
    ("SISMEMBER", "nos", "1"), ("SMEMBERS", "b"),
    ("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"), ("ZADD", "z", "1", "a"),
    ("ZADD", "z", "XX", "5", "e"), ("ZADD", "noz", "XX", "1", "a"),
    ("ZADD", "z", "INCR", "1", "a"), ("ZINCRBY", "z", "2", "b"), ("ZREM", "z", "q"),
    ("ZREM", "z", "a"), ("ZREMRANGEBYSCORE", "z", "100", "200"),
    ("ZREMRANGEBYSCORE", "z", "0", "4"), ("ZADD", "z", "1", "a", "2", "b", "0", "p", "0", "q"),
    ("ZREMRANGEBYRANK", "z", "0", "0"), ("ZREMRANGEBYLEX", "z", "[q", "[q"),
    ("ZPOPMIN", "z"), ("ZPOPMAX", "z", "5"), ("ZPOPMIN", "z"),
    ("ZADD", "z1", "1", "a", "2", "b"), ("ZADD", "z2", "1", "b"),
    ("ZUNIONSTORE", "zu", "2", "z1", "z2"), ("ZINTERSTORE", "zi", "2", "z1", "z2"),
    ("ZDIFFSTORE", "zd", "1", "z1"), ("ZDIFFSTORE", "zd", "2", "z1", "z1"),
    ("ZINTERSTORE", "zu", "2", "z1", "noz"), ("ZRANGESTORE", "zr", "z1", "0", "0"),
    ("ZRANGESTORE", "zr", "z1", "5", "9"), ("ZMPOP", "2", "noz", "z1", "MIN", "COUNT", "5"),
    ("ZSCORE", "noz", "a"), ("ZCARD", "z2"),
    ("HSET", "h", "f", "1", "g", "2"), ("HMSET", "h", "f", "3"), ("HSETNX", "h", "f", "4"),
    ("HSETNX", "h", "k", "4"), ("HINCRBY", "h", "f", "1"), ("HINCRBYFLOAT", "h", "g", "1.5"),
    ("HDEL", "h", "none"), ("HDEL", "h", "f", "g"), ("HDEL", "h", "k"),
    ("HGET", "noh", "f"), ("HGETALL", "noh"),
    ("SET", "w", "x"), ("LPUSH", "w", "a"), ("SWAPDB", "0", "1"), ("SET", "fl", "1"),
    ("FLUSHDB",), ("SET", "fa", "1"), ("FLUSHALL",),
]

FLAG_SETS = ["KEA", "AKEm", "Kl", "Ex", "E$", "Kgn", "Kmn", "Ksz", "Eh",
             "KEg$lshzxetdnm", "g$lshz", ""]


@pytest.fixture(scope="module")
def ref(redis_server):
    return redis_server


@pytest.mark.parametrize("flags", FLAG_SETS)
def test_fixed_commands(server, ref, flags):
    got, want = both(server, ref, flags, run_all(FIXED))
    assert got == want
    if flags in ("", "g$lshz"):
        assert got == []            # neither K nor E: nothing published


def blocked_pops(c, port):
    """A client blocked on each kind of blocking pop, served by a push."""
    b = redis.Redis(port=port, socket_timeout=harness.IO_TIMEOUT)
    pops = [(("BLPOP", "bl", "nob", "10"), ("RPUSH", "bl", "x", "y")),
            (("BRPOP", "br", "10"), ("LPUSH", "br", "x")),
            (("BLMOVE", "bm", "bd", "LEFT", "RIGHT", "10"), ("RPUSH", "bm", "x")),
            (("BRPOPLPUSH", "bq", "bq2", "10"), ("RPUSH", "bq", "x")),
            (("BLMPOP", "10", "1", "bp", "RIGHT", "COUNT", "5"), ("RPUSH", "bp", "1", "2")),
            (("BZPOPMIN", "bz", "10"), ("ZADD", "bz", "1", "x")),
            (("BZPOPMAX", "bx", "10"), ("ZADD", "bx", "1", "x", "2", "y")),
            (("BZMPOP", "10", "1", "by", "MIN"), ("ZADD", "by", "1", "x"))]
    for pop, push in pops:
        t = threading.Thread(target=b.execute_command, args=pop)
        t.start()
        assert harness.wait_until(
            lambda: c.info("clients")["blocked_clients"] == 1, 10)
        c.execute_command(*push)
        t.join(10)
        assert not t.is_alive()
    b.close()


def transaction_and_script(c):
    p = c.pipeline(transaction=True)
    p.set("t1", "1").lpush("t2", "a").delete("t1").incr("t3").rpop("t2")
    p.execute()
    c.eval("redis.call('set', KEYS[1], 'v') redis.call('del', KEYS[1]) "
           "redis.call('sadd', KEYS[2], 'a') redis.call('srem', KEYS[2], 'a') "
           "redis.call('get', 'nothing') return 1", 2, "e1", "e2")
    p = c.pipeline(transaction=True)
    p.blpop("t4", 0).lpush("t4", "a").blpop("t4", 0)
    p.execute()


@pytest.mark.parametrize("flags", ["KEA", "Kmn"])
def test_blocked_clients_transactions_scripts(server, ref, flags):
    got, want = both(server, ref, flags,
                     lambda c: (blocked_pops(c, c.connection_pool
                                             .connection_kwargs["port"]),
                                transaction_and_script(c)))
    assert got == want
    assert len(got) > 20 if flags == "KEA" else got


def random_stream(seed, n):
    """n requests from the differential suite's grammar (difftest.py), but
    for the commands whose effect is random (SPOP, RANDOMKEY...), may block
    or open a transaction, scripts and scans."""
    skip = {"SPOP", "SRANDMEMBER", "ZRANDMEMBER", "HRANDFIELD", "RANDOMKEY",
            "MULTI", "EXEC", "DISCARD", "WATCH", "UNWATCH", "KEYS", "SCAN",
            "HSCAN", "ZSCAN", "SSCAN", "EVAL", "EVALSHA", "SCRIPT LOAD",
            "SCRIPT EXISTS", "SCRIPT FLUSH"}
    grammar = [c for c in difftest.GRAMMAR
               if c.redis and not c.blocking and c.name not in skip]
    weights = [c.weight for c in grammar]
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        cmd = rng.choices(grammar, weights)[0]
        g = difftest.Gen(rng)
        args = cmd.gen(g)
        out.append(cmd.words + args)
        if g.past and cmd.name == "SET" and len(args) > 0:
            # read a key set with a past time at once: Redis's active
            # expiry would otherwise take it at a moment of its own
            out.append([b"EXISTS", args[0]])
    return out


def run_pipelined(cmds):
    def body(c):
        for i in range(0, len(cmds), 50):
            p = c.pipeline(transaction=False)
            for cmd in cmds[i:i + 50]:
                p.execute_command(*cmd)
            p.execute(raise_on_error=False)
        c.execute_command("SELECT", "0")
    return body


def test_random_stream(server, ref):
    cmds = random_stream(37, 2000)
    got, want = both(server, ref, "KEg$lshzxetdnm", run_pipelined(cmds))
    assert len(want) > 1000
    for i, (a, b) in enumerate(zip(got, want)):
        assert a == b, "message %d differs (%r): %r" % (i, b, got[max(0, i - 5):i + 5])
    assert len(got) == len(want)


def expiring(c):
    for k in ("x1", "x2"):
        c.set(k, "v", px=30)
    c.hset("x3", "f", "v")
    c.pexpire("x3", 30)
    time.sleep(0.1)
    c.get("x1")                     # lazily, on access
    assert harness.wait_until(lambda: c.dbsize() == 0, 10)


def test_expired(server, ref):
    """x1 expires on access, x2 and x3 by the wheel (Redis: its active
    expiry): the same messages per key (which of the two by itself goes
    first is each server's timing)."""
    got, want = both(server, ref, "KEA", expiring)
    for key in (b"x1", b"x2", b"x3"):
        assert [m for m in got if key in m] == [m for m in want if key in m]
    assert (b"__keyevent@0__:expired", b"x2") in got


def evicting(c):
    c.config_set("maxmemory-policy", "volatile-ttl")
    # The victim covers more than the write needs counting its query
    # buffer (used_memory holds the 250 kB request while it is admitted):
    # a smaller one left cellgate nothing to evict that would suffice.
    c.set("victim", b"v" * 600000, px=10000000)
    used = int(c.info("memory")["used_memory"])
    try:
        c.config_set("maxmemory", used + 100000)
        c.set("big", b"b" * 250000)
        c.ping()                    # Redis evicts before its next command
    finally:
        c.config_set("maxmemory", 0)
    assert c.exists("victim") == 0


def test_evicted(server, ref):
    """Under maxmemory the key closest to expiring goes: "evicted" (Redis
    evicts before the command after the write, cellgate when it admits
    the write, so the evictions alone are compared)."""
    got, want = both(server, ref, "Ee", evicting)
    assert got == want == [(b"__keyevent@0__:evicted", b"victim")]


CONFIG_VALUES = ["KEA", "AKE", "g$lshzxetd", "g$lshzxetKE", "$lshzxegtdnmKE", "Kdn$",
                 "AKEn", "m", "Em", "x", "", "KEA n", "KQ", "K E", "A", "nA"]


def kept(c):
    v = c.execute_command("CONFIG", "GET", "notify-keyspace-events")
    v = v[1] if isinstance(v, list) else v["notify-keyspace-events"]
    return v.decode() if isinstance(v, bytes) else v


def test_config_set_get(server, ref):
    cg, rs = server.client(), ref.client()
    for v in CONFIG_VALUES:
        answers = []
        for c in (cg, rs):
            try:
                answers.append(c.config_set("notify-keyspace-events", v))
            except redis.ResponseError as e:
                answers.append(str(e))
            answers.append(kept(c))
        assert answers[:2] == answers[2:], v
    for c in (cg, rs):
        c.config_set("notify-keyspace-events", "")


def test_config_rewrite_and_file(start_daemon, tmp_path):
    """The value a file gives, CONFIG SET's, and the line CONFIG REWRITE
    writes: Redis's canonical text."""
    lines = {}
    for name in ("cellgate", "redis"):
        conf = tmp_path / (name + ".conf")
        conf.write_text("notify-keyspace-events Elg\n")
        if name == "cellgate":
            d = start_daemon(config_file=str(conf))
        else:
            d = harness.RedisServer(str(tmp_path / "r"), config_file=str(conf)).start()
        try:
            c = d.client()
            assert kept(c) == "glE"
            c.config_set("notify-keyspace-events", "KEA")
            assert c.config_rewrite()
            lines[name] = [l for l in conf.read_text().splitlines()
                           if l.startswith("notify-keyspace-events")]
        finally:
            if name == "redis":
                d.stop()
    assert lines["cellgate"] == lines["redis"] == ['notify-keyspace-events "AKE"']


def test_limiter_commands(server):
    """cellgate's own commands publish their names in class g (with n for
    a new key), on every call that writes the key's state."""
    def body(c):
        c.execute_command("CL.THROTTLE", "ct", 5, 10, 60)
        c.execute_command("CL.THROTTLE", "ct", 5, 10, 60, 1, "PEEK")
        c.execute_command("GCRA", "gc", 5, 10, 60)
        c.execute_command("RL.FIXED", "fx", 10, 60)
        c.execute_command("RL.FIXED", "fx", 10, 60, "PEEK")
        c.execute_command("RL.SLIDING", "sl", 10, 60)
        c.execute_command("INCREX", "ix", "BYINT", 1)
        c.execute_command("RL.LOG", "lg", 10, 60)
        c.execute_command("RL.TIERS", "tr", 10, 60)
    got = events(server.port, "KEgn", body, "__keyspace@*")
    assert got == [(b"__keyspace@0__:" + k, e) for k, e in [
        (b"ct", b"new"), (b"ct", b"cl.throttle"), (b"gc", b"new"), (b"gc", b"gcra"),
        (b"fx", b"new"), (b"fx", b"rl.fixed"), (b"sl", b"new"), (b"sl", b"rl.sliding"),
        (b"ix", b"new"), (b"ix", b"increx"), (b"lg", b"new"), (b"lg", b"rl.log"),
        (b"tr", b"new"), (b"tr", b"rl.tiers")]]
    assert events(server.port, "Kl", body) == []
