"""The differential suite (difftest.py), bounded: cellgate against Debian's
redis-server 7.0.15 over the whole grammar, with limiter keys planted (so
string commands meet CL.THROTTLE's strings and the other limiters' keys),
every command and option drawn; the engine itself checked on two Redis
servers (no false mismatch), that it reports a real difference, and its
RESP reader.

`make difftest` runs the same stream long (DIFFTEST_COMMANDS)."""
import pytest

import difftest
import harness

# Seeds and sizes: each half RESP2 and half RESP3; limiter keys planted
# in the first two (SCAN TYPE then never asks for hashes: a planted key is
# a hash in Redis), not in the third.
SEEDS = [("ci-1", True), ("ci-2", True), ("ci-3", False)]
COMMANDS = 20000

# Issue 28's commands and issue 37's sets, list moves, blocking pops,
# sorted-set algebra and random members: each must have answered both an
# error and something else in every run (an error at least through a
# wrong arity or WRONGTYPE).
COLLECTION_COMMANDS = """
    LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LINDEX LRANGE LTRIM LREM LSET LPOS
    LINSERT LMOVE
    ZADD ZREM ZSCORE ZMSCORE ZCARD ZCOUNT ZLEXCOUNT ZINCRBY ZRANGE ZREVRANGE
    ZRANGEBYSCORE ZREVRANGEBYSCORE ZRANGEBYLEX ZREVRANGEBYLEX ZREMRANGEBYSCORE
    ZREMRANGEBYRANK ZREMRANGEBYLEX ZRANK ZREVRANK ZPOPMIN ZPOPMAX ZSCAN
    HSET HSETNX HMSET HGET HMGET HDEL HLEN HEXISTS HINCRBY HINCRBYFLOAT HGETALL
    HKEYS HVALS HSTRLEN HSCAN
    RPOPLPUSH LMPOP ZMPOP BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP BZPOPMIN BZPOPMAX
    BZMPOP
    SADD SREM SISMEMBER SMISMEMBER SCARD SMEMBERS SRANDMEMBER SPOP SMOVE SSCAN
    SINTER SINTERCARD SINTERSTORE SUNION SUNIONSTORE SDIFF SDIFFSTORE
    ZUNION ZINTER ZDIFF ZUNIONSTORE ZINTERSTORE ZDIFFSTORE ZINTERCARD ZRANGESTORE
    ZRANDMEMBER HRANDFIELD""".split()
# The replies whose order is Redis's hash table's: met in both encodings.
ENCODINGS = ["HGETALL listpack", "HGETALL hashtable", "HKEYS listpack",
             "HKEYS hashtable", "HVALS listpack", "HVALS hashtable",
             "HSCAN listpack", "HSCAN hashtable", "ZSCAN listpack", "ZSCAN skiplist",
             "SMEMBERS intset", "SMEMBERS hashtable", "SSCAN intset",
             "SSCAN hashtable"]
COLLECTION_ERRORS = ["-ERR min or max not valid string range item",
                     "-ERR min or max is not a float", "-ERR no such key",
                     "-ERR index out of range",
                     "-ERR value is out of range, must be positive",
                     "-ERR syntax error, WITHSCORES not supported in combination with BYLEX",
                     "-ERR INCR option supports a single increment-element pair",
                     "-ERR GT, LT, and/or NX options at the same time are not compatible",
                     "-ERR hash value is not an integer", "-ERR invalid cursor",
                     "-ERR timeout is negative",
                     "-ERR timeout is not a float or out of range",
                     "-ERR numkeys should be greater than",
                     "-ERR count should be greater than",
                     "-ERR weight value is not a float", "-ERR at least", "-ERR LIMIT can",
                     "-ERR value is out of range",
                     "-ERR value is out of range, value must between -"]


# The scripts' and functions' commands: each answered both an error and
# something else (SCRIPT EXISTS never fails but for a wrong arity, rare;
# FCALL_RO of a function with no-writes is rarely drawn: not asserted).
SCRIPT_COMMANDS = ["EVAL", "EVAL_RO", "EVALSHA", "EVALSHA_RO", "SCRIPT LOAD", "FCALL",
                   "FUNCTION LOAD"]
# Errors only a script's paths give.
SCRIPT_ERRORS = ["-NOSCRIPT", "-ERR user_script",
                 "-ERR Write commands are not allowed from read-only scripts.",
                 "-ERR Error compiling script (new function): user_script",
                 "-ERR Number of keys can",
                 "-ERR This Redis command is not allowed from script",
                 "-ERR Lua redis lib command arguments must be strings or integers",
                 "-ERR Please specify at least one argument for this redis lib call",
                 "-ERR Attempt to modify a readonly table",
                 "-ERR Unknown Redis command called from script",
                 "-ERR reached lua stack limit"]


def assert_scripts_covered(stats):
    for name in SCRIPT_COMMANDS:
        assert stats.ok[name] > 0 and stats.failed[name] > 0, \
            (name, stats.ok[name], stats.failed[name])
    assert stats.ok["SCRIPT EXISTS"] > 0
    for err in SCRIPT_ERRORS:
        assert stats.errors[err] > 0, (err, sorted(e for e in stats.errors if "script" in e))


def assert_collections_covered(stats):
    for name in COLLECTION_COMMANDS:
        assert stats.commands[name] > 0, name
        assert stats.ok[name] > 0 and stats.failed[name] > 0, \
            (name, stats.ok[name], stats.failed[name])
    for e in ENCODINGS:
        assert stats.encodings[e] > 0, (e, dict(stats.encodings))


def addr(server):
    return ("127.0.0.1", server.port)


def run(cg, ref, seed, commands, **kw):
    stats, grammar, mismatch = difftest.difftest(cg, ref, seed, commands, **kw)
    if mismatch is not None:
        pytest.fail(str(mismatch), pytrace=False)
    return stats, grammar


@pytest.mark.parametrize("seed,plant", SEEDS)
def test_cellgate_answers_as_redis(redis_server, module_daemon, seed, plant):
    stats, grammar = run(addr(module_daemon), addr(redis_server), seed, COMMANDS,
                         plant=plant)
    assert stats.total >= COMMANDS
    never_cmds, never_opts = stats.never(grammar)
    assert never_cmds == [] and never_opts == [], (never_cmds, never_opts)
    assert {c.name for c in grammar} == {c.name for c in difftest.GRAMMAR if c.redis}
    for err in ("-ERR wrong number of arguments for", "-ERR syntax error",
                "-ERR value is not an integer or out of range",
                "-ERR invalid expire time in", "-ERR value is not a valid float",
                "-WRONGTYPE", "-EXECABORT"):
        assert stats.errors[err] > 0, err
    assert_collections_covered(stats)
    assert_scripts_covered(stats)


@pytest.fixture(scope="module")
def second_redis(tmp_path_factory):
    ref = harness.RedisServer(str(tmp_path_factory.mktemp("redis-b")))
    ref.start()
    yield ref
    ref.stop()


def test_engine_finds_no_difference_between_two_redis_servers(redis_server, second_redis):
    """The whole grammar: any mismatch here is the engine's own (a
    normalisation missing, a cursor two servers cannot share, a key
    expiring between the two reads), and every command and option is
    drawn."""
    stats, grammar = run(addr(second_redis), addr(redis_server), "engine", COMMANDS)
    never_cmds, never_opts = stats.never(grammar)
    assert never_cmds == [] and never_opts == [], (never_cmds, never_opts)
    assert {c.name for c in grammar} == {c.name for c in difftest.GRAMMAR if c.redis}
    for err in ("-ERR syntax error", "-ERR value is not an integer or out of range",
                "-ERR invalid expire time in", "-ERR value is not a valid float", "-EXECABORT"):
        assert stats.errors[err] > 0, err
    assert_collections_covered(stats)
    assert_scripts_covered(stats)
    for err in COLLECTION_ERRORS:
        assert stats.errors[err] > 0, err


def test_a_difference_is_reported_with_seed_request_replies_and_history(tmp_path,
                                                                       redis_server):
    small = harness.RedisServer(str(tmp_path / "small"), extra_args=["--databases", "8"])
    small.start()
    try:
        stats, grammar, m = difftest.difftest(addr(small), addr(redis_server), "report", 5000,
                                              only="SELECT,PING")
    finally:
        small.stop()
    assert m is not None
    text = str(m)
    assert "MISMATCH (seed report, RESP2, request #" in text
    assert "-ERR DB index is out of range" in text and "+OK" in text
    assert "request:  [b'" in text and "the " in text


def test_resp_reader_reads_every_type_in_pieces():
    replies = [b"+OK\r\n", b"-ERR x\r\n", b":-5\r\n", b"$-1\r\n", b"$3\r\na\r\n\r\n",
               b"*-1\r\n", b"*2\r\n$1\r\n0\r\n*0\r\n", b"_\r\n", b",1.5\r\n", b"#t\r\n",
               b"(123\r\n", b"=7\r\ntxt:abc\r\n", b"!5\r\nERR x\r\n",
               b"%1\r\n+a\r\n*1\r\n:1\r\n", b"~1\r\n+x\r\n",
               b"|1\r\n+k\r\n+v\r\n:9\r\n"]
    stream = b"".join(replies)
    buf = bytearray()
    got = []
    for i in range(len(stream)):
        buf += stream[i:i + 1]
        while True:
            try:
                node, p = difftest.parse(buf, 0)
            except difftest.Incomplete:
                break
            got.append(node.raw)
            del buf[:p]
    assert got == replies
    assert not buf


def test_normalisations_are_only_the_allowed_ones():
    parse = lambda b: difftest.parse(bytearray(b), 0)[0]
    keys_a = parse(b"*2\r\n$1\r\na\r\n$1\r\nb\r\n")
    keys_b = parse(b"*2\r\n$1\r\nb\r\n$1\r\na\r\n")
    assert difftest.same("KEYS", keys_a, keys_b)
    assert not difftest.same("MGET", keys_a, keys_b)
    assert difftest.same("PTTL", parse(b":1000\r\n"), parse(b":999\r\n"))
    assert not difftest.same("PTTL", parse(b":-1\r\n"), parse(b":-2\r\n"))
    assert not difftest.same("PTTL", parse(b":100000\r\n"), parse(b":1\r\n"))
    assert difftest.same("TTL", parse(b":100\r\n"), parse(b":99\r\n"))
    assert not difftest.same("GET", parse(b"$1\r\n1\r\n"), parse(b"$1\r\n2\r\n"))
    assert difftest.error_prefix(b"-ERR wrong number of arguments for 'get' command\r\n") \
        == "-ERR wrong number of arguments for"
    assert difftest.error_prefix(b"-WRONGTYPE Operation against a key\r\n") == "-WRONGTYPE"
    # Field order: free only where Redis keeps the hash in a hash table.
    h1 = parse(b"*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n")
    h2 = parse(b"*4\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\na\r\n$1\r\n1\r\n")
    h3 = parse(b"*4\r\n$1\r\nb\r\n$1\r\n1\r\n$1\r\na\r\n$1\r\n2\r\n")
    table, packed = (lambda: b"hashtable"), (lambda: b"listpack")
    assert difftest.same("HGETALL", h1, h2, table)
    assert not difftest.same("HGETALL", h1, h3, table)    # pairs, not elements
    assert not difftest.same("HGETALL", h1, h2, packed)
    assert not difftest.same("HGETALL", h1, h2)
    assert difftest.same("HKEYS", keys_a, keys_b, table)
    assert not difftest.same("HKEYS", keys_a, keys_b, packed)
    assert not difftest.same("LRANGE", keys_a, keys_b, table)
    m1 = parse(b"%2\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n")
    m2 = parse(b"%2\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\na\r\n$1\r\n1\r\n")
    assert difftest.same("HGETALL", m1, m2, table)        # RESP3's map
    ex1 = parse(b"*2\r\n:1\r\n" + h1.raw)
    ex2 = parse(b"*2\r\n:1\r\n" + h2.raw)
    assert difftest.same_exec(["HSET", "HGETALL"], ex1, ex2, table)
    assert not difftest.same_exec(["HSET", "HGETALL"], ex1, ex2, packed)
