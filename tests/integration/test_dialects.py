"""Other servers' rate-limit commands, spoken as they speak them: Redis's
GCRA (its checks in order, its texts, its microsecond arithmetic; limited
requests write nothing) and INCREX (Redis 8.8's bounded counter, Valkey's
NX/XX). The worked examples are also unit-tested
(tests/unit/check_redis_gcra.c) and run through ioredis and node-redis
(tests/clients/clients.mjs)."""
import pytest
import redis

WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"


def test_gcra_worked_examples(server):
    r = server.client()
    assert r.execute_command("GCRA", "k", 5, 10, 60) == [0, 6, 5, -1, 6]
    assert r.execute_command("GCRA", "t", 5, 1, 60, "TOKENS", 10) == [1, 6, 6, -1, 0]
    assert r.exists("t") == 0                   # limited: nothing written
    assert r.type("k") == b"gcra"


def test_gcra_key_expires_at_its_tat_millisecond(fserver):
    r = fserver.client()
    assert r.execute_command("GCRA", "e", 0, 1, 10) == [0, 1, 0, -1, 10]
    assert r.pttl("e") == 10000                 # PEXPIREAT to the TAT's ms
    assert r.ttl("e") == 10
    fserver.clock.advance(ms=10000)
    assert r.exists("e") == 1                   # alive through that ms
    fserver.clock.advance(ms=1)
    assert r.exists("e") == 0


def test_gcra_limited_leaves_value_and_ttl(fserver):
    r = fserver.client()
    r.execute_command("GCRA", "l", 0, 1, 10)
    fserver.clock.advance(seconds=3)
    assert r.execute_command("GCRA", "l", 0, 1, 10) == [1, 1, 0, 7, 7]
    assert r.pttl("l") == 7000


def test_gcra_and_cl_throttle_keys_are_apart(server):
    c = server.raw()
    c.command("CL.THROTTLE", "cell", 1, 1, 60)
    c.command("GCRA", "native", 1, 1, 60)
    assert c.command("GCRA", "cell", 1, 1, 60) == WRONGTYPE
    assert c.command("CL.THROTTLE", "native", 1, 1, 60) == WRONGTYPE
    assert c.command("GET", "native") == WRONGTYPE      # as Redis
    assert c.command("TYPE", "cell") == b"+string\r\n"   # as redis-cell's
    assert c.command("TYPE", "native") == b"+gcra\r\n"


@pytest.mark.parametrize("args,error", [
    ((1, 1), b"-ERR wrong number of arguments for 'gcra' command\r\n"),
    ((1, 1, 1, "TOKENS", 1, "x"), b"-ERR wrong number of arguments for 'gcra' command\r\n"),
    ((-1, 1, 1), b"-ERR value is out of range, must be positive\r\n"),
    (("x", 1, 1), b"-ERR value is out of range, must be positive\r\n"),
    (("1.5", 1, 1), b"-ERR value is out of range, must be positive\r\n"),
    ((1, 0, 1), b"-ERR value is out of range, value must between 1 and "
                b"9223372036854775807\r\n"),
    ((1, "x", 1), b"-ERR value is not an integer or out of range\r\n"),
    ((1, 1, "x"), b"-ERR value is not a valid float\r\n"),
    ((1, 1, " 1"), b"-ERR value is not a valid float\r\n"),
    ((1, 1, "nan"), b"-ERR value is not a valid float\r\n"),
    ((1, 1, "1e999"), b"-ERR value is not a valid float\r\n"),
    ((1, 1, 0), b"-ERR period must be > 0 and < 1e12\r\n"),
    ((1, 1, "inf"), b"-ERR period must be > 0 and < 1e12\r\n"),
    ((1, 1, "1e12"), b"-ERR period must be > 0 and < 1e12\r\n"),
    ((1, 1, 1, "COUNT", 1), b"-ERR syntax error\r\n"),
    ((1, 1, 1, "TOKENS"), b"-ERR Missing TOKENS value\r\n"),
    ((1, 1, 1, "tokens", 0), b"-ERR value is out of range, value must between 1 and "
                             b"9223372036854775807\r\n"),
    ((1, 1, 86400, "TOKENS", 200000000),
     b"-ERR GCRA limiting uses microsecond accuracy. Combination of period, "
     b"tokens_per_period and TOKENS would cause an overflow\r\n"),
    ((200000000, 1, 86400),
     b"-ERR GCRA limiting uses microsecond accuracy. Combination of period, "
     b"tokens_per_period and max_burst would cause an overflow\r\n"),
])
def test_gcra_errors_in_redis_words_and_order(server, args, error):
    c = server.raw()
    c.command("CL.THROTTLE", "cellkey", 1, 1, 60)
    if b"overflow" in error:
        # The key's type is checked before the arithmetic, as in Redis.
        assert c.command("GCRA", "cellkey", *args) == WRONGTYPE
        assert c.command("GCRA", "fresh", *args) == error
    else:
        assert c.command("GCRA", "cellkey", *args) == error   # before the key


def test_gcra_period_takes_fractions_and_exponents(server):
    r = server.client()
    assert r.execute_command("GCRA", "f", 1, 2, "0.5")[:3] == [0, 2, 1]
    assert r.execute_command("GCRA", "x", 1, 1, "1e3")[:3] == [0, 2, 1]


def test_gcra_survives_a_restart(start_daemon, tmp_path):
    d = start_daemon("--dir", str(tmp_path), fakeclock=True)
    r = d.client()
    for _ in range(3):
        r.execute_command("GCRA", "s", 2, 1, 60)
    assert d.raw().command("SAVE") == b"+OK\r\n"
    now = d.clock.ns
    assert d.stop() == []
    d2 = start_daemon("--dir", str(tmp_path), fakeclock=True)
    d2.clock.set(now)
    assert d2.client().execute_command("GCRA", "s", 2, 1, 60) == [1, 3, 0, 60, 180]
    assert d2.client().type("s") == b"gcra"


# ---- INCREX ---------------------------------------------------------------

def increx(c, *args):
    return c.command("INCREX", *args)


def test_increx_counts_within_bounds_and_refuses_past_them(server):
    r = server.client()
    assert r.execute_command("INCREX", "n") == [1, 1]
    assert r.execute_command("INCREX", "n", "BYINT", 5, "UBOUND", 10) == [6, 5]
    assert r.execute_command("INCREX", "n", "BYINT", 5, "UBOUND", 10) == [6, 0]   # refused
    assert r.execute_command("INCREX", "n", "BYINT", 5, "UBOUND", 10, "SATURATE") == [10, 4]
    assert r.execute_command("INCREX", "d", "BYINT", 15, "UBOUND", 10) == [0, 0]
    assert r.exists("d") == 0                   # a refused op creates nothing
    r.execute_command("INCREX", "s", "BYINT", 50)
    assert r.execute_command("INCREX", "s", "BYINT", 5, "UBOUND", 30, "SATURATE") == [30, -20]
    assert r.execute_command("INCREX", "s", "BYINT", -25, "UBOUND", 30) == [5, -25]
    assert r.get("n") == b"10" and r.type("n") == b"string"


def test_increx_int64_edges(server):
    r = server.client()
    big = 9223372036854775800
    assert r.execute_command("INCREX", "m", "BYINT", big) == [big, big]
    assert r.execute_command("INCREX", "m", "BYINT", big) == [big, 0]
    assert r.execute_command("INCREX", "m", "BYINT", big, "SATURATE") == [2**63 - 1, 7]
    assert r.execute_command("INCREX", "m2", "BYINT", -big) == [-big, -big]
    assert r.execute_command("INCREX", "m2", "BYINT", -big, "SATURATE") == [-2**63, -8]
    r.execute_command("INCREX", "o", "BYINT", big)
    assert server.raw().command("INCREX", "o", "BYINT", 1, "SATURATE", "UBOUND",
                                -2**63) == b"-ERR applied increment would overflow\r\n"


def test_increx_floats_as_redis_writes_them_in_resp2_and_resp3(server):
    c = server.raw()
    assert increx(c, "f", "BYFLOAT", "2.5") == b"*2\r\n$3\r\n2.5\r\n$3\r\n2.5\r\n"
    assert increx(c, "f", "BYFLOAT", "0.1") == b"*2\r\n$3\r\n2.6\r\n$3\r\n0.1\r\n"
    assert c.command("GET", "f") == b"$3\r\n2.6\r\n"
    assert increx(c, "f", "BYINT", 1) == b"-ERR value is not an integer or out of range\r\n"
    c.command("HELLO", 3)
    assert increx(c, "f", "BYFLOAT", "-2.6") == b"*2\r\n,0\r\n,-2.6\r\n"     # no "-0"
    assert increx(c, "f", "BYINT", 3) == b"*2\r\n:3\r\n:3\r\n"               # "0" is an integer
    assert increx(c, "g", "XX", "BYFLOAT", 1) == b"*2\r\n,0\r\n,0\r\n"


def test_increx_expiry_options(fserver):
    r = fserver.client()
    assert r.execute_command("INCREX", "e", "EX", 100) == [1, 1]
    assert r.pttl("e") == 100000
    r.execute_command("INCREX", "e")
    assert r.pttl("e") == 100000                # no option: the TTL is kept
    r.execute_command("INCREX", "e", "EX", 50, "ENX")
    assert r.pttl("e") == 100000                # ENX: it has one already
    r.execute_command("INCREX", "e", "PERSIST")
    assert r.pttl("e") == -1
    r.execute_command("INCREX", "e", "PX", 1500, "ENX")
    assert r.pttl("e") == 1500
    fserver.clock.advance(ms=1500)
    assert r.exists("e") == 1                   # through its last millisecond
    fserver.clock.advance(ms=1)
    assert r.exists("e") == 0
    now_s = fserver.clock.ns // 10**9
    assert r.execute_command("INCREX", "p", "EXAT", now_s - 1) == [1, 1]
    assert r.exists("p") == 0                   # already past: gone, as Redis
    now_ms = fserver.clock.ns // 10**6
    assert r.execute_command("INCREX", "q", "PXAT", now_ms + 10000) == [1, 1]
    assert r.pttl("q") == 10000


def test_increx_nx_xx_as_valkey(server):
    r = server.client()
    assert r.execute_command("INCREX", "v", "NX") == [1, 1]
    assert r.execute_command("INCREX", "v", "NX") == [1, 0]
    assert r.execute_command("INCREX", "w", "XX") == [0, 0]
    assert r.exists("w") == 0


@pytest.mark.parametrize("args,error", [
    (("FOO",), b"-ERR syntax error\r\n"),
    (("BYINT",), b"-ERR syntax error\r\n"),
    (("BYINT", 1, "BYINT", 2), b"-ERR syntax error\r\n"),
    (("BYINT", 1, "BYFLOAT", 2), b"-ERR syntax error\r\n"),
    (("EX", 1, "PX", 1), b"-ERR syntax error\r\n"),
    (("EX", 1, "PERSIST"), b"-ERR syntax error\r\n"),
    (("PERSIST", "ENX"), b"-ERR syntax error\r\n"),
    (("ENX", "PERSIST"), b"-ERR syntax error\r\n"),
    (("SATURATE", "SATURATE"), b"-ERR syntax error\r\n"),
    (("NX", "XX"), b"-ERR syntax error\r\n"),
    (("ENX",), b"-ERR ENX flag requires an expiration\r\n"),
    (("BYINT", "abc"), b"-ERR Increment is not an integer or out of range\r\n"),
    (("BYINT", "1.5"), b"-ERR Increment is not an integer or out of range\r\n"),
    (("BYFLOAT", "abc"), b"-ERR Increment is not a valid float\r\n"),
    (("BYFLOAT", "nan"), b"-ERR Increment is not a valid float\r\n"),
    (("BYFLOAT", "inf"), b"-ERR BYFLOAT increment cannot be Infinity\r\n"),
    (("LBOUND", "12.5"), b"-ERR LBOUND is not an integer or out of range\r\n"),
    (("UBOUND", "x"), b"-ERR UBOUND is not an integer or out of range\r\n"),
    (("BYFLOAT", 1, "UBOUND", "x"), b"-ERR UBOUND is not a valid float\r\n"),
    (("LBOUND", 5, "UBOUND", 1), b"-ERR LBOUND can't be greater than UBOUND\r\n"),
    (("EX", 0), b"-ERR invalid expire time in 'increx' command\r\n"),
    (("PX", -1), b"-ERR invalid expire time in 'increx' command\r\n"),
    (("EX", "x"), b"-ERR value is not an integer or out of range\r\n"),
    (("EX", 2**62), b"-ERR invalid expire time in 'increx' command\r\n"),
])
def test_increx_errors(server, args, error):
    assert increx(server.raw(), "err", *args) == error


def test_increx_needs_a_key(server):
    assert server.raw().command("INCREX") == \
        b"-ERR wrong number of arguments for 'increx' command\r\n"


def test_increx_on_a_limiter_key_and_a_limiter_on_a_counter(server):
    # A CL.THROTTLE key is a string of its TAT, as redis-cell's is, so
    # INCREX counts on it and CL.THROTTLE reads a counter as a TAT; Redis's
    # GCRA keeps a type of its own.
    c = server.raw()
    c.command("CL.THROTTLE", "lim", 1, 1, 60)
    tat = int(c.command("GET", "lim").split(b"\r\n")[1])
    assert increx(c, "lim") == b"*2\r\n:%d\r\n:1\r\n" % (tat + 1)
    c.command("INCREX", "cnt")
    assert c.command("CL.THROTTLE", "cnt", 1, 1, 60).startswith(b"*5\r\n:0\r\n")
    assert c.command("GCRA", "cnt", 1, 1, 60) == WRONGTYPE
    c.command("GCRA", "native", 1, 1, 60)
    assert increx(c, "native") == WRONGTYPE


def test_increx_counters_survive_a_restart(start_daemon, tmp_path):
    d = start_daemon("--dir", str(tmp_path), fakeclock=True)
    r = d.client()
    r.execute_command("INCREX", "i", "BYINT", 41, "EX", 3600)
    r.execute_command("INCREX", "fl", "BYFLOAT", "1.25")
    assert d.raw().command("SAVE") == b"+OK\r\n"
    now = d.clock.ns
    assert d.stop() == []
    d2 = start_daemon("--dir", str(tmp_path), fakeclock=True)
    d2.clock.set(now)
    r2 = d2.client()
    assert r2.execute_command("INCREX", "i") == [42, 1]
    assert r2.pttl("i") == 3600 * 1000
    assert r2.get("fl") == b"1.25"


def test_increx_floats_in_records_of_every_key_length(server):
    # A record's state is 8-byte aligned, a long double wants 16: keys of
    # every length put the counter at both; under UBSan (make test's second
    # run) a value read in place would be reported (found by fuzz_cmd).
    r = server.client()
    for n in range(1, 33):
        key = "k" * n
        assert r.execute_command("INCREX", key, "BYFLOAT", "0.25") == [b"0.25", b"0.25"]
        assert r.execute_command("INCREX", key, "BYFLOAT", "0.5") == [b"0.75", b"0.5"]
        assert r.get(key) == b"0.75"
