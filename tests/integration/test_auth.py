"""requirepass, AUTH and HELLO AUTH as Redis does them: -NOAUTH before,
small requests only before, constant-time compare, the open-bind warning."""
import subprocess

import pytest
import redis

import harness

PASS = "s3cret-pass"


@pytest.fixture
def locked(start_daemon):
    return start_daemon("--requirepass", PASS)


def test_commands_before_auth_get_noauth_and_connection_stays(locked):
    conn = locked.raw()
    assert conn.command("PING") == b"-NOAUTH Authentication required.\r\n"
    assert conn.command("CL.THROTTLE", "k", 1, 1, 1) == b"-NOAUTH Authentication required.\r\n"
    assert conn.command("AUTH", "wrong") == (
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n")
    assert conn.command("AUTH", "other", PASS) == (
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n")
    assert conn.command("AUTH", PASS) == b"+OK\r\n"
    assert conn.command("PING") == b"+PONG\r\n"
    assert conn.command("CL.THROTTLE", "k", 1, 1, 1) == b"*5\r\n:0\r\n:2\r\n:1\r\n:-1\r\n:1\r\n"


def test_auth_with_default_user_and_redis_py_password(locked):
    r = locked.client(password=PASS)
    assert r.ping()
    r2 = locked.client(username="default", password=PASS)
    assert r2.execute_command("CL.THROTTLE", "u", 1, 1, 1)[0] == 0
    with pytest.raises((redis.AuthenticationError, redis.ResponseError)) as e:
        locked.client(password="nope").ping()
    assert "WRONGPASS" in str(e.value) or "invalid" in str(e.value)


def test_hello_auth_and_hello_without_auth(locked):
    conn = locked.raw()
    got = conn.command("HELLO", "3")
    assert got.startswith(b"-NOAUTH HELLO must be called with the client already "
                          b"authenticated")
    got = conn.command("HELLO", "3", "AUTH", "default", PASS, "SETNAME", "app")
    assert got.startswith(b"%7\r\n")
    assert conn.command("CLIENT", "GETNAME") == b"$3\r\napp\r\n"


def test_quit_works_before_auth(locked):
    conn = locked.raw()
    assert conn.command("QUIT") == b"+OK\r\n"
    assert conn.read_to_eof(5) == (b"", True)


def test_unauthenticated_clients_may_send_only_small_requests(locked):
    big_count = locked.raw()
    big_count.send(b"*11\r\n")
    assert big_count.read_to_eof(5) == (
        b"-ERR Protocol error: unauthenticated multibulk length\r\n", True)
    big_bulk = locked.raw()
    big_bulk.send(b"*2\r\n$4\r\nAUTH\r\n$16385\r\n")
    assert big_bulk.read_to_eof(5) == (
        b"-ERR Protocol error: unauthenticated bulk length\r\n", True)
    # After AUTH the normal limits apply.
    ok = locked.raw()
    assert ok.command("AUTH", PASS) == b"+OK\r\n"
    assert ok.command("ECHO", "x" * 20000) == b"$20000\r\n" + b"x" * 20000 + b"\r\n"
    assert ok.command("DEL", *["k%d" % i for i in range(20)]) == b":0\r\n"


def test_auth_without_requirepass_is_refused_like_redis(server, r):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command("AUTH", "x")
    assert str(e.value).startswith("AUTH <password> called without any password configured")
    assert r.execute_command("AUTH", "default", "anything") is True


def test_config_set_requirepass_locks_new_clients_only(start_daemon):
    d = start_daemon()
    admin = d.raw()
    assert admin.command("CONFIG", "SET", "requirepass", PASS) == b"+OK\r\n"
    assert admin.command("PING") == b"+PONG\r\n"          # already authenticated
    assert d.raw().command("PING") == b"-NOAUTH Authentication required.\r\n"
    assert admin.command("CONFIG", "GET", "requirepass") == (
        b"*2\r\n$11\r\nrequirepass\r\n$11\r\n" + PASS.encode() + b"\r\n")


def test_redis_cli_and_benchmark_with_password(locked):
    out = subprocess.run(["redis-cli", "-p", str(locked.port), "-a", PASS, "--no-auth-warning",
                          "CL.THROTTLE", "user123", "15", "30", "60"],
                         capture_output=True, timeout=20)
    assert out.stdout.split()[:3] == [b"0", b"16", b"15"]
    bench = subprocess.run(["redis-benchmark", "-p", str(locked.port), "-a", PASS,
                            "-n", "500", "-q", "-t", "ping"], capture_output=True, timeout=60)
    assert bench.returncode == 0
    nopass = subprocess.run(["redis-benchmark", "-p", str(locked.port), "-n", "100", "-q",
                             "-t", "ping"], capture_output=True, timeout=60)
    assert nopass.returncode != 0


def test_open_bind_without_password_warns_at_config_test():
    out = subprocess.run([harness.BIN, "--test-config", "--bind", "0.0.0.0"],
                         capture_output=True, timeout=20, text=True)
    assert out.returncode == 0
    assert "WARNING: listening on a non-loopback address (bind 0.0.0.0) without requirepass" \
        in out.stdout
    quiet = subprocess.run([harness.BIN, "--test-config", "--bind", "0.0.0.0",
                            "--requirepass", "x"], capture_output=True, timeout=20, text=True)
    assert "WARNING" not in quiet.stdout + quiet.stderr
    local = subprocess.run([harness.BIN, "--test-config", "--bind", "127.0.0.1 ::1"],
                           capture_output=True, timeout=20, text=True)
    assert "WARNING" not in local.stdout + local.stderr


WRONGPASS = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"


@pytest.mark.parametrize("at", range(7))
def test_a_password_with_a_nul_byte_is_kept_and_compared_whole(start_daemon, at):
    # "secret" with a NUL at every position: the whole value is the
    # password, never the bytes before the NUL (an empty one would turn
    # authentication off).
    pw = b"secret"[:at] + b"\x00" + b"secret"[at:]
    d = start_daemon()
    admin = d.raw()
    assert admin.command("CONFIG", "SET", "requirepass", pw) == b"+OK\r\n"
    assert admin.command("CONFIG", "GET", "requirepass") == (
        b"*2\r\n$11\r\nrequirepass\r\n$7\r\n" + pw + b"\r\n")
    c = d.raw()
    assert c.command("PING") == b"-NOAUTH Authentication required.\r\n"
    for wrong in (pw[:at], pw[at + 1:], pw[:-1], pw + b"\x00", b"secret"):
        assert c.command("AUTH", wrong) == WRONGPASS
        assert c.command("PING") == b"-NOAUTH Authentication required.\r\n"
    assert c.command("AUTH", pw) == b"+OK\r\n"
    assert c.command("PING") == b"+PONG\r\n"
    h = d.raw()
    assert h.command("HELLO", 2, "AUTH", "default", pw[:at]) == WRONGPASS
    assert h.command("HELLO", 2, "AUTH", "default", pw).startswith(b"*14\r\n")


def test_a_binary_password_from_the_config_file(start_daemon, tmp_path):
    conf = tmp_path / "nul.conf"
    conf.write_text('requirepass "a\\x00b"\n')
    d = start_daemon(config_file=str(conf))
    c = d.raw()
    assert c.command("AUTH", "a") == WRONGPASS
    assert c.command("AUTH", b"a\x00b") == b"+OK\r\n"


def test_a_failed_config_set_puts_a_binary_password_back_whole(start_daemon):
    d = start_daemon()
    admin = d.raw()
    assert admin.command("CONFIG", "SET", "requirepass", b"x\x00y") == b"+OK\r\n"
    assert admin.command("CONFIG", "SET", "requirepass", b"new", "hz", "0").startswith(
        b"-ERR CONFIG SET failed (possibly related to argument 'hz')")
    c = d.raw()
    assert c.command("AUTH", b"new") == WRONGPASS
    assert c.command("AUTH", b"x\x00y") == b"+OK\r\n"
