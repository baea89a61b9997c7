"""EVAL, EVALSHA and SCRIPT against Debian's redis-server 7.0.15, byte for
byte in RESP2 and RESP3: the conversions both ways, errors and where they
were raised, the sandbox, the API of the `redis` table, the shebang's
flags; then what only cellgate can show (effects as one group in the
journal and on a replica, the Lua heap apart from maxmemory, the cache's
bound)."""
import hashlib
import os

import pytest

import harness
from harness import RawConn


def sha1(body):
    return hashlib.sha1(body.encode()).hexdigest()


# Each case: (id, [command, ...]); each command a tuple of arguments. The
# replies of every command are compared, in RESP2 and then in RESP3.
CASES = [
    # ---- values a script returns -------------------------------------
    ("number-truncated", [("EVAL", "return 3.99", 0)]),
    ("negative-number", [("EVAL", "return -3.99", 0)]),
    ("string", [("EVAL", "return 'hello'", 0)]),
    ("true", [("EVAL", "return true", 0)]),
    ("false", [("EVAL", "return false", 0)]),
    ("nil", [("EVAL", "return nil", 0)]),
    ("nothing", [("EVAL", "local x = 1", 0)]),
    ("array-stops-at-nil", [("EVAL", "return {1, 2, nil, 4}", 0)]),
    ("nested", [("EVAL", "return {1, {2, {3, 'x'}}, 'y'}", 0)]),
    ("status", [("EVAL", "return redis.status_reply('FINE')", 0)]),
    ("ok-table", [("EVAL", "return {ok='fine'}", 0)]),
    ("err-table", [("EVAL", "return {err='My Error'}", 0)]),
    ("error-reply", [("EVAL", "return redis.error_reply('MY code')", 0)]),
    ("error-reply-dash", [("EVAL", "return redis.error_reply('-X y')", 0)]),
    ("error-reply-newline", [("EVAL", "return redis.error_reply('\\nG')", 0),
                             ("EVAL", "return redis.error_reply('\\rG x\\n')", 0)]),
    ("error-table-dash", [("EVAL", "error({err='-5'})", 0),
                          ("EVAL", "error({err='-ERR x'})", 0)]),
    ("double-table", [("EVAL", "return {double=1.5}", 0)]),
    ("keys-and-argv", [("EVAL", "return {KEYS[1], KEYS[2], ARGV[1], #ARGV}",
                        2, "a", "b", "c", "d")]),
    ("float-argument", [("EVAL", "return redis.call('SET', KEYS[1], 0.1)",
                         1, "f"), ("GET", "f")]),
    ("big-float-argument", [("EVAL", "return redis.call('SET', KEYS[1], 1e300)",
                             1, "f"), ("GET", "f")]),
    # ---- redis.call's replies into Lua ------------------------------------
    ("incr", [("EVAL", "return redis.call('INCR', KEYS[1])", 1, "n")] * 2),
    ("get-missing-is-false", [("EVAL", "return redis.call('GET', 'nope') == false",
                               0)]),
    ("status-into-lua", [("EVAL", "local r = redis.call('SET', 'k', 'v') "
                                  "return type(r) .. ':' .. r.ok", 0)]),
    ("array-into-lua", [("RPUSH", "l", "a", "b", "c"),
                        ("EVAL", "return redis.call('LRANGE', 'l', 0, -1)", 0)]),
    ("hgetall", [("HSET", "h", "f", "v", "g", "w"),
                 ("EVAL", "return redis.call('HGETALL', 'h')", 0)]),
    ("resp3-map", [("HSET", "h", "f", "v"),
                   ("EVAL", "redis.setresp(3) return redis.call('HGETALL', 'h')",
                    0)]),
    ("resp3-map-fields", [("HSET", "h", "f", "v"),
                          ("EVAL", "redis.setresp(3) local r = redis.call('HGETALL', "
                                   "'h') return r.map.f", 0)]),
    ("resp3-double", [("ZADD", "z", "1.5", "m"),
                      ("EVAL", "redis.setresp(3) return redis.call('ZSCORE', 'z', "
                               "'m')", 0)]),
    ("resp3-null", [("EVAL", "redis.setresp(3) return redis.call('GET', 'nope') "
                             "== nil", 0)]),
    ("setresp-bad", [("EVAL", "redis.setresp(4)", 0)]),
    ("zrange-withscores", [("ZADD", "z", "1", "a", "2.5", "b"),
                           ("EVAL", "return redis.call('ZRANGE', 'z', 0, -1, "
                                    "'WITHSCORES')", 0)]),
    # ---- errors --------------------------------------------------------
    ("call-raises", [("SET", "s", "x"),
                     ("EVAL", "return redis.call('INCR', 's')", 0)]),
    ("pcall-returns", [("SET", "s", "x"),
                       ("EVAL", "return redis.pcall('INCR', 's')", 0)]),
    ("pcall-err-field", [("SET", "s", "x"),
                         ("EVAL", "local r = redis.pcall('INCR', 's') return r.err",
                          0)]),
    ("lua-pcall-catches", [("SET", "s", "x"),
                           ("EVAL", "local ok, e = pcall(redis.call, 'INCR', 's') "
                                    "return {tostring(ok), e}", 0)]),
    ("unknown-command", [("EVAL", "return redis.call('nope')", 0)]),
    ("wrong-arity", [("EVAL", "return redis.call('GET')", 0)]),
    ("no-arguments", [("EVAL", "return redis.call()", 0)]),
    ("bad-argument-type", [("EVAL", "return redis.call('GET', {})", 0)]),
    ("noscript-command", [("EVAL", "return redis.call('EVAL', 'return 1', 0)", 0)]),
    ("error-call", [("EVAL", "error('boom')", 0)]),
    ("error-table", [("EVAL", "error({err='CODE text'})", 0)]),
    ("error-line-2", [("EVAL", "local x = 1\nerror('boom')", 0)]),
    ("runtime-error", [("EVAL", "return nil + 1", 0)]),
    ("compile-error", [("EVAL", "return +", 0)]),
    ("numkeys-too-many", [("EVAL", "return 1", 2, "a")]),
    ("numkeys-negative", [("EVAL", "return 1", -1)]),
    ("numkeys-not-a-number", [("EVAL", "return 1", "x")]),
    ("writes-then-errors", [("EVAL", "redis.call('SET', 'w', '1') error('late')",
                             0), ("GET", "w")]),
    # ---- the redis table -------------------------------------------------
    ("sha1hex", [("EVAL", "return redis.sha1hex('abc')", 0)]),
    ("sha1hex-empty", [("EVAL", "return redis.sha1hex('')", 0)]),
    ("version", [("EVAL", "return {redis.REDIS_VERSION, redis.REDIS_VERSION_NUM}",
                  0)]),
    ("log-constants", [("EVAL", "return {redis.LOG_DEBUG, redis.LOG_VERBOSE, "
                                "redis.LOG_NOTICE, redis.LOG_WARNING}", 0)]),
    ("repl-constants", [("EVAL", "return {redis.REPL_NONE, redis.REPL_AOF, "
                                 "redis.REPL_REPLICA, redis.REPL_SLAVE, "
                                 "redis.REPL_ALL}", 0)]),
    ("replicate-commands", [("EVAL", "return redis.replicate_commands()", 0)]),
    ("log-ok", [("EVAL", "redis.log(redis.LOG_DEBUG, 'from a test') return 1",
                 0)]),
    ("log-bad-level", [("EVAL", "redis.log(9, 'x')", 0)]),
    ("log-one-argument", [("EVAL", "redis.log(1)", 0)]),
    ("set-repl-bad", [("EVAL", "redis.set_repl(99)", 0)]),
    ("acl-check", [("EVAL", "return redis.acl_check_cmd('GET', 'k')", 0)]),
    ("acl-check-unknown", [("EVAL", "return redis.acl_check_cmd('nope')", 0)]),
    ("time", [("EVAL", "return #redis.call('TIME')", 0)]),
    ("cjson", [("EVAL", "return cjson.encode({1, 2, 3})", 0)]),
    ("cjson-decode", [("EVAL", "return cjson.decode('[1,\"a\"]')[2]", 0)]),
    ("bit", [("EVAL", "return bit.band(12, 10)", 0)]),
    ("tonumber", [("EVAL", "return tonumber(ARGV[1]) + 1", 0, "41")]),
    ("string-lib", [("EVAL", "return string.format('%05d', 42)", 0)]),
    ("table-concat", [("EVAL", "return table.concat({'a', 'b'}, '-')", 0)]),
    ("loadstring", [("EVAL", "return loadstring('return 1 + 1')()", 0)]),
    # ---- the sandbox -----------------------------------------------------
    ("global-write", [("EVAL", "x = 1", 0)]),
    ("global-read", [("EVAL", "return undefined_thing", 0)]),
    ("redis-nil", [("EVAL", "redis = nil", 0)]),
    ("redis-call-nil", [("EVAL", "redis.call = nil", 0)]),
    ("string-field", [("EVAL", "string.x = 1", 0)]),
    ("local-is-fine", [("EVAL", "local x = 5 return x", 0)]),
    ("print-hidden", [("EVAL", "print('x')", 0)]),
    ("os-hidden", [("EVAL", "return os.time()", 0)]),
    ("io-hidden", [("EVAL", "return io.write('x')", 0)]),
    ("debug-hidden", [("EVAL", "return debug.getinfo(1)", 0)]),
    ("require-hidden", [("EVAL", "return require('x')", 0)]),
    ("dofile-hidden", [("EVAL", "return dofile('/etc/passwd')", 0)]),
    ("setfenv-hidden", [("EVAL", "return setfenv(1, {})", 0)]),
    ("global-function", [("EVAL", "function f() return 1 end return f()", 0)]),
    # ---- the cache -------------------------------------------------------
    ("load-then-evalsha", [("SCRIPT", "LOAD", "return 'loaded'"),
                           ("EVALSHA", sha1("return 'loaded'"), 0),
                           ("EVALSHA", sha1("return 'loaded'").upper(), 0)]),
    ("evalsha-missing", [("EVALSHA", "0" * 40, 0)]),
    ("evalsha-short", [("EVALSHA", "abc", 0)]),
    ("eval-then-evalsha", [("EVAL", "return 'e'", 0),
                           ("EVALSHA", sha1("return 'e'"), 0)]),
    ("exists", [("SCRIPT", "LOAD", "return 'x1'"),
                ("SCRIPT", "EXISTS", sha1("return 'x1'"), "0" * 40, "zz")]),
    ("load-compile-error", [("SCRIPT", "LOAD", "return +")]),
    ("flush-bad-option", [("SCRIPT", "FLUSH", "LATER")]),
    ("kill-none", [("SCRIPT", "KILL")]),
    # ---- the shebang ------------------------------------------------------
    ("shebang", [("EVAL", "#!lua\nreturn 1", 0)]),
    ("shebang-flags", [("EVAL", "#!lua flags=no-writes,allow-oom\nreturn 2", 0)]),
    ("shebang-no-writes-writes", [("EVAL", "#!lua flags=no-writes\n"
                                           "return redis.call('SET', 'k', 'v')", 0)]),
    ("shebang-bad-engine", [("EVAL", "#!python\nreturn 1", 0)]),
    ("shebang-bad-flag", [("EVAL", "#!lua flags=fast\nreturn 1", 0)]),
    ("shebang-bad-option", [("EVAL", "#!lua name=x\nreturn 1", 0)]),
    ("shebang-no-newline", [("EVAL", "#!lua", 0)]),
    ("shebang-error-line", [("EVAL", "#!lua\nerror('two')", 0)]),
    ("eval-ro-read", [("SET", "k", "v"),
                      ("EVAL_RO", "return redis.call('GET', KEYS[1])", 1, "k")]),
    ("eval-ro-write", [("EVAL_RO", "return redis.call('SET', KEYS[1], 'v')", 1,
                        "k")]),
    ("eval-ro-shebang-write", [("EVAL_RO", "#!lua\nreturn 1", 0)]),
    ("evalsha-ro", [("SCRIPT", "LOAD", "return 'ro'"),
                    ("EVALSHA_RO", sha1("return 'ro'"), 0)]),
    # ---- the seed patterns -------------------------------------------------
    ("fixed-window", [("EVAL", "local n = redis.call('INCR', KEYS[1]) "
                               "if n == 1 then redis.call('EXPIRE', KEYS[1], 60) end "
                               "if n > 2 then return redis.error_reply('LIMIT') end "
                               "return n", 1, "fw")] * 3 + [("TTL", "fw")]),
    ("set-nx-ex", [("EVAL", "if redis.call('SET', KEYS[1], 1, 'NX', 'EX', 60) then "
                            "return 1 end return redis.call('INCR', KEYS[1])",
                    1, "nx")] * 3),
]


def run_case(port, cmds, proto):
    conn = RawConn(port=port)
    try:
        conn.command("FLUSHALL")
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


def test_script_flush_forgets_and_exists_says_so(server):
    c = server.raw()
    sha = c.command("SCRIPT", "LOAD", "return 7")[5:-2].decode()
    assert c.command("EVALSHA", sha, 0) == b":7\r\n"
    assert c.command("SCRIPT", "FLUSH") == b"+OK\r\n"
    assert c.command("SCRIPT", "EXISTS", sha) == b"*1\r\n:0\r\n"
    assert c.command("EVALSHA", sha, 0) == \
        b"-NOSCRIPT No matching script. Please use EVAL.\r\n"
    assert c.command("SCRIPT", "FLUSH", "ASYNC") == b"+OK\r\n"


def test_eval_only_scripts_are_forgotten_beyond_500_loaded_ones_never(server):
    c = server.raw()
    loaded = c.command("SCRIPT", "LOAD", "return 'kept'")[5:-2].decode()
    first = sha1("return 0")
    for i in range(501):
        assert c.command("EVAL", "return %d" % i, 0) == b":%d\r\n" % i
    assert c.command("SCRIPT", "EXISTS", first, sha1("return 500"), loaded) == \
        b"*3\r\n:0\r\n:1\r\n:1\r\n"
    assert int(server.info("memory")["number_of_cached_scripts"]) == 501


@pytest.mark.allocator
def test_the_lua_heap_is_bounded_and_apart_from_maxmemory(start_daemon):
    d = start_daemon("--lua-memory-limit", "2mb", "--maxmemory", "10mb")
    c = d.raw()
    before = int(d.info("memory")["used_memory_lua"])
    got = c.command("EVAL", "local t = {} for i = 1, 1e7 do t[i] = i end "
                            "return #t", 0)
    assert got.startswith(b"-ERR") and b"not enough memory" in got, got
    # The state is still usable, and the memory was given back.
    assert c.command("EVAL", "return 1", 0) == b":1\r\n"
    c.command("EVAL", "collectgarbage() return 1", 0)
    assert int(d.info("memory")["used_memory_lua"]) < before + 512 * 1024
    # A big table within the limit does not count toward maxmemory.
    used = int(d.info("memory")["used_memory"])
    assert c.command("EVAL", "local t = {} for i = 1, 50000 do t[i] = i end "
                             "return #t", 0) == b":50000\r\n"
    assert int(d.info("memory")["used_memory"]) < used + 256 * 1024


@pytest.mark.allocator
def test_a_script_out_of_lua_memory_does_not_kill_the_server_nor_the_next(start_daemon):
    """fuzz_script: the garbage of a script that ran out of memory left the
    heap at the limit, and the next EVAL's KEYS table (made outside any
    protected call) raised a Lua panic: the process exited."""
    d = start_daemon("--lua-memory-limit", "2mb")
    c = d.raw()
    loaded = c.command("SCRIPT", "LOAD", "return #KEYS")[5:-2].decode()
    fill = "local t = {} for i = 1, 1e7 do t[i] = {} end return #t"
    for _ in range(3):
        got = c.command("EVAL", fill, 0)
        assert got.startswith(b"-ERR") and b"not enough memory" in got, got
    assert c.command("EVALSHA", loaded, 3, "a" * 100000, "b" * 100000, "c") == b":3\r\n"
    assert c.command("EVAL", "return 1", 0) == b":1\r\n"
    assert int(d.info("memory")["used_memory_lua"]) < 1024 * 1024


def test_an_error_table_whose_index_raises_does_not_kill_the_server(server):
    """fuzz_script: reading the error table's fields ran its __index outside
    any protected call: a Lua panic ended the process (redis-server 7.0.15
    dies the same way). cellgate reads them raw."""
    c = server.raw()
    meta = "{__index=function() error('meta') end}"
    got = c.command("EVAL", "error(setmetatable({err='E x'}, %s))" % meta, 0)
    assert got.startswith(b"-E x script: "), got
    got = c.command("EVAL", "error(setmetatable({}, %s))" % meta, 0)
    assert got.startswith(b"-"), got
    assert c.command("PING") == b"+PONG\r\n"


def kill9(d):
    d.proc.kill()
    d.proc.wait(10)
    d.stopped = True


def test_a_scripts_writes_are_one_journal_group_replayed_after_kill_9(
        start_daemon, tmp_path):
    work = str(tmp_path / "data")
    os.makedirs(work)
    d = start_daemon("--dir", work, "--appendonly", "yes", "--appendfsync", "always")
    c = d.raw()
    body = ("redis.call('SET', KEYS[1], ARGV[1]) redis.call('INCR', KEYS[2]) "
            "redis.call('RPUSH', KEYS[3], 'a', 'b') return 1")
    for i in range(20):
        assert c.command("EVAL", body, 3, "s", "n", "l", str(i)) == b":1\r\n"
    want = (c.command("GET", "s"), c.command("GET", "n"),
            c.command("LRANGE", "l", 0, -1))
    kill9(d)
    d2 = start_daemon("--dir", work, "--appendonly", "yes")
    c2 = d2.raw()
    assert (c2.command("GET", "s"), c2.command("GET", "n"),
            c2.command("LRANGE", "l", 0, -1)) == want
    assert want[1] == b"$2\r\n20\r\n"


def test_a_replica_gets_a_scripts_effects(start_daemon):
    p = start_daemon()
    r = start_daemon("--replicaof", "127.0.0.1", str(p.port))
    assert harness.wait_until(
        lambda: r.info("replication").get("master_link_status") == "up", 20)
    c = p.raw()
    assert c.command("EVAL", "redis.call('SET', 'a', 1) redis.call('INCRBY', "
                             "'a', 41) redis.call('ZADD', 'z', 1, 'm') "
                             "return redis.call('GET', 'a')", 0) == b"$2\r\n42\r\n"
    assert c.command("WAIT", 1, 5000) == b":1\r\n"
    rc = r.raw()
    assert rc.command("GET", "a") == b"$2\r\n42\r\n"
    assert rc.command("ZSCORE", "z", "m") == b"$1\r\n1\r\n"
    # A replica refuses a script's write as Redis does.
    assert rc.command("EVAL", "return redis.call('SET', 'b', 1)", 0).startswith(
        b"-READONLY You can't write against a read only replica.")
    assert rc.command("EVAL", "return redis.call('GET', 'a')", 0) == b"$2\r\n42\r\n"


def test_watch_sees_a_scripts_write(server):
    a, b = server.raw(), server.raw()
    assert a.command("WATCH", "k") == b"+OK\r\n"
    assert b.command("EVAL", "return redis.call('SET', 'k', 'v')", 0) == b"+OK\r\n"
    assert a.command("MULTI") == b"+OK\r\n"
    assert a.command("PING") == b"+QUEUED\r\n"
    assert a.command("EXEC") == b"*-1\r\n"


def test_eval_inside_multi(server):
    c = server.raw()
    assert c.command("MULTI") == b"+OK\r\n"
    assert c.command("EVAL", "return redis.call('INCR', 'm')", 0) == b"+QUEUED\r\n"
    assert c.command("EVAL", "return redis.call('INCR', 'm')", 0) == b"+QUEUED\r\n"
    assert c.command("EXEC") == b"*2\r\n:1\r\n:2\r\n"


def test_commandstats_count_the_script_and_its_commands(server):
    c = server.raw()
    c.command("CONFIG", "RESETSTAT")
    for _ in range(3):
        c.command("EVAL", "redis.call('INCR', 'x') return redis.call('GET', 'x')", 0)
    stats = server.info("commandstats")
    assert stats["cmdstat_eval"]["calls"] == 3
    assert stats["cmdstat_incr"]["calls"] == 3
    assert stats["cmdstat_get"]["calls"] == 3


def test_select_inside_a_script_is_the_scripts_own(server):
    c = server.raw()
    assert c.command("EVAL", "redis.call('SELECT', 5) redis.call('SET', 'k', "
                             "'in5') return 1", 0) == b":1\r\n"
    assert c.command("GET", "k") == b"$-1\r\n"
    assert c.command("SELECT", 5) == b"+OK\r\n"
    assert c.command("GET", "k") == b"$3\r\nin5\r\n"


def test_monitor_shows_the_eval_then_its_commands(server):
    m = server.raw()
    assert m.command("MONITOR") == b"+OK\r\n"
    c = server.raw()
    assert c.command("EVAL", "return redis.call('SET', 'mk', 'v')", 0) == b"+OK\r\n"
    first = m.recv_until(b"\r\n")
    second = m.recv_until(b"\r\n")
    assert b'"EVAL"' in first, first
    assert b"[0 lua]" in second and b'"SET" "mk" "v"' in second, second


# ---- a script that runs too long ------------------------------------------

LOOP = "local i = 0 while true do i = i + 1 end"
WRITE_THEN_LOOP = "redis.call('SET', 'w', 'v') " + LOOP


def start_long_script(port, body):
    """A client running body (it never returns by itself); returns it once
    other clients are answered -BUSY (within a bounded wait)."""
    runner = RawConn(port=port, timeout=30)
    runner.send(harness.resp_command("EVAL", body, 0))
    probe = RawConn(port=port, timeout=10)
    try:
        assert harness.wait_until(
            lambda: probe.command("PING").startswith(b"-BUSY"), 20, 0.05), \
            "no -BUSY within 20 s"
    finally:
        probe.close()
    return runner


def busy_session(port):
    """What each client sees around a long script killed with SCRIPT KILL,
    and around one that wrote and cannot be."""
    conn = RawConn(port=port)
    assert conn.command("CONFIG", "SET", "busy-reply-threshold", "100") == b"+OK\r\n"
    conn.close()
    seen = []
    runner = start_long_script(port, LOOP)
    other = RawConn(port=port, timeout=10)     # connected during the script
    for cmd in (("PING",), ("GET", "k"), ("SET", "k", "v"), ("SHUTDOWN",),
                ("SCRIPT", "FLUSH"), ("EVAL", "return 1", 0)):
        seen.append(other.command(*cmd))
    seen.append(other.command("SCRIPT", "KILL"))
    seen.append(runner.reply_bytes())
    seen.append(other.command("PING"))
    seen.append(other.command("SCRIPT", "KILL"))
    runner.close()
    runner = start_long_script(port, WRITE_THEN_LOOP)
    seen.append(other.command("SCRIPT", "KILL"))
    other.close()
    return seen, runner


@pytest.mark.parametrize("which", ["redis-server", "cellgate"])
def test_a_long_script_makes_others_busy_until_killed_as_redis(
        which, start_daemon, tmp_path):
    if which == "redis-server":
        server = harness.RedisServer(str(tmp_path / "redis"))
        server.start()
    else:
        server = start_daemon()
    try:
        seen, runner = busy_session(server.port)
        busy = (b"-BUSY Redis is busy running a script. You can only call "
                b"SCRIPT KILL or SHUTDOWN NOSAVE.\r\n")
        sha = sha1(LOOP).encode()
        assert seen == [busy] * 6 + [
            b"+OK\r\n",
            b"-ERR Script killed by user with SCRIPT KILL... script: " + sha +
            b", on @user_script:1.\r\n",
            b"+PONG\r\n",
            b"-NOTBUSY No scripts in execution right now.\r\n",
            b"-UNKILLABLE Sorry the script already executed write commands "
            b"against the dataset. You can either wait the script termination "
            b"or kill the server in a hard way using the SHUTDOWN NOSAVE "
            b"command.\r\n"]
        # SHUTDOWN NOSAVE still works: the server stops.
        stopper = RawConn(port=server.port, timeout=10)
        stopper.send(harness.resp_command("SHUTDOWN", "NOSAVE"))
        assert server.proc.wait(20) == 0
        runner.close()
        stopper.close()
    finally:
        if which == "redis-server":
            server.stop()
        else:
            server.stopped = True


def test_allow_busy_commands_are_answered_once_the_script_ends(start_daemon):
    """cellgate's one difference: AUTH, HELLO, MULTI, WATCH... (Redis's
    allow-busy commands besides SCRIPT KILL and SHUTDOWN) wait for the
    script instead of being answered during it; order is kept."""
    d = start_daemon("--busy-reply-threshold", "100")
    runner = start_long_script(d.port, LOOP)
    c = RawConn(port=d.port, timeout=10)
    c.send(harness.resp_command("MULTI") + harness.resp_command("PING"))
    killer = RawConn(port=d.port, timeout=10)
    assert killer.command("SCRIPT", "KILL") == b"+OK\r\n"
    assert runner.reply_bytes().startswith(b"-ERR Script killed by user")
    assert c.reply_bytes() == b"+OK\r\n"
    assert c.reply_bytes() == b"+QUEUED\r\n"
    assert c.command("EXEC") == b"*1\r\n+PONG\r\n"
    for x in (runner, c, killer):
        x.close()
    assert d.info("stats")["total_error_replies"] >= 1
    assert "errorstat_BUSY" in d.info("errorstats")


def test_set_repl_sends_each_effect_where_the_script_says(start_daemon, tmp_path):
    """redis.set_repl(): REPL_AOF effects reach only the journal, REPL_REPLICA
    only the replicas, REPL_NONE neither, REPL_ALL both; the script's group
    reaches each with its own effects only."""
    work = str(tmp_path / "primary")
    os.makedirs(work)
    p = start_daemon("--dir", work, "--appendonly", "yes", "--appendfsync", "always")
    r = start_daemon("--replicaof", "127.0.0.1", str(p.port))
    assert harness.wait_until(
        lambda: r.info("replication").get("master_link_status") == "up", 20)
    c = p.raw()
    body = ("redis.call('SET', 'all1', 1) "
            "redis.set_repl(redis.REPL_AOF) redis.call('SET', 'aof', 1) "
            "redis.call('INCR', 'all1') "
            "redis.set_repl(redis.REPL_REPLICA) redis.call('SET', 'replica', 1) "
            "redis.set_repl(redis.REPL_NONE) redis.call('SET', 'none', 1) "
            "redis.set_repl(redis.REPL_ALL) redis.call('SET', 'all2', 1) "
            "redis.call('RPUSH', 'list', 'x') return 1")
    assert c.command("EVAL", body, 0) == b":1\r\n"
    # The next script replicates everything again.
    assert c.command("EVAL", "return redis.call('SET', 'after', 1)", 0) == b"+OK\r\n"
    assert c.command("WAIT", 1, 5000) == b":1\r\n"
    names = ["all1", "aof", "replica", "none", "all2", "list", "after"]

    def present(conn):
        return {n for n in names if conn.command("EXISTS", n) == b":1\r\n"}

    rc = r.raw()
    assert present(rc) == {"all1", "replica", "all2", "list", "after"}
    # all1 was written under ALL and then changed under AOF: the replica
    # keeps the first value.
    assert rc.command("GET", "all1") == b"$1\r\n1\r\n"
    kill9(p)
    p2 = start_daemon("--dir", work, "--appendonly", "yes")
    c2 = p2.raw()
    assert present(c2) == {"all1", "aof", "all2", "list", "after"}
    assert c2.command("GET", "all1") == b"$1\r\n2\r\n"
