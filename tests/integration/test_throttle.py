"""CL.THROTTLE as a user sees it (shared/spec/cl-throttle.md, commands.md),
on a daemon whose wall clock is the conformance fake clock: every test starts
at a fresh whole second (fserver) and moves time forward explicitly."""
import threading

import pytest
import redis

from harness import resp_command

USAGE = (b"-Cell error: Store error: Usage: cl.throttle <key> <max_burst> "
         b"<count per period> <period> [<quantity>]\r\n")
PARSE = b"-Cell error: Store error: Couldn't parse as integer: "
ZERO = b"-Cell error: Store error: Zero rates are not supported\r\n"
EXPIRE_ERR = b"-Cell error: Store error: Error while setting key expire\r\n"


def ints(*values):
    """The wire form of an array of integers."""
    return b"*%d\r\n" % len(values) + b"".join(b":%d\r\n" % v for v in values)


def throttle(r, key, *args):
    return r.execute_command("CL.THROTTLE", key, *args)


# ---- documented examples -----------------------------------------------------

def test_readme_example(fr):
    assert throttle(fr, "user123", 15, 30, 60) == [0, 16, 15, -1, 2]


def test_readme_example_bytes_on_the_wire(fserver):
    conn = fserver.raw()
    assert conn.command("CL.THROTTLE", "user123", "15", "30", "60") == ints(0, 16, 15, -1, 2)


def test_one_token_per_second_burst_four(fserver, fr):
    clock = fserver.clock
    seq = [throttle(fr, "k", 4, 1, 1) for _ in range(6)]
    assert seq == [[0, 5, 4, -1, 1], [0, 5, 3, -1, 2], [0, 5, 2, -1, 3],
                   [0, 5, 1, -1, 4], [0, 5, 0, -1, 5], [1, 5, 0, 1, 5]]
    clock.advance(1)
    assert throttle(fr, "k", 4, 1, 1) == [0, 5, 0, -1, 5]
    assert throttle(fr, "k", 4, 1, 1) == [1, 5, 0, 1, 5]
    clock.advance(0.25)
    assert throttle(fr, "k", 4, 1, 1) == [1, 5, 0, 1, 5]      # 0.75 s rounds up to 1
    assert throttle(fr, "k", 4, 1, 1, "MS") == [1, 5, 0, 750, 4750]
    clock.advance(0.75)
    assert throttle(fr, "k", 4, 1, 1) == [0, 5, 0, -1, 5]


def test_e2e_example_burst_zero(fserver, fr):
    assert throttle(fr, "user123", 0, 1, 2, 1) == [0, 1, 0, -1, 2]
    assert throttle(fr, "user123", 0, 1, 2, 1) == [1, 1, 0, 2, 2]
    fserver.clock.advance(2)
    assert throttle(fr, "user123", 0, 1, 2, 1) == [0, 1, 0, -1, 2]


def test_bucket_refills_completely_after_reset_after(fserver, fr):
    for _ in range(5):
        throttle(fr, "full", 4, 1, 1)
    fserver.clock.advance(5)
    assert throttle(fr, "full", 4, 1, 1) == [0, 5, 4, -1, 1]


def test_quantity_takes_several_tokens(fr):
    assert throttle(fr, "q", 9, 10, 10, 3) == [0, 10, 7, -1, 3]
    assert throttle(fr, "q", 9, 10, 10, 7) == [0, 10, 0, -1, 10]
    assert throttle(fr, "q", 9, 10, 10, 1) == [1, 10, 0, 1, 10]


def test_quantity_over_the_limit_can_never_pass(fr):
    assert throttle(fr, "big", 1, 2, 3, 5) == [1, 2, 2, -1, 0]
    assert fr.exists("big") == 0


def test_quantity_zero_on_a_fresh_key_reports_the_full_limit(fserver, fr):
    assert throttle(fr, "z", 1, 2, 3, 0) == [0, 2, 2, -1, 0]
    # redis-cell writes the key with TTL 0: it lives for the current ms only.
    assert fr.exists("z") == 1
    assert fr.pttl("z") == 0
    fserver.clock.advance(ms=1)
    assert fr.exists("z") == 0


def test_state_is_per_key(fr):
    assert throttle(fr, "a", 0, 1, 60) == [0, 1, 0, -1, 60]
    assert throttle(fr, "a", 0, 1, 60) == [1, 1, 0, 60, 60]
    assert throttle(fr, "b", 0, 1, 60) == [0, 1, 0, -1, 60]


def test_command_name_is_case_insensitive(fr):
    assert fr.execute_command("cl.throttle", "ci", 4, 1, 60) == [0, 5, 4, -1, 60]
    assert fr.execute_command("Cl.ThRoTtLe", "ci", 4, 1, 60) == [0, 5, 3, -1, 120]


# ---- errors, exactly ---------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ("CL.THROTTLE",),
    ("CL.THROTTLE", "k"),
    ("CL.THROTTLE", "k", "1"),
    ("CL.THROTTLE", "k", "1", "2"),
    ("CL.THROTTLE", "k", "1", "2", "3", "4", "5"),
    ("CL.THROTTLE", "k", "1", "2", "3", "4", "5", "6"),
    ("CL.THROTTLE", "k", "1", "2", "3", "PEEK", "5"),
])
def test_wrong_argument_count_answers_the_usage_error(fserver, args):
    conn = fserver.raw()
    assert conn.command(*args) == USAGE
    assert conn.command("PING") == b"+PONG\r\n"       # the connection stays usable


@pytest.mark.parametrize("args,bad", [
    (("abc", "1", "1"), b"abc"),
    (("1", "abc", "1"), b"abc"),
    (("1", "1", "abc"), b"abc"),
    (("1", "1", "1", "abc"), b"abc"),
    (("x", "y", "z"), b"x"),                 # the first failure is reported
    (("", "1", "1"), b""),
    ((" 1", "1", "1"), b" 1"),
    (("1 ", "1", "1"), b"1 "),
    (("1.5", "1", "1"), b"1.5"),
    (("1e3", "1", "1"), b"1e3"),
    (("0x10", "1", "1"), b"0x10"),
    (("--1", "1", "1"), b"--1"),
    (("+", "1", "1"), b"+"),
    (("9223372036854775808", "1", "1"), b"9223372036854775808"),
    (("-9223372036854775809", "1", "1"), b"-9223372036854775809"),
    (("1", "1", "1", "FOO"), b"FOO"),        # not an option: parsed as quantity
])
def test_unparsable_integer_is_echoed_verbatim(fserver, args, bad):
    conn = fserver.raw()
    assert conn.command("CL.THROTTLE", "k", *args) == PARSE + bad + b"\r\n"
    assert conn.command("DBSIZE") == b":0\r\n"


def test_parse_error_with_line_breaks_stays_one_line(fserver):
    conn = fserver.raw()
    assert conn.command("CL.THROTTLE", "k", "1\r\n2", "1", "1") == PARSE + b"1  2\r\n"
    assert conn.command("PING") == b"+PONG\r\n"


def test_long_unparsable_argument_is_echoed_whole(fserver):
    conn = fserver.raw()
    arg = b"a" * 300
    assert conn.command("CL.THROTTLE", "k", arg, "1", "1") == PARSE + arg + b"\r\n"


def test_non_utf8_number_is_a_parse_error_not_a_crash(fserver):
    conn = fserver.raw()
    assert conn.command("CL.THROTTLE", "k", b"\xff\xfe", "1", "1") == PARSE + b"\xff\xfe\r\n"
    assert fserver.ping_fresh()


@pytest.mark.parametrize("args,want", [
    (("+4", "1", "60"), ints(0, 5, 4, -1, 60)),
    (("004", "1", "60"), ints(0, 5, 4, -1, 60)),
    (("4", "+1", "060"), ints(0, 5, 4, -1, 60)),
    (("-0", "1", "60"), ints(0, 1, 0, -1, 60)),
])
def test_rust_integer_syntax_is_accepted(fserver, args, want):
    conn = fserver.raw()
    assert conn.command("CL.THROTTLE", "k", *args) == want


@pytest.mark.parametrize("args", [("1", "0", "3"), ("1", "2", "0"), ("1", "1000000001", "1")])
def test_zero_rates_are_refused_and_create_no_key(fserver, args):
    conn = fserver.raw()
    assert conn.command("CL.THROTTLE", "zr", *args) == ZERO
    assert conn.command("EXISTS", "zr") == b":0\r\n"


def test_error_replies_through_redis_py(fr):
    with pytest.raises(redis.ResponseError) as e:
        throttle(fr, "k", "abc", 1, 1)
    assert str(e.value) == "Cell error: Store error: Couldn't parse as integer: abc"
    with pytest.raises(redis.ResponseError) as e:
        throttle(fr, "k", 1)
    assert str(e.value) == USAGE[1:-2].decode()


@pytest.mark.parametrize("args,want", [
    (("k", "-1", "1", "1"), ints(1, 0, 0, -1, 0)),
    (("k", "5", "-1", "1"), ints(1, 6, 0, -1, 0)),
    (("k", "5", "-1", "-1"), ints(0, 6, 5, -1, 1)),
    (("k", "9223372036854775807", "1", "1"), ints(1, -9223372036854775808, 0, -1, 0)),
    (("k", "1", "1", "9223372036854775807"), ints(1, 2, 0, -1, 0)),
    (("k", "10", "2000000", "1"), ints(0, 11, 9223372036854775807, -1, 0)),
    (("k", "10", "1000000000", "1"), ints(0, 11, 0, -1, 0)),
    (("k", "6000", "6000", "1"), ints(0, 6001, 6024, -1, 0)),
])
def test_special_inputs_behave_as_redis_cell(fserver, args, want):
    conn = fserver.raw()
    assert conn.command("CL.THROTTLE", *args) == want


def test_negative_ttl_errors_after_writing_a_persistent_key(fserver, fr):
    conn = fserver.raw()
    assert conn.command("CL.THROTTLE", "neg", "5", "1", "10", "-1") == EXPIRE_ERR
    assert fr.exists("neg") == 1
    assert fr.pttl("neg") == -1
    assert fr.ttl("neg") == -1


def test_ttl_of_minus_one_ms_makes_the_key_persistent(fserver, fr):
    assert throttle(fr, "persist", 5, 1000, 1, -1) == [0, 6, 7, -1, 0]
    assert fr.pttl("persist") == -1
    fserver.clock.advance(3600)
    assert fr.exists("persist") == 1
    assert fr.delete("persist") == 1


# ---- PEEK and MS -------------------------------------------------------------------

def test_peek_on_a_fresh_key_creates_nothing(fr):
    assert throttle(fr, "p", 4, 1, 60, "PEEK") == [0, 5, 4, -1, 60]
    assert fr.dbsize() == 0
    assert fr.exists("p") == 0
    assert fr.get("p") is None


def test_peek_answers_what_the_next_request_will_get_and_changes_nothing(fr):
    assert throttle(fr, "p", 4, 1, 60) == [0, 5, 4, -1, 60]
    tat, pttl = fr.get("p"), fr.pttl("p")
    for _ in range(3):
        assert throttle(fr, "p", 4, 1, 60, "PEEK") == [0, 5, 3, -1, 120]
    assert fr.get("p") == tat
    assert fr.pttl("p") == pttl
    assert throttle(fr, "p", 4, 1, 60) == [0, 5, 3, -1, 120]


def test_peek_of_a_denied_request(fr):
    for _ in range(2):
        throttle(fr, "pd", 1, 1, 60)
    assert throttle(fr, "pd", 1, 1, 60, "PEEK") == [1, 2, 0, 60, 120]
    assert throttle(fr, "pd", 1, 1, 60, "peek", "ms") == [1, 2, 0, 60000, 120000]


def test_ms_gives_milliseconds(fserver, fr):
    assert throttle(fr, "m", 4, 1, 1, "MS") == [0, 5, 4, -1, 1000]
    assert throttle(fr, "m", 4, 1, 1, 2, "MS") == [0, 5, 2, -1, 3000]
    fserver.clock.advance(ms=250)
    assert throttle(fr, "m", 4, 1, 1, 3, "ms") == [1, 5, 2, 750, 2750]
    assert throttle(fr, "m", 4, 1, 1, 3) == [1, 5, 2, 1, 3]


def test_options_in_any_order_and_case(fr):
    assert throttle(fr, "o", 4, 1, 60, "MS", "PEEK") == [0, 5, 4, -1, 60000]
    assert throttle(fr, "o", 4, 1, 60, 2, "peek", "Ms") == [0, 5, 3, -1, 120000]
    assert fr.exists("o") == 0


# ---- the key, as Redis commands see it ---------------------------------------------

def test_get_returns_the_tat_in_nanoseconds(fserver, fr):
    t0 = fserver.clock.ns
    throttle(fr, "g", 4, 1, 1)
    assert fr.get("g") == str(t0 + 1000000000).encode()
    throttle(fr, "g", 4, 1, 1, 3)
    assert fr.get("g") == str(t0 + 4000000000).encode()


def test_the_tat_stays_exact_when_its_expiry_is_moved(fserver, fr):
    # The record keeps the TAT next to the expiry CL.THROTTLE sets with it;
    # commands that move the expiry away keep both exact, to the ns and
    # the ms, and a later CL.THROTTLE carries on from the same TAT.
    t0 = fserver.clock.ns
    assert throttle(fr, "e", 4, 1, 60) == [0, 5, 4, -1, 60]
    tat = str(t0 + 60 * 10 ** 9).encode()
    assert fr.pexpire("e", 5000) is True
    assert (fr.get("e"), fr.pttl("e")) == (tat, 5000)
    assert fr.persist("e") is True
    assert (fr.get("e"), fr.pttl("e")) == (tat, -1)
    assert fr.getex("e", px=90000) == tat
    assert (fr.get("e"), fr.pttl("e")) == (tat, 90000)
    assert fr.expireat("e", t0 // 10 ** 9 + 10 ** 10) is True
    assert fr.get("e") == tat
    assert fr.execute_command("EXPIRETIME", "e") == t0 // 10 ** 9 + 10 ** 10
    assert throttle(fr, "e", 4, 1, 60) == [0, 5, 3, -1, 120]
    assert (fr.get("e"), fr.pttl("e")) == (str(t0 + 120 * 10 ** 9).encode(), 120000)
    assert fr.incrby("e", 7) == t0 + 120 * 10 ** 9 + 7
    assert fr.pttl("e") == 120000


def test_get_of_a_missing_key_is_nil(fserver):
    assert fserver.raw().command("GET", "nothing") == b"$-1\r\n"


def test_pttl_ttl_exists_del_like_redis(fserver, fr):
    assert throttle(fr, "t", 4, 1, 60) == [0, 5, 4, -1, 60]
    assert fr.pttl("t") == 60000
    assert fr.ttl("t") == 60
    assert fr.exists("t") == 1
    assert fr.exists("t", "t", "missing") == 2
    fserver.clock.advance(10.6)
    assert fr.pttl("t") == 49400
    assert fr.ttl("t") == 49                # Redis rounds the ms to the nearest second
    assert fr.delete("t", "missing") == 1
    assert fr.exists("t") == 0
    assert fr.pttl("t") == -2
    assert fr.ttl("t") == -2
    assert fr.delete("t") == 0
    assert throttle(fr, "t", 4, 1, 60) == [0, 5, 4, -1, 60]   # DEL resets the limit


def test_key_lives_until_its_last_millisecond(fserver, fr):
    throttle(fr, "edge", 0, 1, 10)
    fserver.clock.advance(10)
    assert fr.pttl("edge") == 0
    assert fr.exists("edge") == 1
    fserver.clock.advance(ms=1)
    assert fr.exists("edge") == 0
    assert fr.pttl("edge") == -2


def test_denied_request_does_not_touch_the_key(fserver, fr):
    throttle(fr, "d", 0, 1, 10)
    fserver.clock.advance(4)
    before = (fr.get("d"), fr.pttl("d"))
    assert throttle(fr, "d", 0, 1, 10) == [1, 1, 0, 6, 6]
    assert (fr.get("d"), fr.pttl("d")) == before


@pytest.mark.parametrize("key", [b"bin\x00key", b"\xff\xfe\x00\xff", b"", b"sp ace\r\nkey",
                                 "ключ-🚀".encode()])
def test_binary_keys(fr, key):
    assert throttle(fr, key, 4, 1, 60) == [0, 5, 4, -1, 60]
    assert throttle(fr, key, 4, 1, 60) == [0, 5, 3, -1, 120]
    assert fr.exists(key) == 1
    assert fr.get(key).isdigit()
    if key:
        assert fr.exists(key[:-1]) == 0
        assert fr.exists(key + b"\x00") == 0
    assert fr.dbsize() == 1
    assert fr.delete(key) == 1
    assert fr.dbsize() == 0


def test_large_key(fr):
    key = b"K" * 100000
    assert throttle(fr, key, 4, 1, 60) == [0, 5, 4, -1, 60]
    assert throttle(fr, key, 4, 1, 60) == [0, 5, 3, -1, 120]
    assert fr.exists(key) == 1 and fr.exists(key[:-1]) == 0
    assert fr.delete(key) == 1


def test_wall_clock_stepping_back_does_not_reset_or_extend_limits(start_daemon):
    d = start_daemon(fakeclock=True)
    r = d.client()
    assert throttle(r, "back", 0, 1, 10) == [0, 1, 0, -1, 10]
    d.clock.set(d.clock.ns - 3600 * 10**9, backwards=True)     # NTP steps back an hour
    # "now" never goes below the last "now" used: as if no time had passed.
    assert throttle(r, "back", 0, 1, 10) == [1, 1, 0, 10, 10]
    assert r.pttl("back") == 10000
    assert throttle(r, "fresh", 0, 1, 10) == [0, 1, 0, -1, 10]


# ---- atomicity ---------------------------------------------------------------------

def _race(server, key, args, threads, per_thread):
    """threads connections, released together by a barrier, each sending
    per_thread requests; returns every reply."""
    barrier = threading.Barrier(threads)
    replies = [[] for _ in range(threads)]
    errors = []

    def worker(i):
        try:
            c = server.client()
            c.ping()                    # connected before the start signal
            barrier.wait(timeout=20)
            for _ in range(per_thread):
                replies[i].append(c.execute_command("CL.THROTTLE", key, *args))
        except Exception as e:          # reported below
            errors.append(repr(e))
            barrier.abort()

    ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors
    assert not any(t.is_alive() for t in ts)
    return [r for rs in replies for r in rs]


@pytest.mark.parametrize("key", ["race0", "race1", "race2", "race3", "race4"])
def test_ten_clients_at_once_on_a_limit_of_five_get_exactly_five(fserver, key):
    replies = _race(fserver, key, (4, 1, 60), threads=10, per_thread=1)
    assert len(replies) == 10
    assert sum(1 for r in replies if r[0] == 0) == 5
    assert sorted(r[2] for r in replies if r[0] == 0) == [0, 1, 2, 3, 4]
    assert all(r == [1, 5, 0, 60, 300] for r in replies if r[0] == 1)


def test_fifty_clients_twenty_requests_each_get_exactly_the_limit(fserver):
    replies = _race(fserver, "k2", (99, 1, 3600), threads=50, per_thread=20)
    assert len(replies) == 1000
    allowed = [r for r in replies if r[0] == 0]
    assert len(allowed) == 100
    assert sorted(r[2] for r in allowed) == list(range(100))


def test_pipelined_requests_on_one_key_count_one_by_one(fr):
    p = fr.pipeline(transaction=False)
    for _ in range(12):
        p.execute_command("CL.THROTTLE", "pipe", 9, 1, 60)
    out = p.execute()
    assert [r[0] for r in out] == [0] * 10 + [1, 1]
    assert [r[2] for r in out[:10]] == list(range(9, -1, -1))


def test_throttle_reply_is_an_array_under_resp3(fserver):
    conn = fserver.raw()
    conn.send(b"HELLO 3\r\n")
    assert conn.reply_bytes().startswith(b"%7\r\n")
    assert conn.command("CL.THROTTLE", "r3", "15", "30", "60") == ints(0, 16, 15, -1, 2)
    conn.send(resp_command("CL.THROTTLE", "r3", "15", "30", "60", "PEEK"))
    assert conn.reply_bytes() == ints(0, 16, 14, -1, 4)
