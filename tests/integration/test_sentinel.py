"""Failover by Debian's redis-sentinel 7.0, unchanged: three Sentinels, one
cellgate primary and two replicas, a redis-py Sentinel client in a loop;
kill -9 the primary. Then the same for one shard of a cellgate cluster,
with the shipped client-reconfig-script and a redis-py RedisCluster
client."""
import json
import os
import random
import subprocess
import threading
import time

import pytest
import redis
from redis.sentinel import Sentinel

import harness
from test_node_clients import CLIENTS, ensure_node_modules

REDIS_SENTINEL = "/usr/bin/redis-sentinel"
LIMIT = 20                       # per key and hour; the fake clocks stand still


class SentinelProc:
    def __init__(self, workdir, masters, script=None):
        """masters: {name: primary port}; script: client-reconfig-script."""
        self.port = harness.free_port()
        self.conf = os.path.join(workdir, "sentinel-%d.conf" % self.port)
        with open(self.conf, "w") as f:
            f.write("port %d\nbind 127.0.0.1\ndir %s\n" % (self.port, workdir))
            for name, port in masters.items():
                f.write("sentinel monitor %s 127.0.0.1 %d 2\n"
                        "sentinel down-after-milliseconds %s 1000\n"
                        "sentinel failover-timeout %s 5000\n"
                        "sentinel parallel-syncs %s 1\n"
                        % (name, port, name, name, name))
                if script:
                    f.write("sentinel client-reconfig-script %s %s\n" % (name, script))
        self.log = open(os.path.join(workdir, "sentinel-%d.log" % self.port), "wb")
        self.proc = subprocess.Popen([REDIS_SENTINEL, self.conf],
                                     stdout=self.log, stderr=self.log)

    def ask(self, *args):
        return redis.Redis(port=self.port, socket_timeout=2).execute_command(*args)

    def ping_every_100ms(self):
        """A Sentinel reconnects to an instance at most once a ping period
        (1 s by default), and a switched primary's link starts its
        down-after-milliseconds clock at the switch. Having just retried
        the dead primary, it may connect to the new one a whole period
        later and, with down-after-milliseconds 1000, mark it down before
        its first PING could be answered (+sdown 1,004 ms after
        +switch-master, a second failover). Redis's own Sentinel tests
        shorten the period the same way; the node is not involved (its
        longest PING round trip around the promotion: a few ms under
        ASan)."""
        assert harness.wait_until(lambda: self._answers(), 10)
        assert self.ask("SENTINEL", "DEBUG", "ping-period", 100) == b"OK"

    def _answers(self):
        try:
            return self.ask("PING")
        except (redis.RedisError, OSError):
            return False

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        self.log.close()


def safe_info(d):
    """INFO replication, or {} while the daemon is being reconfigured."""
    try:
        return d.info("replication")
    except (redis.RedisError, OSError):
        return {}


@pytest.fixture
def sentinels(tmp_path):
    started = []

    def start(masters, script=None):
        if isinstance(masters, int):
            masters = {"mymaster": masters}
        for _ in range(3):
            started.append(SentinelProc(str(tmp_path), masters, script))
        for s in started:
            s.ping_every_100ms()
        return started

    yield start
    for s in started:
        s.stop()


class ThrottleLoad:
    """CL.THROTTLE on 1,000 keys from one thread, LIMIT per key and hour,
    for at most 90 s: what each key was allowed, when calls succeeded (all,
    and those on the watched keys) and which failed."""

    def __init__(self, client, seed, watched=(), wait=False):
        """wait: each decision is followed by WAIT 1 100 in the same
        round trip, so it is on a replica before the client acts on it."""
        self.client, self.seed, self.watched = client, seed, set(watched)
        self.wait = wait
        self.keys = ["user:%d" % i for i in range(1000)]
        self.allowed, self.errors = {}, []          # errors: (time, repr)
        self.successes, self.watched_ok = [], []    # monotonic times
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run)
        self.thread.start()

    def _run(self):
        rng = random.Random(self.seed)
        deadline = time.monotonic() + 90
        while not self.stopping.is_set() and time.monotonic() < deadline:
            k = rng.choice(self.keys)
            try:
                if self._decide(k):
                    self.allowed[k] = self.allowed.get(k, 0) + 1
                now = time.monotonic()
                self.successes.append(now)
                if k in self.watched:
                    self.watched_ok.append(now)
            except Exception as e:      # connection and cluster errors alike
                self.errors.append((time.monotonic(), repr(e)))
                time.sleep(0.05)

    def _decide(self, k):
        if not self.wait:
            return self.client.execute_command("CL.THROTTLE", k, LIMIT - 1, 1, 3600)[0] == 0
        pipe = self.client.pipeline(transaction=False)
        pipe.execute_command("CL.THROTTLE", k, LIMIT - 1, 1, 3600)
        pipe.execute_command("WAIT", 1, 100)
        reply, acked = pipe.execute()
        return reply[0] == 0 and acked >= 1     # not on a replica: not acted on

    def stop(self):
        self.stopping.set()
        self.thread.join(10)

    def recovered(self, times, calls):
        """Calls succeed again: more than calls since the last error, the
        newest 2 s after it."""
        return bool(self.errors and times and times[-1] > self.errors[-1][0] + 2 and
                    len([x for x in times if x > self.errors[-1][0]]) > calls)

    def report(self, killed_at, times):
        """(failover seconds, client errors, over-admission, allowed)."""
        assert not [e for e in self.errors if e[0] < killed_at], self.errors[:3]
        last_error = self.errors[-1][0]
        failover_s = min(x for x in times if x > last_error) - killed_at
        over = sum(max(0, n - LIMIT) for n in self.allowed.values())
        return failover_s, len(self.errors), over, sum(self.allowed.values())


def ready(s, name, replicas):
    """Sentinel s sees the primary's replicas and the two other Sentinels."""
    try:
        m = dict(zip(*[iter(s.ask("SENTINEL", "MASTER", name))] * 2))
    except redis.RedisError:
        return False
    return m[b"num-slaves"] == b"%d" % replicas and m[b"num-other-sentinels"] == b"2"


def sentinel_events(sents):
    """The failover events of every Sentinel's log, for a failing test."""
    keep = ("+sdown", "-sdown", "+odown", "+try-failover", "+elected-leader",
            "+selected-slave", "+switch-master", "+tilt", "-tilt", "+promoted-slave")
    out = []
    for s in sents:
        s.log.flush()
        with open(s.log.name, errors="replace") as f:
            out += ["%d: %s" % (s.port, line.rstrip()) for line in f
                    if any(k in line for k in keep)]
    return "\n".join(out)


def agreed_port(sents, name):
    """The primary's port every Sentinel names, or None."""
    try:
        ports = {int(x.ask("SENTINEL", "GET-MASTER-ADDR-BY-NAME", name)[1]) for x in sents}
    except (redis.RedisError, OSError):
        return None
    return ports.pop() if len(ports) == 1 else None


@pytest.mark.parametrize("wait", [False, True], ids=["async", "wait-1-per-decision"])
def test_sentinel_fails_over_to_a_replica_and_the_client_carries_on(
        start_daemon, sentinels, wait):
    primary = start_daemon(fakeclock=True, name="primary")
    replicas = [start_daemon(fakeclock=True, name="replica%d" % i) for i in range(2)]
    for r in replicas:
        r.clock.set(primary.clock.ns)
        assert r.raw().command("REPLICAOF", "127.0.0.1", primary.port) == b"+OK\r\n"
    for r in replicas:
        assert harness.wait_until(
            lambda: r.info("replication").get("master_link_status") == "up", 10)
    sents = sentinels(primary.port)
    # Every Sentinel sees both replicas and the two other Sentinels.
    assert harness.wait_until(lambda: all(ready(s, "mymaster", 2) for s in sents), 20)

    sentinel = Sentinel([("127.0.0.1", s.port) for s in sents], socket_timeout=1)
    client = sentinel.master_for("mymaster", socket_timeout=1)
    load = ThrottleLoad(client, seed=3, wait=wait)
    try:
        assert harness.wait_until(lambda: len(load.successes) > 500, 20)
        primary.proc.kill()
        killed_at = time.monotonic()
        primary.proc.wait(10)
        primary.stopped = True
        # Every Sentinel names one of the replicas, and keeps naming it.
        def agreed():
            return agreed_port(sents, "mymaster")
        assert harness.wait_until(lambda: agreed() in [r.port for r in replicas], 30)
        new_addr = agreed()
        # The client carries on by itself: errors only in the failover window.
        assert harness.wait_until(lambda: load.recovered(load.successes, 200), 30)
    finally:
        load.stop()
    failover_s, errors, over, allowed = load.report(killed_at, load.successes)
    print("%s: failover %.2f s (client errors from the kill until the new primary "
          "answered), %d client errors, over-admission %d (of %d allowed), "
          "master switches seen by Sentinel: %s"
          % ("WAIT 1 per decision" if wait else "async", failover_s, errors, over, allowed,
             [s.ask("SENTINEL", "MASTER", "mymaster")[s.ask("SENTINEL", "MASTER",
              "mymaster").index(b"config-epoch") + 1] for s in sents[:1]]))
    assert failover_s < 10
    assert over <= 20
    if wait:
        assert over == 0        # every decision acted on was on a replica
    # ioredis's own Sentinel support finds the primary the Sentinels name
    # (before and after it asked: a machine too slow to answer their PINGs
    # within down-after-milliseconds can see one failover more, which the
    # Sentinels' own log shows) and writes there.
    ensure_node_modules()
    for _ in range(3):
        new_addr = agreed()
        assert new_addr in [r.port for r in replicas], sentinel_events(sents)
        assert sentinel.discover_master("mymaster")[1] == new_addr
        node = subprocess.run(["node", "sentinel.mjs"] + [str(x.port) for x in sents],
                              cwd=CLIENTS, capture_output=True, text=True, timeout=60)
        assert node.returncode == 0, node.stdout + node.stderr
        seen = json.loads(node.stdout.strip().splitlines()[-1])
        if agreed() == new_addr:
            break
        print("the Sentinels failed over again:\n" + sentinel_events(sents))
    assert seen["port"] == new_addr and seen["role"] == "master", sentinel_events(sents)
    # And so does redis-cli, asking each Sentinel.
    for x in sents:
        cli = subprocess.run(["redis-cli", "-p", str(x.port), "SENTINEL",
                              "get-master-addr-by-name", "mymaster"],
                             capture_output=True, text=True, timeout=10)
        assert cli.stdout == "127.0.0.1\n%d\n" % new_addr, cli.stdout + cli.stderr
    assert seen["reply"][0] == 0
    other = [r for r in replicas if r.port != new_addr][0]
    assert harness.wait_until(
        lambda: safe_info(other).get("master_port") == new_addr, 15)

    # The old primary, restarted, is made a replica of the new one and
    # catches up (Sentinel waits a few seconds before it reconfigures it).
    old = start_daemon("--port", str(primary.port), fakeclock=True, name="old",
                       port=primary.port)
    old.clock.set(primary.clock.ns)
    assert harness.wait_until(
        lambda: safe_info(old).get("master_port") == agreed()
        and safe_info(old).get("master_link_status") == "up", 30)
    new = [r for r in replicas if r.port == agreed()][0]
    want = new.info("replication")["master_repl_offset"]
    assert harness.wait_until(
        lambda: safe_info(old).get("slave_repl_offset", -1) >= want, 10)
    assert old.raw().command("DBSIZE") == new.raw().command("DBSIZE")


def test_sentinel_fails_over_a_cluster_shard_and_the_cluster_client_carries_on(
        start_daemon, sentinels, tmp_path):
    """3 shards x (primary + replica), cluster-mode yes; three Sentinels
    watch the three primaries with the shipped client-reconfig-script. A
    redis-py RedisCluster client runs CL.THROTTLE on 1,000 keys; kill -9 the
    primary of the first shard: its slots come back on its replica, on
    every node's map, and the client carries on by itself."""
    from test_cluster_replicas import FAILOVER_SCRIPT, RANGES, ShardedCluster, node_lines
    from redis.cluster import ClusterNode, RedisCluster
    cl = ShardedCluster(start_daemon, tmp_path, fakeclock=True)
    ports = cl.ports
    names = ["shard-%d" % (i + 1) for i in range(3)]
    sents = sentinels({names[i]: ports[i] for i in range(3)}, FAILOVER_SCRIPT)
    assert harness.wait_until(lambda: all(ready(s, n, 1) for s in sents for n in names), 30)

    # Seeds on the shards that stay up, and kept (dynamic_startup_nodes
    # False): Debian's redis-py 4.3.4 cannot re-read the map from a seed it
    # has no connection to (it deep-copies itself: "cannot pickle
    # '_thread.lock' object", fixed in redis-py 4.4), which the dead node
    # would be when the map came from every node.
    client = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", ports[1]),
                                         ClusterNode("127.0.0.1", ports[2])],
                          dynamic_startup_nodes=False, socket_timeout=1,
                          socket_connect_timeout=0.5)
    first_shard = [k for k in ("user:%d" % i for i in range(1000))
                   if harness.reference_slot(k) <= 5460]
    load = ThrottleLoad(client, seed=5, watched=first_shard)
    try:
        assert harness.wait_until(lambda: len(load.watched_ok) > 300, 30)
        primary = cl.nodes[0]
        primary.proc.kill()
        killed_at = time.monotonic()
        primary.proc.wait(10)
        primary.stopped = True
        assert harness.wait_until(lambda: agreed_port(sents, names[0]) == ports[3], 30)
        # Every live node maps the shard's slots to the promoted replica.
        def slot0_owner(i):
            try:
                slots = cl.nodes[i].client().execute_command("CLUSTER", "SLOTS")
            except (redis.RedisError, OSError):
                return None
            return [s for s in slots if s[0] == 0][0][2][1]
        assert harness.wait_until(lambda: all(slot0_owner(i) == ports[3] for i in range(1, 6)), 30)
        # The client carries on by itself, on the failed shard's keys too.
        assert harness.wait_until(lambda: load.recovered(load.watched_ok, 100), 40), \
            (len(load.errors), load.errors[-3:], len(load.watched_ok))
    finally:
        load.stop()
    failover_s, errors, over, allowed = load.report(killed_at, load.watched_ok)
    print("cluster shard failover %.2f s (client errors from the kill until the "
          "promoted replica answered), %d client errors, over-admission %d "
          "(of %d allowed)" % (failover_s, errors, over, allowed))
    assert failover_s < 15
    assert over <= LIMIT
    want = node_lines(cl.confs[3])
    assert "127.0.0.1:%d 0-5460" % ports[3] in want[3]
    for i in range(1, 6):
        assert node_lines(cl.confs[i]) == want, i

    # The old primary, restarted with its old file, is made a replica of the
    # promoted one by Sentinel, which rewrites its file too.
    old = cl.start(0)
    assert harness.wait_until(
        lambda: safe_info(old).get("master_port") == ports[3]
        and safe_info(old).get("master_link_status") == "up", 30)
    assert harness.wait_until(lambda: node_lines(cl.confs[0]) == want, 10)
    assert old.raw().command("DBSIZE") == cl.nodes[3].raw().command("DBSIZE")
    client.close()
