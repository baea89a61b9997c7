"""MIGRATE between redis-server 7.0 and cellgate, both ways: every type
with its expiry, KEYS, COPY, REPLACE, AUTH and AUTH2 on a target that asks
for a password, the keys gone from the source once the target restored
them (and only those), the errors in Redis's words (the target's own
relayed, a target that is not there, a bad line), what MIGRATE tells
COMMAND GETKEYS, MONITOR and SLOWLOG, and a limiter's state moved between
two cellgates deciding as it would have where it was."""
import random

import pytest

import harness

PASSWORD = "s3cret"


@pytest.fixture
def rd(tmp_path):
    """A redis-server that asks for a password (MIGRATE's AUTH)."""
    ref = harness.RedisServer(str(tmp_path / "redis"))
    ref.start()
    ref.client().config_set("requirepass", PASSWORD)
    c = harness.redis.Redis(port=ref.port, password=PASSWORD,
                            socket_timeout=harness.IO_TIMEOUT)
    yield ref, c
    c.close()
    ref.stop()


@pytest.fixture
def cg(start_daemon):
    d = start_daemon("--requirepass", PASSWORD)
    c = harness.redis.Redis(port=d.port, password=PASSWORD,
                            socket_timeout=harness.IO_TIMEOUT)
    yield d, c
    c.close()


def fill(c, rnd, prefix):
    """One key of every type and size class, some with an expiry: their
    names."""
    big = [("%s-%d" % ("m" * rnd.randint(1, 80), i)) for i in range(300)]
    c.set(prefix + "str", "hello" * rnd.randint(1, 30))
    c.set(prefix + "int", rnd.randint(-2 ** 63, 2 ** 63 - 1))
    c.set(prefix + "ttl", "x", px=rnd.randint(50_000, 90_000))
    c.rpush(prefix + "list", *[rnd.randint(0, 9) for _ in range(5)])
    c.rpush(prefix + "biglist", *big)
    c.hset(prefix + "hash", mapping={"f%d" % i: i for i in range(5)})
    c.hset(prefix + "bighash", mapping={m: m for m in big})
    c.sadd(prefix + "intset", *range(10))
    c.sadd(prefix + "set", *big[:20])
    c.zadd(prefix + "zset", {"a": 1.5, "b": -2, "c": float("inf")})
    c.zadd(prefix + "bigzset", {m: rnd.random() for m in big})
    c.pexpire(prefix + "bighash", 80_000)
    return sorted(k.decode() for k in c.keys(prefix + "*"))


def value(c, key):
    """A key's type, value and whether it expires, read back."""
    t = c.type(key).decode()
    read = {"string": lambda: c.get(key),
            "list": lambda: c.lrange(key, 0, -1),
            "hash": lambda: sorted(c.hgetall(key).items()),
            "set": lambda: sorted(c.smembers(key)),
            "zset": lambda: c.zrange(key, 0, -1, withscores=True)}
    return t, read[t](), c.pttl(key) > 0


@pytest.mark.parametrize("direction", ["redis-to-cellgate", "cellgate-to-redis"])
def test_migrate_keys_moves_every_type_with_its_expiry(rd, cg, direction):
    ref, rc = rd
    d, cc = cg
    (src, dst, dst_port) = ((rc, cc, d.port) if direction == "redis-to-cellgate"
                            else (cc, rc, ref.port))
    keys = fill(src, random.Random(38), "k:")
    before = {k: value(src, k) for k in keys}
    reply = src.execute_command("MIGRATE", "127.0.0.1", dst_port, "", 0, 5000,
                                "AUTH", PASSWORD, "KEYS", *keys, "nokey")
    assert reply == b"OK"
    assert src.keys("*") == []
    assert {k: value(dst, k) for k in keys} == before


def test_migrate_copy_keeps_the_source_and_replace_overwrites(rd, cg):
    ref, rc = rd
    d, cc = cg
    cc.set("a", "1")
    cc.rpush("b", "x", "y")
    rc.set("a", "old")
    args = ("MIGRATE", "127.0.0.1", ref.port, "", 0, 5000,
            "AUTH2", "default", PASSWORD)
    # The target's BUSYKEY for a, relayed; b moved all the same.
    with pytest.raises(harness.redis.ResponseError) as e:
        cc.execute_command(*args, "COPY", "KEYS", "a", "b")
    assert str(e.value) == ("Target instance replied with error: BUSYKEY "
                            "Target key name already exists.")
    assert rc.lrange("b", 0, -1) == [b"x", b"y"] and cc.exists("b") == 1
    assert cc.execute_command(*args, "COPY", "REPLACE", "KEYS", "a", "b") == b"OK"
    assert rc.get("a") == b"1" and cc.get("a") == b"1"
    assert cc.execute_command(*args, "REPLACE", "KEYS", "a", "b") == b"OK"
    assert cc.exists("a", "b") == 0 and rc.get("a") == b"1"


def test_migrate_one_key_into_another_database(rd, cg):
    ref, rc = rd
    d, cc = cg
    cc.sadd("s", "1", "2", "x")
    assert cc.execute_command("MIGRATE", "127.0.0.1", ref.port, "s", 3, 5000,
                              "AUTH", PASSWORD) == b"OK"
    rc.execute_command("SELECT", 3)
    assert sorted(rc.smembers("s")) == [b"1", b"2", b"x"]
    assert cc.execute_command("MIGRATE", "127.0.0.1", ref.port, "s", 3,
                              5000) == b"NOKEY"


ERROR_LINES = [
    ("MIGRATE", "127.0.0.1", "1", "k", "0", "10", "BOGUS"),
    ("MIGRATE", "127.0.0.1", "1", "k", "0", "10", "AUTH"),
    ("MIGRATE", "127.0.0.1", "1", "k", "0", "10", "AUTH2", "u"),
    ("MIGRATE", "127.0.0.1", "1", "k", "0", "10", "KEYS", "a"),
    ("MIGRATE", "127.0.0.1", "1", "k", "x", "10"),
    ("MIGRATE", "127.0.0.1", "1", "k", "0", "1.5"),
    ("MIGRATE", "127.0.0.1", "1", "k", "0", "10", "COPY", "BOGUS", "KEYS", "a"),
    ("MIGRATE", "127.0.0.1", "1", "k", "0"),
    ("MIGRATE", "127.0.0.1", "1", "nokey", "0", "10"),
    ("MIGRATE", "127.0.0.1", "1", "", "0", "10", "KEYS", "nokey", "nokey2"),
    # A target nobody listens on (port 1).
    ("MIGRATE", "127.0.0.1", "1", "k", "0", "200"),
    ("MIGRATE", "127.0.0.1", "1", "", "0", "200", "KEYS", "k"),
    ("COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "5", "KEYS", "a", "b"),
    ("COMMAND", "GETKEYS", "MIGRATE", "h", "1", "k", "0", "5"),
    ("COMMAND", "GETKEYS", "MIGRATE", "h", "1", "k", "0", "5", "KEYS"),
    ("COMMAND", "GETKEYSANDFLAGS", "MIGRATE", "h", "1", "", "0", "5", "COPY",
     "KEYS", "a"),
    ("COMMAND", "GETKEYS", "MIGRATE", "h", "1", "k", "0", "5", "KEYS", "a"),
    ("COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "5", "AUTH", "keys",
     "KEYS", "a"),
    ("COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "5", "AUTH2", "u",
     "keys", "REPLACE", "KEYS", "a", "keys", "b"),
    ("COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "5", "KEYS", "a",
     "keys", "b"),
    ("COMMAND", "INFO", "MIGRATE"),
]


def test_migrate_errors_and_keys_are_redis_s(server, redis_server):
    cg = server.raw()
    ref = harness.RawConn(port=redis_server.port)
    for conn in (cg, ref):
        conn.command("FLUSHALL")
        conn.command("SET", "k", "v")
    for line in ERROR_LINES:
        assert cg.command(*line) == ref.command(*line), line
    ref.close()


def test_migrate_target_refuses_the_password_and_nothing_moves(rd, cg):
    ref, rc = rd
    d, cc = cg
    cc.set("k", "v")
    with pytest.raises(harness.redis.ResponseError) as e:
        cc.execute_command("MIGRATE", "127.0.0.1", ref.port, "k", 0, 5000,
                           "AUTH", "wrong")
    assert str(e.value).startswith("Target instance replied with error: "
                                   "WRONGPASS")
    assert cc.get("k") == b"v"


def test_migrate_hides_its_passwords_from_monitor_and_slowlog(server):
    raw = server.raw()
    raw.command("CONFIG", "SET", "slowlog-log-slower-than", "0")
    raw.command("SLOWLOG", "RESET")
    raw.command("MIGRATE", "127.0.0.1", "1", "nokey", "0", "10", "AUTH2",
                "user", "pw", "KEYS")
    entry = raw.command("SLOWLOG", "GET", "1")
    assert b"$10\r\n(redacted)\r\n$10\r\n(redacted)\r\n$4\r\nKEYS" in entry
    assert b"pw" not in entry and b"user" not in entry
    raw.command("CONFIG", "SET", "slowlog-log-slower-than", "10000")


def test_a_limiter_moved_between_cellgates_decides_as_before(start_daemon):
    """Two fake-clock daemons at the same instant: a key moved from a to b
    answers on b as its twin left on a answers there."""
    a, b = start_daemon(fakeclock=True), start_daemon(fakeclock=True)
    ca, cb = a.client(), b.client()
    steps = [("CL.THROTTLE", "{k}", 10, 20, 60, 1), ("RL.FIXED", "{k}", 10, 60),
             ("RL.SLIDING", "{k}", 10, 60), ("RL.LOG", "{k}", 10, 60),
             ("GCRA", "{k}", 10, 20, 60)]
    for step in steps:
        for key in ("moved", "twin"):
            for _ in range(7):
                ca.execute_command(*[str(x).format(k=step[0] + key) for x in step])
    moved = [step[0] + "moved" for step in steps]
    assert ca.execute_command("MIGRATE", "127.0.0.1", b.port, "", 0, 5000,
                              "KEYS", *moved) == b"OK"
    assert ca.exists(*moved) == 0
    for step in steps:
        twin = [str(x).format(k=step[0] + "twin") for x in step]
        here = [str(x).format(k=step[0] + "moved") for x in step]
        assert cb.execute_command(*here) == ca.execute_command(*twin), step
        assert cb.pttl(here[1]) == ca.pttl(twin[1]), step
