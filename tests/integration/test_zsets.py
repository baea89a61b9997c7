"""Redis's sorted sets: the tricky replies byte for byte against Debian's
redis-server 7.0.15 in RESP2 and RESP3 (errors and their precedence, score
formatting, range parsing, the listpack/skiplist switch that ZSCAN shows),
a journal replayed after kill -9 equal to what was acknowledged, and the
journal's bytes per ZADD independent of the set's size."""
import os
import random

import pytest

import harness
from test_journal import fingerprint, incr_files, kill9, start


def conversation(port, proto, steps):
    """Each step's reply bytes, on one fresh connection (after FLUSHALL)."""
    conn = harness.RawConn(port)
    try:
        conn.command("FLUSHALL")
        if proto == 3:
            conn.command("HELLO", "3")
        return [conn.command(*s) for s in steps]
    finally:
        conn.close()


def big(key, n, prefix="m", score=lambda i: i):
    """ZADD commands filling key with n members (in pieces of 500)."""
    out = []
    for lo in range(0, n, 500):
        args = ["ZADD", key]
        for i in range(lo, min(n, lo + 500)):
            args += [repr(score(i)), "%s%d" % (prefix, i)]
        out.append(args)
    return out


SMALL = [["ZADD", "z", "1", "a", "2", "b", "2", "c", "3.5", "d", "-inf", "neg",
          "+inf", "pos", "0", "zero", "-0", "mzero", "1e3", "k", "0.1", "tenth"]]
LEX = [["ZADD", "l", "0", "a", "0", "b", "0", "c", "0", "d", "0", "e", "0", "aa",
        "0", "", "0", "\x00", "0", "\xff"]]
WRONG = [["SET", "s", "x"]]

CASES = {
    # ZADD options and their errors, in Redis's order.
    "zadd-basic": SMALL + [["ZRANGE", "z", "0", "-1", "WITHSCORES"],
                           ["ZCARD", "z"]],
    "zadd-syntax": [["ZADD", "z", "1"], ["ZADD", "z", "NX"], ["ZADD", "z", "1", "a", "2"],
                    ["ZADD", "z", "nx", "xx", "1", "a"], ["ZADD", "z", "gt", "lt", "1", "a"],
                    ["ZADD", "z", "nx", "gt", "1", "a"], ["ZADD", "z", "nx", "lt", "1", "a"],
                    ["ZADD", "z", "incr", "1", "a", "2", "b"],
                    ["ZADD", "z", "nx", "xx", "x", "a"], ["ZADD", "z", "x", "a"],
                    ["ZADD", "z", "1", "a", "nan", "b"], ["ZADD", "z", "foo", "1", "a"],
                    ["ZADD", "s", "1", "a"], ["ZADD", "s", "x", "a"], ["ZADD", "s", "1"],
                    ["ZADD", "z", "1", "a", "bad", "b"], ["EXISTS", "z"]],
    "zadd-score-forms": [["ZADD", "z", " 1", "a"], ["ZADD", "z", "1 ", "a"],
                         ["ZADD", "z", "0x10", "a"], ["ZADD", "z", "1e3", "a"],
                         ["ZADD", "z", "1e400", "a"], ["ZADD", "z", "-1e400", "a"],
                         ["ZADD", "z", "inf", "a"], ["ZADD", "z", "-Infinity", "b"],
                         ["ZADD", "z", "nan", "a"], ["ZADD", "z", "", "a"],
                         ["ZADD", "z", "1e-400", "a"], ["ZADD", "z", ".5", "c"],
                         ["ZADD", "z", "5.", "d"], ["ZADD", "z", "+3", "e"],
                         ["ZADD", "z", "0.1", "f"], ["ZADD", "z", "1.7976931348623157e308", "g"],
                         ["ZADD", "z", "4.9e-324", "h"], ["ZADD", "z", "123456789012345678", "i"],
                         ["ZRANGE", "z", "0", "-1", "WITHSCORES"]],
    "zadd-flags": SMALL + WRONG + [
        ["ZADD", "z", "XX", "10", "a", "10", "new"], ["ZADD", "z", "NX", "10", "a", "10", "new"],
        ["ZADD", "z", "CH", "10", "a", "10", "new2", "2", "b"],
        ["ZADD", "z", "GT", "CH", "0", "a", "100", "b", "5", "new3"],
        ["ZADD", "z", "LT", "CH", "0", "a", "100", "b"],
        ["ZADD", "z", "XX", "GT", "CH", "1000", "a", "1000", "nope"],
        ["ZADD", "nokey", "XX", "1", "a"], ["EXISTS", "nokey"],
        ["ZADD", "nokey", "XX", "INCR", "1", "a"],
        ["ZADD", "z", "INCR", "5", "a"], ["ZADD", "z", "INCR", "NX", "5", "a"],
        ["ZADD", "z", "INCR", "XX", "5", "nope"], ["ZADD", "z", "INCR", "GT", "-1", "a"],
        ["ZADD", "z", "INCR", "LT", "-1", "a"], ["ZADD", "z", "INCR", "0", "a"],
        ["ZADD", "z", "INCR", "-inf", "pos"], ["ZSCORE", "z", "pos"],
        ["ZADD", "z", "INCR", "1", "new9"],
        ["ZRANGE", "z", "0", "-1", "WITHSCORES"]],
    "zincrby": SMALL + WRONG + [
        ["ZINCRBY", "z", "1.5", "a"], ["ZINCRBY", "z", "x", "a"], ["ZINCRBY", "z", "1", "fresh"],
        ["ZINCRBY", "z", "nx", "a"], ["ZINCRBY", "z", "incr", "a"],
        ["ZINCRBY", "z", "-inf", "pos"], ["ZINCRBY", "z", "0.1", "tenth"],
        ["ZINCRBY", "z", "1e308", "k"], ["ZINCRBY", "z", "1e308", "k"],
        ["ZINCRBY", "s", "1", "a"], ["ZINCRBY", "s", "x", "a"], ["ZINCRBY", "new", "2", "m"],
        ["ZRANGE", "z", "0", "-1", "WITHSCORES"]],
    "zrem-zscore-zmscore-zrank": SMALL + WRONG + [
        ["ZREM", "z", "a", "a", "nope", "b"], ["ZREM", "nokey", "a"], ["ZREM", "s", "a"],
        ["ZSCORE", "z", "c"], ["ZSCORE", "z", "a"], ["ZSCORE", "nokey", "a"],
        ["ZSCORE", "z", "neg"], ["ZSCORE", "z", "mzero"], ["ZSCORE", "s", "a"],
        ["ZMSCORE", "z", "c", "nope", "pos", "tenth"], ["ZMSCORE", "nokey", "a", "b"],
        ["ZMSCORE", "s", "a"], ["ZRANK", "z", "c"], ["ZRANK", "z", "nope"],
        ["ZREVRANK", "z", "c"], ["ZRANK", "nokey", "a"], ["ZRANK", "s", "a"],
        ["ZREVRANK", "z", "neg"], ["ZCARD", "z"], ["ZCARD", "nokey"], ["ZCARD", "s"],
        ["ZREM", "z", "c", "d", "neg", "pos", "zero", "mzero", "k", "tenth"],
        ["EXISTS", "z"], ["ZREM", "z", "x"]],
    "zrange-rank": SMALL + WRONG + [
        ["ZRANGE", "z", "0", "2"], ["ZRANGE", "z", "-3", "-1", "WITHSCORES"],
        ["ZRANGE", "z", "5", "1"], ["ZRANGE", "z", "-100", "100"], ["ZRANGE", "z", "100", "200"],
        ["ZRANGE", "z", "0", "-1", "REV", "WITHSCORES"], ["ZRANGE", "z", "1", "3", "rev"],
        ["ZREVRANGE", "z", "0", "1", "WITHSCORES"], ["ZREVRANGE", "z", "0", "1", "REV"],
        ["ZREVRANGE", "z", "0", "1", "LIMIT", "0", "1"], ["ZRANGE", "z", "a", "1"],
        ["ZRANGE", "z", "0", "1", "LIMIT", "0", "1"], ["ZRANGE", "z", "0", "1", "LIMIT", "0", "-1"],
        ["ZRANGE", "z", "0", "1", "LIMIT", "x", "1"], ["ZRANGE", "z", "0", "1", "LIMIT", "0"],
        ["ZRANGE", "z", "0", "1", "BOGUS"], ["ZRANGE", "nokey", "0", "-1"],
        ["ZRANGE", "s", "0", "-1"], ["ZRANGE", "s", "x", "-1"],
        ["ZRANGE", "z", "0", "-1", "BYSCORE", "BYLEX"], ["ZRANGE", "z", "0", "-1", "REV", "REV"],
        ["ZRANGE", "z", "0", "9999999999999999999"]],
    "zrange-score": SMALL + WRONG + [
        ["ZRANGEBYSCORE", "z", "-inf", "+inf", "WITHSCORES"], ["ZRANGEBYSCORE", "z", "(1", "3.5"],
        ["ZRANGEBYSCORE", "z", "(1", "(3.5"], ["ZRANGEBYSCORE", "z", "2", "2"],
        ["ZRANGEBYSCORE", "z", "(2", "2"], ["ZRANGEBYSCORE", "z", "3", "1"],
        ["ZRANGEBYSCORE", "z", "x", "1"], ["ZRANGEBYSCORE", "z", "1", "nan"],
        ["ZRANGEBYSCORE", "z", "((1", "2"], ["ZRANGEBYSCORE", "z", " 1", "2"],
        ["ZRANGEBYSCORE", "z", "", "2"], ["ZRANGEBYSCORE", "z", "(", "2"],
        ["ZRANGEBYSCORE", "z", "0x1", "0x2"], ["ZRANGEBYSCORE", "z", "1e400", "inf"],
        ["ZRANGEBYSCORE", "z", "-inf", "inf", "LIMIT", "1", "2"],
        ["ZRANGEBYSCORE", "z", "-inf", "inf", "LIMIT", "1", "-1"],
        ["ZRANGEBYSCORE", "z", "-inf", "inf", "LIMIT", "-1", "2"],
        ["ZRANGEBYSCORE", "z", "-inf", "inf", "LIMIT", "100", "2"],
        ["ZRANGEBYSCORE", "z", "-inf", "inf", "LIMIT", "0", "0"],
        ["ZRANGEBYSCORE", "z", "-inf", "inf", "LIMIT", "3", "3", "WITHSCORES"],
        ["ZRANGEBYSCORE", "z", "-inf", "inf", "REV"], ["ZRANGEBYSCORE", "z", "-inf", "inf", "BYSCORE"],
        ["ZREVRANGEBYSCORE", "z", "+inf", "-inf", "WITHSCORES"],
        ["ZREVRANGEBYSCORE", "z", "3.5", "(1"], ["ZREVRANGEBYSCORE", "z", "1", "3"],
        ["ZREVRANGEBYSCORE", "z", "inf", "-inf", "LIMIT", "2", "3"],
        ["ZRANGE", "z", "(1", "+inf", "BYSCORE", "LIMIT", "1", "2", "WITHSCORES"],
        ["ZRANGE", "z", "+inf", "(1", "BYSCORE", "REV", "LIMIT", "1", "2", "WITHSCORES"],
        ["ZRANGE", "z", "1", "x", "BYSCORE"], ["ZRANGEBYSCORE", "nokey", "x", "1"],
        ["ZRANGEBYSCORE", "nokey", "1", "2"], ["ZRANGEBYSCORE", "s", "1", "2"],
        ["ZRANGEBYSCORE", "s", "x", "2"], ["ZRANGEBYSCORE", "z", "x", "2", "LIMIT", "a", "b"],
        ["ZCOUNT", "z", "-inf", "+inf"], ["ZCOUNT", "z", "(1", "3.5"], ["ZCOUNT", "z", "3", "1"],
        ["ZCOUNT", "z", "x", "1"], ["ZCOUNT", "nokey", "1", "2"], ["ZCOUNT", "s", "1", "2"],
        ["ZCOUNT", "s", "x", "2"], ["ZCOUNT", "z", "-0", "0"]],
    "zrange-lex": LEX + WRONG + [
        ["ZRANGEBYLEX", "l", "-", "+"], ["ZRANGEBYLEX", "l", "[a", "[c"],
        ["ZRANGEBYLEX", "l", "(a", "(c"], ["ZRANGEBYLEX", "l", "[aa", "+"],
        ["ZRANGEBYLEX", "l", "+", "-"], ["ZRANGEBYLEX", "l", "-", "-"],
        ["ZRANGEBYLEX", "l", "[", "[a"], ["ZRANGEBYLEX", "l", "(", "+"],
        ["ZRANGEBYLEX", "l", "a", "+"], ["ZRANGEBYLEX", "l", "", "+"],
        ["ZRANGEBYLEX", "l", "-x", "+"], ["ZRANGEBYLEX", "l", "[c", "[a"],
        ["ZRANGEBYLEX", "l", "-", "+", "LIMIT", "2", "3"],
        ["ZRANGEBYLEX", "l", "-", "+", "LIMIT", "-1", "3"],
        ["ZRANGEBYLEX", "l", "-", "+", "WITHSCORES"],
        ["ZREVRANGEBYLEX", "l", "+", "-"], ["ZREVRANGEBYLEX", "l", "[c", "(a"],
        ["ZREVRANGEBYLEX", "l", "+", "-", "LIMIT", "1", "2"],
        ["ZRANGE", "l", "[b", "[d", "BYLEX"], ["ZRANGE", "l", "[d", "[b", "BYLEX", "REV"],
        ["ZRANGE", "l", "-", "+", "BYLEX", "WITHSCORES"],
        ["ZRANGE", "l", "-", "+", "BYLEX", "LIMIT", "1", "1"],
        ["ZLEXCOUNT", "l", "-", "+"], ["ZLEXCOUNT", "l", "[b", "(e"], ["ZLEXCOUNT", "l", "x", "+"],
        ["ZLEXCOUNT", "nokey", "-", "+"], ["ZLEXCOUNT", "s", "-", "+"],
        ["ZLEXCOUNT", "s", "x", "+"], ["ZRANGEBYLEX", "s", "-", "+"],
        ["ZRANGEBYLEX", "nokey", "-", "+"]],
    "zremrange": SMALL + WRONG + [
        ["ZREMRANGEBYSCORE", "z", "(1", "2"], ["ZREMRANGEBYSCORE", "z", "x", "2"],
        ["ZREMRANGEBYSCORE", "z", "5", "1"], ["ZREMRANGEBYSCORE", "nokey", "1", "2"],
        ["ZREMRANGEBYSCORE", "s", "1", "2"], ["ZREMRANGEBYSCORE", "s", "x", "2"],
        ["ZREMRANGEBYRANK", "z", "0", "0"], ["ZREMRANGEBYRANK", "z", "-2", "-1"],
        ["ZREMRANGEBYRANK", "z", "5", "1"], ["ZREMRANGEBYRANK", "z", "x", "1"],
        ["ZREMRANGEBYRANK", "s", "0", "1"], ["ZRANGE", "z", "0", "-1", "WITHSCORES"],
        ["ZREMRANGEBYRANK", "z", "0", "-1"], ["EXISTS", "z"]] + LEX + [
        ["ZREMRANGEBYLEX", "l", "[b", "(d"], ["ZREMRANGEBYLEX", "l", "x", "+"],
        ["ZREMRANGEBYLEX", "l", "+", "-"], ["ZREMRANGEBYLEX", "s", "-", "+"],
        ["ZRANGE", "l", "0", "-1"], ["ZREMRANGEBYLEX", "l", "-", "+"], ["EXISTS", "l"]],
    "zpop": SMALL + WRONG + [
        ["ZPOPMIN", "z"], ["ZPOPMAX", "z"], ["ZPOPMIN", "z", "2"], ["ZPOPMAX", "z", "2"],
        ["ZPOPMIN", "z", "0"], ["ZPOPMIN", "z", "-1"], ["ZPOPMIN", "z", "x"],
        ["ZPOPMIN", "z", "1", "2"], ["ZPOPMIN", "nokey"], ["ZPOPMIN", "nokey", "0"],
        ["ZPOPMIN", "nokey", "-1"], ["ZPOPMIN", "s"], ["ZPOPMIN", "s", "-1"],
        ["ZPOPMAX", "z", "100"], ["EXISTS", "z"], ["ZPOPMAX", "z"]],
    "zscan-small": SMALL + WRONG + [
        ["ZSCAN", "z", "0"], ["ZSCAN", "z", "0", "MATCH", "*e*"], ["ZSCAN", "z", "0", "COUNT", "1"],
        ["ZSCAN", "z", "x"], ["ZSCAN", "z", "0", "COUNT", "0"], ["ZSCAN", "z", "0", "COUNT", "x"],
        ["ZSCAN", "z", "0", "TYPE", "zset"], ["ZSCAN", "z", "0", "MATCH"],
        ["ZSCAN", "nokey", "0"], ["ZSCAN", "nokey", "x"], ["ZSCAN", "s", "0"],
        ["ZSCAN", "s", "x"], ["ZSCAN", "nokey", "0", "BOGUS", "1"]],
    # A listpack keeps an integral score within 2^62 as an integer: ZSCAN
    # shows its digits where %.17g would not.
    "zscan-integral-scores": [
        ["ZADD", "z", "-0", "a", "288230376151711744", "b", "4611686018427387904", "c",
         "-4611686018427387904", "d", "9223372036854775808", "e", "1e300", "f", "3.5", "g"],
        ["ZSCAN", "z", "0"], ["ZSCORE", "z", "b"], ["ZRANGE", "z", "0", "-1", "WITHSCORES"]],
    # The listpack's bounds: 128 members, 64 bytes; ZSCAN's one-shot shows it.
    "zscan-128-members": big("z", 128) + [["ZSCAN", "z", "0", "COUNT", "5"]],
    "zscan-64-byte": [["ZADD", "z", "1", "x" * 64, "2", "b"], ["ZSCAN", "z", "0", "COUNT", "1"]],
    # (A skiplist's ZSCAN order is its table's: one member, or a MATCH.)
    "zscan-first-long-member": [["ZADD", "z", "1", "x" * 65], ["ZSCAN", "z", "0"],
                                ["ZADD", "z", "2", "b"], ["ZSCAN", "z", "0", "MATCH", "b"],
                                ["ZADD", "z", "-0", "c"], ["ZSCORE", "z", "c"],
                                ["ZADD", "p", "-0", "c"], ["ZSCORE", "p", "c"],
                                ["ZADD", "p", "INCR", "-0", "d"], ["ZSCAN", "p", "0"]],
    # WATCH hears of a write only when it changed something, as Redis's
    # signalModifiedKey() follows added/updated/deleted.
    "watch": SMALL + [
        ["WATCH", "z"], ["ZADD", "z", "XX", "5", "nope"], ["ZREM", "z", "nope"],
        ["ZADD", "z", "GT", "0", "a"], ["ZADD", "z", "1", "a"], ["ZINCRBY", "z", "0", "a"],
        ["ZREMRANGEBYSCORE", "z", "100", "200"], ["ZREMRANGEBYRANK", "z", "50", "60"],
        ["ZREMRANGEBYLEX", "z", "[zz", "+"], ["ZPOPMIN", "z", "0"], ["ZPOPMIN", "nokey"],
        ["MULTI"], ["PING"], ["EXEC"],
        ["WATCH", "z"], ["ZADD", "z", "9", "a"], ["MULTI"], ["PING"], ["EXEC"],
        ["WATCH", "z"], ["ZPOPMAX", "z"], ["MULTI"], ["PING"], ["EXEC"],
        ["WATCH", "z"], ["ZREMRANGEBYRANK", "z", "0", "0"], ["MULTI"], ["PING"], ["EXEC"],
        ["MULTI"], ["ZADD", "t", "1", "a"], ["ZPOPMIN", "t"], ["ZADD", "t", "x", "a"],
        ["ZRANGE", "t", "0", "-1"], ["EXEC"], ["EXISTS", "t"]],
    "zrange-arity": [["ZADD", "z"], ["ZADD", "z", "1"], ["ZRANGE", "z", "0"],
                     ["ZSCORE", "z"], ["ZRANK", "z", "a", "WITHSCORE"], ["ZCARD"],
                     ["ZPOPMIN"], ["ZSCAN", "z"], ["ZMSCORE", "z"], ["ZINCRBY", "z", "1"]],
}

# Sets past the listpack, ranks and ranges read from the skiplist.
LARGE = big("z", 300, score=lambda i: (i * 7919) % 1000 / 4) + [
    ["ZRANGE", "z", "100", "120", "WITHSCORES"], ["ZRANGE", "z", "-20", "-1", "REV"],
    ["ZRANK", "z", "m17"], ["ZREVRANK", "z", "m17"], ["ZCOUNT", "z", "(10", "100"],
    ["ZRANGEBYSCORE", "z", "(10", "100", "WITHSCORES", "LIMIT", "5", "7"],
    ["ZREVRANGEBYSCORE", "z", "100", "(10", "LIMIT", "5", "7"],
    ["ZREMRANGEBYSCORE", "z", "50", "(60"], ["ZREMRANGEBYRANK", "z", "10", "19"],
    ["ZPOPMIN", "z", "3"], ["ZPOPMAX", "z", "3"], ["ZCARD", "z"],
    ["ZADD", "z", "INCR", "1000", "m100"], ["ZRANGE", "z", "-2", "-1", "WITHSCORES"],
    ["ZRANGE", "z", "0", "-1", "WITHSCORES"]]
CASES["large"] = LARGE
CASES["large-lex"] = big("l", 400, score=lambda i: 0) + [
    ["ZRANGEBYLEX", "l", "[m1", "(m2", "LIMIT", "3", "10"], ["ZLEXCOUNT", "l", "[m1", "(m2"],
    ["ZREVRANGEBYLEX", "l", "(m5", "[m3", "LIMIT", "10", "5"],
    ["ZREMRANGEBYLEX", "l", "[m3", "(m4"], ["ZLEXCOUNT", "l", "-", "+"],
    ["ZRANGE", "l", "0", "-1"]]


@pytest.fixture(scope="module")
def both(redis_server, module_daemon):
    return redis_server, module_daemon


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("name", sorted(CASES))
def test_same_bytes_as_redis(both, name, proto):
    ref, cg = both
    steps = CASES[name]
    want = conversation(ref.port, proto, steps)
    got = conversation(cg.port, proto, steps)
    for step, w, g in zip(steps, want, got):
        assert g == w, step


def test_zscan_of_a_large_set_visits_every_member_once(both):
    """A skiplist's ZSCAN walks the dict by cursor: the union of the steps
    is the set (bucket orders differ between servers, so compare sets)."""
    ref, cg = both
    for d in (ref, cg):
        c = harness.RawConn(d.port)
        c.command("FLUSHALL")
        for step in big("z", 1000, score=lambda i: i / 3):
            c.command(*step)
        seen, cursor = {}, b"0"
        while True:
            reply = c.command("ZSCAN", "z", cursor, "COUNT", "37")
            parts = reply.split(b"\r\n")
            cursor = parts[2]
            items = parts[5:-1:2]
            for m, s in zip(items[0::2], items[1::2]):
                seen[m] = s
            if cursor == b"0":
                break
        c.close()
        assert len(seen) == 1000
        assert seen[b"m3"] == b"1" and seen[b"m1"] == b"0.33333333333333331"


def test_random_ops_equal_redis(both):
    """Thousands of random writes and reads over both encodings."""
    ref, cg = both
    rnd = random.Random(28)
    conns = [harness.RawConn(d.port) for d in both]
    try:
        for c in conns:
            c.command("FLUSHALL")
        for _ in range(3000):
            key = rnd.choice(["a", "b"])
            pool = 40 if key == "a" else 400
            m = "m%d" % rnd.randrange(pool)
            s = rnd.choice(["1", "2.5", "-3", "(2", "inf", "-inf", str(rnd.randrange(100))])
            plain = s.lstrip("(")
            op = rnd.randrange(12)
            if op < 4:
                cmd = ["ZADD", key] + rnd.choice([[], ["NX"], ["XX"], ["GT", "CH"], ["LT"],
                                                  ["INCR"]]) + [plain, m]
            elif op == 4:
                cmd = ["ZINCRBY", key, plain, m]
            elif op == 5:
                cmd = ["ZREM", key, m, "m%d" % rnd.randrange(pool)]
            elif op == 6:
                cmd = ["ZRANGEBYSCORE", key, s, "+inf", "WITHSCORES", "LIMIT",
                       str(rnd.randrange(5)), str(rnd.randrange(-1, 10))]
            elif op == 7:
                cmd = ["ZRANK", key, m]
            elif op == 8:
                cmd = ["ZREMRANGEBYRANK", key, str(rnd.randrange(-10, 10)),
                       str(rnd.randrange(-10, 10))]
            elif op == 9:
                cmd = ["ZCOUNT", key, s, "(" + str(rnd.randrange(100))]
            elif op == 10:
                cmd = ["ZPOPMIN" if rnd.random() < 0.5 else "ZPOPMAX", key,
                       str(rnd.randrange(3))]
            else:
                cmd = ["ZRANGE", key, str(rnd.randrange(-20, 20)), str(rnd.randrange(-20, 20)),
                       "WITHSCORES"]
            want, got = [c.command(*cmd) for c in conns]
            assert got == want, cmd
        for key in ("a", "b"):
            want, got = [c.command("ZRANGE", key, "0", "-1", "WITHSCORES") for c in conns]
            assert got == want
    finally:
        for c in conns:
            c.close()


# ---- the journal ---------------------------------------------------------------

def test_journal_replay_after_kill9_equals_acknowledged_state(start_daemon, tmp_path):
    work = str(tmp_path / "data")
    d = start(start_daemon, work)
    c = d.raw()
    for step in big("big", 600, score=lambda i: i % 50):
        c.command(*step)
    c.command("ZADD", "small", "1", "a", "2", "b", "3", "c")
    c.command("ZADD", "small", "INCR", "5", "a")
    c.command("ZREM", "small", "b")
    c.command("ZADD", "long", "1", "y" * 100)
    c.command("ZREMRANGEBYSCORE", "big", "10", "(20")
    c.command("ZREMRANGEBYRANK", "big", "0", "9")
    c.command("ZPOPMAX", "big", "5")
    c.command("ZINCRBY", "big", "0.5", "m599")
    c.command("ZADD", "big", "GT", "CH", "1000", "m1", "-5", "m2")
    c.command("ZADD", "gone", "1", "x")
    c.command("ZPOPMIN", "gone")
    c.command("MULTI")
    c.command("ZADD", "small", "9", "z")
    c.command("ZREM", "big", "m3")
    c.command("EXEC")
    want = fingerprint(d)
    assert (0, b"gone") not in want
    kill9(d)
    d2 = start(start_daemon, work)
    assert fingerprint(d2) == want
    # The encodings came back too: ZSCAN answers the small one whole.
    c2 = d2.raw()
    assert c2.command("ZSCAN", "small", "0", "COUNT", "1").startswith(b"*2\r\n$1\r\n0\r\n*6")
    assert c2.command("ZSCAN", "long", "0") == (
        b"*2\r\n$1\r\n0\r\n*2\r\n$100\r\n" + b"y" * 100 + b"\r\n$1\r\n1\r\n")


def test_a_set_made_and_emptied_in_one_pass_replays(start_daemon, tmp_path):
    """Made and emptied in one transaction: no key, before and after."""
    work = str(tmp_path / "data")
    d = start(start_daemon, work)
    c = d.raw()
    c.command("ZADD", "keep", "1", "a")
    c.command("MULTI")
    c.command("ZADD", "t", "1", "a", "2", "b")
    c.command("ZADD", "t", "INCR", "1", "a")
    c.command("ZREMRANGEBYRANK", "t", "0", "-1")
    c.command("EXEC")
    want = fingerprint(d)
    assert (0, b"t") not in want
    kill9(d)
    assert fingerprint(start(start_daemon, work)) == want


def journal_growth(d, key, n_before, adds):
    """Bytes the incr file grows by for `adds` ZADDs of one new member each
    to key after it holds n_before members."""
    c = d.raw()
    for step in big(key, n_before):
        c.command(*step)
    c.command("PING")
    path = incr_files(d)[-1]
    before = os.path.getsize(path)
    for i in range(adds):
        assert c.command("ZADD", key, "1.5", "new%06d" % i) == b":1\r\n"
    c.command("PING")
    return os.path.getsize(path) - before


def test_journal_bytes_per_zadd_do_not_depend_on_the_set_size(start_daemon, tmp_path):
    d = start(start_daemon, str(tmp_path / "data"), "--auto-aof-rewrite-percentage", "0")
    small = journal_growth(d, "small", 10, 200)
    large = journal_growth(d, "large", 100000, 200)
    assert small == large, (small, large)
    assert small < 200 * 100
