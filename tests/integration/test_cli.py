"""The stock Redis tools against cellgate, byte for byte: redis-cli (what a
user types) and redis-benchmark (its CONFIG probes, inline and multibulk
PING, and pipelined runs of every limiter command with --csv). The daemon
runs on the fake clock, so the limiter replies are exact. The interactive
redis-cli session is in test_cli_interactive.py."""
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


# ---- redis-benchmark on every limiter command ----------------------------------------
#
# 2000 requests from 10 clients, 4 pipelined, on the frozen fake clock: every
# request must be answered (INFO commandstats counts exactly 2000 calls, none
# failed), and the limiter must have let exactly its quota through, as the
# # Limits counters and the key's state afterwards show.

BENCH_N = 2000


def bench(server, *command, timeout=60):
    """redis-benchmark -n 2000 -c 10 -P 4 -q --csv; its CSV rows as lists."""
    code, out, err = tool(REDIS_BENCHMARK, "-h", "127.0.0.1", "-p", server.port,
                          "-n", BENCH_N, "-c", "10", "-P", "4", "-q", "--csv", *command,
                          timeout=timeout)
    assert code == 0, err
    assert b"rror" not in out + err, out + err
    rows = [line.split(b'","') for line in out.strip().split(b"\n")]
    assert rows[0][:2] == [b'"test', b"rps"], out
    for row in rows[1:]:
        assert len(row) == 8, out
        assert float(row[1]) > 0, out
    return [row[0].lstrip(b'"') for row in rows[1:]]


def limits(r, command):
    """allowed, denied from INFO's # Limits section."""
    line = r.info("limits")["limits_" + command]
    return line["allowed"], line["denied"]


def cmdstat(r, name):
    return r.info("commandstats")["cmdstat_" + name]


# (benchmarked command, requests let through, a command to see the state, its reply)
# The runs start on a minute boundary, so the epoch-grid windows (ALIGN,
# RL.SLIDING) open with them: RL.SLIDING's next cost-2 request fits once
# 2/50 of the next window has passed, 62.4 s from now.
LIMITER_RUNS = [
    (("CL.THROTTLE", "b:gcra", "10", "100", "60"), 11,
     ("CL.THROTTLE", "b:gcra", 10, 100, 60, "PEEK"), [1, 11, 0, 1, 7]),
    (("CL.THROTTLE", "b:gcra3", "10", "100", "60", "3", "MS"), 3,
     ("CL.THROTTLE", "b:gcra3", 10, 100, 60, 3, "PEEK", "MS"), [1, 11, 2, 600, 5400]),
    (("RL.FIXED", "b:fixed", "100", "60", "COST", "3"), 33,
     ("RL.FIXED", "b:fixed", 100, 60, "PEEK"), [0, 100, 0, -1, 60]),
    (("RL.FIXED", "b:aligned", "100", "60", "ALIGN", "MS"), 100,
     ("RL.FIXED", "b:aligned", 100, 60, "ALIGN", "PEEK"), [1, 100, 0, 60, 60]),
    (("RL.SLIDING", "b:sliding", "50", "60", "COST", "2"), 25,
     ("RL.SLIDING", "b:sliding", 50, 60, "COST", 2, "PEEK"), [1, 50, 0, 63, 120]),
    (("RL.LOG", "b:log", "30", "60", "META", "bench"), 30,
     ("RL.LOG", "b:log", 30, 60, "PEEK"), [1, 30, 0, 60, 60]),
    (("RL.TIERS", "b:tiers", "20", "1", "40", "10", "COST", "1"), 20,
     ("RL.TIERS", "b:tiers", 20, 1, 40, 10, "PEEK"), [1, 20, 0, 1, 10]),
]


@pytest.mark.parametrize("command, allowed, peek, state", LIMITER_RUNS,
                         ids=[" ".join(c[0][:1] + c[0][5:]) for c in LIMITER_RUNS])
def test_benchmark_every_limiter(fserver, fr, command, allowed, peek, state):
    minute = 60 * 10**9
    fserver.clock.set(-(-fserver.clock.ns // minute) * minute)
    fr.config_resetstat()
    assert bench(fserver, *command) == [" ".join(command).encode()]
    name = command[0].lower()
    stats = cmdstat(fr, name)
    assert (stats["calls"], stats["failed_calls"], stats["rejected_calls"]) == (BENCH_N, 0, 0)
    assert limits(fr, name) == (allowed, BENCH_N - allowed)
    assert fr.execute_command(*peek) == state
    assert fr.dbsize() == 1


@pytest.mark.parametrize("command", [
    ("RL.SLIDING", "b:peek", "10", "60", "PEEK"),
    ("RL.FIXED", "b:peek", "10", "60", "COST", "4", "PEEK", "MS"),
    ("RL.LOG", "b:peek", "10", "60", "META", "m", "PEEK"),
    ("RL.TIERS", "b:peek", "10", "1", "PEEK"),
    ("CL.THROTTLE", "b:peek", "10", "100", "60", "1", "PEEK"),
], ids=lambda c: c[0])
def test_benchmark_peek_changes_nothing(fserver, fr, command):
    fr.config_resetstat()
    assert bench(fserver, *command) == [" ".join(command).encode()]
    name = command[0].lower()
    assert cmdstat(fr, name)["calls"] == BENCH_N
    # Every PEEK saw a fresh key, so every one answered "allowed" ...
    assert limits(fr, name) == (BENCH_N, 0)
    # ... and none created it.
    assert fr.dbsize() == 0


def test_benchmark_entries_and_server_commands(fserver, fr):
    for i in range(7):
        fr.execute_command("RL.LOG", "b:log", 10, 60, "META", "u%d" % i)
    fr.config_resetstat()
    assert bench(fserver, "RL.ENTRIES", "b:log", "COUNT", "5") == [b"RL.ENTRIES b:log COUNT 5"]
    assert bench(fserver, "-t", "ping") == [b"PING_INLINE", b"PING_MBULK"]
    assert bench(fserver, "INFO") == [b"INFO"]
    assert bench(fserver, "ECHO", "hello") == [b"ECHO hello"]
    assert bench(fserver, "COMMAND", "GETKEYS", "CL.THROTTLE", "k", "1", "2", "3") == [
        b"COMMAND GETKEYS CL.THROTTLE k 1 2 3"]
    stats = fr.info("commandstats")
    for name, calls in (("rl.entries", BENCH_N), ("ping", 2 * BENCH_N), ("info", BENCH_N),
                        ("echo", BENCH_N), ("command|getkeys", BENCH_N)):
        assert (stats["cmdstat_" + name]["calls"], stats["cmdstat_" + name]["failed_calls"]) == (
            calls, 0), name
    # Reading changed nothing: still 7 entries, newest first.
    entries = fr.execute_command("RL.ENTRIES", "b:log")
    assert [e[2] for e in entries] == [b"u%d" % i for i in range(6, -1, -1)]
    assert "limits_rl.log" not in fr.info("limits")   # no decision since the reset
