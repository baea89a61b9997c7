"""What the command-level fuzzer found (issue 14), one test per finding, at
the level a user sees: reply bytes, a restart that loads, a PING answered
while a slow command runs, used_memory under the cap, files on disk."""
import glob
import os
import signal
import threading
import time

import pytest
import redis

from harness import SANITIZE, resp_command, wait_until

OOM = "OOM command not allowed when used memory > 'maxmemory'."


def restart_on(start_daemon, old, snapdir):
    """A new daemon on old's snapshot dir, its fake clock where old's stood."""
    new = start_daemon("--dir", snapdir, fakeclock=True)
    new.clock.set(old.clock.ns)
    return new


# ---- 1. one key's memory is bounded; sizes cannot wrap ---------------------

def test_log_max_entries_stops_at_a_million(server, r):
    with pytest.raises(redis.ResponseError) as e:
        r.config_set("log-max-entries", 10000000)
    assert "log-max-entries" in str(e.value) and "1000000" in str(e.value)
    assert r.config_get("log-max-entries") == {"log-max-entries": "10000"}
    assert r.config_set("log-max-entries", 1000000)
    assert r.config_set("log-max-entries", 10000)


@pytest.mark.allocator
def test_a_log_key_with_many_windows_stays_within_log_max_entries(start_daemon):
    # Windows of 1 s and of a day on one log: the day's entries are kept,
    # but never more than log-max-entries of them, META included.
    d = start_daemon("--log-max-entries", "500", fakeclock=True)
    r = d.client()
    meta = b"m" * 1024
    before = r.info("memory")["used_memory"]
    assert r.execute_command("RL.LOG", "many", 500, 86400)[0] == 0
    for i in range(2000):
        d.clock.advance(ms=600)
        got = r.execute_command("RL.LOG", "many", 5, 1, "META", meta)
        assert got[0] == 0
    entries = r.execute_command("RL.ENTRIES", "many")
    assert len(entries) == 500
    assert entries[0][2] == meta
    grown = r.info("memory")["used_memory"] - before
    # 500 entries of 32 bytes and a META arena of at most twice 500 KB.
    assert grown < 500 * 32 + 2 * 500 * 1024 + 64 * 1024, grown


# ---- 2. whatever a running server holds, it can save and load ---------------

def test_peek_with_a_shorter_window_leaves_a_loadable_log(start_daemon, tmp_path):
    snapdir = str(tmp_path)
    d = start_daemon("--dir", snapdir, fakeclock=True)
    r = d.client()
    assert r.execute_command("RL.LOG", "k", 5, 3600, "META", "a")[:3] == [0, 5, 4]
    d.clock.advance(seconds=1.1)
    assert r.execute_command("RL.LOG", "k", 5, 1, "PEEK") == [0, 5, 4, -1, 1]
    assert r.execute_command("SAVE") is True
    assert d.stop() == []
    d2 = restart_on(start_daemon, d, snapdir)
    r2 = d2.client()
    assert [e[1:] for e in r2.execute_command("RL.ENTRIES", "k")] == [[1, b"a"]]
    assert r2.execute_command("RL.LOG", "k", 5, 3600, "PEEK")[:3] == [0, 5, 3]


def test_a_denied_shorter_window_leaves_loadable_tiers(start_daemon, tmp_path):
    snapdir = str(tmp_path)
    d = start_daemon("--dir", snapdir, fakeclock=True)
    r = d.client()
    assert r.execute_command("RL.TIERS", "t", 1, 3600)[:3] == [0, 1, 0]
    d.clock.advance(seconds=1.5)
    assert r.execute_command("RL.TIERS", "t", 1, 1, "COST", 2)[0] == 1
    assert r.execute_command("SAVE") is True
    assert d.stop() == []
    d2 = restart_on(start_daemon, d, snapdir)
    assert d2.client().execute_command("RL.TIERS", "t", 1, 3600)[0] == 1


# ---- 3. PEEK changes nothing; a shorter window erases nothing ---------------

@pytest.mark.parametrize("cmd", [("RL.LOG", "q", 1), ("RL.TIERS", "q", 1)])
def test_peek_with_a_shorter_window_keeps_the_history(start_daemon, cmd):
    d = start_daemon(fakeclock=True)
    r = d.client()
    assert r.execute_command(*cmd, 3600)[0] == 0
    assert r.execute_command(*cmd, 3600)[0] == 1
    d.clock.advance(seconds=1.2)
    assert r.execute_command(*cmd, 1, "PEEK")[:3] == [0, 1, 0]
    assert r.execute_command(*cmd, 3600)[0] == 1


@pytest.mark.parametrize("cmd", [("RL.LOG", "s", 1), ("RL.TIERS", "s", 1)])
def test_a_call_with_a_shorter_window_counts_only_its_window(start_daemon, cmd):
    d = start_daemon(fakeclock=True)
    r = d.client()
    assert r.execute_command(*cmd, 3600)[0] == 0
    d.clock.advance(seconds=2)
    # The 1 s window is empty: allowed, and counted in the hour as well.
    assert r.execute_command(*cmd, 1)[:3] == [0, 1, 0]
    assert r.execute_command(*cmd, 3600, "PEEK")[:3] == [1, 1, 0]
    assert r.pttl("s") > 3590 * 1000        # kept for the longest window


# ---- 4. maxmemory bounds keys that grow; eviction only when it helps --------

@pytest.mark.allocator
def test_maxmemory_bounds_a_growing_log(start_daemon):
    d = start_daemon("--maxmemory", "4mb", "--log-max-entries", "1000000")
    r = d.client()
    meta = b"x" * 1000
    errors = 0
    for start in range(0, 20000, 500):
        p = r.pipeline(transaction=False)
        for _ in range(500):
            p.execute_command("RL.LOG", "big", 1000000, 864000, "META", meta)
        errors += sum(isinstance(x, redis.ResponseError) and str(x) == OOM
                      for x in p.execute(raise_on_error=False))
    assert errors > 0, "the log was never refused"
    assert r.info("memory")["used_memory"] <= 4 * 1024 * 1024 + 64 * 1024
    # The log kept what it was allowed: still answers, entries intact.
    assert r.execute_command("RL.ENTRIES", "big", "COUNT", 1)[0][2] == meta


@pytest.mark.allocator
def test_maxmemory_bounds_new_tiers_buckets(start_daemon):
    # Each key gains a bucket a second; the arrays hit the ceiling.
    d = start_daemon("--maxmemory", "1mb", fakeclock=True)
    r = d.client()
    refused = 0
    for second in range(300):
        p = r.pipeline(transaction=False)
        for j in range(1000):
            p.execute_command("RL.TIERS", "tk:%d" % j, 10 ** 9, 3600)
        refused += sum(isinstance(x, redis.ResponseError) and str(x) == OOM
                       for x in p.execute(raise_on_error=False))
        d.clock.advance(seconds=1)
        if refused:
            break
    assert refused
    assert r.info("memory")["used_memory"] <= 1048576 + 64 * 1024


@pytest.mark.allocator
def test_eviction_that_cannot_help_evicts_nothing(start_daemon):
    d = start_daemon("--maxmemory", "2mb", "--maxmemory-policy", "volatile-ttl")
    r = d.client()
    p = r.pipeline(transaction=False)
    for i in range(1000):
        p.execute_command("CL.THROTTLE", "small:%d" % i, 5, 1, 60)
    p.execute()
    # A client's 3 MB name is memory no eviction can free.
    hog = d.raw()
    assert hog.command("CLIENT", "SETNAME", b"h" * (3 * 1024 * 1024)) == b"+OK\r\n"
    assert r.info("memory")["used_memory"] > 3 * 1024 * 1024
    for i in range(100):
        with pytest.raises(redis.ResponseError) as e:
            r.execute_command("CL.THROTTLE", "new:%d" % i, 5, 1, 60)
        assert str(e.value) == OOM
    assert r.info("stats")["evicted_keys"] == 0
    assert r.dbsize() == 1000
    hog.close()


# ---- 5. KEYS and SCAN MATCH cannot freeze the server ------------------------

@pytest.mark.parametrize("pattern", [
    b"*" + b"a" * 100000 + b"b",            # the fuzzer's: one long literal
    b"*" + b"[a]" * 30000 + b"b",           # the same with classes
    b"*" + b"?" * 60000 + b"b",
    b"*a" * 3000 + b"*b",                   # many stars
], ids=["literal", "classes", "questions", "stars"])
def test_a_hostile_pattern_leaves_the_server_responsive(start_daemon, pattern):
    d = start_daemon()
    r = d.client()
    r.execute_command("RL.FIXED", b"a" * 200000, 5, 3600)
    r.execute_command("RL.FIXED", b"a" * 1000 + b"b", 5, 3600)
    slow = d.raw(timeout=60)
    slow.send(resp_command("KEYS", pattern) + resp_command("SCAN", 0, "MATCH", pattern,
                                                           "COUNT", 1000))
    time.sleep(0.02)
    other = d.raw()
    t0 = time.monotonic()
    assert other.command("PING") == b"+PONG\r\n"
    assert time.monotonic() - t0 < 1.0, "PING waited behind KEYS"
    keys = slow.reply_bytes(timeout=10)
    scan = slow.reply_bytes(timeout=10)
    assert keys.startswith(b"*")
    assert scan.startswith(b"*2\r\n$1\r\n0\r\n")


def test_patterns_give_redis_answers(server, r, redis_server):
    """Random patterns of glob syntax, KEYS on both servers, byte for byte."""
    import random
    rnd = random.Random(14)
    alphabet = b"abAB-]\\*?[^z\x80\xff"
    ref = redis_server.client()
    keys = {b""} | {bytes(rnd.choice(alphabet) for _ in range(rnd.randint(1, 6)))
                    for _ in range(300)}
    p, q = r.pipeline(transaction=False), ref.pipeline(transaction=False)
    for k in keys:
        p.execute_command("RL.FIXED", k, 5, 3600)
        q.set(k, 1)
    p.execute()
    q.execute()
    patterns = [bytes(rnd.choice(alphabet) for _ in range(rnd.randint(1, 8)))
                for _ in range(3000)]
    patterns += [b"**", b"[a-]", b"[a-]]*", b"[\x81-\x7f]", b"*a" * 1001 + b"*",
                 b"*a" * 1000 + b"*", b"a\\", b"[^", b"["]
    for pat in patterns:
        assert sorted(r.keys(pat)) == sorted(ref.keys(pat)), pat


# ---- 6. the sanitizer build runs ordinary commands --------------------------

def test_meta_after_an_entry_without_meta(server, r):
    assert r.execute_command("RL.LOG", "m", 10, 60)[:3] == [0, 10, 9]
    assert r.execute_command("RL.LOG", "m", 10, 60, "META", "x")[:3] == [0, 10, 8]
    assert [e[2] for e in r.execute_command("RL.ENTRIES", "m")] == [b"x", None]


# ---- 7. no CONFIG SET locks clients out; values are binary ------------------

@pytest.mark.allocator
@pytest.mark.parametrize("name,value,why", [
    ("proto-max-args", "1", "between 1024 and"),
    ("proto-max-args", "1\x00junk", "NUL byte"),
    ("proto-max-bulk-len", "1", "between 1048576 and"),
    ("client-query-buffer-limit", "1", "between 1048576 and"),
    ("maxmemory", "1\x00gb", "NUL byte"),
    ("replica-announce-ip", "a\x00b", "NUL byte"),  # a password may hold NULs
    ("dbfilename", "a\x00b", "protected config"),   # as Redis 7, by default
])
def test_config_set_refuses_what_would_lock_clients_out(server, name, value, why):
    conn = server.raw()
    got = conn.command("CONFIG", "SET", name, value.encode("latin-1"))
    assert got.startswith(b"-ERR CONFIG SET failed (possibly related to argument '%s') - "
                          % name.encode()), got
    assert why.encode() in got
    assert conn.command("CL.THROTTLE", "after", 5, 1, 60).startswith(b"*5\r\n:0\r\n")
    assert conn.command("CONFIG", "GET", "maxmemory") == \
        b"*2\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n"


def test_config_set_name_with_a_nul_is_unknown(server):
    got = server.raw().command("CONFIG", "SET", b"maxmemory\x00xyz", "5")
    assert got == b"-ERR Unknown option or number of arguments for CONFIG SET - 'maxmemory'\r\n"


@pytest.mark.allocator
def test_config_set_rolls_back_an_option_named_twice(server, r):
    with pytest.raises(redis.ResponseError):
        r.execute_command("CONFIG", "SET", "maxmemory", "1mb", "maxmemory", "2mb",
                          "hz", "0")
    assert r.config_get("maxmemory") == {"maxmemory": "0"}


# ---- 8. a BGSAVE child that dies leaves no temporary file -------------------

def test_a_killed_bgsave_child_leaves_no_temp_file(start_daemon, tmp_path):
    """The child is held open (rdb-key-save-delay: 2 ms a key, 1,000 keys,
    as Redis's own tests hold one) and killed while its temporary file
    exists: no race decides whether the test sees it writing."""
    snapdir = str(tmp_path)
    d = start_daemon("--dir", snapdir, "--rdb-key-save-delay", 2000)
    r = d.client()
    p = r.pipeline(transaction=False)
    for i in range(1000):
        p.execute_command("RL.LOG", "key:%d" % i, 5, 3600, "META", "x" * 64)
    p.execute()
    children = "/proc/%d/task/%d/children" % (d.proc.pid, d.proc.pid)

    def child():
        with open(children) as f:
            pids = f.read().split()
        return int(pids[0]) if pids else None

    assert r.execute_command("BGSAVE") is True
    assert wait_until(lambda: child() is not None, 10)
    pid = child()
    assert wait_until(
        lambda: glob.glob(os.path.join(snapdir, "*.tmp-%d" % pid)) != [], 10)
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: r.info("persistence")["rdb_bgsave_in_progress"] == 0, 10)
    assert r.info("persistence")["rdb_last_bgsave_status"] == "err"
    assert glob.glob(os.path.join(snapdir, "*.tmp-*")) == []
    assert "terminated by signal 9" in d.log()


# ---- 9. CLIENT LIST / CLIENT INFO keep long lines whole --------------------

def test_client_list_keeps_a_long_name_whole(server):
    conn = server.raw()
    name = b"n" * 3000
    assert conn.command("CLIENT", "SETNAME", name) == b"+OK\r\n"
    other = server.raw()
    listing = other.command("CLIENT", "LIST").split(b"\r\n", 1)[1][:-2]
    lines = listing.split(b"\n")
    assert lines[-1] == b""
    mine = [l for l in lines if b" name=" + name + b" " in l]
    assert len(mine) == 1 and mine[0].endswith(b"lib-ver=")
    info = conn.command("CLIENT", "INFO").split(b"\r\n", 1)[1][:-2]
    assert info.endswith(b"lib-ver=\n") and b" name=" + name + b" " in info


# ---- issue 25, item 3: `now + a value a client sent` -----------------------

BIG = "9223372036854775807"


@pytest.mark.parametrize("cmd", [
    ("CL.THROTTLE", "k", 1, 1, BIG), ("CL.THROTTLE", "k", 1, 1, 1, BIG),
    ("CL.THROTTLE", "k", BIG, 1, BIG, BIG), ("GCRA", "g", BIG, BIG, 1),
    ("INCREX", "i", "EX", BIG), ("INCREX", "i", "PX", BIG),
    ("INCREX", "i", "EXAT", BIG), ("INCREX", "i", "PXAT", BIG),
    ("INCREX", "i", "PX", "9223372036854775000"),
    ("RL.FIXED", "f", 1, BIG), ("RL.FIXED", "f", BIG, 1, "MS"),
    ("RL.SLIDING", "s", 1, BIG), ("RL.LOG", "l", 1, BIG),
    ("RL.LOG", "l", 5, 86400, "COST", BIG), ("RL.TIERS", "t", 5, 1, BIG, BIG),
    ("CLIENT", "KILL", "MAXAGE", BIG), ("WAIT", 0, BIG),
])
def test_a_time_past_the_clock_s_range_is_answered_not_overflowed(server, cmd):
    """Every argument a command adds to the clock, at its largest: an answer
    (a value or an error), never an overflow (the sanitizer build aborts on
    one: INCREX PXAT 2^63-1 did) and the server keeps serving."""
    c = server.raw()
    reply = c.command(*cmd)
    assert reply[:1] in (b"*", b":", b"-", b"+", b"$"), reply
    assert c.command("PING") == b"+PONG\r\n"


def test_increx_pxat_at_the_end_of_time_is_kept_as_redis_keeps_it(server):
    r = server.client()
    assert r.execute_command("INCREX", "far", "PXAT", BIG) == [1, 1]
    # Expiry is kept in ms over Redis's whole range (it once stopped at
    # the ns clock's end, 2262, and dropped it).
    assert r.execute_command("PEXPIRETIME", "far") == int(BIG)
    assert r.pttl("far") > 2 ** 62
