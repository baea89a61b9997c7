"""The wire protocol, byte for byte, over raw sockets: framing, pipelining,
inline commands, malformed and huge headers. Every abuse case also checks
that a fresh client still gets PONG afterwards."""
import threading
import time

import pytest

from harness import resp_command

PONG = b"+PONG\r\n"
PING_MB = b"*1\r\n$4\r\nPING\r\n"


def closes_with(server, data, expected, timeout=5.0):
    """Send data; the reply must be exactly `expected`, then EOF; and the
    daemon must still serve a fresh client."""
    conn = server.raw()
    conn.send(data)
    got, closed = conn.read_to_eof(timeout)
    assert got == expected
    assert closed, "the connection should be closed after a protocol error"
    assert server.ping_fresh()


# ---- pipelining and framing ------------------------------------------------

def test_hundred_inline_pings_in_one_send_get_hundred_pongs(server):
    conn = server.raw()
    conn.send(b"PING\r\n" * 100)
    assert conn.recv_exact(7 * 100) == PONG * 100


def test_hundred_multibulk_pings_in_one_send_get_hundred_pongs(server):
    conn = server.raw()
    conn.send(PING_MB * 100)
    assert conn.recv_exact(7 * 100) == PONG * 100


def test_pipeline_longer_than_one_event_budget_is_answered_in_order(server):
    # More requests than the server runs per read callback (1024). Inline,
    # so the test does not depend on where the kernel splits the stream
    # (see the split-bulk tests below).
    conn = server.raw()
    conn.send(b"".join(b"ECHO %d\r\n" % i for i in range(5000)))
    want = b"".join(b"$%d\r\n%d\r\n" % (len(str(i)), i) for i in range(5000))
    assert conn.recv_exact(len(want), timeout=20) == want


def test_inline_and_multibulk_mixed_in_one_send(server):
    conn = server.raw()
    conn.send(b"PING\r\n" + resp_command("ECHO", "x") + b"ECHO y\r\n" + PING_MB)
    assert conn.recv_exact(7 + 7 + 7 + 7) == PONG + b"$1\r\nx\r\n$1\r\ny\r\n" + PONG


def test_inline_request_sent_one_byte_per_send_is_answered(server):
    conn = server.raw()
    conn.send_slowly(b"ECHO hello\r\n", chunk=1, delay=0.002)
    assert conn.recv_exact(11) == b"$5\r\nhello\r\n"
    conn.send_slowly(b"PING\r\n", chunk=1, delay=0.002)
    assert conn.recv_exact(7) == PONG


def send_in_two(server, first, second, want):
    """Send a request in two segments with a pause between: exactly `want`
    comes back and the connection stays open."""
    conn = server.raw()
    conn.send(first)
    time.sleep(0.05)
    try:
        conn.send(second)
    except OSError:
        pass  # already closed by the server: the reply below tells why
    got = conn.recv_exact(len(want))
    assert got == want
    assert conn.read_to_eof(0.1) == (b"", False)
    return True


@pytest.mark.parametrize("cut", [b"*2\r\n$4\r\nECHO\r\n$5", b"*2\r\n$4\r\nECHO\r\n$5\r\n",
                                 b"*2\r\n$4\r\nECHO\r\n$5\r\nhe", b"*2\r\n$4\r\nEC", b"*2\r\n$4",
                                 b"*2\r", b"*"])
def test_request_split_in_two_is_answered(server, cut):
    req = resp_command("ECHO", "hello")
    assert req.startswith(cut)
    assert send_in_two(server, cut, req[len(cut):], b"$5\r\nhello\r\n")


@pytest.mark.parametrize("cut", [b"*2\r\n$4\r\nECHO\r\n$", b"*2\r\n$"])
def test_request_split_right_after_a_dollar_is_answered(server, cut):
    req = resp_command("ECHO", "hello")
    assert send_in_two(server, cut, req[len(cut):], b"$5\r\nhello\r\n")


def test_multibulk_request_sent_one_byte_per_send_is_answered(server):
    conn = server.raw()
    conn.send_slowly(resp_command("ECHO", "hello"), chunk=1, delay=0.002)
    assert conn.recv_exact(11) == b"$5\r\nhello\r\n"
    assert conn.read_to_eof(0.1) == (b"", False)


def test_bulk_split_after_a_kilobyte_of_pipelined_requests_is_answered(server):
    head = b"PING\r\n" * 200 + b"*2\r\n$4\r\nECHO\r\n$5\r\nhe"
    assert send_in_two(server, head, b"llo\r\n", PONG * 200 + b"$5\r\nhello\r\n")


def test_long_argument_then_a_split_bulk_is_answered(server):
    head = b"*3\r\n$3\r\nDEL\r\n$2000\r\n" + b"k" * 2000 + b"\r\n$5\r\nab"
    assert send_in_two(server, head, b"cde\r\n", b":0\r\n")


def test_throttle_sent_one_byte_per_send_is_answered(server):
    conn = server.raw()
    conn.send_slowly(resp_command("CL.THROTTLE", "bytewise", "15", "30", "60"), delay=0.001)
    assert conn.reply_bytes() == b"*5\r\n:0\r\n:16\r\n:15\r\n:-1\r\n:2\r\n"


def test_pipeline_cut_at_every_byte_is_answered(server):
    stream = (resp_command("ECHO", "hello") + b"PING\r\n" + resp_command("PING") +
              resp_command("ECHO", "") + resp_command("ECHO", b"x" * 40) + b'ECHO "q q"\r\n')
    want = (b"$5\r\nhello\r\n" + PONG + PONG + b"$0\r\n\r\n" +
            b"$40\r\n" + b"x" * 40 + b"\r\n" + b"$3\r\nq q\r\n")
    for first in range(0, len(stream), 40):          # 40 connections at a time
        conns = []
        for cut in range(first, min(first + 40, len(stream))):
            c = server.raw()
            c.send(stream[:cut])
            conns.append((cut, c))
        time.sleep(0.05)
        for cut, c in conns:
            c.send(stream[cut:])
        for cut, c in conns:
            assert c.recv_exact(len(want)) == want, "cut at byte %d" % cut
            c.close()


def test_large_multibulk_pipeline_in_random_chunks(server):
    import random
    rnd = random.Random(7)
    reqs, want = [], []
    for i in range(3000):
        arg = b"v%d-" % i + b"y" * rnd.randrange(0, 300)
        reqs.append(resp_command("ECHO", arg))
        want.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
    stream, want = b"".join(reqs), b"".join(want)
    conn = server.raw()
    got = bytearray()

    def reader():
        got.extend(conn.recv_exact(len(want), timeout=30))

    t = threading.Thread(target=reader)
    t.start()
    i = 0
    while i < len(stream):
        n = rnd.choice((1, 2, 3, 7, 100, 1000, 1500, 4096, 70000))
        conn.send(stream[i:i + n])
        i += n
        if rnd.random() < 0.05:
            time.sleep(0.001)
    t.join(40)
    assert bytes(got) == want


def test_redis_py_pipeline_over_64kb_of_requests(server, r):
    # Ten DELs of 500 keys each: the server's reads cut the stream mid-request.
    p = r.pipeline(transaction=False)
    for i in range(10):
        p.delete(*["pipeline-key-%d-%d" % (i, j) for j in range(500)])
    assert p.execute() == [0] * 10
    assert r.ping() is True


def test_binary_bulk_round_trips(server):
    conn = server.raw()
    payload = bytes(range(256)) + b"\r\n\x00\r\n"
    want = b"$%d\r\n%s\r\n" % (len(payload), payload)
    conn.send(resp_command("ECHO", payload))
    assert conn.recv_exact(len(want)) == want


def test_empty_inline_lines_are_ignored(server):
    conn = server.raw()
    conn.send(b"\r\n\n   \r\nPING\r\n")
    assert conn.recv_exact(7) == PONG


def test_zero_and_negative_multibulk_counts_are_ignored(server):
    conn = server.raw()
    conn.send(b"*0\r\n*-1\r\n*-2\r\nPING\r\n")
    assert conn.recv_exact(7) == PONG


def test_empty_bulk_argument(server):
    conn = server.raw()
    conn.send(b"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n")
    assert conn.recv_exact(6) == b"$0\r\n\r\n"


# ---- inline commands (Redis's sdssplitargs rules) ---------------------------

@pytest.mark.parametrize("line,reply", [
    (b'ECHO "hello world"', b"$11\r\nhello world\r\n"),
    (b'ECHO "a\\x41"', b"$2\r\naA\r\n"),
    (b'ECHO "tab\\there"', b"$8\r\ntab\there\r\n"),
    (b'ECHO "q\\"uote"', b'$6\r\nq"uote\r\n'),
    (b"ECHO 'it\\'s'", b"$4\r\nit's\r\n"),
    (b"ECHO 'no \\x41 escapes'", b"$15\r\nno \\x41 escapes\r\n"),
    (b"   ECHO    spaced   ", b"$6\r\nspaced\r\n"),
    (b'ECHO ""', b"$0\r\n\r\n"),
    (b"echo lower", b"$5\r\nlower\r\n"),
    (b"ECHO unix-newline\n", b"$12\r\nunix-newline\r\n"),
])
def test_inline_quoting(server, line, reply):
    conn = server.raw()
    if not line.endswith(b"\n"):
        line += b"\r\n"
    conn.send(line)
    assert conn.recv_exact(len(reply)) == reply


def test_inline_throttle(server):
    conn = server.raw()
    conn.send(b"CL.THROTTLE inline-key 15 30 60\r\n")
    assert conn.recv_exact(4) == b"*5\r\n"
    assert conn.recv_exact(len(b":0\r\n:16\r\n:15\r\n:-1\r\n")) == b":0\r\n:16\r\n:15\r\n:-1\r\n"


@pytest.mark.parametrize("line", [b'ECHO "abc', b"ECHO 'abc", b'ECHO "a"b', b"ECHO 'a'b"])
def test_inline_unbalanced_quotes_close_the_connection(server, line):
    closes_with(server, line + b"\r\n",
                b"-ERR Protocol error: unbalanced quotes in request\r\n")


def test_inline_line_over_64kb_without_newline_is_refused(server):
    closes_with(server, b"a" * (70 * 1024),
                b"-ERR Protocol error: too big inline request\r\n")


# ---- malformed multibulk ---------------------------------------------------

@pytest.mark.parametrize("header", [
    b"*abc\r\n", b"*2147483648\r\n", b"*9223372036854775808\r\n", b"*1048577\r\n",
    b"*+1\r\n", b"*01\r\n", b"*1 \r\n",
])
def test_bad_multibulk_count_is_refused(server, header):
    closes_with(server, header + b"$4\r\nPING\r\n",
                b"-ERR Protocol error: invalid multibulk length\r\n")


def test_multibulk_count_without_line_end_is_refused_when_too_long(server):
    closes_with(server, b"*" + b"1" * (70 * 1024),
                b"-ERR Protocol error: too big mbulk count string\r\n")


@pytest.mark.parametrize("element,byte", [
    (b":5\r\n", b":"), (b"+OK\r\n", b"+"), (b"-ERR x\r\n", b"-"), (b"x\r\n", b"x"),
    (b"*1\r\n$4\r\nPING\r\n", b"*"),
])
def test_non_bulk_element_is_refused(server, element, byte):
    closes_with(server, b"*1\r\n" + element,
                b"-ERR Protocol error: expected '$', got '%s'\r\n" % byte)


def test_null_bulk_element_is_refused(server):
    closes_with(server, b"*1\r\n$-1\r\n", b"-ERR Protocol error: invalid bulk length\r\n")


def test_bulk_length_over_default_limit_is_refused_before_the_body(server):
    # proto-max-bulk-len defaults to 512mb; one byte more is refused at once.
    closes_with(server, b"*1\r\n$536870913\r\n",
                b"-ERR Protocol error: invalid bulk length\r\n")


@pytest.mark.parametrize("header", [b"$-5", b"$04", b"$+4", b"$99999999999999999999", b"$4x",
                                    b"$", b"$ 4"])
def test_malformed_bulk_length_says_invalid_bulk_length_as_redis(server, header):
    closes_with(server, b"*1\r\n" + header + b"\r\nPING\r\n",
                b"-ERR Protocol error: invalid bulk length\r\n")


def test_error_after_pipelined_requests_comes_after_their_replies(server):
    closes_with(server, b"PING\r\n" + PING_MB + resp_command("ECHO", "e") + b"*abc\r\nPING\r\n",
                PONG + PONG + b"$1\r\ne\r\n" + b"-ERR Protocol error: invalid multibulk length\r\n")


def test_bytes_after_a_protocol_error_are_ignored(server):
    conn = server.raw()
    conn.send(b"*1\r\n:1\r\n")
    got, closed = conn.read_to_eof(5)
    assert got == b"-ERR Protocol error: expected '$', got ':'\r\n" and closed
    stats = server.info("stats")
    assert stats["protocol_errors"] >= 1


def test_half_sent_request_then_disconnect_leaves_server_healthy(server):
    for partial in (b"*3\r\n$3\r\nSET", b"*2\r\n$4\r\nECHO\r\n$100\r\nabc", b"PIN", b"*5"):
        conn = server.raw()
        conn.send(partial)
        conn.close()
    assert server.ping_fresh()


def test_many_clients_abusing_at_once_do_not_disturb_a_good_client(server):
    good = server.client()
    bad = [b"*abc\r\n", b"*1\r\n:1\r\n", b'ECHO "x\r\n', b"*1\r\n$-1\r\n", b"a" * 70000]
    errors = []

    def abuse(data):
        try:
            c = server.raw()
            c.send(data)
            c.read_to_eof(5)
        except Exception as e:  # collected and reported below
            errors.append(e)

    threads = [threading.Thread(target=abuse, args=(bad[i % len(bad)],)) for i in range(25)]
    for t in threads:
        t.start()
    for _ in range(50):
        assert good.ping() is True
    for t in threads:
        t.join(10)
    assert not errors
    assert good.echo("still here") == b"still here"


# ---- size limits that need their own daemon ---------------------------------

def test_bulk_over_proto_max_bulk_len_is_refused_without_the_body(start_daemon):
    # 1mb is the least proto-max-bulk-len (as in Redis).
    d = start_daemon("--proto-max-bulk-len", "1mb")
    conn = d.raw()
    t0 = time.monotonic()
    conn.send(b"*1\r\n$1048577\r\n")
    got, closed = conn.read_to_eof(5)
    assert got == b"-ERR Protocol error: invalid bulk length\r\n"
    assert closed
    assert time.monotonic() - t0 < 3
    ok = d.raw()
    ok.send(resp_command("ECHO", b"y" * 1048576))
    want = b"$1048576\r\n" + b"y" * 1048576 + b"\r\n"
    assert ok.recv_exact(len(want)) == want


def test_multibulk_over_proto_max_args_is_refused(start_daemon):
    # 1024 is the least proto-max-args.
    d = start_daemon("--proto-max-args", "1024")
    ok = d.raw()
    assert ok.command("DEL", *["k%d" % i for i in range(1023)]) == b":0\r\n"
    conn = d.raw()
    conn.send(b"*1025\r\n")
    assert conn.read_to_eof(5) == (b"-ERR Protocol error: invalid multibulk length\r\n", True)


def test_inline_request_over_proto_max_args_is_refused(start_daemon):
    d = start_daemon("--proto-max-args", "1024")
    conn = d.raw()
    conn.send(b"DEL" + b" k" * 1024 + b"\r\n")
    got, closed = conn.read_to_eof(1)
    assert got.startswith(b"-ERR Protocol error") and closed


def test_bulk_of_exactly_proto_max_bulk_len_is_accepted_at_equal_limits(start_daemon):
    d = start_daemon("--client-query-buffer-limit", "1mb", "--proto-max-bulk-len", "1mb")
    conn = d.raw()
    arg = b"x" * 1048576
    conn.send(resp_command("ECHO", arg))
    want = b"$1048576\r\n" + arg + b"\r\n"
    got, closed = conn.read_to_eof(2)
    assert (got, closed) == (want, False)


def test_unfinished_request_over_query_buffer_limit_closes_only_that_client(start_daemon):
    # A request announcing a million small arguments stays incomplete while
    # they arrive; its buffered bytes pass the 1 MB query buffer limit.
    d = start_daemon("--client-query-buffer-limit", "1mb", "--proto-max-bulk-len", "1mb")
    other = d.raw()
    other.send(b"PING\r\n")
    assert other.recv_exact(7) == PONG
    conn = d.raw()
    conn.send(b"*1000000\r\n")
    chunk = b"$1\r\ny\r\n" * 8192
    sent = 0
    try:
        while sent < 2 * 1024 * 1024:
            conn.sock.sendall(chunk)
            sent += len(chunk)
    except OSError:
        pass  # the server closed the connection while we were still sending
    got, closed = conn.read_to_eof(5)
    assert closed
    # The error reply is sent before the close; a reset racing with our
    # unread bytes may drop it, but if anything arrives it is that reply.
    assert got in (b"-ERR Protocol error: client query buffer limit reached\r\n", b"")
    other.send(b"PING\r\n")
    assert other.recv_exact(7) == PONG
    assert d.info("stats")["client_query_buffer_limit_disconnections"] == 1


def test_pipelining_client_that_reads_replies_is_not_closed_by_query_buffer_limit(start_daemon):
    d = start_daemon("--client-query-buffer-limit", "1mb", "--proto-max-bulk-len", "1mb")
    conn = d.raw()
    n = 300000                        # 1.8 MB of small, complete requests
    send_error = []

    def sender():
        try:
            conn.sock.sendall(b"PING\r\n" * n)
        except OSError as e:
            send_error.append(e)

    t = threading.Thread(target=sender)
    t.start()
    try:
        got = conn.recv_exact(7 * n, timeout=30)
    finally:
        t.join(30)
    assert got == PONG * n
    assert not send_error


def test_inline_request_with_a_nul_byte_is_refused_not_cut(server):
    # "DEL a\0b" must not delete "a": the line is refused whole.
    r = server.client()
    r.execute_command("CL.THROTTLE", "a", 5, 1, 60)
    closes_with(server, b"DEL a\x00b\r\n",
                b"-ERR Protocol error: NUL byte in inline request\r\n")
    assert r.exists("a") == 1
