"""The way back to Redis: what cellgate writes in Redis's RDB format, read
by a real redis-server 7.0.15 side by side.

- DUMP on cellgate, RESTORE on redis-server, for every type and encoding
  size class (integers of every width, long compressible strings, doubles
  with inf and -inf, big list elements, every type small and large),
  random values from a seeded generator, with TTLs: the keys read back on
  both are equal; where the encodings agree (small lists, hashes, sorted
  sets, intsets, strings) the payloads are equal byte for byte.
- A limiter's DUMP is cellgate's own payload (0xC8), which redis-server's
  RESTORE refuses with its own error.
- `redis-cli --rdb FILE` against cellgate after random traffic over every
  type in several databases, with expiries, function libraries and
  limiter keys: redis-server started on that file holds every key equal,
  and cellgate's log counts the limiter keys left out.
- `redis-cli --replica` shows the RDB transfer and then the stream."""
import os
import random
import subprocess
import time

import pytest
import redis

import harness

REDIS_CLI = "/usr/bin/redis-cli"
SEED = 38038


def contents(c, key):
    """A key's type, value and whether it has a TTL, read back through
    ordinary commands (a set's members and a hash's pairs sorted: a large
    one's order is its table's)."""
    t = c.type(key)
    if t == b"string":
        v = c.get(key)
    elif t == b"list":
        v = c.lrange(key, 0, -1)
    elif t == b"hash":
        v = sorted(c.hgetall(key).items())
    elif t == b"set":
        v = sorted(c.smembers(key))
    elif t == b"zset":
        v = c.zrange(key, 0, -1, withscores=True)
    else:
        v = None
    return t, v, c.pttl(key) > 0


def every_key(c):
    return {k: contents(c, k) for k in c.keys("*")}


INTS = ["0", "1", "-1", "127", "128", "-128", "-129", "4095", "-4096",
        "4096", "32767", "-32768", "32768", "8388607", "-8388608",
        "8388608", "2147483647", "-2147483648", "2147483648",
        "9223372036854775807", "-9223372036854775808", "012", "+5", "-0",
        "9223372036854775808", "1e3", " 1"]


def assert_redis_holds_the_same(cg_port, redis_port, dbs):
    """Every key of the databases dbs that Redis can hold (cellgate's own
    limiter types left out) is equal on redis-server, and so are the
    function libraries."""
    for db in dbs:
        a = redis.Redis(port=cg_port, db=db)
        b = redis.Redis(port=redis_port, db=db)
        want = {k: v for k, v in every_key(a).items()
                if v[0] in (b"string", b"list", b"hash", b"set", b"zset")}
        assert every_key(b) == want, db
    assert redis.Redis(port=redis_port).function_list() == \
        redis.Redis(port=cg_port).function_list()


def rand_string(rng, n):
    return "".join(rng.choice("abcxyz0123") for _ in range(n))


def make_values(rng):
    """(key, type, value) of every type and size class."""
    vals = [("s:int:%d" % i, "string", s) for i, s in enumerate(INTS)]
    vals += [("s:empty", "string", ""),
             ("s:20", "string", "q" * 20), ("s:21", "string", "q" * 21),
             ("s:long", "string", "abcd" * 3000),
             ("s:rand", "string", rand_string(rng, 300)),
             ("s:bin", "string", "\x00\r\n\xff" * 10)]
    vals += [("l:small", "list", INTS + ["a", "b" * 63, "c" * 64, "d" * 4095,
                                         "e" * 4096]),
             ("l:big", "list", [rand_string(rng, rng.randint(0, 40))
                                for _ in range(3000)]),
             ("l:bigelem", "list", ["x", "y" * 100000, "z", "w" * 9000]),
             ("l:ints", "list", [str(rng.randint(-2 ** 40, 2 ** 40))
                                 for _ in range(500)])]
    vals += [("h:small", "hash", {"f%d" % i: s for i, s in enumerate(INTS)}),
             ("h:wide", "hash", {"a": "v" * 65, "b": "1"}),
             ("h:big", "hash", {rand_string(rng, 8) + str(i):
                                rand_string(rng, rng.randint(0, 30))
                                for i in range(700)})]
    scores = [0.0, -0.0, 1.5, -2.25, 1e300, -1e-300, float("inf"),
              float("-inf"), 3.0, 2 ** 53, 0.1, 123456789.125]
    vals += [("z:small", "zset", {"m%d" % i: s for i, s in enumerate(scores)}),
             ("z:widemember", "zset", {"m" * 65: 1.0, "n": 2.0}),
             ("z:big", "zset", {rand_string(rng, 10) + str(i):
                                rng.uniform(-1e6, 1e6) for i in range(300)})]
    vals += [("set:i16", "set", ["1", "-5", "300"]),
             ("set:i32", "set", ["1", "70000", "-70000"]),
             ("set:i64", "set", ["1", "5000000000", "-9223372036854775808"]),
             ("set:strs", "set", ["a", "b", "1", "c" * 100]),
             ("set:bigint", "set", [str(i * 7) for i in range(600)]),
             ("set:big", "set", [rand_string(rng, 12) for _ in range(400)])]
    return vals


def write_value(c, key, typ, v):
    if typ == "string":
        c.set(key, v)
    elif typ == "list":
        c.rpush(key, *v)
    elif typ == "hash":
        c.hset(key, mapping=v)
    elif typ == "zset":
        c.zadd(key, v)
    else:
        c.sadd(key, *v)


@pytest.fixture
def pair(server, redis_server):
    cg = server.client()
    rd = redis_server.client()
    rd.flushall()
    yield cg, rd
    rd.flushall()


def test_dump_on_cellgate_restores_on_redis_every_type_and_size(pair):
    cg, rd = pair
    rng = random.Random(SEED)
    vals = make_values(rng)
    for key, typ, v in vals:
        write_value(cg, key, typ, v)
    for key, _, _ in vals[::3]:
        cg.pexpire(key, rng.randint(100000, 10 ** 9))
    for key, _, _ in vals:
        payload = cg.dump(key)
        ttl = max(cg.pttl(key), 0)
        assert rd.restore(key, ttl, payload) == b"OK", key
        assert contents(rd, key) == contents(cg, key), key
    assert cg.dump("nokey") is None
    # The same writes on redis-server DUMP the same bytes but where Redis
    # writes a hash table (a large hash, a set of strings or of more than
    # set-max-intset-entries): its order is the table's.
    rd.flushall()
    tables = ("h:big", "h:wide", "set:strs", "set:bigint", "set:big")
    for key, typ, v in vals:
        write_value(rd, key, typ, v)
        if key not in tables:
            assert cg.dump(key) == rd.dump(key), key


def rand_element(rng, most=70):
    """A string of one of the listpack's classes: an integer of a random
    width (7, 13, 16, 24, 32, 64 bits), or text of 0 to `most` bytes (6
    and 12-bit lengths), some of it compressible."""
    kind = rng.randrange(4)
    if kind == 0:
        bits = rng.choice((7, 13, 16, 24, 32, 63))
        return str(rng.randint(-2 ** bits, 2 ** bits - 1))
    if kind == 1:
        return rng.choice("ab") * rng.randint(0, most)
    return rand_string(rng, rng.randint(0, most))


def rand_score(rng):
    return rng.choice((rng.randint(-10 ** 6, 10 ** 6), rng.uniform(-1e9, 1e9),
                       rng.random(), float("inf"), float("-inf"), 0.0,
                       2.0 ** rng.randint(-60, 60)))


def test_random_values_dump_as_redis_byte_for_byte(pair):
    """Seeded random lists, hashes, sorted sets, all-integer sets and
    strings, each written the same way on both: DUMP's bytes are equal
    (hashes and sorted sets within their listpack bounds: past them Redis
    writes its hash table's order)."""
    cg, rd = pair
    rng = random.Random(SEED + 3)
    for i in range(500):
        n = rng.randint(1, 60 if i % 10 else 400)
        typ = rng.choice(("string", "list", "hash", "zset", "intset"))
        if typ == "string":
            v = rand_element(rng)
        elif typ == "list":
            v = [rand_element(rng) for _ in range(n)]
        elif typ == "hash":
            v = {rand_element(rng, 64): rand_element(rng, 64)
                 for _ in range(n)}
        elif typ == "zset":
            v = {rand_element(rng, 64): rand_score(rng)
                 for _ in range(min(n, 128))}
        else:
            v = [str(rng.randint(-2 ** rng.choice((15, 31, 63)), 2 ** 15))
                 for _ in range(n)]
        key = "k%d" % i
        for c in (cg, rd):
            write_value(c, key, "set" if typ == "intset" else typ, v)
            change(c, key, typ, v, random.Random(i))
        assert cg.dump(key) == rd.dump(key), (key, typ)


def change(c, key, typ, v, rng):
    """The same random change on both servers: elements removed from
    either end or the middle, scores moved, values replaced. (An intset
    keeps its width after its widest member goes, in Redis, and a list of
    several nodes the layout its history gave them: the values are equal
    there, the bytes are not, so neither is drawn.)"""
    if typ == "list" and 2 < len(v) <= 60:
        c.lpop(key)
        c.lrem(key, 1, v[len(v) // 2])
        c.rpush(key, rand_element(rng))
    elif typ == "hash" and len(v) > 2:
        fields = list(v)
        c.hdel(key, fields[0], fields[-1])
        c.hset(key, fields[len(fields) // 2], rand_element(rng, 64))
    elif typ == "zset" and len(v) > 2:
        members = list(v)
        c.zrem(key, members[0])
        c.zincrby(key, rng.choice((1, 2.5, -7)), members[-1])


def test_dump_of_limiters_is_cellgates_own_payload(pair):
    cg, rd = pair
    raw = harness.RawConn(port=rd.connection_pool.connection_kwargs["port"])
    cg.execute_command("CL.THROTTLE", "tat", 10, 5, 60)
    cg.execute_command("INCREX", "ix", "BYINT", 5)
    # CL.THROTTLE's TAT and INCREX's counter are strings: they restore as
    # such.
    for key in ("tat", "ix"):
        assert rd.restore(key, 0, cg.dump(key)) == b"OK"
        assert rd.get(key) == cg.get(key)
    limiters = {   # key type numbers (keytype.h) and the commands making them
        2: ("RL.FIXED", "fw", 10, 60), 3: ("RL.SLIDING", "sw", 10, 60),
        4: ("RL.LOG", "lg", 10, 60, "META", "m"),
        5: ("RL.TIERS", "tr", 10, 60, 100, 3600),
        6: ("GCRA", "g", 10, 5, 60)}
    for key_type, args in limiters.items():
        cg.execute_command(*args)
        p = cg.dump(args[1])
        # 0xC8, KS_ENCODING 3, the key type, the state's length (< 64:
        # one byte), the state, the 10-byte footer.
        assert p[:3] == bytes([0xC8, 3, key_type]), args
        assert p[3] < 64 and len(p) == 4 + p[3] + 10, args
        assert raw.command("RESTORE", args[1], 0, p) == \
            b"-ERR Bad data format\r\n"
    raw.close()


def test_command_info_dump_as_redis(server, redis_server):
    cg = server.raw()
    rd = harness.RawConn(port=redis_server.port)
    assert cg.command("COMMAND", "INFO", "dump") == \
        rd.command("COMMAND", "INFO", "dump")
    assert cg.command("DUMP") == rd.command("DUMP")
    assert cg.command("DUMP", "a", "b") == rd.command("DUMP", "a", "b")
    rd.close()


def random_traffic(cg, rng):
    """Every type in databases 0, 1 and 5, some keys with expiries, limiter
    keys; returns how many limiter keys Redis cannot hold were made."""
    limiters = 0
    for db in (0, 1, 5):
        c = cg if db == 0 else redis.Redis(
            port=cg.connection_pool.connection_kwargs["port"], db=db)
        for i, (key, typ, v) in enumerate(make_values(rng)):
            write_value(c, key, typ, v)
            if i % 4 == 0:
                c.expire(key, rng.randint(1000, 100000))
        c.execute_command("CL.THROTTLE", "cl:%d" % db, 10, 5, 60)
        c.execute_command("INCR", "counter")
        c.execute_command("RL.FIXED", "fw:%d" % db, 10, 60)
        c.execute_command("RL.SLIDING", "sw:%d" % db, 10, 60)
        c.execute_command("GCRA", "g:%d" % db, 10, 5, 60)
        c.execute_command("RL.LOG", "lg:%d" % db, 10, 60)
        c.execute_command("RL.TIERS", "tr:%d" % db, 10, 60, 100, 3600)
        c.execute_command("INCREX", "ix:%d" % db, "BYINT", 3)
        limiters += 5
    return limiters


def test_redis_cli_rdb_loads_in_redis_server(start_daemon, tmp_path):
    d = start_daemon()
    cg = d.client()
    rng = random.Random(SEED + 1)
    limiters = random_traffic(cg, rng)
    cg.function_load("#!lua name=lib1\n"
                     "redis.register_function('f1', function() return 1 end)")
    rdb = tmp_path / "back.rdb"
    out = subprocess.run([REDIS_CLI, "-p", str(d.port), "--rdb", str(rdb)],
                         capture_output=True, timeout=60)
    assert out.returncode == 0, out
    assert b"Transfer finished with success" in out.stdout + out.stderr
    assert rdb.read_bytes()[:9] == b"REDIS0010"
    ref = harness.RedisServer(str(tmp_path), extra_args=[
        "--dbfilename", "back.rdb"])
    ref.start()
    try:
        assert_redis_holds_the_same(d.port, ref.port, (0, 1, 5))
    finally:
        ref.stop()
    assert harness.wait_until(
        lambda: "%d limiter keys left out" % limiters in d.log(), 10)
    # --functions-rdb (REPLCONF rdb-filter-only functions): the libraries
    # and no key.
    out = subprocess.run([REDIS_CLI, "-p", str(d.port), "--functions-rdb",
                          str(tmp_path / "functions.rdb")],
                         capture_output=True, timeout=60)
    assert out.returncode == 0, out
    ref = harness.RedisServer(str(tmp_path), extra_args=[
        "--dbfilename", "functions.rdb"])
    ref.start()
    try:
        rf = redis.Redis(port=ref.port)
        assert rf.dbsize() == 0
        assert rf.function_list() == cg.function_list() != []
    finally:
        ref.stop()


def read_until(proc, marker, timeout):
    """The replica's output up to and including marker (bounded)."""
    out = b""
    deadline = time.monotonic() + timeout
    os.set_blocking(proc.stdout.fileno(), False)
    while marker not in out and time.monotonic() < deadline:
        chunk = proc.stdout.read()
        if chunk:
            out += chunk
        else:
            time.sleep(0.02)
    return out


def test_redis_cli_replica_shows_the_stream(server):
    cg = server.client()
    cg.set("before", "1")
    proc = subprocess.Popen([REDIS_CLI, "-p", str(server.port), "--replica"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        head = read_until(proc, b"Logging commands from master.", 30)
        assert b"sending REPLCONF capa eof" in head
        assert b"SYNC with master, discarding " in head
        assert b"bytes of bulk transfer..." in head
        assert b"SYNC done. Logging commands from master." in head
        cg.set("after", "2")
        cg.execute_command("RL.FIXED", "fw", 10, 60)    # no Redis command
        cg.delete("before")
        out = read_until(proc, b'"DEL","before"', 30)
        # Redis's commands, as redis-cli prints them (CSV): the database
        # selected once, the key as RESTORE of its DUMP payload.
        lines = [x for x in out.split(b"\n") if x and x != b'"PING"']
        assert lines[0] == b'"SELECT","0"', out
        assert lines[1].startswith(b'"RESTORE","after","0","\\x00\\xc0\\x02'), out
        assert lines[1].endswith(b'","REPLACE"'), out
        assert lines[2:] == [b'"DEL","before"'], out
    finally:
        proc.kill()
        proc.wait(10)


def read_command(conn):
    """One command of the stream, as its words."""
    line = conn.recv_until(b"\r\n")
    assert line[:1] == b"*", line
    words = []
    for _ in range(int(line[1:-2])):
        n = int(conn.recv_until(b"\r\n")[1:-2])
        words.append(conn.recv_exact(n + 2)[:-2])
    return words


def sync_rdb(conn):
    """SYNC's RDB file after its keep-alive newlines and $<len>: (newlines,
    bytes)."""
    newlines = 0
    first = conn.recv_exact(1, timeout=60)
    while first == b"\n" and newlines < 600:
        newlines += 1
        first = conn.recv_exact(1, timeout=60)
    assert first == b"$"
    n = int(conn.recv_until(b"\r\n")[:-2])
    return newlines, conn.recv_exact(n, timeout=60)


def traffic_after_sync(cg, port, rng):
    """Writes of every kind a stream carries: every type written, changed
    and deleted, expiries, a transaction, FLUSHDB, SWAPDB, a function
    library, limiters."""
    for db in (0, 5):
        c = redis.Redis(port=port, db=db)
        for key, typ, v in make_values(rng)[::2]:
            write_value(c, "n" + key, typ, v)
        c.lpush("l:small", "pushed")
        c.hdel("h:big", *list(c.hkeys("h:big"))[:5])
        c.zincrby("z:small", 2.5, "m1")
        c.srem("set:bigint", "7", "14")
        c.delete("s:long")
        c.expire("s:rand", 5000)
        c.persist("s:int:1")
        with c.pipeline(transaction=True) as t:
            t.set("tx1", "a").incr("tx2").rpush("tx3", "x")
            t.execute()
        c.execute_command("CL.THROTTLE", "cl2", 10, 5, 60)
        c.execute_command("RL.LOG", "lg2", 10, 60)
    redis.Redis(port=port, db=1).flushdb()
    cg.swapdb(0, 5)
    cg.swapdb(1, 2)
    cg.function_load("#!lua name=lib2\n"
                     "redis.register_function('f2', function() return 2 end)")


def test_sync_stream_applies_on_redis_server(start_daemon, tmp_path):
    """SYNC's file loaded by redis-server, then the stream after it applied
    there command by command: every key equal to cellgate's."""
    # 10 ms a key: the child writes for over a second, while the server
    # answers and SYNC's client hears a newline a second.
    d = start_daemon("--rdb-key-save-delay", "10000")
    cg = d.client()
    rng = random.Random(SEED + 2)
    random_traffic(cg, rng)
    conn = harness.RawConn(port=d.port, timeout=30)
    conn.send(b"SYNC\r\n")
    assert harness.wait_until(
        lambda: cg.info("persistence")["rdb_bgsave_in_progress"] == 1, 10)
    assert cg.ping() and cg.get("s:int:3") == b"127"
    # A second SYNC while the child writes waits for a child of its own
    # (the backlog holds cellgate's stream, not Redis's commands).
    second = harness.RawConn(port=d.port, timeout=30)
    second.send(b"SYNC\r\n")
    newlines, rdb = sync_rdb(conn)
    assert newlines >= 1
    (tmp_path / "sync.rdb").write_bytes(rdb)
    assert sync_rdb(second)[1][:9] == b"REDIS0010"
    second.close()
    assert d.log().count("RDB file for Redis written") == 2
    ref = harness.RedisServer(str(tmp_path), extra_args=[
        "--dbfilename", "sync.rdb"])
    ref.start()
    rd = harness.RawConn(port=ref.port)
    try:
        traffic_after_sync(cg, d.port, rng)
        cg.set("end-of-traffic", "1")
        for _ in range(100000):
            words = read_command(conn)
            if words[0] in (b"PING", b"REPLCONF"):
                continue
            reply = rd.command(*words)
            assert not reply.startswith(b"-"), (words[:2], reply)
            if words[:2] == [b"RESTORE", b"end-of-traffic"]:
                break
        assert_redis_holds_the_same(d.port, ref.port, range(6))
    finally:
        rd.close()
        conn.close()
        ref.stop()
