"""Findings of the replication fuzzer (repl_fuzz.py), each a fixed case,
and the fuzzer itself for a few seconds per shape."""
import os
import re
import signal

import pytest

import harness
import repl_fuzz
from test_journal import fingerprint
from test_replication import caught_up, follow, replicas_online, snapshot_child


def primary_with_keys(start_daemon, n=20):
    """A fake-clock primary with n keys whose snapshot child writes one key
    per 100 ms (held stopped by the tests while they act)."""
    p = start_daemon("--rdb-key-save-delay", 100000, fakeclock=True, name="primary")
    c = p.raw()
    for i in range(n):
        c.command("CL.THROTTLE", "k%d" % i, 5, 1, 3600)
    return p


def replica_of_clock(start_daemon, p, name):
    r = start_daemon(fakeclock=True, name=name)
    r.clock.set(p.clock.ns)
    return r


def holds_no_socket(pid):
    """The forked child pid has closed every socket it inherited (it does
    so first thing, before writing)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                return False        # it ended: it can show nothing
        fds = os.listdir("/proc/%d/fd" % pid)
        return not any(os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith("socket:")
                       for fd in fds)
    except OSError:
        return False


def stop_child(pid):
    """SIGSTOP a snapshot child once it has let go of its parent's sockets."""
    assert harness.wait_until(lambda: holds_no_socket(pid), 10)
    os.kill(pid, signal.SIGSTOP)


def end_child(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def bgsave_child(d):
    """Start a BGSAVE (slow: rdb-key-save-delay) and stop its child."""
    assert d.raw().command("BGSAVE").startswith(b"+Background saving started")
    found = harness.wait_until(
        lambda: re.findall(r"Background saving started by pid (\d+)", d.log()), 10)
    child = int(found[-1])
    stop_child(child)
    return child


def test_a_replica_dropped_while_a_snapshot_is_written_hears_it_at_once(start_daemon):
    """Fuzzer finding: a forked snapshot writer held every socket of its
    parent, so a replica link the primary closed stayed open (no FIN) until
    the child ended, and the replica did not know it had been dropped."""
    p = primary_with_keys(start_daemon)
    r = replica_of_clock(start_daemon, p, "replica")
    follow(r, p)
    child = bgsave_child(p)
    try:
        assert p.raw().command("CLIENT", "KILL", "TYPE", "replica") == b":1\r\n"
        assert harness.wait_until(
            lambda: "Connection with the primary lost" in r.log(), 10)
        assert harness.wait_until(
            lambda: "Successful partial resynchronization" in r.log(), 10)
    finally:
        end_child(child)


def test_a_primary_killed_while_a_snapshot_is_written_restarts_on_its_port(
        start_daemon, tmp_path):
    """Fuzzer finding: after kill -9 of a server whose snapshot child was
    still writing, the child kept its listening socket, so the server
    restarted on its port could not listen until the child was done."""
    d = primary_with_keys(start_daemon)
    child = bgsave_child(d)
    try:
        d.proc.kill()
        d.proc.wait(10)
        again = harness.Daemon(str(tmp_path / "again"), port=d.port, name="again")
        try:
            again.start()
            assert again.ping_fresh()
        finally:
            assert again.stop() == []
    finally:
        end_child(child)
    d.stopped = True


def hold_snapshot(p, r):
    """r asks p for a full sync; p's snapshot child is stopped once r heard
    +FULLRESYNC (r is then receiving a snapshot that has not come)."""
    before = p.log().count("Starting a snapshot for replication")
    assert r.raw().command("REPLICAOF", "127.0.0.1", p.port) == b"+OK\r\n"
    assert harness.wait_until(
        lambda: p.log().count("Starting a snapshot for replication") > before, 10)
    child = snapshot_child(p)
    stop_child(child)
    assert harness.wait_until(lambda: "Full resync from the primary" in r.log(), 10)
    return child


def test_a_link_dropped_during_the_snapshot_transfer_syncs_again(start_daemon):
    """Fuzzer finding: +FULLRESYNC made the replica take the primary's id
    and offset before the snapshot was loaded, so a link dropped meanwhile
    was continued from the backlog (+CONTINUE) over the old data: the
    offsets matched and the keys were missing."""
    p = primary_with_keys(start_daemon)
    r = replica_of_clock(start_daemon, p, "replica")
    child = hold_snapshot(p, r)
    try:
        assert r.info("replication")["master_sync_in_progress"] == 1
        assert p.raw().command("CLIENT", "KILL", "TYPE", "replica") == b":1\r\n"
        assert harness.wait_until(
            lambda: p.log().count("asks for synchronization") >= 2 or
            "Partial resynchronization request" in p.log(), 20)
    finally:
        os.kill(child, signal.SIGCONT)
    assert harness.wait_until(lambda: replicas_online(p, 1), 20)
    assert caught_up(p, r)
    assert r.raw().command("DBSIZE") == b":20\r\n"
    assert fingerprint(r) == fingerprint(p)
    assert "Partial resynchronization request" not in p.log()


def test_a_replica_promoted_during_its_full_sync_keeps_its_own_history(start_daemon):
    """Fuzzer finding: a replica promoted (REPLICAOF NO ONE) while its
    snapshot was still on the way kept the primary's id as its second id,
    so another replica of that primary continued with it by a partial
    resync and kept keys the promoted one never had."""
    p = primary_with_keys(start_daemon)
    r1 = replica_of_clock(start_daemon, p, "replica1")
    r2 = replica_of_clock(start_daemon, p, "replica2")
    follow(r2, p)
    assert caught_up(p, r2)
    child = hold_snapshot(p, r1)
    try:
        assert r1.raw().command("REPLICAOF", "NO", "ONE") == b"+OK\r\n"
        info = r1.info("replication")
        assert info["master_replid2"] != p.info("replication")["master_replid"]
        follow(r2, r1)
    finally:
        os.kill(child, signal.SIGCONT)
    assert caught_up(r1, r2)
    assert r1.raw().command("DBSIZE") == b":0\r\n"
    assert fingerprint(r2) == fingerprint(r1)


def test_a_replica_restarted_on_its_journal_holds_what_it_held(start_daemon):
    """Fuzzer finding: a replica with appendonly journaled the stream's
    records as they came and, applying them, its own SWAPDB, FLUSHDB and
    deletions too: read back after a restart, each swap was done twice,
    which undid it, so keys came back in the wrong databases."""
    p = start_daemon(fakeclock=True, name="primary")
    r = replica_of_clock(start_daemon, p, "replica")
    assert r.raw().command("CONFIG", "SET", "appendonly", "yes") == b"+OK\r\n"
    follow(r, p)
    c = p.raw()
    for db in (0, 1, 2):
        c.command("SELECT", db)
        c.command("CL.THROTTLE", "k%d" % db, 5, 1, 3600)
        c.command("RL.FIXED", "gone%d" % db, 3, 60)
    c.command("SWAPDB", 0, 1)
    c.command("DEL", "gone2")
    c.command("MOVE", "k2", 3)
    c.command("SELECT", 1)
    c.command("FLUSHDB")
    c.command("SWAPDB", 2, 0)
    assert caught_up(p, r)
    held = fingerprint(r)
    assert held == fingerprint(p) and len(held) == 3
    r.proc.kill()
    r.proc.wait(10)
    r.stopped = True
    again = harness.Daemon(r.workdir, extra_args=["--appendonly", "yes"],
                           fakeclock=p.clock.ns, name="again")
    try:
        again.start()
        assert fingerprint(again) == held
    finally:
        assert again.stop() == []


def test_a_collection_made_and_emptied_in_one_pass_restarts(start_daemon):
    """Fuzzer finding (collections, round seed 28001): a list, hash or
    sorted set created and emptied in one loop pass (a transaction, or
    pipelined commands) left a record of its empty state in the journal
    and the stream, which no load accepts: a restart on the journal failed
    ("malformed list state"), and so did a replica's that wrote the
    stream's records to its own."""
    d = start_daemon("--appendonly", "yes", "--appendfsync", "always")
    c = d.raw()
    assert c.command("SET", "kept", "1") == b"+OK\r\n"
    c.send(b"".join(harness.resp_command(*a) for a in (
        ("MULTI",), ("RPUSH", "q", "a"), ("LPOP", "q"), ("ZADD", "z", 1, "m"),
        ("ZPOPMIN", "z"), ("HSET", "h", "f", "v"), ("HDEL", "h", "f"), ("EXEC",))))
    for _ in range(8):
        c.reply_bytes()
    d.proc.kill()
    d.proc.wait(10)
    d.stopped = True
    again = harness.Daemon(d.workdir, extra_args=["--appendonly", "yes"], name="again")
    try:
        again.start()
        assert again.raw().command("KEYS", "*") == b"*1\r\n$4\r\nkept\r\n"
    finally:
        again.stop()


def test_a_replica_journals_its_full_sync_before_the_stream_after_it(start_daemon):
    """Fuzzer finding (collections, round seed 28009): a replica with
    appendonly loads its full sync and marks every key for its journal; the
    stream's first records, read in the same pass, are applied, and one of
    them releases a marked key (a DEL), which drains the marks: every
    loaded key journaled as it is now, element effects already applied
    included, then the stream's records after them. Restarted on that
    journal, the list held its pushed elements twice."""
    p = start_daemon("--rdb-key-save-delay", 200000, fakeclock=True, name="primary")
    r = replica_of_clock(start_daemon, p, "replica")
    assert r.raw().command("CONFIG", "SET", "appendonly", "yes") == b"+OK\r\n"
    c = p.raw()
    c.command("RPUSH", "q", "a", "b")
    c.command("SET", "gone", "1")
    assert r.raw().command("REPLICAOF", "127.0.0.1", p.port) == b"+OK\r\n"
    assert harness.wait_until(lambda: snapshot_child(p) is not None, 10)
    # While its snapshot is written: a push and a deletion, in one pass.
    c.send(b"".join(harness.resp_command(*a) for a in (
        ("MULTI",), ("RPUSH", "q", "x"), ("DEL", "gone"), ("EXEC",))))
    for _ in range(4):
        c.reply_bytes()
    assert harness.wait_until(lambda: r.info("replication")["slave_repl_offset"] ==
                              p.info("replication")["master_repl_offset"], 30)
    held = fingerprint(r)
    assert held == fingerprint(p)
    r.proc.kill()
    r.proc.wait(10)
    r.stopped = True
    again = harness.Daemon(r.workdir, extra_args=["--appendonly", "yes"],
                           fakeclock=p.clock.ns, name="again")
    try:
        again.start()
        assert fingerprint(again) == held
    finally:
        again.stop()


@pytest.mark.parametrize("topology,backlog", [("star", "16kb"), ("chain", "1mb")])
def test_the_replication_fuzzer_finds_nothing(tmp_path, topology, backlog):
    """A round of random traffic and faults; every node must hold the same
    keys, TTLs and states whenever their offsets match."""
    stats = repl_fuzz.new_stats()
    seed = 7 if topology == "star" else 8
    repl_fuzz.Round(seed, 12, str(tmp_path / "round"), stats, log=lambda s: None,
                    topology=topology, backlog=backlog).run()
    print("repl-fuzz %s/%s: %s" % (topology, backlog, stats))
    assert stats["checks"] >= 2 and stats["commands"] > 0
