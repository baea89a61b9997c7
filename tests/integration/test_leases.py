"""Concurrency leases (RL.ACQUIRE, RL.REFRESH, RL.RELEASE, RL.LEASES):
at most `limit` holders at a time, each slot freed by its holder or by the
end of its lease, whatever happened to the holder (kill -9), the server
(kill -9 with the journal) or the primary (a replica promoted), with 50
clients at work; WAIT's first come, first served queue, its timeout, a
lease's end, CLIENT PAUSE, a demoted primary, a cluster slot moving;
WATCH, keyspace events; DUMP/RESTORE and MIGRATE between two servers."""
import os
import random
import re
import signal
import time

import pytest

import harness
from test_journal import JOURNAL, kill9
from test_replication import caught_up, follow, pair

LEASE = re.compile(rb"^\*6\r\n:([01])\r\n:(\d+)\r\n:(\d+)\r\n:(-?\d+)\r\n:(\d+)\r\n"
                   rb"(?:\$-1|\$\d+\r\n([^\r]*))\r\n$")


def acquire(c, *args):
    """RL.ACQUIRE's reply as (limited, limit, remaining, retry, reset,
    holder or None)."""
    raw = c.command("RL.ACQUIRE", *args)
    m = LEASE.match(raw)
    assert m, raw
    return tuple(int(m.group(i)) for i in range(1, 6)) + (m.group(6),)


def leases(c, key, *ms):
    """RL.LEASES as [(holder, ttl)]."""
    raw = c.command("RL.LEASES", key, *ms)
    parts = raw.split(b"\r\n")
    n = int(parts[0][1:])
    out = []
    for i in range(n):
        holder = parts[3 + i * 4]
        ttl = int(parts[4 + i * 4][1:])
        out.append((holder, ttl))
    return out


# ---- replies, one client ------------------------------------------------------

def test_acquire_refresh_release_replies(fserver):
    c = fserver.raw()
    assert c.command("RL.ACQUIRE", "k", 2, 10, "HOLDER", "a") == (
        b"*6\r\n:0\r\n:2\r\n:1\r\n:-1\r\n:10\r\n$1\r\na\r\n")
    # A retry (a lost reply) keeps its one slot.
    assert acquire(c, "k", 2, 10, "HOLDER", "a") == (0, 2, 1, -1, 10, b"a")
    granted = acquire(c, "k", 2, 5)
    assert granted[:5] == (0, 2, 0, -1, 5)
    other = granted[5]
    assert re.fullmatch(rb"[0-9a-f]{16}", other)
    # Full: retry_after to the first end, reset_after to the last; the
    # holder given is answered, none when none was given.
    assert acquire(c, "k", 2, 10, "HOLDER", "c") == (1, 2, 0, 5, 10, b"c")
    assert c.command("RL.ACQUIRE", "k", 2, 10)[-5:] == b"$-1\r\n"
    assert acquire(c, "k", 2, 10, "HOLDER", "c", "MS") == (1, 2, 0, 5000, 10000, b"c")
    assert leases(c, "k") == [(b"a", 10), (other, 5)]
    assert c.command("TYPE", "k") == b"+lease\r\n"
    assert c.command("PTTL", "k") == b":10000\r\n"
    # A higher limit on a later call lets c in.
    assert acquire(c, "k", 3, 10, "HOLDER", "c") == (0, 3, 0, -1, 10, b"c")
    # PEEK changes nothing.
    assert acquire(c, "k", 4, 10, "HOLDER", "d", "PEEK") == (0, 4, 0, -1, 10, b"d")
    assert acquire(c, "k", 4, 10, "PEEK")[5] is None
    assert len(leases(c, "k")) == 3
    # Refresh: the lease ends lease from now, shorter or longer.
    assert c.command("RL.REFRESH", "k", "a", 3) == b":1\r\n"
    assert c.command("RL.REFRESH", "k", "a", 20000, "MS") == b":1\r\n"
    assert leases(c, "k", "MS")[0] == (b"a", 20000)
    assert c.command("PTTL", "k") == b":20000\r\n"
    assert c.command("RL.REFRESH", "k", "nobody", 3) == b":0\r\n"
    # Release: once, never below zero, idempotent.
    assert c.command("RL.RELEASE", "k", "a") == b":1\r\n"
    assert c.command("RL.RELEASE", "k", "a") == b":0\r\n"
    assert c.command("RL.RELEASE", "k", "zz") == b":0\r\n"
    assert c.command("RL.RELEASE", "none", "a") == b":0\r\n"
    assert c.command("RL.REFRESH", "k", "a", 3) == b":0\r\n"    # not taken again
    assert [h for h, _ in leases(c, "k")] == [other, b"c"]
    assert c.command("PTTL", "k") == b":10000\r\n"
    assert c.command("RL.RELEASE", "k", other) == b":1\r\n"
    assert c.command("RL.RELEASE", "k", "c") == b":1\r\n"
    assert c.command("EXISTS", "k") == b":0\r\n"
    assert c.command("RL.LEASES", "k") == b"*0\r\n"


def test_errors(fserver):
    c = fserver.raw()
    c.command("SET", "s", "x")
    bad = {
        ("RL.ACQUIRE", "k", 0, 10): b"-ERR limit and lease must be positive\r\n",
        ("RL.ACQUIRE", "k", 1, 0): b"-ERR limit and lease must be positive\r\n",
        ("RL.ACQUIRE", "k", 100001, 1): b"-ERR limit is above 100000\r\n",
        ("RL.ACQUIRE", "k", "x", 1): b"-ERR value is not an integer or out of range\r\n",
        ("RL.ACQUIRE", "k", 1, "1.5"): b"-ERR value is not an integer or out of range\r\n",
        ("RL.ACQUIRE", "k", 1, 1, "HOLDER", ""): b"-ERR holder must be 1 to 256 bytes\r\n",
        ("RL.ACQUIRE", "k", 1, 1, "HOLDER", "h" * 257): b"-ERR holder must be 1 to 256 bytes\r\n",
        ("RL.ACQUIRE", "k", 1, 1, "HOLDER", "peek"): b"-ERR holder cannot be the word PEEK\r\n",
        ("RL.ACQUIRE", "k", 1, 1, "WAIT", -1): b"-ERR WAIT must be 0 to 3600 seconds\r\n",
        ("RL.ACQUIRE", "k", 1, 1, "WAIT", 3601): b"-ERR WAIT must be 0 to 3600 seconds\r\n",
        ("RL.ACQUIRE", "k", 1, 1, "WAIT"): b"-ERR syntax error\r\n",
        ("RL.ACQUIRE", "k", 1, 1, "NOPE"): b"-ERR syntax error\r\n",
        ("RL.ACQUIRE", "k", 1, 9223372036854775807): b"-ERR value is not an integer or out of range\r\n",
        ("RL.ACQUIRE", "s", 1, 1): b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
        ("RL.RELEASE", "s", "a"): b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
        ("RL.REFRESH", "k", "a", 0): b"-ERR limit and lease must be positive\r\n",
        ("RL.REFRESH", "k", "a", 1, "X"): b"-ERR syntax error\r\n",
        ("RL.LEASES", "k", "X"): b"-ERR syntax error\r\n",
        ("RL.RELEASE", "k"): b"-ERR wrong number of arguments for 'rl.release' command\r\n",
    }
    for args, want in bad.items():
        assert c.command(*args) == want, args
    assert c.command("KEYS", "*") == b"*1\r\n$1\r\ns\r\n"
    # With MS, WAIT is in ms too: 3600000 is the bound.
    assert acquire(c, "k", 1, 1, "WAIT", 3600000, "MS")[0] == 0


def test_expired_leases_free_their_slots_by_themselves(fserver):
    c = fserver.raw()
    clock = fserver.clock
    assert acquire(c, "k", 3, 1000, "HOLDER", "a", "MS")[0] == 0
    assert acquire(c, "k", 3, 2000, "HOLDER", "b", "MS")[0] == 0
    assert acquire(c, "k", 3, 3000, "HOLDER", "c", "MS")[0] == 0
    assert acquire(c, "k", 3, 1, "HOLDER", "x")[:3] == (1, 3, 0)
    clock.advance(ms=999)
    assert acquire(c, "k", 3, 1, "HOLDER", "x", "PEEK")[:3] == (1, 3, 0)
    clock.advance(ms=1)                 # a's lease ends: its slot is free
    assert acquire(c, "k", 3, 1, "HOLDER", "x", "PEEK") == (0, 3, 0, -1, 1, b"x")
    assert [h for h, _ in leases(c, "k")] == [b"b", b"c"]
    assert c.command("RL.RELEASE", "k", "a") == b":0\r\n"     # after its end
    assert c.command("RL.REFRESH", "k", "a", 5) == b":0\r\n"
    clock.advance(ms=2001)              # every lease ended: the key goes
                                        # (it lives through its last ms)
    assert c.command("RL.LEASES", "k") == b"*0\r\n"
    assert harness.wait_until(lambda: fserver.info("keyspace").get("db0") is None, 5)


def test_wait_inside_multi_and_scripts_never_blocks(fserver):
    c = fserver.raw()
    acquire(c, "k", 1, 60, "HOLDER", "a")
    c.command("MULTI")
    assert c.command("RL.ACQUIRE", "k", 1, 60, "HOLDER", "b", "WAIT", 10) == b"+QUEUED\r\n"
    got = c.command("EXEC")
    assert got.startswith(b"*1\r\n*6\r\n:1\r\n:1\r\n:0\r\n")
    got = c.command("EVAL", "return redis.call('RL.ACQUIRE', KEYS[1], 1, 60, 'WAIT', 10)",
                    1, "k")
    assert got.startswith(b"*6\r\n:1\r\n")


# ---- WAIT ----------------------------------------------------------------------

def blocked_clients(d):
    return int(d.info("clients")["blocked_clients"])


def test_wait_serves_waiters_first_come_first_served(start_daemon):
    d = start_daemon()
    c = d.raw()
    assert acquire(c, "k", 1, 60, "HOLDER", "a")[0] == 0
    waiters = []
    for i, name in enumerate(["w1", "w2", "w3", "w4"]):
        w = d.raw()
        w.send(harness.resp_command("RL.ACQUIRE", "k", 1, 60, "HOLDER", name,
                                    "WAIT", 20))
        assert harness.wait_until(lambda: blocked_clients(d) == i + 1, 10)
        waiters.append(w)
    # Nobody else waits for them.
    assert c.command("PING") == b"+PONG\r\n"
    assert acquire(c, "other", 1, 60)[0] == 0
    waiters[1].close()                  # w2 leaves the queue by going
    assert harness.wait_until(lambda: blocked_clients(d) == 3, 10)
    assert c.command("RL.RELEASE", "k", "a") == b":1\r\n"
    assert LEASE.match(waiters[0].reply_bytes()).group(1) == b"0"
    assert [h for h, _ in leases(c, "k")] == [b"w1"]
    assert blocked_clients(d) == 2
    assert c.command("RL.RELEASE", "k", "w1") == b":1\r\n"
    m = LEASE.match(waiters[2].reply_bytes())
    assert m.group(1) == b"0" and m.group(6) == b"w3"
    assert [h for h, _ in leases(c, "k")] == [b"w3"]
    # A higher limit on a later call frees a slot: the waiter's own limit
    # still decides for it.
    assert acquire(c, "k", 2, 60, "HOLDER", "b")[0] == 0
    assert blocked_clients(d) == 1
    assert c.command("RL.RELEASE", "k", "b") == b":1\r\n"
    assert blocked_clients(d) == 1      # w3 holds w4's one slot
    assert c.command("RL.RELEASE", "k", "w3") == b":1\r\n"
    assert LEASE.match(waiters[3].reply_bytes()).group(6) == b"w4"
    assert blocked_clients(d) == 0


def test_wait_ends_at_a_lease_end_or_at_its_timeout(start_daemon):
    d = start_daemon()
    c = d.raw()
    assert acquire(c, "k", 1, 400, "HOLDER", "a", "MS")[0] == 0
    w = d.raw()
    t0 = time.monotonic()
    got = acquire(w, "k", 1, 60000, "HOLDER", "b", "WAIT", 10000, "MS")
    took = time.monotonic() - t0
    assert got[0] == 0 and got[5] == b"b"
    assert 0.3 <= took < 5, took        # woken by a's end, not a write
    t0 = time.monotonic()
    got = acquire(w, "k", 1, 60, "HOLDER", "c", "WAIT", 300, "MS")
    took = time.monotonic() - t0
    assert got[:3] == (1, 1, 0) and got[5] == b"c"
    assert 0.29 <= took < 5, took
    # The timeout's answer reads the waiter's own database.
    other = d.raw()
    other.command("SELECT", 5)
    assert acquire(other, "k", 1, 60, "HOLDER", "x")[0] == 0
    w.command("SELECT", 5)
    w.send(harness.resp_command("RL.ACQUIRE", "k", 1, 60, "HOLDER", "y", "WAIT", 300,
                                "MS"))
    assert harness.wait_until(lambda: blocked_clients(d) == 1, 10)
    c.command("SELECT", 3)
    c.command("PING")                   # the last database selected: 3
    assert LEASE.match(w.reply_bytes()).group(1) == b"1"
    w.command("SELECT", 0)
    c.command("SELECT", 0)
    # The key deleted under a waiter: its slot is free at once.
    w.send(harness.resp_command("RL.ACQUIRE", "k", 1, 60, "HOLDER", "e", "WAIT", 20))
    assert harness.wait_until(lambda: blocked_clients(d) == 1, 10)
    assert c.command("DEL", "k") == b":1\r\n"
    assert LEASE.match(w.reply_bytes()).group(1) == b"0"


# ---- fifty clients, some killed -------------------------------------------------

LIMIT = 5


def worker(port, idx, key, stop_at, out_fd, seed, replicated=False):
    """Acquire, hold, release until stop_at, reporting on out_fd a line
    each (times: time.time()): G holder t0 t1 lease_ms, a grant asked at
    t0 and answered at t1; S holder t2, its release about to be sent; R
    holder, its release answered. replicated: a grant counts once WAIT 1
    says a replica has it (what survives a failover)."""
    rnd = random.Random(seed)
    c = harness.RawConn(port=port)
    n = 0
    while time.time() < stop_at:
        n += 1
        holder = "w%d-%d" % (idx, n)
        lease_ms = rnd.randint(200, 900)
        t0 = time.time()
        got = acquire(c, key, LIMIT, lease_ms, "HOLDER", holder, "MS")
        t1 = time.time()
        if got[0]:
            time.sleep(min(got[3], 50) / 1000.0)
            continue
        if rnd.random() < 0.3:          # a retry after a lost reply
            again = acquire(c, key, LIMIT, lease_ms, "HOLDER", holder, "MS")
            assert again[0] == 0 or time.time() > t1 + lease_ms / 1000.0
            t1 = time.time()            # it may have moved the lease's end
        if replicated:
            if c.command("WAIT", 1, 2000) != b":1\r\n":
                continue                # the primary died with it
            t1 = time.time()
        os.write(out_fd, ("G %s %.6f %.6f %d\n" % (holder, t0, t1, lease_ms)).encode())
        hold = rnd.uniform(0.02, lease_ms / 1000.0 * 1.3)
        time.sleep(hold)
        t2 = time.time()
        os.write(out_fd, ("S %s %.6f\n" % (holder, t2)).encode())
        first = c.command("RL.RELEASE", key, holder)
        os.write(out_fd, ("R %s\n" % holder).encode())
        if t2 > t1 + lease_ms / 1000.0:
            assert first == b":0\r\n", (holder, "released after its end")
        assert c.command("RL.RELEASE", key, holder) == b":0\r\n"
    os._exit(0)


def spawn(port, idx, key, stop_at, server_may_die=False, replicated=False):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            worker(port, idx, key, stop_at, w, idx * 7919, replicated)
        except (OSError, EOFError, TimeoutError):
            if not server_may_die:
                raise
            os._exit(0)                 # the server was killed under it
        except BaseException as e:       # noqa: B036 - reported to the parent
            os.write(w, ("E %r\n" % (e,)).encode()[:500])
            os._exit(1)
    os.close(w)
    return pid, r


def read_all(fd):
    chunks = []
    while True:
        b = os.read(fd, 65536)
        if not b:
            break
        chunks.append(b)
    os.close(fd)
    return b"".join(chunks).decode()


def intervals(texts):
    """The grants as (holder, start, end): start when the grant's reply came,
    end the earliest the server may have ended it (its release sent, line
    S, else its lease from the request's sending): the server held each at least
    over [start, end), so at no instant may more than LIMIT overlap."""
    grants, ends, released, errors = {}, {}, set(), []
    for text in texts:
        for line in text.splitlines():
            w = line.split()
            if w[0] == "G":
                grants[w[1]] = (float(w[2]), float(w[3]), int(w[4]))
            elif w[0] == "S":
                ends[w[1]] = float(w[2])
            elif w[0] == "R":
                released.add(w[1])
            elif w[0] == "E":
                errors.append(line)
    out = []
    for h, (t0, t1, ms) in grants.items():
        # The server's lease ends at its ms (floor) + lease: up to 1 ms
        # before t0 + lease.
        end = min(ends.get(h, float("inf")), t0 + ms / 1000.0 - 0.0011)
        if end > t1:
            out.append((h, t1, end))
    return out, grants, released, errors


def max_overlap(iv):
    events = sorted([(s, 1) for _, s, _ in iv] + [(e, -1) for _, _, e in iv],
                    key=lambda x: (x[0], x[1]))
    most = now = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


def run_fifty(d, key, seconds=4.0, kills=8):
    stop_at = time.time() + seconds
    kids = [spawn(d.port, i, key, stop_at) for i in range(50)]
    watcher = d.raw()
    samples = []                        # (time, holders) of RL.LEASES
    killed = set()
    kill_at = time.time() + seconds / 3
    while time.time() < stop_at + 0.2:
        now = time.time()
        samples.append((now, [h for h, _ in leases(watcher, key)]))
        assert len(samples[-1][1]) <= LIMIT
        if not killed and now >= kill_at and samples[-1][1]:
            # The holders of the moment first (their slots must come back
            # by themselves), then others.
            holding = [kids[int(h.split(b"-")[0][1:])] for h in samples[-1][1]]
            others = random.Random(1).sample(kids, kills)
            for pid, _ in (holding + others)[:kills]:
                if pid not in killed:
                    os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
        time.sleep(0.02)
    texts = []
    for pid, fd in kids:
        texts.append(read_all(fd))
        _, status = os.waitpid(pid, 0)
        if pid not in killed:
            assert status == 0, texts[-1][-500:]
    return texts, samples


def overlapping(iv):
    """The intervals at the instant most overlap."""
    most = []
    for _, s, _ in iv:
        at = [x for x in iv if x[1] <= s < x[2]]
        most = at if len(at) > len(most) else most
    return sorted(most, key=lambda x: x[1])


def check_fifty(texts, samples, tolerance):
    iv, grants, released, errors = intervals(texts)
    assert errors == []
    assert len(grants) > 3 * LIMIT
    assert max_overlap(iv) <= LIMIT, overlapping(iv)
    # Holders never released (their process killed) are gone from the
    # server within their lease, measured from when the grant came back.
    unreleased = {h: g for h, g in grants.items() if h not in released}
    assert unreleased, (len(grants), len(released))
    for t, holders in samples:
        for h in holders:
            h = h.decode()
            if h in unreleased:
                t1, ms = unreleased[h][1], unreleased[h][2]
                assert t <= t1 + ms / 1000.0 + tolerance, (h, t - t1, ms)


def test_fifty_clients_some_killed_never_exceed_the_limit(start_daemon):
    d = start_daemon()
    texts, samples = run_fifty(d, "conc")
    check_fifty(texts, samples, 0.25)
    c = d.raw()
    assert harness.wait_until(lambda: c.command("EXISTS", "conc") == b":0\r\n", 5)
    assert acquire(c, "conc", LIMIT, 1)[:3] == (0, LIMIT, LIMIT - 1)


def sample_leases(d, key):
    """RL.LEASES' holders now, on a connection of its own (the server may
    be down: None then)."""
    try:
        c = harness.RawConn(port=d.port, timeout=2)
        try:
            return [h for h, _ in leases(c, key)]
        finally:
            c.close()
    except (OSError, EOFError, TimeoutError):
        return None


def across(d, successor, replicated=False):
    """Fifty clients in two phases of 25 on key conc: the first on d, which
    is killed -9 in the middle, the second on successor(d) (d restarted,
    or its replica promoted). One long lease taken before must be held
    after; the limit holds across (the long lease's slot aside), and the
    holders the kill cut off are gone within their leases."""
    key = "conc"
    texts, samples = [], []
    c = d.raw()
    assert acquire(c, key, LIMIT, 30, "HOLDER", "keeper")[0] == 0
    if replicated:
        assert c.command("WAIT", 1, 5000) == b":1\r\n"
    for phase in range(2):
        stop_at = time.time() + 2.5
        kids = [spawn(d.port, phase * 50 + i, key, stop_at, True, replicated)
                for i in range(25)]
        kill_at = time.time() + 1.2
        while time.time() < stop_at + 0.2:
            now = time.time()
            got = sample_leases(d, key)
            if got is not None:
                samples.append((now, got))
                assert len(got) <= LIMIT
            if phase == 0 and d.alive() and now >= kill_at:
                kill9(d)
            time.sleep(0.02)
        for pid, fd in kids:
            texts.append(read_all(fd))
            _, status = os.waitpid(pid, 0)
            assert status == 0, texts[-1][-500:]
        if phase == 0:
            d = successor(d)
            assert b"keeper" in sample_leases(d, key)
    assert d.raw().command("RL.RELEASE", key, "keeper") == b":1\r\n"
    iv, grants, released, errors = intervals(texts)
    assert errors == []
    assert max_overlap(iv) <= LIMIT - 1, overlapping(iv)     # the keeper's slot
    unreleased = {h: g for h, g in grants.items() if h not in released}
    assert unreleased
    for t, holders in samples:
        for h in holders:
            h = h.decode()
            if h in unreleased:
                t1, ms = unreleased[h][1], unreleased[h][2]
                assert t <= t1 + ms / 1000.0 + 0.25, (h, t - t1, ms)


def test_fifty_clients_across_a_kill9_of_the_server(start_daemon, tmp_path):
    """Restarted from its journal (appendfsync always: an answered grant
    is on disk)."""
    work = str(tmp_path / "j")
    os.makedirs(work)
    args = ("--dir", work, *JOURNAL, "--appendfsync", "always")
    d = start_daemon(*args)
    across(d, lambda dead: start_daemon(*args, port=dead.port))


def test_fifty_clients_across_a_failover(start_daemon):
    """The primary killed, its replica promoted; a grant counts once a
    replica has it (WAIT 1)."""
    p = start_daemon(name="primary")
    r = start_daemon(name="replica")
    follow(r, p)

    def promote(dead):
        assert r.raw().command("REPLICAOF", "NO", "ONE") == b"+OK\r\n"
        return r
    across(p, promote, replicated=True)


# ---- the server killed, a replica promoted, DUMP/RESTORE -------------------------

def fill(c):
    for i, ms in enumerate([30000, 60000, 90000]):
        assert acquire(c, "k", 3, ms, "HOLDER", "h%d" % i, "MS")[0] == 0
    assert acquire(c, "k", 3, 1, "HOLDER", "late")[0] == 1
    assert c.command("RL.RELEASE", "k", "h0") == b":1\r\n"
    assert acquire(c, "k", 3, 45000, "HOLDER", "h3", "MS")[0] == 0


def same_leases(c):
    assert leases(c, "k", "MS") == [(b"h1", 60000), (b"h2", 90000), (b"h3", 45000)]
    assert c.command("PTTL", "k") == b":90000\r\n"
    assert acquire(c, "k", 3, 1, "HOLDER", "late")[0] == 1
    assert c.command("RL.RELEASE", "k", "h0") == b":0\r\n"
    assert c.command("RL.RELEASE", "k", "h1") == b":1\r\n"
    assert c.command("RL.RELEASE", "k", "h1") == b":0\r\n"
    assert acquire(c, "k", 3, 1, "HOLDER", "h2")[:3] == (0, 3, 1)     # its one slot


def test_leases_survive_kill9_through_the_journal(start_daemon, tmp_path):
    work = str(tmp_path / "j")
    os.makedirs(work)
    d = start_daemon("--dir", work, *JOURNAL, fakeclock=True)
    fill(d.raw())
    kill9(d)
    d2 = start_daemon("--dir", work, *JOURNAL, fakeclock=True)
    d2.clock.set(d.clock.ns)
    same_leases(d2.raw())


def test_leases_survive_a_failover_to_a_replica(start_daemon):
    p, r = pair(start_daemon)
    follow(r, p)
    pc = p.raw()
    fill(pc)
    assert caught_up(p, r)
    rc = r.raw()
    assert rc.command("RL.ACQUIRE", "k", 3, 1).startswith(b"-READONLY")
    assert acquire(rc, "k", 3, 1, "HOLDER", "x", "PEEK")[0] == 1
    kill9(p)
    assert rc.command("REPLICAOF", "NO", "ONE") == b"+OK\r\n"
    same_leases(rc)


def test_dump_restore_between_two_servers_keeps_leases_and_ttl(start_daemon):
    a = start_daemon(fakeclock=True, name="a")
    b = start_daemon(fakeclock=True, name="b")
    b.clock.set(a.clock.ns)
    ac, bc = a.client(), b.client()
    fill(a.raw())
    payload = ac.dump("k")
    pttl = ac.pttl("k")
    assert bc.restore("k", pttl, payload)
    same_leases(b.raw())
    # MIGRATE carries it whole too.
    a.raw().command("MIGRATE", "127.0.0.1", b.port, "k", 0, 5000, "REPLACE")
    assert ac.exists("k") == 0
    assert leases(b.raw(), "k", "MS") == [(b"h1", 60000), (b"h2", 90000), (b"h3", 45000)]


# ---- a cluster's slot moving under waiters ------------------------------------------

def test_waiters_on_a_migrating_slot_are_sent_on(tmp_path):
    """Waiters whose key leaves the node (MIGRATE deletes it once copied;
    here a DEL on a MIGRATING slot stands in) are answered where the key
    now is, as Redis redirects blocked clients: -ASK while the slot is
    migrating, -MOVED once it is the other node's."""
    from test_cluster_enabled import B, start_cellgate, two_node_file, wait_state
    b_port = harness.free_port()
    d = start_cellgate(tmp_path, "cg", two_node_file(b_port))
    try:
        wait_state(d.port, "ok")
        key = next(k for k in ("lease:%d" % i for i in range(1000))
                   if harness.reference_slot(k) < 8192)
        slot = harness.reference_slot(key)
        c = d.raw()
        assert acquire(c, key, 1, 60, "HOLDER", "a")[0] == 0
        w = d.raw()
        w.send(harness.resp_command("RL.ACQUIRE", key, 1, 60, "WAIT", 20))
        assert harness.wait_until(lambda: blocked_clients(d) == 1, 10)
        assert c.command("CLUSTER", "SETSLOT", slot, "MIGRATING", B) == b"+OK\r\n"
        assert c.command("DEL", key) == b":1\r\n"
        assert w.reply_bytes() == b"-ASK %d 127.0.0.1:%d\r\n" % (slot, b_port)
        assert blocked_clients(d) == 0
    finally:
        d.stop()


# ---- WATCH, CLIENT PAUSE, a primary turned replica ---------------------------------

def test_watch_sees_a_release_and_an_acquire(fserver):
    c, other = fserver.raw(), fserver.raw()
    acquire(c, "k", 2, 60, "HOLDER", "a")
    for change in (("RL.RELEASE", "k", "a"), ("RL.ACQUIRE", "k", 2, 60, "HOLDER", "b")):
        assert c.command("WATCH", "k") == b"+OK\r\n"
        assert other.command(*change).startswith((b":1", b"*6"))
        c.command("MULTI")
        c.command("RL.LEASES", "k")
        assert c.command("EXEC") == b"*-1\r\n"
    # A PEEK and a denial change nothing: EXEC runs.
    acquire(c, "k", 1, 60, "HOLDER", "c")
    assert c.command("WATCH", "k") == b"+OK\r\n"
    assert acquire(other, "k", 1, 60, "HOLDER", "d")[0] == 1
    assert acquire(other, "k", 9, 60, "HOLDER", "d", "PEEK")[0] == 0
    c.command("MULTI")
    c.command("PING")
    assert c.command("EXEC") == b"*1\r\n+PONG\r\n"


def held_and_awaited(d, lease_ms):
    """Key k full (limit 1, holder a for lease_ms) and a client waiting
    for it (holder b): (the first client, the waiter)."""
    c = d.raw()
    assert acquire(c, "k", 1, lease_ms, "HOLDER", "a", "MS")[0] == 0
    w = d.raw()
    w.send(harness.resp_command("RL.ACQUIRE", "k", 1, 60, "HOLDER", "b", "WAIT", 10))
    assert harness.wait_until(lambda: blocked_clients(d) == 1, 10)
    return c, w


def test_a_pause_holds_a_waiters_grant_until_it_ends(start_daemon):
    d = start_daemon()
    c, w = held_and_awaited(d, 800)
    t0 = time.monotonic()
    assert c.command("CLIENT", "PAUSE", 2000, "WRITE") == b"+OK\r\n"
    got = LEASE.match(w.reply_bytes())
    assert got.group(1) == b"0" and got.group(6) == b"b"
    assert time.monotonic() - t0 >= 1.95       # a's end came in the pause


def test_a_waiter_on_a_primary_turned_replica_is_refused(start_daemon):
    other = start_daemon(name="other")
    d = start_daemon()
    c, w = held_and_awaited(d, 300)
    assert c.command("REPLICAOF", "127.0.0.1", other.port) == b"+OK\r\n"
    assert w.reply_bytes() == b"-READONLY You can't write against a read only replica.\r\n"


def test_keyspace_events(fserver):
    c = fserver.raw()
    c.command("CONFIG", "SET", "notify-keyspace-events", "Eg$")
    sub = fserver.raw()
    assert sub.command("PSUBSCRIBE", "__keyevent@0__:*").startswith(b"*3\r\n$10\r\npsubscribe")
    try:
        acquire(c, "k", 1, 60, "HOLDER", "a")
        acquire(c, "k", 1, 60, "HOLDER", "b")          # denied: nothing
        acquire(c, "k", 2, 60, "HOLDER", "b", "PEEK")  # PEEK: nothing
        c.command("RL.REFRESH", "k", "a", 30)
        c.command("RL.RELEASE", "k", "a")
        c.command("RL.RELEASE", "k", "a")               # nothing changed: nothing
        c.command("SET", "end", "x")
        got = []
        for _ in range(20):
            m = sub.reply_bytes().split(b"\r\n")     # pmessage pattern channel key
            if m[8] == b"end":
                break
            got.append(m[6].split(b":", 1)[1])
        assert got == [b"rl.acquire", b"rl.refresh", b"rl.release"]
    finally:
        c.command("CONFIG", "SET", "notify-keyspace-events", "")
