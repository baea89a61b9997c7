"""Databases as Redis numbers them: SELECT (and redis-cli -n, and every
client library's db=), SWAPDB, MOVE, FLUSHDB against FLUSHALL, INFO
keyspace, and a snapshot that puts every key back in its database. The
error replies are compared with redis-server in test_differential.py."""
import os
import re
import struct
import subprocess
import zlib

import redis

import harness
from harness import BIN


def throttle(r, key="k"):
    return r.execute_command("CL.THROTTLE", key, 1, 1, 60)


def test_redis_cli_n_keeps_a_limiter_to_its_database(server):
    cli = ["redis-cli", "-p", str(server.port)]
    out = subprocess.run(cli + ["-n", "5", "CL.THROTTLE", "k", "1", "1", "60"],
                         capture_output=True, text=True, timeout=10)
    assert out.stdout.split() == ["0", "2", "1", "-1", "60"]
    r0 = server.client()
    assert r0.exists("k") == 0 and r0.dbsize() == 0
    assert throttle(r0) == [0, 2, 1, -1, 60]            # a fresh limiter in db 0
    r5 = redis.Redis(port=server.port, db=5)
    assert throttle(r5) == [0, 2, 0, -1, 120]           # db 5's own count
    assert r5.dbsize() == 1


def test_info_keyspace_lists_each_database_that_holds_keys(server):
    throttle(server.client())
    for _ in range(2):
        throttle(redis.Redis(port=server.port, db=9), "a")
    throttle(redis.Redis(port=server.port, db=9), "b")
    got = server.raw().command("INFO", "keyspace")
    # avg_ttl: the average ms left of the keys with an expiry (db0's key
    # expires in 60 s, db9's in 120 s and 60 s).
    m = re.fullmatch(rb"# Keyspace\r\ndb0:keys=1,expires=1,avg_ttl=(\d+)\r\n"
                     rb"db9:keys=2,expires=2,avg_ttl=(\d+)\r\n\r\n",
                     got.split(b"\r\n", 1)[1])
    assert m, got
    assert 50000 < int(m.group(1)) <= 60000, m.groups()
    assert 80000 < int(m.group(2)) <= 90000, m.groups()


def test_pipelined_clients_on_different_databases_never_mix(server):
    a, b = server.raw(), server.raw()
    assert a.command("SELECT", 3) == b"+OK\r\n"
    req = b"*5\r\n$11\r\nCL.THROTTLE\r\n$1\r\nk\r\n$1\r\n9\r\n$1\r\n1\r\n$2\r\n60\r\n"
    remaining = {"a": [], "b": []}
    for _ in range(4):                  # interleaved batches, both in flight
        a.send(req * 3)
        b.send(req * 2)
        for name, conn, n in (("a", a, 3), ("b", b, 2)):
            for _ in range(n):
                remaining[name].append(int(conn.reply_bytes().split(b"\r\n")[3][1:]))
    assert remaining["a"] == [9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0, 0]   # db 3's k
    assert remaining["b"] == [9, 8, 7, 6, 5, 4, 3, 2]               # db 0's k


def test_swapdb_swaps_the_keys_under_clients_that_stay_on_their_number(server):
    r0 = server.client()
    r1 = redis.Redis(port=server.port, db=1)
    throttle(r0, "zero")
    throttle(r1, "one")
    assert r0.swapdb(0, 1) is True
    assert r0.keys("*") == [b"one"] and r1.keys("*") == [b"zero"]
    assert throttle(r1, "zero") == [0, 2, 0, -1, 120]  # its state came along


def test_move_carries_the_state_and_expiry_and_never_overwrites(server):
    r0 = server.client()
    r3 = redis.Redis(port=server.port, db=3)
    throttle(r0)
    throttle(r0)
    r0.execute_command("RL.LOG", "log", 5, 60, "META", "alice")
    pttl = r0.pttl("k")
    assert r0.move("k", 3) is True and r0.move("log", 3) is True
    assert r0.dbsize() == 0
    assert abs(r3.pttl("k") - pttl) < 1000
    assert throttle(r3)[0] == 1                         # still limited
    assert r3.execute_command("RL.ENTRIES", "log")[0][2] == b"alice"
    throttle(r0)
    assert r0.move("k", 3) is False                     # db 3 has one: stays
    assert r0.exists("k") == 1
    assert r0.move("nothing", 3) is False


def test_flushdb_empties_only_the_selected_database(server):
    r0 = server.client()
    r2 = redis.Redis(port=server.port, db=2)
    throttle(r0)
    throttle(r2)
    assert r2.flushdb() is True
    assert r2.dbsize() == 0 and r0.dbsize() == 1
    throttle(r2)
    assert r0.flushall() is True
    assert r2.dbsize() == 0 and r0.dbsize() == 0


def test_watch_in_one_database_ignores_the_same_key_in_another(server):
    w = redis.Redis(port=server.port, db=1)
    other = server.client()
    same = redis.Redis(port=server.port, db=1)
    with w.pipeline() as p:
        p.watch("k")
        throttle(other)                                 # db 0's k: not watched
        p.multi()
        p.ping()
        assert p.execute() == [True]
    with w.pipeline() as p:
        p.watch("k")
        throttle(same)                                  # db 1's k
        p.multi()
        p.ping()
        try:
            p.execute()
            raise AssertionError("EXEC ran although the watched key changed")
        except redis.WatchError:
            pass


def test_select_inside_a_transaction_applies_to_what_follows(server):
    c = server.raw()
    got = [c.command("MULTI"), c.command("SELECT", 6),
           c.command("CL.THROTTLE", "t", 1, 1, 60), c.command("EXEC")]
    assert got[3] == b"*2\r\n+OK\r\n*5\r\n:0\r\n:2\r\n:1\r\n:-1\r\n:60\r\n"
    assert c.command("DBSIZE") == b":1\r\n"             # still on db 6
    assert server.client().dbsize() == 0


def test_client_list_shows_the_database(server):
    c = server.raw()
    c.command("SELECT", 12)
    assert b" db=12 " in c.command("CLIENT", "INFO")


def test_databases_option_sets_the_count(start_daemon):
    d = start_daemon("--databases", "32")
    r = redis.Redis(port=d.port, db=31)
    assert throttle(r)[0] == 0
    c = d.raw()
    assert c.command("SELECT", 32) == b"-ERR DB index is out of range\r\n"
    assert c.command("CONFIG", "GET", "databases") == \
        b"*2\r\n$9\r\ndatabases\r\n$2\r\n32\r\n"
    assert c.command("CONFIG", "SET", "databases", "4").startswith(
        b"-ERR CONFIG SET failed (possibly related to argument 'databases')"
        b" - can't set immutable config")


def test_keys_in_other_databases_expire_on_time(start_daemon):
    d = start_daemon(fakeclock=True)
    r = redis.Redis(port=d.port, db=7)
    r.execute_command("CL.THROTTLE", "short", 0, 1, 1)
    assert r.dbsize() == 1
    d.clock.advance(seconds=5)
    assert r.exists("short") == 0                       # fresh: gone
    assert d.info("stats")["expired_keys"] == 1


def test_a_snapshot_puts_every_key_back_in_its_database(start_daemon, tmp_path):
    snapdir = str(tmp_path)
    d = start_daemon("--dir", snapdir, fakeclock=True)
    for db in (0, 3, 15):
        r = redis.Redis(port=d.port, db=db)
        for _ in range(db % 2 + 1):
            throttle(r, "k%d" % db)
    assert d.raw().command("SAVE") == b"+OK\r\n"
    d.proc.kill()                                       # as kill -9
    d.proc.wait(10)
    d.stopped = True
    d2 = start_daemon("--dir", snapdir, fakeclock=True)
    d2.clock.set(d.clock.ns)
    keys = {db: redis.Redis(port=d2.port, db=db).keys("*") for db in range(16)}
    assert {db: k for db, k in keys.items() if k} == {
        0: [b"k0"], 3: [b"k3"], 15: [b"k15"]}
    assert throttle(redis.Redis(port=d2.port, db=3), "k3") == [1, 2, 0, 60, 120]
    assert throttle(redis.Redis(port=d2.port, db=15), "k15") == [1, 2, 0, 60, 120]
    assert throttle(redis.Redis(port=d2.port, db=0), "k0") == [0, 2, 0, -1, 120]


def test_a_snapshot_with_more_databases_than_configured_is_refused(start_daemon,
                                                                    tmp_path):
    snapdir = str(tmp_path / "s")
    os.makedirs(snapdir)
    d = start_daemon("--dir", snapdir)
    throttle(redis.Redis(port=d.port, db=9))
    assert d.raw().command("SAVE") == b"+OK\r\n"
    assert d.stop() == []
    out = subprocess.run([BIN, *harness.io_thread_args(), "--port", "0",
                          "--unixsocket", str(tmp_path / "x.sock"),
                          "--dir", snapdir, "--databases", "4"],
                         capture_output=True, text=True, timeout=20)
    assert out.returncode == 1
    assert ("it holds keys of database 9, but this server has 4 databases "
            "(see 'databases')") in out.stderr


def version2_snapshot(now_ns, key, tat_ns, expire_ns):
    """A snapshot as version 2 wrote it (no database markers): one
    CL.THROTTLE key, for database 0."""
    body = b"CGSNAP01" + struct.pack("=IIqQ", 2, 0, now_ns, 1)
    body += struct.pack("=BIqI", 1, len(key), expire_ns, 8) + key + struct.pack("=Q", tat_ns)
    return body + struct.pack("=I", zlib.crc32(body))


def test_a_version_2_snapshot_loads_into_database_0(start_daemon, tmp_path):
    snapdir = str(tmp_path / "s")
    os.makedirs(snapdir)
    d = start_daemon("--dir", snapdir, fakeclock=True)
    now = d.clock.ns
    assert d.stop() == []
    # The bucket of "old" is full: its TAT 120 s ahead (2 requests of 60 s).
    with open(os.path.join(snapdir, "cellgate.snap"), "wb") as f:
        f.write(version2_snapshot(now, b"old", now + 120 * 10**9, now + 120 * 10**9))
    d2 = start_daemon("--dir", snapdir, fakeclock=True)
    d2.clock.set(now)
    assert "Loaded 1 keys" in d2.log()
    assert throttle(d2.client(), "old") == [1, 2, 0, 60, 120]


def test_a_version_3_snapshot_still_loads(start_daemon, tmp_path):
    """Version 3 (the count in the header, the IEEE CRC) is what the build
    before the journal wrote: an upgrade must load it."""
    snapdir = str(tmp_path / "s")
    os.makedirs(snapdir)
    d = start_daemon("--dir", snapdir, fakeclock=True)
    now = d.clock.ns
    assert d.stop() == []
    body = b"CGSNAP01" + struct.pack("=IIqQ", 3, 0, now, 1)
    body += struct.pack("=BI", 0, 2)                       # database 2
    body += struct.pack("=BIqI", 1, 3, now + 120 * 10**9, 8) + b"old"
    body += struct.pack("=Q", now + 120 * 10**9)
    with open(os.path.join(snapdir, "cellgate.snap"), "wb") as f:
        f.write(body + struct.pack("=I", zlib.crc32(body)))
    d2 = start_daemon("--dir", snapdir, fakeclock=True)
    d2.clock.set(now)
    c = d2.client()
    c.execute_command("SELECT", 2)
    assert throttle(c, "old") == [1, 2, 0, 60, 120]


# ---- RANDOMKEY -------------------------------------------------------------

def test_randomkey_draws_every_live_key_of_the_selected_database(server):
    conn = server.raw()
    assert conn.command("SELECT", 5) == b"+OK\r\n"
    assert conn.command("FLUSHDB") == b"+OK\r\n"
    assert conn.command("RANDOMKEY") == b"$-1\r\n"
    assert conn.command("RANDOMKEY", "x") == (
        b"-ERR wrong number of arguments for 'randomkey' command\r\n")
    names = [b"k%d" % i for i in range(10)]
    for n in names:
        conn.command("SET", n, "v")
    conn.command("SELECT", 6)
    conn.command("SET", "elsewhere", "v")
    conn.command("SELECT", 5)
    seen = set()
    for _ in range(500):                # 10 keys: each missed ~1e-22
        reply = conn.command("RANDOMKEY")
        seen.add(reply.split(b"\r\n")[1])
    assert seen == set(names)
    assert conn.command("HELLO", "3").startswith(b"%7")
    conn.command("FLUSHDB")
    assert conn.command("RANDOMKEY") == b"_\r\n"


def test_randomkey_never_answers_an_expired_key(start_daemon):
    """Keys past their expiry but not yet collected are drawn past: with
    active expiry off, 300 of them and one live key, the live one is the
    only answer; with none live, nil, as Redis (which deletes them)."""
    d = start_daemon("--enable-debug-command", "local", fakeclock=True)
    conn = d.raw()
    assert conn.command("DEBUG", "SET-ACTIVE-EXPIRE", "0") == b"+OK\r\n"
    for i in range(300):
        conn.command("SET", "gone%d" % i, "v", "PX", 1000)
    d.clock.advance(seconds=2)
    assert conn.command("DBSIZE") == b":300\r\n"    # none collected yet
    assert conn.command("RANDOMKEY") == b"$-1\r\n"
    conn.command("SET", "live", "v")
    for _ in range(20):
        assert conn.command("RANDOMKEY") == b"$4\r\nlive\r\n"
