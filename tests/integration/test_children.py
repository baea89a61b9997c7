"""Background children (server/child.c): at most one runs, and a second
request meets what Redis 7.0 answers (issue 26, item 3). Each pair is
played on cellgate and on Debian's redis-server 7.0 side by side, with the
running child held stopped (SIGSTOP) while the second request comes, so no
race decides what either server sees; the replies must be the same bytes.
Then the child is let go and what was scheduled must run."""
import glob
import os
import re
import signal

import pytest

import harness
from test_journal import fingerprint
from test_replication import caught_up, replicas_online

KEYS = 200
DELAY_US = 10000            # per key: a child lives ~2 s unless held


def fill(client, n=KEYS, redis_keys=False):
    p = client.pipeline(transaction=False)
    for i in range(n):
        if redis_keys:
            p.set("k%d" % i, "v")
        else:
            p.execute_command("CL.THROTTLE", "k%d" % i, 5, 1, 3600)
    p.execute()


def cellgate(start_daemon, *args, **kw):
    d = start_daemon("--save", "", "--rdb-key-save-delay", DELAY_US, *args, **kw)
    fill(d.client())
    return d


@pytest.fixture
def redis_ref(tmp_path):
    ref = harness.RedisServer(str(tmp_path / "redis")).start()
    c = ref.client()
    assert c.config_set("rdb-key-save-delay", DELAY_US)
    fill(c, redis_keys=True)
    yield ref
    ref.stop()


def children_of(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def hold_child(pid):
    """Wait for pid's background child and stop it; returns its pid."""
    found = harness.wait_until(lambda: children_of(pid), 10)
    assert found, "no child appeared"
    os.kill(found[0], signal.SIGSTOP)
    return found[0]


def release(child):
    try:
        os.kill(child, signal.SIGCONT)
    except ProcessLookupError:
        pass


def gone(pid):
    """pid no longer exists (reaped), or is a zombie of nobody we know."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def raw_both(cg, ref, *cmd):
    """The same command on both servers: the reply bytes must match."""
    mine = cg.command(*cmd)
    theirs = ref.command(*cmd)
    assert mine == theirs, (cmd, mine, theirs)
    return mine


def info_fields(info, names):
    return {n: info[n] for n in names}


def ref_raw(ref):
    return harness.RawConn(port=ref.port)


def idle(d_info):
    return d_info["rdb_bgsave_in_progress"] == 0 and \
        d_info["aof_rewrite_in_progress"] == 0 and d_info["aof_rewrite_scheduled"] == 0


def log_order(d, first, then):
    text = d.log()
    a, b = text.find(first), text.find(then)
    return a != -1 and b != -1 and a < b


def settled(d, forks):
    """Every child started and ended: total_forks reached, none runs or
    waits."""
    return harness.wait_until(
        lambda: d.info("stats")["total_forks"] == forks and idle(d.info("persistence")), 20)


def test_bgsave_while_a_rewrite_runs_is_refused_or_scheduled(start_daemon, redis_ref):
    d = cellgate(start_daemon)
    cg, ref = d.raw(), ref_raw(redis_ref)
    raw_both(cg, ref, "BGREWRITEAOF")
    held = [hold_child(d.proc.pid), hold_child(redis_ref.proc.pid)]
    try:
        assert raw_both(cg, ref, "BGSAVE") == (
            b"-ERR Another child process is active (AOF?): can't BGSAVE right now. "
            b"Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.\r\n")
        assert raw_both(cg, ref, "BGSAVE", "SCHEDULE") == b"+Background saving scheduled\r\n"
        assert raw_both(cg, ref, "BGSAVE", "SCHEDULE") == b"+Background saving scheduled\r\n"
        assert raw_both(cg, ref, "BGREWRITEAOF") == \
            b"-ERR Background append only file rewriting already in progress\r\n"
        assert raw_both(cg, ref, "BGSAVE", "NOW") == b"-ERR syntax error\r\n"
        names = ["rdb_bgsave_in_progress", "aof_rewrite_in_progress",
                 "aof_rewrite_scheduled", "rdb_last_bgsave_status"]
        mine = info_fields(d.info("persistence"), names)
        assert mine == info_fields(redis_ref.client().info("persistence"), names)
        assert mine["aof_rewrite_in_progress"] == 1 and mine["rdb_bgsave_in_progress"] == 0
    finally:
        for c in held:
            release(c)
    # The rewrite ends, then the scheduled BGSAVE runs: two forks.
    assert settled(d, 2)
    info = d.info("persistence")
    assert info["rdb_last_bgsave_status"] == "ok" and info["aof_last_bgrewrite_status"] == "ok"
    assert info["rdb_saves"] == 1 and info["aof_rewrites"] == 1
    assert log_order(d, "Background AOF rewrite finished successfully",
                     "Background saving started by pid")
    assert os.path.exists(os.path.join(d.workdir, "cellgate.snap"))


def test_bgrewriteaof_while_a_bgsave_runs_is_scheduled(start_daemon, redis_ref):
    d = cellgate(start_daemon)
    cg, ref = d.raw(), ref_raw(redis_ref)
    assert raw_both(cg, ref, "BGSAVE") == b"+Background saving started\r\n"
    held = [hold_child(d.proc.pid), hold_child(redis_ref.proc.pid)]
    try:
        assert raw_both(cg, ref, "BGREWRITEAOF") == \
            b"+Background append only file rewriting scheduled\r\n"
        for cmd in (("BGSAVE",), ("BGSAVE", "SCHEDULE"), ("SAVE",)):
            assert raw_both(cg, ref, *cmd) == b"-ERR Background save already in progress\r\n"
        names = ["rdb_bgsave_in_progress", "aof_rewrite_in_progress",
                 "aof_rewrite_scheduled", "rdb_current_bgsave_time_sec"]
        mine = info_fields(d.info("persistence"), names)
        theirs = info_fields(redis_ref.client().info("persistence"), names)
        assert mine["rdb_bgsave_in_progress"] == theirs["rdb_bgsave_in_progress"] == 1
        assert mine["aof_rewrite_scheduled"] == theirs["aof_rewrite_scheduled"] == 1
        assert mine["aof_rewrite_in_progress"] == theirs["aof_rewrite_in_progress"] == 0
        assert mine["rdb_current_bgsave_time_sec"] >= 0
    finally:
        for c in held:
            release(c)
    assert settled(d, 2)
    info = d.info("persistence")
    assert info["aof_rewrites"] == 1 and info["rdb_last_bgsave_status"] == "ok"
    assert info["rdb_last_bgsave_time_sec"] >= 0
    assert log_order(d, "Background saving terminated with success",
                     "Background append only file rewriting started by pid")
    assert glob.glob(os.path.join(d.workdir, "appendonlydir", "*.base.snap"))


def test_inside_exec_both_are_scheduled_then_run(start_daemon, redis_ref):
    d = cellgate(start_daemon)
    cg, ref = d.raw(), ref_raw(redis_ref)
    raw_both(cg, ref, "MULTI")
    raw_both(cg, ref, "BGSAVE")
    raw_both(cg, ref, "BGREWRITEAOF")
    assert raw_both(cg, ref, "EXEC") == (
        b"*2\r\n+Background saving scheduled\r\n"
        b"+Background append only file rewriting scheduled\r\n")
    # The rewrite first, then the BGSAVE, as Redis's cron starts them.
    assert settled(d, 2)
    assert log_order(d, "Background AOF rewrite finished successfully",
                     "Background saving started by pid")
    assert d.info("persistence")["rdb_saves"] == 1


def test_info_reports_the_running_child_as_redis_does(start_daemon, redis_ref):
    d = cellgate(start_daemon)
    names = ["current_cow_peak", "current_cow_size", "current_cow_size_age",
             "current_fork_perc", "current_save_keys_processed",
             "current_save_keys_total", "rdb_bgsave_in_progress",
             "rdb_last_bgsave_status", "rdb_last_bgsave_time_sec",
             "rdb_current_bgsave_time_sec", "rdb_saves", "rdb_last_cow_size",
             "aof_rewrite_in_progress", "aof_rewrite_scheduled", "aof_last_cow_size",
             "module_fork_in_progress", "module_fork_last_cow_size"]
    before = d.info("persistence")
    assert set(names) <= set(redis_ref.client().info("persistence"))
    assert info_fields(before, names) == {
        **{n: 0 for n in names}, "current_fork_perc": 0.0, "rdb_last_bgsave_status": "ok",
        "rdb_last_bgsave_time_sec": -1, "rdb_current_bgsave_time_sec": -1}
    stats = d.info("stats")
    assert stats["total_forks"] == 0 and stats["latest_fork_usec"] == 0
    assert d.raw().command("BGSAVE") == b"+Background saving started\r\n"
    # The child reports its first key at once, then about once a second.
    assert harness.wait_until(
        lambda: d.info("persistence")["current_save_keys_processed"] >= 1, 10)
    info = d.info("persistence")
    assert info["rdb_bgsave_in_progress"] == 1 and info["rdb_saves"] == 1
    assert info["current_save_keys_total"] == KEYS
    assert 0 < info["current_fork_perc"] <= 100
    stats = d.info("stats")
    assert stats["total_forks"] == 1 and stats["latest_fork_usec"] > 0
    assert settled(d, 1)
    info = d.info("persistence")
    assert info["current_save_keys_total"] == 0 and info["current_fork_perc"] == 0
    assert info["rdb_last_bgsave_time_sec"] >= 0 and info["rdb_current_bgsave_time_sec"] == -1


# ---- a replica's full sync and the other children -------------------------

def primary_and_replica(start_daemon):
    p = cellgate(start_daemon, fakeclock=True, name="primary")
    r = start_daemon(fakeclock=True, name="replica")
    r.clock.set(p.clock.ns)
    return p, r


@pytest.mark.parametrize("first,why", [
    ("BGREWRITEAOF", "No BGSAVE in progress, but another BG operation is active. "
                     "BGSAVE for replication delayed"),
    ("BGSAVE", "Can't attach the replica to the current BGSAVE. Waiting for next "
               "BGSAVE for SYNC")], ids=["during-a-rewrite", "during-a-bgsave"])
def test_a_full_sync_waits_for_the_running_child(start_daemon, first, why):
    p, r = primary_and_replica(start_daemon)
    pc = p.raw()
    assert pc.command(first).startswith(b"+Background")
    child = hold_child(p.proc.pid)
    try:
        assert r.raw().command("REPLICAOF", "127.0.0.1", p.port) == b"+OK\r\n"
        assert harness.wait_until(lambda: why in p.log(), 10)
        # It waits: no snapshot of its own while the other child runs.
        assert "Starting a snapshot for replication" not in p.log()
        assert p.info("replication")["slave0"]["state"] == "wait_bgsave"
        pc.command("CL.THROTTLE", "while-waiting", 5, 1, 3600)
    finally:
        release(child)
    assert harness.wait_until(lambda: replicas_online(p, 1), 30)
    assert log_order(p, "Background AOF rewrite finished successfully"
                     if first == "BGREWRITEAOF" else "Background saving terminated with success",
                     "Starting a snapshot for replication")
    pc.command("CL.THROTTLE", "after", 5, 1, 3600)
    assert caught_up(p, r)
    assert fingerprint(r) == fingerprint(p)


def test_bgsave_and_bgrewriteaof_during_a_replicas_snapshot(start_daemon, redis_ref):
    """A replica's snapshot is Redis's RDB child: BGSAVE and SAVE are
    refused as during a BGSAVE, BGREWRITEAOF is scheduled after it."""
    p, r = primary_and_replica(start_daemon)
    assert r.raw().command("REPLICAOF", "127.0.0.1", p.port) == b"+OK\r\n"
    child = hold_child(p.proc.pid)
    ref = ref_raw(redis_ref)
    assert ref.command("BGSAVE") == b"+Background saving started\r\n"
    ref_child = hold_child(redis_ref.proc.pid)
    pc = p.raw()
    try:
        assert harness.wait_until(
            lambda: "Starting a snapshot for replication (pid %d)" % child in p.log(), 10)
        for cmd in (("BGSAVE",), ("BGSAVE", "SCHEDULE"), ("SAVE",)):
            assert raw_both(pc, ref, *cmd) == b"-ERR Background save already in progress\r\n"
        assert raw_both(pc, ref, "BGREWRITEAOF") == \
            b"+Background append only file rewriting scheduled\r\n"
        info = p.info("persistence")
        assert info["rdb_bgsave_in_progress"] == 1 and info["aof_rewrite_scheduled"] == 1
    finally:
        release(child)
        release(ref_child)
    assert harness.wait_until(lambda: replicas_online(p, 1), 30)
    assert settled(p, 2)
    assert p.info("persistence")["aof_rewrites"] == 1
    assert caught_up(p, r)
    assert fingerprint(r) == fingerprint(p)


# ---- shutdown with a child running ----------------------------------------

def temp_files(d):
    return glob.glob(os.path.join(d.workdir, "*.tmp-*")) + \
        glob.glob(os.path.join(d.workdir, "appendonlydir", "*.tmp-*"))


@pytest.mark.parametrize("how", ["SHUTDOWN", "SIGTERM"])
@pytest.mark.parametrize("start,line", [
    ("BGSAVE", "There is a child saving an .rdb. Killing it!"),
    ("BGREWRITEAOF", "There is a child rewriting the AOF. Killing it!"),
    ("REPLICAOF", "There is a child saving an .rdb. Killing it!")],
    ids=["bgsave", "bgrewriteaof", "replicas-snapshot"])
def test_shutdown_kills_the_running_child_and_removes_its_file(start_daemon, how, start, line):
    d = cellgate(start_daemon)
    if start == "REPLICAOF":
        r = start_daemon(name="replica")
        assert r.raw().command("REPLICAOF", "127.0.0.1", d.port) == b"+OK\r\n"
    else:
        assert d.raw().command(start).startswith(b"+Background")
    child = harness.wait_until(lambda: children_of(d.proc.pid), 10)[0]
    # Held while its temporary file exists, so the kill meets it writing.
    assert harness.wait_until(lambda: any("tmp-%d" % child in f for f in temp_files(d)), 10)
    os.kill(child, signal.SIGSTOP)
    if how == "SHUTDOWN":
        c = d.raw()
        c.send(harness.resp_command("SHUTDOWN", "NOSAVE"))
        assert c.read_to_eof() == (b"", True)
        assert d.wait_exit(harness.STOP_TIMEOUT) == 0
    else:
        assert d.stop() == []
    assert line in d.log()
    assert gone(child)
    assert temp_files(d) == []
