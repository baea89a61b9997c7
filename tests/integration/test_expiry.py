"""Memory follows the live keys: CL.THROTTLE keys vanish once their state is
fresh again (lazily on access, and from memory through the timer wheel at
hz), never before. Driven by the fake clock."""
import threading
import time

import pytest

from harness import wait_until

MB = 1024 * 1024


def used_memory(r):
    return r.info("memory")["used_memory"]


def create_keys(r, prefix, n, args, batch=1000):
    """n distinct keys, pipelined in batches (each batch well under 64 KB)."""
    for start in range(0, n, batch):
        p = r.pipeline(transaction=False)
        for i in range(start, min(n, start + batch)):
            p.execute_command("CL.THROTTLE", "%s:%d" % (prefix, i), *args)
        replies = p.execute()
        assert all(rep[0] == 0 for rep in replies)


@pytest.mark.allocator
def test_twenty_thousand_keys_expire_and_memory_returns(fserver, fr):
    clock = fserver.clock
    base = used_memory(fr)
    expired_before = fr.info("stats")["expired_keys"]
    fr.execute_command("CL.THROTTLE", "canary", 0, 1, 10)
    clock.advance(ms=2)                                # it dies 2 ms before them
    create_keys(fr, "exp", 20000, (0, 1, 10))        # TTL 10 s each
    assert fr.dbsize() == 20001
    peak = used_memory(fr)
    assert peak > base + 20000 * 16, "records are accounted in used_memory"

    # 1 ms before the TTL: nothing may go, however long the wheel runs. The
    # canary's going shows the wheel ran past this moment.
    clock.advance(seconds=10, ms=-1)
    assert wait_until(lambda: fr.dbsize() == 20000, 10)
    assert fr.exists("exp:0", "exp:19999") == 2
    assert fr.pttl("exp:0") == 1

    # Past the TTL: a key reads as gone at once (lazy expiry) ...
    clock.advance(ms=2)
    assert fr.exists("exp:1") == 0
    assert fr.execute_command("CL.THROTTLE", "exp:2", 0, 1, 10, "PEEK") == [0, 1, 0, -1, 10]
    # ... and the wheel removes the rest in the background.
    assert wait_until(lambda: fr.dbsize() == 0, 10), "dbsize still %d" % fr.dbsize()
    # Two of them were met dead by EXISTS and PEEK (see the test below).
    assert fr.info("stats")["expired_keys"] - expired_before >= 19998
    end = used_memory(fr)
    assert end - base <= max(1 * MB, base // 5), (base, peak, end)
    assert fr.info("keyspace") == {}


def test_key_is_not_removed_before_its_ttl(fserver, fr):
    clock = fserver.clock
    create_keys(fr, "keep", 100, (0, 1, 30))
    for i, step in enumerate((10, 10, 9.999)):
        # A canary that dies within the step: once the wheel took it, it
        # has been past the moment the keys must outlive.
        fr.execute_command("CL.THROTTLE", "canary:%d" % i, 0, 1, 9)
        clock.advance(step)
        assert wait_until(lambda: fr.dbsize() == 100, 10)
    assert fr.pttl("keep:50") == 1
    clock.advance(ms=2)
    assert wait_until(lambda: fr.dbsize() == 0, 10)


def test_a_hit_that_pushes_the_tat_later_keeps_the_key(fserver, fr):
    clock = fserver.clock
    assert fr.execute_command("CL.THROTTLE", "moving", 9, 1, 10) == [0, 10, 9, -1, 10]
    clock.advance(5)
    assert fr.execute_command("CL.THROTTLE", "moving", 9, 1, 10) == [0, 10, 8, -1, 15]
    fr.execute_command("CL.THROTTLE", "canary:1", 0, 1, 5)    # dies at the first
    clock.advance(5.5)                 # past the first deadline, before the second
    assert wait_until(lambda: fr.dbsize() == 1, 10)
    assert fr.pttl("moving") == 9500
    fr.execute_command("CL.THROTTLE", "canary:2", 0, 1, 9)    # 0.5 s before it
    clock.advance(9.5)                 # exactly at the TAT: still there this ms
    assert wait_until(lambda: fr.dbsize() == 1, 10)
    assert fr.exists("moving") == 1
    clock.advance(ms=1)
    assert wait_until(lambda: fr.dbsize() == 0, 10)


def test_denied_requests_do_not_extend_the_life_of_a_key(fserver, fr):
    clock = fserver.clock
    fr.execute_command("CL.THROTTLE", "denied", 0, 1, 10)
    for _ in range(9):
        clock.advance(1)
        assert fr.execute_command("CL.THROTTLE", "denied", 0, 1, 10)[0] == 1
    clock.advance(seconds=1, ms=1)
    assert wait_until(lambda: fr.dbsize() == 0, 10)


def test_far_future_keys_survive_a_big_clock_jump(fserver, fr):
    year = 365 * 86400
    clock = fserver.clock
    assert fr.execute_command("CL.THROTTLE", "far", 0, 1, 10 * year) == [0, 1, 0, -1, 10 * year]
    create_keys(fr, "hourly", 500, (0, 1, 3600))
    t0 = time.monotonic()
    clock.advance(5 * year)
    assert fr.ping() is True
    assert time.monotonic() - t0 < 2, "a big jump must not stall the loop"
    assert wait_until(lambda: fr.dbsize() == 1, 10)
    assert fr.pttl("far") == 5 * year * 1000
    clock.advance(seconds=5 * year, ms=1)
    assert wait_until(lambda: fr.dbsize() == 0, 10)


@pytest.mark.allocator
def test_deleted_and_flushed_keys_release_memory(fserver, fr):
    base = used_memory(fr)
    create_keys(fr, "del", 5000, (0, 1, 3600))
    assert used_memory(fr) > base
    deleted = 0
    for i in range(0, 5000, 1000):     # pipelines well under 64 KB each
        p = fr.pipeline(transaction=False)
        for j in range(i, i + 1000, 100):
            p.delete(*["del:%d" % k for k in range(j, j + 100)])
        deleted += sum(p.execute())
    assert deleted == 5000
    assert fr.dbsize() == 0
    create_keys(fr, "flush", 5000, (0, 1, 3600))
    fr.flushall()
    assert fr.dbsize() == 0
    assert wait_until(lambda: used_memory(fr) - base <= max(1 * MB, base // 5), 5)


def test_lazy_expiry_counts_in_expired_keys(start_daemon):
    """With the cron's expiry stopped (DEBUG SET-ACTIVE-EXPIRE 0, as in
    Redis's own tests) only the commands that meet dead keys remove them:
    no race with the wheel decides what this test sees."""
    d = start_daemon("--enable-debug-command", "local", fakeclock=True)
    r = d.client(decode_responses=True)
    assert r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", 0) == "OK"
    keys = ["lazy:%d" % i for i in range(200)]
    create_keys(r, "lazy", 200, (0, 1, 10))
    before = r.info("stats")["expired_keys"]
    d.clock.advance(seconds=10, ms=1)
    time.sleep(0.3)                     # cron passes: they must stay
    assert r.dbsize() == 200
    assert r.info("stats")["expired_keys"] == before
    assert r.exists(*keys) == 0
    assert r.info("stats")["expired_keys"] - before == 200
    assert r.dbsize() == 0
    # Back on: the wheel removes what nobody touches.
    create_keys(r, "active", 50, (0, 1, 10))
    assert r.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", 1) == "OK"
    d.clock.advance(seconds=10, ms=1)
    assert wait_until(lambda: r.dbsize() == 0, 10)
    assert r.info("stats")["expired_keys"] - before == 250


def test_debug_is_refused_unless_enabled_and_local_means_loopback(
        start_daemon, tmp_path):
    refused = (b"-ERR DEBUG command not allowed. If the enable-debug-command "
               b"option is set to \"local\", you can run it from a local "
               b"connection, otherwise you need to set this option in the "
               b"configuration file, and then restart the server.\r\n")
    d = start_daemon()
    assert d.raw().command("DEBUG", "SET-ACTIVE-EXPIRE", 0) == refused
    assert d.raw().command("CONFIG", "SET", "enable-debug-command", "yes") == (
        b"-ERR CONFIG SET failed (possibly related to argument "
        b"'enable-debug-command') - can't set immutable config\r\n")
    sock = str(tmp_path / "cg.sock")
    local = start_daemon("--enable-debug-command", "local", "--unixsocket", sock)
    assert local.raw().command("DEBUG", "SET-ACTIVE-EXPIRE", 0) == b"+OK\r\n"
    assert local.raw(unix=True).command("DEBUG", "HELP").startswith(
        b"*7\r\n+DEBUG <subcommand>")
    assert local.raw().command("DEBUG", "NOPE") == (
        b"-ERR unknown subcommand or wrong number of arguments for 'NOPE'. "
        b"Try DEBUG HELP.\r\n")


@pytest.mark.allocator
@pytest.mark.slow
def test_a_million_keys_expire_and_memory_returns(start_daemon):
    d = start_daemon("--hz", "50", fakeclock=True, name="cellgate-million")
    r = d.client(decode_responses=True)
    base = used_memory(r)
    n = 1000000
    reply = b"*5\r\n:0\r\n:1\r\n:0\r\n:-1\r\n:1\r\n"       # every key is fresh: TTL 1 s
    conn = d.raw(timeout=60)
    send_error = []

    def sender():
        # Inline requests, streamed in chunks while the replies are read.
        try:
            for start in range(0, n, 20000):
                conn.sock.sendall(b"".join(b"CL.THROTTLE m:%d 0 1 1\r\n" % i
                                           for i in range(start, start + 20000)))
        except OSError as e:
            send_error.append(e)

    t0 = time.monotonic()
    t = threading.Thread(target=sender)
    t.start()
    got = conn.recv_exact(len(reply) * n, timeout=60)
    t.join(60)
    assert not send_error
    assert got == reply * n
    assert r.dbsize() == n
    peak = used_memory(r)
    assert peak > base + n * 16

    d.clock.advance(seconds=1, ms=1)
    assert r.exists("m:0", "m:999999") == 0
    assert wait_until(lambda: r.dbsize() == 0, 40, interval=0.2), "dbsize %d" % r.dbsize()
    end = used_memory(r)
    assert end - base <= max(1 * MB, base // 5), (base, peak, end)
    assert r.info("stats")["expired_keys"] >= n - 2
    assert time.monotonic() - t0 < 90
