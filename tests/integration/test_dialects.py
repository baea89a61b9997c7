"""Other servers' rate-limit commands, spoken as they speak them: Redis's
GCRA (its checks in order, its texts, its microsecond arithmetic; limited
requests write nothing). The worked examples are also unit-tested
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
    assert c.command("TYPE", "cell") == b"+gcra\r\n"
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
