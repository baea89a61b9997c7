"""The differential suite: seeded random command sequences sent to cellgate
and to Debian's redis-server 7.0.15, replies compared byte for byte.

    python3 tests/integration/difftest.py [--seed S] [--commands N]
        [--resp 2|3|both] [--only GET,SET,...] [--supported-only]
        [--plant-limiters] [--stats] [--cellgate HOST:PORT] [--redis HOST:PORT]

Without --cellgate/--redis it starts both servers on free loopback ports
(harness.Daemon on $CELLGATE_BIN or ./cellgate, harness.RedisServer on
/usr/bin/redis-server) and stops them at the end.

The grammar (GRAMMAR below) has one entry per command of issue 27's list
(strings, counters, expiry, keys, databases, transactions), of issue 28's
(lists, hashes, sorted sets), of issue 37's sets, sorted-set algebra
(ZUNION... ZINTERCARD, ZRANGESTORE, ZRANDMEMBER, HRANDFIELD), list moves
and pops of several keys (RPOPLPUSH, LMPOP, ZMPOP) and blocking pops
(BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP:
inside a transaction with any timeout, since a transaction never waits
(an empty key answers nil at once); outside one after a push to their
first key, so they answer at once and the one-client stream never hangs;
who is served when several clients wait, and timeouts, are
test_blocking.py's), scripts (EVAL's bodies calling the grammar's commands
and the Lua libraries, cmsgpack and struct among them) and functions
(FUNCTION LOAD of libraries made of fixed bodies, FCALL, FCALL_RO,
FUNCTION DELETE, FLUSH, STATS), DUMP, RESTORE and MIGRATE (see their
section) plus PING and ECHO: each entry draws its arguments
from small pools (keys with binary
bytes and {hash tags}; values empty, binary, long, integer- and
float-looking; numbers negative, zero, huge, overflowing, non-numeric,
float; option words in random case, in random combinations, invalid ones
too) and sometimes gets the wrong arity. CL.THROTTLE and INCREX are in the
table too but marked cellgate-only: they are never sent to Redis and are
not in the differential stream. --plant-limiters plants limiter keys in
cellgate every PLANT_EVERY batches that the string commands marked
`wrongtype` then meet: CL.THROTTLE keys, strings of their TAT as
redis-cell's are, mirrored in Redis by a SET of the same bytes and PTTL
(so GET, INCR, APPEND... answer alike), and RL.FIXED, RL.LOG, RL.TIERS and
GCRA keys, mirrored by a hash (so every string command answers WRONGTYPE
alike). SCAN TYPE then does not draw hash or gcra (they tell a mirror from
its limiter), and the commands that show a key's type or expiry (TYPE,
TTL...) never draw planted keys.

The runner keeps one raw socket per server (no client library: the reply
bytes are the server's), FLUSHALL and FUNCTION FLUSH on both at the start, then sends the same
requests in small pipelined batches to both and reads exactly one reply per
request with a RESP2/RESP3 parser. It runs the stream once per protocol
(--resp both: RESP2, then HELLO 3 on fresh connections, each half of N).
MULTI, EXEC, DISCARD and SCAN end a batch, so the generator knows whether a
transaction is open (it keeps bodies short and never queues SCAN).

The collections' commands draw their keys mostly from their own type's
few HOME keys, sometimes from another type's or KEY_POOL's (so every type
meets every other: WRONGTYPE), and the key commands (DEL, TYPE, RENAME,
COPY, EXPIRE, SCAN TYPE...) draw the HOME keys too. Members and fields are
few (writes meet earlier ones), some past 64 bytes, binary; a few writes
are bulk (120-200 elements) so Redis's listpack and hashtable/skiplist
encodings both occur. The lex-range commands only read LEX_KEYS, where a
sorted set only ever holds members of score 0: over different scores
Redis leaves them unspecified (and its skiplist's answer depends on its
random levels).

Normalisation, the only ones allowed:
  - KEYS: the elements of the reply are compared sorted;
  - SCAN: the iteration is run to its end on each server (cursor 0 back,
    at most SCAN_MAX_STEPS calls, the same options) and the keys are
    compared as a set; replies that are not a cursor and an array (errors)
    are compared byte for byte;
  - TTL, PTTL, EXPIRETIME, PEXPIRETIME: non-negative integers within
    TTL_TOLERANCE_MS (TTL, EXPIRETIME: that many ms rounded up to seconds,
    plus 1 for the rounding): the two servers read their clocks at different
    moments (one batch is read from cellgate before Redis answers it, and
    an EXPIRE's deadline is taken from each server's own clock), which
    under ASan on a loaded 2-core machine can be tens of ms apart.
  - DUMP: both nil, or both a payload of the same type (its RDB type
    byte's type: the encodings, and so the bytes, are each server's);
  - HGETALL, HKEYS, HVALS: where Redis keeps the key in a hash table
    (OBJECT ENCODING asked of Redis right after the reply: these end a
    batch, and in a transaction EXEC or DISCARD follows them at once), the
    (field, value) pairs or elements are compared as multisets; a listpack
    one's reply byte for byte;
  - ZRANDMEMBER, HRANDFIELD, where the replies differ: the same shape and
    count, each member one of the key's on its own server (asked right
    after: these end a batch and are never queued) with the value it has
    there, distinct for a positive count; a count of the size or more
    answers in Redis's order, compared byte for byte like the rest;
  - HSCAN, ZSCAN (started only from cursors that mean 0 or are invalid):
    byte for byte, unless Redis keeps the key as hashtable/skiplist: then
    the iteration runs to its end on each server and the multisets of
    pairs are compared.
  - SMEMBERS: as HGETALL's rule (hashtable: a multiset; intset: byte for
    byte); SSCAN as HSCAN's (its elements singly);
  - SINTER, SUNION, SDIFF (never queued; they end a batch): byte for byte
    when Redis keeps every key named as an intset (or has none) and, for
    SUNION, the result has at most 512 members (no step of it left the
    intset); else the members as multisets;
  - SRANDMEMBER, SPOP (random; never queued, they end a batch): the same
    kind of reply and count, distinct members where Redis's are, every
    member one of the set's (SMEMBERS of both, equal, after an
    SRANDMEMBER; for SPOP, what one server took was in the other's set
    before its own pop); then each server SREMs what the other popped, so
    both hold the same set again.
Inside an EXEC reply each element is compared by the rule of the command
it answers.

What the stream avoids instead of normalising: relative expiries are far
ahead (>= 10000 s) or invalid, absolute ones far ahead or in the past, so
no key expires between the two servers' reads; a SET with an EXAT/PXAT in
the past is followed by EXISTS of its key, because Redis 7.0 keeps such a
key (counted by DBSIZE) until something reads it or its active expiry
cycle samples it, which is random; SCAN is only started from cursors that
mean 0 or are invalid (where a scan resumes from another cursor is each
server's own).

On a mismatch it prints the seed, the protocol, the index, the request,
both replies and the last HISTORY requests before it, and exits 1.
At the end (--stats, or always on a mismatch) it prints how often each
command was sent and how many of Redis's replies to it were errors or not
(a queued command counts by its element of EXEC's reply), each option
word and error reply, Redis's encodings of the keys of the order-sensitive
replies, and the grammar's commands and options never exercised.

--supported-only asks cellgate COMMAND LIST at the start and drops the
grammar entries it lacks (printing them); the rest must answer as Redis.
"""
import argparse
import collections
import os
import random
import re
import socket
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

# A script's reply may nest ~8000 deep (Redis's conversion stops at a Lua
# stack limit): the reader recurses once a level.
sys.setrecursionlimit(max(sys.getrecursionlimit(), 40000))

HISTORY = int(os.environ.get("DIFFTEST_HISTORY", "20"))                 # requests printed before a mismatch
BATCH_MAX = 16               # requests per pipelined batch
MULTI_BODY_MAX = 12          # queued commands before EXEC/DISCARD is forced
SCAN_MAX_STEPS = 100000      # SCAN calls of one full iteration
IO_TIMEOUT = 60.0            # a guard only: replies are read by parsing
TTL_TOLERANCE_MS = 1000      # see the module's docstring
PLANT_EVERY = 200            # batches between two plants (--plant-limiters)
P_WRONG_ARITY = 0.03

# ---- argument pools ---------------------------------------------------------

KEY_POOL = [b"k", b"k2", b"{t}a", b"{t}b", b"\x00bin\xff", b"sp ace", b"",
            b"\r\n", b"key:1", b"\xe2\x82\xac", b"K" * 70]
# Planted by --plant-limiters: CL.THROTTLE keys (strings, as redis-cell's:
# mirrored in Redis by a SET of the same bytes and PTTL) and keys of the
# other limiters (mirrored by a hash, so a string command answers
# WRONGTYPE on both sides).
PLANT_STRINGS = [b"lim:cl", b"{t}lim"]
PLANT_OTHERS = [
    (b"lim:fixed", [b"RL.FIXED", b"lim:fixed", b"5", b"3600"]),
    (b"lim:log", [b"RL.LOG", b"lim:log", b"5", b"3600", b"META", b"m"]),
    (b"{t}tiers", [b"RL.TIERS", b"{t}tiers", b"5", b"3600"]),
    (b"lim:gcra", [b"GCRA", b"lim:gcra", b"5", b"10", b"3600"]),
]
LIMITER_KEYS = PLANT_STRINGS + [k for k, _ in PLANT_OTHERS]
VALUE_POOL = [b"", b"v", b"0", b"1", b"-1", b"42", b"007", b"+5", b" 12", b"12 ",
              b"9223372036854775807", b"-9223372036854775808",
              b"9223372036854775808", b"123456789012345678901234567890",
              b"3.14", b"-0.5", b"1e10", b"1.5e-3", b".5", b"5.", b"inf", b"nan",
              b"0x1f", b"\x00\xff\r\n\x01", b"hello world", b"\r\n\r\n"]
INT_POOL = [b"0", b"1", b"-1", b"2", b"10", b"100", b"-100", b"007",
            b"9223372036854775807", b"-9223372036854775808",
            b"9223372036854775808", b"-9223372036854775809",
            b"99999999999999999999", b"abc", b"1.5", b"", b" 1", b"+1", b"1e3",
            b"0x10", b"4294967296", b"-0"]
FLOAT_POOL = [b"0", b"1", b"-1", b"1.5", b"-2.25", b"0.1", b"1e3", b"1E-2",
              b"3.0e2", b".5", b"5.", b"+1.5", b"-0", b"inf", b"-inf", b"+inf",
              b"nan", b"abc", b"", b" 1", b"1 ", b"0x10", b"1e400", b"-1e400",
              b"1.7976931348623157e308", b"5e-324", b"123456789.123456789",
              b"10.50", b"9223372036854775807"]
PATTERNS = [b"*", b"k*", b"{t}*", b"?", b"k?", b"[a-z]*", b"[^k]*", b"[!k]*",
            b"\\*", b"*\\", b"[", b"[a-", b"*a*", b"\x00*", b"K*K", b"",
            b"{t}[ab]", b"*[\xff]*", b"k\\2", b"??????"]
DB_POOL = [b"0", b"1", b"2", b"15", b"16", b"-1", b"x", b"99999999999", b"1.0"]
# Keys the commands of one collection type draw most often (so that its
# keys grow and its commands mostly meet their own type), the others' and
# KEY_POOL's now and then (WRONGTYPE across every pair of types).
HOME = {"list": [b"{t}l", b"l", b"l\xff"], "hash": [b"{t}h", b"h", b"h\xff"],
        "zset": [b"{t}z", b"z", b"z\xff"], "set": [b"{t}s", b"s", b"s\xff"]}
# Sets the set commands fill with integers only (Redis's intsets, whose
# order shows), unless a STORE or SMOVE puts another member there.
INT_SET_KEYS = [b"{t}si", b"si"]
HOME_ALL = [k for t in sorted(HOME) for k in HOME[t]]
# The only keys the lex-range commands read: a sorted set there only ever
# holds members of one score (0). Redis leaves lex ranges over members of
# different scores unspecified, and in its skiplist encoding the answer
# then depends on the nodes' random levels (two Redis servers differ).
# Lists, hashes and strings land there too (WRONGTYPE), no other writer of
# sorted sets (ZINCRBY, RENAME...) does.
LEX_KEYS = [b"{t}lex", b"lex"]
TYPE_WORDS = [b"string", b"hash", b"list", b"set", b"zset", b"stream",
              b"none", b"gcra", b"bogus"]


class Gen:
    """Draws arguments; records the option words it draws."""

    def __init__(self, rng):
        self.rng = rng
        self.opts = []          # (command, option) drawn for this request
        self.cmd = None
        self.limiters = False   # may draw planted limiter keys
        self.past = False       # drew an absolute expiry that is not ahead
        self.planted = False    # limiter keys are planted (--plant-limiters)
        self.scripts = None     # the run's Scripts (SHA1s EVALSHA may name)
        self.payloads = None    # the run's DUMP payloads from Redis (RESTORE's)
        self.past_keys = []     # keys a script SET with a past EXAT/PXAT
        self.in_multi = False   # drawn for a transaction (blocking pops)

    def pick(self, pool):
        return self.rng.choice(pool)

    def chance(self, p):
        return self.rng.random() < p

    def case(self, word):
        """word in random case (upper mostly)."""
        r = self.rng.random()
        if r < 0.6:
            return word.upper()
        if r < 0.8:
            return word.lower()
        return bytes(c ^ 0x20 if (65 <= (c & ~0x20) <= 90 and self.rng.random() < 0.5)
                     else c for c in word)

    def opt(self, word):
        self.opts.append(word.upper().decode())
        return self.case(word)

    def bad_opt(self):
        self.opts.append("<invalid>")
        return self.pick([b"NOPE", b"EXX", b"", b"-", b"N X", b"\x00"])

    def key(self, wrongtype=False):
        if self.limiters and wrongtype and self.chance(0.15):
            return self.pick(LIMITER_KEYS)
        # The collections' own keys: a string command meets them now and
        # then (WRONGTYPE), the key commands (DEL, TYPE, RENAME...) often.
        if self.chance(0.1 if wrongtype else 0.3):
            return self.pick(HOME_ALL)
        return self.pick(KEY_POOL)

    def keys(self, lo=1, hi=4):
        return [self.key() for _ in range(self.rng.randint(lo, hi))]

    def val(self):
        r = self.rng.random()
        if r < 0.8:
            return self.pick(VALUE_POOL)
        if r < 0.9:
            return bytes(self.rng.randrange(256) for _ in range(self.rng.randint(1, 40)))
        if r < 0.99:
            return b"x" * self.rng.randint(100, 2000)
        return b"L" * self.rng.randint(20000, 70000)

    def int_(self):
        if self.chance(0.3):
            return str(self.rng.randint(-1000, 1000)).encode()
        return self.pick(INT_POOL)

    def float_(self):
        if self.chance(0.3):
            return ("%.*f" % (self.rng.randint(0, 6), self.rng.uniform(-1e4, 1e4))).encode()
        return self.pick(FLOAT_POOL)

    def _rel(self, unit_ms):
        """A relative expiry: far in the future (never reached while the run
        lasts, so no key expires between the two servers' reads), zero,
        negative, huge or not a number."""
        r = self.rng.random()
        if r < 0.6:
            secs = self.rng.randint(10000, 10000000)
            return str(secs * 1000 // unit_ms).encode()
        if r < 0.7:
            return b"0"
        if r < 0.8:
            return str(-self.rng.randint(1, 100000)).encode()
        return self.pick([b"9223372036854775807", b"9223372036854775806",
                          b"9223372036854", b"9223372036854775", b"-9223372036854775808",
                          b"99999999999999999999", b"abc", b"1.5", b"", b"1e3"])

    def _abs(self, unit_ms):
        """An absolute expiry: in the past, far in the future, or bad."""
        now_ms = int(time.time() * 1000)
        r = self.rng.random()
        if r < 0.4:
            t = now_ms + self.rng.randint(10000, 10000000) * 1000
            return str(t // unit_ms).encode()
        self.past = True
        if r < 0.7:
            t = self.pick([1, 1000, now_ms - self.rng.randint(1000, 10 ** 9)])
        elif r < 0.8:
            t = 0
        else:
            return self._rel(unit_ms)
        return str(t // unit_ms).encode()

    def secs(self):
        return self._rel(1000)

    def ms(self):
        return self._rel(1)

    def unix_s(self):
        return self._abs(1000)

    def unix_ms(self):
        return self._abs(1)

    def expiry_opt(self, words=(b"EX", b"PX", b"EXAT", b"PXAT")):
        w = self.pick(list(words))
        num = {b"EX": self.secs, b"PX": self.ms, b"EXAT": self.unix_s,
               b"PXAT": self.unix_ms}[w]()
        out = [self.opt(w)]
        if not self.chance(0.03):          # sometimes the number is missing
            out.append(num)
        return out

    def db(self):
        if self.chance(0.7):
            return str(self.rng.randint(0, 3)).encode()
        return self.pick(DB_POOL)

    def pattern(self):
        return self.pick(PATTERNS)

    def shuffled_groups(self, groups):
        """Options given as lists of words, in random order, flattened."""
        self.rng.shuffle(groups)
        return [w for g in groups for w in g]


# ---- generators, one per command ----------------------------------------------

def g_get(g): return [g.key(True)]
def g_getdel(g): return [g.key(True)]
def g_strlen(g): return [g.key(True)]
def g_incr(g): return [g.key(True)]
def g_decr(g): return [g.key(True)]
def g_incrby(g): return [g.key(True), g.int_()]
def g_decrby(g): return [g.key(True), g.int_()]
def g_incrbyfloat(g): return [g.key(True), g.float_()]
def g_append(g): return [g.key(True), g.val()]
def g_getset(g): return [g.key(True), g.val()]
def g_setnx(g): return [g.key(True), g.val()]
def g_setex(g): return [g.key(), g.secs(), g.val()]
def g_psetex(g): return [g.key(), g.ms(), g.val()]
def g_getrange(g): return [g.key(True), g.int_(), g.int_()]


def g_setrange(g):
    # Offsets stay small or are out of range: never a 512 MB string.
    off = g.pick([b"0", b"1", b"5", b"100", b"1000", b"-1", b"x", b"536870912",
                  b"536870911", b"99999999999999999999", b"1.5"])
    v = g.val()
    if off == b"536870911" and v:
        v = b""
    return [g.key(True), off, v]


def g_set(g):
    groups = []
    r = g.rng.random()
    if r < 0.2:
        groups.append([g.opt(b"NX")])
    elif r < 0.4:
        groups.append([g.opt(b"XX")])
    elif r < 0.43:
        groups += [[g.opt(b"NX")], [g.opt(b"XX")]]
    if g.chance(0.25):
        groups.append([g.opt(b"GET")])
    r = g.rng.random()
    if r < 0.45:
        groups.append(g.expiry_opt())
    elif r < 0.55:
        groups.append([g.opt(b"KEEPTTL")])
    elif r < 0.6:
        groups += [g.expiry_opt(), g.expiry_opt() if g.chance(0.5) else [g.opt(b"KEEPTTL")]]
    if g.chance(0.03):
        groups.append([g.bad_opt()])
    return [g.key(True), g.val()] + g.shuffled_groups(groups)


def g_getex(g):
    groups = []
    r = g.rng.random()
    if r < 0.6:
        groups.append(g.expiry_opt())
    elif r < 0.75:
        groups.append([g.opt(b"PERSIST")])
    elif r < 0.8:
        groups += [g.expiry_opt(), [g.opt(b"PERSIST")] if g.chance(0.5) else g.expiry_opt()]
    if g.chance(0.03):
        groups.append([g.bad_opt()])
    return [g.key(True)] + g.shuffled_groups(groups)


def g_mget(g): return g.keys(1, 5)


def g_mset(g):
    out = []
    for k in g.keys(1, 4):
        out += [k, g.val()]
    return out


g_msetnx = g_mset


def g_expire_like(num):
    def gen(g):
        out = [g.key(), num(g)]
        r = g.rng.random()
        words = [b"NX", b"XX", b"GT", b"LT"]
        if r < 0.5:
            out.append(g.opt(g.pick(words)))
        elif r < 0.6:
            out += [g.opt(g.pick(words)), g.opt(g.pick(words))]
        elif r < 0.66:
            out.append(g.bad_opt())
        return out
    return gen


def g_key1(g): return [g.key()]
def g_keys_n(g): return g.keys(1, 4)


def g_rename(g): return [g.key(), g.key()]


def g_copy(g):
    groups = []
    if g.chance(0.4):
        groups.append([g.opt(b"DB"), g.db()] if not g.chance(0.03) else [g.opt(b"DB")])
    if g.chance(0.4):
        groups.append([g.opt(b"REPLACE")])
    if g.chance(0.06):
        groups.append([g.bad_opt()])
    return [g.key(), g.key()] + g.shuffled_groups(groups)


def g_keys(g): return [g.pattern()]


def g_scan(g):
    # Only cursors that mean 0 or are invalid: where a scan resumes from any
    # other cursor is each server's own business.
    cursor = b"0" if g.chance(0.9) else g.pick(
        [b"x", b"1.5", b"", b"+", b"-", b"-0", b"99999999999999999999",
         b"18446744073709551616", b"+0", b" 0", b"0 ", b"0x0", b"00"])
    groups = []
    if g.chance(0.4):
        groups.append([g.opt(b"MATCH"), g.pattern()])
    if g.chance(0.4):
        groups.append([g.opt(b"COUNT"), g.pick([b"1", b"2", b"10", b"1000", b"0", b"-1",
                                                b"x", b"99999999999999999999"])])
    if g.chance(0.3):
        # Planted keys are a hash in Redis and a limiter in cellgate.
        words = [w for w in TYPE_WORDS if not g.planted or w not in (b"hash", b"gcra")]
        groups.append([g.opt(b"TYPE"), g.case(g.pick(words))])
    if g.chance(0.08):
        groups.append([g.bad_opt()])
    if g.chance(0.03) and groups:
        groups[-1] = groups[-1][:1]        # an option without its value
    return [cursor] + g.shuffled_groups(groups)


def g_none(g): return []


def g_select(g): return [g.db()]
def g_move(g): return [g.key(), g.db()]
def g_swapdb(g): return [g.db(), g.db()]


def g_flush(g):
    r = g.rng.random()
    if r < 0.25:
        return [g.opt(b"ASYNC")]
    if r < 0.5:
        return [g.opt(b"SYNC")]
    if r < 0.85:
        return [g.bad_opt()]
    return []


def g_watch(g): return g.keys(1, 3)


def g_ping(g):
    return [g.val()] if g.chance(0.5) else []


def g_echo(g): return [g.val()]


def g_cl_throttle(g):
    return [g.pick(LIMITER_KEYS), b"5", b"10", b"60", b"1"]


def g_increx(g):
    return [g.pick(LIMITER_KEYS), b"1"]


# ---- collections: lists, hashes, sorted sets (issue 28) ------------------------

# Few members and fields, so that writes meet what earlier ones made; some
# longer than 64 bytes (Redis 7.0 then leaves its listpack encoding) and
# binary; several that sort next to each other for the lex ranges.
MEMBER_POOL = [b"a", b"b", b"c", b"aa", b"ab", b"b\x00", b"", b"m1", b"m2", b"1",
               b"-1", b"1.5", b"A", b"\x00\xff", b"\xe2\x82\xac", b"z" * 64,
               b"y" * 65, b"\r\n", b"f", b"x"]
SCORE_POOL = [b"0", b"0", b"0", b"1", b"-1", b"2", b"1.5", b"-2.5", b"inf", b"-inf",
              b"+inf", b"nan", b"1e308", b"-0", b"abc", b"", b"0x10", b"1e400",
              b"5e-324", b"9007199254740993", b"(1", b" 1", b"1.7976931348623157e308",
              b"3.0e2", b".5", b"10"]
SCORE_RANGE_POOL = [b"-inf", b"+inf", b"inf", b"(-inf", b"(+inf", b"0", b"(0", b"1",
                    b"(1", b"-1", b"(-1", b"1.5", b"(1.5", b"2", b"(2", b"10", b"((1",
                    b"(", b"[1", b"nan", b"(nan", b"abc", b"", b"1e400", b"-0", b"(-0",
                    b"5e-324"]
LEX_POOL = [b"-", b"+", b"[a", b"(a", b"[b", b"(b", b"[aa", b"(ab", b"[", b"(",
            b"[\x00\xff", b"(m1", b"[m2", b"[zzz", b"(A", b"a", b"", b"-a", b"+b",
            b"[" + b"z" * 64, b"(\xe2\x82\xac"]
INDEX_POOL = [b"0", b"0", b"1", b"-1", b"2", b"-2", b"3", b"5", b"-5", b"10", b"-10",
              b"100", b"-100", b"1000", b"9223372036854775807", b"-9223372036854775808",
              b"9223372036854775808", b"-9223372036854775809", b"abc", b"1.5", b"",
              b"+1", b" 1", b"0x1", b"4294967296", b"-4294967297"]
COUNT_POOL = [b"0", b"1", b"2", b"3", b"5", b"10", b"100", b"-1", b"-5", b"x", b"",
              b"1.5", b"9223372036854775807", b"-9223372036854775808",
              b"99999999999999999999", b"4294967296"]
# Cursors that mean 0 or are invalid (as for SCAN).
HSCAN_CURSORS = [b"x", b"1.5", b"", b"-0", b"99999999999999999999",
                 b"18446744073709551616", b" 0", b"0 ", b"0x0", b"+0"]
# Where the generated bulk writes go (more than 128 elements at once):
# their own short names, so later single writes still meet the few above.
BULK_MAX = 200


def member(g):
    r = g.rng.random()
    if r < 0.85:
        return g.pick(MEMBER_POOL)
    if r < 0.95:
        return bytes(g.rng.randrange(256) for _ in range(g.rng.randint(1, 12)))
    return b"L" * g.rng.randint(60, 300)


def cval(g):
    """An element or hash value: short mostly (so bulk writes stay small)."""
    r = g.rng.random()
    if r < 0.5:
        return g.pick(MEMBER_POOL)
    if r < 0.95:
        return g.pick(VALUE_POOL)
    return g.val()


def score(g):
    r = g.rng.random()
    if r < 0.35:
        return str(g.rng.randint(-5, 5)).encode()
    if r < 0.45:
        return ("%.*f" % (g.rng.randint(0, 3), g.rng.uniform(-10, 10))).encode()
    return g.pick(SCORE_POOL)


def srange(g):
    if g.chance(0.45):
        return ("(" if g.chance(0.4) else "").encode() + str(g.rng.randint(-5, 5)).encode()
    return g.pick(SCORE_RANGE_POOL)


def lex(g):
    return g.pick(LEX_POOL)


def index(g):
    if g.chance(0.4):
        return str(g.rng.randint(-8, 8)).encode()
    return g.pick(INDEX_POOL)


def count(g):
    if g.chance(0.3):
        return str(g.rng.randint(0, 8)).encode()
    return g.pick(COUNT_POOL)


def ckey(g, kind):
    """A collection command's key: its type's HOME mostly, another type's
    or one of KEY_POOL's (strings...) sometimes; a list or a hash command
    LEX_KEYS now and then. A planted CL.THROTTLE key is a string on both
    sides; the other limiters' keys are a hash in Redis, so hash commands
    never draw those."""
    if g.limiters and g.chance(0.06):
        return g.pick(PLANT_STRINGS if kind == "hash" else LIMITER_KEYS)
    if kind != "zset" and g.chance(0.04):
        return g.pick(LEX_KEYS)
    r = g.rng.random()
    if r < 0.72:
        return g.pick(HOME[kind])
    if r < 0.86:
        return g.pick(HOME_ALL)
    return g.pick(KEY_POOL)


def lkey(g): return ckey(g, "list")
def hkey(g): return ckey(g, "hash")
def zkey(g): return ckey(g, "zset")


def lexkey(g):
    if g.limiters and g.chance(0.06):
        return g.pick(LIMITER_KEYS)
    return g.pick(LEX_KEYS)


def bulk_n(g):
    return g.rng.randint(120, BULK_MAX)


# lists

def g_push(g):
    if g.chance(0.04):
        g.opts.append("<bulk>")
        n = bulk_n(g)
        return [lkey(g)] + [b"e%d" % g.rng.randrange(400) for _ in range(n)]
    return [lkey(g)] + [cval(g) for _ in range(g.rng.randint(1, 4))]


def g_pop(g):
    if g.chance(0.5):
        return [lkey(g), count(g)]
    return [lkey(g)]


def g_lkey1(g): return [lkey(g)]
def g_zkey1(g): return [zkey(g)]
def g_hkey1(g): return [hkey(g)]
def g_lindex(g): return [lkey(g), index(g)]
def g_lrange(g): return [lkey(g), index(g), index(g)]
def g_ltrim(g): return [lkey(g), index(g), index(g)]
def g_lrem(g): return [lkey(g), index(g) if g.chance(0.3) else count(g), cval(g)]
def g_lset(g):
    i = str(g.rng.randint(-3, 3)).encode() if g.chance(0.6) else index(g)
    return [lkey(g), i, cval(g)]


def g_lpos(g):
    groups = []
    if g.chance(0.4):
        groups.append([g.opt(b"RANK"), g.pick([b"1", b"2", b"-1", b"-2", b"0", b"3",
                                               b"-9223372036854775808",
                                               b"9223372036854775807", b"x"])])
    if g.chance(0.4):
        groups.append([g.opt(b"COUNT"), count(g)])
    if g.chance(0.3):
        groups.append([g.opt(b"MAXLEN"), count(g)])
    if g.chance(0.08):
        groups.append([g.bad_opt()])
    if g.chance(0.03) and groups:
        groups[-1] = groups[-1][:1]
    return [lkey(g), cval(g)] + g.shuffled_groups(groups)


def g_linsert(g):
    where = g.opt(g.pick([b"BEFORE", b"AFTER"])) if not g.chance(0.05) else g.bad_opt()
    return [lkey(g), where, cval(g), cval(g)]


def g_lmove(g):
    ends = []
    for _ in range(2):
        ends.append(g.opt(g.pick([b"LEFT", b"RIGHT"])) if not g.chance(0.04)
                    else g.bad_opt())
    src = lkey(g)
    dst = src if g.chance(0.25) else lkey(g)
    return [src, dst] + ends


# list moves, the pops of several keys and the blocking pops

def block_timeout(g):
    """A blocking pop's timeout. Outside MULTI a tiny one (1 to 5 ms; the
    runner pushes to its first key first, see feed_first_key, so it never
    waits) or an invalid one; inside MULTI any (a transaction never
    blocks: an empty key answers nil at once)."""
    if g.chance(0.1):
        return g.pick([b"-1", b"x", b"", b"nan", b"inf", b"1e400", b" 1", b"-0.5"])
    if g.in_multi:
        return g.pick([b"0", b"0.5", b"100", b"1e-9", b"0.001", b"-0.0001", b"3"])
    return g.pick([b"0.001", b"0.002", b"0.005", b".003", b"1e-3", b"1e-9"])


def g_rpoplpush(g):
    src = lkey(g)
    return [src, src if g.chance(0.25) else lkey(g)]


def g_bpop(g): return [lkey(g) for _ in range(g.rng.randint(1, 3))] + [block_timeout(g)]
def g_bzpop(g): return [zkey(g) for _ in range(g.rng.randint(1, 3))] + [block_timeout(g)]
def g_brpoplpush(g): return g_rpoplpush(g) + [block_timeout(g)]
def g_blmove(g): return g_lmove(g) + [block_timeout(g)]


def mpop_args(g, keyf, sides):
    """numkeys, the keys, the side and maybe COUNT (LMPOP, ZMPOP)."""
    keys = [keyf(g) for _ in range(g.rng.randint(1, 3))]
    n = str(len(keys)).encode()
    if g.chance(0.06):
        n = g.pick([b"0", b"-1", b"x", b"9", b"9223372036854775807", b""])
    side = g.opt(g.pick(sides)) if not g.chance(0.05) else g.bad_opt()
    out = [n] + keys + [side]
    if g.chance(0.5):
        out += [g.opt(b"COUNT"), count(g)]
        if g.chance(0.04):
            out += [b"COUNT", b"1"]
    return out


def feed_first_key(name, args):
    """The request a blocking pop outside MULTI follows: a push to its
    first key, so that it answers at once (popping, or -WRONGTYPE when the
    key holds another type; a bad timeout or numkeys is refused first).
    Redis checks a waiting client's timeout only when its loop wakes (on
    an event or its 100 ms cron), so an empty key costs up to 100 ms
    there even with a 1 ms timeout."""
    key = args[2] if name in ("BLMPOP", "BZMPOP") else args[0]
    if name.startswith("BZ"):
        return (BY_NAME["ZADD"], [b"ZADD", key, b"1", b"fed"], False, [])
    return (BY_NAME["RPUSH"], [b"RPUSH", key, b"fed"], False, [])


def g_lmpop(g): return mpop_args(g, lkey, [b"LEFT", b"RIGHT"])
def g_zmpop(g): return mpop_args(g, zkey, [b"MIN", b"MAX"])
def g_blmpop(g): return [block_timeout(g)] + g_lmpop(g)
def g_bzmpop(g): return [block_timeout(g)] + g_zmpop(g)


# hashes

def field(g):
    return member(g)


def g_hset(g):
    if g.chance(0.04):
        g.opts.append("<bulk>")
        out = [hkey(g)]
        # Redis 7.0 keeps up to 512 fields (hash-max-listpack-entries) in
        # its listpack: some bulk writes go past that.
        if g.chance(0.4):
            fields = g.rng.sample(range(1000), g.rng.randint(500, 620))
        else:
            fields = [g.rng.randrange(400) for _ in range(bulk_n(g))]
        for f in fields:
            out += [b"f%d" % f, b"%d" % g.rng.randrange(1000)]
        return out
    out = [hkey(g)]
    for _ in range(g.rng.randint(1, 3)):
        out += [field(g), cval(g)]
    return out


def g_hsetnx(g): return [hkey(g), field(g), cval(g)]
def g_hget(g): return [hkey(g), field(g)]
def g_hfields(g): return [hkey(g)] + [field(g) for _ in range(g.rng.randint(1, 4))]
def g_hincrby(g): return [hkey(g), field(g), g.int_()]
def g_hincrbyfloat(g): return [hkey(g), field(g), g.float_()]


def scan_opts(g):
    groups = []
    if g.chance(0.35):
        groups.append([g.opt(b"MATCH"), g.pick(PATTERNS + [b"f*", b"a*", b"m?",
                                                           b"[ab]*"])])
    if g.chance(0.35):
        groups.append([g.opt(b"COUNT"), g.pick([b"1", b"2", b"10", b"1000", b"0", b"-1",
                                                b"x", b"99999999999999999999"])])
    if g.chance(0.06):
        groups.append([g.bad_opt()])
    if g.chance(0.03) and groups:
        groups[-1] = groups[-1][:1]
    return g.shuffled_groups(groups)


def g_hscan(g):
    cursor = b"0" if g.chance(0.92) else g.pick(HSCAN_CURSORS)
    return [hkey(g), cursor] + scan_opts(g)


def g_zscan(g):
    cursor = b"0" if g.chance(0.92) else g.pick(HSCAN_CURSORS)
    # LEX_KEYS' sets are the ones most often past 128 members.
    return [zkey(g) if g.chance(0.7) else lexkey(g), cursor] + scan_opts(g)


# sets (issue 37)

SET_INTS = [b"9223372036854775807", b"-9223372036854775808", b"9223372036854775808",
            b"007", b"+1", b"-0", b"0", b" 1", b"1e3"]


def smember(g, ints=False):
    """Mostly small integers (an intset's members), Redis's edge integers and
    integer-looking strings, the collections' members."""
    r = g.rng.random()
    if ints or r < 0.55:
        return str(g.rng.randint(-20, 40)).encode()
    if r < 0.65:
        return g.pick(SET_INTS)
    return member(g)


def skey(g):
    """A set command's key, and whether it takes integers only."""
    if g.chance(0.35) and not (g.limiters and g.chance(0.06)):
        return g.pick(INT_SET_KEYS), True
    return ckey(g, "set"), False


def g_sadd(g):
    k, ints = skey(g)
    if g.chance(0.04):
        g.opts.append("<bulk>")
        # Redis 7.0 keeps up to 512 integers in an intset.
        if g.chance(0.5):
            return [k] + [b"%d" % i for i in g.rng.sample(range(-300, 1000),
                                                          g.rng.randint(480, 620))]
        return [k] + [b"e%d" % g.rng.randrange(400) for _ in range(bulk_n(g))]
    return [k] + [smember(g, ints) for _ in range(g.rng.randint(1, 4))]


def g_smembers_n(g):
    k, ints = skey(g)
    return [k] + [smember(g, ints and g.chance(0.8)) for _ in range(g.rng.randint(1, 4))]


def g_sismember(g):
    k, ints = skey(g)
    return [k, smember(g, ints and g.chance(0.8))]


def g_skey1(g): return [skey(g)[0]]


def skeys(g, lo, hi):
    return [skey(g)[0] for _ in range(g.rng.randint(lo, hi))]


def g_skeys(g): return skeys(g, 1, 4)
def g_sstore(g): return [skey(g)[0]] + skeys(g, 1, 3)


def g_sintercard(g):
    keys = skeys(g, 1, 4)
    n = b"%d" % len(keys)
    if g.chance(0.08):
        n = g.pick([b"0", b"-1", b"x", b"%d" % (len(keys) + 1), b"", b"1"])
    out = [n] + keys
    if g.chance(0.4):
        out += [g.opt(b"LIMIT"), g.pick([b"0", b"1", b"2", b"5", b"-1", b"x", b"100"])]
    if g.chance(0.04):
        out += [g.bad_opt()]
    return out


SRAND_COUNTS = [b"0", b"1", b"2", b"3", b"5", b"-1", b"-3", b"-10", b"100", b"1000",
                b"x", b"", b"1.5", b"9223372036854775807", b"-9223372036854775808",
                b"99999999999999999999"]
SPOP_COUNTS = [b"0", b"1", b"2", b"3", b"1000", b"100000", b"9223372036854775807",
               b"-1", b"x", b"", b"1.5", b"-9223372036854775808"]


def g_srandmember(g):
    return [skey(g)[0]] + ([g.pick(SRAND_COUNTS)] if g.chance(0.7) else [])


def g_spop(g):
    return [skey(g)[0]] + ([g.pick(SPOP_COUNTS)] if g.chance(0.6) else [])


def g_smove(g):
    src, ints = skey(g)
    dst = src if g.chance(0.15) else skey(g)[0]
    return [src, dst, smember(g, ints and g.chance(0.8))]


def g_sscan(g):
    cursor = b"0" if g.chance(0.92) else g.pick(HSCAN_CURSORS)
    return [skey(g)[0], cursor] + scan_opts(g)


# sorted sets

ZADD_FLAGS = [b"NX", b"XX", b"GT", b"LT", b"CH", b"INCR"]


def g_zadd(g):
    flags = []
    for w in ZADD_FLAGS:
        if g.chance(0.12):
            flags.append(g.opt(w))
    g.rng.shuffle(flags)
    if g.chance(0.03):
        flags.append(g.bad_opt())
    lex_set = g.chance(0.3)       # members of score 0 in LEX_KEYS
    key = lexkey(g) if lex_set else zkey(g)
    if g.chance(0.04):
        g.opts.append("<bulk>")
        pairs = []
        for _ in range(bulk_n(g)):
            pairs += [b"0" if lex_set else b"%d" % g.rng.randrange(-50, 50),
                      b"m%d" % g.rng.randrange(400)]
        return [key] + flags + pairs
    pairs = []
    n = 1 if g.chance(0.5) else g.rng.randint(1, 4)
    for _ in range(n):
        pairs += [b"0" if lex_set else score(g), member(g)]
    if g.chance(0.03):
        pairs = pairs[:-1]                  # a score without its member
    return [key] + flags + pairs


def g_zrem(g): return [zkey(g)] + [member(g) for _ in range(g.rng.randint(1, 4))]
def g_zscore(g): return [zkey(g), member(g)]
def g_zmscore(g): return [zkey(g)] + [member(g) for _ in range(g.rng.randint(1, 4))]
def g_zcount(g): return [zkey(g), srange(g), srange(g)]
def g_zlexcount(g): return [lexkey(g), lex(g), lex(g)]
def g_zincrby(g): return [zkey(g), score(g), member(g)]
def g_zrank(g): return [zkey(g), member(g)]


def limit(g):
    out = [g.opt(b"LIMIT")]
    if not g.chance(0.03):
        out.append(g.pick([b"0", b"1", b"2", b"-1", b"5", b"100", b"x"]))
        if not g.chance(0.03):
            out.append(g.pick([b"0", b"1", b"2", b"3", b"-1", b"-5", b"10", b"x"]))
    return out


def g_zrange(g):
    r = g.rng.random()
    groups = []
    key = zkey(g) if g.chance(0.8) else lexkey(g)
    if r < 0.35:
        by, start, stop = [g.opt(b"BYSCORE")], srange(g), srange(g)
    elif r < 0.6:
        by, start, stop = [g.opt(b"BYLEX")], lex(g), lex(g)
        key = lexkey(g)
    elif r < 0.63:
        by, start, stop = [g.opt(b"BYSCORE"), g.opt(b"BYLEX")], srange(g), srange(g)
    else:
        by, start, stop = [], index(g), index(g)
    if by:
        groups.append(by)
    if g.chance(0.4):
        groups.append([g.opt(b"REV")])
    if g.chance(0.4 if by else 0.05):
        groups.append(limit(g))
    if g.chance(0.4):
        groups.append([g.opt(b"WITHSCORES")])
    if g.chance(0.03):
        groups.append([g.bad_opt()])
    return [key, start, stop] + g.shuffled_groups(groups)


def g_zrange_rank(g):
    out = [zkey(g), index(g), index(g)]
    if g.chance(0.5):
        out.append(g.opt(b"WITHSCORES"))
    if g.chance(0.08):
        out.append(g.bad_opt())
    return out


def g_zrangebyscore(g):
    groups = []
    if g.chance(0.4):
        groups.append([g.opt(b"WITHSCORES")])
    if g.chance(0.4):
        groups.append(limit(g))
    if g.chance(0.03):
        groups.append([g.bad_opt()])
    return [zkey(g), srange(g), srange(g)] + g.shuffled_groups(groups)


def g_zrangebylex(g):
    out = [lexkey(g), lex(g), lex(g)]
    if g.chance(0.4):
        out += limit(g)
    if g.chance(0.15):
        out.append(g.opt(b"WITHSCORES") if g.chance(0.5) else g.bad_opt())
    return out


def g_zremrangebyscore(g): return [zkey(g), srange(g), srange(g)]
def g_zremrangebyrank(g): return [zkey(g), index(g), index(g)]
def g_zremrangebylex(g): return [lexkey(g), lex(g), lex(g)]


def g_zpop(g):
    if g.chance(0.5):
        return [zkey(g), count(g)]
    return [zkey(g)]


# the algebra (issue 37): inputs from the sorted sets (the lex ones too),
# any type now and then; a destination never a lex key nor a planted
# limiter's (a STORE form replaces whatever it holds)

WEIGHT_POOL = [b"1", b"1", b"0", b"-1", b"2", b"0.5", b"-0.25", b"inf", b"-inf", b"-0",
               b"1e308", b"3", b"nan", b"x", b"", b" 1"]
AGGREGATES = [b"SUM", b"MIN", b"MAX", b"sum", b"min", b"max", b"avg", b""]


def zinput(g):
    """An input of the algebra: a sorted set, now and then a set (each
    member scored 1, as Redis reads one)."""
    r = g.rng.random()
    if r < 0.72:
        return zkey(g)
    if r < 0.85:
        return lexkey(g)
    g.opts.append("<set input>")
    return skey(g)[0]


def zinputs(g):
    n = g.rng.randint(1, 4)
    return n, [zinput(g) for _ in range(n)]


def numkeys(g, n):
    if g.chance(0.93):
        return str(n).encode()
    g.opts.append("<numkeys>")
    return g.pick([b"0", b"-1", b"x", str(n + 1).encode(), str(n + 7).encode(),
                   b"99999999999999999999", b" 1", b"01", b""])


def zdest(g):
    limiters, g.limiters = g.limiters, False
    key = zkey(g)
    g.limiters = limiters
    return key


def zalg_opts(g, n, scored, withscores, card=False):
    groups = []
    if scored and g.chance(0.4):
        ws = [g.pick(WEIGHT_POOL) if g.chance(0.3) else str(g.rng.randint(-3, 3)).encode()
              for _ in range(n)]
        if g.chance(0.04):
            ws = ws[:-1]                    # one weight short
        groups.append([g.opt(b"WEIGHTS")] + ws)
    if scored and g.chance(0.35):
        groups.append([g.opt(b"AGGREGATE"), g.pick(AGGREGATES)])
    if withscores and g.chance(0.45):
        groups.append([g.opt(b"WITHSCORES")])
    if card and g.chance(0.5):
        groups.append([g.opt(b"LIMIT"), g.pick([b"0", b"1", b"2", b"5", b"-1", b"x",
                                                b"9223372036854775807"])])
    if g.chance(0.1):
        groups.append([g.bad_opt() if g.chance(0.6) else
                       g.opt(g.pick([b"WITHSCORES", b"WEIGHTS", b"LIMIT", b"AGGREGATE"]))])
    return g.shuffled_groups(groups)


def g_zalg(store, scored, withscores, card=False):
    def gen(g):
        n, keys = zinputs(g)
        head = [zdest(g)] if store else []
        return head + [numkeys(g, n)] + keys + zalg_opts(g, n, scored, withscores, card)
    return gen


def g_zrangestore(g):
    """ZRANGE's forms (BYLEX reads the lex keys) into a destination;
    WITHSCORES now and then, which the STORE form refuses."""
    args = g_zrange(g)
    if g.chance(0.9):
        args = [a for a in args if a.upper() != b"WITHSCORES"]
    return [zdest(g)] + args


# ZRANDMEMBER, HRANDFIELD: counts whose answer is random (compared by
# shape, count and membership: RANDOM), whole (a count of the size or
# more) or an error; never a huge negative count that is not an error
# whatever follows it (a wrong arity drops WITHSCORES): Redis would draw
# that many.
RAND_COUNTS = [b"0", b"1", b"2", b"3", b"5", b"-1", b"-2", b"-7", b"50", b"300", b"-300",
               b"x", b"", b"1.5", b" 1", b"-9223372036854775808", b"9223372036854775807",
               b"9223372036854775808"]
RAND_WITH_ONLY = [b"4611686018427387904", b"4611686018427387903"]


def g_rand(word, keyf):
    def gen(g):
        key = keyf(g)
        r = g.rng.random()
        if r < 0.2:
            return [key]
        with_ = g.chance(0.45)
        cnt = g.pick(RAND_COUNTS)
        if g.chance(0.3):
            cnt = str(g.rng.randint(-12, 12)).encode()
        elif with_ and g.chance(0.2):
            cnt = g.pick(RAND_WITH_ONLY)
        out = [key, cnt]
        if with_:
            out.append(g.opt(word) if g.chance(0.85) else g.bad_opt())
        return out
    return gen


# ---- scripts: EVAL, EVALSHA, EVAL_RO, SCRIPT LOAD|EXISTS|FLUSH -------------------

# The grammar's commands a generated script may call (redis.call and
# redis.pcall, on the same keys as the plain stream): not the scans and
# transactions (their replies' order or a script's refusal of them are
# drawn apart, see SCRIPT_DENIED), not the limiters, not SELECT (a key a
# script SETs with a past EXAT is read right after it, in the caller's
# database: see past_keys).
SCRIPT_SKIP = {"SCAN", "HSCAN", "ZSCAN", "MULTI", "EXEC", "DISCARD", "WATCH", "UNWATCH",
               "CL.THROTTLE", "INCREX", "SELECT", "RANDOMKEY", "SSCAN", "SRANDMEMBER",
               "SPOP", "ZRANDMEMBER", "HRANDFIELD", "DUMP"}
# Replies whose order is Redis's hash table's (or KEYS'): a script returns
# their length. TTL and friends: whether positive (the clocks differ).
SCRIPT_COUNTED = {"HGETALL", "HKEYS", "HVALS", "KEYS", "SMEMBERS", "SINTER",
                  "SUNION", "SDIFF"}
SCRIPT_TIMED = {"TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"}
SCRIPT_DENIED = [[b"multi"], [b"exec"], [b"watch", b"k"], [b"eval", b"return 1", b"0"],
                 [b"script", b"load", b"return 1"], [b"subscribe", b"c"], [b"nosuch"],
                 [b"zunionx", b"1", b"k"],
                 [b"hello", b"3"]]
# What a generated script did: the coverage report's "options" of EVAL.
SCRIPT_FEATURES = ("<call>", "<pcall>", "<int>", "<float>", "<huge>",
                   "<negative>", "<string>", "<bool>", "<nil>", "<array>", "<holes>",
                   "<nested>", "<ok>", "<err>", "<double>", "<map>", "<set>",
                   "<status_reply>", "<error_reply>", "<error()>", "<error({err})>",
                   "<runtime error>", "<lua pcall>", "<global write>",
                   "<global read>", "<readonly table>", "<setresp3>", "<KEYS>", "<ARGV>",
                   "<random>", "<loop>", "<denied>", "<bad args>", "<shebang>",
                   "<numkeys>", "<big_number>", "<lua lib>", "<deep>", "<select>",
                   "<syntax error>", "<number arg>")
LUA_NUMERAL = re.compile(rb"^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")
SCRIPT_RECENT = 300     # EVALSHA only of bodies fewer EVALs ago (cellgate forgets beyond 500)


def lua_str(b):
    """bytes as a Lua string literal (every other byte as \\ddd)."""
    out = []
    for c in b:
        if 32 <= c < 127 and c not in (34, 92):
            out.append(chr(c))
        else:
            out.append("\\%03d" % c)
    return '"' + "".join(out) + '"'


class Scripts:
    """The SHA1s the generators may name: loaded ones (SCRIPT LOAD) and the
    last EVALs' (see note). A FLUSH in a discarded transaction forgets
    them here only: fewer to name, no false mismatch."""

    def __init__(self):
        self.loaded = []
        self.recent = collections.deque(maxlen=SCRIPT_RECENT)   # (sha, evals then)
        self.evals = 0          # EVALs generated: each compiles one body at most
        self.past = {}          # SHA1 -> keys its body SETs with a past EXAT

    def recent_shas(self):
        """The recent bodies fewer than SCRIPT_RECENT EVALs (of any kind:
        in MULTI too, not noted) ago: not one of them can have been pushed
        out of cellgate's 500 since."""
        return [sha for sha, at in self.recent if self.evals - at < SCRIPT_RECENT]

    def sha(self, body):
        import hashlib
        return hashlib.sha1(body).hexdigest().encode()

    def note(self, name, full, reply, in_multi):
        """After the reply: a script compiled (SCRIPT LOAD answered its
        SHA1, or EVAL ran it: not a refusal before compiling). Only then:
        an EVAL that was not run (a wrong arity, queued and discarded)
        must not make an old body recent again, since cellgate forgets
        EVAL-only bodies beyond 500 and Redis 7.0 never does."""
        if in_multi or len(full) < 3:
            return
        raw = reply.raw
        if name == "SCRIPT LOAD" and raw.startswith(b"$40\r\n"):
            self.loaded.append(self.sha(full[2]))
            if len(self.loaded) > 200:
                del self.loaded[:100]
        elif name in ("EVAL", "EVAL_RO") and not raw.startswith(
                (b"-ERR wrong number", b"-ERR Number of keys",
                 b"-ERR value is not an integer", b"-ERR Error compiling",
                 b"-ERR Invalid script shebang", b"-ERR Unexpected flag",
                 b"-ERR Unknown lua shebang")):
            self.recent.append((self.sha(full[1]), self.evals))


class ScriptGen:
    """One generated script: statements, then a return."""

    def __init__(self, g, resp3=False):
        self.g = g
        self.rng = g.rng
        self.nlocals = 0
        self.lines = []
        self.past_keys = []
        self.deep = None        # a local nested deep: mostly returned
        self.selected = False   # the script SELECTed another database

    def feat(self, name):
        self.g.opts.append(name)

    def local(self):
        self.nlocals += 1
        return "v%d" % self.nlocals

    def arg(self, a):
        """An argument of redis.call: its bytes, or now and then the Lua
        number it spells (Redis sends an integral one as %lld, any other
        as %.17g: 0.1 becomes 0.10000000000000001)."""
        r = self.rng.random()
        if r < 0.12 and LUA_NUMERAL.match(a) and len(a) < 40:
            # Only where Redis then gets the same integer or a
            # non-integer: "1e3" or "007" as numbers would turn an invalid
            # expiry into 1000 ms or 7 ms, and keys would expire while the
            # run lasts (each server's active expiry is its own).
            v = float(a)
            if (a.lstrip(b"-").isdigit() and a == b"%d" % int(a)) or \
                    (v == v and abs(v) != float("inf") and v != int(v)):
                self.feat("<number arg>")
                return a.decode()
        return lua_str(a)

    def command(self):
        """(lua argument list, post) of a call to one of the grammar's
        commands; post wraps the reply."""
        g = self.g
        if self.rng.random() < 0.04:
            self.feat("<denied>")
            words = self.rng.choice(SCRIPT_DENIED)
            return ", ".join(lua_str(w) for w in words), None
        if self.rng.random() < 0.06:
            self.feat("<bad args>")
            return self.rng.choice(["", "", "", "{}", "'get', {}", "'get', nil", "'set', 'k', true",
                                    "'get', 1.5", "nil", "'incrby', 'k', 2.5",
                                    "'set', 'k', -0.25"]), None
        for _ in range(10):
            cmd = self.rng.choice(SCRIPT_CMDS)
            sub = Gen(self.rng)
            args = cmd.gen(sub)
            # After the script's SELECT, a key SET with a past EXAT would be
            # in a database past_keys' EXISTS does not read.
            if not (self.selected and sub.past and cmd.name == "SET"):
                break
        else:
            cmd, args = BY_NAME["PING"], []
        if sub.past and cmd.name == "SET":
            self.past_keys.append(args[0])
        words = [cmd.name.encode()] + args
        text = ", ".join([lua_str(g.case(words[0]))] + [self.arg(a) for a in words[1:]])
        post = None
        if cmd.name in SCRIPT_COUNTED:
            post = "count"
        elif cmd.name in SCRIPT_TIMED:
            post = "timed"
        return text, post

    def call(self, protected=None):
        """An expression: redis.call or redis.pcall of a command."""
        text, post = self.command()
        if protected is None:
            protected = self.rng.random() < 0.4
        self.feat("<pcall>" if protected else "<call>")
        how = "redis.pcall" if protected else "redis.call"
        e = "%s(%s)" % (how, text)
        if post == "count":
            return "(function(r) if type(r) == 'table' and not r.err then return #r end " \
                   "return r end)(%s)" % e
        if post == "timed":
            return "(function(r) if type(r) == 'number' and r > 0 then return 1 end " \
                   "return r end)(%s)" % e
        return e

    def number(self):
        r = self.rng.random()
        if r < 0.4:
            self.feat("<int>")
            return str(self.rng.randint(-100, 100))
        if r < 0.7:
            self.feat("<float>")
            return self.rng.choice(["3.99", "-3.99", "-0.5", "0.5", "1.5e3", "-2.25", "0.1",
                                    "1/3", "-1/3", "100.0001"])
        if r < 0.85:
            self.feat("<huge>")
            return self.rng.choice(["1e100", "-1e100", "2^53", "2^53+1", "2^63", "-2^63",
                                    "2^62", "9007199254740993", "1e308", "0/0", "1/0", "-1/0",
                                    "123456789012345678901234567890", "-9.2e18"])
        self.feat("<negative>")
        return str(-self.rng.randint(1, 10 ** 12))

    def string(self):
        self.feat("<string>")
        r = self.rng.random()
        if r < 0.5:
            return lua_str(self.g.val() if self.rng.random() < 0.5 else
                           self.rng.choice(MEMBER_POOL))
        return self.rng.choice(['""', '"x"', '"OK"', '"a\\0b"', '"\\r\\n"', '"1"', '"-5"',
                                '"3.5"', '"ERR fake"', '"-ERR x"', '"  pad"',
                                "string.rep('ab', 40)", "tostring(12.5)", "'a' .. 1",
                                "string.format('%d:%s', 7, 'x')", "('x'):upper()"])

    def err_text(self):
        """A string for redis.error_reply: without CR or LF (a CR or LF at
        the start of its text or after its code word: see
        /work/notes/script-mismatches.md, 3)."""
        return self.string().replace("\\013", "").replace("\\010", "")

    def var(self):
        if self.nlocals and self.rng.random() < 0.6:
            return "v%d" % self.rng.randint(1, self.nlocals)
        if self.rng.random() < 0.5:
            self.feat("<KEYS>")
            return self.rng.choice(["KEYS[1]", "KEYS[2]", "#KEYS", "KEYS"])
        self.feat("<ARGV>")
        return self.rng.choice(["ARGV[1]", "ARGV[2]", "#ARGV", "ARGV", "tonumber(ARGV[1])"])

    def table(self, depth):
        r = self.rng.random()
        if r < 0.35:
            n = self.rng.randint(0, 5)
            items = []
            for _ in range(n):
                if self.rng.random() < 0.15:
                    self.feat("<holes>")
                    items.append("nil")
                else:
                    items.append(self.value(depth + 1))
            self.feat("<array>")
            return "{" + ", ".join(items) + "}"
        if r < 0.45:
            self.feat("<ok>")
            return "{ok=%s}" % (self.string() if self.rng.random() < 0.8 else self.value(depth + 1))
        if r < 0.55:
            self.feat("<err>")
            return "{err=%s}" % (self.string() if self.rng.random() < 0.8 else self.value(depth + 1))
        if r < 0.65:
            self.feat("<double>")
            return "{double=%s}" % (self.number() if self.rng.random() < 0.85 else self.string())
        if r < 0.72:
            self.feat("<map>")
            # one field at most: a Lua table's order is its hash's
            if self.rng.random() < 0.2:
                return "{map={}}"
            return "{map={[%s]=%s}}" % (self.string(), self.value(depth + 1))
        if r < 0.78:
            self.feat("<set>")
            if self.rng.random() < 0.2:
                return "{set={}}"
            return "{set={[%s]=true}}" % self.string()
        if r < 0.82:
            self.feat("<big_number>")
            return "{big_number=%s}" % self.rng.choice(['"123"', '"-1"', '"1e5"', '"12345678901234567890"'])
        self.feat("<nested>")
        return "{%s, {%s, {%s}}, %s}" % (self.value(depth + 1), self.value(depth + 1),
                                         self.value(depth + 1), self.value(depth + 1))

    def value(self, depth=0):
        r = self.rng.random()
        if depth > 2:
            r = r * 0.45
        if r < 0.12:
            return self.number()
        if r < 0.24:
            return self.string()
        if r < 0.3:
            self.feat("<bool>")
            return self.rng.choice(["true", "false"])
        if r < 0.33:
            self.feat("<nil>")
            return "nil"
        if r < 0.45:
            return self.var()
        if r < 0.65:
            return self.table(depth)
        if r < 0.8:
            return self.call()
        if r < 0.87:
            if self.rng.random() < 0.5:
                self.feat("<status_reply>")
                return "redis.status_reply(%s)" % self.string()
            self.feat("<error_reply>")
            return "redis.error_reply(%s)" % self.err_text()
        if r < 0.93:
            self.feat("<lua pcall>")
            return "{pcall(function() %s end)}" % self.failing()
        self.feat("<lua lib>")
        return self.rng.choice([
            "tostring(%s)" % self.number(), "type(%s)" % self.var(),
            "(%s) .. ''" % self.string(), "#(%s)" % self.string(),
            "redis.sha1hex(%s)" % self.string(), "select('#', %s, nil)" % self.number(),
            "{unpack({1, 2, 3}, %s, %s)}" % (self.rng.randint(-2, 3), self.rng.randint(0, 5)),
            "{unpack({}, 1, %s)}" % self.rng.choice(["1e8", "2^31", "-2^31", "10"]),
            "bit.tohex(%s)" % self.number(), "bit.band(%s, 255)" % self.number(),
            "bit.bor(%s, 1)" % self.number(), "tonumber(%s)" % self.string(),
            "string.format('%%5.2f|%%q|%%d', %s, %s, %s)" % (self.number(), self.string(),
                                                          self.rng.randint(-9, 9)),
            "{pcall(redis.call%s)}" % self.rng.choice(["", ", 'get'", ", 'ping'",
                                                       ", 'incr', 'k'"]),
            "redis.status_reply(%s)" % self.rng.choice(["nil", "{}", "1"]),
            "redis.error_reply(%s)" % self.rng.choice(["nil", "{}", "12"]),
            "redis.sha1hex()", "loadstring(%s)" % self.string(),
            "(loadstring('return ' .. %s) or type)()" % self.rng.choice(
                ["'1'", "'1 +'", "'{1, 2}'", "'KEYS'", "'nosuch'"]),
            "math.huge", "-math.huge", "math.floor(%s)" % self.number(),
            "math.fmod(%s, 3)" % self.number(), "string.rep('ab', %d)" % self.rng.randint(0, 50),
            "table.concat({%s, %s}, ',')" % (self.string(), self.number()),
            "function() end", "coroutine.create(function() end)",
            "(function(...) return select('#', ...) end)(%s, nil, nil)" % self.var(),
            "cmsgpack.pack(%s, %s)" % (self.number(), self.string()),
            "{cmsgpack.unpack(cmsgpack.pack({%s, %s}, %s))}" % (
                self.number(), self.string(), self.number()),
            "{cmsgpack.unpack_one(cmsgpack.pack(%s, %s))}" % (self.string(), self.number()),
            "{cmsgpack.unpack_limit(cmsgpack.pack(1, %s, 3), %d)}" % (
                self.string(), self.rng.randint(-1, 4)),
            "cmsgpack.unpack(%s)" % self.string(),
            "struct.pack('>iHb', %d, %d, %d)" % (self.rng.randint(-99, 99),
                                                 self.rng.randint(0, 9), self.rng.randint(0, 9)),
            "{struct.unpack('<i', struct.pack('<i', %d))}" % self.rng.randint(-2**31, 2**31 - 1),
            "struct.size('>iHbd')", "{struct.unpack('>I', %s)}" % self.string(),
        ])

    def failing(self):
        """A statement that raises, or may."""
        r = self.rng.random()
        if r < 0.2:
            self.feat("<error()>")
            return "error(%s)" % self.rng.choice([self.string(), '"boom"', "'x', 0", "'lvl', 2",
                                                  self.number()])
        if r < 0.35:
            self.feat("<error({err})>")
            # Not a text starting with '-': cellgate drops that '-' (see
            # /work/notes/script-mismatches.md, 1).
            text = self.rng.choice([self.string(), '"MYERR code"', '"ERR plain"'])
            if text.startswith('"-') or text.startswith('"\\045'):
                text = '"ERR plain"'
            return "error({err=%s})" % text
        if r < 0.45:
            self.feat("<error()>")
            return "error(redis.error_reply(%s))" % self.err_text()
        if r < 0.65:
            self.feat("<runtime error>")
            return self.rng.choice(["local x = nil + 1", "local x = {} .. 'a'",
                                    "local x = ('a')()", "local x = #nil",
                                    "local x = string.rep()", "local x = ({}).a.b",
                                    "local x = 1 < 'a'", "local x = math.floor('z')",
                                    "local x = string.sub()", "local x = tonumber()",
                                    "local x = redis.call('get', KEYS[1]) + 1"])
        if r < 0.75:
            self.feat("<global write>")
            return self.rng.choice(["x = 1", "_G.y = 2", "function f() end",
                                    "rawset(_G, 'z', 1)"])
        if r < 0.85:
            self.feat("<global read>")
            return self.rng.choice(["local x = nosuch", "local x = print",
                                    "local x = os.time()", "local x = a.b"])
        if r < 0.92:
            self.feat("<readonly table>")
            return self.rng.choice(["redis.call = nil", "string.x = 1", "table.insert = nil",
                                    "getmetatable('').__index = {}", "redis = nil"])
        return "local x = %s" % self.call(protected=False)

    def statement(self):
        r = self.rng.random()
        if r < 0.35:
            return "local %s = %s" % (self.local(), self.value())
        if r < 0.55:
            e = self.call()
            return "local _ = " + e if e.startswith("(") else e
        if r < 0.63:
            return self.failing()
        if r < 0.71:
            self.feat("<lua pcall>")
            name = self.local()
            return "local %s = {pcall(function() %s end)}" % (name, self.failing())
        if r < 0.76:
            self.feat("<setresp3>")
            return "redis.setresp(%s)" % self.rng.choice(["3", "3", "2", "4"])
        if r < 0.81:
            self.feat("<random>")
            name = self.local()
            return "math.randomseed(%d) local %s = {math.random(100), math.random(), " \
                   "math.random(5, 10)}" % (self.rng.randint(0, 1000), name)
        if r < 0.88:
            self.feat("<loop>")
            name = self.local()
            return "local %s = 0 for i = 1, %d do %s = %s + 1 %s end" % (
                name, self.rng.randint(1, 5), name, name,
                "redis.pcall('incr', KEYS[1] or 'k')" if self.rng.random() < 0.5 else "")
        if r < 0.94:
            self.feat("<setresp3>")
            name = self.local()
            return "redis.setresp(3) local %s = %s" % (name, self.call())
        if r < 0.96:
            name = self.local()
            return "local %s = %s" % (name, self.table(0))
        if r < 0.98:
            # past Redis's depth of conversion (a Lua stack limit) or not
            self.feat("<deep>")
            name = self.local()
            self.deep = name
            return "local %s = %s for i = 1, %d do %s = %s end" % (
                name, self.value(2), self.rng.choice([10, 2000, 7990, 7996, 9000, 10000]),
                name, self.rng.choice(["{%s}", "{1, %s}", "{%s, 2}", "{map={a=%s}}",
                                       "{set={[%s]=true}}"]) % name)
        # SELECT (then no SET with a past EXAT: see command)
        self.feat("<select>")
        self.selected = True
        name = self.local()
        return "local %s = {redis.pcall('select', %s), redis.call('dbsize'), " \
               "redis.call('exists', %s)}" % (name, lua_str(self.g.db()),
                                               lua_str(self.g.key()))

    def body(self):
        lines = []
        if self.rng.random() < 0.04:
            self.feat("<shebang>")
            lines.append(self.rng.choice(["#!lua", "#!lua flags=no-writes",
                                          "#!lua flags=allow-oom", "#!lua flags=bogus",
                                          "#!lua name=x", "#!lua flags=no-writes,allow-stale"]))
        for _ in range(self.rng.randint(0, 6)):
            lines.append(self.statement())
        r = self.rng.random()
        if self.deep and r < 0.7:
            lines.append("return %s" % self.deep)
        elif r < 0.02:
            self.feat("<syntax error>")
            lines.append(self.rng.choice(["return 1 +", "local = 1", "return {", "x y z",
                                          "return 'open", "end", "\x1bLua"]))
        elif r < 0.1:
            lines.append("return %s, %s" % (self.value(), self.value()))
        elif r < 0.15:
            pass                                 # no return: nil
        else:
            lines.append("return %s" % self.value())
        sep = "\n" if self.rng.random() < 0.7 else " "
        return sep.join(lines).encode()


SCRIPT_KEY_WORDS = None


def script_keys_args(g, sg):
    """numkeys, its keys and the arguments (sometimes a wrong numkeys)."""
    nkeys = g.rng.choice([0, 1, 1, 2, 2, 3])
    keys = [g.key() if g.rng.random() < 0.6 else g.pick(HOME_ALL) for _ in range(nkeys)]
    argv = [g.val() if g.rng.random() < 0.5 else g.int_() for _ in range(g.rng.randint(0, 3))]
    if g.chance(0.03):
        sg.feat("<numkeys>")
        n = g.pick([b"-1", b"x", b"%d" % (nkeys + len(argv) + 1), b"", b"1.5"])
    else:
        n = b"%d" % nkeys
    return [n] + keys + argv


def g_eval(g):
    sg = ScriptGen(g)
    body = sg.body()
    g.past_keys = sg.past_keys
    if g.scripts is not None:
        g.scripts.evals += 1
        if sg.past_keys:
            g.scripts.past[g.scripts.sha(body)] = sg.past_keys
    return [body] + script_keys_args(g, sg)


def g_evalsha(g):
    sg = ScriptGen(g)
    s = g.scripts
    r = g.rng.random()
    if s is not None and s.loaded and r < 0.5:
        g.opts.append("<loaded>")
        sha = g.pick(s.loaded)
    elif s is not None and s.recent_shas() and r < 0.85:
        g.opts.append("<evaled>")
        sha = g.pick(s.recent_shas())
    else:
        # (not the SHA1 of any body the grammar may write, as "return 1":
        # Redis would keep that one forever, cellgate not)
        g.opts.append("<unknown>")
        sha = g.pick([b"0" * 40, b"ffffffffffffffffffffffffffffffffffffffff", b"abc", b"",
                      b"E0E1F9FABFC9D4800C877A703B823AC0578FF8DA"])
    if s is not None:
        # its SET with a past EXAT runs again: read its keys after it too
        g.past_keys = s.past.get(sha, [])
    if g.chance(0.2):
        sha = sha.upper()
    return [sha] + script_keys_args(g, sg)


def g_script_load(g):
    sg = ScriptGen(g)
    body = sg.body()
    if g.scripts is not None and sg.past_keys:
        g.scripts.past[g.scripts.sha(body)] = sg.past_keys
    g.opts[:] = []      # features are counted on EVAL
    return [body]


def g_script_exists(g):
    s = g.scripts
    out = []
    for _ in range(g.rng.randint(1, 4)):
        r = g.rng.random()
        if s is not None and s.loaded and r < 0.4:
            out.append(g.pick(s.loaded))
        elif s is not None and s.recent_shas() and r < 0.8:
            out.append(g.pick(s.recent_shas()))
        else:
            out.append(g.pick([b"0" * 40, b"abc", b"", b"x" * 40]))
    return out


def flush_mode(g):
    """SCRIPT FLUSH's and FUNCTION FLUSH's optional ASYNC or SYNC."""
    r = g.rng.random()
    if r < 0.3:
        return [g.opt(b"ASYNC")]
    if r < 0.6:
        return [g.opt(b"SYNC")]
    return []


def g_script_flush(g):
    if g.scripts is not None:
        g.scripts.loaded = []
        g.scripts.recent.clear()
    return flush_mode(g)


# ---- functions: FUNCTION LOAD|DELETE|FLUSH|STATS, FCALL, FCALL_RO ----------

# A library's functions are drawn from fixed bodies (the scripts' own
# grammar is EVAL's): keys[1] and args[1] are the call's, so each body
# meets every key type and a missing key or argument.
FUNCTION_LIBS = [b"dl1", b"dl2", b"dl3"]
FUNCTION_BODIES = [
    (b"return redis.call('GET', keys[1])", True),
    (b"return redis.call('INCRBY', keys[1], args[1] or 1)", False),
    (b"return redis.call('SADD', keys[1], args[1] or 'm')", False),
    (b"return cmsgpack.unpack(cmsgpack.pack(redis.call('LRANGE', keys[1], 0, -1)))", True),
    (b"return {struct.unpack('>i', struct.pack('>i', #keys + #args))}", True),
    (b"return redis.pcall('ZADD', keys[1], 1, args[1] or 'x')", False),
    (b"return {#keys, #args, redis.call('EXISTS', unpack(keys))}", True),
    (b"error('boom')", True),
    (b"return redis.call('RPUSH', keys[1], cmsgpack.pack(args))", False),
]


LOADED_FUNCTIONS = {}    # library -> the function names its last LOAD drew


def function_name(lib, i):
    return b"%s_f%d" % (lib, i)


def g_function_load(g):
    lib = g.pick(FUNCTION_LIBS)
    out = [g.opt(b"REPLACE")] if g.chance(0.6) else []
    r = g.rng.random()
    if r < 0.06:
        g.opts.append("<invalid>")
        return out + [g.pick([b"return 1", b"#!lua name=%s\nreturn 1 +" % lib,
                              b"#!lua\nredis.register_function('f', function() end)",
                              b"#!lua name=%s\n" % lib,
                              b"#!lua name=dl1\nredis.register_function('dl2_f0', "
                              b"function() return 1 end)"])]
    lines = [b"#!lua name=%s" % lib]
    chosen = g.rng.sample(range(len(FUNCTION_BODIES)), g.rng.randint(1, 4))
    # what FCALL names next (a load without REPLACE of a loaded library
    # fails: its functions stay)
    if out or lib not in LOADED_FUNCTIONS:
        LOADED_FUNCTIONS[lib] = [function_name(lib, i) for i in chosen]
    for i in chosen:
        body, ro = FUNCTION_BODIES[i]
        flags = b", flags={'no-writes'}" if ro and g.chance(0.7) else b""
        lines.append(b"redis.register_function{function_name='%s', callback="
                     b"function(keys, args) %s end%s}" % (function_name(lib, i), body, flags))
    return out + [b"\n".join(lines)]


def g_fcall(g):
    loaded = [n for names in LOADED_FUNCTIONS.values() for n in names]
    if loaded and g.chance(0.85):
        name = g.pick(loaded)
    elif g.chance(0.7):
        name = function_name(g.pick(FUNCTION_LIBS), g.rng.randrange(len(FUNCTION_BODIES)))
    else:
        name = g.pick([b"nosuch", b"", b"DL1_F0"])
    nkeys = g.rng.choice([0, 1, 1, 1, 2])
    keys = [g.key(wrongtype=True) for _ in range(nkeys)]
    argv = [g.int_() if g.chance(0.5) else g.val() for _ in range(g.rng.randint(0, 2))]
    n = b"%d" % nkeys
    if g.chance(0.03):
        g.opts.append("<numkeys>")
        n = g.pick([b"-1", b"x", b"%d" % (nkeys + len(argv) + 1)])
    return [name, n] + keys + argv


def g_function_delete(g):
    lib = g.pick(FUNCTION_LIBS + [b"nosuch"])
    LOADED_FUNCTIONS.pop(lib, None)
    return [lib]


def g_function_flush(g):
    LOADED_FUNCTIONS.clear()
    return flush_mode(g)


# ---- DUMP, RESTORE, MIGRATE ----------------------------------------------------
# RESTORE sends both servers the same payload: one Redis answered a DUMP
# with earlier in the run (Runner.run keeps the last DUMP_POOL), so
# cellgate must make of Redis's bytes what Redis makes of them; sometimes
# damaged in the ways Redis refuses whatever its sanitize-dump-payload
# (a cut, a flipped byte: the checksum; a newer version; a type byte no
# Redis knows under a right checksum). DUMP's own replies are compared by
# kind and type byte (a payload's other bytes follow each server's
# encodings). MIGRATE goes to 127.0.0.1:1, where nobody listens: its
# parsing, NOKEY and the refused connection, alike.
DUMP_POOL = 32
BAD_PAYLOADS = [b"", b"x", b"\x00\x01a", b"\x00" * 10, b"\xff" * 11]


def crc64(data):
    """Redis's CRC-64 (Jones: reflected, polynomial 0xad93d23594c935a9)."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x95AC9329AC4BC9B5 if crc & 1 else 0)
    return crc


def with_footer(body, version=10):
    out = body + bytes([version & 0xFF, version >> 8])
    return out + crc64(out).to_bytes(8, "little")


def damaged(g, p):
    w = g.rng.random()
    if w < 0.3 and len(p) > 1:
        g.opts.append("<cut>")
        return p[:g.rng.randrange(1, len(p))]
    if w < 0.55:
        g.opts.append("<flipped>")
        i = g.rng.randrange(len(p))
        return p[:i] + bytes([p[i] ^ (1 << g.rng.randrange(8))]) + p[i + 1:]
    if w < 0.75:
        g.opts.append("<newer>")
        return with_footer(p[:-10], g.pick([11, 12, 0x100]))
    g.opts.append("<type>")
    return with_footer(bytes([g.pick([8, 19, 20, 21, 100, 0xC9])]) + p[1:-10])


def g_dump(g): return [g.key()]


def g_restore(g):
    pool = g.payloads if g.payloads is not None else []
    if pool and g.chance(0.9):
        payload = g.pick(pool)
        if g.chance(0.15):
            payload = damaged(g, payload)
    else:
        payload = g.pick(BAD_PAYLOADS)
    absttl = g.chance(0.2)
    if absttl:
        ttl = g.unix_ms()
    else:
        ttl = b"0" if g.chance(0.6) else g.ms()
    opts = []
    if g.chance(0.4):
        opts.append([g.opt(b"REPLACE")])
    if absttl:
        opts.append([g.opt(b"ABSTTL")])
    if g.chance(0.1):
        opts.append([g.opt(b"IDLETIME"), g.pick([b"0", b"100", b"-1", b"x"])])
    if g.chance(0.1):
        opts.append([g.opt(b"FREQ"), g.pick([b"0", b"255", b"256", b"-1", b"y"])])
    if g.chance(0.03):
        opts.append([g.bad_opt()])
    return [g.key(), ttl, payload] + g.shuffled_groups(opts)


def g_migrate(g):
    keys = g.chance(0.5)
    args = [b"127.0.0.1", b"1", b"" if keys or g.chance(0.05) else g.key(),
            g.db(), g.pick([b"0", b"10", b"-5", b"x"])]
    opts = []
    if g.chance(0.3):
        opts.append([g.opt(b"COPY")])
    if g.chance(0.3):
        opts.append([g.opt(b"REPLACE")])
    if g.chance(0.2):
        opts.append([g.opt(b"AUTH"), g.val()])
    if g.chance(0.2):
        opts.append([g.opt(b"AUTH2"), g.val(), g.val()])
    if g.chance(0.03):
        opts.append([g.bad_opt()])
    args += g.shuffled_groups(opts)
    if keys:
        args += [g.opt(b"KEYS")] + g.keys(1, 3)
    return args


class Cmd:
    """A grammar entry.

    weight     relative frequency in the stream
    options    the option words its generator may draw (coverage report)
    wrongtype  a string command that may meet a planted limiter key
    redis      False: cellgate-only, never sent to Redis nor in the stream
    queue      may be queued inside MULTI
    blocking   a blocking pop: its timeout is tiny outside MULTI (see
               block_timeout), and it never gets a wrong arity there (the
               timeout's place could then hold 0)

    A name of two words (SCRIPT LOAD) is sent as two arguments.
    """

    def __init__(self, name, gen, weight=1.0, options=(), wrongtype=False,
                 redis=True, queue=True, blocking=False):
        self.name = name
        self.words = [w.encode() for w in name.split(" ")]   # SCRIPT LOAD: two
        self.gen = gen
        self.weight = weight
        self.options = tuple(options)
        self.wrongtype = wrongtype
        self.redis = redis
        self.queue = queue
        self.blocking = blocking


EXPIRE_OPTS = ("NX", "XX", "GT", "LT", "<invalid>")
EXPIRY_WORDS = ("EX", "PX", "EXAT", "PXAT")

GRAMMAR = [
    # strings and counters
    Cmd("GET", g_get, 3, wrongtype=True),
    Cmd("SET", g_set, 4, ("NX", "XX", "GET", "KEEPTTL", "<invalid>") + EXPIRY_WORDS),
    Cmd("SETNX", g_setnx, wrongtype=True),
    Cmd("SETEX", g_setex),
    Cmd("PSETEX", g_psetex),
    Cmd("GETSET", g_getset, wrongtype=True),
    Cmd("GETDEL", g_getdel, wrongtype=True),
    Cmd("GETEX", g_getex, 1.5, EXPIRY_WORDS + ("PERSIST", "<invalid>")),
    Cmd("MGET", g_mget),
    Cmd("MSET", g_mset),
    Cmd("MSETNX", g_msetnx),
    Cmd("INCR", g_incr, wrongtype=True),
    Cmd("INCRBY", g_incrby, wrongtype=True),
    Cmd("INCRBYFLOAT", g_incrbyfloat, 1.5, wrongtype=True),
    Cmd("DECR", g_decr, wrongtype=True),
    Cmd("DECRBY", g_decrby, wrongtype=True),
    Cmd("APPEND", g_append, wrongtype=True),
    Cmd("STRLEN", g_strlen, wrongtype=True),
    Cmd("GETRANGE", g_getrange, wrongtype=True),
    Cmd("SETRANGE", g_setrange, wrongtype=True),
    # expiry
    Cmd("EXPIRE", g_expire_like(Gen.secs), 1.5, EXPIRE_OPTS),
    Cmd("PEXPIRE", g_expire_like(Gen.ms), 1.5, EXPIRE_OPTS),
    Cmd("EXPIREAT", g_expire_like(Gen.unix_s), 1.5, EXPIRE_OPTS),
    Cmd("PEXPIREAT", g_expire_like(Gen.unix_ms), 1.5, EXPIRE_OPTS),
    Cmd("TTL", g_key1, 2),
    Cmd("PTTL", g_key1, 2),
    Cmd("PERSIST", g_key1),
    Cmd("EXPIRETIME", g_key1),
    Cmd("PEXPIRETIME", g_key1),
    # keys
    Cmd("DEL", g_keys_n, 1.5),
    Cmd("UNLINK", g_keys_n),
    Cmd("EXISTS", g_keys_n, 1.5),
    Cmd("TOUCH", g_keys_n),
    Cmd("TYPE", g_key1, 1.5),
    Cmd("RENAME", g_rename),
    Cmd("RENAMENX", g_rename),
    Cmd("COPY", g_copy, 1, ("DB", "REPLACE", "<invalid>")),
    Cmd("KEYS", g_keys, 1),
    Cmd("SCAN", g_scan, 1, ("MATCH", "COUNT", "TYPE", "<invalid>"), queue=False),
    Cmd("DBSIZE", g_none, 1),
    Cmd("RANDOMKEY", g_none, 0.5),
    Cmd("DUMP", g_dump, 1),
    Cmd("RESTORE", g_restore, 1.5, ("REPLACE", "ABSTTL", "IDLETIME", "FREQ", "<invalid>",
                                     "<cut>", "<flipped>", "<newer>", "<type>")),
    Cmd("MIGRATE", g_migrate, 0.3, ("COPY", "REPLACE", "AUTH", "AUTH2", "KEYS", "<invalid>")),
    # databases
    Cmd("SELECT", g_select, 1.5),
    Cmd("MOVE", g_move),
    Cmd("SWAPDB", g_swapdb, 0.5),
    Cmd("FLUSHDB", g_flush, 0.2, ("ASYNC", "SYNC", "<invalid>")),
    Cmd("FLUSHALL", g_flush, 0.2, ("ASYNC", "SYNC", "<invalid>")),
    # transactions
    Cmd("MULTI", g_none, 0.6),
    Cmd("EXEC", g_none, 0.3),
    Cmd("DISCARD", g_none, 0.15),
    Cmd("WATCH", g_watch, 0.4),
    Cmd("UNWATCH", g_none, 0.2),
    # connection
    Cmd("PING", g_ping, 0.5),
    Cmd("ECHO", g_echo, 0.5),
    # lists
    Cmd("LPUSH", g_push, 1.5, ("<bulk>",), wrongtype=True),
    Cmd("RPUSH", g_push, 1.5, ("<bulk>",), wrongtype=True),
    Cmd("LPUSHX", g_push, 0.7, wrongtype=True),
    Cmd("RPUSHX", g_push, 0.7, wrongtype=True),
    Cmd("LPOP", g_pop, wrongtype=True),
    Cmd("RPOP", g_pop, wrongtype=True),
    Cmd("LLEN", g_lkey1, 0.7, wrongtype=True),
    Cmd("LINDEX", g_lindex, wrongtype=True),
    Cmd("LRANGE", g_lrange, 1.5, wrongtype=True),
    Cmd("LTRIM", g_ltrim, wrongtype=True),
    Cmd("LREM", g_lrem, wrongtype=True),
    Cmd("LSET", g_lset, wrongtype=True),
    Cmd("LPOS", g_lpos, 1, ("RANK", "COUNT", "MAXLEN", "<invalid>"), wrongtype=True),
    Cmd("LINSERT", g_linsert, 1, ("BEFORE", "AFTER", "<invalid>"), wrongtype=True),
    Cmd("LMOVE", g_lmove, 1, ("LEFT", "RIGHT", "<invalid>"), wrongtype=True),
    Cmd("RPOPLPUSH", g_rpoplpush, 0.7, wrongtype=True),
    Cmd("LMPOP", g_lmpop, 1, ("LEFT", "RIGHT", "COUNT", "<invalid>"), wrongtype=True),
    Cmd("BLPOP", g_bpop, 0.5, wrongtype=True, blocking=True),
    Cmd("BRPOP", g_bpop, 0.5, wrongtype=True, blocking=True),
    Cmd("BLMOVE", g_blmove, 0.5, ("LEFT", "RIGHT", "<invalid>"), wrongtype=True,
        blocking=True),
    Cmd("BRPOPLPUSH", g_brpoplpush, 0.4, wrongtype=True, blocking=True),
    Cmd("BLMPOP", g_blmpop, 0.5, ("LEFT", "RIGHT", "COUNT", "<invalid>"), wrongtype=True,
        blocking=True),
    # hashes
    Cmd("HSET", g_hset, 2, ("<bulk>",), wrongtype=True),
    Cmd("HSETNX", g_hsetnx, wrongtype=True),
    Cmd("HMSET", g_hset, 0.7, ("<bulk>",), wrongtype=True),
    Cmd("HGET", g_hget, 1.5, wrongtype=True),
    Cmd("HMGET", g_hfields, wrongtype=True),
    Cmd("HDEL", g_hfields, wrongtype=True),
    Cmd("HLEN", g_hkey1, 0.7, wrongtype=True),
    Cmd("HEXISTS", g_hget, 0.7, wrongtype=True),
    Cmd("HINCRBY", g_hincrby, wrongtype=True),
    Cmd("HINCRBYFLOAT", g_hincrbyfloat, wrongtype=True),
    Cmd("HGETALL", g_hkey1, wrongtype=True),
    Cmd("HKEYS", g_hkey1, 0.7, wrongtype=True),
    Cmd("HVALS", g_hkey1, 0.7, wrongtype=True),
    Cmd("HSTRLEN", g_hget, 0.7, wrongtype=True),
    Cmd("HSCAN", g_hscan, 1.3, ("MATCH", "COUNT", "<invalid>"), wrongtype=True, queue=False),
    # sorted sets
    Cmd("ZADD", g_zadd, 3, ("NX", "XX", "GT", "LT", "CH", "INCR", "<invalid>", "<bulk>"),
        wrongtype=True),
    Cmd("ZREM", g_zrem, wrongtype=True),
    Cmd("ZSCORE", g_zscore, wrongtype=True),
    Cmd("ZMSCORE", g_zmscore, 0.7, wrongtype=True),
    Cmd("ZCARD", g_zkey1, 0.7, wrongtype=True),
    Cmd("ZCOUNT", g_zcount, wrongtype=True),
    Cmd("ZLEXCOUNT", g_zlexcount, wrongtype=True),
    Cmd("ZINCRBY", g_zincrby, wrongtype=True),
    Cmd("ZRANGE", g_zrange, 3, ("BYSCORE", "BYLEX", "REV", "LIMIT", "WITHSCORES",
                                "<invalid>"), wrongtype=True),
    Cmd("ZREVRANGE", g_zrange_rank, 1, ("WITHSCORES", "<invalid>"), wrongtype=True),
    Cmd("ZRANGEBYSCORE", g_zrangebyscore, 1, ("WITHSCORES", "LIMIT", "<invalid>"),
        wrongtype=True),
    Cmd("ZREVRANGEBYSCORE", g_zrangebyscore, 1, ("WITHSCORES", "LIMIT", "<invalid>"),
        wrongtype=True),
    Cmd("ZRANGEBYLEX", g_zrangebylex, 1, ("LIMIT", "WITHSCORES", "<invalid>"),
        wrongtype=True),
    Cmd("ZREVRANGEBYLEX", g_zrangebylex, 1, ("LIMIT", "WITHSCORES", "<invalid>"),
        wrongtype=True),
    Cmd("ZREMRANGEBYSCORE", g_zremrangebyscore, 0.7, wrongtype=True),
    Cmd("ZREMRANGEBYRANK", g_zremrangebyrank, 0.7, wrongtype=True),
    Cmd("ZREMRANGEBYLEX", g_zremrangebylex, 0.7, wrongtype=True),
    Cmd("ZRANK", g_zrank, wrongtype=True),
    Cmd("ZREVRANK", g_zrank, wrongtype=True),
    Cmd("ZPOPMIN", g_zpop, wrongtype=True),
    Cmd("ZPOPMAX", g_zpop, wrongtype=True),
    Cmd("ZSCAN", g_zscan, 1.3, ("MATCH", "COUNT", "<invalid>"), wrongtype=True, queue=False),
    Cmd("ZMPOP", g_zmpop, 1, ("MIN", "MAX", "COUNT", "<invalid>"), wrongtype=True),
    Cmd("BZPOPMIN", g_bzpop, 0.5, wrongtype=True, blocking=True),
    Cmd("BZPOPMAX", g_bzpop, 0.5, wrongtype=True, blocking=True),
    Cmd("BZMPOP", g_bzmpop, 0.5, ("MIN", "MAX", "COUNT", "<invalid>"), wrongtype=True,
        blocking=True),
    # sets
    Cmd("SADD", g_sadd, 3, ("<bulk>",), wrongtype=True),
    Cmd("SREM", g_smembers_n, 1.2, wrongtype=True),
    Cmd("SISMEMBER", g_sismember, 1, wrongtype=True),
    Cmd("SMISMEMBER", g_smembers_n, 0.7, wrongtype=True),
    Cmd("SCARD", g_skey1, 0.7, wrongtype=True),
    Cmd("SMEMBERS", g_skey1, 1, wrongtype=True),
    Cmd("SRANDMEMBER", g_srandmember, 1, wrongtype=True, queue=False),
    Cmd("SPOP", g_spop, 1, wrongtype=True, queue=False),
    Cmd("SMOVE", g_smove, 1, wrongtype=True),
    Cmd("SSCAN", g_sscan, 1.3, ("MATCH", "COUNT", "<invalid>"), wrongtype=True, queue=False),
    Cmd("SINTER", g_skeys, 1, wrongtype=True, queue=False),
    Cmd("SINTERCARD", g_sintercard, 0.7, ("LIMIT", "<invalid>"), wrongtype=True),
    Cmd("SINTERSTORE", g_sstore, 0.7, wrongtype=True),
    Cmd("SUNION", g_skeys, 1, wrongtype=True, queue=False),
    Cmd("SUNIONSTORE", g_sstore, 0.7, wrongtype=True),
    Cmd("SDIFF", g_skeys, 1, wrongtype=True, queue=False),
    Cmd("SDIFFSTORE", g_sstore, 0.7, wrongtype=True),
    Cmd("ZUNION", g_zalg(False, True, True), 0.5,
        ("WEIGHTS", "AGGREGATE", "WITHSCORES", "<numkeys>", "<set input>", "<invalid>"), wrongtype=True),
    Cmd("ZINTER", g_zalg(False, True, True), 0.5,
        ("WEIGHTS", "AGGREGATE", "WITHSCORES", "<numkeys>", "<set input>", "<invalid>"), wrongtype=True),
    Cmd("ZDIFF", g_zalg(False, False, True), 0.7, ("WITHSCORES", "<numkeys>", "<set input>", "<invalid>"),
        wrongtype=True),
    Cmd("ZUNIONSTORE", g_zalg(True, True, False), 0.5,
        ("WEIGHTS", "AGGREGATE", "<numkeys>", "<set input>", "<invalid>"), wrongtype=True),
    Cmd("ZINTERSTORE", g_zalg(True, True, False), 0.5,
        ("WEIGHTS", "AGGREGATE", "<numkeys>", "<set input>", "<invalid>"), wrongtype=True),
    Cmd("ZDIFFSTORE", g_zalg(True, False, False), 0.5, ("<numkeys>", "<set input>", "<invalid>"),
        wrongtype=True),
    Cmd("ZINTERCARD", g_zalg(False, False, False, card=True), 0.5,
        ("LIMIT", "<numkeys>", "<set input>", "<invalid>"), wrongtype=True),
    Cmd("ZRANGESTORE", g_zrangestore, 0.8,
        ("BYSCORE", "BYLEX", "REV", "LIMIT", "WITHSCORES", "<invalid>"), wrongtype=True),
    Cmd("ZRANDMEMBER", g_rand(b"WITHSCORES", zkey), 0.5, ("WITHSCORES", "<invalid>"),
        wrongtype=True, queue=False),
    Cmd("HRANDFIELD", g_rand(b"WITHVALUES", hkey), 0.5, ("WITHVALUES", "<invalid>"),
        wrongtype=True, queue=False),
    # scripts (generated Lua bodies over the grammar's commands, see ScriptGen)
    Cmd("EVAL", g_eval, 6, SCRIPT_FEATURES),
    Cmd("EVAL_RO", g_eval, 1),
    Cmd("EVALSHA", g_evalsha, 2, ("<loaded>", "<evaled>", "<unknown>")),
    Cmd("EVALSHA_RO", g_evalsha, 0.5),
    Cmd("SCRIPT LOAD", g_script_load, 1),
    Cmd("SCRIPT EXISTS", g_script_exists, 0.7),
    Cmd("SCRIPT FLUSH", g_script_flush, 0.03),
    Cmd("FUNCTION LOAD", g_function_load, 0.3, ("REPLACE", "<invalid>"), queue=False),
    Cmd("FCALL", g_fcall, 1.5, ("<numkeys>",)),
    Cmd("FCALL_RO", g_fcall, 0.5, ("<numkeys>",)),
    Cmd("FUNCTION DELETE", g_function_delete, 0.05, queue=False),
    Cmd("FUNCTION FLUSH", g_function_flush, 0.01, ("ASYNC", "SYNC"), queue=False),
    Cmd("FUNCTION STATS", lambda g: [], 0.1, queue=False),
    # cellgate's limiters: never sent to Redis, only planted (--plant-limiters)
    Cmd("CL.THROTTLE", g_cl_throttle, 0, redis=False),
    Cmd("INCREX", g_increx, 0, redis=False),
]
BY_NAME = {c.name: c for c in GRAMMAR}
SCRIPT_CMDS = [c for c in GRAMMAR if c.redis and c.name not in SCRIPT_SKIP
               and not c.name.startswith(("EVAL", "SCRIPT", "FUNCTION", "FCALL"))]
TX_END = {"MULTI", "EXEC", "DISCARD", "SCAN", "HSCAN", "ZSCAN", "SSCAN",
          "SRANDMEMBER", "SPOP", "SINTER", "SUNION", "SDIFF"}   # end a batch
# Replies whose order is Redis's hash table's when it keeps the key in one
# (OBJECT ENCODING hashtable): compared as multisets then, byte for byte
# otherwise. Asked of Redis right after the reply, so these end a batch
# (in a transaction, EXEC or DISCARD follows them at once).
ORDERED = {"HGETALL", "HKEYS", "HVALS", "SMEMBERS"}
KEY_SCANS = {"HSCAN", "ZSCAN", "SSCAN"}
# Set algebra: byte for byte where Redis's answer follows intsets (every
# key an intset or absent, and a union of at most 512), else as multisets
# (see Runner.set_algebra); never queued, they end a batch.
SET_ALGEBRA = {"SINTER", "SUNION", "SDIFF"}
# Random answers: compared by shape, count and membership; SPOP's two
# servers then made equal again (Runner.random_set); never queued.
SET_RANDOM = {"SRANDMEMBER", "SPOP"}
# Random answers: compared by shape, count and membership (random_reply);
# they end a batch (each server is then asked about the members) and are
# not queued in a transaction.
RANDOM = {"ZRANDMEMBER", "HRANDFIELD"}
UNORDERED_ENCODINGS = {b"hashtable", b"skiplist"}


def encode(args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


# ---- RESP2/RESP3 reader -------------------------------------------------------

class Incomplete(Exception):
    pass


class Node:
    """One reply: its type byte, its raw bytes, its children (aggregates)."""
    __slots__ = ("t", "raw", "kids")

    def __init__(self, t, raw, kids=None):
        self.t = t
        self.raw = raw
        self.kids = kids

    def int_value(self):
        if self.t == b":":
            try:
                return int(self.raw[1:-2])
            except ValueError:
                return None
        return None


AGG = {b"*": 1, b"~": 1, b">": 1, b"%": 2, b"|": 2}
LINE = {b"+", b"-", b":", b"_", b",", b"#", b"("}
BLOB = {b"$", b"=", b"!"}


def parse(buf, pos):
    """(Node, next pos) of the reply at buf[pos:], or Incomplete."""
    end = buf.find(b"\r\n", pos)
    if end < 0:
        raise Incomplete
    t = bytes(buf[pos:pos + 1])
    head_end = end + 2
    if t in LINE:
        return Node(t, bytes(buf[pos:head_end])), head_end
    try:
        n = int(buf[pos + 1:end])
    except ValueError:
        raise ValueError("bad RESP header %r" % bytes(buf[pos:end + 2]))
    if t in BLOB:
        if n < 0:
            return Node(t, bytes(buf[pos:head_end])), head_end
        stop = head_end + n + 2
        if len(buf) < stop:
            raise Incomplete
        if buf[stop - 2:stop] != b"\r\n":
            raise ValueError("bulk not ended by CRLF at %d" % stop)
        return Node(t, bytes(buf[pos:stop])), stop
    if t in AGG:
        if n < 0:
            return Node(t, bytes(buf[pos:head_end]), None), head_end
        kids = []
        p = head_end
        for _ in range(n * AGG[t]):
            kid, p = parse(buf, p)
            kids.append(kid)
        if t == b"|":               # an attribute: the reply follows it
            reply, p = parse(buf, p)
            return Node(reply.t, bytes(buf[pos:p]), reply.kids), p
        return Node(t, bytes(buf[pos:p]), kids), p
    raise ValueError("unknown RESP type %r in %r" % (t, bytes(buf[pos:pos + 80])))


class Conn:
    """One raw socket; reads whole replies by parsing."""

    def __init__(self, host, port, name):
        self.name = name
        self.sock = socket.create_connection((host, port), timeout=IO_TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()

    def send(self, data):
        self.sock.sendall(data)

    def reply(self):
        while True:
            try:
                node, p = parse(self.buf, 0)
            except Incomplete:
                chunk = self.sock.recv(1 << 18)
                if not chunk:
                    raise EOFError("%s closed the connection (got so far %r)"
                                   % (self.name, bytes(self.buf[:200])))
                self.buf += chunk
                continue
            del self.buf[:p]
            return node

    def call(self, args):
        self.send(encode(args))
        return self.reply()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


# ---- comparison ------------------------------------------------------------------

TTL_SECONDS = {"TTL", "EXPIRETIME"}
TTL_MS = {"PTTL", "PEXPIRETIME"}


# Errors that end with what the request said: counted by their fixed part.
ERROR_HEADS = ("-ERR Unsupported option", "-ERR unknown command",
               "-ERR unknown subcommand")


def error_prefix(raw):
    """An error's class for the stats: '-ERR' + its text up to the first
    quote (the command or value named there) or the first digit; other
    codes (-WRONGTYPE, -EXECABORT) by their first word."""
    line = raw.split(b"\r\n", 1)[0].decode("latin-1")
    if line.startswith("!"):
        line = "-" + raw.split(b"\r\n")[1].decode("latin-1")
    cut = line.find(" script: ")        # a script's error: its SHA1 and line
    if cut > 0:
        line = line[:cut]
    if not line.startswith("-ERR"):
        return line.split(" ", 1)[0]
    for head in ERROR_HEADS:
        if line.startswith(head):
            return head
    text = line
    for i, ch in enumerate(line):
        if ch in "'\"" or (ch.isdigit() and i > 4):
            text = line[:i]
            break
    return text.rstrip(" :(").rstrip()[:80]


def pairs(node):
    """A flat [k1, v1, k2, v2...] or RESP3 map's kids as sorted pairs."""
    k = [x.raw for x in node.kids]
    return sorted(zip(k[0::2], k[1::2]))


def same(name, a, b, encoding=None):
    """Are replies a and b (Nodes) the same under name's normalisation?
    encoding: a function giving Redis's OBJECT ENCODING of the request's
    key (for ORDERED), called only when the bytes differ."""
    if a.raw == b.raw:
        return True
    if a.t != b.t:
        return False
    if name in ORDERED and encoding is not None and a.kids is not None \
            and b.kids is not None and encoding() in UNORDERED_ENCODINGS:
        if name == "HGETALL":
            return len(a.kids) % 2 == 0 and pairs(a) == pairs(b)
        return sorted(k.raw for k in a.kids) == sorted(k.raw for k in b.kids)
    if name == "DUMP":                  # each server's encodings: the type's
        return a.t == b.t == b"$" and b"$-1\r\n" not in (a.raw, b.raw) and \
            payload_type(a) == payload_type(b) is not None
    if name == "RANDOMKEY":             # a key drawn at random: both or none
        return a.t == b.t == b"$" and b"$-1\r\n" not in (a.raw, b.raw)
    if name == "KEYS" and a.kids is not None and b.kids is not None:
        return sorted(k.raw for k in a.kids) == sorted(k.raw for k in b.kids)
    if name in TTL_SECONDS or name in TTL_MS:
        x, y = a.int_value(), b.int_value()
        if x is None or y is None or x < 0 or y < 0:
            return False
        tol = TTL_TOLERANCE_MS if name in TTL_MS else -(-TTL_TOLERANCE_MS // 1000) + 1
        return abs(x - y) <= tol
    return False


# RDB type bytes by the type they hold (an encoding each).
RDB_TYPES = {0: "string", 1: "list", 10: "list", 14: "list", 18: "list",
             2: "set", 11: "set", 20: "set", 3: "zset", 5: "zset", 12: "zset",
             17: "zset", 4: "hash", 9: "hash", 13: "hash", 16: "hash"}


def payload_type(reply):
    """The type a DUMP reply's payload holds, by its RDB type byte."""
    body = reply.raw[reply.raw.index(b"\r\n") + 2:]
    return RDB_TYPES.get(body[0]) if body[:1] else None


def name_is_dump(name, reply, in_multi):
    """A payload Redis answered a DUMP with (outside a transaction)."""
    return name == "DUMP" and not in_multi and reply.t == b"$" and \
        reply.raw != b"$-1\r\n"


def cmd_name(full):
    return full[0].decode("latin-1").upper()


def random_elements(node, paired):
    """A random reply's (member, value-or-None) list, or None for another
    shape: a bulk string; a flat array; RESP3's pairs WITHSCORES."""
    if node.t == b"$":
        return [(node.raw, None)]
    if node.t != b"*" or node.kids is None:
        return None
    kids = node.kids
    if not paired:
        return [(k.raw, None) for k in kids]
    if kids and kids[0].kids is not None:           # RESP3: [member, value]
        if any(k.kids is None or len(k.kids) != 2 for k in kids):
            return None
        return [(k.kids[0].raw, k.kids[1].raw) for k in kids]
    if len(kids) % 2:
        return None
    return [(m.raw, v.raw) for m, v in zip(kids[0::2], kids[1::2])]


def random_reply(name, full, a, b, cg, ref):
    """ZRANDMEMBER, HRANDFIELD (replies that differ): the same shape and
    count; every member one of the key's on its own server, with its value
    there (ZMSCORE / HMGET answer the same bytes as the reply's);
    distinct members for a positive count."""
    paired = len(full) == 4
    ea, eb = random_elements(a, paired), random_elements(b, paired)
    if ea is None or eb is None or a.t != b.t or len(ea) != len(eb):
        return False
    if a.t == b"*" and (len(a.kids) != len(b.kids)
                        or [k.t for k in a.kids] != [k.t for k in b.kids]):
        return False
    try:
        positive = len(full) > 2 and int(full[2]) > 0
    except ValueError:
        return False
    ask = b"ZMSCORE" if name == "ZRANDMEMBER" else b"HMGET"
    for conn, elems in ((cg, ea), (ref, eb)):
        members = [m[m.index(b"\r\n") + 2:-2] for m, _ in elems]
        if positive and len(set(members)) != len(members):
            return False
        got = conn.call([ask, full[1]] + members)
        if got.kids is None or len(got.kids) != len(members):
            return False
        for (_, value), there in zip(elems, got.kids):
            if there.t in (b"_",) or there.raw.startswith(b"$-1"):
                return False
            if value is not None and value != there.raw:
                return False
    return True


def same_exec(queued, a, b, encoding=None):
    """queued: the queued requests' names; encoding: as for same, for the
    last one (an ORDERED command is always the last queued)."""
    if a.raw == b.raw:
        return True
    if a.t != b.t or a.kids is None or b.kids is None or len(a.kids) != len(b.kids) \
            or len(a.kids) != len(queued):
        return False
    n = len(queued)
    return all(same(q, x, y, encoding if i == n - 1 else None)
               for i, (q, x, y) in enumerate(zip(queued, a.kids, b.kids)))


# ---- the run -------------------------------------------------------------------

class Mismatch(Exception):
    pass


class Stats:
    def __init__(self):
        self.commands = collections.Counter()
        self.options = collections.Counter()      # "SET EX"
        self.errors = collections.Counter()
        self.encodings = collections.Counter()    # "HGETALL hashtable"
        self.ok = collections.Counter()           # replies per command...
        self.failed = collections.Counter()       # ...that were not errors / were
        self.arity = 0
        self.total = 0

    def count_errors(self, node):
        if node.t in (b"-", b"!"):
            self.errors[error_prefix(node.raw)] += 1
        elif node.kids:
            for k in node.kids:
                self.count_errors(k)

    def _reply(self, name, node):
        if node.t in (b"-", b"!"):
            self.failed[name] += 1
        else:
            self.ok[name] += 1

    def count_reply(self, name, node, in_multi, queued):
        """Per command, error replies and others (Redis's). A command
        queued in a transaction counts by its element of EXEC's reply (or
        its queuing error), not by +QUEUED."""
        if in_multi and node.raw == b"+QUEUED\r\n":
            return
        if name == "EXEC" and in_multi and node.kids is not None \
                and len(node.kids) == len(queued):
            self.ok[name] += 1
            for q, k in zip(queued, node.kids):
                self._reply(q, k)
            return
        self._reply(name, node)

    def report(self, grammar, out):
        p = lambda s="": print(s, file=out)
        p("difftest stats: %d requests, %d with a wrong arity on purpose"
          % (self.total, self.arity))
        p("  commands:            sent  ok replies  error replies")
        for name, n in sorted(self.commands.items(), key=lambda kv: (-kv[1], kv[0])):
            p("    %-16s %7d %11d %14d" % (name, n, self.ok[name], self.failed[name]))
        p("  options:")
        for name, n in sorted(self.options.items(), key=lambda kv: (-kv[1], kv[0])):
            p("    %-22s %d" % (name, n))
        p("  Redis's encoding of the keys whose replies' order it decides:")
        for name, n in sorted(self.encodings.items()):
            p("    %-28s %d" % (name, n))
        p("  error replies:")
        for name, n in sorted(self.errors.items(), key=lambda kv: (-kv[1], kv[0])):
            p("    %7d  %s" % (n, name))
        missing_c, missing_o = self.never(grammar)
        p("  never exercised: commands %s; options %s"
          % (", ".join(missing_c) or "none", ", ".join(missing_o) or "none"))

    def never(self, grammar):
        cmds = [c.name for c in grammar if c.redis and not self.commands[c.name]]
        opts = ["%s %s" % (c.name, o) for c in grammar if c.redis
                for o in c.options if not self.options["%s %s" % (c.name, o)]]
        return cmds, opts


# The last quarter of each protocol's share also draws, a quarter of the
# time, among the commands with an option not met yet, so that a run of a
# few thousand commands meets every option of a grammar grown large (the
# rare ones of rarely drawn commands, FLUSHALL's, would otherwise depend
# on the seed).
FOCUS_FROM = 0.75
FOCUS_SHARE = 0.25


class Runner:
    def __init__(self, cg_addr, ref_addr, seed, grammar, plant=False, out=sys.stdout):
        self.cg_addr = cg_addr
        self.ref_addr = ref_addr
        self.seed = seed
        self.grammar = [c for c in grammar if c.redis and c.weight > 0]
        self.plant = plant
        self.out = out
        self.stats = Stats()
        self.history = collections.deque(maxlen=HISTORY)
        self.scripts = Scripts()
        self.payloads = collections.deque(maxlen=DUMP_POOL)

    def connect(self, resp):
        cg = Conn(*self.cg_addr, name="cellgate")
        ref = Conn(*self.ref_addr, name="redis")
        if resp == 3:
            for c in (cg, ref):
                hello = c.call([b"HELLO", b"3"])
                if hello.t != b"%":
                    raise RuntimeError("%s: HELLO 3 answered %r" % (c.name, hello.raw[:200]))
        LOADED_FUNCTIONS.clear()    # as FUNCTION FLUSH leaves the servers
        for c in (cg, ref):
            for args in ([b"FLUSHALL"], [b"FUNCTION", b"FLUSH"], [b"SELECT", b"0"]):
                rep = c.call(args)
                if rep.t != b"+":
                    raise RuntimeError("%s: %s answered %r" % (c.name, args, rep.raw))
        return cg, ref

    def do_plant(self, cg, ref):
        """Limiter keys in cellgate's current database and their mirrors in
        Redis's: a CL.THROTTLE key is a string (its TAT, as redis-cell
        keeps it), so Redis gets the same bytes and expiry; any other
        limiter's key answers a string command WRONGTYPE, as a hash does."""
        for k in LIMITER_KEYS:
            cg.call([b"DEL", k])
            ref.call([b"DEL", k])
        for k in PLANT_STRINGS:
            cg.call([b"CL.THROTTLE", k, b"5", b"10", b"3600", b"1"])
            tat = cg.call([b"GET", k])
            pttl = cg.call([b"PTTL", k]).int_value()
            if tat.t != b"$" or pttl <= 0:
                raise RuntimeError("cellgate: planted %r holds %r, PTTL %d"
                                   % (k, tat.raw, pttl))
            value = tat.raw.split(b"\r\n")[1]
            ref.call([b"SET", k, value, b"PX", b"%d" % pttl])
        for k, args in PLANT_OTHERS:
            rep = cg.call(args)
            if rep.t != b"*":
                raise RuntimeError("cellgate: %r answered %r" % (args, rep.raw))
            ref.call([b"HSET", k, b"f", b"v"])

    def undrawn(self):
        """The commands not drawn yet, or with an option not drawn yet."""
        return [c for c in self.grammar
                if not self.stats.commands[c.name] or
                any(not self.stats.options["%s %s" % (c.name, o)] for o in c.options)]

    def run(self, n, resp):
        """n requests on fresh connections in protocol resp; raises Mismatch."""
        rng = random.Random("%s/%d" % (self.seed, resp))
        weights = [c.weight for c in self.grammar]
        cg, ref = self.connect(resp)
        in_multi = False
        queued = []          # names of the commands queued, in order
        queued_keys = []     # and their first arguments
        must_close = False   # an ORDERED command was queued: EXEC next
        done = 0
        batches = 0
        try:
            while done < n:
                if self.plant and not in_multi and batches % PLANT_EVERY == 0:
                    self.do_plant(cg, ref)
                batches += 1
                batch = []       # (Cmd, args, arity flag)
                size = min(rng.randint(1, BATCH_MAX), n - done)
                focus = self.undrawn() if done >= n * FOCUS_FROM else []
                while len(batch) < size:
                    if in_multi and (must_close or
                                     len(queued) + len(batch) >= MULTI_BODY_MAX):
                        cmd = BY_NAME["EXEC"] if rng.random() < 0.8 else BY_NAME["DISCARD"]
                    elif focus and rng.random() < FOCUS_SHARE:
                        cmd = rng.choice(focus)
                    else:
                        cmd = rng.choices(self.grammar, weights)[0]
                    if in_multi and not cmd.queue:
                        continue
                    if not in_multi and cmd.name in ("EXEC", "DISCARD") and rng.random() < 0.8:
                        continue     # mostly they close a transaction
                    g = Gen(rng)
                    g.limiters = self.plant and cmd.wrongtype
                    g.planted = self.plant
                    g.scripts = self.scripts
                    g.payloads = self.payloads
                    g.in_multi = in_multi
                    args = cmd.gen(g)
                    wrong = False
                    # Not a subcommand's inside MULTI: cellgate queues it
                    # (see /work/notes/script-mismatches.md, 2).
                    if rng.random() < P_WRONG_ARITY and not (in_multi and len(cmd.words) > 1) \
                            and not (cmd.blocking and not in_multi):
                        wrong = True
                        if args and rng.random() < 0.6:
                            args = args[:rng.randrange(len(args))]
                        else:
                            args = args + [g.val()]
                    full = [g.case(w) for w in cmd.words] + args
                    if cmd.blocking and not in_multi:
                        batch.append(feed_first_key(cmd.name, args))
                    batch.append((cmd, full, wrong, g.opts))
                    if g.past and cmd.name == "SET" and len(full) > 1:
                        # Redis 7.0 stores a SET with a past EXAT/PXAT and
                        # counts it in DBSIZE until it is read or its active
                        # expiry cycle happens on it: at random. Reading it
                        # at once makes both servers forget it now.
                        batch.append((BY_NAME["EXISTS"], [b"EXISTS", full[1]], False, []))
                    for k in g.past_keys:
                        # the same for a key a script SET so
                        batch.append((BY_NAME["EXISTS"], [b"EXISTS", k], False, []))
                    if in_multi and cmd.name in ORDERED:
                        must_close = True
                    if cmd.name in TX_END or cmd.name in RANDOM or (
                            cmd.name in ORDERED and not in_multi):
                        break
                data = b"".join(encode(b[1]) for b in batch)
                cg.send(data)
                ref.send(data)
                for i, (cmd, full, wrong, opts) in enumerate(batch):
                    index = done + i
                    st = self.stats
                    st.total += 1
                    st.commands[cmd.name] += 1
                    st.arity += wrong
                    for o in opts:
                        st.options["%s %s" % (cmd.name, o)] += 1
                    a = cg.reply()
                    b = ref.reply()
                    st.count_errors(b)
                    st.count_reply(cmd.name, b, in_multi, queued)
                    ok = True
                    shown_a, shown_b = a.raw, b.raw
                    # Only the last request of a batch may ask Redis more.
                    last = i == len(batch) - 1
                    encoding = None
                    if last and cmd.name in ORDERED and len(full) > 1 and b.kids:
                        enc = self.encoding(ref, full[1], cmd.name)
                        encoding = lambda enc=enc: enc
                    elif last and cmd.name == "EXEC" and in_multi and queued \
                            and queued[-1] in ORDERED and b.kids \
                            and len(b.kids) == len(queued) and b.kids[-1].kids:
                        enc = self.encoding(ref, queued_keys[-1], queued[-1])
                        encoding = lambda enc=enc: enc
                    if cmd.name in KEY_SCANS:
                        ok, shown_a, shown_b = self.key_scan(cg, ref, full, a, b)
                    elif cmd.name in SET_ALGEBRA and not in_multi:
                        ok = self.set_algebra(ref, full, a, b)
                    elif cmd.name in SET_RANDOM and not in_multi:
                        ok, shown_a, shown_b = self.random_set(cg, ref, full, a, b)
                    elif cmd.name in RANDOM and a.raw != b.raw:
                        ok = random_reply(cmd.name, full, a, b, cg, ref)
                    elif cmd.name == "SCAN" and a.raw != b.raw:
                        ok, shown_a, shown_b = self.full_scan(cg, ref, full, a, b)
                    elif cmd.name == "SCAN" and b.kids is not None and len(b.kids) == 2 \
                            and b.kids[0].raw != b"$1\r\n0\r\n":
                        ok, shown_a, shown_b = self.full_scan(cg, ref, full, a, b)
                    elif cmd.name == "EXEC" and in_multi:
                        ok = same_exec(queued, a, b, encoding)
                    else:
                        ok = same(cmd.name, a, b, encoding)
                    if not ok:
                        self.mismatch(resp, index, full, shown_a, shown_b, in_multi, queued)
                    self.history.append((index, full))
                    self.scripts.note(cmd.name, full, b, in_multi)
                    if name_is_dump(cmd.name, b, in_multi):
                        self.payloads.append(b.raw[b.raw.index(b"\r\n") + 2:-2])
                    # the transaction's state, from the reference's replies
                    name = cmd.name
                    if in_multi:
                        if name in ("EXEC", "DISCARD") and not b.raw.startswith(
                                b"-ERR wrong number"):
                            in_multi = False
                            must_close = False
                            queued = []
                            queued_keys = []
                        elif b.raw == b"+QUEUED\r\n":
                            queued.append(name)
                            queued_keys.append(full[1] if len(full) > 1 else b"")
                    elif name == "MULTI" and b.raw == b"+OK\r\n":
                        in_multi = True
                        queued = []
                        queued_keys = []
                done += len(batch)
            if in_multi:
                for c in (cg, ref):
                    c.call([b"DISCARD"])
        finally:
            cg.close()
            ref.close()

    def encoding(self, ref, key, name=None):
        """Redis's OBJECT ENCODING of key (b"" when it has none); counted
        for name's line of the stats."""
        rep = ref.call([b"OBJECT", b"ENCODING", key])
        enc = b""
        if rep.t in (b"$", b"+") and not rep.raw.startswith(b"$-1"):
            enc = rep.raw.split(b"\r\n")[-2] if rep.t == b"$" else rep.raw[1:-2]
        if name is not None:
            self.stats.encodings["%s %s" % (name, enc.decode("latin-1") or "-")] += 1
        return enc

    def key_scan(self, cg, ref, full, a, b):
        """HSCAN/ZSCAN: byte for byte, unless Redis keeps the key in a hash
        table (its order, and its cursors, are its own): then the whole
        iteration on each server, from cursor 0 to its end, and the
        multisets of (field, value) / (member, score) pairs."""
        def shape_ok(node):
            return node.kids is not None and len(node.kids) == 2 \
                and node.kids[0].t == b"$" and node.kids[1].kids is not None

        if len(full) < 3 or not (shape_ok(a) and shape_ok(b)):
            return a.raw == b.raw, a.raw, b.raw
        enc = self.encoding(ref, full[1], cmd_name(full))
        if enc not in UNORDERED_ENCODINGS or not (shape_ok(a) and shape_ok(b)):
            return a.raw == b.raw, a.raw, b.raw
        found = []
        for conn, first in ((cg, a), (ref, b)):
            got = []
            node = first
            steps = 1
            while True:
                kids = [k.raw for k in node.kids[1].kids]
                got += kids if full[0].upper() == b"SSCAN" \
                    else list(zip(kids[0::2], kids[1::2]))
                if node.kids[0].raw == b"$1\r\n0\r\n":
                    break
                if steps >= SCAN_MAX_STEPS:
                    raise RuntimeError("%s: %s did not end within %d calls"
                                       % (conn.name, full[0], SCAN_MAX_STEPS))
                cursor = node.kids[0].raw.split(b"\r\n")[1]
                node = conn.call(full[:2] + [cursor] + full[3:])
                steps += 1
                if not shape_ok(node):
                    return False, b"cursor %r answered %r" % (cursor, node.raw), \
                        b"(a cursor)"
            found.append(sorted(got))
        shown = [b"full %s (%s) pairs: %r" % (full[0], enc, f[:50]) for f in found]
        return found[0] == found[1], shown[0], shown[1]

    def set_algebra(self, ref, full, a, b):
        """SINTER, SUNION, SDIFF: byte for byte when every key is an intset
        in Redis (or absent) and, for a union, the result holds at most 512
        members (so no step of it left the intset): its order is then the
        integers'. Else the members as multisets."""
        if a.raw == b.raw:
            return True
        if a.t != b.t or a.kids is None or b.kids is None:
            return False
        name = cmd_name(full)
        encs = [self.encoding(ref, k, name) for k in full[1:]]
        intsets = all(e in (b"intset", b"") for e in encs)
        if intsets and (name != "SUNION" or len(b.kids) <= 512):
            return False
        return sorted(k.raw for k in a.kids) == sorted(k.raw for k in b.kids)

    def random_set(self, cg, ref, full, a, b):
        """SRANDMEMBER and SPOP: the same kind of reply and count, distinct
        members where Redis's are, each a member of the set; after an SPOP
        each server also removes what the other popped, so both hold the
        same set again."""
        if a.raw == b.raw:
            return True, a.raw, b.raw
        if a.t != b.t or (a.kids is None) != (b.kids is None):
            return False, a.raw, b.raw
        def bulk(raw):
            return raw[raw.index(b"\r\n") + 2:-2]

        def members(node):
            if node.kids is None:
                return [bulk(node.raw)] if node.raw[:1] == b"$" \
                    and not node.raw.startswith(b"$-1") else []
            return [bulk(k.raw) for k in node.kids]
        got, want = members(a), members(b)
        if len(got) != len(want):
            return False, a.raw, b.raw
        key = full[1]
        name = cmd_name(full)
        distinct = name == "SPOP" or (len(full) > 2 and not full[2].startswith(b"-"))
        if distinct and (len(set(got)) != len(got) or len(set(want)) != len(want)):
            return False, a.raw, b.raw
        now = []
        for conn in (cg, ref):
            rep = conn.call([b"SMEMBERS", key])
            now.append(set(bulk(k.raw) for k in (rep.kids or [])))
        if name == "SRANDMEMBER":
            return set(got) <= now[0] and set(want) <= now[1] and now[0] == now[1], \
                a.raw, b.raw
        # SPOP: what one popped was in the other's set before its own pop.
        ok = set(got) <= now[1] | set(want) and set(want) <= now[0] | set(got)
        for conn, other in ((cg, want), (ref, got)):
            if other:
                conn.call([b"SREM", key] + other)
        return ok, a.raw, b.raw

    def full_scan(self, cg, ref, full, a, b):
        """SCAN from cursor 0 to its end on each server: the key sets."""
        def shape_ok(node):
            return node.kids is not None and len(node.kids) == 2 \
                and node.kids[0].t == b"$" and node.kids[1].kids is not None

        if not (shape_ok(a) and shape_ok(b)):
            return a.raw == b.raw, a.raw, b.raw
        sets = []
        for conn, first in ((cg, a), (ref, b)):
            keys = set(k.raw for k in first.kids[1].kids)
            node = first
            steps = 1
            while node.kids[0].raw != b"$1\r\n0\r\n":
                if steps >= SCAN_MAX_STEPS:
                    raise RuntimeError("%s: SCAN did not end within %d calls"
                                       % (conn.name, SCAN_MAX_STEPS))
                cursor = node.kids[0].raw.split(b"\r\n")[1]
                node = conn.call([full[0], cursor] + full[2:])
                steps += 1
                if not shape_ok(node):
                    return False, b"cursor %r answered %r" % (cursor, node.raw), b"(a cursor)"
                keys.update(k.raw for k in node.kids[1].kids)
            sets.append(keys)
        shown = [b"full SCAN keys: " + b" ".join(sorted(s)) for s in sets]
        return sets[0] == sets[1], shown[0], shown[1]

    def mismatch(self, resp, index, full, a, b, in_multi, queued):
        lines = ["MISMATCH (seed %s, RESP%d, request #%d%s)"
                 % (self.seed, resp, index,
                    ", inside MULTI after %s" % queued if in_multi else ""),
                 "  request:  %r" % (full,),
                 "  cellgate: %r" % (a[:2000],),
                 "  redis:    %r" % (b[:2000],),
                 "  the %d requests before it (on the same connection):" % len(self.history)]
        for i, args in self.history:
            lines.append("    #%d %r" % (i, args))
        raise Mismatch("\n".join(lines))


# ---- servers and the CLI ---------------------------------------------------------

def cellgate_commands(addr):
    """The command names cellgate knows (COMMAND LIST), upper case."""
    c = Conn(*addr, name="cellgate")
    try:
        rep = c.call([b"COMMAND", b"LIST"])
        if rep.kids is None:
            raise RuntimeError("COMMAND LIST answered %r" % rep.raw[:200])
        return {k.raw.split(b"\r\n")[1].decode().upper() for k in rep.kids}
    finally:
        c.close()


def select_grammar(only=None, supported=None, out=sys.stdout):
    """The grammar's entries for this run: --only's, then those cellgate
    has (supported: COMMAND LIST's names, or None for all)."""
    grammar = [c for c in GRAMMAR if c.redis]
    if only:
        want = {w.strip().upper() for w in only.split(",") if w.strip()}
        unknown = want - set(BY_NAME)
        if unknown:
            raise SystemExit("difftest: --only names commands not in the grammar: %s"
                             % ", ".join(sorted(unknown)))
        grammar = [c for c in grammar if c.name in want]
    if supported is not None:
        dropped = [c.name for c in grammar if c.name not in supported]
        grammar = [c for c in grammar if c.name in supported]
        print("difftest: --supported-only dropped %d commands cellgate lacks: %s"
              % (len(dropped), " ".join(dropped) or "none"), file=out)
    return grammar


def difftest(cg_addr, ref_addr, seed, commands, resp="both", only=None,
             supported_only=False, plant=False, out=sys.stdout):
    """Run the suite; returns (Stats, grammar, Mismatch or None)."""
    supported = cellgate_commands(cg_addr) if supported_only else None
    grammar = select_grammar(only, supported, out)
    if not grammar:
        raise SystemExit("difftest: no command left to send")
    runner = Runner(cg_addr, ref_addr, seed, grammar, plant=plant, out=out)
    versions = [2, 3] if resp == "both" else [int(resp)]
    try:
        for i, v in enumerate(versions):
            share = commands // len(versions) + (1 if i < commands % len(versions) else 0)
            runner.history.clear()
            runner.run(share, v)
    except Mismatch as m:
        return runner.stats, grammar, m
    return runner.stats, grammar, None


def parse_addr(text):
    host, _, port = text.rpartition(":")
    return (host or "127.0.0.1", int(port))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", default=None, help="the run's seed (default: random, printed)")
    ap.add_argument("--commands", type=int, default=100000, help="requests in all")
    ap.add_argument("--resp", choices=["2", "3", "both"], default="both")
    ap.add_argument("--only", default=None, help="comma-separated commands of the grammar")
    ap.add_argument("--supported-only", action="store_true",
                    help="drop the commands cellgate lacks (COMMAND LIST)")
    ap.add_argument("--plant-limiters", action="store_true",
                    help="plant CL.THROTTLE keys (a hash in Redis) for WRONGTYPE checks")
    ap.add_argument("--stats", action="store_true", help="print the counts at the end")
    ap.add_argument("--cellgate", default=None, help="HOST:PORT of a running cellgate")
    ap.add_argument("--redis", default=None, help="HOST:PORT of a running redis-server")
    args = ap.parse_args(argv)
    seed = args.seed if args.seed is not None else str(random.SystemRandom().randrange(10 ** 9))
    print("difftest: seed %s, %d commands, RESP %s" % (seed, args.commands, args.resp))

    started = []
    try:
        if args.cellgate:
            cg_addr = parse_addr(args.cellgate)
        else:
            import harness
            d = harness.Daemon(tempfile.mkdtemp(prefix="cellgate-difftest-"), name="cellgate")
            started.append(d)
            d.start()
            cg_addr = ("127.0.0.1", d.port)
        if args.redis:
            ref_addr = parse_addr(args.redis)
        else:
            import harness
            r = harness.RedisServer(tempfile.mkdtemp(prefix="redis-difftest-"))
            started.append(r)
            r.start()
            ref_addr = ("127.0.0.1", r.port)
        t0 = time.monotonic()
        stats, grammar, mismatch = difftest(cg_addr, ref_addr, seed, args.commands, args.resp,
                                            args.only, args.supported_only,
                                            args.plant_limiters)
        took = time.monotonic() - t0
        if args.stats or mismatch:
            stats.report(grammar, sys.stdout)
        if mismatch:
            print(mismatch)
            return 1
        print("difftest: 0 mismatches over %d commands in %.1f s (seed %s)"
              % (stats.total, took, seed))
        return 0
    finally:
        problems = []
        for s in started:
            p = s.stop()
            if p:
                problems += p
        if problems:
            print("difftest: %s" % "; ".join(problems), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
