"""Scripts in the server's states, against Debian's redis-server 7.0.15
byte for byte: on a read-only replica, under CLIENT PAUSE WRITE, past
maxmemory, without enough replicas (min-replicas-to-write); the commands
a script may not call; INFO commandstats / errorstats, SLOWLOG, MONITOR
and WAIT around scripts. Then what only cellgate has: its limiters inside
a script (atomic with a ZADD, one group on a replica and in the journal),
and the cluster checks of a static cluster, asserted with Redis 7.0.15's
texts (script.c's scriptVerifyClusterState, scriptPrepareForRun).

Left out, as it differs (see /work/notes/script-state-mismatches.md): the
counts of a #!lua script refused by the server's state (Redis counts
rejected_calls, cellgate failed_calls)."""
import hashlib
import os
import re
import time

import pytest

import harness
from harness import RawConn, resp_command


def sha1(body):
    return hashlib.sha1(body.encode()).hexdigest()


W = "return redis.call('SET', KEYS[1], 'v')"
R = "return redis.call('GET', KEYS[1])"
SW = "#!lua\nreturn redis.call('SET', KEYS[1], 'v')"
SR = "#!lua flags=no-writes\nreturn redis.call('GET', KEYS[1])"
SNW = "#!lua flags=no-writes\nreturn redis.call('SET', KEYS[1], 'v')"
SE = "#!lua\nreturn 1"
SOR = "#!lua flags=allow-oom\nreturn redis.call('GET', KEYS[1])"
SO = "#!lua flags=allow-oom\nreturn redis.call('SET', KEYS[1], 'v')"
PING = "return redis.call('PING')"
INCR = "return redis.call('INCR', KEYS[1])"
READ_THEN_DEL = "redis.call('GET', KEYS[1]) return redis.call('DEL', KEYS[1])"
PUB_NW = "#!lua flags=no-writes\nreturn redis.call('PUBLISH', 'ch', 'm')"
PUB_RO = "return redis.call('PUBLISH', 'ch', 'm')"


def state_session(port, bodies):
    """Each body loaded, then run by EVAL, EVAL_RO, EVALSHA and EVALSHA_RO
    on key k; then GET k and a plain SET. Every reply, in order."""
    c = RawConn(port=port)
    try:
        out = [c.command("SCRIPT", "LOAD", b) for b in bodies]
        for b in bodies:
            for cmd in ("EVAL", "EVAL_RO"):
                out.append((cmd, b, c.command(cmd, b, 1, "k")))
            for cmd in ("EVALSHA", "EVALSHA_RO"):
                out.append((cmd, b, c.command(cmd, sha1(b), 1, "k")))
        out.append(c.command("GET", "k"))
        out.append(c.command("SET", "k2", "x"))
        return out
    finally:
        c.close()


def redis_and_cellgate(start_daemon, tmp_path, args, name="ref"):
    ref = harness.RedisServer(str(tmp_path / name), extra_args=args).start()
    return ref, start_daemon(*args)


def assert_same(ref_port, cg_port, session, *a):
    want = session(ref_port, *a)
    got = session(cg_port, *a)
    assert got == want


# ---- a read-only replica ---------------------------------------------------

def replica_of(start_daemon, tmp_path, ref, cg):
    rr = harness.RedisServer(str(tmp_path / "ref-replica"),
                             extra_args=["--replicaof", "127.0.0.1", ref.port]).start()
    cr = start_daemon("--replicaof", "127.0.0.1", cg.port)
    for p in (ref.port, cg.port):
        assert RawConn(port=p).command("SET", "k", "primary") == b"+OK\r\n"
    for s in (rr, cr):
        assert harness.wait_until(
            lambda: RawConn(port=s.port).command("GET", "k") == b"$7\r\nprimary\r\n",
            30), "the replica did not sync"
    return rr, cr


def test_scripts_on_a_read_only_replica_as_redis(start_daemon, tmp_path):
    ref, cg = redis_and_cellgate(start_daemon, tmp_path, [])
    rr = None
    try:
        rr, cr = replica_of(start_daemon, tmp_path, ref, cg)
        bodies = [W, R, SW, SR, SNW, SE, SOR, PING, INCR, READ_THEN_DEL]
        want = state_session(rr.port, bodies)
        got = state_session(cr.port, bodies)
        assert got == want
        # What the replica answers, as Redis words it.
        ro = b"-READONLY You can't write against a read only replica."
        by = {(x[0], x[1]): x[2] for x in got if isinstance(x, tuple)}
        assert by[("EVAL", W)].startswith(ro + b" script: ")
        assert by[("EVAL", SW)] == ro + b"\r\n"
        assert by[("EVAL_RO", SW)] == ro + b"\r\n"
        assert by[("EVALSHA", SR)] == b"$7\r\nprimary\r\n"
        assert by[("EVAL_RO", R)] == b"$7\r\nprimary\r\n"
    finally:
        if rr is not None:
            rr.stop()
        ref.stop()


# ---- CLIENT PAUSE WRITE ------------------------------------------------------

PAUSE_CASES = [
    ("EVAL", R), ("EVAL", W), ("EVAL_RO", R), ("EVAL_RO", W), ("EVAL", SW),
    ("EVAL", SR), ("EVAL_RO", SR), ("EVAL", SNW), ("EVAL", PUB_NW),
    ("EVAL_RO", PUB_RO), ("EVAL", "#!lua flags=allow-oom\nreturn 1"),
    ("EVAL_RO", SW), ("EVALSHA", R), ("EVALSHA", SR), ("EVALSHA_RO", R),
    ("EVALSHA", SW), ("EVALSHA", "f" * 40), ("PUBLISH", None),
]


def pause_session(port):
    """Under CLIENT PAUSE 2000 WRITE, each case on a connection of its own:
    whether it was answered within 0.8 s (ran) or only after (waited), and
    the reply."""
    c = RawConn(port=port)
    for cmd, b in PAUSE_CASES:
        if b is not None and len(b) != 40:
            c.command("SCRIPT", "LOAD", b)
    c.command("SET", "k", "old")
    assert c.command("CLIENT", "PAUSE", 2000, "WRITE") == b"+OK\r\n"
    conns = []
    for cmd, b in PAUSE_CASES:
        x = RawConn(port=port)
        if cmd == "PUBLISH":
            x.send(resp_command("PUBLISH", "ch", "m"))
        else:
            arg = sha1(b) if cmd.startswith("EVALSHA") and len(b) != 40 else b
            x.send(resp_command(cmd, arg, 1, "k"))
        conns.append(x)
    time.sleep(0.8)
    early = []
    for x in conns:
        try:
            early.append(x.reply_bytes(timeout=0.05))
        except TimeoutError:
            early.append(None)
    out = []
    for (cmd, b), x, e in zip(PAUSE_CASES, conns, early):
        if e is not None:
            out.append((cmd, b, "ran", e))
        else:
            out.append((cmd, b, "waited", x.reply_bytes(timeout=10)))
        x.close()
    c.close()
    return out


def test_client_pause_write_holds_scripts_that_may_write_as_redis(
        start_daemon, tmp_path):
    ref, cg = redis_and_cellgate(start_daemon, tmp_path, [])
    try:
        want = pause_session(ref.port)
        got = pause_session(cg.port)
        assert got == want
        seen = {(x[0], x[1]): x[2] for x in got}
        # Compat EVAL / EVALSHA (may replicate) and #!lua writers wait;
        # EVAL_RO and no-writes scripts run during the pause.
        assert seen[("EVAL", R)] == seen[("EVALSHA", R)] == "waited"
        assert seen[("EVAL", SW)] == seen[("EVAL_RO", SW)] == "waited"
        assert seen[("EVAL_RO", R)] == seen[("EVAL", SR)] == "ran"
        assert seen[("EVALSHA", SR)] == seen[("EVALSHA_RO", R)] == "ran"
        assert seen[("PUBLISH", None)] == "waited"
    finally:
        ref.stop()


# ---- maxmemory ---------------------------------------------------------------

@pytest.mark.allocator
def test_scripts_past_maxmemory_as_redis(start_daemon, tmp_path):
    """maxmemory 1 with noeviction: every server is past it from the start.
    A #!lua flags=allow-oom script writes all the same, and so does a
    script that began under maxmemory and passes it while it runs."""
    args = ["--maxmemory", "1", "--maxmemory-policy", "noeviction"]
    ref, cg = redis_and_cellgate(start_daemon, tmp_path, args)
    try:
        bodies = [W, R, SW, SR, SNW, SE, SOR, PING, INCR, READ_THEN_DEL]
        got = state_session(cg.port, bodies)
        assert got == state_session(ref.port, bodies)
        by = {(x[0], x[1]): x[2] for x in got if isinstance(x, tuple)}
        oom = b"-OOM command not allowed when used memory > 'maxmemory'."
        # The first write fails inside a compat script; processCommand's
        # -OOM refuses a #!lua script that may write, before it runs.
        assert by[("EVAL", W)] == oom + b" script: " + sha1(W).encode() + \
            b", on @user_script:1.\r\n"
        assert by[("EVAL", SW)] == by[("EVALSHA", SE)] == oom + b"\r\n"
        assert by[("EVAL", SR)] == by[("EVAL", SOR)] == b"$-1\r\n"
        allow = "#!lua flags=allow-oom\nredis.call('SET', KEYS[1], 'v') " \
                "return redis.call('RPUSH', KEYS[1] .. 'l', 'a', 'b')"
        for port in (ref.port, cg.port):
            c = RawConn(port=port)
            got = [c.command("EVAL", allow, 1, "k"), c.command("GET", "k"),
                   c.command("LRANGE", "kl", 0, -1)]
            c.close()
            assert got == [b":2\r\n", b"$1\r\nv\r\n",
                           b"*2\r\n$1\r\na\r\n$1\r\nb\r\n"], (port, got)
    finally:
        ref.stop()


@pytest.mark.allocator
def test_a_script_that_began_under_maxmemory_finishes_its_writes(start_daemon):
    """Redis checks maxmemory before a command, never during one: a script
    that began under the ceiling writes all it means to, past it too."""
    d = start_daemon("--maxmemory", "3mb", "--maxmemory-policy", "noeviction")
    c = d.raw()
    used = int(d.info("memory")["used_memory"])
    assert used < 3 * 1024 * 1024
    body = ("for i = 1, 60000 do redis.call('RPUSH', KEYS[1], "
            "string.rep('x', 100) .. i) end return redis.call('LLEN', KEYS[1])")
    assert c.command("EVAL", body, 1, "big") == b":60000\r\n"
    assert int(d.info("memory")["used_memory"]) > 3 * 1024 * 1024
    # Now over it, a script that would write is refused before it writes.
    assert c.command("EVAL", "return redis.call('SET', 'k', 'v')", 0).startswith(
        b"-OOM command not allowed when used memory > 'maxmemory'.")
    assert c.command("EXISTS", "k") == b":0\r\n"


# ---- min-replicas-to-write -----------------------------------------------------

def test_scripts_without_enough_replicas_as_redis(start_daemon, tmp_path):
    ref, cg = redis_and_cellgate(start_daemon, tmp_path,
                                 ["--min-replicas-to-write", "1"])
    try:
        bodies = [W, R, SW, SR, SNW, SE, SO, SOR, PING, INCR, READ_THEN_DEL]
        got = state_session(cg.port, bodies)
        assert got == state_session(ref.port, bodies)
        by = {(x[0], x[1]): x[2] for x in got if isinstance(x, tuple)}
        nr = b"-NOREPLICAS Not enough good replicas to write."
        assert by[("EVAL", W)] == nr + b" script: " + sha1(W).encode() + \
            b", on @user_script:1.\r\n"
        assert by[("EVAL", SW)] == nr + b"\r\n"
        assert by[("EVAL", SR)] == b"$-1\r\n"
    finally:
        ref.stop()


# ---- commands a script may not call -------------------------------------------

def resp_parse(b, i=0):
    t = b[i:i + 1]
    j = b.index(b"\r\n", i)
    line = b[i + 1:j]
    i = j + 2
    if t in (b"+", b"-", b":"):
        return line, i
    if t == b"$":
        n = int(line)
        return (None, i) if n < 0 else (b[i:i + n], i + n + 2)
    n = int(line)
    out = []
    for _ in range(max(n, 0)):
        v, i = resp_parse(b, i)
        out.append(v)
    return out, i


def command_table(port):
    """name ("parent|sub" for subcommands) -> (arity, flags)."""
    c = RawConn(port=port)
    v, _ = resp_parse(c.command("COMMAND"))
    c.close()
    out = {}

    def walk(e):
        out[e[0].decode()] = (int(e[1]), [f.decode() for f in e[2]])
        for s in (e[9] if len(e) > 9 else []):
            walk(s)
    for e in v:
        walk(e)
    return out


def pcall_script(name, arity):
    parts = name.split("|")
    args = parts + ["x"] * (abs(arity) - len(parts))
    return "return redis.pcall(%s)" % ", ".join("'%s'" % a for a in args)


NOT_ALLOWED = b"-ERR This Redis command is not allowed from script\r\n"


def test_every_noscript_command_is_refused_in_a_script_as_redis(
        pair_servers):
    ref, cg = pair_servers
    ours = command_table(cg.port)
    theirs = command_table(ref.port)
    noscript = sorted(n for n, (_, f) in ours.items() if "noscript" in f)
    assert {"multi", "exec", "watch", "subscribe", "client|pause",
            "config|set", "script|load", "eval", "shutdown",
            "wait"} <= set(noscript)
    for name in noscript:
        lua = pcall_script(name, ours[name][0])
        got = RawConn(port=cg.port).command("EVAL", lua, 0)
        assert got == NOT_ALLOWED, (name, got)
        if name in theirs:
            assert RawConn(port=ref.port).command("EVAL", lua, 0) == got, name
    # Redis's noscript commands cellgate has all carry the flag here too.
    assert [n for n, (_, f) in theirs.items()
            if "noscript" in f and n in ours and n not in noscript] == []


@pytest.mark.parametrize("lua", [
    "return redis.pcall('CLIENT', 'nope')",
    "return redis.pcall('CONFIG', 'nope')",
    "return redis.pcall('SCRIPT', 'nope', 'x')",
    "return redis.pcall('CLIENT')",
    "return redis.pcall('CLIENT', 'ID', 'x')",
    "return redis.call('MULTI')",
    "return redis.call('WATCH', 'k')",
    "return redis.call('SUBSCRIBE', 'ch')",
    "return redis.call('PSYNC', '?', -1)",
])
def test_containers_and_refusals_in_a_script_as_redis(pair_servers, lua):
    ref, cg = pair_servers
    want = RawConn(port=ref.port).command("EVAL", lua, 0)
    assert RawConn(port=cg.port).command("EVAL", lua, 0) == want


@pytest.fixture(scope="module")
def pair_servers(redis_server, module_daemon):
    return redis_server, module_daemon


# ---- INFO commandstats, SLOWLOG, MONITOR ---------------------------------------

STATS_SEQ = [
    ("SET", "s", "x"),
    ("EVAL", "redis.call('INCR', 'n') return redis.call('GET', 'n')", 0),
    ("EVAL", "return redis.call('INCR', 's')", 0),
    ("EVAL", "return redis.pcall('INCR', 's')", 0),
    ("EVAL", "return redis.call('nope')", 0),
    ("EVAL", "return redis.call('GET')", 0),
    ("EVAL", "return redis.call('MULTI')", 0),
    ("EVAL", "return redis.pcall('CLIENT', 'nope')", 0),
    ("EVAL_RO", "return redis.call('SET', 'k', 'v')", 0),
    ("EVAL", PUB_NW, 0),
    ("EVAL", "error('boom')", 0),
    ("EVAL", "return redis.error_reply('MY code')", 0),
    ("EVAL", "return {err='X y'}", 0),
    ("EVAL", "return +", 0),
    ("EVAL", "return 1", "x"),
    ("EVALSHA", "0" * 40, 0),
    ("EVALSHA", "abc", 0),
    ("EVAL_RO", SE, 0),
    ("EVAL", "redis.call('SET', 'a', '1'); redis.call('ZADD', 'z', 1, 'm'); "
             "return redis.call('ZSCORE', 'z', 'm')", 0),
    ("EVAL", "return redis.call('HSET', 'h', 'f')", 0),
    ("EVAL", "return redis.pcall('SELECT', 99)", 0),
    ("EVAL", "redis.call('SELECT', 3) return redis.call('SET', 'in3', "
             "'\\n\"x\"')", 0),
]


def observe(port):
    """STATS_SEQ on a fresh count, watched by MONITOR: the replies, INFO
    commandstats (times masked), errorstats (as a set), total_error_replies,
    the SLOWLOG entries' arguments (oldest first, with the caller's own
    entries told apart from the script's) and the MONITOR lines (time and
    port masked)."""
    c = RawConn(port=port)
    c.command("FLUSHALL")
    c.command("CONFIG", "SET", "slowlog-log-slower-than", 0)
    c.command("CONFIG", "SET", "slowlog-max-len", 1000)
    m = RawConn(port=port)
    assert m.command("MONITOR") == b"+OK\r\n"
    c.command("CONFIG", "RESETSTAT")
    c.command("SLOWLOG", "RESET")
    replies = [c.command(*x) for x in STATS_SEQ]
    stats = c.command("INFO", "commandstats").decode()
    errs = c.command("INFO", "errorstats").decode()
    total = re.search(r"total_error_replies:(\d+)",
                      c.command("INFO", "stats").decode()).group(1)
    log, _ = resp_parse(c.command("SLOWLOG", "GET", 1000))
    c.command("CONFIG", "SET", "slowlog-log-slower-than", 10000)
    mon, _ = m.read_to_eof(timeout=0.5)
    c.close()
    m.close()
    stats = sorted(re.sub(r"usec=\d+,usec_per_call=[\d.]+,", "", line)
                   for line in stats.split("\r\n") if line.startswith("cmdstat_"))
    errs = [line for line in errs.split("\r\n") if line.startswith("errorstat_")]
    me = [e[4] for e in log if e[3][0] == b"SLOWLOG"][0]
    slow = [(e[3], e[4] == me, e[4] == b"?:0") for e in reversed(log)]
    mon = re.sub(rb"^\+\d+\.\d{6} \[(\d+) 127\.0\.0\.1:\d+\]", rb"+T [\1 client]",
                 mon, flags=re.M)
    mon = re.sub(rb"^\+\d+\.\d{6} \[(\d+) lua\]", rb"+T [\1 lua]", mon, flags=re.M)
    return replies, stats, errs, total, slow, mon


def test_commandstats_slowlog_and_monitor_around_scripts_as_redis(
        start_daemon, tmp_path):
    ref = harness.RedisServer(str(tmp_path / "ref")).start()
    try:
        want = observe(ref.port)
    finally:
        ref.stop()
    got = observe(start_daemon().port)
    assert got[0] == want[0]              # the replies
    assert got[1] == want[1]              # commandstats
    assert got[2] == want[2]              # errorstats, in Redis's order
    assert got[3] == want[3]              # total_error_replies
    assert got[4] == want[4]              # SLOWLOG: EVAL after its commands
    assert got[5] == want[5]              # MONITOR: EVAL, then [n lua] lines
    assert b'+T [0 client] "EVAL" "redis.call(\'INCR\', \'n\')' in got[5]
    assert b'+T [3 lua] "SET" "in3" "\\n\\"x\\""' in got[5]


# ---- WAIT ------------------------------------------------------------------------

def wait_session(primary_port):
    c = RawConn(port=primary_port)
    out = [c.command("EVAL", "redis.call('SET', 'w', 1) return "
                             "redis.call('INCR', 'w')", 0),
           c.command("WAIT", 1, 5000),
           c.command("EVAL", "return redis.call('GET', 'w')", 0),
           c.command("WAIT", 1, 5000),
           c.command("EVAL", "#!lua flags=no-writes\nreturn "
                             "redis.call('GET', 'w')", 0),
           c.command("WAIT", 1, 5000),
           c.command("EVAL", "return redis.call('WAIT', 1, 0)", 0),
           c.command("WAIT", 2, 100)]
    c.close()
    return out


def test_wait_after_a_script_counts_the_replica_as_redis(start_daemon,
                                                         tmp_path):
    ref, cg = redis_and_cellgate(start_daemon, tmp_path, [])
    rr = None
    try:
        rr, cr = replica_of(start_daemon, tmp_path, ref, cg)
        want = wait_session(ref.port)
        got = wait_session(cg.port)
        assert got == want
        assert got[1] == b":1\r\n"
        assert RawConn(port=cr.port).command("GET", "w") == b"$1\r\n2\r\n"
    finally:
        if rr is not None:
            rr.stop()
        ref.stop()


# ---- cellgate's limiters inside a script (cellgate only) ----------------------

LIMITED_ZADD = (
    "local r = redis.call('CL.THROTTLE', KEYS[1], 2, 60, 60) "
    "if r[1] == 0 then redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2]) end "
    "return {r[1], r[3], redis.call('ZCARD', KEYS[2])}")


def test_limiters_run_inside_a_script(server):
    c = server.raw()
    for i, want in enumerate([b"*3\r\n:0\r\n:2\r\n:1\r\n",
                              b"*3\r\n:0\r\n:1\r\n:2\r\n",
                              b"*3\r\n:0\r\n:0\r\n:3\r\n",
                              b"*3\r\n:1\r\n:0\r\n:3\r\n"]):
        assert c.command("EVAL", LIMITED_ZADD, 2, "t", "z", i, "m%d" % i) == want
    assert c.command("ZRANGE", "z", 0, -1) == \
        b"*3\r\n$2\r\nm0\r\n$2\r\nm1\r\n$2\r\nm2\r\n"
    # RL.FIXED, GCRA, RL.SLIDING and RL.LOG as a script sees them.
    got = c.command("EVAL", "return {redis.call('RL.FIXED', 'f', 1, 60)[1], "
                            "redis.call('RL.FIXED', 'f', 1, 60)[1], "
                            "redis.call('RL.SLIDING', 's', 5, 60)[1], "
                            "redis.call('RL.LOG', 'l', 5, 60)[1], "
                            "redis.call('GCRA', 'g', 0, 1, 60)[1], "
                            "redis.call('GCRA', 'g', 0, 1, 60)[1]}", 0)
    assert got == b"*6\r\n:0\r\n:1\r\n:0\r\n:0\r\n:0\r\n:1\r\n"
    # A limiter is a write: refused in a read-only script, and its errors
    # are Lua errors as any command's.
    assert c.command("EVAL_RO", "return redis.call('RL.FIXED', 'f', 1, 60)",
                     0) == (b"-ERR Write commands are not allowed from read-only "
                            b"scripts. script: " +
                            sha1("return redis.call('RL.FIXED', 'f', 1, 60)")
                            .encode() + b", on @user_script:1.\r\n")
    # A limiter's error reply is what it answers outside a script.
    got = c.command("EVAL", "return redis.pcall('CL.THROTTLE', 't', 'x', 1, 1)", 0)
    assert got == c.command("CL.THROTTLE", "t", "x", 1, 1)
    assert got.startswith(b"-Cell error: "), got
    stats = server.info("commandstats")
    assert stats["cmdstat_cl.throttle"]["calls"] >= 5
    assert stats["cmdstat_zadd"]["calls"] == 3


def kill9(d):
    d.proc.kill()
    d.proc.wait(10)
    d.stopped = True


def replication_stream(port):
    """A replica's view: PSYNC from scratch; a function that returns the
    commands streamed since (after the snapshot), each a list of bytes."""
    r = RawConn(port=port)
    assert r.command("REPLCONF", "listening-port", "1") == b"+OK\r\n"
    r.send(resp_command("PSYNC", "?", "-1"))
    assert r.recv_until(b"\r\n").startswith(b"+FULLRESYNC ")
    n = int(r.recv_until(b"\r\n")[1:-2])
    r.recv_exact(n)

    def since():
        data, _ = r.read_to_eof(timeout=1)
        out, i = [], 0
        while i < len(data):
            cmd, i = resp_parse(data, i)
            out.append(cmd)
        return [c for c in out if c[0] not in (b"PING", b"REPLCONF")]
    return since


def test_a_limiter_and_a_zadd_are_one_group_on_a_replica_and_in_the_journal(
        start_daemon, tmp_path):
    work = str(tmp_path / "data")
    os.makedirs(work)
    p = start_daemon("--dir", work, "--appendonly", "yes",
                     "--appendfsync", "always")
    r = start_daemon("--replicaof", "127.0.0.1", str(p.port))
    assert harness.wait_until(
        lambda: r.info("replication").get("master_link_status") == "up", 20)
    stream = replication_stream(p.port)
    c = p.raw()
    for i in range(4):
        c.command("EVAL", LIMITED_ZADD, 2, "t", "z", i, "m%d" % i)
    assert c.command("WAIT", 1, 5000) == b":1\r\n"   # the real replica
    # Each script's effects reach a replica as one frame: the three that
    # added a member carry the limiter's state and the sorted set's; the
    # denied fourth changed nothing and sends nothing.
    sent = stream()
    assert [x[0] for x in sent] == [b"CG.EFFECTS"] * 3, sent
    assert all(b"z" in x[1] and b"t" in x[1] for x in sent), sent
    rc = r.raw()
    want = (c.command("ZRANGE", "z", 0, -1),
            c.command("CL.THROTTLE", "t", 2, 60, 60, "PEEK")[:10])
    assert want[0] == b"*3\r\n$2\r\nm0\r\n$2\r\nm1\r\n$2\r\nm2\r\n"
    assert rc.command("ZRANGE", "z", 0, -1) == want[0]
    assert rc.command("CL.THROTTLE", "t", 2, 60, 60, "PEEK")[:10] == want[1]
    # And one group in the journal, replayed after kill -9.
    kill9(p)
    p2 = start_daemon("--dir", work, "--appendonly", "yes")
    c2 = p2.raw()
    assert c2.command("ZRANGE", "z", 0, -1) == want[0]
    assert c2.command("CL.THROTTLE", "t", 2, 60, 60, "PEEK")[:10] == want[1]


# ---- cluster (cellgate's static cluster; Redis 7.0.15's texts) ---------------

def cluster_node(start_daemon, tmp_path):
    """This node owns 0-8191; another (never started) owns the rest."""
    port, other = harness.free_port(), harness.free_port()
    conf = str(tmp_path / "cluster.conf")
    with open(conf, "w") as f:
        f.write("cluster-mode yes\nsave-interval 3600\n"
                "cluster-node %s 127.0.0.1:%d 0-8191\n"
                "cluster-node %s 127.0.0.1:%d 8192-16383\n"
                % ("a" * 40, port, "b" * 40, other))
    return start_daemon(config_file=conf, port=port), other


def keys_here_and_there():
    here, there = [], None
    i = 0
    while len(here) < 2 or there is None:
        k = "key:%d" % i
        s = harness.reference_slot(k)
        if s <= 8191 and all(harness.reference_slot(h) != s for h in here):
            here.append(k)
        elif s > 8191 and there is None:
            there = k
        i += 1
    return here, there


def script_error(body, text, line=1):
    return (b"-" + text + b" script: " + sha1(body).encode() +
            b", on @user_script:%d.\r\n" % line)


def test_cluster_keys_of_a_script_as_redis(start_daemon, tmp_path):
    d, other = cluster_node(start_daemon, tmp_path)
    (a, b), far = keys_here_and_there()
    c = d.raw()
    moved = b"-MOVED %d 127.0.0.1:%d\r\n" % (harness.reference_slot(far), other)
    # Declared keys route before the script runs, as a command's.
    assert c.command("EVAL", R, 1, far) == moved
    assert c.command("EVAL", R, 2, a, b) == \
        b"-CROSSSLOT Keys in request don't hash to the same slot\r\n"
    assert c.command("EVAL", "#!lua flags=no-cluster\nreturn 1", 0) == \
        b"-ERR Can not run script on cluster, 'no-cluster' flag is set.\r\n"
    # An undeclared key of another node's slot.
    body = "return redis.call('GET', '%s')" % far
    assert c.command("EVAL", body, 0) == script_error(
        body, b"ERR Script attempted to access a non local key in a cluster node")
    # A compat script may touch keys of several slots of this node; a #!lua
    # one may not unless allow-cross-slot-keys says so.
    body = "redis.call('SET', KEYS[1], 1) return redis.call('SET', '%s', 2)" % b
    assert c.command("EVAL", body, 1, a) == b"+OK\r\n"
    sbody = "#!lua\n" + body
    assert c.command("EVAL", sbody, 1, a) == script_error(
        sbody, b"ERR Script attempted to access keys that do not hash to the "
               b"same slot", 2)
    xbody = "#!lua flags=allow-cross-slot-keys\n" + body
    assert c.command("EVAL", xbody, 1, a) == b"+OK\r\n"
    # Without declared keys the first key the script touches sets its slot.
    nbody = ("#!lua\nredis.call('GET', '%s') return redis.call('GET', '%s')"
             % (a, b))
    assert c.command("EVAL", nbody, 0) == script_error(
        nbody, b"ERR Script attempted to access keys that do not hash to the "
               b"same slot", 2)
