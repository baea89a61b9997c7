"""Abuse in the spirit of Redis's protocol.tcl, querybuf.tcl and
obuf-limits.tcl: after each, a fresh client still gets PONG and no key was
lost."""
import random
import resource
import socket
import threading
import time

import pytest

from harness import resp_command, wait_until


def seed_keys(r, n=50):
    for i in range(n):
        r.execute_command("CL.THROTTLE", "keep:%d" % i, 5, 1, 3600)


def assert_healthy(d, n=50):
    assert d.ping_fresh()
    r = d.client()
    assert sum(r.exists("keep:%d" % i) for i in range(n)) == n
    # The limiter state is intact too (one request used of six).
    assert r.execute_command("CL.THROTTLE", "keep:0", 5, 1, 3600, "PEEK")[2] == 4


@pytest.mark.allocator
def test_client_pipelining_100mb_without_reading_is_closed_others_unaffected(start_daemon):
    d = start_daemon("--client-output-pause-limit", "1mb", "--client-output-pause-timeout", "1")
    seed_keys(d.client())
    hog = socket.create_connection(("127.0.0.1", d.port))
    hog.setblocking(False)
    payload = resp_command("ECHO", "x" * 65536) * 16            # ~1 MB per chunk
    sent = 0
    deadline = time.time() + 20
    closed = False
    while sent < 100 * 1024 * 1024 and time.time() < deadline:
        try:
            sent += hog.send(payload)
        except BlockingIOError:
            time.sleep(0.05)                                      # the server stopped reading
        except OSError:
            closed = True
            break
        # A good client is served the whole time.
        if sent % (8 << 20) < len(payload):
            assert d.ping_fresh()
    for _ in range(100):
        if closed:
            break
        try:
            hog.send(payload)
        except BlockingIOError:
            pass
        except OSError:
            closed = True
        time.sleep(0.05)
    assert closed, "the client that never reads was not closed"
    assert d.info("stats")["client_output_buffer_limit_disconnections"] >= 1
    assert d.info("memory")["used_memory"] < 16 * 1024 * 1024
    assert_healthy(d)


def test_two_thousand_idle_connections_and_maxclients(start_daemon):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    d = start_daemon("--maxclients", "2050")
    seed_keys(d.client())
    idle = [socket.create_connection(("127.0.0.1", d.port)) for _ in range(2000)]
    try:
        assert wait_until(lambda: d.info("clients")["connected_clients"] >= 2000, 20)
        assert_healthy(d)
        extra = [socket.create_connection(("127.0.0.1", d.port)) for _ in range(60)]
        refused = 0
        for s in extra:
            s.settimeout(2)
            s.sendall(b"PING\r\n")
            if s.recv(64).startswith(b"-ERR max number of clients reached"):
                refused += 1
            s.close()
        assert refused >= 10
    finally:
        for s in idle:
            s.close()
    time.sleep(0.3)
    assert_healthy(d)


def test_slowloris_senders_do_not_block_others_and_time_out(start_daemon):
    d = start_daemon("--timeout", "1")
    seed_keys(d.client())
    slow = [socket.create_connection(("127.0.0.1", d.port)) for _ in range(50)]
    request = resp_command("CL.THROTTLE", "slow", 5, 1, 60)
    start = time.time()
    for i in range(4):                         # one byte per 0.2 s each
        for s in slow:
            s.sendall(request[i:i + 1])
        t0 = time.time()
        assert d.ping_fresh()
        assert time.time() - t0 < 1.0          # a good client is served at once
        time.sleep(0.2)
    time.sleep(2.5)                            # then they stall past the timeout
    closed = 0
    for s in slow:
        s.settimeout(2)
        try:
            if s.recv(16) == b"":
                closed += 1
        except OSError:
            closed += 1
    assert closed == 50
    assert time.time() - start < 30
    assert_healthy(d)


def test_binary_garbage_from_many_clients(start_daemon):
    d = start_daemon()
    seed_keys(d.client())
    rng = random.Random(7)

    def garbage():
        for _ in range(20):
            s = socket.create_connection(("127.0.0.1", d.port))
            try:
                s.sendall(bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 4096))))
                s.settimeout(0.2)
                s.recv(65536)
            except OSError:
                pass
            finally:
                s.close()

    threads = [threading.Thread(target=garbage) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert_healthy(d)
