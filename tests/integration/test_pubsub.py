"""Pub/sub, as Redis 7 answers it: what Sentinel's hello channel and
failover-aware clients' +switch-master listeners rely on."""
import socket
import time

import pytest
import redis

import harness
import redis_cases
from harness import resp_command


def script(port):
    """One fixed conversation between a subscriber and a publisher: every
    reply, in order (the order-free ones sorted)."""
    sub, pub = harness.RawConn(port=port), harness.RawConn(port=port)
    out = []
    try:
        sub.send(resp_command("SUBSCRIBE", "a", "b"))
        out += [sub.reply_bytes(), sub.reply_bytes()]
        out.append(sub.command("PING"))
        out.append(sub.command("PING", "x"))
        out.append(sub.command("GET", "x"))
        out.append(sub.command("CL.THROTTLE", "k", 1, 1, 60))
        sub.send(resp_command("PSUBSCRIBE", "h*", "h?"))
        out += [sub.reply_bytes(), sub.reply_bytes()]
        out.append(pub.command("PUBLISH", "a", "hello"))
        out.append(sub.reply_bytes())
        out.append(pub.command("PUBLISH", "hx", "to both patterns"))
        out += sorted([sub.reply_bytes(), sub.reply_bytes()])
        out.append(pub.command("PUBLISH", "nobody", "x"))
        out.append(pub.command("PUBSUB", "NUMSUB", "a", "zz"))
        out.append(pub.command("PUBSUB", "NUMPAT"))
        chans = pub.command("PUBSUB", "CHANNELS")
        out.append(sorted(chans.split(b"\r\n")[2::2]))
        out.append(pub.command("PUBSUB", "CHANNELS", "a*"))
        sub.send(resp_command("SUBSCRIBE", "a"))        # already: count stays
        out.append(sub.reply_bytes())
        sub.send(resp_command("UNSUBSCRIBE", "a", "zz"))
        out += [sub.reply_bytes(), sub.reply_bytes()]
        sub.send(resp_command("PUNSUBSCRIBE"))
        out += sorted([sub.reply_bytes(), sub.reply_bytes()])
        sub.send(resp_command("UNSUBSCRIBE"))
        out.append(sub.reply_bytes())
        sub.send(resp_command("UNSUBSCRIBE"))           # none left
        out.append(sub.reply_bytes())
        out.append(sub.command("PING"))                 # normal again
        out.append(pub.command("SUBSCRIBE"))
        out.append(pub.command("PUBLISH", "a"))
        out.append(pub.command("PUBSUB", "NUMPAT", "x"))
        # RESP3: pushes, and every command allowed.
        out.append(sub.command("HELLO", "3").startswith(b"%7\r\n"))
        sub.send(resp_command("SUBSCRIBE", "c"))
        out.append(sub.reply_bytes())
        out.append(sub.command("PING"))
        out.append(sub.command("EXISTS", "nothing"))
        out.append(pub.command("PUBLISH", "c", "m3"))
        out.append(sub.reply_bytes())
        sub.send(resp_command("UNSUBSCRIBE"))
        out.append(sub.reply_bytes())
    finally:
        sub.close()
        pub.close()
    return out


def test_a_subscriber_and_a_publisher_get_redis_bytes(server, redis_server):
    theirs = script(redis_server.port)
    ours = script(server.port)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if i == 5:
            continue                    # Redis has no CL.THROTTLE: unknown
        assert a == b, "reply %d: %r != %r" % (i, a, b)
    assert ours[5] == (b"-ERR Can't execute 'cl.throttle': only (P|S)SUBSCRIBE / "
                       b"(P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in "
                       b"this context\r\n")


def muted_subscriber(port, proto):
    """A subscriber under CLIENT REPLY OFF, then SKIP: every byte it
    receives up to CLIENT REPLY ON's +OK."""
    sub, pub = harness.RawConn(port=port), harness.RawConn(port=port)
    try:
        sub.command("HELLO", proto)
        sub.send(resp_command("CLIENT", "REPLY", "OFF"))
        sub.send(resp_command("SUBSCRIBE", "x", "y"))
        sub.send(resp_command("PSUBSCRIBE", "p*"))
        sub.send(resp_command("PING"))              # muted: no PONG
        got = [sub.reply_bytes() for _ in range(3)]
        pub.command("PUBLISH", "x", "hi")
        got.append(sub.reply_bytes())
        sub.send(resp_command("UNSUBSCRIBE", "x"))
        sub.send(resp_command("CLIENT", "REPLY", "SKIP"))
        sub.send(resp_command("SUBSCRIBE", "z"))
        sub.send(resp_command("PUNSUBSCRIBE"))
        sub.send(resp_command("UNSUBSCRIBE", "y", "z"))
        sub.send(resp_command("CLIENT", "REPLY", "ON"))
        for _ in range(6):                          # bounded: +OK is last
            got.append(sub.reply_bytes())
            if got[-1] == b"+OK\r\n":
                break
        return got
    finally:
        sub.close()
        pub.close()


@pytest.mark.parametrize("proto", [2, 3])
def test_subscribe_confirmations_and_messages_reach_a_muted_client(
        server, redis_server, proto):
    """Redis 7.0 sends (un)subscribe confirmations and messages to a client
    whose replies CLIENT REPLY OFF or SKIP mutes; the other replies are
    dropped."""
    ours = muted_subscriber(server.port, proto)
    assert ours == muted_subscriber(redis_server.port, proto)
    head = b">3\r\n" if proto == 3 else b"*3\r\n"
    assert ours[0] == head + b"$9\r\nsubscribe\r\n$1\r\nx\r\n:1\r\n"
    assert len(ours) == 10 and ours[-1] == b"+OK\r\n"


def test_redis_py_pubsub_receives_messages_and_pattern_messages(server):
    r = server.client()
    p = r.pubsub()
    p.subscribe("news")
    p.psubscribe("__sentinel__:*")
    for _ in range(2):
        assert p.get_message(timeout=2)["type"] in ("subscribe", "psubscribe")
    assert r.publish("news", "one") == 1
    assert r.publish("__sentinel__:hello", "127.0.0.1,26379,...") == 1
    got = [p.get_message(timeout=2) for _ in range(2)]
    assert got[0]["type"] == "message" and got[0]["data"] == b"one"
    assert got[1]["type"] == "pmessage" and got[1]["channel"] == b"__sentinel__:hello"
    p.close()
    assert harness.wait_until(lambda: r.publish("news", "two") == 0, 5)


def test_client_list_kill_and_info_know_subscribers(server):
    sub = server.raw()
    sub.send(resp_command("SUBSCRIBE", "x", "y"))
    sub.reply_bytes(), sub.reply_bytes()
    sub.send(resp_command("PSUBSCRIBE", "z*"))
    sub.reply_bytes()
    admin = server.raw()
    line = admin.command("CLIENT", "LIST", "TYPE", "pubsub").decode()
    assert " flags=P " in line and " sub=2 psub=1 " in line
    assert b" sub=2 " not in admin.command("CLIENT", "LIST", "TYPE", "normal")
    info = server.info("stats")
    assert info["pubsub_channels"] == 2 and info["pubsub_patterns"] == 1
    assert admin.command("CLIENT", "KILL", "TYPE", "pubsub") == b":1\r\n"
    assert harness.wait_until(lambda: server.info("stats")["pubsub_channels"] == 0, 5)


def test_reset_leaves_every_channel(server):
    c = server.raw()
    c.send(resp_command("SUBSCRIBE", "r1"))
    c.reply_bytes()
    assert c.command("RESET") == b"+RESET\r\n"
    assert c.command("GET", "x") == b"$-1\r\n"          # not in the context now
    assert server.raw().command("PUBLISH", "r1", "m") == b":0\r\n"


def test_a_subscriber_that_does_not_read_is_closed_alone(start_daemon):
    d = start_daemon("--client-output-pause-limit", "64kb",
                     "--client-output-hard-limit", "1mb")
    slow = socket.create_connection(("127.0.0.1", d.port))
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.sendall(resp_command("SUBSCRIBE", "flood"))
    pub = d.raw()
    sent, deadline = 0, time.monotonic() + 20
    while "does not read its output" not in d.log():
        assert time.monotonic() < deadline
        pub.command("PUBLISH", "flood", "x" * 65536)
        sent += 1
    assert pub.command("PING") == b"+PONG\r\n"
    assert pub.command("PUBSUB", "NUMSUB", "flood") == b"*2\r\n$5\r\nflood\r\n:0\r\n"
    assert "Closing pub/sub client" in d.log()
    slow.close()


@pytest.mark.parametrize("proto", [2, 3])
def test_redis_pubsub_tcl_cases(server, redis_server, proto):
    """Redis 7.0.15's tests/unit/pubsub.tcl CLIENT REPLY cases
    (redis_tcl/pubsub.cmds): confirmations and messages still reach a client
    whose replies are off or skipped, in RESP2 and RESP3."""
    assert redis_cases.run("pubsub.cmds", server.port, redis_server.port, proto) == []
