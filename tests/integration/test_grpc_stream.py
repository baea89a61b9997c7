"""grpc-port's streaming calls, through grpc.health.v1.Health/Watch called
by Python's grpcio: the status at once, then each change (NOT_SERVING while
the journal cannot be written, or at shutdown), many at once, unary calls
beside them, and their bounds: grpc-max-streaming-calls, the idle bound
grpc-stream-idle-timeout, grpc-stream-timeout that resets a stalled unary
call but not a healthy stream, and what a closed connection frees."""
import os
import queue
import socket
import threading
import time

import grpc
import pytest

import harness
from harness import resp_command
from test_grpc import HEALTH, SERVING, WAIT, HeldCalls, grpc_daemon, grpc_memory

WATCH = "/grpc.health.v1.Health/Watch"
NOT_SERVING = b"\x08\x02"
SERVICE_UNKNOWN = b"\x08\x03"
END = object()                  # a Watcher's stream ended


class Watcher:
    """One Watch call, its messages read by a thread of its own into a
    queue (grpcio's iterator blocks), so every wait is bounded. With
    keep_open the client keeps its side open after the request (a
    stream-stream call on the same path) until close(), sending `more`
    messages after it first."""

    def __init__(self, channel, request=b"", keep_open=False, more=()):
        self.messages = queue.Queue()
        self.release = threading.Event()
        self.sent_all = threading.Event()
        if keep_open:
            self.call = channel.stream_stream(WATCH)(self._requests(request, more))
        else:
            self.call = channel.unary_stream(WATCH)(request)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _requests(self, first, more):
        yield first
        for m in more:
            yield m
        self.sent_all.set()
        self.release.wait(120)          # bounded: no thread outlives a run

    def _read(self):
        try:
            for m in self.call:
                self.messages.put(m)
        except grpc.RpcError:
            pass
        self.messages.put(END)

    def next(self, timeout=WAIT):
        return self.messages.get(timeout=timeout)

    def quiet(self, seconds):
        """True when nothing (no message, no end) came for seconds."""
        try:
            self.messages.put(self.messages.get(timeout=seconds))
            return False
        except queue.Empty:
            return True

    def status(self):
        """The call's end: (code, details)."""
        assert self.next() is END
        return self.call.code(), self.call.details()

    def close(self):
        self.call.cancel()
        self.release.set()
        self.thread.join(WAIT)


def channel(d):
    ch = grpc.insecure_channel("127.0.0.1:%d" % d.grpc_port,
                               options=[("grpc.use_local_subchannel_pool", 1)])
    grpc.channel_ready_future(ch).result(timeout=WAIT)
    return ch


def stats(d):
    return d.info("stats")


def streaming(d):
    return stats(d)["grpc_streaming_calls"]


def test_watch_answers_at_once_and_keeps_unary_calls_going(start_daemon):
    """SERVING at once, and nothing more while nothing changes; Check and
    Watch agree; an unknown service is SERVICE_UNKNOWN on a stream that
    stays open (NOT_FOUND for Check); unary calls on the same connection
    are answered while the streams are open."""
    d = grpc_daemon(start_daemon)
    ch = channel(d)
    w = Watcher(ch)
    assert w.next() == SERVING
    other = Watcher(ch, b"\x0a\x07nothing")         # service: "nothing"
    assert other.next() == SERVICE_UNKNOWN
    check = ch.unary_unary(HEALTH)
    for _ in range(20):
        assert check(b"", timeout=WAIT) == SERVING
    with pytest.raises(grpc.RpcError) as e:
        check(b"\x0a\x07nothing", timeout=WAIT)
    assert e.value.code() == grpc.StatusCode.NOT_FOUND
    assert w.quiet(0.5) and other.quiet(0.1)
    assert streaming(d) == 2 and stats(d)["grpc_streaming_calls_opened"] == 2
    w.close()
    other.close()
    assert harness.wait_until(lambda: streaming(d) == 0, WAIT)
    ch.close()


@pytest.fixture
def small_disk(tmp_path):
    with harness.small_disk(str(tmp_path / "disk")) as mnt:
        yield mnt


def test_watch_follows_misconf_both_ways_as_check_does(start_daemon, small_disk):
    """A journal that cannot be written (a full disk: -MISCONF) makes the
    server NOT_SERVING, to Check and to every Watch at once; freed, it is
    SERVING again, and the Watch says so."""
    d = grpc_daemon(start_daemon, "--dir", small_disk, "--appendonly", "yes",
                    "--save", "", "--appendfsync", "always",
                    "--auto-aof-rewrite-percentage", "0")
    ch = channel(d)
    check = ch.unary_unary(HEALTH)
    watchers = [Watcher(ch) for _ in range(3)]
    for w in watchers:
        assert w.next() == SERVING
    filler = os.path.join(small_disk, "filler")
    harness.fill_disk(filler)
    c = d.raw()
    k = "k" * 5000                      # a record that needs a page
    c.send(resp_command("CL.THROTTLE", k, 9, 1, 3600))
    for w in watchers:
        assert w.next() == NOT_SERVING
    assert check(b"", timeout=WAIT) == b"\x08\x02"
    os.unlink(filler)
    for w in watchers:
        assert w.next() == SERVING
    assert check(b"", timeout=WAIT) == SERVING
    assert c.reply_bytes(timeout=WAIT).startswith(b"*5\r\n:0\r\n")
    for w in watchers:
        w.close()
    ch.close()


def test_shutdown_tells_every_watch_not_serving_then_ends_it(start_daemon):
    d = grpc_daemon(start_daemon)
    ch = channel(d)
    w = Watcher(ch)
    assert w.next() == SERVING
    c = d.raw()
    c.send(resp_command("SHUTDOWN", "NOSAVE"))
    assert w.next() == NOT_SERVING
    code, details = w.status()
    assert code == grpc.StatusCode.UNAVAILABLE
    assert d.wait_exit(WAIT) == 0
    d.stopped = True
    ch.close()


def test_many_watch_streams_and_what_a_closed_connection_frees(start_daemon):
    """120 Watch calls on three connections, each answered; closing a
    connection ends its calls and gives back what they held."""
    d = grpc_daemon(start_daemon)
    assert grpc_memory(d) == (0, 0)
    channels = [channel(d) for _ in range(3)]
    watchers = [Watcher(ch) for ch in channels for _ in range(40)]
    for w in watchers:
        assert w.next() == SERVING
    assert streaming(d) == 120
    busy = grpc_memory(d)[0]
    for i, ch in enumerate(channels):
        ch.close()
        assert harness.wait_until(lambda: streaming(d) == 80 - 40 * i, WAIT)
    assert harness.wait_until(lambda: grpc_memory(d) == (0, 0), WAIT), \
        (grpc_memory(d), busy)
    for w in watchers:
        w.close()
    s = stats(d)
    assert s["grpc_streaming_calls_opened"] == s["grpc_streaming_calls_ended"] == 120


def test_grpc_max_streaming_calls_refuses_the_next_and_keeps_the_others(
        start_daemon, tmp_path):
    conf = tmp_path / "cellgate.conf"
    conf.write_text("grpc-max-streaming-calls 3\n")
    gport = harness.free_port()
    d = start_daemon("--grpc-port", gport, config_file=str(conf))
    d.grpc_port = gport
    ch = channel(d)
    held = [Watcher(ch) for _ in range(3)]
    for w in held:
        assert w.next() == SERVING
    late = Watcher(ch)
    assert late.status() == (grpc.StatusCode.RESOURCE_EXHAUSTED,
                             "too many streaming calls are open "
                             "(grpc-max-streaming-calls)")
    assert all(w.quiet(0.1) for w in held)     # the others live on
    assert stats(d)["grpc_streaming_calls_refused"] == 1
    assert ch.unary_unary(HEALTH)(b"", timeout=WAIT) == SERVING
    r = d.client(decode_responses=True)
    assert r.config_get("grpc-max-streaming-calls") == \
        {"grpc-max-streaming-calls": "3"}
    assert r.config_set("grpc-max-streaming-calls", "4")
    assert r.config_set("grpc-stream-idle-timeout", "60000")
    fourth = Watcher(ch)
    assert fourth.next() == SERVING
    held[0].close()                             # one goes, one more fits
    assert harness.wait_until(lambda: streaming(d) == 3, WAIT)
    fifth = Watcher(ch)
    assert fifth.next() == SERVING
    assert r.execute_command("CONFIG", "REWRITE") == "OK"
    text = conf.read_text()
    assert "grpc-max-streaming-calls 4" in text
    assert "grpc-stream-idle-timeout 60000" in text
    for w in held[1:] + [late, fourth, fifth]:
        w.close()
    ch.close()


def test_a_silent_client_is_reset_at_grpc_stream_idle_timeout(start_daemon):
    """A client that keeps its side open and sends nothing for 300 ms is
    reset (CANCELLED); one that keeps sending, and a Watch that
    half-closed after its request, live on."""
    d = grpc_daemon(start_daemon, "--grpc-stream-idle-timeout", "300")
    ch = channel(d)
    half_closed = Watcher(ch)
    assert half_closed.next() == SERVING
    started = time.monotonic()
    silent = Watcher(ch, keep_open=True)
    assert silent.next() == SERVING
    code, _ = silent.status()
    assert time.monotonic() - started >= 0.3    # never before its time
    assert code == grpc.StatusCode.CANCELLED
    assert stats(d)["grpc_streaming_calls_idle_resets"] == 1
    assert half_closed.quiet(0.5)
    assert streaming(d) == 1
    half_closed.close()
    ch.close()


def test_ten_megabytes_in_small_messages_on_one_stream_never_stall(start_daemon):
    """Flow control over an endless stream: 10 MB in 1000-byte messages
    (Watch reads its first one, the request, and leaves the rest) all go
    through while the stream stays open; the server holds none of it."""
    d = grpc_daemon(start_daemon)
    ch = channel(d)
    w = Watcher(ch, keep_open=True, more=[b"x" * 1000] * 10000)
    assert w.next() == SERVING
    assert w.sent_all.wait(WAIT)
    assert w.quiet(0.2)
    assert harness.wait_until(lambda: grpc_memory(d)[1] == 0, WAIT)
    assert ch.unary_unary(HEALTH)(b"", timeout=WAIT) == SERVING
    w.close()
    ch.close()


def test_a_message_over_grpc_max_message_ends_the_stream(start_daemon):
    d = grpc_daemon(start_daemon, "--grpc-max-message", "1kb")
    ch = channel(d)
    w = Watcher(ch, keep_open=True, more=[b"x" * 2000])
    first = w.next()                # SERVING, unless both came in one read
    if first is not END:
        assert first == SERVING
        first = w.next()
    assert first is END
    assert (w.call.code(), w.call.details()) == (grpc.StatusCode.RESOURCE_EXHAUSTED,
                          "the message is larger than the server accepts")
    assert harness.wait_until(lambda: streaming(d) == 0, WAIT)
    w.close()
    ch.close()


@pytest.mark.allocator
def test_grpc_stream_timeout_resets_a_stalled_call_but_not_a_watch(start_daemon):
    d = grpc_daemon(start_daemon, "--grpc-stream-timeout", "300")
    c = HeldCalls(d)
    w = Watcher(c.channel)
    assert w.next() == SERVING
    f = c.open(64 * 1024)
    assert f.exception(timeout=WAIT).code() == grpc.StatusCode.CANCELLED
    assert w.quiet(0.5)                         # past 300 ms, still open
    assert stats(d)["grpc_stream_timeouts"] == 1
    assert streaming(d) == 1
    w.close()
    c.close()
    assert harness.wait_until(lambda: grpc_memory(d) == (0, 0), WAIT)


def test_timeout_does_not_close_a_connection_with_a_watch(start_daemon):
    """`timeout` closes an idle connection, but not one a Watch is open on
    (as Redis's does not close a subscriber)."""
    d = grpc_daemon(start_daemon, "--timeout", "1")
    ch = channel(d)
    w = Watcher(ch)
    assert w.next() == SERVING
    assert w.quiet(2.5)
    assert stats(d)["idle_timeout_disconnections"] == 0
    w.close()
    ch.close()
