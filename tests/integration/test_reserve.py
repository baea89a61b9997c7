"""CL.THROTTLE's RESERVE max_wait on the fake clock: a request allowed within
the bound is admitted now with its slot reserved and told how long to wait;
callers that each proceed after their answered wait proceed at the
configured rate; past the bound a request is refused as without the option
and changes nothing; PEEK changes nothing; the reserved TAT survives kill -9
with the journal and reaches a replica."""
from harness import resp_command
from test_journal import kill9, start
from test_replication import caught_up, follow


def int5(reply):
    """The five integers of a CL.THROTTLE reply."""
    assert reply.startswith(b"*5\r\n"), reply
    return [int(x[1:]) for x in reply.split(b"\r\n")[1:6]]


def pipeline(c, commands):
    """Send every command at once; their replies, in order."""
    c.send(b"".join(resp_command(*args) for args in commands))
    return [c.reply_bytes() for _ in commands]


def key_state(c, key):
    return c.command("GET", key), c.command("PTTL", key)


def test_callers_that_sleep_their_wait_proceed_at_the_configured_rate(fserver):
    """10,000 requests arrive at 125/s in batches of 50 on a 100/s limit
    (RESERVE 2000 MS): the queue of reserved slots stays full, so the
    callers proceed one emission interval (10 ms) apart."""
    c = fserver.raw()
    count, period_s, bound_ms = 100, 1, 2000
    batch, gap_ms, total = 50, 400, 10000
    proceed_ms = []
    refused = 0
    start_ms = fserver.clock.ns // 1000000
    for b in range(total // batch):
        now_ms = fserver.clock.ns // 1000000 - start_ms
        replies = pipeline(c, [("CL.THROTTLE", "q", 0, count, period_s,
                                "RESERVE", bound_ms, "MS")] * batch)
        for reply in replies:
            limited, limit, remaining, wait, reset = int5(reply)
            assert limit == 1
            if limited:
                assert wait > bound_ms           # refused only past the bound
                refused += 1
                continue
            assert wait == -1 or 0 < wait <= bound_ms
            proceed_ms.append(now_ms + max(wait, 0))
        fserver.clock.advance(ms=gap_ms)
    assert refused > 0                           # the bound was reached
    assert len(set(proceed_ms)) == len(proceed_ms)   # one caller per slot
    proceed_ms.sort()
    gaps = {b - a for a, b in zip(proceed_ms, proceed_ms[1:])}
    assert gaps == {1000 * period_s // count}
    rate = (len(proceed_ms) - 1) / ((proceed_ms[-1] - proceed_ms[0]) / 1000)
    assert abs(rate - count / period_s) <= 0.01 * count / period_s


def test_slots_in_seconds_then_a_refusal_that_changes_nothing(fserver):
    """One per 10 s, RESERVE 30: waits 10, 20, 30 s, then refused with the
    retry_after of today; the key is untouched by the refusal."""
    c = fserver.raw()
    args = ("CL.THROTTLE", "s", 0, 1, 10, "RESERVE", 30)
    assert int5(c.command(*args)) == [0, 1, 0, -1, 10]
    assert int5(c.command(*args)) == [0, 1, 0, 10, 20]
    assert int5(c.command(*args)) == [0, 1, 0, 20, 30]
    assert int5(c.command(*args)) == [0, 1, 0, 30, 40]
    before = key_state(c, "s")
    assert int5(c.command(*args)) == [1, 1, 0, 40, 40]
    assert int5(c.command("CL.THROTTLE", "s", 0, 1, 10)) == [1, 1, 0, 40, 40]
    assert key_state(c, "s") == before


def test_ms_answers_milliseconds_and_peek_changes_nothing(fserver):
    c = fserver.raw()
    args = ("CL.THROTTLE", "user", 0, 10, 1, "RESERVE", 500, "MS")
    assert int5(c.command(*args)) == [0, 1, 0, -1, 100]
    fserver.clock.advance(ms=30)
    assert int5(c.command(*args)) == [0, 1, 0, 70, 170]
    before = key_state(c, "user")
    assert int5(c.command(*args, "PEEK")) == [0, 1, 0, 170, 270]
    assert key_state(c, "user") == before
    # Options in any order and case; the quantity before them.
    assert int5(c.command("CL.THROTTLE", "user", 0, 10, 1, 1, "ms",
                          "reserve", 500, "peek")) == [0, 1, 0, 170, 270]
    assert key_state(c, "user") == before


def test_a_quantity_that_never_fits_is_refused_as_today(fserver):
    c = fserver.raw()
    assert int5(c.command("CL.THROTTLE", "k", 1, 1, 1, 3, "RESERVE",
                          9223372036854775807)) == [1, 2, 2, -1, 0]
    assert c.command("EXISTS", "k") == b":0\r\n"


def test_bad_max_wait_errors(fserver):
    c = fserver.raw()
    base = ("CL.THROTTLE", "e", 0, 1, 1)
    range_err = b"-ERR value is out of range, must be positive\r\n"
    int_err = b"-ERR value is not an integer or out of range\r\n"
    assert c.command(*base, "RESERVE", -1) == range_err
    assert c.command(*base, "RESERVE", "x") == int_err
    assert c.command(*base, "RESERVE", "1.5") == int_err
    assert c.command(*base, "RESERVE", "99999999999999999999") == int_err
    assert c.command(*base, 1, "RESERVE", -5, "MS") == range_err
    # RESERVE without its value is a stray argument, as redis-cell says.
    assert c.command(*base, 1, "RESERVE").startswith(
        b"-Cell error: Store error: Usage: cl.throttle")
    assert c.command(*base, "RESERVE").startswith(
        b"-Cell error: Store error: Couldn't parse as integer: RESERVE")
    assert c.command("EXISTS", "e") == b":0\r\n"
    # The largest bound in ms cannot overflow: it is as good as forever.
    assert int5(c.command(*base, "RESERVE", 9223372036854775807,
                          "MS")) == [0, 1, 0, -1, 1000]
    assert int5(c.command(*base, "RESERVE", 9223372036854775807,
                          "MS")) == [0, 1, 0, 1000, 2000]


def test_a_reservation_survives_kill_9_and_reaches_a_replica(start_daemon,
                                                             tmp_path):
    work = str(tmp_path / "data")
    p = start(start_daemon, work, "--appendfsync", "always")
    r = start_daemon(fakeclock=True, name="replica")
    r.clock.set(p.clock.ns)
    follow(r, p)
    c = p.raw()
    args = ("CL.THROTTLE", "j", 0, 10, 1, "RESERVE", 1000, "MS")
    for wait in (-1, 100, 200, 300):
        assert int5(c.command(*args))[3] == wait
    value = c.command("GET", "j")
    assert caught_up(p, r)
    assert r.raw().command("GET", "j") == value

    kill9(p)
    p2 = start(start_daemon, work, clock_ns=p.clock.ns)
    c2 = p2.raw()
    assert c2.command("GET", "j") == value
    assert c2.command("PTTL", "j") == b":400\r\n"
    assert int5(c2.command(*args)) == [0, 1, 0, 400, 500]


def test_the_worked_example_of_docs_commands_md(fserver):
    c = fserver.raw()
    args = ("CL.THROTTLE", "user", 0, 10, 1, "RESERVE", 500, "MS")
    steps = [(0, (), [0, 1, 0, -1, 100]), (0, (), [0, 1, 0, 100, 200]),
             (30, (), [0, 1, 0, 170, 270]),
             (0, ("PEEK",), [0, 1, 0, 270, 370]),
             (0, (), [0, 1, 0, 270, 370]), (0, (), [0, 1, 0, 370, 470]),
             (0, (), [0, 1, 0, 470, 570]), (0, (), [1, 1, 0, 570, 570]),
             (100, (), [0, 1, 0, 470, 570])]
    for advance_ms, extra, want in steps:
        fserver.clock.advance(ms=advance_ms)
        assert int5(c.command(*args, *extra)) == want
