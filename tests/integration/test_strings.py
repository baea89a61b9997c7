"""Redis's strings beyond what the differential suite reaches: values up to
proto-max-bulk-len (far past the 64 KiB a key's state once had), kept
through the journal, a snapshot, kill -9 and a replica's full sync and
stream; maxmemory admission (a write that does not fit changes nothing);
WATCH on every kind of string write; slot routing of multi-key commands in
cluster-mode yes. Reply bytes themselves are the differential suite's
(test_difftest.py)."""
import hashlib
import os

import pytest
import redis

import harness
from test_journal import fingerprint, kill9, start
from test_replication import caught_up, follow, pair

MB = 1 << 20


def digest(c, key):
    """md5 of a string key's value, read in 1 MB pieces (GETRANGE)."""
    n = int(c.command("STRLEN", key)[1:-2])
    h = hashlib.md5()
    for start in range(0, n, MB):
        reply = c.command("GETRANGE", key, start, min(n, start + MB) - 1)
        head, _, body = reply.partition(b"\r\n")
        assert head.startswith(b"$")
        h.update(body[:-2])
    return n, h.hexdigest()


def build_big(c):
    """Strings of every shape: small ints, short and long text, a 24 MB
    value grown by APPEND and SETRANGE, expiries near and at the end of
    time. Their (length, md5) by key."""
    chunk = bytes(range(256)) * 4096                          # 1 MB
    assert c.command("SET", "big", chunk * 16) == b"+OK\r\n"
    for i in range(4):
        assert c.command("APPEND", "big", chunk) == b":%d\r\n" % ((17 + i) * MB)
    assert c.command("SETRANGE", "big", 24 * MB - 3, b"end") == b":%d\r\n" % (24 * MB)
    assert c.command("SET", "n", 41) == b"+OK\r\n"
    assert c.command("INCR", "n") == b":42\r\n"
    assert c.command("SET", "short", b"\x00bin\r\n") == b"+OK\r\n"
    assert c.command("SET", "text", b"x" * 5000, "EX", 3600) == b"+OK\r\n"
    assert c.command("INCRBYFLOAT", "f", "1.25") == b"$4\r\n1.25\r\n"
    assert c.command("PEXPIREAT", "n", "9223372036854775807") == b":1\r\n"
    return {k: digest(c, k) for k in ("big", "n", "short", "text", "f")}


@pytest.mark.allocator
def test_values_up_to_proto_max_bulk_len(start_daemon):
    d = start_daemon("--proto-max-bulk-len", "4mb")
    c = d.raw()
    value = b"v" * (4 * MB)
    assert c.command("SET", "k", value) == b"+OK\r\n"
    assert c.command("STRLEN", "k") == b":%d\r\n" % (4 * MB)
    assert digest(c, "k") == (4 * MB, hashlib.md5(value).hexdigest())
    too_long = b"-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n"
    assert c.command("APPEND", "k", "x") == too_long
    assert c.command("SETRANGE", "k", 4 * MB, "x") == too_long
    assert c.command("SETRANGE", "new", 4 * MB - 1, "xy") == too_long
    assert c.command("EXISTS", "new") == b":0\r\n"
    assert c.command("SETRANGE", "new", 4 * MB - 1, "x") == b":%d\r\n" % (4 * MB)
    # MEMORY USAGE and used_memory count the value's block.
    usage = int(c.command("MEMORY", "USAGE", "k")[1:-2])
    assert 4 * MB <= usage < 4 * MB + 64 * 1024
    before = d.info("memory")["used_memory"]
    assert c.command("DEL", "k", "new") == b":2\r\n"
    assert before - d.info("memory")["used_memory"] >= 8 * MB


def test_big_strings_survive_kill_9_the_journal_and_a_snapshot(start_daemon, tmp_path):
    work = str(tmp_path / "data")
    d = start(start_daemon, work, "--appendfsync", "always")
    c = d.raw()
    want = build_big(c)
    before = fingerprint(d)
    kill9(d)
    t = start(start_daemon, work, clock_ns=d.clock.ns)
    tc = t.raw()
    assert {k: digest(tc, k) for k in want} == want
    assert fingerprint(t) == before
    assert tc.command("PEXPIRETIME", "n") == b":9223372036854775807\r\n"
    # Rewritten into a snapshot base (BGREWRITEAOF), then loaded again.
    assert tc.command("BGREWRITEAOF").startswith(b"+")
    assert harness.wait_until(
        lambda: t.info("persistence")["aof_rewrite_in_progress"] == 0, 30)
    assert t.stop() == []
    u = start(start_daemon, work, clock_ns=d.clock.ns)
    assert {k: digest(u.raw(), k) for k in want} == want
    assert fingerprint(u) == before


def test_a_replica_gets_big_strings_by_full_sync_and_stream(start_daemon):
    p, r = pair(start_daemon)
    pc = p.raw()
    before = build_big(pc)
    follow(r, p)                                    # a full sync carries them
    assert caught_up(p, r)
    assert {k: digest(r.raw(), k) for k in before} == before
    # The stream carries each write's new value.
    pc.command("APPEND", "big", b"tail")
    pc.command("SETRANGE", "short", 100, b"x")
    pc.command("RENAME", "text", "renamed")
    pc.command("COPY", "big", "big2")
    pc.command("GETDEL", "f")
    pc.command("PERSIST", "n")
    assert caught_up(p, r)
    assert fingerprint(r) == fingerprint(p)
    keys = ("big", "big2", "short", "renamed", "n")
    assert {k: digest(r.raw(), k) for k in keys} == {k: digest(pc, k) for k in keys}


@pytest.mark.allocator
def test_a_write_that_does_not_fit_maxmemory_changes_nothing(start_daemon):
    d = start_daemon("--maxmemory", "32mb")
    c = d.raw()
    oom = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"
    assert c.command("SET", "k", "small") == b"+OK\r\n"
    assert c.command("SET", "k", b"v" * (40 * MB)) == oom
    assert c.command("GET", "k") == b"$5\r\nsmall\r\n"
    assert c.command("SET", "k", b"v" * (4 * MB)) == b"+OK\r\n"
    assert c.command("APPEND", "k", b"w" * (4 * MB)) == b":%d\r\n" % (8 * MB)
    assert c.command("APPEND", "k", b"w" * (4 * MB)) == b":%d\r\n" % (12 * MB)
    assert c.command("APPEND", "k", b"w" * (24 * MB)) == oom
    assert c.command("SETRANGE", "k", 40 * MB, b"x") == oom
    assert c.command("STRLEN", "k") == b":%d\r\n" % (12 * MB)
    # MSET is admitted whole: none of its keys when they do not all fit.
    assert c.command("MSET", "a", b"a" * (8 * MB), "b", b"b" * (8 * MB),
                     "c", b"c" * (8 * MB)) == oom
    assert c.command("EXISTS", "a", "b", "c") == b":0\r\n"


@pytest.mark.parametrize("write", [
    ("SET", "w", "2"), ("INCR", "w"), ("INCRBYFLOAT", "w", "0.5"), ("APPEND", "w", "x"),
    ("SETRANGE", "w", 0, "9"), ("GETSET", "w", "3"), ("GETDEL", "w"), ("GETEX", "w", "EX", 50),
    ("EXPIRE", "w", 50), ("PERSIST", "v"), ("RENAME", "w", "z"), ("RENAME", "z2", "w"),
    ("COPY", "z2", "w", "REPLACE"), ("MSET", "q", 1, "w", 2), ("UNLINK", "w"),
    ("SET", "w", "1", "KEEPTTL"), ("DECRBY", "w", 5), ("MOVE", "w", 3),
])
def test_every_string_write_aborts_a_watching_transaction(server, write):
    c, other = server.raw(), server.raw()
    c.command("SET", "w", "1")
    c.command("SET", "v", "1", "EX", 100)
    c.command("SET", "z2", "zz")
    watched = "v" if write[0] == "PERSIST" else "w"
    assert c.command("WATCH", watched) == b"+OK\r\n"
    assert other.command(*write)[:1] in (b"+", b":", b"$")
    c.command("MULTI")
    c.command("PING")
    assert c.command("EXEC") == b"*-1\r\n", write


@pytest.mark.parametrize("no_write", [
    ("EXPIRE", "w", 50, "XX"), ("PERSIST", "w"), ("SET", "w", "2", "NX"), ("GETEX", "w"),
    ("SETRANGE", "w", 0, ""), ("GET", "w"), ("RENAMENX", "z2", "w"), ("COPY", "z2", "w"),
])
def test_a_string_command_that_changes_nothing_leaves_watchers_alone(server, no_write):
    c, other = server.raw(), server.raw()
    c.command("SET", "w", "1")
    c.command("SET", "z2", "zz")
    assert c.command("WATCH", "w") == b"+OK\r\n"
    other.command(*no_write)
    c.command("MULTI")
    c.command("PING")
    assert c.command("EXEC") == b"*1\r\n+PONG\r\n", no_write


def test_multi_key_commands_route_by_slot_in_cluster_mode_yes(start_daemon, tmp_path):
    port = harness.free_port()
    conf = tmp_path / "cluster.conf"
    conf.write_text("cluster-mode yes\ncluster-node %s 127.0.0.1:%d 0-16383\n"
                    % ("a" * 40, port))
    d = start_daemon(config_file=str(conf), port=port)
    c = d.raw()
    crossslot = b"-CROSSSLOT Keys in request don't hash to the same slot\r\n"
    assert c.command("MSET", "a", 1, "b", 2) == crossslot
    assert c.command("MSETNX", "a", 1, "b", 2) == crossslot
    assert c.command("MGET", "a", "b") == crossslot
    assert c.command("MSET", "{u}a", 1, "{u}b", 2) == b"+OK\r\n"
    assert c.command("MGET", "{u}a", "{u}b") == b"*2\r\n$1\r\n1\r\n$1\r\n2\r\n"
    assert c.command("RENAME", "{u}a", "c") == crossslot
    assert c.command("COPY", "{u}a", "c") == crossslot
    assert c.command("RENAME", "{u}a", "{u}c") == b"+OK\r\n"
    assert c.command("COPY", "{u}c", "{u}d") == b":1\r\n"
    assert c.command("COPY", "{u}c", "{u}e", "DB", 1) == (
        b"-ERR Copying to another database is not allowed in cluster mode\r\n")
    # A cluster client sends each key to its slot's node (here: one node).
    rc = redis.cluster.RedisCluster(host="127.0.0.1", port=port)
    assert rc.set("k", 5) and rc.incrby("k", 3) == 8 and rc.expire("k", 60)
    assert 0 < rc.ttl("k") <= 60
    rc.close()


def test_appending_to_a_long_string_journals_the_appended_bytes(start_daemon, tmp_path):
    """APPEND and SETRANGE on a long string reach the journal as the bytes
    written, not the string (a record of KS_ELEM_RANGE), so a log built
    by appending costs the journal what was appended; a restart after the
    key expired has nothing to apply them to and starts."""
    from test_journal import incr_files
    work = str(tmp_path / "data")
    d = start(start_daemon, work, "--appendfsync", "always")
    c = d.raw()
    assert c.command("SET", "log", b"x" * (8 * MB), "EX", 60) == b"+OK\r\n"
    path = incr_files(d)[-1]
    size = os.path.getsize(path)
    for i in range(100):
        assert c.command("APPEND", "log", b"0123456789") == b":%d\r\n" % (8 * MB + 10 * (i + 1))
    c.command("SETRANGE", "log", 5, b"abc")
    grown = os.path.getsize(path) - size
    assert grown < 101 * 64, grown             # ~10 bytes and a header each
    want = digest(c, "log")
    kill9(d)
    t = start(start_daemon, work, clock_ns=d.clock.ns)
    assert digest(t.raw(), "log") == want
    assert t.stop() == []
    u = start(start_daemon, work, clock_ns=d.clock.ns + 61 * 10 ** 9)
    assert u.raw().command("EXISTS", "log") == b":0\r\n"
