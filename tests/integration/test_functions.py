"""Redis 7.0's functions (FUNCTION LOAD ... FCALL) against Debian's
redis-server 7.0.15, byte for byte in RESP2 and RESP3: loading and its
errors, the load-time sandbox, register_function's two forms and flags,
FCALL and FCALL_RO, DELETE, FLUSH, LIST, DUMP and RESTORE (payloads
crossing between the two servers, equal bytes for the same library),
STATS, HELP; then what only cellgate can show: libraries surviving kill -9
with the journal, a journal rewrite, a snapshot restart, and reaching a
replica by a full sync and by the stream.

Redis lists libraries and a library's functions in its hash order, so a
case lists at most one library with one function."""
import os

import pytest

import harness
import redis_cases
from harness import RawConn


def lib(name, *functions):
    """A library's code: each function a (name, body[, flags]) of Lua."""
    lines = ["#!lua name=%s" % name]
    for f in functions:
        fname, body = f[0], f[1]
        if len(f) > 2:
            lines.append("redis.register_function{function_name='%s', "
                         "callback=function(keys, args) %s end, flags={%s}}"
                         % (fname, body, ", ".join("'%s'" % x for x in f[2])))
        else:
            lines.append("redis.register_function('%s', function(keys, args) "
                         "%s end)" % (fname, body))
    return "\n".join(lines)


SETTER = lib("setter", ("set1", "return redis.call('SET', keys[1], args[1])"))
GETTER = lib("getter", ("get1", "return redis.call('GET', keys[1])",
                        ["no-writes"]))
NAMED = ("#!lua name=named\nredis.register_function{function_name='nf', "
         "callback=function() return 'n' end, description='a description', "
         "flags={'NO-WRITES', 'allow-oom', 'allow-stale', 'no-cluster', "
         "'allow-cross-slot-keys'}}")


def load_err(body, name="bad"):
    return [("FUNCTION", "LOAD", "#!lua name=%s\n%s" % (name, body))]


CASES = [
    # ---- loading and calling ---------------------------------------------
    ("load-and-call", [("FUNCTION", "LOAD", SETTER), ("FCALL", "set1", 1, "k", "v"),
                       ("GET", "k"), ("FUNCTION", "LOAD", GETTER),
                       ("FCALL_RO", "get1", 1, "k"), ("FCALL", "get1", 1, "k")]),
    ("list", [("FUNCTION", "LOAD", SETTER), ("FUNCTION", "LIST"),
              ("FUNCTION", "LIST", "WITHCODE"),
              ("FUNCTION", "LIST", "LIBRARYNAME", "set*"),
              ("FUNCTION", "LIST", "LIBRARYNAME", "nomatch*", "WITHCODE"),
              ("FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "setter")]),
    ("list-named-flags-description", [("FUNCTION", "LOAD", NAMED),
                                      ("FUNCTION", "LIST"), ("FCALL", "nf", 0)]),
    ("list-errors", [("FUNCTION", "LIST", "LIBRARYNAME"),
                     ("FUNCTION", "LIST", "WITHCODE", "WITHCODE"),
                     ("FUNCTION", "LIST", "bogus")]),
    ("replace", [("FUNCTION", "LOAD", SETTER), ("FUNCTION", "LOAD", SETTER),
                 ("FUNCTION", "LOAD", "REPLACE", SETTER),
                 ("FUNCTION", "LOAD", "replace", "REPLACE", SETTER),
                 ("FUNCTION", "LOAD", "bogus", SETTER),
                 ("FUNCTION", "LOAD", "REPLACE", lib("setter", ("other", "return 2"))),
                 ("FCALL", "set1", 0), ("FCALL", "other", 0)]),
    ("function-name-taken", [("FUNCTION", "LOAD", SETTER),
                             ("FUNCTION", "LOAD", lib("second", ("set1", "return 1"))),
                             ("FUNCTION", "LIST")]),
    ("delete-and-flush", [("FUNCTION", "LOAD", SETTER), ("FUNCTION", "DELETE", "setter"),
                          ("FUNCTION", "DELETE", "setter"), ("FCALL", "set1", 0),
                          ("FUNCTION", "LOAD", SETTER), ("FUNCTION", "FLUSH", "SYNC"),
                          ("FUNCTION", "LIST"), ("FUNCTION", "FLUSH", "ASYNC"),
                          ("FUNCTION", "FLUSH", "bogus"),
                          ("FUNCTION", "FLUSH", "SYNC", "x")]),
    ("flushall-keeps-functions", [("FUNCTION", "LOAD", SETTER), ("FLUSHALL",),
                                  ("FCALL", "set1", 1, "a", "b")]),
    # ---- FCALL's arguments and refusals ----------------------------------
    ("fcall-arguments", [("FUNCTION", "LOAD", lib("args", ("a", "return {keys, args}"))),
                         ("FCALL", "a", 2, "k1", "k2", "x", "y"), ("FCALL", "a", 0),
                         ("FCALL", "a", "x"), ("FCALL", "a", -1),
                         ("FCALL", "a", 3, "k"), ("FCALL", "nope", 0),
                         ("FCALL", "a")]),
    ("fcall-ro-refuses-writes", [("FUNCTION", "LOAD", SETTER),
                                 ("FCALL_RO", "set1", 1, "k", "v"), ("GET", "k")]),
    ("no-writes-function-may-not-write",
     [("FUNCTION", "LOAD", lib("nw", ("w", "return redis.call('SET', 'x', 1)",
                                      ["no-writes"]))),
      ("FCALL", "w", 0), ("FCALL_RO", "w", 0)]),
    ("fcall-errors", [("FUNCTION", "LOAD", lib("e", ("err1", "return redis.call('nosuch')"),
                                               ("err2", "error('boom')"),
                                               ("err3", "return KEYS[1]"),
                                               ("err4", "return {err='MY text'}"),
                                               ("reg", "redis.register_function('z', "
                                                       "function() end)"))),
                      ("FCALL", "err1", 0), ("FCALL", "err2", 0), ("FCALL", "err3", 0),
                      ("FCALL", "err4", 0), ("FCALL", "reg", 0)]),
    ("keys-argv-of-eval-not-seen", [("EVAL", "return 1", 1, "evalkey"),
                                    ("FUNCTION", "LOAD", lib("k", ("k", "return KEYS"))),
                                    ("FCALL", "k", 0)]),
    ("runtime-sees-the-script-globals",
     [("FUNCTION", "LOAD", lib("g", ("g", "return {type(cjson), string.format('%d', 5), "
                                          "type(redis.call), type(redis.register_function)}"))),
      ("FCALL", "g", 0)]),
    ("upvalues-live-between-calls",
     [("FUNCTION", "LOAD", "#!lua name=c\nlocal n = 0\nredis.register_function('c', "
                           "function() n = n + 1 return n end)"),
      ("FCALL", "c", 0), ("FCALL", "c", 0), ("SCRIPT", "FLUSH"), ("FCALL", "c", 0)]),
    ("resp3-setresp", [("FUNCTION", "LOAD", lib("r", ("r", "redis.setresp(3) "
                                                            "return redis.call('HGETALL', "
                                                            "keys[1])"))),
                       ("HSET", "h", "f", "v"), ("FCALL", "r", 1, "h")]),
    # ---- the library's metadata ------------------------------------------
    ("metadata-errors", [("FUNCTION", "LOAD", "no shebang"),
                         ("FUNCTION", "LOAD", "#!lua name=x"),
                         ("FUNCTION", "LOAD", "#!lua\nreturn 1"),
                         ("FUNCTION", "LOAD", "#!lua name=a name=b\nreturn 1"),
                         ("FUNCTION", "LOAD", "#!lua name=a other=b\nreturn 1"),
                         ("FUNCTION", "LOAD", "#!js name=a\nreturn 1"),
                         ("FUNCTION", "LOAD", "#!lua name=a-b\nreturn 1"),
                         ("FUNCTION", "LOAD", "#!lua name=\nreturn 1"),
                         ("FUNCTION", "LOAD", "#!lua name=\"q u\"\nreturn 1"),
                         ("FUNCTION", "LOAD", "#!lua name=\"unbalanced\nreturn 1"),
                         ("FUNCTION", "LOAD", "#!LUA NAME=upper\nredis.register_function("
                                              "'up', function() return 1 end)"),
                         ("FCALL", "up", 0)]),
    ("compile-and-register-errors",
     load_err("return 1 +") + load_err("return 1") + load_err("redis.call('ping')")
     + load_err("local x = string.len('a')") + load_err("error('x')")
     + load_err("foo = 1") + load_err("redis.setresp(3)")
     + load_err("redis.register_function('a-b', function() end)")
     + load_err("redis.register_function('', function() end)")
     + load_err("redis.register_function('x', function() end) "
                "redis.register_function('x', function() end)")
     + load_err("redis.register_function()")
     + load_err("redis.register_function('x')")
     + load_err("redis.register_function('x', 1)")
     + load_err("redis.register_function(1, function() end)")
     + load_err("redis.register_function('q', function() end, 3)")
     + load_err("redis.register_function({'x'})")
     + load_err("redis.register_function({function_name='x'})")
     + load_err("redis.register_function({callback=function() end})")
     + load_err("redis.register_function({function_name={}, callback=function() end})")
     + load_err("redis.register_function({function_name='x', callback=1})")
     + load_err("redis.register_function({function_name='x', callback=function() end, "
                "flags='no-writes'})")
     + load_err("redis.register_function({function_name='x', callback=function() end, "
                "flags={'bogus'}})")
     + load_err("redis.register_function({function_name='x', callback=function() end, "
                "description={}})")
     + load_err("redis.register_function({function_name='x', callback=function() end, "
                "other=1})")
     + load_err("redis.log(redis.LOG_NOTICE, 'loading') "
                "redis.register_function('v', function() return redis.REDIS_VERSION end)")
     + [("FCALL", "v", 0)]),
    ("register-outside-load",
     [("FUNCTION", "LOAD", "#!lua name=o\nlocal rf = redis.register_function\n"
                           "rf('o', function() return rf('p', function() end) end)"),
      ("FCALL", "o", 0)]),
    # ---- DUMP and RESTORE -------------------------------------------------
    ("dump-restore", [("FUNCTION", "LOAD", SETTER), ("FUNCTION", "DUMP"),
                      ("FUNCTION", "RESTORE", "bad payload"),
                      ("FUNCTION", "RESTORE", "x" * 20, "FLUSH"),
                      ("FUNCTION", "RESTORE", "", "bogus"),
                      ("FUNCTION", "RESTORE", "a", "b", "c")]),
    ("stats-and-help", [("FUNCTION", "LOAD", SETTER), ("FUNCTION", "STATS"),
                        ("FUNCTION", "HELP"), ("FUNCTION", "KILL"),
                        ("FUNCTION", "BOGUS"), ("FUNCTION", "STATS", "x")]),
    ("noscript", [("EVAL", "return redis.call('FUNCTION', 'LIST')", 0),
                  ("EVAL", "return redis.call('FCALL', 'x', 0)", 0)]),
    ("inside-multi", [("FUNCTION", "LOAD", SETTER), ("MULTI",),
                      ("FCALL", "set1", 1, "m", "1"), ("FUNCTION", "DELETE", "setter"),
                      ("EXEC",), ("GET", "m"), ("FUNCTION", "LIST")]),
]


def run_case(port, cmds, proto):
    conn = RawConn(port=port)
    try:
        conn.command("FLUSHALL")
        conn.command("FUNCTION", "FLUSH")
        if proto == 3:
            conn.command("HELLO", 3)
        return [conn.command(*cmd) for cmd in cmds]
    finally:
        conn.close()


@pytest.fixture(scope="module")
def pair(redis_server, module_daemon):
    return redis_server, module_daemon


@pytest.mark.parametrize("proto", [2, 3])
@pytest.mark.parametrize("name,cmds", CASES, ids=[n for n, _ in CASES])
def test_same_bytes_as_redis(pair, name, cmds, proto):
    ref, cg = pair
    want = run_case(ref.port, cmds, proto)
    got = run_case(cg.port, cmds, proto)
    assert got == want


def test_info_memory_counts_libraries_and_functions(pair):
    ref, cg = pair
    for d in (ref, cg):
        c = RawConn(port=d.port)
        c.command("FUNCTION", "FLUSH")
        c.command("FUNCTION", "LOAD", SETTER)
        c.command("FUNCTION", "LOAD", lib("two", ("t1", "return 1"), ("t2", "return 2")))
        c.close()
    fields = ("number_of_functions", "number_of_libraries")
    cg_info = cg.info("memory")
    assert [cg_info[f] for f in fields] == \
        [ref.client().info("memory")[f] for f in fields] == [3, 2]
    assert cg_info["used_memory_functions"] > 0


LIBS = [SETTER, GETTER, NAMED,
        lib("long", *[("long%d" % i, "return redis.call('INCRBY', keys[1], %d)" % i)
                      for i in range(40)])]


def test_dump_is_redis_bytes_and_restores_across_servers(pair):
    ref, cg = pair
    a, b = ref.client(), cg.client()
    for code in LIBS:
        for r in (a, b):
            r.function_flush()
            r.function_load(code)
        dumped = b.function_dump()
        assert dumped == a.function_dump()
        # redis-server's payload into cellgate, and cellgate's into Redis.
        for src, dst in ((a, b), (b, a)):
            payload = src.function_dump()
            dst.function_flush()
            assert dst.function_restore(payload) is True
            assert dst.function_list(withcode=True)[0][-1] == code.encode()
    for r in (a, b):
        r.function_flush()
    for code in LIBS:
        a.function_load(code)
    payload = a.function_dump()         # several libraries, LZF and plain
    assert b.function_restore(payload) is True
    assert sorted(x[1] for x in b.function_list()) == \
        sorted(x[1] for x in a.function_list())
    assert b.fcall("long39", 1, "n") == 39


def restore_outcomes(r, payload):
    out = []
    for policy in ("APPEND", "REPLACE", "FLUSH"):
        r.function_flush()
        r.function_load(SETTER)
        r.function_load(lib("keep", ("keep1", "return 'kept'")))
        try:
            out.append(r.execute_command("FUNCTION", "RESTORE", payload, policy))
        except Exception as e:      # the error's text is the outcome
            out.append(str(e))
        out.append(sorted(x[1] for x in r.function_list()))
    return out


def test_restore_policies_as_redis(pair):
    ref, cg = pair
    a, b = ref.client(), cg.client()
    a.function_flush()
    a.function_load(lib("setter", ("other", "return 1")))
    replacing = a.function_dump()
    a.function_load(lib("clash", ("keep1", "return 'x'")))
    clashing = a.function_dump()
    for payload in (replacing, clashing):
        assert restore_outcomes(b, payload) == restore_outcomes(a, payload)
    corrupt = replacing[:-1] + bytes([replacing[-1] ^ 1])
    newer = replacing[:-10] + b"\x0b\x00" + replacing[-8:]
    for p in (corrupt, newer):
        assert restore_outcomes(b, p) == restore_outcomes(a, p)


def test_allow_oom_under_maxmemory(redis_server, start_daemon):
    """A function without flags is a write refused over maxmemory, one with
    allow-oom or no-writes runs; FUNCTION LOAD is deny-oom."""
    cg = start_daemon()
    out = []
    for port in (redis_server.port, cg.port):
        c = RawConn(port=port)
        c.command("FUNCTION", "FLUSH")
        c.command("FUNCTION", "LOAD", lib("oom", ("plain", "return 1"),
                                          ("oomok", "return 2", ["allow-oom"]),
                                          ("ro", "return 3", ["no-writes"])))
        c.command("CONFIG", "SET", "maxmemory", "1")
        out.append([c.command("FCALL", "plain", 0), c.command("FCALL", "oomok", 0),
                    c.command("FCALL", "ro", 0),
                    c.command("FUNCTION", "LOAD", lib("more", ("m", "return 1"))),
                    c.command("FUNCTION", "DELETE", "oom")])
        c.command("CONFIG", "SET", "maxmemory", "0")
        c.command("FUNCTION", "FLUSH")
        c.close()
    assert out[1] == out[0]
    assert out[0][0].startswith(b"-OOM")


def test_no_cluster_flag(start_daemon):
    d = start_daemon("--cluster-mode", "emulated")
    c = d.raw()
    assert c.command("FUNCTION", "LOAD", lib("nc", ("nc", "return 1", ["no-cluster"]))) \
        == b"$2\r\nnc\r\n"
    assert c.command("FCALL", "nc", 0) == \
        b"-ERR Can not run script on cluster, 'no-cluster' flag is set.\r\n"


def kill9(d):
    d.proc.kill()
    d.proc.wait(10)
    d.stopped = True


def names(d):
    return sorted(x[1] for x in d.client().function_list())


def test_libraries_survive_kill_9_a_rewrite_and_a_snapshot_restart(start_daemon, tmp_path):
    work = str(tmp_path / "data")
    os.makedirs(work)
    args = ("--dir", work, "--appendonly", "yes", "--appendfsync", "always")
    d = start_daemon(*args)
    r = d.client()
    r.function_load(SETTER)
    r.function_load(GETTER)
    r.function_load(NAMED)
    r.function_delete("named")
    r.function_load(lib("getter", ("get2", "return 'replaced'")), replace=True)
    kill9(d)
    d = start_daemon(*args)
    r = d.client()
    assert names(d) == [b"getter", b"setter"]
    assert r.fcall("get2", 0) == b"replaced"
    assert r.fcall("set1", 1, "k", "v") == b"OK"
    # A rewrite makes the journal's base a snapshot, libraries in it.
    assert r.bgrewriteaof()
    assert harness.wait_until(
        lambda: d.info("persistence")["aof_rewrite_in_progress"] == 0, 30)
    r.function_load(lib("after", ("a1", "return 'after'")))
    kill9(d)
    d = start_daemon(*args)
    assert names(d) == [b"after", b"getter", b"setter"]
    d.client().function_flush()
    d.client().function_load(NAMED)
    kill9(d)
    d = start_daemon("--dir", work, "--appendonly", "yes")
    assert names(d) == [b"named"]
    # A snapshot alone (appendonly no) holds them too.
    r = d.client()
    assert r.save()
    d.stop()
    d = start_daemon("--dir", work, "--appendonly", "no")
    assert names(d) == [b"named"]
    assert d.client().fcall("nf", 0) == b"n"


def test_a_replica_gets_libraries_by_full_sync_and_by_the_stream(start_daemon):
    p = start_daemon()
    pc = p.client()
    pc.function_load(SETTER)
    r = start_daemon("--replicaof", "127.0.0.1", str(p.port))
    assert harness.wait_until(
        lambda: r.info("replication").get("master_link_status") == "up", 20)
    rc = r.raw()
    assert names(r) == [b"setter"]
    pc.function_load(GETTER)
    assert pc.fcall("set1", 1, "k", "v") == b"OK"
    assert pc.wait(1, 5000) == 1
    assert names(r) == [b"getter", b"setter"]
    assert rc.command("FCALL_RO", "get1", 1, "k") == b"$1\r\nv\r\n"
    # A replica refuses a write function and a library change, as Redis.
    assert rc.command("FCALL", "set1", 1, "k", "w") == \
        b"-READONLY You can't write against a read only replica.\r\n"
    assert rc.command("FUNCTION", "LOAD", NAMED) == \
        b"-READONLY You can't write against a read only replica.\r\n"
    pc.function_delete("setter")
    pc.function_restore(pc.function_dump(), "FLUSH")
    pc.set("sync", 1)
    assert pc.wait(1, 5000) == 1
    assert names(r) == [b"getter"]
    pc.function_flush()
    pc.set("sync", 2)
    assert pc.wait(1, 5000) == 1
    assert names(r) == []


LOOPS = ("#!lua name=loops\nredis.register_function{function_name='spin', "
         "callback=function() local i = 0 while true do i = i + 1 end end, "
         "flags={'no-writes'}}\nredis.register_function('wspin', function() "
         "redis.call('SET', 'w', 1) while true do end end)")


def busy_function_session(port):
    """What the clients see around a function that runs too long: -BUSY
    naming FUNCTION KILL, FUNCTION STATS's running_script, SCRIPT KILL
    refused, FUNCTION KILL; then one that wrote and cannot be killed."""
    conn = RawConn(port=port)
    conn.command("FUNCTION", "FLUSH")
    conn.command("CONFIG", "SET", "busy-reply-threshold", "100")
    conn.command("FUNCTION", "LOAD", LOOPS)
    conn.close()
    runner = RawConn(port=port, timeout=30)
    runner.send(harness.resp_command("FCALL", "spin", 1, "key", "arg"))
    other = RawConn(port=port, timeout=10)
    assert harness.wait_until(
        lambda: other.command("PING").startswith(b"-BUSY"), 20, 0.05)
    seen = [other.command("GET", "k"), other.command("SCRIPT", "KILL")]
    stats = other.command("FUNCTION", "STATS")
    # duration_ms varies: its digits out.
    at = stats.index(b"duration_ms\r\n:") + len(b"duration_ms\r\n:")
    seen.append(stats[:at] + stats[stats.index(b"\r\n", at):])
    seen.append(other.command("FUNCTION", "KILL"))
    seen.append(runner.reply_bytes())
    seen.append(other.command("FUNCTION", "KILL"))
    runner.send(harness.resp_command("FCALL", "wspin", 0))
    assert harness.wait_until(
        lambda: other.command("PING").startswith(b"-BUSY"), 20, 0.05)
    seen.append(other.command("FUNCTION", "KILL"))
    other.close()
    return seen, runner


def test_a_long_function_is_busy_and_killed_as_redis(start_daemon, tmp_path):
    ref = harness.RedisServer(str(tmp_path / "redis"))
    ref.start()
    cg = start_daemon()
    try:
        outcomes = []
        for server in (ref, cg):
            seen, runner = busy_function_session(server.port)
            outcomes.append(seen)
            stopper = RawConn(port=server.port, timeout=10)
            stopper.send(harness.resp_command("SHUTDOWN", "NOSAVE"))
            assert server.proc.wait(20) == 0
            runner.close()
            stopper.close()
        assert outcomes[1] == outcomes[0]
        assert outcomes[0][0] == (b"-BUSY Redis is busy running a script. You can "
                                  b"only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n")
    finally:
        ref.stop()
        cg.stopped = True


# rate-limiter-flexible 11.4.0's RateLimiterValkeyGlide loads its limiter as
# a library (FUNCTION LOAD REPLACE) written for Valkey, registering with
# server.register_function and calling server.call, then runs it by FCALL.
# The text as lib/RateLimiterValkeyGlide.js builds it from its default.
VALKEY_GLIDE_CONSUME = """#!lua name=ratelimiterflexible
        local function consume(KEYS, ARGV)
          local key = KEYS[1]
local pointsToConsume = tonumber(ARGV[1])
if tonumber(ARGV[2]) > 0 then
  server.call('set', key, "0", 'EX', ARGV[2], 'NX')
  local consumed = server.call('incrby', key, pointsToConsume)
  local pttl = server.call('pttl', key)
  return {consumed, pttl}
end
local consumed = server.call('incrby', key, pointsToConsume)
local pttl = server.call('pttl', key)
return {consumed, pttl}
        end
        server.register_function('consume', consume)"""


def test_a_valkey_library_loads_with_the_server_alias(pair):
    """cellgate's scripts have Valkey's alias `server` beside `redis`, and so
    does a library while it loads (compat.md); Redis 7.0.15 has neither."""
    ref, cg = pair
    c = RawConn(port=cg.port)
    c.command("FUNCTION", "FLUSH")
    assert c.command("FUNCTION", "LOAD", "REPLACE", VALKEY_GLIDE_CONSUME) == \
        b"$19\r\nratelimiterflexible\r\n"
    assert c.command("FCALL", "consume", 1, "rl:k", "1", "60").startswith(b"*2\r\n:1\r\n:")
    assert c.command("FCALL", "consume", 1, "rl:k", "2", "60").startswith(b"*2\r\n:3\r\n:")
    c.command("FUNCTION", "FLUSH")
    c.close()
    r = RawConn(port=ref.port)
    assert b"nonexistent global variable 'server'" in \
        r.command("FUNCTION", "LOAD", "REPLACE", VALKEY_GLIDE_CONSUME)
    r.close()


def pause_session(port):
    """CLIENT PAUSE WRITE holds FUNCTION LOAD and FCALL of a function that
    may write, not FCALL of a no-writes one; all run once unpaused."""
    admin, held, reader = (RawConn(port=port, timeout=10) for _ in range(3))
    admin.command("FUNCTION", "FLUSH")
    admin.command("FUNCTION", "LOAD", GETTER)
    assert admin.command("CLIENT", "PAUSE", 100000, "WRITE") == b"+OK\r\n"
    held.send(harness.resp_command("FUNCTION", "LOAD", SETTER))
    seen = [reader.command("FCALL", "get1", 1, "k"),
            reader.command("FUNCTION", "LIST", "LIBRARYNAME", "setter")]
    assert admin.command("CLIENT", "UNPAUSE") == b"+OK\r\n"
    seen.append(held.reply_bytes())
    seen.append(reader.command("FCALL", "set1", 1, "k", "v"))
    for c in (admin, held, reader):
        c.close()
    return seen


def test_client_pause_write_holds_library_changes_and_write_functions(pair):
    ref, cg = pair
    want = pause_session(ref.port)
    assert want[1] == b"*0\r\n" and want[2] == b"$6\r\nsetter\r\n"
    assert pause_session(cg.port) == want


@pytest.mark.parametrize("proto", [2])
def test_redis_functions_tcl_cases(server, redis_server, proto):
    """Redis 7.0.15's tests/unit/functions.tcl case by case
    (redis_tcl/functions.cmds), as redis-server answers them; FCALL finds a
    function whatever the case of its name."""
    assert redis_cases.run("functions.cmds", server.port, redis_server.port, proto) == []


def test_names_equal_but_for_case_are_one_function(server):
    """FCALL finds a function whatever the case (as Redis); two functions
    of one library named alike but for case are refused (Redis 7.0.15
    takes both and then fails an assertion), and deleting the library
    leaves no function behind."""
    c = RawConn(port=server.port)
    code = "#!lua name=%s\n" + "".join(
        "redis.register_function('%s', function() return %d end)\n" % (n, i)
        for i, n in enumerate(("a", "A")))
    assert c.command("FUNCTION", "LOAD", code % "x") == (
        b"-ERR Error registering functions: ERR Function already exists in "
        b"the library\r\n")
    assert c.command("FUNCTION", "LOAD", "#!lua name=x\nredis.register_function("
                     "'fN', function() return 7 end)") == b"$1\r\nx\r\n"
    assert c.command("FUNCTION", "LOAD", "#!lua name=y\nredis.register_function("
                     "'Fn', function() return 8 end)") == \
        b"-ERR Function Fn already exists\r\n"
    assert c.command("FCALL", "FN", "0") == b":7\r\n"
    assert c.command("FUNCTION", "DELETE", "x") == b"+OK\r\n"
    assert c.command("FCALL", "fn", "0") == b"-ERR Function not found\r\n"
    c.close()
