"""cmsgpack and struct in scripts against Debian's redis-server 7.0.15,
byte for byte in RESP2 and RESP3: every integer, float and string class,
tables (array or map, nesting past 16, cycles), every msgpack type and
malformed input when unpacking, unpack_one/unpack_limit's offsets, struct's
options, alignment and errors, pcall catching each error; then a leaky
bucket that keeps its state packed in a key, and what malformed input may
cost (nothing beyond its own bytes; the Lua heap bound still holds)."""
import pytest

import redis_cases
from harness import RawConn


def lua(data):
    """A Lua 5.1 string literal for bytes (Lua 5.1 has no \\x escapes)."""
    return "'" + "".join("\\%d" % b for b in data) + "'"


def ret(expr):
    """A script that returns expr, or pcall's false and message as a list."""
    return "return {pcall(function() return %s end)}" % expr


NUMBERS = ["0", "1", "127", "128", "255", "256", "65535", "65536", "4294967295",
           "4294967296", "2^53", "2^63 - 1024", "2^63", "2^64", "-1", "-32", "-33",
           "-128", "-129", "-32768", "-32769", "-2^31", "-2^31 - 1", "-2^63", "-2^64",
           "1.5", "-1.5", "0.1", "1/3", "3.4e38", "3.5e38", "1e300", "2^-149",
           "2^-150", "1e-320", "(1/0)", "(-1/0)", "(0/0)", "(-(0))"]

MSGPACK = [
    # every number class, packed alone and together
    *["return cmsgpack.pack(%s)" % n for n in NUMBERS],
    "return cmsgpack.pack(%s)" % ", ".join(NUMBERS),
    # strings of every length class
    *["return cmsgpack.pack(string.rep('s', %d))" % n
      for n in (0, 1, 31, 32, 255, 256, 65535, 65536, 70000)],
    "return cmsgpack.pack('a\\0b', '')",
    # other values
    "return cmsgpack.pack(true, false, nil)",
    "return cmsgpack.pack(tostring, coroutine.create(function() end))",
    # tables: array or map
    "return cmsgpack.pack({})",
    "return cmsgpack.pack({1, 2, 3}, {'a', {'b'}}, {1, nil, 3}, {nil, 2})",
    "return cmsgpack.pack({a = 1}, {[2] = 1}, {[0] = 1}, {[-1] = 1}, {[1.5] = 1})",
    "return cmsgpack.pack({[1] = 1, [2] = 2, [4] = 4}, {[2^31] = 1}, {[2^31 - 1] = 1})",
    "return cmsgpack.pack({x = 1, y = 2, z = {1, 2}, w = 's', [1] = 5, [2] = 6})",
    "return cmsgpack.pack({[true] = 1, [{}] = 2})",
    "local t = {} for i = 1, 15 do t[i] = i end return cmsgpack.pack(t)",
    "local t = {} for i = 1, 16 do t[i] = i end return cmsgpack.pack(t)",
    "local t = {} for i = 1, 65536 do t[i] = i % 3 end return cmsgpack.pack(t)",
    "local t = {} for i = 1, 16 do t['k' .. i] = i end return cmsgpack.pack(t)",
    "local t = {} for i = 1, 65536 do t['k' .. i] = 1 end return #cmsgpack.pack(t)",
    "local t = {} for i = 1, 40 do t[i * 7] = i end return cmsgpack.pack(t)",
    # nesting: 16 levels, then nil; a cycle ends there too
    "local t = {} local c = t for i = 1, 20 do c[1] = {} c = c[1] end "
    "return cmsgpack.pack(t)",
    "local t = {} t.t = t return cmsgpack.pack(t)",
    "local t = {1} t[2] = t return cmsgpack.pack(t)",
    "return cmsgpack.pack(string, KEYS, ARGV)",
    # pack's errors and limits
    "return cmsgpack.pack()",
    ret("cmsgpack.pack()"),
    "return {pcall(cmsgpack.pack)}",
    "local t = {} for i = 1, 3990 do t[i] = {} end "
    "return {pcall(cmsgpack.pack, unpack(t))}",
    "local t = {} for i = 1, 4100 do t[i] = i end "
    "return {pcall(cmsgpack.pack, unpack(t))}",
    # round trips
    "return {cmsgpack.unpack(cmsgpack.pack(%s))}" % ", ".join(
        n for n in NUMBERS if "0/0" not in n and "1/0" not in n),
    "return cjson.encode({cmsgpack.unpack(cmsgpack.pack({a = {1, 2, {b = 'c'}}, "
    "d = true}, 'x', {}))})",
    "local t = {} for k in pairs(cmsgpack.unpack(cmsgpack.pack({a = 1, b = 2, c = 3, "
    "d = 4, e = 5, f = 6, g = 7, h = 8, i = 9}))) do t[#t + 1] = k end return t",
    # unpack: every type
    *[ret("cmsgpack.unpack(%s)" % lua(b)) for b in [
        b"\x00", b"\x7f", b"\xe0", b"\xff", b"\xcc\xff", b"\xcd\xff\xff",
        b"\xce\xff\xff\xff\xff", b"\xcf\x00\x00\x00\x01\x00\x00\x00\x00",
        b"\xcf\x7f\xff\xff\xff\xff\xff\xff\xff", b"\xcf\x80\x00\x00\x00\x00\x00\x00\x00",
        b"\xcf\xff\xff\xff\xff\xff\xff\xff\xff", b"\xd0\x80", b"\xd1\x80\x00",
        b"\xd2\x80\x00\x00\x00", b"\xd3\x80\x00\x00\x00\x00\x00\x00\x00",
        b"\xd3\xff\xff\xff\xff\xff\xff\xff\xfe", b"\xca\x3f\xc0\x00\x00",
        b"\xca\x3d\xcc\xcc\xcd", b"\xcb\x3f\xb9\x99\x99\x99\x99\x99\x9a",
        b"\xcb\x7f\xf0\x00\x00\x00\x00\x00\x00", b"\xc0", b"\xc2", b"\xc3",
        b"\xa3abc", b"\xd9\x03abc", b"\xda\x00\x03abc", b"\xdb\x00\x00\x00\x03abc",
        b"\x92\x01\xa1x", b"\xdc\x00\x02\x01\x02", b"\xdd\x00\x00\x00\x02\x01\x02",
        b"\x93\xc0\x01\xc0", b"\x90", b"\x80",
        b"\x01\x02\x03", b"\x91\x91\x91\x01",
        # malformed: unknown types, bin, ext, truncated, huge counts
        b"\xc1", b"\xc4\x01a", b"\xc5\x00\x01a", b"\xc6\x00\x00\x00\x01a",
        b"\xc7\x01\x01a", b"\xc8\x00\x01\x01a", b"\xc9\x00\x00\x00\x01\x01a",
        b"\xd4\x01a", b"\xd5\x01ab", b"\xd6\x01abcd", b"\xd7\x01abcdefgh",
        b"\xd8\x01" + b"a" * 16, b"\xcc", b"\xcd\x01", b"\xce\x01\x02\x03",
        b"\xcf\x01", b"\xd0", b"\xd1\x01", b"\xd2\x01", b"\xd3\x01", b"\xca\x01",
        b"\xcb\x01\x02", b"\xa5abc", b"\xd9", b"\xd9\x05abc", b"\xda\x00",
        b"\xda\x00\x05abc", b"\xdb\x00\x00\x00", b"\xdb\xff\xff\xff\xff",
        b"\x93\x01\x02", b"\xdc\x00", b"\xdc\xff\xff\x01", b"\xdd\xff\xff\xff\xff",
        b"\x82\x01\x02", b"\x81\x01", b"\xde\xff\xff", b"\xdf\xff\xff\xff\xff",
        b"\x81\xc0\x01", b"\x92\x81\xc0\x01\xc1",
        b"\x81\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00\x01", b"\x01\xc1", b"\x01\x02\xcd"]],
    # the maps' and arrays' contents
    "return cjson.encode(cmsgpack.unpack(%s))" % lua(b"\x82\xa1a\x01\xa1b\x92\x02\x03"),
    "return cjson.encode(cmsgpack.unpack(%s))" % lua(b"\xde\x00\x01\xa1a\x01"),
    "return cjson.encode(cmsgpack.unpack(%s))" % lua(b"\xdf\x00\x00\x00\x01\xa1a\x01"),
    "return cjson.encode(cmsgpack.unpack(%s))" % lua(b"\x82\x01\xa1a\x02\xa1b"),
    "local t = {} for k, v in pairs(cmsgpack.unpack(%s)) do t[#t + 1] = k end return t"
    % lua(b"\x85\xa1e\x01\xa1d\x02\xa1c\x03\xa1b\x04\xa1a\x05"),
    # the Lua stack's bound
    ret("cmsgpack.unpack(string.rep(%s, 5000))" % lua(b"\x91")),
    ret("type(cmsgpack.unpack(string.rep(%s, 3000) .. %s))" % (lua(b"\x91"), lua(b"\x01"))),
    ret("select('#', cmsgpack.unpack(string.rep(%s, 7990)))" % lua(b"\x01")),
    ret("cmsgpack.unpack(string.rep(%s, 9000))" % lua(b"\x01")),
    # unpack's arguments
    "return cmsgpack.unpack()",
    "return {pcall(cmsgpack.unpack)}",
    "return {pcall(cmsgpack.unpack, {})}",
    "return {cmsgpack.unpack(12)}",
    "return {cmsgpack.unpack('')}",
    # unpack_one and unpack_limit
    *["return {pcall(cmsgpack.unpack_one, %s)}" % a for a in [
        "''", lua(b"\x01\x02\x03"), lua(b"\x01\x02\x03") + ", 0", lua(b"\x01\x02\x03") + ", 1",
        lua(b"\x01\x02\x03") + ", 2", lua(b"\x01\x02\x03") + ", 3", lua(b"\x01\x02\x03") + ", 4",
        lua(b"\x01\x02\x03") + ", -1", lua(b"\x01\x02\x03") + ", 'x'",
        lua(b"\x01\x02\x03") + ", '1'", lua(b"\x01\x02\x03") + ", 1.7",
        lua(b"\x01\x02\x03") + ", 2^40", lua(b"\x92\x01\x02\x03"), lua(b"\x92\x01"), ""]],
    *["return {pcall(cmsgpack.unpack_limit, %s)}" % a for a in [
        lua(b"\x01\x02\x03") + ", 2", lua(b"\x01\x02\x03") + ", 2, 2",
        lua(b"\x01\x02\x03") + ", 0", lua(b"\x01\x02\x03") + ", 0, 0",
        lua(b"\x01\x02\x03") + ", 0, 1", lua(b"\x01\x02\x03") + ", 10",
        lua(b"\x01\x02\x03") + ", 3, 3", lua(b"\x01\x02\x03"), lua(b"\x01\x02\x03") + ", -1",
        lua(b"\x01\x02\x03") + ", 1, -5", lua(b"\x01\x02\x03") + ", 1, 9",
        lua(b"\x01\xc1") + ", 1", lua(b"\x01\xc1") + ", 2", "''", "'', 1"]],
    "local s = cmsgpack.pack(1, 'two', {3}) local out, off = {}, 0 "
    "for i = 1, 10 do local n, v = cmsgpack.unpack_one(s, off) out[#out + 1] = n "
    "if n == -1 then break end off = n end return out",
    # the library tables, read-only
    "return {type(cmsgpack), type(struct), cmsgpack._NAME, cmsgpack._VERSION, "
    "cmsgpack._COPYRIGHT, cmsgpack._DESCRIPTION}",
    "local t = {} for k in pairs(cmsgpack) do t[#t + 1] = k end return t",
    "local t = {} for k in pairs(struct) do t[#t + 1] = k end return t",
    "cmsgpack.pack = nil",
    "struct.pack = nil",
    "cmsgpack.x = 1",
    "return {pcall(function() cmsgpack.unpack = 1 end)}",
]

STRUCT = [
    *[ret("struct.pack(%s)" % a) for a in [
        "'>I', 1", "'<I', 1", "'!I', 1", "'I', -1", "''",
        "'bBhHlLTiI', -1, 255, -2, 65535, -3, 4, 5, -6, 7",
        "'>bBhHlLTiI', -1, 255, -2, 65535, -3, 4, 5, -6, 7",
        "'i1i2i3i5i7i8', -1, -2, -3, -5, -7, -8", "'>i16', -1", "'<I16', 2^64 - 1",
        "'<i32', 1", "'<i33', 1", "'<i0', 1", "'<f>f<d>d', 1.5, 0.1, 0.1, 1/0",
        "'<l', 0/0", "'<L', 0/0", "'<L', 2^63", "'<L', 2^64", "'<L', 2^70",
        "'<l', -2^70", "'<l', 2^70", "'<L', -1.5", "'<b', 3.9", "'<b', -3.9",
        "'>h', 70000", "'<h', -70000", "'>d', 0/0", "'>f', 1e300",
        "'c', 'abc'", "'c2', 'abc'", "'c0', 'abc'", "'c5', 'abc'", "'i c5', 1, 'abc'",
        "'s', 'a\\0b'", "'sxs', 'ab', 'cd'", "'!4 b i b d', 1, 2, 3, 4",
        "'! b d b h', 1, 2, 3, 4", "'!2 b d b i3 b i', 1, 2, 3, 4, 5, 6",
        "'!16 b d', 1, 2", "'!3 b', 1", "'!0 b', 1", "'!', 1", "'z', 1", "'=i', 1",
        "'i', 'x'", "'i', '12'", "'i'", "", "'i99999999999', 1", "'\\200', 1",
        "'c1', 5", "'bb', 1"]],
    *[ret("struct.unpack(%s)" % a) for a in [
        "'>I', '\\0\\0\\0\\1'", "'>i3', '\\255\\255\\254'", "'>I3', '\\255\\255\\254'",
        "'<i16', string.rep('\\255', 16)", "'<I16', string.rep('\\255', 16)",
        "'<i9', string.rep('\\255', 9)", "'<i0', 'abc'", "'<I8', string.rep('\\255', 8)",
        "'<i8', '\\0\\0\\0\\0\\0\\0\\0\\128'", "'c2c0', 'ab3xyzw'", "'bc0', '\\3xyzw'",
        "'c0', 'abc'", "'sc0', 'ab\\0cd'", "'bc0', '\\9xyz'", "'s', 'ab\\0cd'",
        "'ss', 'ab\\0cd\\0'", "'s', 'abc'", "'i', 'abc'", "'i', 'abcdefgh', 5",
        "'i', 'abcdefgh', 6", "'i', 'abcdefgh', 0", "'i', 'abcdefgh', -1",
        "'!4 b i', '\\1\\0\\0\\0\\2\\0\\0\\0'", "'!4 b i', '\\1\\0\\0\\0\\2\\0\\0\\0\\9', 2",
        "'z', 'abc'", "'i'", "'', 'abc'", "'xxb', 'abc'", "' < > b', 'abc'",
        "'c0', ''", "'b', ''", "'b', 'abc', 3", "'b', 'abc', 4", "'x', 'a'",
        "'i', 'abcd', 'x'", "'=', 'a'"]],
    "return {struct.unpack('<fd', struct.pack('<fd', 1.5, 0.1))}",
    "return {struct.unpack('>fd', struct.pack('>fd', -2.25, 1e300))}",
    "return {struct.unpack('>I', struct.pack('>I', -1))}",
    "return {struct.unpack('<bBhHlLTiI', struct.pack('<bBhHlLTiI', -1, 255, -2, 65535, "
    "-3, 4, 5, -6, 7))}",
    *[ret("struct.size(%s)" % a) for a in [
        "'bBhHlLTiIfdxc3'", "'!bdbi'", "'!4bdbi'", "'z5'", "'i7'", "'s'", "'c0'",
        "'!3'", "'='", "'i40'", "", "''", "'\\200'"]],
    "return struct.pack('i', 'x')",
    "return struct.unpack('i', 'abc')",
    "return struct.size('s')",
]

# A leaky bucket that keeps its level and time packed in one key, as
# libraries do with cmsgpack: each call leaks, then admits or refuses.
LEAKY_BUCKET = """
local state = redis.call('GET', KEYS[1])
local level, last = 0, tonumber(ARGV[3])
if state then
  local s = cmsgpack.unpack(state)
  level, last = s.level, s.time
end
local now, rate, capacity = tonumber(ARGV[3]), tonumber(ARGV[1]), tonumber(ARGV[2])
level = math.max(0, level - (now - last) * rate)
local allowed = level + 1 <= capacity
if allowed then level = level + 1 end
redis.call('SET', KEYS[1], cmsgpack.pack({level = level, time = now}))
return {allowed and 1 or 0, tostring(level), redis.call('GET', KEYS[1])}
"""


def run_scripts(port, scripts, proto):
    conn = RawConn(port=port)
    try:
        conn.command("FLUSHALL")
        if proto == 3:
            conn.command("HELLO", 3)
        return [conn.command("EVAL", s, 0) for s in scripts]
    finally:
        conn.close()


def compare(pair, scripts, proto):
    ref, cg = pair
    want = run_scripts(ref.port, scripts, proto)
    got = run_scripts(cg.port, scripts, proto)
    for script, w, g in zip(scripts, want, got):
        assert g == w, "script: %s" % script
    assert len(got) == len(scripts)


@pytest.fixture(scope="module")
def pair(redis_server, module_daemon):
    return redis_server, module_daemon


@pytest.mark.parametrize("proto", [2, 3])
def test_cmsgpack_same_bytes_as_redis(pair, proto):
    compare(pair, MSGPACK, proto)


@pytest.mark.parametrize("proto", [2, 3])
def test_struct_same_bytes_as_redis(pair, proto):
    compare(pair, STRUCT, proto)


def test_a_leaky_bucket_keeping_msgpack_state(pair):
    ref, cg = pair
    replies = []
    for server in (ref, cg):
        conn = RawConn(port=server.port)
        try:
            conn.command("FLUSHALL")
            calls = [(2, 3, t) for t in (100, 100, 100, 100, 100.5, 101, 103, 103.25)]
            replies.append([conn.command("EVAL", LEAKY_BUCKET, 1, "bucket", *map(str, c))
                            for c in calls])
            replies[-1].append(conn.command("GET", "bucket"))
        finally:
            conn.close()
    assert replies[1] == replies[0]
    # admitted 3, refused the 4th; the level leaks back: the state is real
    assert replies[0][3].startswith(b"*3\r\n:0\r\n")
    assert replies[0][-1].startswith(b"$")


def test_malformed_input_costs_only_its_bytes_and_the_heap_bound_holds(start_daemon):
    d = start_daemon("--lua-memory-limit", "2mb")
    c = d.raw()
    before = int(d.info("memory")["used_memory_lua"])
    # Counts and lengths of 4 G with nothing behind them: refused at once.
    for head in (b"\xdd", b"\xdf", b"\xdb"):
        got = c.command("EVAL", "return {pcall(cmsgpack.unpack, ARGV[1])}", 0,
                        head + b"\xff\xff\xff\xff" + b"\x01" * 1000)
        assert got == b"*2\r\n$-1\r\n$23\r\nMissing bytes in input.\r\n", got
    assert int(d.info("memory")["used_memory_lua"]) < before + 512 * 1024
    # A million empty tables fit in a megabyte of input, not in the heap's 2 MB.
    body = ("local s = %s .. string.rep(%s, 1000000) "
            "return {pcall(cmsgpack.unpack, s)}" % (lua(b"\xdd\x00\x0f\x42\x40"), lua(b"\x90")))
    got = c.command("EVAL", body, 0)
    assert b"not enough memory" in got, got
    assert c.command("EVAL", "return cmsgpack.pack({1, 'x'})", 0) == b"$4\r\n\x92\x01\xa1x\r\n"


@pytest.mark.parametrize("proto", [2])
def test_redis_scripting_tcl_cases(server, redis_server, proto):
    """Redis 7.0.15's tests/unit/scripting.tcl cmsgpack cases, by EVAL and by
    FCALL (redis_tcl/scripting.cmds), as redis-server answers them."""
    assert redis_cases.run("scripting.cmds", server.port, redis_server.port, proto) == []
