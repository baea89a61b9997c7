"""RL.LOG, RL.ENTRIES and RL.TIERS against the running daemon on the fake
clock: the seed scenarios with exact replies, atomicity, memory."""
import time

import pytest
import redis

from harness import wait_until
from test_windows import _hammer

SEC = 1000000000


def log(c, *args):
    return c.execute_command("RL.LOG", *args)


def tiers(c, *args):
    return c.execute_command("RL.TIERS", *args)


def test_who_used_the_quota(fserver, fr):
    t0 = fserver.clock.ns // 1000000
    assert log(fr, "quota:acct9", 3, 60, "META", "alice") == [0, 3, 2, -1, 60]
    fserver.clock.advance(seconds=10)
    assert log(fr, "quota:acct9", 3, 60, "META", "bob", "COST", 2) == [0, 3, 0, -1, 60]
    assert log(fr, "quota:acct9", 3, 60, "META", "carol") == [1, 3, 0, 50, 60]
    assert fr.execute_command("RL.ENTRIES", "quota:acct9") == [
        [t0 + 10000, 2, b"bob"], [t0, 1, b"alice"]]
    assert fr.execute_command("RL.ENTRIES", "quota:acct9", "COUNT", 1) == [
        [t0 + 10000, 2, b"bob"]]
    fserver.clock.advance(seconds=50)       # alice's request leaves the window
    assert fr.execute_command("RL.ENTRIES", "quota:acct9") == [[t0 + 10000, 2, b"bob"]]
    assert log(fr, "quota:acct9", 3, 60) == [0, 3, 0, -1, 60]
    assert fr.execute_command("RL.ENTRIES", "quota:acct9")[0][2] is None


def test_log_boundary_is_exact_to_the_millisecond(fserver, fr):
    assert log(fr, "lb", 1, 2)[0] == 0
    fserver.clock.advance(seconds=2, ms=-1)
    assert log(fr, "lb", 1, 2, "MS") == [1, 1, 0, 1, 1]
    fserver.clock.advance(ms=1)
    assert log(fr, "lb", 1, 2)[0] == 0


def test_log_refund_and_peek(fserver, fr):
    assert log(fr, "lr", 5, 60, "COST", 4) == [0, 5, 1, -1, 60]
    assert log(fr, "lr", 5, 60, "COST", 3, "PEEK") == [1, 5, 1, 60, 60]
    assert log(fr, "lr", 5, 60, "COST", -10) == [0, 5, 5, -1, 0]
    assert fr.exists("lr") == 0
    assert log(fr, "fresh", 5, 60, "PEEK") == [0, 5, 4, -1, 60]
    assert fr.exists("fresh") == 0


def test_three_tiers_1000_per_s_5000_per_10s_7000_per_15s(fserver, fr):
    args = (1000, 1, 5000, 10, 7000, 15)
    # 1000 in the first second: the 1 s tier fills and decides.
    assert tiers(fr, "ip:1.2.3.4", *args, "COST", 1000) == [0, 1000, 0, -1, 15]
    assert tiers(fr, "ip:1.2.3.4", *args) == [1, 1000, 0, 1, 15]
    # Four more full seconds: the 10 s tier is full after 5000.
    for _ in range(4):
        fserver.clock.advance(seconds=1)
        assert tiers(fr, "ip:1.2.3.4", *args, "COST", 1000)[0] == 0
    fserver.clock.advance(seconds=1)
    assert tiers(fr, "ip:1.2.3.4", *args) == [1, 5000, 0, 5, 14]
    # At t = 10 s the first second's 1000 leave the 10 s window.
    fserver.clock.advance(seconds=5)
    assert tiers(fr, "ip:1.2.3.4", *args, "COST", 1000) == [0, 1000, 0, -1, 15]
    fserver.clock.advance(seconds=1)
    assert tiers(fr, "ip:1.2.3.4", *args, "COST", 1000) == [0, 1000, 0, -1, 15]
    # 7000 in the last 15 s now: the 15 s tier decides.
    fserver.clock.advance(seconds=1)
    assert tiers(fr, "ip:1.2.3.4", *args, "COST", 1) == [1, 7000, 0, 3, 14]


def test_a_request_denied_by_one_tier_counts_in_none(fserver, fr):
    args = (10, 1, 12, 10)
    assert tiers(fr, "atom", *args, "COST", 10) == [0, 10, 0, -1, 10]
    fserver.clock.advance(seconds=1)
    assert tiers(fr, "atom", *args, "COST", 5)[0] == 1     # 10 s tier: 10 + 5 > 12
    assert tiers(fr, "atom", *args, "COST", 2) == [0, 12, 0, -1, 10]  # nothing counted


def test_tiers_errors(fr):
    for args, text in ((("t", 5), "wrong number of arguments for 'rl.tiers' command"),
                       (("t", "x", 1, 2), "value is not an integer or out of range"),
                       (("t", 5, 0), "limit and window must be positive"),
                       (("t", 5, 3601), "window is above tiers-max-window (3600)"),
                       (("t", 5, 1, "NOPE"), "syntax error"),
                       (("t",) + (1, 1) * 17, "at most 16 tiers")):
        with pytest.raises(redis.ResponseError) as e:
            fr.execute_command("RL.TIERS", *args)
        assert str(e.value) == text, args
    with pytest.raises(redis.ResponseError) as e:
        log(fr, "l", 10001, 60)
    assert "log-max-entries" in str(e.value)
    with pytest.raises(redis.ResponseError) as e:
        log(fr, "l", 10, 60, "META", "x" * 1025)
    assert str(e.value) == "META is longer than 1024 bytes"


@pytest.mark.parametrize("command,args,limit", [
    ("RL.LOG", (43, 3600, "META", "w"), 43),
    ("RL.TIERS", (1000, 1, 47, 3600), 47),
])
def test_fifty_clients_get_exactly_the_limit(fserver, command, args, limit):
    assert _hammer(fserver, command, "hammer-" + command, args) == limit


@pytest.mark.allocator
def test_log_and_tiers_memory_returns_when_keys_expire(fserver, fr):
    base = fr.info("memory")["used_memory"]
    p = fr.pipeline(transaction=False)
    for i in range(2000):
        p.execute_command("RL.LOG", "ml:%d" % i, 100, 5, "META", "user-%d" % i)
        p.execute_command("RL.TIERS", "mt:%d" % i, 10, 1, 100, 5)
    p.execute()
    assert fr.dbsize() == 4000
    assert fr.info("memory")["used_memory"] > base + 4000 * 32
    fserver.clock.advance(seconds=5, ms=1)     # past the ms they go fresh in
    deadline = 100
    while fr.dbsize() > 0 and deadline > 0:
        time.sleep(0.1)
        deadline -= 1
    assert fr.dbsize() == 0
    # The pipeline's input stays in this client's parser until the cron
    # finds the client idle (a tick that finds its DBSIZE in flight skips
    # it: with I/O threads the main thread may hold it then), so the memory
    # is back within a few ticks, not at once.
    assert wait_until(
        lambda: fr.info("memory")["used_memory"] <= base + 64 * 1024, 5), \
        fr.info("memory")["used_memory"] - base
