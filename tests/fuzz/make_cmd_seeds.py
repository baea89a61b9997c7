#!/usr/bin/env python3
"""Write the hand-made seeds of the command fuzzer (tests/fuzz/corpus/cmd):
the reproducers of what the first command-level fuzzing found (issue 14)
and a start for the string, expiry and key commands and for the lists,
hashes, sorted sets and sets, in fuzz_cmd.c's input
format (a finding of its own generators is best kept as literal ops:
FUZZ_CMD_LITERAL=file build-fuzz/fuzz_cmd crash-...). Run from the repository root:

    /usr/bin/python3 tests/fuzz/make_cmd_seeds.py
"""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "cmd")

# Ops of fuzz_cmd.c's run_op (the byte modulo 16).
LITERAL, CLOCK, SAVELOAD = 11, 12, 14
# Clock steps of step_clock(), by index.
MS1, MS999, S1, S1_1, S59, H1, D1, BACK5, NS1, MS500 = range(10)


def cmd(*args):
    assert len(args) < 48, args[0]      # fuzz_cmd.c's MAX_ARGS
    out = bytes([LITERAL, len(args)])
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += struct.pack("<H", len(a)) + a
    return out


def clock(step):
    return bytes([CLOCK, step])


def save_and_reload():
    return bytes([SAVELOAD])


SEEDS = {
    # 1. META sizes that wrapped; one key's memory bounded.
    "meta-arena-sizes": cmd("CONFIG", "SET", "log-max-entries", "10000000")
    + cmd("CONFIG", "SET", "log-max-entries", "1000000")
    + b"".join(cmd("RL.LOG", "big", 1000000, 864000, "META", b"m" * 300) for _ in range(8))
    + save_and_reload(),
    # 2. A shorter-window PEEK / denied call emptied a key: unloadable snapshot.
    "peek-empties-log": cmd("RL.LOG", "k", 5, 3600) + clock(S1_1)
    + cmd("RL.LOG", "k", 5, 1, "PEEK") + save_and_reload() + cmd("RL.ENTRIES", "k"),
    "denied-empties-tiers": cmd("RL.TIERS", "t", 1, 3600) + clock(S1_1)
    + cmd("RL.TIERS", "t", 1, 1, "COST", 2) + save_and_reload(),
    # 3. PEEK dropped the history and let a denied request through.
    "peek-drops-history": cmd("RL.LOG", "q", 1, 3600) + cmd("RL.LOG", "q", 1, 3600)
    + clock(S1) + clock(MS500) + cmd("RL.LOG", "q", 1, 1, "PEEK")
    + cmd("RL.LOG", "q", 1, 3600) + cmd("RL.TIERS", "r", 1, 3600)
    + cmd("RL.TIERS", "r", 1, 3600) + clock(S1_1) + cmd("RL.TIERS", "r", 1, 1, "PEEK")
    + cmd("RL.TIERS", "r", 1, 3600),
    # 4. maxmemory did not bound growing keys; eviction that cannot help.
    "maxmemory-growth": cmd("CONFIG", "SET", "maxmemory", "100kb")
    + b"".join(cmd("RL.LOG", "grow", 10000, 864000, "META", b"g" * 200) for _ in range(6))
    + cmd("CONFIG", "SET", "maxmemory-policy", "volatile-ttl")
    + b"".join(cmd("CL.THROTTLE", "n%d" % i, 5, 1, 60) for i in range(6))
    + b"".join(cmd("RL.TIERS", "tt", 1000, 3600) + clock(S1) for _ in range(6)),
    # 5. A backtracking pattern against a long key.
    "keys-backtracking": cmd("RL.FIXED", b"a" * 1500, 5, 60)
    + cmd("KEYS", b"*" + b"a" * 1000 + b"b")
    + cmd("SCAN", 0, "MATCH", b"*" + b"[a]" * 300 + b"b", "COUNT", 100),
    # 6. memcpy(NULL, 0) under UBSan.
    "meta-after-no-meta": cmd("RL.LOG", "k", 10, 60) + cmd("RL.LOG", "k", 10, 60, "META", "x")
    + save_and_reload(),
    # 7. CONFIG SET that locked everyone out; values read as C strings.
    "config-lockout": cmd("CONFIG", "SET", "proto-max-args", "1")
    + cmd("CONFIG", "SET", "proto-max-args", b"1\0junk")
    + cmd("CONFIG", "SET", "maxmemory", b"1\0gb")
    + cmd("CONFIG", "SET", b"maxmemory\0xyz", "5")
    + cmd("CONFIG", "SET", "maxmemory", "1mb", "maxmemory", "2mb", "hz", "0")
    + cmd("CL.THROTTLE", "after", 5, 1, 60),
    # 9. CLIENT LIST / INFO cut long lines.
    "client-list-long-name": cmd("CLIENT", "SETNAME", b"n" * 2000)
    + cmd("CLIENT", "LIST") + cmd("CLIENT", "INFO"),
    # Every algorithm, windows that change, refunds, MS, ALIGN, then reload.
    "all-limiters-reload": cmd("CL.THROTTLE", "g", 4, 1, 60) + cmd("RL.FIXED", "f", 3, 60, "ALIGN")
    + cmd("RL.SLIDING", "s", 3, 10, "COST", 2) + cmd("RL.LOG", "l", 3, 60, "META", b"\0\r\n")
    + cmd("RL.TIERS", "t", 2, 1, 5, 10) + clock(S1) + cmd("RL.LOG", "l", 3, 5, "COST", -1)
    + cmd("RL.TIERS", "t", 2, 1, 5, 10, "COST", -3, "MS") + save_and_reload()
    + cmd("RL.ENTRIES", "l") + cmd("SCAN", 0, "TYPE", "log") + clock(BACK5)
    + cmd("CL.THROTTLE", "g", 4, 1, 60, 2, "PEEK"),
    # Transactions: a queue run at one instant, a refused command aborting,
    # a watched key the client itself writes (EXEC answers null), a flush.
    "transactions": cmd("MULTI") + cmd("CL.THROTTLE", "x", 1, 1, 60)
    + cmd("RL.LOG", "y", 2, 60, "META", "m") + cmd("EXEC") + cmd("MULTI")
    + cmd("RL.FIXED", "z", 1) + cmd("EXEC") + cmd("WATCH", "x", "y")
    + cmd("RL.LOG", "y", 2, 60) + cmd("MULTI") + cmd("DEL", "x") + cmd("EXEC")
    + cmd("WATCH", "x") + cmd("FLUSHALL") + cmd("MULTI") + cmd("EXEC")
    + cmd("MULTI") + cmd("SAVE") + cmd("DISCARD") + cmd("UNWATCH"),
    # The string commands, each with its options, good and bad numbers.
    "strings": cmd("SET", "s", "v") + cmd("SET", "s", "w", "NX") + cmd("SET", "s", "x", "XX", "GET")
    + cmd("SET", "s", b"0123456789abc", "EX", 10) + cmd("SET", "s", "y", "KEEPTTL")
    + cmd("SET", "s", "z", "PX", 1500, "GET") + cmd("SET", "s", "z", "EXAT", 1893456100)
    + cmd("SET", "s", "z", "PXAT", 1893456000000) + cmd("SET", "s", "z", "EX", 0)
    + cmd("SET", "s", "z", "KEEPTTL", "EX", 5) + cmd("SETNX", "s", 1) + cmd("SETEX", "e", 5, "v")
    + cmd("PSETEX", "e", 0, "v") + cmd("GETSET", "e", b"\0\r\n") + cmd("GETEX", "e")
    + cmd("GETEX", "e", "PERSIST") + cmd("GETEX", "e", "EX", 100) + cmd("GETEX", "e", "PXAT", 1)
    + cmd("GETDEL", "s") + cmd("MSET", "a", 1, "b", 2, "a", 3) + cmd("MSETNX", "a", 1, "c", 2)
    + cmd("MGET", "a", "b", "c", "nope") + cmd("INCR", "a") + cmd("DECRBY", "a", "-9223372036854775808")
    + cmd("INCRBY", "a", "9223372036854775807") + cmd("INCRBYFLOAT", "a", "1e4932")
    + cmd("INCRBYFLOAT", "b", "0.1") + cmd("DECR", "b") + cmd("APPEND", "b", "1")
    + cmd("STRLEN", "b") + cmd("GETRANGE", "b", -3, -1) + cmd("SETRANGE", "b", 20, "x")
    + cmd("SETRANGE", "b", 536870912, "x") + cmd("SETRANGE", "b", -1, "x") + save_and_reload(),
    # Expiry on strings and on every limiter; times past, now and at the edges.
    "expiry": cmd("SET", "s", "v") + cmd("RL.LOG", "l", 5, 60) + cmd("RL.TIERS", "t", 5, 60)
    + cmd("RL.FIXED", "f", 5, 60) + cmd("CL.THROTTLE", "g", 5, 1, 60)
    + cmd("EXPIRE", "s", 10, "NX") + cmd("PEXPIRE", "s", 5000, "GT") + cmd("EXPIRE", "s", 20, "LT")
    + cmd("EXPIREAT", "l", 1893456030) + cmd("PEXPIREAT", "t", "9223372036854775807")
    + cmd("EXPIRE", "f", "9223372036854775807") + cmd("PERSIST", "g") + cmd("TTL", "l")
    + cmd("PTTL", "t") + cmd("EXPIRETIME", "f") + cmd("PEXPIRETIME", "g") + save_and_reload()
    + clock(S59) + cmd("RL.LOG", "l", 5, 60) + cmd("TTL", "l") + cmd("EXPIRE", "l", 0)
    + cmd("EXISTS", "l") + cmd("EXPIRE", "s", 1, "NX", "XX") + cmd("EXPIRE", "s", 1, "ZZ"),
    # A limiter key kept by PERSIST or EXPIRE past the moment its state is
    # fresh, then a COST 0 or refund call that finds nothing (an empty
    # array in memory), and a reload, which must give it back (a load
    # dropped it before encoding 3 kept such keys; then encoding empty
    # tiers took an offset of NULL).
    "persist-limiter-past-fresh": cmd("RL.LOG", "l", 5, 1) + cmd("RL.TIERS", "t", 5, 1)
    + cmd("PERSIST", "l") + cmd("EXPIRE", "t", 3600) + clock(H1)
    + cmd("RL.LOG", "l", 5, 1, "COST", 0) + cmd("RL.TIERS", "t", 5, 1, "COST", -1)
    + cmd("RL.ENTRIES", "l") + save_and_reload() + cmd("RL.LOG", "l", 5, 1),
    # RENAME, COPY, MOVE of limiter keys and strings, across databases.
    "rename-copy-move": cmd("RL.LOG", "l", 5, 60, "META", "m") + cmd("SET", "s", b"x" * 40)
    + cmd("RENAME", "l", "l2") + cmd("RENAMENX", "s", "l2") + cmd("COPY", "l2", "l3")
    + cmd("COPY", "s", "l3", "REPLACE") + cmd("COPY", "l2", "x", "DB", 1) + cmd("MOVE", "s", 1)
    + cmd("SELECT", 1) + cmd("RL.ENTRIES", "x") + cmd("GET", "s") + cmd("SELECT", 0)
    + cmd("UNLINK", "l2", "l3", "nope") + cmd("TOUCH", "s", "x") + save_and_reload(),
    # A string that grows past its 12 inline bytes, then by kilobytes.
    "append-setrange": b"".join(cmd("APPEND", "a", b"%d" % i) for i in range(14))
    + cmd("SETRANGE", "a", 4000, b"z" * 100) + cmd("APPEND", "a", b"y" * 1000)
    + cmd("SETRANGE", "c", 0, "") + cmd("SETRANGE", "c", 5, "q") + cmd("INCR", "c")
    + save_and_reload() + cmd("GETRANGE", "a", 0, -1),
    # Lists: pushes, pops with counts, the in-place writes, LMOVE (one list
    # and two), LPOS, long elements, a reload.
    "lists": cmd("RPUSH", "l", "a", "b", "c", "a", b"\0\r\n") + cmd("LPUSH", "l", "z")
    + cmd("LPUSHX", "nope", "x") + cmd("RPUSHX", "l", b"y" * 300) + cmd("LINSERT", "l", "BEFORE", "a", "i")
    + cmd("LINSERT", "l", "AFTER", "none", "i") + cmd("LSET", "l", -1, "last") + cmd("LSET", "l", 99, "x")
    + cmd("LREM", "l", -1, "a") + cmd("LPOS", "l", "a", "RANK", -1, "COUNT", 0, "MAXLEN", 10)
    + cmd("LRANGE", "l", -100, 100) + cmd("LINDEX", "l", -2) + cmd("LMOVE", "l", "l", "LEFT", "RIGHT")
    + cmd("LMOVE", "l", "m", "RIGHT", "LEFT") + cmd("LTRIM", "l", 1, -2) + cmd("LPOP", "l", 2)
    + cmd("RPOP", "m", 0) + cmd("RPOP", "m", -1) + cmd("SET", "s", "v") + cmd("LPUSH", "s", "x")
    + save_and_reload() + cmd("RPOP", "l", 100) + cmd("LLEN", "l"),
    # A list of thousands of elements in a few writes, trimmed, reloaded.
    "list-big": b"".join(cmd("RPUSH", "big", *[b"e%d" % (i * 45 + j) for j in range(45)])
                         for i in range(6))
    + cmd("LPUSH", "big", b"w" * 1000) + cmd("LINSERT", "big", "AFTER", "e200", "mid")
    + cmd("LREM", "big", 0, "e7") + cmd("LSET", "big", 300, "set") + save_and_reload()
    + cmd("LTRIM", "big", 100, -100) + cmd("LRANGE", "big", 0, 5) + save_and_reload(),
    # Hashes: every write, counters, a value past 64 bytes (large from then
    # on, in any order), HSCAN, a reload.
    "hashes": cmd("HSET", "h", "f1", "v1", "f2", "v2", "f1", "again") + cmd("HSETNX", "h", "f2", "no")
    + cmd("HMSET", "h", "n", "10", "x", "1.5") + cmd("HINCRBY", "h", "n", "-11")
    + cmd("HINCRBY", "h", "x", 1) + cmd("HINCRBYFLOAT", "h", "x", "1e308") + cmd("HINCRBYFLOAT", "h", "new", "0.1")
    + cmd("HDEL", "h", "f2", "none") + cmd("HSTRLEN", "h", "f1") + cmd("HGETALL", "h")
    + cmd("HSCAN", "h", 0, "MATCH", "f*", "COUNT", 1) + save_and_reload()
    + cmd("HSET", "h", "long", b"v" * 65) + cmd("HKEYS", "h") + cmd("HSCAN", "h", 0, "COUNT", 1)
    + cmd("HDEL", "h", "long") + save_and_reload() + cmd("HVALS", "h") + cmd("HSET", "s", "a", "b"),
    # A hash past 512 fields in a dozen writes.
    "hash-big": b"".join(cmd("HSET", "hb", *sum([[b"%d" % (i * 22 + j), b""] for j in range(22)], []))
                         for i in range(24))
    + cmd("HLEN", "hb") + cmd("HDEL", "hb", "0", "1", "2") + save_and_reload() + cmd("HGET", "hb", "100"),
    # Sorted sets: ZADD's options, INCR, ties, infinities, the ranges by
    # score, rank and lex, pops, a reload.
    "zsets": cmd("ZADD", "z", 1, "a", 1, "b", 2, "c", "-inf", "lo", "+inf", "hi")
    + cmd("ZADD", "z", "NX", "CH", 5, "a", 6, "new") + cmd("ZADD", "z", "XX", "GT", "CH", 0, "b", 3, "c")
    + cmd("ZADD", "z", "LT", "INCR", -1, "c") + cmd("ZADD", "z", "INCR", "+inf", "hi")
    + cmd("ZADD", "z", "INCR", "-inf", "hi") + cmd("ZADD", "z", "nan", "x") + cmd("ZINCRBY", "z", "1.5", "d")
    + cmd("ZRANGE", "z", 0, -1, "WITHSCORES") + cmd("ZRANGE", "z", "(1", "+inf", "BYSCORE", "LIMIT", 1, 2)
    + cmd("ZRANGE", "z", "[c", "-", "BYLEX", "REV") + cmd("ZREVRANGEBYSCORE", "z", "+inf", "(1", "WITHSCORES")
    + cmd("ZRANGEBYLEX", "z", "-", "(c") + cmd("ZCOUNT", "z", "-inf", "(2") + cmd("ZLEXCOUNT", "z", "[a", "+")
    + cmd("ZRANK", "z", "c") + cmd("ZREVRANK", "z", "c") + cmd("ZMSCORE", "z", "a", "none")
    + cmd("ZSCAN", "z", 0, "COUNT", 1) + save_and_reload() + cmd("ZREMRANGEBYLEX", "z", "[a", "[b")
    + cmd("ZREMRANGEBYSCORE", "z", "(0", 2) + cmd("ZREMRANGEBYRANK", "z", 0, 0)
    + cmd("ZPOPMAX", "z", 2) + cmd("ZPOPMIN", "z") + cmd("ZREM", "z", "new", "none") + save_and_reload(),
    # A sorted set past 128 members and one with a member past 64 bytes.
    "zset-big": b"".join(cmd("ZADD", "zb", *sum([[b"%d" % ((i * 22 + j) % 17), b"m%d" % (i * 22 + j)]
                                                 for j in range(22)], [])) for i in range(7))
    + cmd("ZADD", "zl", 1, b"m" * 65) + cmd("ZSCAN", "zb", 0, "COUNT", 5)
    + cmd("ZREMRANGEBYRANK", "zb", 0, 100) + save_and_reload() + cmd("ZRANGE", "zb", 0, -1),
    # Sets: intsets in order, strings after them, SPOP and SRANDMEMBER in
    # every count, SMOVE, the algebra and its STORE forms over other
    # types, SSCAN, reloads.
    "sets": cmd("SADD", "s", 5, 3, -1, 3, "a", "007") + cmd("SREM", "s", "a", "007", "none")
    + cmd("SADD", "t", 3, 4, "b") + cmd("SISMEMBER", "s", 3) + cmd("SMISMEMBER", "s", 3, "x")
    + cmd("SMEMBERS", "s") + cmd("SRANDMEMBER", "s", -5) + cmd("SRANDMEMBER", "s", 2)
    + cmd("SINTER", "s", "t") + cmd("SUNION", "s", "t", "none") + cmd("SDIFF", "t", "s")
    + cmd("SINTERCARD", 2, "s", "t", "LIMIT", 1) + cmd("SINTERSTORE", "d", "s", "t")
    + cmd("SET", "str", "v") + cmd("SUNIONSTORE", "str", "s", "t") + cmd("SDIFFSTORE", "d", "s", "s")
    + cmd("SMOVE", "t", "s", "b") + cmd("SMOVE", "t", "new", 4) + cmd("SSCAN", "s", 0, "MATCH", "*", "COUNT", 1)
    + save_and_reload() + cmd("SPOP", "s") + cmd("SPOP", "s", 2) + cmd("SPOP", "str", 100)
    + cmd("SADD", "l", "x") + cmd("RPUSH", "l", "x") + cmd("SINTER", "l") + save_and_reload(),
    # Sets past 512 integers and past 128 strings in a dozen writes, SPOP's
    # three cases over them, a reload.
    "set-big": b"".join(cmd("SADD", "sb", *[b"%d" % (i * 45 + j) for j in range(45)]) for i in range(12))
    + b"".join(cmd("SADD", "sw", *[b"w%d" % (i * 45 + j) for j in range(45)]) for i in range(3))
    + cmd("SSCAN", "sb", 0, "COUNT", 5) + cmd("SPOP", "sb", 3) + cmd("SPOP", "sb", 500)
    + cmd("SMEMBERS", "sb") + save_and_reload() + cmd("SRANDMEMBER", "sw", 100)
    + cmd("SPOP", "sw", 1000) + cmd("SCARD", "sw"),
    # The algebra, ZRANGESTORE and the random members (issue 37): WEIGHTS
    # and AGGREGATE over infinities, a STORE over another type and its
    # expiry, an empty result deleting its destination, reloads between.
    "zset-algebra": cmd("ZADD", "a", 1, "x", 2, "y", "-inf", "n") + cmd("ZADD", "b", 3, "y", "inf", "n")
    + cmd("SET", "d", "str") + cmd("EXPIRE", "d", 100)
    + cmd("ZUNIONSTORE", "d", 2, "a", "b", "WEIGHTS", 1, 0, "AGGREGATE", "MAX")
    + cmd("ZINTERSTORE", "e", 2, "a", "b", "WEIGHTS", 1, -1) + cmd("ZDIFFSTORE", "f", 2, "a", "b")
    + cmd("ZUNION", 2, "a", "b", "WITHSCORES") + cmd("ZINTER", 2, "a", "b", "AGGREGATE", "MIN")
    + cmd("ZDIFF", 1, "a", "WITHSCORES") + cmd("ZINTERCARD", 2, "a", "b", "LIMIT", 1)
    + cmd("ZUNION", 0, "a") + cmd("ZINTER", 3, "a") + cmd("ZUNION", 2, "a", "b", "WEIGHTS", "x", 1)
    + save_and_reload() + cmd("ZINTERSTORE", "e", 2, "a", "none") + cmd("ZRANGESTORE", "g", "d", 0, -1)
    + cmd("ZRANGESTORE", "g", "d", "(1", "+inf", "BYSCORE", "REV", "LIMIT", 0, 1)
    + cmd("ZRANGESTORE", "g", "a", "-", "+", "BYLEX") + cmd("ZRANDMEMBER", "d", -5, "WITHSCORES")
    + cmd("ZRANDMEMBER", "d", 2) + cmd("ZRANDMEMBER", "d") + cmd("HSET", "h", "f", "v", "g", "w")
    + cmd("HRANDFIELD", "h", -3, "WITHVALUES") + cmd("HRANDFIELD", "h", 5) + cmd("HRANDFIELD", "h")
    + b"".join(cmd("ZADD", "zb", *sum([[b"%d" % j, b"m%d" % (i * 22 + j)] for j in range(22)], []))
               for i in range(7))
    + cmd("ZUNIONSTORE", "zc", 2, "zb", "a") + cmd("ZRANGESTORE", "zd", "zb", 0, 140)
    + cmd("ZRANDMEMBER", "zb", 10) + save_and_reload(),
    # Collections among the key commands: WRONGTYPE, SET over them,
    # RENAME, COPY, MOVE, EXPIRE of them, across databases.
    "collections-keys": cmd("RPUSH", "l", "a") + cmd("HSET", "h", "f", "v") + cmd("ZADD", "z", 1, "m")
    + cmd("GET", "l") + cmd("HSET", "l", "f", "v") + cmd("ZADD", "h", 1, "m") + cmd("LPUSH", "z", "x")
    + cmd("INCR", "h") + cmd("RENAME", "l", "l2") + cmd("COPY", "h", "h2") + cmd("COPY", "z", "h2", "REPLACE")
    + cmd("MOVE", "h", 1) + cmd("COPY", "l2", "x", "DB", 2) + cmd("EXPIRE", "l2", 10) + cmd("PERSIST", "l2")
    + cmd("SET", "h2", "v") + cmd("TYPE", "l2") + cmd("SCAN", 0, "TYPE", "list") + save_and_reload()
    + clock(S59) + cmd("EXPIRE", "l2", 1) + clock(S1_1) + cmd("LLEN", "l2") + cmd("DEL", "z", "x")
    + save_and_reload(),
    # DUMP and RESTORE: payloads redis-server 7.0.15 DUMPed (an LZF string,
    # an integer, a quicklist, a listpack hash, an intset, a set, a listpack
    # sorted set), each RESTOREd with its options, REPLACE over a key of
    # another type, one bit flipped (a bad checksum), cut short; MIGRATE
    # to 127.0.0.1:1, which refuses.
    "dump-restore": b"".join(cmd("RESTORE", k, ttl, p, *opts) for k, ttl, p, opts in [
        ("s", 0, b"\x00\xc3\x14/\x0chello world h\xe0\x17\x0b\x01ld\n\x00\x12\xca\xcc+[\xafU\xba", []),
        ("i", 5000, b"\x00\xc190\n\x00\x9d\x94\xea'\x93\xfc\x08\xb9", []),
        ("l", 0, b"\x12\x01\x02\x11\x11\x00\x00\x00\x04\x00\x81a\x02\x81b\x02\x01\x01\x02\x01"
         b"\xff\n\x00mrq>\x9bCH+", ["IDLETIME", 10]),
        ("h", 0, b"\x10\x12\x12\x00\x00\x00\x04\x00\x81f\x02\x81v\x02\x81n\x02\x07\x01\xff\n\x00"
         b"\xb8*\xde\xa8@\x7f\xfa\xa8", ["FREQ", 5]),
        ("si", 0, b"\x0b\x0e\x02\x00\x00\x00\x03\x00\x00\x00\x01\x00\x02\x00\x03\x00\n\x00\xa5\x02"
         b"\\\xe2mnM\x1b", []),
        ("ss", 0, b"\x02\x02\x01b\x01a\n\x00u\xd9\x9d\x83^\xf8_e", []),
        ("z", 99999999999999, b"\x11\x15\x15\x00\x00\x00\x04\x00\x81b\x02\xdf\xfe\x02\x81a\x02"
         b"\x831.5\x04\xff\n\x00l5\x9d\xf63\xd0\x8b]", ["ABSTTL"]),
        ("s", 0, b"\x02\x02\x01b\x01a\n\x00u\xd9\x9d\x83^\xf8_e", ["REPLACE"]),
        ("x", 0, b"\x02\x02\x01b\x01a\n\x00u\xd9\x9d\x83^\xf8_f", []),
        ("x", 0, b"\x02\x02\x01b\x01a\n\x00", []),
    ]) + cmd("DUMP", "s") + cmd("DUMP", "l") + cmd("DUMP", "z") + cmd("DUMP", "nokey")
    + cmd("CL.THROTTLE", "g", 5, 10, 60) + cmd("RL.FIXED", "f", 5, 60) + cmd("DUMP", "g") + cmd("DUMP", "f")
    + cmd("MIGRATE", "127.0.0.1", 1, "", 0, 10, "COPY", "KEYS", "s", "l")
    + cmd("MIGRATE", "127.0.0.1", 1, "nokey", 0, 10) + save_and_reload(),
    # CL.THROTTLE RESERVE: slots taken, a refusal past the bound, PEEK, the
    # errors, a bound that would overflow in ns; kept through a reload.
    # Leases: holders given and made, a retry, full, PEEK, refresh, release
    # twice, expiry by the clock, the errors, WAIT 0 and refused WAITs,
    # inside MULTI, DUMP/RESTORE, kept through a reload.
    "leases": cmd("RL.ACQUIRE", "l", 2, 1, "HOLDER", "a")
    + cmd("RL.ACQUIRE", "l", 2, 1, "HOLDER", "a") + cmd("RL.ACQUIRE", "l", 2, 60)
    + cmd("RL.ACQUIRE", "l", 2, 60, "HOLDER", "b", "WAIT", 0)
    + cmd("RL.ACQUIRE", "l", 3, 60, "HOLDER", "b", "PEEK", "MS")
    + cmd("RL.REFRESH", "l", "a", 500, "MS") + cmd("RL.LEASES", "l", "MS") + save_and_reload()
    + cmd("RL.LEASES", "l") + clock(S1) + cmd("RL.RELEASE", "l", "a")
    + cmd("RL.ACQUIRE", "l", 2, 60, "HOLDER", "c", "WAIT", "x")
    + cmd("RL.ACQUIRE", "l", 2, 60, "HOLDER", "PEEK") + cmd("RL.ACQUIRE", "l", 100001, 1)
    + cmd("RL.ACQUIRE", "l", 2, 60, "HOLDER", "") + cmd("RL.ACQUIRE", "l", 2, 0)
    + cmd("MULTI") + cmd("RL.ACQUIRE", "l", 1, 60, "HOLDER", "d") + cmd("RL.RELEASE", "l", "c")
    + cmd("EXEC") + cmd("DUMP", "l") + cmd("COPY", "l", "m") + cmd("EXPIRE", "m", 100)
    + cmd("RL.ACQUIRE", "m", 9, 1, "HOLDER", "e") + cmd("RL.RELEASE", "m", "e")
    + cmd("RL.RELEASE", "m", "e") + save_and_reload() + clock(H1) + cmd("RL.LEASES", "m"),
    "cl-throttle-reserve": b"".join(cmd("CL.THROTTLE", "w", 0, 10, 1, "RESERVE", 500, "MS")
                                    for _ in range(7))
    + cmd("CL.THROTTLE", "w", 0, 10, 1, "RESERVE", 500, "MS", "PEEK") + clock(MS1)
    + cmd("CL.THROTTLE", "w", 0, 1, 1, 2, "MS", "reserve", "9223372036854775807")
    + cmd("CL.THROTTLE", "w", 0, 1, 1, "RESERVE", -1) + cmd("CL.THROTTLE", "w", 0, 1, 1, "RESERVE", "x")
    + cmd("CL.THROTTLE", "w", 0, 1, 1, 1, "RESERVE") + save_and_reload()
    + cmd("CL.THROTTLE", "w", 0, 10, 1, "RESERVE", 1),
    # RL.FIXED CALENDAR: zones real and junk, every unit, WEEKSTART, one key
    # asked in two zones, days passing, kept through a reload.
    "rl-fixed-calendar": cmd("RL.FIXED", "c", 3, "day", "CALENDAR", "Europe/Paris")
    + cmd("RL.FIXED", "c", 3, "DAY", "calendar", "America/New_York", "MS", "PEEK")
    + cmd("RL.FIXED", "w", 2, "week", "CALENDAR", "Australia/Lord_Howe", "WEEKSTART", "sunday")
    + cmd("RL.FIXED", "m", 2, "month", "CALENDAR", "Asia/Kathmandu", "COST", 2)
    + cmd("RL.FIXED", "y", 2, "year", "CALENDAR", "UTC", "ALIGN")
    + cmd("RL.FIXED", "h", 2, "hour", "CALENDAR", "Asia/Kathmandu")
    + cmd("RL.FIXED", "x", 2, "day", "CALENDAR", "Mars/Base")
    + cmd("RL.FIXED", "x", 2, "day", "CALENDAR", "../../etc/passwd")
    + cmd("RL.FIXED", "x", 2, 60, "CALENDAR", "UTC")
    + cmd("RL.FIXED", "x", 2, "day", "CALENDAR", "UTC", "WEEKSTART", "monday")
    + cmd("RL.FIXED", "x", 2, "week", "CALENDAR", "UTC", "WEEKSTART", "funday")
    + cmd("RL.FIXED", "x", 2, 60, "WEEKSTART", "monday")
    + clock(H1) + save_and_reload() + clock(D1)
    + cmd("RL.FIXED", "c", 3, "day", "CALENDAR", "Europe/Paris")
    + cmd("RL.FIXED", "w", 2, "week", "CALENDAR", "Australia/Lord_Howe", "WEEKSTART", "sunday"),
    # RL.ALL: kept, denied by its last part (the first put back), a part's
    # error, PEEK, one key twice, every kind of part, through a reload.
    "rl-all": b"".join(cmd("RL.ALL", 3, 4, "RL.FIXED", "a", 3, 60,
                           5, "CL.THROTTLE", "b", 1, 1, 60,
                           6, "RL.LOG", "c", 2, 60, "META", b"m\0\r\n")
                       for _ in range(4))
    + cmd("RL.ALL", 2, 5, "GCRA", "g", 0, 1, 10, 5, "GCRA", "g", 0, 1, 10)
    + cmd("RL.ALL", 2, 6, "RL.TIERS", "t", 2, 1, 5, 60, 4, "RL.SLIDING", "s", 1, 60, "PEEK")
    + cmd("RL.ALL", 2, 4, "RL.SLIDING", "s", 1, 60, 3, "RL.FIXED", "a", "x")
    + cmd("RL.ALL", 1, 3, "SET", "a", "v") + clock(S59) + save_and_reload()
    + cmd("RL.ALL", 2, 4, "RL.FIXED", "a", 3, 60, 4, "RL.FIXED", "a", 3, 60),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in sorted(SEEDS.items()):
        assert len(data) <= 4096, name     # make fuzz's -max_len
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print("wrote %d seeds to %s" % (len(SEEDS), OUT))


if __name__ == "__main__":
    main()
