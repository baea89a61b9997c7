"""The command line and the config file: --test-config, --help, --version,
bad values, overrides, and a unix-socket-only daemon."""
import os
import stat
import subprocess

import pytest

import harness
from harness import BIN, REPO

SHIPPED_CONF = os.path.join(REPO, "conf", "cellgate.conf")


def run(*args, timeout=20):
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0:exitcode=99")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    p = subprocess.run([BIN] + [str(a) for a in args], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, env=env)
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    for marker in ("ERROR: AddressSanitizer", "runtime error:", "LeakSanitizer"):
        assert marker not in err, err
    return p.returncode, out, err


def test_shipped_config_passes_test_config():
    code, out, err = run("--test-config", SHIPPED_CONF)
    assert (code, out, err) == (0, "cellgate: configuration OK\n", "")


def test_test_config_with_overrides_only():
    assert run("--test-config", "--maxclients", "5", "--hz", "100")[0] == 0


@pytest.mark.parametrize("body,line,what", [
    ("port 7000\nmaxclients lots\n", 2, "'maxclients' must be an integer, got 'lots'"),
    ("# comment\n\nnosuch 1\n", 3, "unknown option 'nosuch'"),
    ("port 70000\n", 1, "'port' must be between 0 and 65535, got '70000'"),
    ("loglevel loud\n", 1, "'loglevel' must be one of"),
])
def test_bad_config_file_names_file_and_line(tmp_path, body, line, what):
    path = tmp_path / "bad.conf"
    path.write_text(body)
    code, out, err = run("--test-config", str(path))
    assert code == 1
    assert err.startswith("cellgate: %s:%d: " % (path, line))
    assert what in err
    assert err.count("\n") == 1
    # The same file refuses to start the daemon.
    assert run(str(path), "--port", "0")[0] == 1


def test_missing_config_file(tmp_path):
    code, out, err = run("--test-config", str(tmp_path / "nope.conf"))
    assert code == 1
    assert err.startswith("cellgate: %s" % (tmp_path / "nope.conf"))
    assert "cannot open" in err


@pytest.mark.parametrize("args,what", [
    (("--port", "notanumber"), "cellgate: --port: 'port' must be an integer, got 'notanumber'\n"),
    (("--port", "70000"), "cellgate: --port: 'port' must be between 0 and 65535, got '70000'\n"),
    (("--port",), "cellgate: --port: 'port' wants a value\n"),
    (("--no-such-option", "1"), "cellgate: --no-such-option: unknown option 'no-such-option'\n"),
    (("--hz", "10mb"), "cellgate: --hz: 'hz' must be an integer, got '10mb'\n"),
    (("--client-query-buffer-limit", "1mb"),
     "cellgate: 'proto-max-bulk-len' (536870912) must not exceed "
     "'client-query-buffer-limit' (1048576)\n"),
    (("--client-output-pause-limit", "8mb", "--client-output-hard-limit", "4mb"),
     "cellgate: 'client-output-pause-limit' (8388608) must be below "
     "'client-output-hard-limit' (4194304)\n"),
])
def test_bad_option_on_the_command_line(args, what):
    code, out, err = run(*args)
    assert (code, out, err) == (1, "", what)


def test_help():
    code, out, err = run("--help")
    assert code == 0
    assert out.startswith("Usage: cellgate [/path/to/cellgate.conf] [--option value ...]\n")
    assert "--test-config" in out and "--describe-config" in out
    assert run("-h")[1] == out


def test_version():
    code, out, err = run("--version")
    assert code == 0
    assert out.startswith("cellgate v=")
    assert "redis protocol 7.0.15" in out
    assert run("-v")[1] == out


def test_describe_config_lists_every_option_of_the_shipped_file():
    code, out, err = run("--describe-config")
    assert code == 0
    names = []
    with open(SHIPPED_CONF) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                names.append(line.split()[0])
    assert len(names) >= 10
    described = [line.split()[0] for line in out.splitlines() if line and not line[0].isspace()]
    assert sorted(described) == sorted(names)


def test_config_file_values_and_command_line_overrides(tmp_path, start_daemon):
    conf = tmp_path / "my.conf"
    conf.write_text("maxclients 7\ntimeout 30\nHZ 20\nclient-output-pause-limit 2mb\n")
    d = start_daemon("--maxclients", "9", config_file=str(conf))
    r = d.client(decode_responses=True)
    assert r.config_get("maxclients") == {"maxclients": "9"}        # the command line wins
    assert r.config_get("timeout") == {"timeout": "30"}
    assert r.config_get("hz") == {"hz": "20"}
    assert r.config_get("client-output-pause-limit") == {
        "client-output-pause-limit": str(2 * 1024 * 1024)}
    assert r.info("server")["config_file"] == str(conf)


def test_shipped_config_starts_a_daemon(start_daemon):
    d = start_daemon(config_file=SHIPPED_CONF)
    r = d.client(decode_responses=True)
    assert r.ping() is True
    assert r.config_get("port") == {"port": str(d.port)}


def test_unix_socket_only(tmp_path, start_daemon):
    path = str(tmp_path / "cg.sock")
    d = start_daemon("--unixsocket", path, "--unixsocketperm", "700", tcp=False)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o700
    conn = d.raw(unix=True)
    assert conn.command("PING") == b"+PONG\r\n"
    assert conn.command("CL.THROTTLE", "u", "15", "30", "60") == (
        b"*5\r\n:0\r\n:16\r\n:15\r\n:-1\r\n:2\r\n")
    r = d.client()
    assert r.execute_command("CL.THROTTLE", "u", 15, 30, 60)[:3] == [0, 16, 14]
    assert r.config_get("port") == {"port": "0"}
    problems = d.stop()
    assert problems == []
    assert not os.path.exists(path), "the socket file is removed at shutdown"


def test_unix_socket_and_tcp_together(tmp_path, start_daemon):
    path = str(tmp_path / "both.sock")
    d = start_daemon("--unixsocket", path)
    tcp = d.raw()
    unix = d.raw(unix=True)
    assert tcp.command("CL.THROTTLE", "shared", "0", "1", "60")[:8] == b"*5\r\n:0\r\n"
    assert unix.command("CL.THROTTLE", "shared", "0", "1", "60")[:8] == b"*5\r\n:1\r\n"


def test_port_in_use_is_reported_and_the_first_daemon_keeps_serving(start_daemon):
    d = start_daemon()
    code, out, err = run("--port", str(d.port), "--bind", "127.0.0.1", timeout=20)
    assert code != 0
    assert "Could not create server TCP listening socket 127.0.0.1:%d: address already in use" \
        % d.port in err
    assert d.ping_fresh()


def test_port_in_use_exits_1_without_crashing(start_daemon):
    d = start_daemon()
    code, out, err = run("--port", str(d.port), "--bind", "127.0.0.1", timeout=20)
    assert "Assertion" not in err
    assert code == 1


def test_unusable_unix_socket_path_exits_1_without_crashing(tmp_path):
    code, out, err = run("--port", "0", "--unixsocket", str(tmp_path / "no" / "such" / "x.sock"))
    assert "Opening unix socket" in err
    assert "Assertion" not in err
    assert code == 1


def test_sigint_also_shuts_down_cleanly(start_daemon):
    import signal
    d = start_daemon()
    assert d.raw().command("PING") == b"+PONG\r\n"
    assert d.stop(sig=signal.SIGINT) == []
    assert d.exit_code == 0
    assert "Received SIGINT" in d.log()


def test_json_log_format_writes_one_object_per_line_to_the_logfile(start_daemon, tmp_path):
    import json
    logfile = tmp_path / "cellgate.log"
    d = start_daemon("--log-format", "json", "--logfile", str(logfile))
    assert d.raw().command("PING") == b"+PONG\r\n"
    assert d.stop() == []
    lines = logfile.read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert records[0]["level"] == "notice" and "starting" in records[0]["message"]
    assert any("Received SIGTERM" in r["message"] and r["level"] == "warning"
               for r in records)
    assert all(set(r) == {"time", "pid", "level", "message"} for r in records)
    assert all(r["time"].endswith("Z") for r in records)


def test_ping_flag_is_a_health_check(start_daemon):
    d = start_daemon()
    code, out, err = run("--ping", "127.0.0.1:%d" % d.port, timeout=20)
    assert (code, out) == (0, "PONG\n")
    locked = start_daemon("--requirepass", "pw")
    code, out, err = run("--ping", "127.0.0.1:%d" % locked.port, timeout=20)
    assert code == 0                            # -NOAUTH: alive all the same
    d.stop()
    code, out, err = run("--ping", "127.0.0.1:%d" % d.port, timeout=20)
    assert code == 1 and "no PONG" in err
    code, out, err = run("--ping", "no-port-here", timeout=20)
    assert code == 1 and "wants host:port" in err


def test_config_rewrite_keeps_comments_and_restarts_into_the_same_values(
        tmp_path, start_daemon):
    conf = tmp_path / "cellgate.conf"
    conf.write_text("# my comment\nport 7000\nmaxmemory 0\n\n# the log\n"
                    "loglevel notice\nloglevel debug\n"
                    "cluster-node keep-this-line-as-it-is\n")
    # The line above is a directive another module reads; it must survive
    # untouched, so this daemon does not use cluster mode.
    d = start_daemon("--maxclients", "99", config_file=str(conf))
    c = d.raw()
    assert c.command("CONFIG", "SET", "maxmemory", "64mb") == b"+OK\r\n"
    assert c.command("CONFIG", "SET", "loglevel", "warning") == b"+OK\r\n"
    assert c.command("CONFIG", "SET", "save", "60 5") == b"+OK\r\n"
    assert c.command("CONFIG", "REWRITE") == b"+OK\r\n"
    text = conf.read_text()
    lines = text.splitlines()
    assert lines[:7] == ["# my comment", "port %d" % d.port, "maxmemory 64mb", "",
                         "# the log", "loglevel warning",
                         "cluster-node keep-this-line-as-it-is"]
    assert lines.count("# Generated by CONFIG REWRITE") == 1
    assert 'save 60 5' in lines and "maxclients 99" in lines
    assert any(l.startswith('dir "') for l in lines)
    before = {k: c.command("CONFIG", "GET", k) for k in
              ("maxmemory", "loglevel", "save", "maxclients")}
    assert d.stop() == []
    d2 = start_daemon(config_file=str(conf), port=d.port)
    c2 = d2.raw()
    assert {k: c2.command("CONFIG", "GET", k) for k in before} == before
    assert c2.command("CONFIG", "REWRITE") == b"+OK\r\n"
    # A second rewrite changes nothing but the folder this harness gave it.
    not_dir = lambda t: [l for l in t.splitlines() if not l.startswith("dir ")]
    assert not_dir(conf.read_text()) == not_dir(text)


def test_config_rewrite_without_a_file_says_so(server):
    assert server.raw().command("CONFIG", "REWRITE") == \
        b"-ERR The server is running without a config file\r\n"


# ---- what REPLICAOF and CONFIG SET take, CONFIG REWRITE writes loadable ----

def bulk_pair(name, value):
    return b"*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(name), name, len(value), value)


# Hosts REPLICAOF answers +OK to (as Redis 7.0.15 does). None of them makes
# the replica ask a resolver: a host with a blank, a quote or a control
# byte is refused before any lookup, and 127.0.0.5 is a loopback address.
ODD_PRIMARIES = [
    (b"127.0.0.5", b"0", b"replicaof 127.0.0.5 0"),
    (b"", b"1", b'replicaof "" 1'),
    (b"a b", b"1", b'replicaof "a b" 1'),
    (b" lead and trail ", b"65535", b'replicaof " lead and trail " 65535'),
    (b"q\"u'o\\te", b"2", b'replicaof "q\\"u\'o\\\\te" 2'),
    (b"new\nline\x01\x7f\xff", b"3", b'replicaof "new\\nline\\x01\\x7f\\xff" 3'),
    (b"#x", b"4", b"replicaof #x 4"),
]


@pytest.mark.parametrize("host,port,line", ODD_PRIMARIES)
def test_replicaof_any_value_it_takes_survives_rewrite_and_restart(
        tmp_path, start_daemon, host, port, line):
    conf = tmp_path / "node.conf"
    conf.write_text("# a node Sentinel manages\n")
    d = start_daemon(config_file=str(conf))
    c = d.raw()
    assert c.command("REPLICAOF", host, port) == b"+OK\r\n"
    want = bulk_pair(b"replicaof", host + b" " + port)
    assert c.command("CONFIG", "GET", "replicaof") == want
    # Every other option still changes.
    assert c.command("CONFIG", "SET", "hz", "11") == b"+OK\r\n"
    assert c.command("CONFIG", "SET", "maxmemory", "1mb", "timeout", "7") == b"+OK\r\n"
    # What Sentinel sends after a failover; the file loads and restarts.
    assert c.command("CONFIG", "REWRITE") == b"+OK\r\n"
    assert line in conf.read_bytes().splitlines()
    assert run("--test-config", str(conf)) == (0, "cellgate: configuration OK\n", "")
    assert d.stop() == []
    d2 = start_daemon(config_file=str(conf))
    c2 = d2.raw()
    assert c2.command("CONFIG", "GET", "replicaof") == want
    assert c2.command("CONFIG", "GET", "hz") == bulk_pair(b"hz", b"11")
    assert c2.command("CONFIG", "SET", "hz", "12") == b"+OK\r\n"


@pytest.mark.parametrize("body,value", [
    ('replicaof "a b" 0\n', b"a b 0"),
    ('replicaof "" 6379\n', b" 6379"),
    ("replicaof 10.0.0.1 6379\nreplicaof no one\n", b""),
    ('replicaof "10.0.0.1 6379"\n', b"10.0.0.1 6379"),
])
def test_replicaof_lines_redis_loads_load(tmp_path, start_daemon, body, value):
    conf = tmp_path / "r.conf"
    conf.write_text(body)
    assert run("--test-config", str(conf))[0] == 0
    d = start_daemon(config_file=str(conf))
    assert d.raw().command("CONFIG", "GET", "replicaof") == bulk_pair(b"replicaof", value)


@pytest.mark.parametrize("body", ["replicaof x 65536\n", "replicaof x -1\n",
                                  "replicaof x 1x\n", "replicaof x\n",
                                  "replicaof %s 1\n" % ("h" * 256)])
def test_replicaof_lines_that_name_no_primary_are_refused(tmp_path, body):
    conf = tmp_path / "r.conf"
    conf.write_text(body)
    code, out, err = run("--test-config", str(conf))
    assert code == 1 and "'replicaof' wants" in err, err


def test_random_values_survive_config_set_rewrite_and_restart(tmp_path, start_daemon):
    """Property: whatever CONFIG SET and REPLICAOF take, CONFIG REWRITE
    writes and a restart reads back byte for byte."""
    import random
    rnd = random.Random(2507)
    conf = tmp_path / "prop.conf"
    conf.write_text("# property\n")
    d = start_daemon(config_file=str(conf))
    for round_ in range(6):
        c = d.raw()
        # Any bytes for a binary option; any but NUL for a string one.
        auth = bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 40)))
        ip = bytes(rnd.randrange(1, 256) for _ in range(rnd.randrange(1, 40)))
        # A host with a blank never reaches the resolver.
        host = bytes(rnd.randrange(1, 256) for _ in range(rnd.randrange(0, 20))) + b" " + \
            bytes(rnd.choice(b"ab'\"\\#\t\n") for _ in range(rnd.randrange(0, 5)))
        port = b"%d" % rnd.randrange(0, 65536)
        save = b" ".join(b"%d %d" % (rnd.randrange(1, 10 ** 6), rnd.randrange(0, 10 ** 6))
                         for _ in range(rnd.randrange(0, 4)))
        sets = [(b"masterauth", auth), (b"replica-announce-ip", ip), (b"save", save)]
        for name, value in sets:
            assert c.command("CONFIG", "SET", name, value) == b"+OK\r\n", (name, value)
        assert c.command("REPLICAOF", host, port) == b"+OK\r\n", host
        names = [n for n, _ in sets] + [b"replicaof"]
        before = [c.command("CONFIG", "GET", n) for n in names]
        assert c.command("CONFIG", "REWRITE") == b"+OK\r\n"
        code, out, err = run("--test-config", str(conf))
        assert code == 0, (round_, err, conf.read_bytes())
        assert d.stop() == []
        d = start_daemon(config_file=str(conf))
        c = d.raw()
        assert [c.command("CONFIG", "GET", n) for n in names] == before, conf.read_bytes()
        assert c.command("REPLICAOF", "NO", "ONE") == b"+OK\r\n"


# ---- one CONFIG SET is one change ----

@pytest.mark.parametrize("small,big", [
    (("client-output-pause-limit", "1024"), ("client-output-hard-limit", "2048")),
    (("proto-max-bulk-len", "1mb"), ("client-query-buffer-limit", "2mb")),
])
def test_config_set_checks_the_end_state_whatever_the_order(start_daemon, small, big):
    d = start_daemon("--" + small[0], small[1], "--" + big[0], big[1])
    c = d.raw()
    grown = [(small[0], "100mb"), (big[0], "256mb")]
    # Raising both: the small one first used to be checked against the
    # big one's old value and refused.
    for order in (grown, grown[::-1]):
        assert c.command("CONFIG", "SET", *sum(order, ())) == b"+OK\r\n"
        assert c.command("CONFIG", "SET", *small, *big) == b"+OK\r\n"
        assert c.command("CONFIG", "SET", *big, *small) == b"+OK\r\n"
    # An end state that breaks the rule is refused whole, naming the first
    # of the two options the call gave, and nothing changes. (Not CONFIG
    # GET *: its reply passes a hard limit of 2048 bytes, which closes us.)
    watched = ("CONFIG", "GET", small[0], big[0], "hz")
    before = c.command(*watched)
    assert before.startswith(b"*6\r\n")
    for pairs in ([(small[0], "300mb"), (big[0], "200mb")],
                  [(big[0], "200mb"), (small[0], "300mb")],
                  [("hz", "20"), (small[0], "300mb")]):
        reply = c.command("CONFIG", "SET", *sum(pairs, ()))
        blamed = [n for n, _ in pairs if n in (small[0], big[0])][0]
        assert reply.startswith(b"-ERR CONFIG SET failed (possibly related to "
                                b"argument '%s') - " % blamed.encode()), reply
        assert c.command(*watched) == before


# ---- CONFIG SET bind and port: the listeners move at run time, as Redis 7 ----

def refused(port):
    import socket
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return False
    except ConnectionRefusedError:
        return True


def test_config_set_port_moves_the_listener_and_rewrite_keeps_it(tmp_path, start_daemon):
    import harness
    conf = tmp_path / "moving.conf"
    conf.write_text("# a node that moves\n")
    sock = str(tmp_path / "moving.sock")
    d = start_daemon("--unixsocket", sock, config_file=str(conf))
    old, new = d.port, harness.free_port()
    c = d.raw()
    assert c.command("CONFIG", "SET", "port", str(old)) == b"+OK\r\n"     # its own value
    assert c.command("CONFIG", "SET", "bind", "127.0.0.1") == b"+OK\r\n"
    assert c.command("CONFIG", "SET", "port", str(new)) == b"+OK\r\n"
    assert c.command("PING") == b"+PONG\r\n"          # connected clients stay
    assert refused(old)
    moved = harness.RawConn(port=new)
    assert moved.command("PING") == b"+PONG\r\n"
    assert b"tcp_port:%d\r\n" % new in moved.command("INFO", "server")
    assert moved.command("CONFIG", "GET", "port") == bulk_pair(b"port", b"%d" % new)
    assert moved.command("CONFIG", "REWRITE") == b"+OK\r\n"
    assert "port %d" % new in conf.read_text().splitlines()
    # Port 0: no TCP at all; the unix socket brings it back.
    assert moved.command("CONFIG", "SET", "port", "0") == b"+OK\r\n"
    assert refused(new)
    unix = harness.RawConn(path=sock)
    assert b"tcp_port:0\r\n" in unix.command("INFO", "server")
    assert unix.command("CONFIG", "SET", "port", str(old)) == b"+OK\r\n"
    assert harness.RawConn(port=old).command("PING") == b"+PONG\r\n"
    moved.close()
    # The rewritten file starts it on the port CONFIG SET gave it.
    assert d.stop() == []
    code, out, err = run(str(conf), "--test-config")
    assert code == 0, err
    d2 = start_daemon(config_file=str(conf), port=new)
    assert d2.raw().command("CONFIG", "GET", "port") == bulk_pair(b"port", b"%d" % new)


def test_config_set_bind_moves_the_listener(start_daemon):
    import harness
    d = start_daemon()
    c = d.raw()
    assert c.command("CONFIG", "SET", "bind", "127.0.0.2 127.0.0.1") == b"+OK\r\n"
    for host in ("127.0.0.1", "127.0.0.2"):
        conn = harness.RawConn(port=d.port)
        conn.sock.close()
        import socket
        socket.create_connection((host, d.port), timeout=2).close()
    assert c.command("CONFIG", "SET", "bind", "127.0.0.2") == b"+OK\r\n"
    assert refused(d.port)                            # 127.0.0.1 closed
    import socket
    socket.create_connection(("127.0.0.2", d.port), timeout=2).close()
    assert c.command("CONFIG", "SET", "bind", "127.0.0.1") == b"+OK\r\n"
    assert harness.RawConn(port=d.port).command("PING") == b"+PONG\r\n"


def test_config_set_bind_and_port_refusals_are_redis_s(tmp_path, start_daemon):
    """Each odd case answers Redis 7.0.15's bytes, and a refused change
    keeps the old listener and values."""
    import harness
    ref = harness.RedisServer(str(tmp_path / "redis")).start()
    try:
        d = start_daemon()
        taken = start_daemon().port                   # a port in use
        many = " ".join("127.0.0.%d" % i for i in range(1, 18))
        cases = [
            ("port", str(taken)), ("port", "70000"), ("port", "-1"), ("port", "x"),
            ("bind", "1.2.3.4"), ("bind", "no-such-host"), ("bind", "127.0.0.1 "),
            ("bind", "127.0.0.1 127.0.0.1"), ("bind", many),
            ("bind", "127.0.0.1", "port", str(taken)),
            ("port", str(taken), "bind", "127.0.0.1"),
            ("bind", "1.2.3.4", "hz", "11"),
            ("port", "{port}"), ("bind", "127.0.0.1"),
        ]
        for port, conn in ((ref.port, harness.RawConn(port=ref.port)),
                           (d.port, d.raw())):
            got = []
            for case in cases:
                args = [a.format(port=port) for a in case]
                for cmd in (["SET"] + args, ["GET", "port"], ["GET", "bind"],
                            ["GET", "hz"]):
                    reply = conn.command("CONFIG", *cmd)
                    got.append(reply.replace(b"%d" % port, b"<port>"))
            assert harness.RawConn(port=port).command("PING") == b"+PONG\r\n"
            if port == ref.port:
                want = got
            else:
                assert got == want
        assert want[0].startswith(b"-ERR CONFIG SET failed (possibly related to "
                                  b"argument 'port') - Unable to listen")
    finally:
        ref.stop()


def test_dir_and_dbfilename_are_protected_as_in_redis(tmp_path, start_daemon):
    """Redis 7 refuses CONFIG SET dir and dbfilename unless
    enable-protected-configs allows it; then a dir it could not enter and
    a dbfilename with a path are refused in Redis's words, so nothing a
    running server took keeps it from saving or starting again."""
    d = start_daemon()
    for name in ("dir", "dbfilename"):
        assert d.raw().command("CONFIG", "SET", name, str(tmp_path)) == (
            b"-ERR CONFIG SET failed (possibly related to argument '%s') - "
            b"can't set protected config\r\n" % name.encode())
    assert d.raw().command("CONFIG", "SET", "enable-protected-configs", "yes") == (
        b"-ERR CONFIG SET failed (possibly related to argument "
        b"'enable-protected-configs') - can't set immutable config\r\n")
    p = start_daemon("--enable-protected-configs", "local")
    c = p.raw()
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    assert c.command("CONFIG", "SET", "dir", "/nonexistent") == (
        b"-ERR CONFIG SET failed (possibly related to argument 'dir') - "
        b"No such file or directory\r\n")
    assert c.command("CONFIG", "SET", "dir", str(a_file)) == (
        b"-ERR CONFIG SET failed (possibly related to argument 'dir') - "
        b"Not a directory\r\n")
    assert c.command("CONFIG", "SET", "dbfilename", "a/b") == (
        b"-ERR CONFIG SET failed (possibly related to argument 'dbfilename') - "
        b"dbfilename can't be a path, just a filename\r\n")
    there = tmp_path / "there"
    there.mkdir()
    assert c.command("CONFIG", "SET", "dir", str(there), "dbfilename", "x.snap") == b"+OK\r\n"
    c.command("CL.THROTTLE", "k", 5, 1, 60)
    assert c.command("SAVE") == b"+OK\r\n"
    assert (there / "x.snap").exists()
    bad = subprocess.run([BIN, "--test-config", "--dbfilename", "a/b"],
                         capture_output=True, text=True, timeout=10)
    assert bad.returncode != 0
    assert "dbfilename can't be a path, just a filename" in bad.stderr


# ---- aliases: Redis's other names for options (options.h's CONF_ALIASES) ----

# Redis 7.0.15's aliases of the options cellgate has: (alias, name).
ALIASES = [
    ("slaveof", "replicaof"),
    ("slave-read-only", "replica-read-only"),
    ("slave-priority", "replica-priority"),
    ("slave-announce-ip", "replica-announce-ip"),
    ("slave-announce-port", "replica-announce-port"),
    ("min-slaves-to-write", "min-replicas-to-write"),
    ("min-slaves-max-lag", "min-replicas-max-lag"),
    ("repl-ping-slave-period", "repl-ping-replica-period"),
    ("lua-time-limit", "busy-reply-threshold"),
    ("cluster-slave-no-failover", "cluster-replica-no-failover"),
    ("slave-lazy-flush", "replica-lazy-flush"),
    ("slave-serve-stale-data", "replica-serve-stale-data"),
    ("slave-ignore-maxmemory", "replica-ignore-maxmemory"),
    ("cluster-slave-validity-factor", "cluster-replica-validity-factor"),
    ("list-max-ziplist-size", "list-max-listpack-size"),
    ("hash-max-ziplist-entries", "hash-max-listpack-entries"),
    ("zset-max-ziplist-entries", "zset-max-listpack-entries"),
    ("hash-max-ziplist-value", "hash-max-listpack-value"),
    ("zset-max-ziplist-value", "zset-max-listpack-value"),
]


def both_say(ours, theirs, *cmd):
    """The same raw reply from cellgate and redis-server; that reply."""
    got, want = ours.command(*cmd), theirs.command(*cmd)
    assert got == want, (cmd, got, want)
    return got


def test_describe_config_names_each_alias_under_its_option():
    code, out, err = run("--describe-config")
    assert code == 0
    under = {}
    name = None
    for line in out.splitlines():
        if line and not line[0].isspace():
            name = line.split()[0]
        elif line.startswith("    alias: "):
            under[line[len("    alias: "):]] = name
    assert under == dict(ALIASES)


@pytest.mark.parametrize("proto", [2, 3])
def test_config_get_of_an_alias_is_redis_s(start_daemon, redis_server, proto):
    d = start_daemon()
    ours, theirs = d.raw(), harness.RawConn(port=redis_server.port)
    if proto == 3:
        assert ours.command("HELLO", "3")[:1] == theirs.command("HELLO", "3")[:1] == b"%"
    for alias, name in ALIASES:
        # One name: answered as it was typed, in any case.
        for asked in (alias, name, alias.upper(), "Slave" + alias[5:]
                      if alias.startswith("slave") else alias.title()):
            both_say(ours, theirs, "CONFIG", "GET", asked)
        both_say(ours, theirs, "CONFIG", "GET", alias, alias.upper())
        both_say(ours, theirs, "CONFIG", "GET", "nosuch", alias)
    # Several names or patterns: Redis answers in its hash table's order (a
    # random one), so the pairs are compared as a map, on the names both
    # servers have (Redis has more slave-* and *time* options; cellgate a
    # few of its own).
    ours_r = d.client(decode_responses=True)
    theirs_r = redis_server.client()       # CONFIG GET's answer decoded too
    common = set(ours_r.config_get("*")) & set(theirs_r.config_get("*"))
    for alias, name in ALIASES:
        assert alias in common and name in common
    for pattern in ("lua-time-limit", "busy*", "*time*", "*slave*", "*replica*",
                    "*SLAVE*", "lua-time-[lm]imit", "min-*-to-write", "*"):
        got = ours_r.config_get(pattern)
        want = theirs_r.config_get(pattern)
        got = {k: v for k, v in got.items() if k in common}
        want = {k: v for k, v in want.items() if k in common}
        if pattern == "*":      # ports, folders, ... are the servers' own
            for alias, name in ALIASES:
                assert got[alias] == got[name] == want[alias] == want[name]
            continue
        assert got == want, pattern
    # Both names asked at once: two pairs of one value.
    both = ours_r.config_get("busy-reply-threshold")
    assert both == {"busy-reply-threshold": "5000"}
    pairs = ours.command("CONFIG", "GET", "lua-time-limit", "busy-reply-threshold",
                         "LUA-TIME-LIMIT")
    assert pairs.startswith(b"%2\r\n" if proto == 3 else b"*4\r\n")
    assert pairs.count(b"$4\r\n5000\r\n") == 2


# What CONFIG SET answers, with aliases, in the order of the list: every
# reply the same bytes on both servers. Each value set is put back after.
ALIAS_SETS = [
    ("CONFIG", "SET", "lua-time-limit", "100"),
    ("CONFIG", "GET", "busy-reply-threshold"),
    ("CONFIG", "GET", "lua-time-limit"),
    # Two names of one option are two parameters: both set, the later wins.
    ("CONFIG", "SET", "lua-time-limit", "1", "busy-reply-threshold", "2"),
    ("CONFIG", "GET", "lua-time-limit"),
    ("CONFIG", "SET", "busy-reply-threshold", "3", "lua-time-limit", "4"),
    ("CONFIG", "GET", "busy-reply-threshold"),
    # One name twice, in any case, is a duplicate, named as typed.
    ("CONFIG", "SET", "lua-time-limit", "3", "lua-time-limit", "4"),
    ("CONFIG", "SET", "LUA-time-limit", "3", "Lua-Time-Limit", "4"),
    ("CONFIG", "GET", "busy-reply-threshold"),
    # A bad value names the table's spelling of the name given.
    ("CONFIG", "SET", "lua-time-limit", "abc"),
    ("CONFIG", "SET", "LUA-TIME-LIMIT", "abc"),
    ("CONFIG", "SET", "lua-time-limit", "-1"),
    ("CONFIG", "SET", "busy-reply-threshold", "-1"),
    ("CONFIG", "SET", "lua-time-limit", "9223372036854775808"),
    ("CONFIG", "SET", "slave-read-only", "maybe"),
    ("CONFIG", "SET", "SLAVE-READ-ONLY", "maybe"),
    ("CONFIG", "SET", "slave-priority", "x"),
    ("CONFIG", "SET", "slave-priority", "-1"),
    ("CONFIG", "SET", "slave-announce-port", "70000"),
    ("CONFIG", "SET", "min-slaves-to-write", "-1"),
    ("CONFIG", "SET", "min-slaves-max-lag", "x"),
    ("CONFIG", "SET", "repl-ping-slave-period", "0"),
    # A pair after a bad one changes nothing.
    ("CONFIG", "SET", "slave-priority", "5", "lua-time-limit", "x"),
    ("CONFIG", "GET", "replica-priority"),
    # Immutable: named as typed.
    ("CONFIG", "SET", "slaveof", "127.0.0.1 1"),
    ("CONFIG", "SET", "SLAVEOF", "127.0.0.1 1"),
    ("CONFIG", "SET", "replicaof", "127.0.0.1 1"),
    ("CONFIG", "SET", "DATABASES", "3"),
    ("CONFIG", "SET", "slaveof", "x", "lua-time-limit", "x"),
    # Every other alias sets its option.
    ("CONFIG", "SET", "slave-read-only", "no", "slave-priority", "7",
     "slave-announce-ip", "10.0.0.9", "slave-announce-port", "7001",
     "min-slaves-max-lag", "20", "repl-ping-slave-period", "5"),
    ("CONFIG", "GET", "replica-read-only"), ("CONFIG", "GET", "slave-read-only"),
    ("CONFIG", "GET", "replica-priority"), ("CONFIG", "GET", "slave-priority"),
    ("CONFIG", "GET", "replica-announce-ip"), ("CONFIG", "GET", "slave-announce-ip"),
    ("CONFIG", "GET", "replica-announce-port"), ("CONFIG", "GET", "slave-announce-port"),
    ("CONFIG", "GET", "min-replicas-max-lag"), ("CONFIG", "GET", "min-slaves-max-lag"),
    ("CONFIG", "GET", "repl-ping-replica-period"),
    ("CONFIG", "GET", "repl-ping-slave-period"),
    ("CONFIG", "SET", "min-slaves-to-write", "0"),
    ("CONFIG", "GET", "min-replicas-to-write"),
    # And back, by the other names.
    ("CONFIG", "SET", "replica-read-only", "yes", "replica-priority", "100",
     "replica-announce-ip", "", "replica-announce-port", "0",
     "min-replicas-max-lag", "10", "repl-ping-replica-period", "10",
     "busy-reply-threshold", "5000"),
    ("CONFIG", "GET", "slave-read-only"), ("CONFIG", "GET", "lua-time-limit"),
]


def test_config_set_of_an_alias_is_redis_s(start_daemon, redis_server):
    d = start_daemon()
    ours, theirs = d.raw(), harness.RawConn(port=redis_server.port)
    try:
        for cmd in ALIAS_SETS:
            both_say(ours, theirs, *cmd)
    finally:
        theirs.command("CONFIG", "SET", "replica-read-only", "yes",
                       "replica-priority", "100", "replica-announce-ip", "",
                       "replica-announce-port", "0", "min-replicas-max-lag", "10",
                       "repl-ping-replica-period", "10", "busy-reply-threshold",
                       "5000", "min-replicas-to-write", "0")


ALIAS_CONF = ("# aliases, as Redis 7.0 still takes them\n"
              "lua-time-limit 100\n"
              "SLAVE-READ-ONLY no\n"
              "min-slaves-to-write 0\n"
              "slave-priority 100\n"
              "busy-reply-threshold 300\n"
              "repl-ping-slave-period 5\n"
              "slaveof 127.0.0.5 0\n")


def test_config_file_aliases_and_their_rewrite_are_redis_s(tmp_path, start_daemon):
    ours_conf, theirs_conf = tmp_path / "cellgate.conf", tmp_path / "redis.conf"
    ours_conf.write_text(ALIAS_CONF)
    theirs_conf.write_text(ALIAS_CONF)
    assert run("--test-config", str(ours_conf)) == (0, "cellgate: configuration OK\n", "")
    d = start_daemon(config_file=str(ours_conf))
    ref = harness.RedisServer(str(tmp_path / "redis"), config_file=str(theirs_conf))
    ref.start()
    try:
        ours, theirs = d.raw(), harness.RawConn(port=ref.port)
        for alias, name in ALIASES:
            both_say(ours, theirs, "CONFIG", "GET", alias)
            both_say(ours, theirs, "CONFIG", "GET", name)
        assert both_say(ours, theirs, "CONFIG", "GET", "lua-time-limit") == \
            b"*2\r\n$14\r\nlua-time-limit\r\n$3\r\n300\r\n"     # the later line
        both_say(ours, theirs, "CONFIG", "SET", "slave-announce-port", "7",
                 "min-slaves-max-lag", "20")
        both_say(ours, theirs, "CONFIG", "REWRITE")
        mine, redis_s = ours_conf.read_text(), theirs_conf.read_text()
    finally:
        ref.stop()
    marker = "# Generated by CONFIG REWRITE"
    # Above the marker: each line that set an option by either name now
    # sets it by its name, with its running value. (Redis blanks the line
    # of the second busy-reply-threshold; cellgate drops it.)
    head = lambda text: [l for l in text.split(marker)[0].splitlines() if l]
    assert head(mine) == head(redis_s) == [
        "# aliases, as Redis 7.0 still takes them",
        "busy-reply-threshold 300",
        "replica-read-only no",
        "min-replicas-to-write 0",
        "replica-priority 100",
        "repl-ping-replica-period 5",
        "replicaof 127.0.0.5 0",
    ]
    # Below it, options the file did not set, by their names too.
    for text in (mine, redis_s):
        tail = text.split(marker)[1].splitlines()
        assert "replica-announce-port 7" in tail and "min-replicas-max-lag 20" in tail
        assert not any(a in text for a, _ in ALIASES if a != "slaveof")
        assert "slaveof" not in text
    # The rewritten file loads back into the same values.
    before = {n: ours.command("CONFIG", "GET", n) for a, n in ALIASES}
    assert d.stop() == []
    d2 = start_daemon(config_file=str(ours_conf), port=d.port)
    c2 = d2.raw()
    assert {n: c2.command("CONFIG", "GET", n) for a, n in ALIASES} == before


def test_command_line_takes_aliases(start_daemon):
    d = start_daemon("--lua-time-limit", "250", "--slave-priority", "9",
                     "--min-slaves-max-lag", "3")
    r = d.client(decode_responses=True)
    assert r.config_get("busy-reply-threshold") == {"busy-reply-threshold": "250"}
    assert r.config_get("slave-priority") == {"slave-priority": "9"}
    assert r.config_get("min-replicas-max-lag") == {"min-replicas-max-lag": "3"}
    code, out, err = run("--test-config", "--slave-read-only", "maybe")
    assert (code, out, err) == (
        1, "", "cellgate: --slave-read-only: 'slave-read-only' must be yes or no, "
        "got 'maybe'\n")
    code, out, err = run("--test-config", "--lua-time-limit", "-5")
    assert (code, out, err) == (
        1, "", "cellgate: --lua-time-limit: 'lua-time-limit' must be between 0 and "
        "9223372036854775807, got '-5'\n")
