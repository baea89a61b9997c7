"""Findings of the replication fuzzer (repl_fuzz.py), each a fixed case,
and the fuzzer itself for a few seconds per shape."""
import os
import re
import signal

import harness
from test_replication import follow


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
