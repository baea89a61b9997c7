"""io-threads and io-threads-do-reads as a user sees them: set at start
(command line or config file), shown by CONFIG GET and kept by CONFIG
REWRITE, refused by CONFIG SET with Redis 7.0.15's words (compared byte for
byte with Debian's redis-server), bad values refused at start with a clear
error; and a server started with I/O threads serves many clients, counting
them right.

Under CELLGATE_IO_THREADS=N (make test-integration-threads) the harness
starts every daemon with --io-threads N unless the test sets it: the first
test checks that this reached the daemon.
"""
import os
import socket
import subprocess

import pytest

import harness
from harness import BIN, resp_command


def config_get(name, value):
    """CONFIG GET's exact reply for one option."""
    return b"*2\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(name), name.encode(),
                                                  len(value), value.encode())


def immutable(name):
    return (b"-ERR CONFIG SET failed (possibly related to argument '%s') - "
            b"can't set immutable config\r\n" % name.encode())


@pytest.mark.parametrize("args, threads, reads", [
    ((), None, "no"),
    (("--io-threads", "1"), "1", "no"),
    (("--io-threads", "4"), "4", "no"),
    (("--io-threads", "128", "--io-threads-do-reads", "yes"), "128", "yes"),
])
def test_config_get_shows_what_was_configured(start_daemon, args, threads, reads):
    d = start_daemon(*args)
    # No io-threads of the test's own: the harness's (CELLGATE_IO_THREADS),
    # else the default.
    want = threads or harness.IO_THREADS or "1"
    c = d.raw()
    assert c.command("CONFIG", "GET", "io-threads") == config_get("io-threads", want)
    assert c.command("CONFIG", "GET", "io-threads-do-reads") == \
        config_get("io-threads-do-reads", reads)
    # The pattern finds both, in the options table's order.
    assert c.command("CONFIG", "GET", "io-threads*") == (
        b"*4\r\n$10\r\nio-threads\r\n$%d\r\n%s\r\n$19\r\nio-threads-do-reads\r\n"
        b"$%d\r\n%s\r\n" % (len(want), want.encode(), len(reads), reads.encode()))


def test_a_config_file_sets_them_and_the_command_line_wins(start_daemon, tmp_path):
    conf = tmp_path / "threads.conf"
    conf.write_text("io-threads 3\nio-threads-do-reads yes\n")
    d = start_daemon(config_file=str(conf))
    c = d.raw()
    assert c.command("CONFIG", "GET", "io-threads") == config_get("io-threads", "3")
    assert c.command("CONFIG", "GET", "io-threads-do-reads") == \
        config_get("io-threads-do-reads", "yes")
    # CONFIG REWRITE keeps them (a restart starts as many threads).
    assert c.command("CONFIG", "REWRITE") == b"+OK\r\n"
    lines = conf.read_text().splitlines()
    assert "io-threads 3" in lines and "io-threads-do-reads yes" in lines
    d2 = start_daemon("--io-threads", "5", config_file=str(conf))
    assert d2.raw().command("CONFIG", "GET", "io-threads") == config_get("io-threads", "5")


@pytest.mark.parametrize("name, value", [
    ("io-threads", "4"), ("io-threads", "1"), ("io-threads", "0"),
    ("io-threads-do-reads", "yes"), ("io-threads-do-reads", "no"),
])
def test_config_set_is_refused_as_redis_refuses_it(start_daemon, redis_server, name, value):
    d = start_daemon("--io-threads", "2")
    c = d.raw()
    ref = harness.RawConn(port=redis_server.port)
    try:
        got = c.command("CONFIG", "SET", name, value)
        assert got == ref.command("CONFIG", "SET", name, value)
        assert got == immutable(name)
    finally:
        ref.close()
    assert c.command("CONFIG", "GET", "io-threads") == config_get("io-threads", "2")
    assert c.command("CONFIG", "GET", "io-threads-do-reads") == \
        config_get("io-threads-do-reads", "no")


def test_config_set_of_several_options_with_io_threads_changes_none(start_daemon,
                                                                    redis_server):
    d = start_daemon("--maxclients", "100")
    c = d.raw()
    ref = harness.RawConn(port=redis_server.port)
    try:
        ref_max = ref.command("CONFIG", "GET", "maxclients")
        for args in (("maxclients", "5", "io-threads", "4"),
                     ("io-threads-do-reads", "yes", "maxclients", "5")):
            got = c.command("CONFIG", "SET", *args)
            assert got == ref.command("CONFIG", "SET", *args)
            assert got == immutable(args[0] if args[0].startswith("io") else args[2])
        assert ref.command("CONFIG", "GET", "maxclients") == ref_max
    finally:
        ref.close()
    assert c.command("CONFIG", "GET", "maxclients") == config_get("maxclients", "100")


BAD = [
    ("io-threads", "0", "'io-threads' must be between 1 and 128, got '0'"),
    ("io-threads", "129", "'io-threads' must be between 1 and 128, got '129'"),
    ("io-threads", "-1", "'io-threads' must be between 1 and 128, got '-1'"),
    ("io-threads", "abc", "'io-threads' must be an integer, got 'abc'"),
    ("io-threads-do-reads", "maybe",
     "'io-threads-do-reads' must be yes or no, got 'maybe'"),
]


def port_is_closed(port):
    s = socket.socket()
    try:
        return s.connect_ex(("127.0.0.1", port)) != 0
    finally:
        s.close()


@pytest.mark.parametrize("name, value, why", BAD)
def test_a_bad_value_on_the_command_line_stops_the_start(tmp_path, name, value, why):
    port = harness.free_port()
    p = subprocess.run([BIN, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                        "--dir", str(tmp_path), "--" + name, value],
                       capture_output=True, text=True, timeout=30,
                       env=harness.sanitizer_env(dict(os.environ)))
    assert (p.returncode, p.stdout, p.stderr) == (1, "", "cellgate: --%s: %s\n" % (name, why))
    assert port_is_closed(port)


@pytest.mark.parametrize("name, value, why", BAD)
def test_a_bad_value_in_the_config_file_stops_the_start(tmp_path, name, value, why):
    conf = tmp_path / "bad.conf"
    conf.write_text("# threads\n%s %s\n" % (name, value))
    port = harness.free_port()
    p = subprocess.run([BIN, str(conf), "--port", str(port), "--bind", "127.0.0.1",
                        "--save", "", "--dir", str(tmp_path)],
                       capture_output=True, text=True, timeout=30,
                       env=harness.sanitizer_env(dict(os.environ)))
    assert (p.returncode, p.stdout, p.stderr) == (1, "", "cellgate: %s:2: %s\n" % (conf, why))
    assert port_is_closed(port)


def test_the_bounds_themselves_are_accepted():
    for value in ("1", "128"):
        p = subprocess.run([BIN, "--io-threads", value, "--io-threads-do-reads", "yes",
                            "--test-config"], capture_output=True, text=True, timeout=30)
        assert (p.returncode, p.stdout, p.stderr) == (0, "cellgate: configuration OK\n", "")


def test_many_clients_are_served_in_order_and_counted(start_daemon):
    d = start_daemon("--io-threads", "4")
    conns = [d.raw() for _ in range(16)]
    # Every client pipelines 300 INCRs of its own key and a PING: each
    # reply stream exact and in order.
    for i, c in enumerate(conns):
        c.send(resp_command("INCR", "k%d" % i) * 300 + resp_command("PING", "c%d" % i))
    for i, c in enumerate(conns):
        want = b"".join(b":%d\r\n" % n for n in range(1, 301))
        want += b"$%d\r\nc%d\r\n" % (len("c%d" % i), i)
        assert c.recv_exact(len(want)) == want
    info = d.info("clients")
    assert info["connected_clients"] == 16 + 1
    for c in conns:
        c.close()
    assert harness.wait_until(lambda: d.info("clients")["connected_clients"] == 1, 10)
