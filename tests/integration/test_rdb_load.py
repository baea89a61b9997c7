"""Redis's RDB format read by cellgate, beside redis-server 7.0.15: RESTORE of
what redis-server DUMPs (every type, every encoding size class, TTLs), of
hand-built payloads in the encodings Redis 7.0 no longer writes (ziplist,
zipmap, intset, quicklist 1, the old list/set/zset/hash types), damaged
payloads refused with Redis's own answer to the same bytes, RESTORE's errors
in Redis's order, and RDB files that redis-server SAVEd loaded at start-up
(--dir, --dbfilename) with every key equal, damaged files refused with the
offset. The reference runs with sanitize-dump-payload yes: cellgate always
checks a payload deeply (docs/compat.md)."""
import os
import random
import re
import struct
import subprocess
import time

import pytest

import harness

BIN = harness.BIN

# ---- RDB bytes built here, from the format (Redis 7.0 writes none of the
# old encodings) --------------------------------------------------------------

_CRC_TABLE = []


def crc64(data, crc=0):
    """Redis's CRC-64 (Jones, reflected, no final xor)."""
    if not _CRC_TABLE:
        for i in range(256):
            c = i
            for _ in range(8):
                c = (0x95AC9329AC4BC9B5 ^ (c >> 1)) if c & 1 else c >> 1
            _CRC_TABLE.append(c)
    for b in data:
        crc = _CRC_TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc


def payload(body, version=10):
    """A DUMP payload: the object, the version, the CRC-64."""
    body = body + struct.pack("<H", version)
    return body + struct.pack("<Q", crc64(body))


def refooter(p):
    """p's object with its footer made right again."""
    return payload(p[:-10], struct.unpack("<H", p[-10:-8])[0])


def rlen(n):
    if n < 64:
        return bytes([n])
    if n < 16384:
        return bytes([0x40 | (n >> 8), n & 0xFF])
    return b"\x80" + struct.pack(">I", n)


def rstr(b):
    if isinstance(b, str):
        b = b.encode()
    return rlen(len(b)) + b


def rint(v):
    """An integer-encoded RDB string (8, 16 or 32 bits)."""
    for enc, fmt in ((0, "<b"), (1, "<h"), (2, "<i")):
        try:
            return bytes([0xC0 | enc]) + struct.pack(fmt, v)
        except struct.error:
            continue
    raise ValueError(v)


def zl_entry(v, prevlen):
    pre = bytes([prevlen]) if prevlen < 254 else b"\xfe" + struct.pack("<I", prevlen)
    if isinstance(v, int):
        if 0 <= v <= 12:
            enc = bytes([0xF1 + v])
        elif -128 <= v < 128:
            enc = b"\xfe" + struct.pack("<b", v)
        elif -2**15 <= v < 2**15:
            enc = b"\xc0" + struct.pack("<h", v)
        elif -2**23 <= v < 2**23:
            enc = b"\xf0" + struct.pack("<i", v)[:3]
        elif -2**31 <= v < 2**31:
            enc = b"\xd0" + struct.pack("<i", v)
        else:
            enc = b"\xe0" + struct.pack("<q", v)
    else:
        if isinstance(v, str):
            v = v.encode()
        n = len(v)
        if n < 64:
            enc = bytes([n]) + v
        elif n < 16384:
            enc = bytes([0x40 | (n >> 8), n & 0xFF]) + v
        else:
            enc = b"\x80" + struct.pack(">I", n) + v
    return pre + enc


def ziplist(items):
    body, prev, tail = b"", 0, 10
    for v in items:
        e = zl_entry(v, prev)
        tail = 10 + len(body)
        body += e
        prev = len(e)
    total = 10 + len(body) + 1
    return struct.pack("<IIH", total, tail, min(len(items), 65535)) + body + b"\xff"


def zipmap(pairs):
    out = bytes([min(len(pairs), 254)])
    for k, v in pairs:
        k, v = (x.encode() if isinstance(x, str) else x for x in (k, v))
        for s, free in ((k, None), (v, 1)):
            out += bytes([len(s)]) if len(s) < 254 else b"\xfe" + struct.pack("<I", len(s))
            if free is not None:
                out += bytes([free])
            out += s + (b"\x00" * (free or 0))
    return out + b"\xff"


def intset(values, width):
    fmt = {2: "<h", 4: "<i", 8: "<q"}[width]
    return struct.pack("<II", width, len(values)) + b"".join(
        struct.pack(fmt, v) for v in sorted(values))


def old_payloads():
    """(name, payload) of every encoding Redis 7.0 reads but never writes."""
    big = ["m%d" % i for i in range(300)]
    return [
        ("list1", payload(b"\x01" + rlen(3) + rstr("a") + rint(7) + rstr("c" * 70))),
        ("set2", payload(b"\x02" + rlen(3) + rstr("x") + rint(-5) + rstr("y"))),
        ("set2_ints", payload(b"\x02" + rlen(3) + rint(3) + rint(1) + rint(2))),
        ("zset3", payload(b"\x03" + rlen(4) + rstr("a") + b"\x031.5" + rstr("b") + b"\xfe"
                          + rstr("c") + b"\xff" + rstr("d") + b"\x05-0.25")),
        ("zset3_big", payload(b"\x03" + rlen(len(big)) + b"".join(
            rstr(m) + rstr(str(i * 0.5)) for i, m in enumerate(big)))),
        ("hash4", payload(b"\x04" + rlen(2) + rstr("f") + rstr("v") + rstr("n") + rint(300))),
        ("zset5", payload(b"\x05" + rlen(2) + rstr("a") + struct.pack("<d", 2.5)
                          + rstr("b") + struct.pack("<d", float("-inf")))),
        ("zipmap", payload(b"\x09" + rstr(zipmap([("a", "1"), ("bb", "x" * 300), ("c", "")])))),
        ("zipmap_small", payload(b"\x09" + rstr(zipmap([("k", "v"), ("k2", "v2")])))),
        ("ziplist_list", payload(b"\x0a" + rstr(ziplist(
            ["a", 0, 12, 13, -1, 200, -40000, 5000000, 2**40, -2**63, "z" * 100])))),
        ("intset16", payload(b"\x0b" + rstr(intset([5, -3, 1000], 2)))),
        ("intset32", payload(b"\x0b" + rstr(intset([70000, -1, 2], 4)))),
        ("intset64", payload(b"\x0b" + rstr(intset([2**40, -2**50, 0], 8)))),
        ("intset_big", payload(b"\x0b" + rstr(intset(list(range(0, 1200, 2)), 2)))),
        ("zset_ziplist", payload(b"\x0c" + rstr(ziplist(["a", 1, "b", "2.5", "c", 300])))),
        ("hash_ziplist", payload(b"\x0d" + rstr(ziplist(["f1", "v1", "f2", 99, 7, "x"])))),
        ("hash_ziplist_big", payload(b"\x0d" + rstr(ziplist(
            sum((["f%d" % i, "v%d" % i] for i in range(600)), []))))),
        ("quicklist1", payload(b"\x0e" + rlen(3) + rstr(ziplist(["a", "b", 1]))
                               + rstr(ziplist([])) + rstr(ziplist([2, "c" * 80])))),
    ]


# ---- the servers ----------------------------------------------------------------


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    """redis-server with sanitize-dump-payload yes: its deep check."""
    rs = harness.RedisServer(str(tmp_path_factory.mktemp("redis-rdb")),
                             extra_args=["--sanitize-dump-payload", "yes"])
    rs.start()
    yield rs
    rs.stop()


@pytest.fixture
def both(server, ref):
    rc = ref.client()
    rc.flushall()
    rc.function_flush()
    return server.client(), rc


def raw_reply(port, *args):
    c = harness.RawConn(port=port)
    try:
        return c.command(*args)
    finally:
        c.close()


def value_of(c, key):
    """(type, value) of key as a client reads it back."""
    t = c.type(key).decode()
    if t == "string":
        return t, c.get(key)
    if t == "list":
        return t, c.lrange(key, 0, -1)
    if t == "set":
        return t, sorted(c.smembers(key))
    if t == "zset":
        return t, c.zrange(key, 0, -1, withscores=True)
    if t == "hash":
        return t, sorted(c.hgetall(key).items())
    return t, None


def assert_same_key(cg, rd, key, ttl_slack=2000):
    assert value_of(cg, key) == value_of(rd, key), key
    a, b = cg.pttl(key), rd.pttl(key)
    if b < 0:
        assert a == b, key
    else:
        assert abs(a - b) <= ttl_slack, (key, a, b)


def fill_random(c, rng, prefix="k", n=40):
    """Keys of every type in every size class, values drawn by rng."""
    def word():
        kind = rng.randrange(6)
        if kind == 0:
            return str(rng.randrange(-2**63, 2**63))
        if kind == 1:
            return str(rng.randrange(-200, 70000))
        if kind == 2:
            return "w" * rng.randrange(1, 100)        # LZF-compressible
        return "".join(rng.choice("abcdefgh") for _ in range(rng.randrange(0, 12)))
    keys = []
    for i in range(n):
        key = "%s%d" % (prefix, i)
        big = rng.random() < 0.3
        count = rng.randrange(130, 700) if big else rng.randrange(1, 20)
        t = i % 6
        if t == 0:
            c.set(key, word() if rng.random() < 0.7 else "s" * rng.randrange(20, 3000))
        elif t == 1:
            c.rpush(key, *[word() for _ in range(count)])
        elif t == 2:
            ints = rng.random() < 0.5
            c.sadd(key, *[str(rng.randrange(-10**6, 10**6)) if ints else word() + "x"
                          for _ in range(count)])
        elif t == 3:
            c.zadd(key, {word() + str(j): rng.choice(
                [rng.uniform(-1e6, 1e6), rng.randrange(100), float("inf"), float("-inf")])
                for j in range(count)})
        elif t == 4:
            c.hset(key, mapping={"f%d" % j: word() for j in range(count)})
        else:
            c.set(key, str(rng.randrange(-2**31, 2**31)))
        if rng.random() < 0.3:
            c.pexpire(key, rng.randrange(60000, 10**7))
        keys.append(key)
    return keys


# ---- RESTORE of what redis-server DUMPs -------------------------------------------


def test_restore_of_every_type_redis_dumped_reads_back_the_same(both):
    cg, rd = both
    rng = random.Random(3801)
    keys = fill_random(rd, rng, n=120)
    now_ms = int(time.time() * 1000)
    for i, key in enumerate(keys):
        data = rd.dump(key)
        pttl = rd.pttl(key)
        if pttl < 0:
            assert cg.restore(key, 0, data) == b"OK"
        elif i % 2:
            assert cg.restore(key, now_ms + pttl, data, absttl=True) == b"OK"
        else:
            assert cg.restore(key, pttl, data) == b"OK"
        assert_same_key(cg, rd, key)
    # The other direction of a type change: REPLACE over a key of any type.
    for key in keys[:12]:
        assert cg.restore(key, 0, rd.dump(keys[-1 - keys.index(key)]), replace=True) == b"OK"
        assert value_of(cg, key) == value_of(rd, keys[-1 - keys.index(key)])
        assert cg.pttl(key) == -1


def test_restore_of_integers_of_every_width_and_long_strings(both):
    cg, rd = both
    values = ["0", "-1", "127", "-128", "32767", "-32768", "2147483647", "-2147483648",
              "2147483648", "9223372036854775807", "-9223372036854775808", "012", "+5",
              "1e3", "", "a" * 21, "ab" * 5000, " 1"]
    for i, v in enumerate(values):
        rd.set("s%d" % i, v)
        cg.restore("s%d" % i, 0, rd.dump("s%d" % i))
        assert cg.get("s%d" % i) == v.encode()
        assert cg.strlen("s%d" % i) == len(v)
    # An integer string behaves as one: INCR on the restored value.
    assert cg.incr("s2") == 128


@pytest.mark.parametrize("name,data", old_payloads(), ids=[n for n, _ in old_payloads()])
def test_hand_built_old_encodings_restore_as_on_redis(both, name, data):
    cg, rd = both
    got = raw_reply(cg.connection_pool.connection_kwargs["port"], "RESTORE", name, "0", data)
    want = raw_reply(rd.connection_pool.connection_kwargs["port"], "RESTORE", name, "0", data)
    assert got == want == b"+OK\r\n"
    assert value_of(cg, name) == value_of(rd, name)
    # Ordered encodings keep their order (a small hash, a list).
    if value_of(rd, name)[0] in ("hash", "list"):
        assert cg.execute_command("HGETALL" if rd.type(name) == b"hash" else "LRANGE",
                                  name, *([] if rd.type(name) == b"hash" else [0, -1])) \
            == rd.execute_command("HGETALL" if rd.type(name) == b"hash" else "LRANGE",
                                  name, *([] if rd.type(name) == b"hash" else [0, -1]))


def damaged(rng, good):
    """Damaged copies of good payloads: truncated (footer made right), a
    byte flipped (footer made right), a wrong version, a wrong CRC."""
    out = []
    for p in good:
        body = p[:-10]
        for _ in range(3):
            cut = rng.randrange(0, len(body))
            out.append(payload(body[:cut]))
            b = bytearray(body)
            at = rng.randrange(len(b))
            b[at] ^= 1 << rng.randrange(8)
            out.append(payload(bytes(b)))
        out.append(payload(body, version=11))
        out.append(p[:-1] + bytes([p[-1] ^ 1]))
        out.append(p[:5])
    return out


def test_damaged_payloads_get_redis_answer(both):
    cg, rd = both
    rng = random.Random(77)
    fill_random(rd, rng, prefix="g", n=24)
    good = [rd.dump(k) for k in sorted(rd.keys())] + [p for _, p in old_payloads()]
    cport = cg.connection_pool.connection_kwargs["port"]
    rport = rd.connection_pool.connection_kwargs["port"]
    cases = damaged(rng, good)
    assert len(cases) > 300
    refused = 0
    for i, p in enumerate(cases):
        key = "d%d" % i
        want = raw_reply(rport, "RESTORE", key, "0", p)
        got = raw_reply(cport, "RESTORE", key, "0", p)
        assert got == want, (i, p.hex())
        refused += want.startswith(b"-")
        if want == b"+OK\r\n":
            assert value_of(cg, key) == value_of(rd, key), (i, p.hex())
    assert refused > len(cases) // 2


def test_restore_errors_in_redis_order(both):
    cg, rd = both
    rd.set("k", "v")
    cg.set("k", "v")
    good = rd.dump("k")
    rd.delete("k")
    cg.delete("k")
    rd.set("busy", "1")
    cg.set("busy", "1")
    cases = [
        ("RESTORE",), ("RESTORE", "k"), ("RESTORE", "k", "0"),
        ("RESTORE", "k", "0", good, "BOGUS"),
        ("RESTORE", "k", "0", good, "IDLETIME"),
        ("RESTORE", "k", "0", good, "IDLETIME", "x"),
        ("RESTORE", "k", "0", good, "IDLETIME", "-1"),
        ("RESTORE", "k", "0", good, "FREQ", "256"),
        ("RESTORE", "k", "0", good, "FREQ", "-1"),
        ("RESTORE", "k", "0", good, "FREQ", "1.5"),
        ("RESTORE", "k", "0", good, "IDLETIME", "5", "FREQ", "5"),
        ("RESTORE", "k", "0", good, "FREQ", "5", "IDLETIME", "5"),
        ("RESTORE", "busy", "0", good),
        ("RESTORE", "busy", "-1", good),          # BUSYKEY before the TTL
        ("RESTORE", "k", "-1", good),
        ("RESTORE", "k", "x", good),
        ("RESTORE", "k", "0", b"garbage"),
        ("RESTORE", "k", "0", payload(b"\x08")),  # no such type
        ("RESTORE", "k", "0", payload(b"\xc8\x03\x06\x00")),
        ("RESTORE", "k", "0", payload(b"\x0f\x00")),     # a stream
        ("RESTORE", "k", "0", good, "IDLETIME", "10", "REPLACE", "ABSTTL"),
        ("GET", "k"),
        ("RESTORE", "k2", "1", good, "ABSTTL"),  # long past: nothing made
        ("EXISTS", "k2"),
        ("RESTORE", "busy", "1", good, "ABSTTL", "REPLACE"),   # deletes
        ("EXISTS", "busy"),
        ("RESTORE-ASKING", "k3", "0", good, "FREQ", "200"),
        ("GET", "k3"),
        ("COMMAND", "INFO", "restore", "restore-asking"),
    ]
    cport = cg.connection_pool.connection_kwargs["port"]
    rport = rd.connection_pool.connection_kwargs["port"]
    for args in cases:
        assert raw_reply(cport, *args) == raw_reply(rport, *args), args


def test_restore_is_a_write_watchers_and_notifications_see(server, ref):
    cg = server.client()
    rd = ref.client()
    rd.rpush("src", "a", "b")
    data = rd.dump("src")
    cg.config_set("notify-keyspace-events", "KEg")
    try:
        p = cg.pubsub()
        p.psubscribe("__key*__:*")
        assert p.get_message(timeout=2)["type"] == "psubscribe"
        w = server.client()
        pipe = w.pipeline()
        pipe.watch("l")
        pipe.multi()
        pipe.set("l", "x")
        assert cg.restore("l", 0, data) == b"OK"
        with pytest.raises(Exception):
            pipe.execute()
        got = []
        for _ in range(4):
            m = p.get_message(timeout=2)
            if m:
                got.append((m["channel"], m["data"]))
        assert (b"__keyspace@0__:l", b"restore") in got
        assert (b"__keyevent@0__:restore", b"l") in got
        p.close()
    finally:
        cg.config_set("notify-keyspace-events", "")
    assert cg.lrange("l", 0, -1) == [b"a", b"b"]


# ---- RDB files ---------------------------------------------------------------------


def keyspace(c, dbs):
    out = {}
    for db in dbs:
        c.execute_command("SELECT", db)
        for k in c.keys():
            out[(db, k)] = (value_of(c, k), c.pttl(k))
    c.execute_command("SELECT", 0)
    return out


def same_keyspaces(a, b, slack=3000):
    assert sorted(a) == sorted(b)
    for k in a:
        (va, ta), (vb, tb) = a[k], b[k]
        assert va == vb, k
        assert (ta < 0 and ta == tb) or abs(ta - tb) <= slack, (k, ta, tb)


LIB = "#!lua name=rdblib\nredis.register_function('rdbf', function() return 7 end)"


def redis_rdb(tmp_path, rng, stream=False, checksum=True):
    """An RDB file redis-server SAVEd after random traffic; its keyspace."""
    d = str(tmp_path / "redis-save")
    rs = harness.RedisServer(d, extra_args=["--dbfilename", "dump.rdb"]
                             + ([] if checksum else ["--rdbchecksum", "no"])).start()
    try:
        c = rs.client()
        for db in (0, 3, 15):
            c.execute_command("SELECT", db)
            fill_random(c, rng, prefix="db%d-" % db, n=60)
            c.set("gone%d" % db, "x", px=1)           # expired by load time
        c.execute_command("SELECT", 0)
        c.function_load(LIB)
        if stream:
            c.xadd("st", {"f": "v"})
            c.xgroup_create("st", "g", id="0")
            c.xreadgroup("g", "c1", {"st": ">"})
            c.set("after-stream", "yes")
        time.sleep(0.01)
        want = keyspace(c, (0, 3, 15))
        c.save()
    finally:
        rs.stop()
    return d, os.path.join(d, "dump.rdb"), want


def test_rdb_file_redis_saved_loads_with_every_key_equal(start_daemon, tmp_path):
    d, path, want = redis_rdb(tmp_path, random.Random(11))
    cg = start_daemon("--dir", d, "--dbfilename", "dump.rdb")
    c = cg.client()
    same_keyspaces(keyspace(c, (0, 3, 15)), want)
    assert c.fcall("rdbf", 0) == 7
    assert "keys loaded: %d" % len(want) in cg.log()
    assert "snapshots written from now on are cellgate's own" in cg.log()
    # What it saves afterwards is cellgate's own, and loads again.
    c.save()
    cg.stop()
    assert not open(path, "rb").read(5) == b"REDIS"
    cg2 = start_daemon("--dir", d, "--dbfilename", "dump.rdb")
    same_keyspaces(keyspace(cg2.client(), (0, 3, 15)), want)


def test_rdb_file_without_checksum_loads(start_daemon, tmp_path):
    d, path, want = redis_rdb(tmp_path, random.Random(12), checksum=False)
    assert open(path, "rb").read()[-8:] == b"\0" * 8
    cg = start_daemon("--dir", d, "--dbfilename", "dump.rdb")
    same_keyspaces(keyspace(cg.client(), (0, 3, 15)), want)
    assert "checksum disabled" in cg.log()


def start_fails(d, *args):
    out = subprocess.run([BIN, *harness.io_thread_args(), "--port", "0", "--save", "",
                          "--dir", d, "--dbfilename", "dump.rdb", *args],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    return out.stderr + out.stdout


def test_stream_keys_are_refused_or_skipped_as_the_option_says(start_daemon, tmp_path):
    d, path, want = redis_rdb(tmp_path, random.Random(13), stream=True)
    err = start_fails(d)
    assert "stream key (RDB type 19) cellgate cannot serve " \
           "(rdb-unsupported-keys refuse) at offset" in err
    cg = start_daemon("--dir", d, "--dbfilename", "dump.rdb",
                      "--rdb-unsupported-keys", "skip")
    c = cg.client()
    del want[(0, b"st")]
    same_keyspaces(keyspace(c, (0, 3, 15)), want)
    assert "stream and module keys skipped: 1" in cg.log()
    assert c.execute_command("CONFIG", "GET", "rdb-unsupported-keys") == \
        [b"rdb-unsupported-keys", b"skip"]
    c.config_set("rdb-unsupported-keys", "refuse")
    assert c.execute_command("CONFIG", "GET", "rdb-unsupported-keys") == \
        [b"rdb-unsupported-keys", b"refuse"]


def test_damaged_rdb_files_are_refused_with_the_offset(tmp_path):
    d, path, _ = redis_rdb(tmp_path, random.Random(14))
    data = open(path, "rb").read()
    # Truncated: the offset is where the bytes ran out.
    cut = len(data) // 2
    open(path, "wb").write(data[:cut])
    err = start_fails(d)
    # The offset is that of the read that found too few bytes left.
    at = int(re.search(r"at offset (\d+)", err).group(1))
    assert 9 < at <= cut, err
    assert path in err
    # A byte flipped: the CRC says so, unless the bytes went wrong first.
    b = bytearray(data)
    b[len(b) // 3] ^= 0x20
    open(path, "wb").write(bytes(b))
    err = start_fails(d)
    assert "Wrong RDB checksum" in err or "at offset" in err
    b = bytearray(data)
    b[-3] ^= 0x01
    open(path, "wb").write(bytes(b))
    assert "Wrong RDB checksum expected: (%x) got (%x) at offset %d" % (
        struct.unpack("<Q", bytes(b[-8:]))[0], crc64(data[:-8]), len(data) - 8) \
        in start_fails(d)
    # A length made impossible with the CRC made right: refused at its offset.
    body = bytearray(data[:-8])
    at = body.index(b"\x05db0-1")            # the key's length byte
    body[at] = 0x80                          # 32-bit length, running off
    bad = bytes(body) + struct.pack("<Q", crc64(bytes(body)))
    open(path, "wb").write(bad)
    err = start_fails(d)
    assert "at offset" in err
    # A newer version, Redis's words.
    open(path, "wb").write(b"REDIS0011" + data[9:])
    assert "Can't handle RDB format version 11" in start_fails(d)


# ---- cellgate's own payload (docs/migrate.md) -----------------------------------


def test_cellgate_limiter_payload_restores_and_redis_refuses_it(both):
    cg, rd = both
    far_us = (int(time.time()) + 3600) * 10**6
    state = struct.pack("<q", far_us)
    good = payload(b"\xc8\x03\x06" + rlen(len(state)) + state)     # GCRA (type 6)
    cport = cg.connection_pool.connection_kwargs["port"]
    rport = rd.connection_pool.connection_kwargs["port"]
    assert raw_reply(rport, "RESTORE", "g", "0", good) == b"-ERR Bad data format\r\n"
    assert raw_reply(cport, "RESTORE", "g", "60000", good) == b"+OK\r\n"
    assert cg.type("g") == b"gcra"
    assert 55000 < cg.pttl("g") <= 60000
    # The TAT an hour ahead: a burst of 5 is spent, the call is limited.
    assert cg.execute_command("GCRA", "g", 5, 10, 60)[0] == 1
    for bad in (payload(b"\xc8\x04\x06" + rlen(8) + state),      # newer encoding
                payload(b"\xc8\x03\x0a" + rlen(8) + state),      # a hash: no
                payload(b"\xc8\x03\x06" + rlen(7) + state[:7]),  # short state
                payload(b"\xc8\x03\x06" + rlen(9) + state)):     # cut
        assert raw_reply(cport, "RESTORE", "g2", "0", bad) == b"-ERR Bad data format\r\n"
        assert cg.exists("g2") == 0


# ---- an RDB file of old, built from the format ---------------------------------


def old_rdb_file(version, body, checksum=True):
    data = b"REDIS%04d" % version + body + b"\xff"
    if version >= 5:
        data += struct.pack("<Q", crc64(data) if checksum else 0)
    return data


def old_body(now_s, functions=True):
    """Opcodes Redis 7.0 no longer writes, with every old encoding."""
    aux = b"".join(b"\xfa" + rstr(k) + rstr(v) for k, v in (
        ("redis-ver", "3.2.12"), ("redis-bits", "64"), ("ctime", str(now_s)),
        ("used-mem", "1048576"), ("repl-id", "a" * 40), ("repl-offset", "77")))
    keys = b"".join(p[:1] + rstr(name) + p[1:-10] for name, p in old_payloads())
    future = struct.pack("<I", now_s + 3600)
    past = struct.pack("<I", now_s - 3600)
    return (aux + b"\xfe\x00\xfb" + rlen(30) + rlen(2) + keys
            + b"\xfd" + future + b"\x00" + rstr("secs") + rstr("v")
            + b"\xfd" + past + b"\x00" + rstr("dead") + rstr("v")
            + b"\xf8" + rlen(100) + b"\x00" + rstr("idle") + rstr("i")
            + b"\xf9\x07" + b"\x00" + rstr("freq") + rint(-7)
            + b"\xfe\x05" + b"\x00" + rstr("db5") + rstr("x" * 40)
            + (b"\xf6" + rstr("oldlib") + rstr("lua") + rlen(0)
               + rstr("redis.register_function('oldf', function() return 5 end)")
               if functions else b""))


def test_an_old_rdb_file_loads_as_redis_loads_it(start_daemon, tmp_path):
    now_s = int(time.time())
    data = old_rdb_file(9, old_body(now_s))
    d = str(tmp_path / "old")
    os.makedirs(d)
    open(os.path.join(d, "dump.rdb"), "wb").write(data)
    rs = harness.RedisServer(str(tmp_path / "old-redis"),
                             extra_args=["--dir", d, "--dbfilename", "dump.rdb"]).start()
    try:
        want = keyspace(rs.client(), (0, 5))
    finally:
        rs.stop()
    assert (0, b"dead") not in want and (0, b"secs") in want
    cg = start_daemon("--dir", d, "--dbfilename", "dump.rdb")
    c = cg.client()
    same_keyspaces(keyspace(c, (0, 5)), want)
    assert c.fcall("oldf", 0) == 5
    assert "Loading RDB produced by version 3.2.12" in cg.log()
    assert "keys expired: 1" in cg.log()
    # Version 4 carries no checksum; 11 is refused.
    cg.stop()
    open(os.path.join(d, "dump.rdb"), "wb").write(
        old_rdb_file(4, old_body(now_s, functions=False)))
    cg = start_daemon("--dir", d, "--dbfilename", "dump.rdb")
    same_keyspaces(keyspace(cg.client(), (0, 5)), want)


def module_value(moduleid):
    """A module 2 value: its id, then SINT, UINT, FLOAT, DOUBLE, STRING
    opcodes and EOF (rdbLoadCheckModuleValue()'s)."""
    return (b"\x81" + struct.pack(">Q", moduleid) + rlen(1) + rlen(5) + rlen(2) + rlen(300)
            + rlen(3) + struct.pack("<f", 1.5) + rlen(4) + struct.pack("<d", 2.5)
            + rlen(5) + rstr("module bytes") + rlen(0))


def test_module_keys_and_aux_are_skipped_exactly_or_refused(start_daemon, tmp_path):
    body = (b"\xf7" + module_value(0x1234)[:9] + rlen(2) + rlen(2)
            + module_value(0x1234)[9:]
            + b"\x07" + rstr("mod") + module_value(0x5678)
            + b"\x00" + rstr("after") + rstr("ok"))
    d = str(tmp_path / "mod")
    os.makedirs(d)
    open(os.path.join(d, "dump.rdb"), "wb").write(old_rdb_file(10, body))
    err = start_fails(d)
    assert "AUX module data cellgate cannot load (rdb-unsupported-keys refuse) " \
           "at offset" in err
    cg = start_daemon("--dir", d, "--dbfilename", "dump.rdb",
                      "--rdb-unsupported-keys", "skip")
    assert cg.client().keys() == [b"after"]
    assert "stream and module keys skipped: 2" in cg.log()
    # A module key of the first format cannot be read over.
    open(os.path.join(d, "dump.rdb"), "wb").write(
        old_rdb_file(10, b"\x06" + rstr("m1") + module_value(1)))
    assert "module key (RDB type 6) cellgate cannot serve at offset" in start_fails(
        d, "--rdb-unsupported-keys", "skip")
