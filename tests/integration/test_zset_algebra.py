"""Redis's sorted-set algebra (ZUNION, ZINTER, ZDIFF, their STORE forms,
ZINTERCARD), ZRANGESTORE, ZRANDMEMBER and HRANDFIELD against Debian's
redis-server 7.0.15, byte for byte in RESP2 and RESP3: errors in Redis's
order, WEIGHTS and AGGREGATE with inf, -inf, -0 and NaN results, the
STORE forms replacing any type and its expiry or deleting an empty
result, the encodings ZSCAN shows, the random commands' determined
answers (and the shape, count and membership of the random ones), key
specs and COMMAND GETKEYS, a script's ZINTERSTORE ... WEIGHTS 1 0,
-CROSSSLOT, maxmemory, and the results after kill -9; sets as inputs."""
import pytest

import harness
import redis_cases
from test_journal import fingerprint, kill9, start
from test_zsets import big, conversation

A = [["ZADD", "a", "1", "x", "2", "y", "3", "z"]]
B = [["ZADD", "b", "4", "y", "5", "z", "6", "w"]]
INF = [["ZADD", "c", "-inf", "x", "inf", "y", "0", "q", "-0", "mz"]]
WRONG = [["SET", "s", "str"], ["HSET", "h", "f", "v"], ["RPUSH", "l", "e"]]
ALL = A + B + INF + WRONG

SETS = [["SADD", "si", "3", "1", "2"], ["SADD", "ss", "x", "w", "q", "7"]]

CASES = {
    # Sets as inputs: each member scored 1, as Redis reads them; an
    # intset and a set of strings, in every form and with weights.
    "set-inputs": ALL + SETS + [
        ["ZUNION", "3", "a", "si", "ss", "WITHSCORES"],
        ["ZUNION", "2", "ss", "b", "WEIGHTS", "2.5", "1", "AGGREGATE", "MAX", "WITHSCORES"],
        ["ZINTER", "2", "ss", "a", "WEIGHTS", "3", "1", "WITHSCORES"],
        ["ZINTER", "2", "si", "ss", "WITHSCORES"], ["ZDIFF", "2", "ss", "a", "WITHSCORES"],
        ["ZDIFF", "2", "a", "ss"], ["ZINTERCARD", "2", "ss", "b"],
        ["ZINTERCARD", "2", "si", "ss", "LIMIT", "1"],
        ["ZUNIONSTORE", "d", "2", "si", "ss"], ["ZRANGE", "d", "0", "-1", "WITHSCORES"],
        ["ZINTERSTORE", "d", "2", "ss", "b", "AGGREGATE", "MIN"], ["TYPE", "d"],
        ["ZDIFFSTORE", "d", "1", "si"], ["ZRANGE", "d", "0", "-1", "WITHSCORES"],
        ["ZRANGESTORE", "d", "si", "0", "-1"], ["ZRANDMEMBER", "si"]],
    "union-inter-diff": ALL + [
        ["ZUNION", "2", "a", "b"], ["ZUNION", "2", "a", "b", "WITHSCORES"],
        ["ZINTER", "2", "a", "b", "WITHSCORES"], ["ZDIFF", "2", "a", "b", "WITHSCORES"],
        ["ZDIFF", "2", "b", "a"], ["ZDIFF", "2", "a", "a", "WITHSCORES"],
        ["ZDIFF", "3", "a", "nokey", "b", "WITHSCORES"], ["ZDIFF", "1", "nokey"],
        ["ZUNION", "2", "a", "nokey", "WITHSCORES"], ["ZINTER", "2", "a", "nokey"],
        ["ZUNION", "1", "a", "WITHSCORES", "WITHSCORES"],
        ["ZUNION", "2", "a", "b", "withscores", "aggregate", "max"],
        ["ZINTER", "3", "a", "b", "a", "WITHSCORES"]],
    "weights-aggregate": ALL + [
        ["ZUNION", "2", "a", "b", "WEIGHTS", "2", "3", "WITHSCORES"],
        ["ZINTER", "2", "a", "b", "WEIGHTS", "2", "3", "AGGREGATE", "MIN", "WITHSCORES"],
        ["ZUNION", "2", "a", "b", "AGGREGATE", "MAX", "WITHSCORES"],
        ["ZUNION", "2", "a", "b", "AGGREGATE", "sum", "WEIGHTS", "0.5", "-1", "WITHSCORES"],
        ["ZUNION", "1", "a", "WEIGHTS", "1", "WEIGHTS", "2", "WITHSCORES"],
        ["ZUNION", "2", "a", "b", "WEIGHTS", "1"], ["ZUNION", "2", "a", "b", "WEIGHTS", "1", "x"],
        ["ZUNION", "2", "a", "b", "WEIGHTS", "1", "nan"],
        ["ZUNION", "2", "a", "b", "WEIGHTS", "1", " 1"],
        ["ZUNION", "2", "a", "b", "AGGREGATE", "avg"], ["ZUNION", "2", "a", "b", "AGGREGATE"],
        ["ZDIFF", "1", "a", "WEIGHTS", "2"], ["ZDIFF", "1", "a", "AGGREGATE", "SUM"],
        ["ZINTER", "2", "a", "b", "LIMIT", "1"], ["ZUNION", "2", "a", "b", "BOGUS"]],
    # inf * 0 and inf - inf are NaN: Redis makes them 0 in a SUM; MIN and
    # MAX keep the other side; a skiplist keeps -0, a listpack does not.
    "inf-nan-zero": ALL + [
        ["ZUNION", "2", "c", "c", "WITHSCORES"],
        ["ZUNION", "2", "c", "c", "WEIGHTS", "1", "-1", "WITHSCORES"],
        ["ZINTER", "2", "c", "c", "WEIGHTS", "1", "-1", "WITHSCORES"],
        ["ZINTER", "2", "c", "c", "WEIGHTS", "1", "-1", "AGGREGATE", "MIN", "WITHSCORES"],
        ["ZINTER", "2", "c", "c", "WEIGHTS", "1", "-1", "AGGREGATE", "MAX", "WITHSCORES"],
        ["ZINTER", "3", "c", "c", "c", "WEIGHTS", "1", "0", "inf", "WITHSCORES"],
        ["ZUNION", "3", "a", "b", "c", "WEIGHTS", "1", "0", "inf", "WITHSCORES"],
        ["ZUNION", "1", "a", "WEIGHTS", "-0", "WITHSCORES"],
        ["ZUNION", "1", "c", "WEIGHTS", "0", "WITHSCORES"],
        ["ZUNIONSTORE", "out", "1", "c", "WEIGHTS", "-1"], ["ZRANGE", "out", "0", "-1", "WITHSCORES"],
        ["ZINTER", "2", "a", "c", "WEIGHTS", "0", "0", "WITHSCORES"],
        ["ZADD", "f", "0.1", "p", "0.2", "q"], ["ZADD", "g", "0.2", "p", "0.1", "q"],
        ["ZUNION", "3", "f", "g", "f", "WEIGHTS", "1e16", "1", "-1e16", "WITHSCORES"]],
    "numkeys-and-types": ALL + [
        ["ZUNION", "0", "a"], ["ZUNION", "-1", "a"], ["ZUNION", "x", "a"],
        ["ZUNION", "3", "a", "b"], ["ZUNION", "99999999999999999999", "a"],
        ["ZINTER", "0", "a"], ["ZDIFF", "0", "a"], ["ZINTERCARD", "0", "a"],
        ["ZUNIONSTORE", "d", "0", "a"], ["ZINTERSTORE", "d", "0", "a"],
        ["ZDIFFSTORE", "d", "0", "a"], ["ZUNIONSTORE", "d", "5", "a"],
        ["ZUNION", "2", "a", "s"], ["ZUNION", "2", "h", "a"], ["ZINTER", "2", "a", "l"],
        ["ZDIFF", "2", "a", "s"], ["ZINTERCARD", "2", "s", "a"],
        ["ZUNION", "2", "a", "s", "WEIGHTS", "x"], ["ZUNIONSTORE", "d", "1", "s"],
        ["ZUNION", "1"], ["ZUNIONSTORE", "d", "1"], ["ZINTERCARD", "1"]],
    "store": ALL + [
        ["ZUNIONSTORE", "d", "2", "a", "b"], ["ZRANGE", "d", "0", "-1", "WITHSCORES"],
        ["TTL", "d"], ["SET", "d2", "x", "EX", "100"],
        ["ZINTERSTORE", "d2", "2", "a", "b", "WEIGHTS", "1", "0"],
        ["TTL", "d2"], ["TYPE", "d2"], ["ZRANGE", "d2", "0", "-1", "WITHSCORES"],
        ["EXPIRE", "d2", "100"], ["ZINTERSTORE", "d2", "2", "a", "b"], ["TTL", "d2"],
        ["ZINTERSTORE", "d2", "2", "a", "nokey"], ["EXISTS", "d2"],
        ["ZDIFFSTORE", "d", "2", "b", "a"], ["ZRANGE", "d", "0", "-1", "WITHSCORES"],
        ["ZDIFFSTORE", "d", "2", "a", "a"], ["EXISTS", "d"],
        ["ZUNIONSTORE", "nope", "1", "nokey"], ["EXISTS", "nope"],
        ["ZUNIONSTORE", "s", "1", "a"], ["TYPE", "s"], ["ZUNIONSTORE", "h", "2", "a", "b"],
        ["TYPE", "h"], ["ZINTERSTORE", "l", "1", "a", "AGGREGATE", "MIN"], ["TYPE", "l"],
        ["ZUNIONSTORE", "a", "2", "a", "b", "AGGREGATE", "MIN"],
        ["ZRANGE", "a", "0", "-1", "WITHSCORES"],
        ["ZUNIONSTORE", "d", "2", "a", "b", "WITHSCORES"],
        ["ZDIFFSTORE", "d", "2", "a", "b", "WEIGHTS", "1", "1"],
        ["ZDIFFSTORE", "d", "1", "a", "AGGREGATE", "MIN"],
        ["ZUNIONSTORE", "d", "1", "a", "WEIGHTS", "x"], ["ZRANGE", "d", "0", "-1"],
        ["ZINTERSTORE", "d", "1", "s"], ["TYPE", "d"]],
    "intercard": ALL + [
        ["ZINTERCARD", "2", "a", "b"], ["ZINTERCARD", "2", "a", "b", "LIMIT", "1"],
        ["ZINTERCARD", "2", "a", "b", "LIMIT", "0"], ["ZINTERCARD", "2", "a", "b", "LIMIT", "5"],
        ["ZINTERCARD", "2", "a", "b", "LIMIT", "-1"], ["ZINTERCARD", "2", "a", "b", "LIMIT", "x"],
        ["ZINTERCARD", "2", "a", "b", "LIMIT"], ["ZINTERCARD", "2", "a", "b", "WITHSCORES"],
        ["ZINTERCARD", "2", "a", "b", "WEIGHTS", "1", "1"],
        ["ZINTERCARD", "2", "a", "b", "AGGREGATE", "MIN"],
        ["ZINTERCARD", "1", "nokey"], ["ZINTERCARD", "3", "a", "b", "c"],
        ["ZINTERCARD", "2", "a", "a", "LIMIT", "2"]],
    # Past the listpack's bounds (128 members, 64 bytes) the result is a
    # skiplist, as ZSCAN shows (one member, or MATCH: a table's order).
    "encodings": big("big", 200, score=lambda i: i % 7 - 3) + [
        ["ZADD", "small", "0", "a", "1", "b"], ["ZADD", "long", "1", "L" * 70, "2", "short"],
        ["ZUNIONSTORE", "d", "1", "small", "WEIGHTS", "-1"], ["ZSCAN", "d", "0"],
        ["ZUNIONSTORE", "d", "2", "big", "small", "WEIGHTS", "-1", "1"],
        ["ZSCAN", "d", "0", "MATCH", "m00*", "COUNT", "1000"],
        ["ZRANGE", "d", "0", "-1", "WITHSCORES"],
        ["ZUNIONSTORE", "d", "1", "long"], ["ZSCAN", "d", "0", "MATCH", "s*", "COUNT", "1000"],
        ["ZINTERSTORE", "d", "2", "big", "big", "WEIGHTS", "-1", "0"],
        ["ZRANGE", "d", "0", "9", "WITHSCORES"], ["ZCARD", "d"],
        ["ZDIFFSTORE", "d", "2", "big", "small"], ["ZCARD", "d"],
        ["ZINTER", "2", "big", "big", "WEIGHTS", "1", "inf", "WITHSCORES"]],
    "zrangestore": [["ZADD", "src", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"]] + WRONG + [
        ["ZRANGESTORE", "dst", "src", "0", "-1"], ["ZRANGE", "dst", "0", "-1", "WITHSCORES"],
        ["ZRANGESTORE", "dst", "src", "1", "2", "REV"], ["ZRANGE", "dst", "0", "-1", "WITHSCORES"],
        ["ZRANGESTORE", "dst", "src", "2", "4", "BYSCORE"],
        ["ZRANGESTORE", "dst", "src", "(2", "+inf", "BYSCORE", "LIMIT", "1", "2"],
        ["ZRANGE", "dst", "0", "-1", "WITHSCORES"],
        ["ZRANGESTORE", "dst", "src", "+inf", "-inf", "BYSCORE", "REV", "LIMIT", "0", "2"],
        ["ZRANGE", "dst", "0", "-1", "WITHSCORES"],
        ["ZRANGESTORE", "dst", "src", "[b", "(e", "BYLEX"], ["ZRANGE", "dst", "0", "-1"],
        ["ZRANGESTORE", "dst", "src", "+", "-", "BYLEX", "REV", "LIMIT", "1", "10"],
        ["ZRANGE", "dst", "0", "-1"], ["ZRANGESTORE", "dst", "src", "0", "-1", "WITHSCORES"],
        ["ZRANGESTORE", "dst", "src", "0", "-1", "LIMIT", "0", "1"],
        ["ZRANGESTORE", "dst", "src", "a", "b", "BYSCORE"],
        ["ZRANGESTORE", "dst", "src", "a", "b", "BYLEX"], ["ZRANGESTORE", "dst", "src", "x", "1"],
        ["ZRANGESTORE", "dst", "src", "0", "1", "BOGUS"], ["ZRANGESTORE", "dst", "s", "0", "-1"],
        ["ZRANGESTORE", "dst", "s", "x", "-1"], ["ZRANGESTORE", "s", "src", "0", "-1"],
        ["TYPE", "s"], ["SET", "t", "v", "EX", "50"], ["ZRANGESTORE", "t", "src", "0", "0"],
        ["TTL", "t"], ["ZRANGESTORE", "dst", "nokey", "0", "-1"], ["EXISTS", "dst"],
        ["ZRANGESTORE", "t", "src", "10", "20"], ["EXISTS", "t"],
        ["ZRANGESTORE", "t", "src", "5", "1", "BYSCORE"], ["ZRANGESTORE", "t", "src", "[z", "+", "BYLEX"],
        ["ZRANGESTORE", "src", "src", "1", "-1"], ["ZRANGE", "src", "0", "-1", "WITHSCORES"],
        ["ZRANGESTORE", "dst", "src", "0"]] + big("big", 200, score=lambda i: -1 if i % 3 else 0) + [
        ["ZRANGESTORE", "dst", "big", "0", "-1", "REV"], ["ZCARD", "dst"],
        ["ZSCAN", "dst", "0", "MATCH", "m1", "COUNT", "1000"],
        ["ZUNIONSTORE", "neg", "1", "big", "WEIGHTS", "-1"],
        ["ZRANGESTORE", "dst", "neg", "0", "-1"], ["ZSCAN", "dst", "0", "MATCH", "m0", "COUNT", "999"],
        ["ZRANGESTORE", "dst", "neg", "-inf", "+inf", "BYSCORE"],
        ["ZSCAN", "dst", "0", "MATCH", "m0", "COUNT", "999"],
        ["ZRANGESTORE", "dst", "neg", "0", "127"], ["ZSCAN", "dst", "0", "MATCH", "m0"]],
    # What Redis determines of a random command: errors, empty answers,
    # and a count of the whole set or more (the set from its highest
    # member; a listpack hash in its order).
    "random-determined": [["ZADD", "z", "1", "a", "2", "b", "-0", "c"],
                          ["HSET", "hh", "f1", "1", "f2", "2", "f0", "0"]] + WRONG + [
        ["ZRANDMEMBER", "nokey"], ["ZRANDMEMBER", "nokey", "5"], ["ZRANDMEMBER", "nokey", "-5"],
        ["ZRANDMEMBER", "nokey", "1", "WITHSCORES"], ["ZRANDMEMBER", "z", "0"],
        ["ZRANDMEMBER", "z", "0", "WITHSCORES"], ["ZRANDMEMBER", "z", "3"],
        ["ZRANDMEMBER", "z", "10", "WITHSCORES"], ["ZRANDMEMBER", "s"], ["ZRANDMEMBER", "s", "1"],
        ["ZRANDMEMBER", "z", "x"], ["ZRANDMEMBER", "nokey", "x"], ["ZRANDMEMBER", "s", "x"],
        ["ZRANDMEMBER", "z", "1", "x"], ["ZRANDMEMBER", "z", "1", "WITHSCORES", "x"],
        ["ZRANDMEMBER", "z", "1.5"], ["ZRANDMEMBER", "z", "-9223372036854775808"],
        ["ZRANDMEMBER", "z", "9223372036854775808"],
        ["ZRANDMEMBER", "z", "-9223372036854770000", "WITHSCORES"],
        ["ZRANDMEMBER", "z", "9223372036854775807", "WITHSCORES"],
        ["ZRANDMEMBER", "z", "4611686018427387904", "WITHSCORES"],
        ["ZRANDMEMBER", "z", "-4611686018427387904", "WITHSCORES"],
        ["ZRANDMEMBER", "z", "4611686018427387903", "WITHSCORES"],
        ["ZRANDMEMBER", "z", "9223372036854775807"], ["ZRANDMEMBER", "z", "3", "withscores"],
        ["HRANDFIELD", "nokey"], ["HRANDFIELD", "nokey", "3"], ["HRANDFIELD", "hh", "0"],
        ["HRANDFIELD", "hh", "3"], ["HRANDFIELD", "hh", "5", "WITHVALUES"],
        ["HRANDFIELD", "hh", "1", "WITHSCORES"], ["HRANDFIELD", "hh", "x"],
        ["HRANDFIELD", "s"], ["HRANDFIELD", "s", "1"], ["HRANDFIELD", "z", "1"],
        ["HRANDFIELD", "hh", "-9223372036854775808"],
        ["HRANDFIELD", "hh", "-9223372036854770000", "WITHVALUES"],
        ["HRANDFIELD", "hh", "1", "2", "3"], ["HRANDFIELD", "nokey", "-3", "WITHVALUES"]]
        + big("bz", 300, score=lambda i: i % 11) + [
        ["ZRANDMEMBER", "bz", "300", "WITHSCORES"], ["ZRANDMEMBER", "bz", "1000"]],
    "script-and-multi": [["ZADD", "sem", "100", "a", "200", "b"],
                         ["ZADD", "owners", "1", "a", "1", "b", "1", "c"],
        ["EVAL", "redis.call('ZINTERSTORE', KEYS[1], 2, KEYS[1], KEYS[2], 'WEIGHTS', 1, 0) "
                 "return redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')", "2", "sem", "owners"],
        ["EVAL", "return redis.call('ZUNION', 2, KEYS[1], KEYS[2], 'WITHSCORES')", "2",
         "sem", "owners"],
        ["EVAL", "return redis.call('ZINTERCARD', 1, KEYS[1])", "1", "sem"],
        ["EVAL", "return redis.call('ZRANDMEMBER', KEYS[1], 5, 'WITHSCORES')", "1", "sem"],
        ["EVAL", "return redis.call('ZRANGESTORE', KEYS[1], KEYS[2], 0, 0)", "2", "d", "sem"],
        ["EVAL", "return redis.pcall('ZUNION', 0, KEYS[1])", "1", "sem"],
        ["EVAL_RO", "return redis.call('ZUNIONSTORE', KEYS[1], 1, KEYS[2])", "2", "d", "sem"],
        ["MULTI"], ["ZUNIONSTORE", "d", "2", "sem", "owners"], ["ZRANGE", "d", "0", "-1"],
        ["ZINTERSTORE", "d", "x", "sem"], ["EXEC"],
        ["WATCH", "d"], ["ZINTERSTORE", "d", "1", "sem"], ["MULTI"], ["PING"], ["EXEC"],
        ["WATCH", "nope"], ["ZINTERSTORE", "nope", "1", "nokey"], ["MULTI"], ["PING"], ["EXEC"],
        ["WATCH", "d"], ["ZINTERSTORE", "d", "1", "nokey"], ["MULTI"], ["PING"], ["EXEC"]],
    "command-keys": [
        ["COMMAND", "INFO", "zunionstore", "zunion", "zinterstore", "zinter", "zdiff",
         "zdiffstore", "zintercard", "zrangestore", "zrandmember", "hrandfield"],
        ["COMMAND", "GETKEYS", "zunionstore", "dst", "2", "a", "b"],
        ["COMMAND", "GETKEYSANDFLAGS", "zunionstore", "dst", "2", "a", "b", "WEIGHTS", "1", "2"],
        ["COMMAND", "GETKEYS", "zunionstore", "dst", "0", "a", "b"],
        ["COMMAND", "GETKEYS", "zunionstore", "dst", "3", "a", "b"],
        ["COMMAND", "GETKEYS", "zinterstore", "dst", "x", "a", "b"],
        ["COMMAND", "GETKEYSANDFLAGS", "zdiffstore", "dst", " 2", "a", "b"],
        ["COMMAND", "GETKEYS", "zunion", "2", "a", "b"], ["COMMAND", "GETKEYS", "zunion", "0", "a"],
        ["COMMAND", "GETKEYS", "zintercard", "1", "a", "LIMIT", "1"],
        ["COMMAND", "GETKEYSANDFLAGS", "zrangestore", "d", "s", "0", "1"],
        ["COMMAND", "GETKEYS", "zrandmember", "k", "1"], ["COMMAND", "GETKEYS", "hrandfield", "k"]],
}
CASES["encodings"] += big("e128", 128) + big("e129", 129) + [
    ["ZUNIONSTORE", "d", "1", "e128"], ["ZSCAN", "d", "0", "COUNT", "1"],
    ["ZRANGESTORE", "d", "e129", "1", "-1"], ["ZSCAN", "d", "0", "COUNT", "1"],
    ["ZUNIONSTORE", "d", "1", "e129"], ["ZSCAN", "d", "0", "MATCH", "m7", "COUNT", "999"],
    ["ZRANGESTORE", "d", "e129", "0", "-1"], ["ZSCAN", "d", "0", "MATCH", "m7", "COUNT", "999"]]


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


@pytest.mark.parametrize("proto", ["2", "3"])
def test_command_docs_match_redis(both, proto):
    """Summary, version, group and arguments as Redis documents them."""
    from test_differential import docs_kept, resp_tree
    ref, cg = both
    conns = [harness.RawConn(d.port) for d in (ref, cg)]
    try:
        for c in conns:
            c.command("HELLO", proto)
        for name in ("zunionstore", "zinterstore", "zdiffstore", "zunion", "zinter",
                     "zdiff", "zintercard", "zrangestore", "zrandmember", "hrandfield"):
            want, got = [resp_tree(c.command("COMMAND", "DOCS", name)) for c in conns]
            assert got[0] == want[0], name
            assert docs_kept(got[1]) == docs_kept(want[1]), name
    finally:
        for c in conns:
            c.close()


def elements(reply):
    """A flat RESP2 array of bulk strings as a list."""
    parts = reply.split(b"\r\n")
    assert parts[0].startswith(b"*"), reply
    return parts[2:-1:2]


def test_random_replies_have_redis_s_shape_count_and_members(both):
    """The random answers themselves differ run to run (in Redis too):
    compare what is determined, on a listpack and on a skiplist set."""
    ref, cg = both
    for d in (ref, cg):
        c = harness.RawConn(d.port)
        c.command("FLUSHALL")
        c.command("ZADD", "small", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")
        for step in big("large", 300):
            c.command(*step)
        c.command("HSET", "hs", *[x for i in range(5) for x in ("f%d" % i, "v%d" % i)])
        c.command("HSET", "hl", *[x for i in range(300) for x in ("f%d" % i, "v%d" % i)])
        for key, size, cmd, word in (("small", 5, "ZRANDMEMBER", "WITHSCORES"),
                                     ("large", 300, "ZRANDMEMBER", "WITHSCORES"),
                                     ("hs", 5, "HRANDFIELD", "WITHVALUES"),
                                     ("hl", 300, "HRANDFIELD", "WITHVALUES")):
            members = set(elements(c.command(cmd, key, str(size))))
            assert len(members) == size
            for count in (1, 2, 4, size - 1, size, size + 3, -1, -3, -2 * size):
                got = elements(c.command(cmd, key, str(count)))
                assert len(got) == min(abs(count), size) if count > 0 else -count
                assert set(got) <= members
                if count > 0:
                    assert len(set(got)) == len(got), (cmd, key, count)
                paired = elements(c.command(cmd, key, str(count), word))
                assert len(paired) == 2 * len(got)
                assert set(paired[0::2]) <= members
            assert c.command(cmd, key).split(b"\r\n")[1] in members
        # RESP3: pairs WITHSCORES / WITHVALUES, a double for a score.
        c.command("HELLO", "3")
        assert c.command("ZRANDMEMBER", "small", "-2", "WITHSCORES").startswith(
            b"*2\r\n*2\r\n$1\r\n")
        assert b"\r\n,"in c.command("ZRANDMEMBER", "small", "1", "WITHSCORES")
        assert c.command("HRANDFIELD", "hs", "-1", "WITHVALUES").startswith(b"*1\r\n*2\r\n$2\r\nf")
        assert c.command("ZRANDMEMBER", "nokey") == b"_\r\n"
        c.close()


def test_a_negative_count_draws_every_member_in_time(server):
    """With repeats, each member of a small set comes up in a large draw
    (the chance that one of 5 never does in 2,000 draws is below 1e-190)."""
    c = server.raw()
    c.command("DEL", "z", "h")
    c.command("ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e")
    c.command("HSET", "h", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5")
    assert set(elements(c.command("ZRANDMEMBER", "z", "-2000"))) == {b"a", b"b", b"c", b"d", b"e"}
    assert set(elements(c.command("HRANDFIELD", "h", "-2000"))) == {b"a", b"b", b"c", b"d", b"e"}


def test_crossslot_in_cluster_mode(start_daemon, tmp_path):
    """The destination and every input must share a slot, as Redis routes
    the STORE forms (hash tags put them together): one node of cluster-mode
    yes owning every slot."""
    port = harness.free_port()
    conf = tmp_path / "cluster.conf"
    conf.write_text("cluster-mode yes\ncluster-node %s 127.0.0.1:%d 0-16383\n"
                    % ("a" * 40, port))
    c = start_daemon(config_file=str(conf), port=port).raw()
    cross = b"-CROSSSLOT Keys in request don't hash to the same slot\r\n"
    assert c.command("ZADD", "{t}a", "1", "x") == b":1\r\n"
    assert c.command("ZUNIONSTORE", "{t}d", "2", "{t}a", "{t}b") == b":1\r\n"
    assert c.command("ZUNIONSTORE", "other", "1", "{t}a") == cross
    assert c.command("ZINTERSTORE", "{t}d", "2", "{t}a", "elsewhere") == cross
    assert c.command("ZUNION", "2", "{t}a", "b") == cross
    assert c.command("ZINTERCARD", "2", "{t}a", "{t}b") == b":0\r\n"
    assert c.command("ZRANGESTORE", "x", "{t}a", "0", "-1") == cross
    assert c.command("ZRANGESTORE", "{t}x", "{t}a", "0", "-1") == b":1\r\n"


def test_store_refused_at_maxmemory_changes_nothing(start_daemon):
    """A result that does not fit under maxmemory is refused (-OOM) and
    the destination stays as it was; deleting one still works."""
    d = start_daemon("--maxmemory", "4mb", "--maxmemory-policy", "noeviction")
    c = d.raw()
    for step in big("a", 2000):
        assert c.command(*step).startswith(b":")
    c.command("SET", "dst", "before")
    filler = "v" * 1000
    for i in range(5000):
        if c.command("SET", "fill%d" % i, filler).startswith(b"-OOM"):
            break
    else:
        pytest.fail("maxmemory never reached")
    assert c.command("ZUNIONSTORE", "dst", "1", "a").startswith(b"-OOM")
    assert c.command("ZRANGESTORE", "dst", "a", "0", "-1").startswith(b"-OOM")
    assert c.command("GET", "dst") == b"$6\r\nbefore\r\n"
    assert c.command("ZUNION", "1", "a").startswith(b"*2000\r\n")
    assert c.command("ZINTERSTORE", "dst", "1", "nokey") == b":0\r\n"
    assert c.command("EXISTS", "dst") == b":0\r\n"


def test_stored_results_come_back_after_kill9(start_daemon, tmp_path):
    work = str(tmp_path / "data")
    d = start(start_daemon, work)
    c = d.raw()
    for step in big("big", 300, score=lambda i: i % 13):
        c.command(*step)
    c.command("ZADD", "small", "1", "a", "2", "b")
    c.command("SET", "was", "a string")
    c.command("PEXPIRE", "was", "500000")
    c.command("ZUNIONSTORE", "was", "2", "small", "big", "WEIGHTS", "2", "-1")
    c.command("ZINTERSTORE", "inter", "2", "small", "small", "AGGREGATE", "MAX")
    c.command("ZDIFFSTORE", "diff", "2", "big", "small")
    c.command("ZRANGESTORE", "rng", "big", "(3", "7", "BYSCORE", "LIMIT", "2", "50")
    c.command("ZADD", "gone", "1", "x")
    c.command("ZINTERSTORE", "gone", "2", "small", "nokey")
    c.command("EVAL", "return redis.call('ZUNIONSTORE', KEYS[1], 1, KEYS[2])", "2",
              "scripted", "small")
    want = fingerprint(d)
    assert (0, b"gone") not in want and want[(0, b"was")][1] == b":-1\r\n"
    kill9(d)
    d2 = start(start_daemon, work)
    assert fingerprint(d2) == want
    assert d2.raw().command("ZSCAN", "inter", "0") == (
        b"*2\r\n$1\r\n0\r\n*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n")


@pytest.mark.parametrize("proto", [2, 3])
def test_redis_zset_tcl_cases(server, redis_server, proto):
    """Redis 7.0.15's tests/unit/type/zset.tcl cases for the algebra, ZINTERCARD,
    ZMPOP and the blocking pops, ZRANGESTORE and ZRANDMEMBER
    (redis_tcl/zset.cmds), as redis-server answers them."""
    assert redis_cases.run("zset.cmds", server.port, redis_server.port, proto) == []


@pytest.mark.parametrize("proto", [2, 3])
def test_redis_hash_tcl_cases(server, redis_server, proto):
    """Redis 7.0.15's tests/unit/type/hash.tcl HRANDFIELD cases
    (redis_tcl/hash.cmds), as redis-server answers them."""
    assert redis_cases.run("hash.cmds", server.port, redis_server.port, proto) == []
