"""RL.FIXED and RL.SLIDING against the running daemon, on the fake clock:
the seed scenarios with exact replies, the boundary burst, PEEK, MS,
errors, key lifetime, and atomicity under concurrent clients."""
import threading

import pytest
import redis

SEC = 1000000000
DAY = 86400


def fixed(c, *args):
    return c.execute_command("RL.FIXED", *args)


def sliding(c, *args):
    return c.execute_command("RL.SLIDING", *args)


def test_transfers_2000_a_day_with_cost(fserver, fr):
    # $2000 of transfers per day, in $350 transfers, calendar days (UTC).
    clock = fserver.clock
    clock.set(clock.ns - clock.ns % (DAY * SEC) + DAY * SEC + 3600 * SEC)  # 01:00 UTC
    replies = [fixed(fr, "user:42:transfers", 2000, DAY, "COST", 350, "ALIGN")
               for _ in range(6)]
    left = DAY - 3600
    assert replies == [[0, 2000, 1650, -1, left], [0, 2000, 1300, -1, left],
                       [0, 2000, 950, -1, left], [0, 2000, 600, -1, left],
                       [0, 2000, 250, -1, left], [1, 2000, 250, left, left]]
    # A $250 transfer still fits; the next day starts over at 00:00 UTC.
    assert fixed(fr, "user:42:transfers", 2000, DAY, "COST", 250, "ALIGN") == \
        [0, 2000, 0, -1, left]
    clock.advance(seconds=left)
    assert fixed(fr, "user:42:transfers", 2000, DAY, "COST", 350, "ALIGN") == \
        [0, 2000, 1650, -1, DAY]


def test_ten_sms_a_day_aligned(fserver, fr):
    clock = fserver.clock
    clock.set(clock.ns - clock.ns % (DAY * SEC) + DAY * SEC - 10 * SEC)  # 23:59:50
    got = [fixed(fr, "sms:+15551234", 10, DAY, "ALIGN")[0] for _ in range(11)]
    assert got == [0] * 10 + [1]
    assert fixed(fr, "sms:+15551234", 10, DAY, "ALIGN", "MS") == [1, 10, 0, 10000, 10000]
    clock.advance(seconds=10)
    assert fixed(fr, "sms:+15551234", 10, DAY, "ALIGN") == [0, 10, 9, -1, DAY]


def test_fixed_window_allows_a_2x_burst_at_the_boundary_sliding_does_not(fserver, fr):
    clock = fserver.clock
    clock.set(clock.ns - clock.ns % (60 * SEC) + 60 * SEC - 1)  # 1 ns before a minute
    f = [fixed(fr, "f", 10, 60, "ALIGN")[0] for _ in range(10)]
    s = [sliding(fr, "s", 10, 60)[0] for _ in range(10)]
    clock.advance(ns=1)
    f += [fixed(fr, "f", 10, 60, "ALIGN")[0] for _ in range(10)]
    s += [sliding(fr, "s", 10, 60)[0] for _ in range(10)]
    assert f.count(0) == 20          # 20 allowed within 1 ns
    assert s.count(0) == 10          # the previous minute still weighs in fully


def test_first_hit_window_opens_at_the_first_allowed_request(fserver, fr):
    assert fixed(fr, "fh", 2, 10) == [0, 2, 1, -1, 10]
    fserver.clock.advance(seconds=4)
    assert fixed(fr, "fh", 2, 10) == [0, 2, 0, -1, 6]
    assert fixed(fr, "fh", 2, 10, "MS") == [1, 2, 0, 6000, 6000]
    fserver.clock.advance(seconds=6)            # exactly at the window end
    assert fixed(fr, "fh", 2, 10) == [0, 2, 1, -1, 10]


def test_cost_above_limit_is_denied_with_retry_minus_one_and_creates_no_key(fr):
    assert fixed(fr, "big", 5, 10, "COST", 6) == [1, 5, 5, -1, 0]
    assert sliding(fr, "bigs", 5, 10, "COST", 6)[:4] == [1, 5, 5, -1]
    assert fr.exists("big", "bigs") == 0


def test_refunds_never_go_below_zero(fserver, fr):
    assert fixed(fr, "rf", 5, 10, "COST", 3) == [0, 5, 2, -1, 10]
    assert fixed(fr, "rf", 5, 10, "COST", -10) == [0, 5, 5, -1, 0]
    assert fr.exists("rf") == 0                  # back to fresh: no key
    assert fixed(fr, "rf", 5, 10, "COST", 5) == [0, 5, 0, -1, 10]


def test_peek_changes_nothing_and_creates_no_key(fserver, fr):
    assert fixed(fr, "pk", 3, 10, "PEEK") == [0, 3, 2, -1, 10]
    assert sliding(fr, "pks", 3, 10, "PEEK")[:3] == [0, 3, 2]
    assert fr.dbsize() == 0
    fixed(fr, "pk", 3, 10)
    assert fixed(fr, "pk", 3, 10, "PEEK") == [0, 3, 1, -1, 10]
    assert fixed(fr, "pk", 3, 10) == [0, 3, 1, -1, 10]


def test_keys_disappear_once_fresh_again(fserver, fr):
    fixed(fr, "gone", 3, 5)
    sliding(fr, "gone-s", 3, 5)
    assert fr.type("gone") == b"fixed" and fr.type("gone-s") == b"sliding"
    assert fr.pttl("gone") == 5000
    # As a Redis key of PTTL 5000: it lives through that millisecond.
    fserver.clock.advance(seconds=5)
    assert fr.exists("gone") == 1
    fserver.clock.advance(ms=1)
    assert fr.exists("gone") == 0
    fserver.clock.advance(seconds=5)             # the sliding key: two windows
    assert fr.exists("gone-s") == 0
    assert fr.dbsize() == 0


def test_errors_in_redis_words(fr):
    fr.execute_command("CL.THROTTLE", "gcra-key", 1, 1, 1)
    cases = [
        (("RL.FIXED", "gcra-key", 1, 10), "WRONGTYPE Operation against a key holding the wrong kind of value"),
        (("RL.FIXED", "k", "x", 10), "value is not an integer or out of range"),
        (("RL.FIXED", "k", "+5", 10), "value is not an integer or out of range"),
        (("RL.FIXED", "k", 0, 10), "limit and window must be positive"),
        (("RL.SLIDING", "k", 5, -1), "limit and window must be positive"),
        (("RL.FIXED", "k", 5, 10, "COST"), "syntax error"),
        (("RL.FIXED", "k", 5, 10, "COST", "1.5"), "value is not an integer or out of range"),
        (("RL.SLIDING", "k", 5, 10, "ALIGN"), "syntax error"),
        (("RL.FIXED", "k", 5, 9223372036854775807), "window or cost too large: time would overflow"),
        (("RL.FIXED", "k", 5), "wrong number of arguments for 'rl.fixed' command"),
    ]
    for args, text in cases:
        with pytest.raises(redis.ResponseError) as e:
            fr.execute_command(*args)
        assert str(e.value) == text, args
    assert fr.ping()


def _hammer(server, command, key, args, threads=50, per_thread=10):
    barrier = threading.Barrier(threads)
    allowed = []
    errors = []

    def worker():
        try:
            c = server.client()
            c.ping()
            barrier.wait(timeout=20)
            allowed.append(sum(1 for _ in range(per_thread)
                               if c.execute_command(command, key, *args)[0] == 0))
        except Exception as e:
            errors.append(repr(e))
            barrier.abort()

    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors
    return sum(allowed)


@pytest.mark.parametrize("command,args,limit", [
    ("RL.FIXED", (37, 3600), 37),
    ("RL.FIXED", (100, 3600, "COST", 3, "ALIGN"), 33),
    ("RL.SLIDING", (41, 3600), 41),
])
def test_fifty_clients_get_exactly_the_limit(fserver, command, args, limit):
    assert _hammer(fserver, command, "hammer", args) == limit
