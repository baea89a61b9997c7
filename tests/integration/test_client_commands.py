"""MONITOR, CLIENT PAUSE/UNPAUSE, CLIENT REPLY, CLIENT KILL filters, CLIENT
LIST's true fields, RESET: what a user sees (the error replies are compared
with redis-server in test_differential.py)."""
import re
import socket
import subprocess
import threading
import time

import pytest
import redis

import harness
from test_node_clients import CLIENTS, ensure_node_modules

LINE = re.compile(rb"^\+(\d+)\.(\d{6}) \[(\d+) ([^\]]+)\] (.*)$")


def monitor_lines(conn, n, timeout=5):
    """The next n MONITOR lines of a raw connection: (db, addr, args)."""
    out = []
    for _ in range(n):
        line = conn.recv_until(b"\r\n", timeout)[:-2]
        m = LINE.match(line)
        assert m, line
        out.append((int(m.group(3)), m.group(4), m.group(5)))
    return out


def test_monitor_shows_each_command_as_redis_quotes_it(server):
    mon = server.raw()
    assert mon.command("MONITOR") == b"+OK\r\n"
    c = server.raw()
    c.command("SELECT", 2)
    c.command("CL.THROTTLE", b'k "1"\n\x01\xff', 1, 1, 60)
    c.command("CLIENT", "LIST")                 # admin: never shown
    c.command("ECHO", "x")
    got = monitor_lines(mon, 3)
    assert [g[0] for g in got] == [2, 2, 2]     # the database after SELECT
    assert got[0][2] == b'"SELECT" "2"'
    assert got[1][2] == b'"CL.THROTTLE" "k \\"1\\"\\n\\x01\\xff" "1" "1" "60"'
    assert got[2][2] == b'"ECHO" "x"'
    assert all(g[1] == got[0][1] for g in got) and got[0][1].startswith(b"127.0.0.1:")


def test_monitor_redacts_passwords_of_auth_and_hello(start_daemon):
    d = start_daemon("--requirepass", "s3cret")
    mon = d.raw()
    mon.command("AUTH", "s3cret")
    mon.command("MONITOR")
    c = d.raw()
    c.command("AUTH", "wrong")
    c.command("AUTH", "default", "s3cret")
    c.command("HELLO", 2, "AUTH", "default", "s3cret", "SETNAME", "n")
    args = [g[2] for g in monitor_lines(mon, 3)]
    assert args == [b'"AUTH" "(redacted)"', b'"AUTH" "(redacted)" "(redacted)"',
                    b'"HELLO" "2" "AUTH" "(redacted)" "(redacted)" "SETNAME" "n"']
    assert b"s3cret" not in b"".join(args)


def test_redis_cli_monitor_shows_a_node_redis_handshake(start_daemon):
    ensure_node_modules()
    d = start_daemon("--requirepass", "pw")
    mon = subprocess.Popen(["redis-cli", "-p", str(d.port), "-a", "pw", "--no-auth-warning",
                            "monitor"], stdout=subprocess.PIPE, text=True)
    try:
        assert mon.stdout.readline().strip() == "OK"
        out = subprocess.run(["node", "handshake.mjs", str(d.port), "pw"], cwd=CLIENTS,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stdout + out.stderr
        lines = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any("QUIT" in l for l in lines):
            lines.append(mon.stdout.readline())
    finally:
        mon.kill()
        mon.wait(10)
    text = "".join(lines)
    assert '"HELLO" "3" "AUTH" "(redacted)" "(redacted)" "SETNAME" "handshake-app"' in text, text
    assert '"CLIENT" "SETINFO" "LIB-NAME" "node-redis"' in text, text
    assert '"CL.THROTTLE" "handshake" "1" "1" "60"' in text, text
    assert '"pw"' not in text


def test_a_monitor_may_not_touch_the_keyspace_and_reset_ends_it(server):
    mon = server.raw()
    mon.command("MONITOR")
    mon.send(harness.resp_command("CL.THROTTLE", "k", 1, 1, 60))
    # Its own command is fed to itself (as Redis), after the refusal.
    assert mon.recv_until(b"\r\n") == b"-ERR Replica can't interact with the keyspace\r\n"
    assert mon.command("RESET") == b"+RESET\r\n"
    assert mon.command("PING") == b"+PONG\r\n"       # no MONITOR line any more


def test_a_monitor_that_does_not_read_is_closed_not_grown(start_daemon):
    d = start_daemon("--client-output-pause-limit", "256kb",
                     "--client-output-hard-limit", "1mb")
    mon = socket.create_connection(("127.0.0.1", d.port))
    mon.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    mon.sendall(harness.resp_command("MONITOR"))
    c = d.raw()
    big = "x" * 60000
    for _ in range(400):                            # ~24 MB of MONITOR lines
        c.command("ECHO", big)
        if "Closing MONITOR client" in d.log():
            break
    assert "Closing MONITOR client" in d.log()
    assert c.command("PING") == b"+PONG\r\n"
    mon.close()


def timed(fn):
    t0 = time.monotonic()
    v = fn()
    return v, time.monotonic() - t0


def test_client_pause_write_holds_writes_and_lets_reads_through(server):
    admin = server.raw()
    r = server.client()
    r.execute_command("RL.FIXED", "p", 5, 60)
    assert admin.command("CLIENT", "PAUSE", 800, "WRITE") == b"+OK\r\n"
    ttl, read_s = timed(lambda: r.pttl("p"))
    assert ttl > 0 and read_s < 0.5
    v, write_s = timed(lambda: r.execute_command("RL.FIXED", "p", 5, 60))
    assert v[:3] == [0, 5, 3] and write_s >= 0.5    # waited, then ran: not refused


def test_client_pause_all_holds_every_command_until_it_ends(server):
    assert server.raw().command("CLIENT", "PAUSE", 700, "ALL") == b"+OK\r\n"
    pong, s = timed(lambda: server.raw().command("PING"))
    assert pong == b"+PONG\r\n" and s >= 0.5


def test_paused_writes_from_many_clients_all_run_after_unpause(server):
    admin = server.raw()
    assert admin.command("CLIENT", "PAUSE", 60000, "WRITE") == b"+OK\r\n"
    results = []

    def client():
        results.append(server.client().execute_command("CL.THROTTLE", "many", 9, 1, 60)[0])

    threads = [threading.Thread(target=client) for _ in range(12)]
    for t in threads:
        t.start()

    def held():
        listing = admin.command("CLIENT", "LIST").decode()
        return len(re.findall(r" flags=[a-zA-Z]*b", listing))

    assert harness.wait_until(lambda: held() == 12, 20)   # every one arrived
    assert results == []                            # all held
    r = server.client()
    assert r.execute_command("CLIENT", "UNPAUSE") == b"OK"
    for t in threads:
        t.join(10)
    assert sorted(results) == [0] * 10 + [1] * 2    # exactly the limit, none lost


def test_client_kill_by_type_and_by_age(start_daemon):
    d = start_daemon()
    old = d.raw()
    old.command("PING")
    time.sleep(1.2)
    young = d.raw()
    young.command("PING")
    admin = d.raw()
    assert admin.command("CLIENT", "KILL", "TYPE", "pubsub") == b":0\r\n"
    assert admin.command("CLIENT", "KILL", "MAXAGE", 1) == b":1\r\n"   # old only
    _, closed = old.read_to_eof(timeout=5)
    assert closed
    assert young.command("PING") == b"+PONG\r\n"
    assert admin.command("CLIENT", "KILL", "TYPE", "normal") == b":1\r\n"  # young
    assert admin.command("PING") == b"+PONG\r\n"                          # SKIPME yes


def client_fields(server, cid):
    line = server.raw().command("CLIENT", "LIST", "ID", cid).split(b"\r\n", 1)[1]
    return dict(f.split(b"=", 1) for f in line.split())


def test_client_list_shows_a_slow_readers_output_buffer(server):
    slow = socket.create_connection(("127.0.0.1", server.port))
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.sendall(harness.resp_command("CLIENT", "ID"))
    cid = int(slow.recv(64)[1:-2])
    # Up to 8 MB of replies, sent without blocking: once the unread replies
    # pass client-output-pause-limit the server stops reading this client,
    # so a blocking send of the rest could wait for its timeout.
    batch = harness.resp_command("ECHO", "y" * 100000) * 80
    slow.setblocking(False)
    sent, deadline = 0, time.monotonic() + 10
    while int(client_fields(server, cid)[b"oll"]) == 0:
        assert time.monotonic() < deadline, "no reply list after 10 s"
        try:
            sent += slow.send(batch[sent:]) if sent < len(batch) else 0
        except BlockingIOError:
            pass
        time.sleep(0.02)
    f = client_fields(server, cid)
    assert int(f[b"omem"]) >= int(f[b"oll"]) * 16384
    assert int(f[b"tot-mem"]) > int(f[b"omem"])
    assert int(f[b"fd"]) > 2
    slow.close()


def test_reset_ends_authentication_transaction_database_and_name(start_daemon):
    d = start_daemon("--requirepass", "pw")
    c = d.raw()
    c.command("AUTH", "pw")
    c.command("HELLO", 3, "SETNAME", "app")
    c.command("SELECT", 3)
    c.command("MULTI")
    assert c.command("RESET") == b"+RESET\r\n"
    assert c.command("PING") == b"-NOAUTH Authentication required.\r\n"
    c.command("AUTH", "pw")
    assert c.command("CLIENT", "GETNAME") == b"$-1\r\n"             # RESP2 again
    assert b" db=0 " in c.command("CLIENT", "INFO")
    assert c.command("EXEC") == b"-ERR EXEC without MULTI\r\n"


@pytest.mark.allocator
def test_memory_usage_follows_what_a_key_holds(server):
    r = server.client()
    r.execute_command("CL.THROTTLE", "g", 1, 1, 60)
    small = r.memory_usage("g")
    # A record: its 15-byte header (with the expiry), the 1-byte key, the
    # TAT in 4 bytes; 4 more for its handle in the timer wheel.
    assert 15 + 1 + 4 <= small <= 128
    r.execute_command("RL.LOG", "log", 1000, 60, "META", "m" * 100)
    one = r.memory_usage("log")
    for _ in range(200):
        r.execute_command("RL.LOG", "log", 1000, 60, "META", "m" * 100)
    many = r.memory_usage("log")
    assert many > one + 200 * 100                   # the entries and their META
    assert r.memory_usage("nokey") is None
    r.delete("log")
    assert r.memory_usage("log") is None


@pytest.mark.allocator
def test_memory_stats_counts_keys_per_database(server):
    r = server.client()
    r3 = redis.Redis(port=server.port, db=3)
    for i in range(100):
        r3.execute_command("CL.THROTTLE", "k%d" % i, 1, 1, 60)
    st = r.memory_stats()
    assert st["keys.count"] == 100
    assert "db.3" in st and "db.0" not in st
    assert st["db.3"]["overhead.hashtable.main"] > 0
    assert st["total.allocated"] >= st["startup.allocated"] + st["keys.count"] * 16
    assert 0 < float(st["peak.percentage"]) <= 100


# ---- CLIENT LIST / CLIENT INFO beside redis-server -------------------------

# Fields that belong to the process (or to reply sizes that count them, or
# Redis's cron), not to what a client did; cellgate adds lib-name/lib-ver.
PER_PROCESS = {b"id", b"addr", b"laddr", b"fd", b"age", b"idle", b"qbuf-free",
               b"tot-mem", b"rbs", b"rbp", b"obl", b"lib-name", b"lib-ver"}

# (connection, command) steps; None as the command sends the next one
# without waiting (BLPOP blocks). "HELLO3+INFO" pipelines both, so
# CLIENT INFO runs with HELLO's reply not yet written (events=r, not rw).
CLIENT_STEPS = [
    ("a", "HELLO3+INFO"),
    ("a", ("CLIENT", "SETNAME", "a1")), ("a", ("CLIENT", "NO-EVICT", "on")),
    ("a", ("CLIENT", "INFO")),
    ("a", ("MULTI",)), ("a", ("SET", "k", "v")), ("b", ("CLIENT", "LIST")),
    ("a", ("CLIENT", "INFO")), ("a", ("EXEC",)), ("b", ("CLIENT", "LIST")),
    ("a", ("NOSUCHCMD",)), ("b", ("CLIENT", "LIST")),
    ("a", ("CLIENT", "NOSUCH")), ("b", ("CLIENT", "LIST")),
    ("a", ("GET",)), ("b", ("CLIENT", "LIST")),
    ("a", ("RESET",)), ("b", ("CLIENT", "LIST")),
    ("a", ("CLIENT", "NO-EVICT", "off")), ("a", ("WATCH", "k")),
    ("b", ("SET", "k", "2")), ("b", ("CLIENT", "LIST")),
    ("c", ("SUBSCRIBE", "ch")), ("c", None), ("c", ("BLPOP", "q", "0")),
    ("b", ("CLIENT", "LIST")),
    # CLIENT PAUSE holds d's SET: Redis has read it (qbuf=0, argv-mem and
    # cmd are the SET's).
    ("b", ("CLIENT", "PAUSE", "10000", "WRITE")), ("d", ("SET", "k", "held")),
    ("b", ("CLIENT", "LIST")),
]


def client_lines(reply, ids):
    out = []
    for line in re.findall(rb"id=[^\r\n]*", reply):
        f = dict(kv.split(b"=", 1) for kv in line.split())
        if f[b"id"] in ids:
            out.append((ids[f[b"id"]], {k: v for k, v in f.items() if k not in PER_PROCESS}))
    return out


def held_flags(conn, ids, name):
    """Listed once the server has taken name's held request (flag b)."""
    deadline = time.monotonic() + 10
    while True:
        reply = conn.command("CLIENT", "LIST")
        if dict(client_lines(reply, ids))[name][b"flags"] == b"b":
            return reply
        assert time.monotonic() < deadline, "%s never held" % name
        time.sleep(0.01)


def client_list_walk(port):
    conns = {n: harness.RawConn(port) for n in "abcd"}
    ids = {conns[n].command("CLIENT", "ID")[1:-2]: n for n in "abcd"}
    seen = []
    try:
        for name, cmd in CLIENT_STEPS:
            conn = conns[name]
            if cmd is None:
                conn.send(harness.resp_command("UNSUBSCRIBE"))
                conn.reply_bytes()
                continue
            if cmd == "HELLO3+INFO":
                conn.send(harness.resp_command("HELLO", "3") +
                          harness.resp_command("CLIENT", "INFO"))
                conn.reply_bytes()
            elif cmd[0] in ("BLPOP", "SET") and name in "cd":
                conn.send(harness.resp_command(*cmd))   # blocked, held
                continue
            else:
                conn.send(harness.resp_command(*cmd))
            reply = conn.reply_bytes()
            if cmd == ("EXEC",):
                reply = reply.split(b"\r\n", 1)[1]      # the queued INFO's
            elif seen and seen[-1][1][:2] == ("CLIENT", "PAUSE"):
                reply = held_flags(conn, ids, "d")
            seen.append((name, cmd, reply[:1], client_lines(reply, ids)))
        assert conns["b"].command("CLIENT", "UNPAUSE") == b"+OK\r\n"
        assert conns["d"].reply_bytes() == b"+OK\r\n"
        conns["b"].command("RPUSH", "q", "x")
        assert conns["c"].reply_bytes() == b"*2\r\n$1\r\nq\r\n$1\r\nx\r\n"
    finally:
        conns["b"].send(harness.resp_command("CLIENT", "UNPAUSE"))
        for c in conns.values():
            c.close()
    return seen


def test_client_list_and_info_fields_as_redis(redis_server, server):
    """Every field a client's state sets, as Redis 7.0.15 shows it in
    RESP2 and RESP3 (a verbatim string): the flags in Redis's order (e for
    NO-EVICT, kept by RESET), cmd= as Redis's lastcmd (a queued command,
    EXEC during and after the run, NULL after an unknown command or
    subcommand, a refused one's name, the one CLIENT PAUSE holds),
    multi-mem as Redis counts the queue, events=w only for a write the
    socket did not take, and the clients oldest first."""
    want = client_list_walk(redis_server.port)
    got = client_list_walk(server.port)
    for w, g in zip(want, got):
        assert g == w
    assert len(got) == len(want)
    assert dict(want[-3][3])["c"][b"flags"] == b"b"
    assert dict(want[3][3])["a"][b"flags"] == b"e"
    assert dict(want[-1][3])["d"][b"cmd"] == b"set"
