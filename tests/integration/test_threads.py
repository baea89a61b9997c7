"""io-threads as a user sees it: the threads Redis names (io_thd_1 ...),
Redis 7.0's and 8's INFO fields with real values, clients spread over the
threads and moved to the main thread when the main thread must write to
them (subscribers, monitors), and every reply in order, exact, and sent
only once the journal holds its decision, whichever thread wrote it."""
import os
import threading
import time

import pytest

import harness
from harness import RawConn, resp_command, wait_until


def thread_names(pid):
    names = []
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                names.append(f.read().strip())
        except OSError:
            pass
    return names


def threads_info(d, conn=None):
    """INFO threads as {thread number: {clients, reads, writes}}, asked on
    conn or on a connection of its own."""
    c = conn or RawConn(port=d.port)
    text = c.command("INFO", "threads").decode()
    if conn is None:
        c.close()
    out = {}
    for line in text.split("\r\n"):
        if line.startswith("io_thread_"):
            name, fields = line.split(":", 1)
            out[int(name[len("io_thread_"):])] = {
                k: int(v) for k, v in (f.split("=") for f in fields.split(","))}
    return out


def test_threads_are_named_as_redis_names_them(start_daemon):
    d = start_daemon("--io-threads", "3")
    names = thread_names(d.proc.pid)
    assert names.count("io_thd_1") == 1 and names.count("io_thd_2") == 1
    assert "io_thd_3" not in names
    one = start_daemon()
    assert not [n for n in thread_names(one.proc.pid) if n.startswith("io_thd")]


def test_info_shows_the_threads_and_their_work(start_daemon):
    d = start_daemon("--io-threads", "3")
    assert d.info("server")["io_threads_active"] == 1
    conns = [RawConn(port=d.port) for _ in range(4)]
    for i, c in enumerate(conns):
        for _ in range(10):
            assert c.command("PING") == b"+PONG\r\n"
    info = threads_info(d)
    assert sorted(info) == [0, 1, 2]
    # Spread as Redis 8 spreads them: each new client to the thread with
    # the fewest (the INFO client itself is one more).
    assert info[0]["clients"] == 0
    assert info[1]["clients"] + info[2]["clients"] == 5
    assert abs(info[1]["clients"] - info[2]["clients"]) <= 1
    assert info[1]["reads"] > 0 and info[2]["reads"] > 0
    assert info[1]["reads"] + info[2]["reads"] >= 40
    stats = d.info("stats")
    assert stats["io_threaded_reads_processed"] >= 40
    assert stats["io_threaded_writes_processed"] >= 40
    assert stats["total_reads_processed"] >= stats["io_threaded_reads_processed"]
    assert stats["total_net_input_bytes"] >= 40 * len(resp_command("PING"))
    for c in conns:
        c.close()

    def served():
        info = threads_info(d)
        return info[1]["clients"] + info[2]["clients"]
    assert wait_until(lambda: served() == 1, 10)
    # CONFIG RESETSTAT zeroes the figures as Redis does.
    d.client().execute_command("CONFIG", "RESETSTAT")
    stats = d.info("stats")
    assert stats["total_net_output_bytes"] < 200
    assert stats["io_threaded_writes_processed"] <= 2


def test_with_one_thread_the_main_thread_serves_every_client(start_daemon):
    d = start_daemon()
    conns = [RawConn(port=d.port) for _ in range(3)]
    for c in conns:
        assert c.command("PING") == b"+PONG\r\n"
    assert d.info("server")["io_threads_active"] == 0
    info = threads_info(d)
    assert list(info) == [0] and info[0]["clients"] == 4    # and INFO's
    stats = d.info("stats")
    assert stats["io_threaded_reads_processed"] == 0
    assert stats["total_reads_processed"] >= 3


@pytest.mark.parametrize("threads", ["1", "2"])
def test_pipelines_of_many_clients_keep_their_order(start_daemon, threads):
    """Each client pipelines INCRs on its own key and ECHOs its own tags,
    hundreds at a time, all at once: every reply is exact and in order."""
    d = start_daemon("--io-threads", threads)
    errors = []

    def client(k):
        try:
            c = RawConn(port=d.port, timeout=30)
            total = 0
            for rnd in range(20):
                depth = 1 + (k * 7 + rnd * 13) % 200
                batch = b"".join(resp_command("INCR", "ctr:%d" % k) +
                                 resp_command("ECHO", "t%d.%d.%d" % (k, rnd, i))
                                 for i in range(depth))
                c.send(batch)
                want = b"".join(b":%d\r\n" % (total + i + 1) +
                                b"$%d\r\nt%d.%d.%d\r\n" % (
                                    len("t%d.%d.%d" % (k, rnd, i)), k, rnd, i)
                                for i in range(depth))
                got = c.recv_exact(len(want), timeout=30)
                if got != want:
                    errors.append((k, rnd))
                    return
                total += depth
            c.close()
        except Exception as e:        # noqa: BLE001 (reported below)
            errors.append((k, repr(e)))

    ts = [threading.Thread(target=client, args=(k,)) for k in range(24)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert not errors, errors[:5]


def test_subscribers_and_monitors_move_to_the_main_thread(start_daemon):
    d = start_daemon("--io-threads", "2")
    sub = RawConn(port=d.port)
    assert sub.command("SUBSCRIBE", "ch").startswith(b"*3\r\n$9\r\nsubscribe")
    mon = RawConn(port=d.port)
    assert mon.command("MONITOR") == b"+OK\r\n"
    assert wait_until(lambda: threads_info(d)[0]["clients"] == 2, 10)
    pub = RawConn(port=d.port)
    for i in range(200):
        assert pub.command("PUBLISH", "ch", "m%d" % i) == b":1\r\n"
    for i in range(200):
        msg = b"m%d" % i
        assert sub.recv_exact(len(resp_message(msg))) == resp_message(msg)
    lines = [mon.recv_until(b"\r\n") for _ in range(10)]
    assert any(b'"PUBLISH" "ch" "m0"' in line for line in lines), lines
    # The subscriber still answers in order on its new thread.
    assert sub.command("PING") == b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"


def resp_message(payload):
    return (b"*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$%d\r\n%s\r\n"
            % (len(payload), payload))


def test_client_list_kill_and_timeout_reach_clients_on_io_threads(start_daemon):
    d = start_daemon("--io-threads", "3", "--timeout", "1")
    a, b = RawConn(port=d.port), RawConn(port=d.port)
    assert a.command("CLIENT", "SETNAME", "aa") == b"+OK\r\n"
    assert b.command("CLIENT", "SETNAME", "bb") == b"+OK\r\n"
    b.send(resp_command("SET", "k", "x" * 40000))
    assert b.recv_exact(5) == b"+OK\r\n"
    listing = a.command("CLIENT", "LIST")
    assert b"name=aa" in listing and b"name=bb" in listing
    ids = {}
    for line in listing.split(b"\n"):
        for part in line.split(b" "):
            if part.startswith(b"id="):
                cid = part[3:]
            if part.startswith(b"name="):
                ids[part[5:]] = cid
    assert a.command("CLIENT", "KILL", "ID", ids[b"bb"]) == b":1\r\n"
    assert b.read_to_eof(timeout=5) == (b"", True)
    # timeout 1: an idle client on an I/O thread is closed too.
    idle = RawConn(port=d.port)
    assert idle.command("PING") == b"+PONG\r\n"
    assert idle.read_to_eof(timeout=10) == (b"", True)
    assert d.info("stats")["idle_timeout_disconnections"] >= 1


@pytest.mark.parametrize("threads", ["1", "2"])
def test_a_reply_decided_as_a_long_script_begins_is_answered(start_daemon,
                                                            threads):
    """Redis's scripting test "Timedout read-only scripts can be killed by
    SCRIPT KILL even when use pcall": a PING another client sent as the
    script began is answered (+PONG or -BUSY) while the script runs, not
    once it ends."""
    d = start_daemon("--io-threads", threads, "--busy-reply-threshold", "10")
    for attempt in range(3):
        r = RawConn(port=d.port, timeout=10)
        rd = RawConn(port=d.port, timeout=10)
        assert r.command("PING") == b"+PONG\r\n"
        body = "while 1 do redis.pcall('ping') end"
        # Both at once: the PING may be run just before the script starts.
        r.send(resp_command("PING"))
        rd.send(resp_command("EVAL", body, 0) + resp_command("PING"))
        t0 = time.monotonic()
        first = r.reply_bytes(timeout=3)
        assert first in (b"+PONG\r\n",
                         b"-BUSY Redis is busy running a script. You can only "
                         b"call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"), first
        assert time.monotonic() - t0 < 3
        assert wait_until(lambda: r.command("PING").startswith(b"-BUSY"), 10)
        assert r.command("SCRIPT", "KILL") == b"+OK\r\n"
        assert rd.reply_bytes(timeout=10).startswith(
            b"-ERR Script killed by user with SCRIPT KILL")
        assert rd.reply_bytes(timeout=10) == b"+PONG\r\n"
        assert r.command("PING") == b"+PONG\r\n"
        r.close()
        rd.close()


def test_replies_wait_for_the_journal_on_io_threads(start_daemon):
    """appendfsync always: a reply the client got was fsynced first, so a
    kill -9 right after loses none of the counts it saw."""
    d = start_daemon("--io-threads", "2", "--appendonly", "yes",
                     "--appendfsync", "always")
    seen = {}
    conns = [RawConn(port=d.port) for _ in range(6)]
    for rnd in range(30):
        for k, c in enumerate(conns):
            c.send(resp_command("INCR", "j%d" % k) * 3)
        for k, c in enumerate(conns):
            got = c.recv_exact(len(b":%d\r\n" % (rnd * 3 + 1)) +
                               len(b":%d\r\n" % (rnd * 3 + 2)) +
                               len(b":%d\r\n" % (rnd * 3 + 3)))
            seen[k] = int(got.split(b"\r\n")[-2][1:])
    d.proc.kill()
    d.proc.wait(10)
    d.stopped = True
    again = start_daemon("--dir", d.workdir, "--appendonly", "yes")
    r = again.client()
    for k, n in seen.items():
        assert int(r.get("j%d" % k)) >= n


def test_client_pause_holds_and_releases_clients_of_io_threads(start_daemon):
    d = start_daemon("--io-threads", "3")
    ctl = RawConn(port=d.port)
    writers = [RawConn(port=d.port) for _ in range(4)]
    assert ctl.command("CLIENT", "PAUSE", "1500", "WRITE") == b"+OK\r\n"
    t0 = time.monotonic()
    for i, w in enumerate(writers):
        w.send(resp_command("SET", "p", "v%d" % i) + resp_command("GET", "p"))
        # Held (flag b) before the next one is sent: the order is known.
        assert wait_until(lambda: ctl.command("CLIENT", "LIST").count(
            b"flags=b") == i + 1, 10)
    assert ctl.command("GET", "p") == b"$-1\r\n"     # reads go on
    for i, w in enumerate(writers):
        assert w.recv_exact(5, timeout=10) == b"+OK\r\n"
        w.reply_bytes(timeout=10)
    assert time.monotonic() - t0 >= 1.0
    # Released in the order they came, as Redis: the last SET wins.
    assert ctl.command("GET", "p") == b"$2\r\nv3\r\n"


def test_maxclients_counts_clients_of_every_thread(start_daemon):
    d = start_daemon("--io-threads", "3", "--maxclients", "6")
    conns = []
    while len(conns) < 10:
        c = RawConn(port=d.port)
        got = c.command("PING")
        if got != b"+PONG\r\n":
            assert got == b"-ERR max number of clients reached\r\n"
            assert c.read_to_eof(timeout=5) == (b"", True)
            break
        conns.append(c)
    assert b"connected_clients:6\r\n" in conns[0].command("INFO", "clients")
    info = threads_info(d, conns[0])
    assert info[1]["clients"] + info[2]["clients"] == 6
