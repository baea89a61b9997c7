"""Connection limits: maxclients, idle timeout, output buffer backpressure and
the hard output limit. Each test runs its own daemon with the limit set."""
import socket
import threading
import time

import pytest

from harness import resp_command, wait_until

PONG = b"+PONG\r\n"
MAX_CLIENTS_ERR = b"-ERR max number of clients reached\r\n"


def pong(conn):
    conn.send(b"PING\r\n")
    return conn.recv_exact(7) == PONG


# ---- maxclients ------------------------------------------------------------

def test_client_over_maxclients_gets_error_then_eof(start_daemon):
    d = start_daemon("--maxclients", "3")
    held = [d.raw() for _ in range(3)]
    for c in held:
        assert pong(c)
    extra = d.raw()
    got, closed = extra.read_to_eof(5)
    assert got == MAX_CLIENTS_ERR
    assert closed
    # The clients already in are unaffected.
    for c in held:
        assert pong(c)
    held[0].close()

    def newcomer_served():
        c = d.raw()
        try:
            c.send(b"PING\r\n")
            got, _ = c.read_to_eof(0.5)
            return got == PONG
        finally:
            c.close()

    assert wait_until(newcomer_served, 5), "a slot freed by a closed client is reused"


def test_rejected_connections_are_counted(start_daemon):
    d = start_daemon("--maxclients", "1")
    held = d.raw()
    assert pong(held)
    for _ in range(3):
        c = d.raw()
        assert c.read_to_eof(5) == (MAX_CLIENTS_ERR, True)
    held.send(b"INFO stats\r\n")
    text = held.recv_until(b"accept_errors:")
    assert b"rejected_connections:3\r\n" in text


def test_maxclients_can_be_raised_at_run_time(start_daemon):
    d = start_daemon("--maxclients", "2")
    a = d.raw()
    assert pong(a)
    b = d.raw()
    assert pong(b)
    a.send(resp_command("CONFIG", "SET", "maxclients", "3"))
    assert a.recv_exact(5) == b"+OK\r\n"
    c = d.raw()
    assert pong(c)
    assert d.raw().read_to_eof(5) == (MAX_CLIENTS_ERR, True)


# ---- idle timeout ------------------------------------------------------------

def test_idle_client_is_closed_after_timeout_busy_one_is_not(start_daemon):
    d = start_daemon("--timeout", "1")
    idle = d.raw()
    busy = d.raw()
    assert pong(idle) and pong(busy)
    t0 = time.monotonic()
    stop = threading.Event()
    busy_ok = []

    def keep_busy():
        while not stop.is_set():
            busy_ok.append(pong(busy))
            time.sleep(0.25)

    t = threading.Thread(target=keep_busy)
    t.start()
    try:
        got, closed = idle.read_to_eof(5)
        waited = time.monotonic() - t0
    finally:
        time.sleep(0.6)        # the busy client outlives the idle one
        stop.set()
        t.join(5)
    assert (got, closed) == (b"", True)
    assert 0.9 <= waited <= 3.0, "closed after %.2f s" % waited
    assert busy_ok and all(busy_ok)
    assert pong(busy)
    assert d.info("stats")["idle_timeout_disconnections"] == 1


def test_timeout_set_at_run_time_applies_to_connected_clients(start_daemon):
    d = start_daemon()
    idle = d.raw()
    assert pong(idle)
    admin = d.raw()
    assert admin.command("CONFIG", "SET", "timeout", "1") == b"+OK\r\n"
    t0 = time.monotonic()
    assert idle.read_to_eof(5) == (b"", True)
    assert time.monotonic() - t0 < 3.5


def test_without_timeout_an_idle_client_stays(start_daemon):
    d = start_daemon("--hz", "50")
    idle = d.raw()
    assert pong(idle)
    time.sleep(1.5)
    assert pong(idle)


# ---- output buffers ------------------------------------------------------------

def _pipeline_without_reading(sock, request, total, seconds):
    """Non-blocking sends of `request` until `total` bytes or `seconds`.
    Returns the bytes the kernel accepted."""
    sock.setblocking(False)
    sent = 0
    view = memoryview(request)
    off = 0
    deadline = time.monotonic() + seconds
    while sent < total and time.monotonic() < deadline:
        try:
            n = sock.send(view[off:])
        except BlockingIOError:
            time.sleep(0.005)
            continue
        sent += n
        off = (off + n) % len(request)
    sock.setblocking(True)
    return sent


@pytest.mark.allocator
def test_slow_reader_is_paused_and_does_not_grow_server_memory(start_daemon):
    d = start_daemon("--client-output-hard-limit", "4mb", "--client-output-pause-limit", "1mb")
    watcher = d.client(decode_responses=True)
    base = watcher.info("memory")["used_memory"]
    slow = d.raw()
    slow.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    # Inline, so where the kernel cuts the stream cannot matter (see the
    # split-bulk tests in test_protocol.py).
    request = b"ECHO " + b"x" * 60000 + b"\r\n"
    total = 50 * 1024 * 1024

    result = {}
    t = threading.Thread(target=lambda: result.setdefault(
        "sent", _pipeline_without_reading(slow.sock, request, total, 4.0)))
    t.start()
    # While it stalls, everybody else is served promptly.
    other = d.raw()
    for _ in range(20):
        t0 = time.monotonic()
        assert pong(other)
        assert time.monotonic() - t0 < 1.0
        time.sleep(0.05)
    t.join(10)
    sent = result["sent"]
    assert sent < total, "the server kept reading a client that reads nothing"

    mem = watcher.info("memory")
    # Pending output stops at the pause limit (plus one reply): far below the
    # tens of MB the client tried to push.
    assert mem["used_memory"] - base < 8 * 1024 * 1024, mem
    slow_entry = [c for c in watcher.client_list() if c.get("cmd") == "echo"]
    assert len(slow_entry) == 1
    assert int(slow_entry[0]["omem"]) <= 1024 * 1024 + 61000
    # Paused, not closed: nothing was produced past the hard limit.
    assert watcher.info("stats")["client_output_buffer_limit_disconnections"] == 0

    # Once it reads, it gets every reply it asked for, in order.
    replies = sent // len(request)
    want = b"$60000\r\n" + b"x" * 60000 + b"\r\n"
    for i in range(replies):
        assert slow.recv_exact(len(want), timeout=20) == want, "reply %d" % i
    assert pong(other)


@pytest.mark.allocator
def test_reply_over_hard_output_limit_closes_only_that_client(start_daemon):
    d = start_daemon("--client-output-hard-limit", "4mb", "--client-output-pause-limit", "1mb")
    other = d.raw()
    assert pong(other)
    big = d.raw()
    big.send(resp_command("ECHO", b"z" * (5 * 1024 * 1024)))
    got, closed = big.read_to_eof(10)
    assert closed
    assert len(got) < 5 * 1024 * 1024, "the oversized reply must not be delivered"
    assert pong(other)
    stats = d.info("stats")
    assert stats["client_output_buffer_limit_disconnections"] == 1
    assert d.info("memory")["used_memory"] < 4 * 1024 * 1024


def test_output_limits_are_visible_in_config(start_daemon):
    d = start_daemon("--client-output-hard-limit", "4mb", "--client-output-pause-limit", "1mb")
    r = d.client(decode_responses=True)
    assert r.config_get("client-output-*") == {
        "client-output-pause-limit": str(1024 * 1024),
        "client-output-hard-limit": str(4 * 1024 * 1024),
        "client-output-pause-timeout": "60",
        # Redis's, accepted and shown as Redis shows its default
        "client-output-buffer-limit": "normal 0 0 0 slave 268435456 67108864 60 "
                                      "pubsub 33554432 8388608 60",
    }


def test_sigterm_with_a_paused_client_and_queued_input_exits_cleanly(start_daemon):
    d = start_daemon("--client-output-hard-limit", "4mb", "--client-output-pause-limit", "1mb")
    slow = d.raw()
    slow.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    sent = _pipeline_without_reading(slow.sock, b"ECHO " + b"x" * 60000 + b"\r\n",
                                     8 * 1024 * 1024, 1.0)
    assert sent > 2 * 1024 * 1024
    backlog = d.raw()
    backlog.send(b"PING\r\n" * 50000)          # more than one event's worth of requests
    idle = d.raw()
    assert pong(idle)
    problems = d.stop()
    assert problems == []
    assert "Received SIGTERM" in d.log()
