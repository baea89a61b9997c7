"""The journal (appendonly): every acknowledged decision survives kill -9,
torn tails load with a warning, damage refuses start-up, a full disk
answers -MISCONF and recovers, and rewrites lose nothing when killed."""
import os
import random
import shutil
import socket
import struct
import subprocess
import threading
import time

import pytest

import harness
from harness import BIN, resp_command

JOURNAL = ("--appendonly", "yes", "--save", "")


def incr_files(d):
    """The journal's incr files of daemon d's folder, oldest first."""
    folder = os.path.join(d.data, "appendonlydir")
    with open(os.path.join(folder, "appendonly.aof.manifest")) as f:
        names = [line.split()[1] for line in f if " type i" in line]
    return [os.path.join(folder, n) for n in names]


def records(path):
    """(offset, length) of each record of a journal file."""
    data = open(path, "rb").read()
    assert data[:8] == b"CGJRNL03"
    out, off = [], 8
    while off < len(data):
        n, = struct.unpack_from("<I", data, off)
        out.append((off, 12 + n))
        off += 12 + n
    return out


def start(start_daemon, workdir, *args, clock_ns=None):
    os.makedirs(workdir, exist_ok=True)
    d = start_daemon("--dir", workdir, *JOURNAL, *args, fakeclock=True)
    if clock_ns is not None:
        d.clock.set(clock_ns)
    d.data = workdir
    return d


def kill9(d):
    d.proc.kill()
    d.proc.wait(10)
    d.stopped = True


def hash_pairs(c, key):
    """A hash's (field, value) pairs, sorted, from HGETALL."""
    parts = c.command("HGETALL", key).split(b"\r\n")[2:-1:2]
    return sorted(zip(parts[0::2], parts[1::2]))


def set_members(c, key):
    """A set's members, sorted, from SMEMBERS (a large one's order is its
    table's)."""
    return sorted(c.command("SMEMBERS", key).split(b"\r\n")[2:-1:2])


def fingerprint(d):
    """Every key of every database: type, PTTL (the fake clock stands
    still) and, for logs, the entries, for strings the value, for lists,
    hashes, sorted sets and sets their elements (a hash's pairs and a set's
    members sorted: a large one's order is its table's): what a restart must give back."""
    c = d.raw()
    out = {}
    for db in range(16):
        c.command("SELECT", db)
        keys = c.command("KEYS", "*")
        for k in sorted(keys.split(b"\r\n")[2::2]):
            entry = (c.command("TYPE", k), c.command("PTTL", k))
            if entry[0] == b"+log\r\n":
                entry += (c.command("RL.ENTRIES", k),)
            elif entry[0] == b"+string\r\n":
                entry += (c.command("GET", k),)
            elif entry[0] == b"+list\r\n":
                entry += (c.command("LRANGE", k, 0, -1),)
            elif entry[0] == b"+zset\r\n":
                entry += (c.command("ZRANGE", k, 0, -1, "WITHSCORES"),)
            elif entry[0] == b"+hash\r\n":
                entry += (hash_pairs(c, k),)
            elif entry[0] == b"+set\r\n":
                entry += (set_members(c, k),)
            out[(db, k)] = entry
    return out


def test_every_kind_of_write_survives_kill_9(start_daemon, tmp_path):
    work = str(tmp_path / "data")
    d = start(start_daemon, work, "--appendfsync", "always")
    c = d.raw()
    for _ in range(3):
        c.command("CL.THROTTLE", "gcra", 5, 1, 3600)
    c.command("RL.LOG", "log", 5, 60, "META", "alice")
    c.command("RL.LOG", "log", 5, 60, "META", "bob")
    c.command("RL.TIERS", "tiers", 5, 1, 10, 10, "COST", 3)
    c.command("RL.FIXED", "fixed", 3, 60)
    c.command("RL.SLIDING", "sliding", 3, 60)
    c.command("GCRA", "redis", 5, 10, 60)
    c.command("INCREX", "counter", "BYFLOAT", "2.5", "EX", 100)
    c.command("CL.THROTTLE", "gone", 5, 1, 3600)
    c.command("DEL", "gone")
    c.command("SELECT", 3)
    c.command("RL.FIXED", "three", 3, 60)
    c.command("SELECT", 4)
    c.command("RL.FIXED", "flushed", 3, 60)
    c.command("FLUSHDB")
    c.command("SELECT", 5)
    c.command("RL.FIXED", "swapped", 3, 60)
    c.command("SWAPDB", 5, 6)
    c.command("SELECT", 0)
    c.command("RL.FIXED", "moved", 3, 60)
    assert c.command("MOVE", "moved", 7) == b":1\r\n"
    before = fingerprint(d)
    assert len(before) == 10
    kill9(d)
    d2 = start(start_daemon, work, clock_ns=d.clock.ns)
    assert fingerprint(d2) == before
    assert d2.raw().command("CL.THROTTLE", "gcra", 5, 1, 3600).startswith(
        b"*5\r\n:0\r\n:6\r\n:2\r\n")                 # the fourth of six


def test_a_key_written_many_times_in_one_pass_is_one_record(start_daemon,
                                                             tmp_path):
    d = start(start_daemon, str(tmp_path / "data"), "--appendfsync", "always")
    c = d.raw()
    c.command("CL.THROTTLE", "warm", 1, 1, 60)
    path = incr_files(d)[-1]
    n0 = len(records(path))
    c.send(resp_command("CL.THROTTLE", "hot", 1000, 1, 60) * 200)
    for _ in range(200):
        c.reply_bytes()
    # One socket read carries all 200: one pass, one record (a second
    # one at most if the kernel split the bytes).
    assert len(records(path)) - n0 <= 2


def load_round(d, keys, limit, stop, acked, seed):
    """Pipelined CL.THROTTLE on keys until the connection dies; counts the
    allowed replies that arrived (acknowledged decisions). Seeded, so a
    failing round's key order can be drawn again."""
    rng = random.Random(seed)
    try:
        s = socket.create_connection(("127.0.0.1", d.port), timeout=5)
    except OSError:
        return
    buf = b""
    try:
        while not stop.is_set():
            batch = [rng.choice(keys) for _ in range(16)]
            s.sendall(b"".join(resp_command("CL.THROTTLE", k, limit - 1, 1,
                                            3600) for k in batch))
            for k in batch:
                while buf.count(b"\r\n") < 6:
                    chunk = s.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                reply, buf = buf.split(b"\r\n", 6)[:6], buf.split(b"\r\n", 6)[6]
                if reply[1] == b":0":
                    acked[k] = acked.get(k, 0) + 1
    except OSError:
        return
    finally:
        s.close()


def allowed_now(d, key, limit):
    c = d.raw()
    n = 0
    for _ in range(limit + 1):
        if c.command("CL.THROTTLE", key, limit - 1, 1, 3600).startswith(
                b"*5\r\n:0\r\n"):
            n += 1
    return n


@pytest.mark.parametrize("mode", ["always", "everysec"])
def test_kill_9_under_load_loses_no_acknowledged_decision(start_daemon,
                                                          tmp_path, mode):
    """20 kills at random moments under pipelined load from four clients,
    with rewrites running now and then (a small rewrite threshold): after
    each restart no key allows more than its limit counting the decisions
    the clients saw acknowledged."""
    work = str(tmp_path / "data")
    args = ("--appendfsync", mode, "--auto-aof-rewrite-min-size", "16kb")
    rng = random.Random(17)
    limit = 20
    clock_ns = None
    total_acked = 0
    deadline = time.monotonic() + 120
    for rnd in range(20):
        assert time.monotonic() < deadline, "20 rounds take too long"
        d = start(start_daemon, work, *args, clock_ns=clock_ns)
        clock_ns = d.clock.ns
        keys = ["r%d:k%d" % (rnd, i) for i in range(40)]
        stop, acked = threading.Event(), {}
        shares = [dict() for _ in range(4)]
        threads = [threading.Thread(target=load_round,
                                    args=(d, keys, limit, stop, shares[i],
                                          rnd * 4 + i))
                   for i in range(4)]
        for t in threads:
            t.start()
        time.sleep(rng.uniform(0.05, 0.4))
        kill9(d)
        stop.set()
        for t in threads:
            t.join(10)
        for share in shares:
            for k, n in share.items():
                acked[k] = acked.get(k, 0) + n
        total_acked += sum(acked.values())
        d2 = start(start_daemon, work, *args, clock_ns=clock_ns)
        over = {k: (acked[k], allowed_now(d2, k, limit)) for k in acked
                if acked[k] + allowed_now(d2, k, limit) > limit}
        assert over == {}, "round %d: acknowledged + allowed > limit" % rnd
        assert d2.stop() == []
    assert total_acked > 200                 # the load really ran


def test_a_torn_last_record_loads_with_a_warning_at_every_cut(start_daemon,
                                                              tmp_path):
    work = str(tmp_path / "data")
    d = start(start_daemon, work, "--appendfsync", "always")
    c = d.raw()
    c.command("RL.FIXED", "first", 3, 60)
    c.command("RL.LOG", "last", 5, 60, "META", "x" * 40)
    kill9(d)
    path = incr_files(d)[-1]
    off, length = records(path)[-1]
    whole = open(path, "rb").read()
    assert len(whole) == off + length
    for cut in range(off + 1, off + length):
        trial = str(tmp_path / ("cut%d" % cut))
        shutil.copytree(work, trial)
        tpath = os.path.join(trial, "appendonlydir", os.path.basename(path))
        os.truncate(tpath, cut)
        t = start(start_daemon, trial, clock_ns=d.clock.ns)
        tc = t.raw()
        assert tc.command("EXISTS", "first", "last") == b":1\r\n", cut
        assert "short read while loading the journal" in t.log()
        assert os.path.getsize(tpath) == off        # cut back to whole records
        assert t.stop() == []
        shutil.rmtree(trial)


def test_a_transaction_is_one_record_and_a_torn_one_is_lost_whole(
        start_daemon, tmp_path):
    """MULTI/EXEC's effects are one group record (op 5, its record count
    after the op): cut anywhere inside it, a restart has none of them and
    everything before it."""
    work = str(tmp_path / "data")
    d = start(start_daemon, work, "--appendfsync", "always",
              "--aof-load-truncated", "yes")
    c = d.raw()
    c.command("RL.FIXED", "before", 3, 60)
    c.command("MULTI")
    c.command("CL.THROTTLE", "a", 5, 1, 60)
    c.command("RL.FIXED", "b", 3, 60)
    c.command("DEL", "before")
    assert c.command("EXEC").startswith(b"*3\r\n")
    kill9(d)
    path = incr_files(d)[-1]
    off, length = records(path)[-1]
    data = open(path, "rb").read()
    assert data[off + 12] == 5                       # JOURNAL_GROUP
    assert struct.unpack_from("<I", data, off + 13)[0] == 3
    t = start(start_daemon, work, clock_ns=d.clock.ns)
    assert t.raw().command("EXISTS", "a", "b", "before") == b":2\r\n"
    assert t.stop() == []
    for cut in sorted({off + 1, off + 12, off + 20, off + length // 2,
                       off + length - 1}):
        trial = str(tmp_path / ("cut%d" % cut))
        shutil.copytree(work, trial)
        tpath = os.path.join(trial, "appendonlydir", os.path.basename(path))
        os.truncate(tpath, cut)
        t = start(start_daemon, trial, clock_ns=d.clock.ns)
        tc = t.raw()
        assert tc.command("EXISTS", "a", "b") == b":0\r\n", cut
        assert tc.command("EXISTS", "before") == b":1\r\n", cut
        assert t.stop() == []
        shutil.rmtree(trial)


def crc32c(data):
    """CRC-32C (Castagnoli), as the journal checks each record."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def as_older_version(data, magic):
    """A version 3 journal's bytes as versions 1 and 2 wrote them: the same
    records, each SET's expiry the ns its key was dead from (the ms after
    the one it lived through), not the ms it lives through."""
    out, off = bytearray(magic), 8
    while off < len(data):
        n, = struct.unpack_from("<I", data, off)
        payload = bytearray(data[off + 12:off + 12 + n])
        if payload[0] == 1:                             # SET
            ms, = struct.unpack_from("<q", payload, 10)
            ns = 2 ** 63 - 1 if ms == -2 ** 63 else (ms + 1) * 1000000
            struct.pack_into("<q", payload, 10, ns)
        assert payload[0] in (1, 2), "no groups in an old file"
        out += struct.pack("<III", n, n ^ 0xFFFFFFFF, crc32c(bytes(payload)))
        out += payload
        off += 12 + n
    return bytes(out)


@pytest.mark.parametrize("magic", [b"CGJRNL01", b"CGJRNL02"])
def test_older_journal_versions_still_load(start_daemon, tmp_path, magic):
    """Versions 1 ("CGJRNL01": no groups) and 2 (expiry in ns) load, their
    keys as they were."""
    work = str(tmp_path / "data")
    d = start(start_daemon, work, "--appendfsync", "always")
    c = d.raw()
    c.command("RL.LOG", "log", 5, 60, "META", "alice")
    c.command("CL.THROTTLE", "gcra", 5, 1, 3600)
    c.command("RL.FIXED", "gone", 3, 60)
    c.command("DEL", "gone")
    before = fingerprint(d)
    kill9(d)
    path = incr_files(d)[-1]
    data = open(path, "rb").read()
    open(path, "wb").write(as_older_version(data, magic))
    t = start(start_daemon, work, clock_ns=d.clock.ns)
    assert fingerprint(t) == before
    assert "gone" not in str(before)
    assert t.stop() == []


def three_keys_stopped(start_daemon, work):
    """A daemon that journaled three keys and stopped: it and its incr file."""
    d = start(start_daemon, work, "--appendfsync", "always")
    c = d.raw()
    for i in range(3):
        c.command("RL.FIXED", "k%d" % i, 3, 60)
    assert d.stop() == []
    return d, incr_files(d)[-1]


def flip(path, at, bits):
    data = bytearray(open(path, "rb").read())
    data[at] ^= bits
    open(path, "wb").write(bytes(data))


def start_fails(work, *args):
    """Start-up on work's files that must fail: (exit code, stderr)."""
    env = harness.sanitizer_env(dict(os.environ))
    p = subprocess.run([BIN, *harness.io_thread_args(args), "--dir", work, *JOURNAL,
                        "--port", "0", *args],
                       capture_output=True, text=True, timeout=30, env=env)
    return p.returncode, p.stderr


@pytest.mark.parametrize("where", ["header", "payload"])
def test_damage_in_an_earlier_record_refuses_naming_file_and_offset(
        start_daemon, tmp_path, where):
    work = str(tmp_path / "data")
    d, path = three_keys_stopped(start_daemon, work)
    off, length = records(path)[1]
    flip(path, off + (1 if where == "header" else length - 2), 0x40)
    code, err = start_fails(work)
    assert code == 1
    assert os.path.basename(path) in err and "offset %d" % off in err, err


def test_truncated_tail_refuses_when_aof_load_truncated_is_no(start_daemon,
                                                              tmp_path):
    work = str(tmp_path / "data")
    d = start(start_daemon, work)
    d.raw().command("RL.FIXED", "k", 3, 60)
    assert d.stop() == []
    path = incr_files(d)[-1]
    os.truncate(path, os.path.getsize(path) - 1)
    code, err = start_fails(work, "--aof-load-truncated", "no")
    assert code == 1
    assert "ends in the middle of a record" in err


def child_of(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            kids = f.read().split()
    except OSError:
        return None
    return int(kids[0]) if kids else None


def test_killing_the_rewrite_child_or_the_parent_loses_nothing(start_daemon,
                                                               tmp_path):
    work = str(tmp_path / "data")
    rng = random.Random(5)
    clock_ns = None
    expected = None
    for rnd in range(10):
        d = start(start_daemon, work, "--appendfsync", "always",
                  clock_ns=clock_ns)
        clock_ns = d.clock.ns
        if expected is not None:
            assert fingerprint(d) == expected, "round %d" % rnd
        c = d.raw()
        for i in range(300):
            c.command("RL.LOG", "r%d:%d" % (rnd, i % 50), 1000, 3600, "META",
                      "m" * 50)
        assert c.command("BGREWRITEAOF") == \
            b"+Background append only file rewriting started\r\n"
        c.command("RL.FIXED", "during%d" % rnd, 3, 60)
        time.sleep(rng.uniform(0, 0.01))
        kid = child_of(d.proc.pid)
        if rnd % 2 == 0 and kid is not None:
            os.kill(kid, 9)                      # the child dies mid-write
            harness.wait_until(lambda: "rewrite terminated by signal" in d.log()
                               or "rewrite finished" in d.log(), 10)
            c.command("RL.FIXED", "after%d" % rnd, 3, 60)
        expected = fingerprint(d)
        kill9(d)                                 # and then the parent
    d = start(start_daemon, work, clock_ns=clock_ns)
    assert fingerprint(d) == expected


def test_info_and_config_show_the_journal(start_daemon, tmp_path):
    d = start(start_daemon, str(tmp_path / "data"), "--appendfsync", "always")
    c = d.raw()
    c.command("RL.FIXED", "k", 3, 60)
    info = d.info("persistence")
    assert info["aof_enabled"] == 1
    assert info["aof_last_write_status"] == "ok"
    assert info["aof_current_size"] > info["aof_base_size"] > 0
    assert info["aof_fsyncs"] >= 1
    assert c.command("CONFIG", "GET", "appendfsync") == \
        b"*2\r\n$11\r\nappendfsync\r\n$6\r\nalways\r\n"
    assert c.command("CONFIG", "SET", "appenddirname", "x").startswith(
        b"-ERR CONFIG SET failed (possibly related to argument 'appenddirname')")
    assert c.command("CONFIG", "SET", "appendfsync", "no") == b"+OK\r\n"


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MB tmpfs: a disk that really fills up."""
    with harness.small_disk(str(tmp_path / "disk")) as mnt:
        yield mnt


fill = harness.fill_disk


MISCONF = b"-MISCONF Errors writing to the AOF file: No space left on device\r\n"


def test_a_full_disk_answers_misconf_and_recovers_losing_nothing(
        start_daemon, small_disk):
    d = start(start_daemon, small_disk, "--appendfsync", "always",
              "--auto-aof-rewrite-percentage", "0")
    a, b = d.raw(), d.raw()
    # Each record of this key needs a page of its own: no write of it can
    # fit in what is left of the file's last page.
    k = "k" * 5000
    assert a.command("CL.THROTTLE", k, 9, 1, 3600).startswith(b"*5\r\n:0\r\n:10\r\n:9\r\n")
    filler = os.path.join(small_disk, "filler")
    fill(filler)
    # This decision cannot be saved: its reply waits.
    a.send(resp_command("CL.THROTTLE", k, 9, 1, 3600))
    with pytest.raises(socket.timeout):
        a.reply_bytes(timeout=0.5)
    # Meanwhile: writes and PING refused as Redis refuses them, reads and
    # PEEK answered.
    assert b.command("CL.THROTTLE", "other", 9, 1, 3600) == MISCONF
    assert b.command("PING") == MISCONF
    assert b.command("RL.FIXED", "k2", 5, 60, "PEEK").startswith(b"*5\r\n:0\r\n")
    assert b.command("PTTL", k).startswith(b":")
    assert b.command("EXISTS", "other") == b":0\r\n"
    info = d.info("persistence")
    assert info["aof_last_write_status"] == "err"
    assert info["aof_last_write_error"] == "No space left on device"
    assert "No space left on device" in d.log()
    os.unlink(filler)
    # The held reply arrives once the record is written; writes resume.
    assert a.reply_bytes(timeout=5).startswith(b"*5\r\n:0\r\n:10\r\n:8\r\n")
    assert harness.wait_until(
        lambda: b.command("PING") == b"+PONG\r\n", 5)
    assert b.command("CL.THROTTLE", "other", 9, 1, 3600).startswith(b"*5\r\n:0\r\n")
    assert d.info("persistence")["aof_last_write_status"] == "ok"
    assert d.proc.poll() is None
    kill9(d)
    d2 = start(start_daemon, small_disk, clock_ns=d.clock.ns)
    # Both acknowledged decisions on k are there: the third leaves 7.
    assert d2.raw().command("CL.THROTTLE", k, 9, 1, 3600).startswith(
        b"*5\r\n:0\r\n:10\r\n:7\r\n")
    assert d2.stop() == []


def test_shutdown_flags_as_redis(start_daemon, tmp_path):
    d = start(start_daemon, str(tmp_path / "data"))
    c = d.raw()
    assert c.command("SHUTDOWN", "ABORT") == b"-ERR No shutdown in progress.\r\n"
    for bad in (("NOSAVE", "ABORT"), ("NOW", "ABORT"), ("SAVE", "NOSAVE"),
                ("LATER",)):
        assert c.command("SHUTDOWN", *bad) == b"-ERR syntax error\r\n", bad
    c.command("RL.FIXED", "k", 3, 60)
    c.send(resp_command("SHUTDOWN", "NOW", "NOSAVE"))
    assert c.read_to_eof() == (b"", True)        # no reply: it exits
    assert d.wait_exit(10) == 0
    assert "Journal flushed and closed" in d.log()
    d.stopped = True
    d2 = start(start_daemon, d.data, clock_ns=d.clock.ns)
    assert d2.raw().command("EXISTS", "k") == b":1\r\n"   # from the journal


def test_a_snapshot_that_cannot_be_written_keeps_the_server_up(start_daemon,
                                                               small_disk):
    d = start(start_daemon, small_disk, "--save", "3600 1",
              "--appendfsync", "no")
    c = d.raw()
    c.command("RL.FIXED", "k" * 50000, 3, 60)     # a snapshot needs a page
    fill(os.path.join(small_disk, "filler"))
    assert c.command("SHUTDOWN") == \
        b"-ERR Errors trying to SHUTDOWN. Check logs.\r\n"
    d.proc.send_signal(15)
    assert harness.wait_until(lambda: "SIGTERM received but errors trying "
                              "to shut down" in d.log(), 5)
    assert c.command("EXISTS", "k" * 50000) == b":1\r\n"     # still up
    c.send(resp_command("SHUTDOWN", "FORCE"))
    assert c.read_to_eof() == (b"", True)
    assert d.wait_exit(10) == 0
    d.stopped = True


def test_metrics_show_the_journal(start_daemon, tmp_path):
    import urllib.request
    mport = harness.free_port()
    d = start(start_daemon, str(tmp_path / "data"), "--appendfsync", "always",
              "--metrics-port", str(mport))
    d.raw().command("RL.FIXED", "k", 3, 60)

    def journal_values():
        text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport,
                                      timeout=5).read().decode()
        return dict(line.split() for line in text.splitlines()
                    if line.startswith("cellgate_journal"))

    # The exporter's copy is taken once a cron tick.
    assert harness.wait_until(
        lambda: int(journal_values().get("cellgate_journal_fsyncs_total", 0)) >= 1, 10)
    values = journal_values()
    assert int(values["cellgate_journal_bytes"]) > 0
    assert values["cellgate_journal_write_ok"] == "1"
    assert int(values["cellgate_journal_fsyncs_total"]) >= 1
    assert float(values["cellgate_journal_last_fsync_seconds"]) > 0


def test_start_empty_sets_a_damaged_journal_aside_and_starts_a_new_one(
        start_daemon, tmp_path):
    work = str(tmp_path / "data")
    d, path = three_keys_stopped(start_daemon, work)
    flip(path, records(path)[0][0] + 20, 1)
    d2 = start(start_daemon, work, "--snapshot-load-errors", "start-empty",
               clock_ns=d.clock.ns)
    c2 = d2.raw()
    assert c2.command("DBSIZE") == b":0\r\n"
    assert "starting EMPTY" in d2.log()
    folder = os.path.join(work, "appendonlydir")
    aside = [n for n in os.listdir(folder) if n.startswith("damaged-")]
    assert len(aside) == 1
    kept = sorted(os.listdir(os.path.join(folder, aside[0])))
    assert os.path.basename(path) in kept and "appendonly.aof.manifest" in kept
    c2.command("RL.FIXED", "new", 3, 60)
    kill9(d2)
    d3 = start(start_daemon, work, clock_ns=d.clock.ns)   # the new journal loads
    assert d3.raw().command("KEYS", "*") == b"*1\r\n$3\r\nnew\r\n"


def test_config_set_appendonly_turns_the_journal_on_and_off(start_daemon,
                                                            tmp_path):
    work = str(tmp_path / "data")
    os.makedirs(work)
    d = start_daemon("--dir", work, "--save", "", fakeclock=True)
    c = d.raw()
    for i in range(100):
        c.command("RL.FIXED", "before%d" % i, 3, 60)
    assert c.command("CONFIG", "SET", "appendonly", "yes") == b"+OK\r\n"
    c.command("RL.FIXED", "during", 3, 60)       # journaled at once
    assert harness.wait_until(
        lambda: d.info("persistence")["aof_rewrites"] == 1, 10)
    assert "The journal is on" in d.log()
    c.command("RL.FIXED", "after", 3, 60)
    expected = fingerprint(d)
    kill9(d)
    d2 = start(start_daemon, work, clock_ns=d.clock.ns)
    assert fingerprint(d2) == expected and len(expected) == 102
    c2 = d2.raw()
    assert c2.command("CONFIG", "SET", "appendonly", "no") == b"+OK\r\n"
    assert d2.info("persistence")["aof_enabled"] == 0
    c2.command("RL.FIXED", "unjournaled", 3, 60)
    kill9(d2)
    d3 = start(start_daemon, work, clock_ns=d.clock.ns)
    assert fingerprint(d3) == expected                  # as it was turned off
