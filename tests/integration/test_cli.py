"""The stock Redis tools against cellgate, byte for byte: redis-cli (what a
user types) and redis-benchmark (its CONFIG probes, inline and multibulk
PING, and a CL.THROTTLE run). The daemon runs on the fake clock, so the
limiter replies are exact."""
import re
import shutil
import subprocess

import pytest

REDIS_CLI = shutil.which("redis-cli") or "/usr/bin/redis-cli"
REDIS_BENCHMARK = shutil.which("redis-benchmark") or "/usr/bin/redis-benchmark"

pytestmark = pytest.mark.skipif(
    not (shutil.which("redis-cli") and shutil.which("redis-benchmark")),
    reason="redis-tools (redis-cli, redis-benchmark) are not installed")


def tool(*args, timeout=60):
    p = subprocess.run([str(a) for a in args], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def cli(server, *args):
    return tool(REDIS_CLI, "-h", "127.0.0.1", "-p", server.port, *args)


def test_cli_readme_example(fserver):
    assert cli(fserver, "CL.THROTTLE", "user123", "15", "30", "60") == (
        0, b"0\n16\n15\n-1\n2\n", b"")


def test_cli_readme_example_again_shows_the_token_taken(fserver):
    cli(fserver, "CL.THROTTLE", "user123", "15", "30", "60")
    assert cli(fserver, "CL.THROTTLE", "user123", "15", "30", "60") == (
        0, b"0\n16\n14\n-1\n4\n", b"")


def test_cli_resp3_gives_the_same_throttle_output(fserver):
    assert cli(fserver, "-3", "CL.THROTTLE", "user3", "15", "30", "60") == (
        0, b"0\n16\n15\n-1\n2\n", b"")


def test_cli_ping(fserver):
    assert cli(fserver, "PING") == (0, b"PONG\n", b"")


def test_cli_echo_and_nil(fserver):
    assert cli(fserver, "ECHO", "hello world") == (0, b"hello world\n", b"")
    assert cli(fserver, "GET", "missing") == (0, b"\n", b"")


def test_cli_unknown_command(fserver):
    assert cli(fserver, "foo", "a", "b") == (
        0, b"ERR unknown command 'foo', with args beginning with: 'a' 'b' \n\n", b"")


def test_cli_throttle_usage_error(fserver):
    assert cli(fserver, "CL.THROTTLE", "k", "1") == (
        0, b"Cell error: Store error: Usage: cl.throttle <key> <max_burst> "
           b"<count per period> <period> [<quantity>]\n\n", b"")


def test_cli_get_shows_the_tat(fserver):
    cli(fserver, "CL.THROTTLE", "g", "4", "1", "1")
    assert cli(fserver, "GET", "g") == (0, b"%d\n" % (fserver.clock.ns + 1000000000), b"")


def test_cli_info_and_dbsize(fserver):
    code, out, err = cli(fserver, "INFO", "server")
    assert code == 0 and out.startswith(b"# Server\r\nredis_version:")
    assert cli(fserver, "DBSIZE") == (0, b"0\n", b"")


def _rps(output, name):
    """The requests per second redis-benchmark -q reports for a test."""
    for line in re.split(rb"[\r\n]", output):
        m = re.match(rb"\s*" + re.escape(name) + rb": ([0-9.]+) requests per second", line)
        if m:
            return float(m.group(1))
    return None


def test_benchmark_ping_inline_and_mbulk(fserver):
    code, out, err = tool(REDIS_BENCHMARK, "-h", "127.0.0.1", "-p", fserver.port,
                          "-t", "ping", "-n", "2000", "-q")
    assert code == 0, err
    inline, mbulk = _rps(out, b"PING_INLINE"), _rps(out, b"PING_MBULK")
    assert inline is not None and inline > 0, out
    assert mbulk is not None and mbulk > 0, out
    assert b"error" not in out.lower() and b"error" not in err.lower()


def test_benchmark_throttle(fserver, fr):
    fr.config_resetstat()
    code, out, err = tool(REDIS_BENCHMARK, "-h", "127.0.0.1", "-p", fserver.port,
                          "-n", "2000", "-q", "CL.THROTTLE", "k", "10", "100", "60")
    assert code == 0, err
    rps = _rps(out, b"CL.THROTTLE k 10 100 60")
    assert rps is not None and rps > 0, out
    # The clock stood still: exactly max_burst + 1 = 11 of the 2000 passed.
    assert fr.execute_command("CL.THROTTLE", "k", 10, 100, 60, "PEEK") == [1, 11, 0, 1, 7]
    stats = fr.info("commandstats")["cmdstat_cl.throttle"]
    assert stats["calls"] >= 2000
    assert stats["failed_calls"] == 0


def test_benchmark_many_clients_random_keys(fserver, fr):
    code, out, err = tool(REDIS_BENCHMARK, "-h", "127.0.0.1", "-p", fserver.port,
                          "-n", "3000", "-c", "20", "-r", "100", "-q",
                          "CL.THROTTLE", "key:__rand_int__", "10", "100", "60")
    assert code == 0, err
    assert _rps(out, b"CL.THROTTLE key:__rand_int__ 10 100 60") is not None, out
    assert 1 <= fr.dbsize() <= 100
